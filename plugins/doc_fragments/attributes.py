# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    """The attributes every module of launchcard.inference documents.

    Use ``launchcard.inference.attributes`` in every module; a module sets
    only what differs from it in its own ``attributes:`` (the module's values
    win). The variants refine it and must be listed BEFORE it in
    ``extends_documentation_fragment``: when two fragments set the same
    field, Ansible keeps the one listed first.
    """

    # Every module: runs on a POSIX managed host, supports check mode, no
    # diff, member of the collection's action group (meta/runtime.yml).
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and report what it would change, without changing the target.
    support: full
  diff_mode:
    description: Can return, in diff mode, what changed (or, in check mode, what would change).
    support: none
  platform:
    description: Systems the module can run against.
    support: N/A
    platforms: posix
  action_group:
    description:
      - Belongs to the action group C(launchcard.inference.launchcard) (C(meta/runtime.yml)), so one
        C(module_defaults) entry C(group/launchcard.inference.launchcard) sets an option for every module
        of the collection that has it.
    support: full
    membership:
      - launchcard.inference.launchcard
"""

    # A module that only reads: same result in check mode, nothing to diff.
    READ_ONLY = r"""
options: {}
attributes:
  check_mode:
    details: The module only reads; check mode returns the same result as a normal run.
  diff_mode:
    support: N/A
    details: The module changes nothing, so there is nothing to diff.
"""

    # A documentation-only module: its action plugin does the task. ansible-core plugins/action/__init__.py (2.19):
    # ActionBase.run fails an async task unless _supports_async; BYPASS_HOST_LOOP is False. Descriptions: the flow fragment.
    ACTION = r"""
options: {}
attributes:
  action:
    support: full
    details: The collection's action plugin of the same name does the task; the module's file holds only this documentation.
  async:
    support: none
    details: The action plugin refuses the C(async) keyword; the task fails.
  bypass_host_loop:
    support: none
    details: Runs per host of the play, as any task does.
"""

    # An action that runs on the controller only and never contacts a managed host (with ACTION: documentation-only).
    CONTROLLER = r"""
options: {}
attributes:
  platform:
    platforms: all
    details: Runs on the controller only; no managed host is contacted.
"""
