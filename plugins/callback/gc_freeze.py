# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback plugin launchcard.inference.gc_freeze: the controller's heap frozen before each task forks its workers."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gc_freeze
type: aggregate
short_description: Freeze the controller's heap before each task forks its workers
version_added: 1.0.0
description:
  - At the start of every task and handler, in the C(ansible-playbook) process, before that task forks its
    workers, collects the garbage made since the last task (C(gc.collect())) and moves every object that
    survives to Python's permanent generation (C(gc.freeze())), which later collections skip.
  - Ansible forks the controller process once per host and task; that process grows with the inventory, and a
    full collection, in a worker or in the controller, walks every object it tracks (a worker's copy-on-write
    then copies the controller's heap page by page). Frozen, those objects are walked by none of them, so a
    collection costs what the last task made, not what the fleet holds.
  - Its cost is memory; a cycle of objects frozen while still in use is never collected once it is
    garbage. docs/speed.md has the controller's peak memory with and without it.
  - At the playbook's start, loads the collection's lookups that a play evaluates on every host and task
    (C(launchcard.inference.host_entry), C(launchcard.inference.failure_budget_spent)) and C(ansible.builtin)'s
    test plugins (a worker's first C(is) test loads every one of them), and reads the collection's variable names
    that each host's preflight step compares its own with (its role specs and playbooks), so the workers forked later
    inherit them instead of each finding, parsing or reading them again.
  - Does nothing when the garbage collector is disabled (C(gc.disable())), as a profiler or an embedding
    program may do.
  - An installed collection's callback runs only when named in C(callbacks_enabled) (C([defaults]) of
    C(ansible.cfg), or C(ANSIBLE_CALLBACKS_ENABLED)).
requirements:
  - enabled in C(callbacks_enabled)
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = launchcard.inference.gc_freeze
"""

import gc

from ansible.plugins.callback import CallbackBase

from ansible_collections.launchcard.inference.plugins.plugin_utils._inventory_check import known_variables


def freeze():
    """Collect the garbage the tracked, unfrozen objects hold, then freeze what survives; False when gc is off."""
    if not gc.isenabled():
        return False
    # collections skip the permanent generation (CPython's gc.freeze docs): this one costs what the last task made
    gc.collect()
    gc.freeze()
    return True


# the collection's lookups that a play evaluates on every host and task (plugins/lookup/)
LOOKUPS = ("launchcard.inference.host_entry", "launchcard.inference.failure_budget_spent")
# one of ansible.builtin's tests: ansible-core loads all of their files with it (about 10 ms a worker otherwise)
BUILTIN_TEST = "ansible.builtin.truthy"


def preload(loader=None, tests=None):
    """Load the collection's per-host lookups and ansible.builtin's tests, and read the collection's variable names,
    once in the controller, so forked workers inherit them; returns the plugin names loaded."""
    if loader is None:
        from ansible.plugins.loader import lookup_loader as loader
    if tests is None:
        from ansible.plugins.loader import test_loader as tests
    known_variables()  # cached: read once here, not by every host's preflight step
    return [name for name in LOOKUPS if loader.get(name) is not None] + (
        [BUILTIN_TEST] if tests.get(BUILTIN_TEST) is not None else [])


class CallbackModule(CallbackBase):
    """Freeze the controller's heap at each task start (the strategy sends it in the controller, then forks)."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "launchcard.inference.gc_freeze"
    # moot for a collection: ansible-core 2.19 executor/task_queue_manager.py 259-269 loads a collection's callback
    # only from callbacks_enabled, and cli/playbook.py 119-124 skips callback_plugins/ beside a collection playbook
    CALLBACK_NEEDS_ENABLED = True

    # ansible-core 2.19 plugins/strategy/linear.py 187-195 (free.py 180-183, per host): the strategy, in the
    # controller, sends the task-start callback, then forks each host's WorkerProcess (_queue_task,
    # plugins/strategy/__init__.py 376-390; utils/multiprocessing.py 15: the 'fork' start method)
    def v2_playbook_on_task_start(self, task, is_conditional):
        freeze()

    # a worker's first load of a lookup finds it and parses its documentation (66 ms here the first time,
    # 0.1 ms once loaded): done once before the first fork, not in every worker
    def v2_playbook_on_start(self, playbook):
        preload()

    def v2_playbook_on_handler_task_start(self, task):
        freeze()
