# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lookup plugin launchcard.inference.failure_budget_spent: whether the play has lost more hosts than its budget."""

from __future__ import annotations

DOCUMENTATION = r"""
name: failure_budget_spent
author:
  - launchcard.inference contributors (@launchcard)
version_added: 1.0.0
short_description: Whether the play has lost more hosts than its failure budget allows
description:
  - Returns V(true) once the hosts the play has lost (failed or unreachable, those of C(ansible_play_hosts_all)
    no longer in C(ansible_play_hosts)) exceed C(launchcard_max_fail_percentage) percent of the play's hosts
    (0 when unset, any lost host). Ansible's own C(max_fail_percentage) counts failed hosts, not unreachable ones.
  - "Why a lookup: it reads the two host lists' lengths as stored. The same test written in Jinja makes
    ansible-core 2.19 copy both lists on every host and every task that evaluates it, a cost that grows with the
    fleet (docs/speed.md); a play evaluates it on every task of the block it guards."
options:
  percent:
    description:
      - The budget, an integer from 0 to 100; C(launchcard_max_fail_percentage) when unset.
    type: raw
"""

EXAMPLES = r"""
- name: Stop changing hosts once the failure budget is spent
  when: not lookup('launchcard.inference.failure_budget_spent')
  block:
    - name: Change a host
      ansible.builtin.debug:
        msg: changing
"""

RETURN = r"""
_raw:
  description: One boolean.
  type: list
  elements: bool
"""

from ansible.errors import AnsibleLookupError
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.lookup import LookupBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _play_vars as play_vars
from ansible_collections.launchcard.inference.plugins.plugin_utils import _report as report


class LookupModule(LookupBase):
    """The failure budget, from the play's host lists' lengths."""

    def run(self, terms, variables=None, **kwargs):
        # option read directly: set_options() costs more than the lookup itself, evaluated on every host and task
        play_vars.check_options("launchcard.inference.failure_budget_spent", kwargs, ("percent",))
        percent = kwargs.get("percent")
        if percent is None:
            percent = play_vars.variable(self._templar, variables, "launchcard_max_fail_percentage")
        every = play_vars.variable(self._templar, variables, "ansible_play_hosts_all") or ()
        left = play_vars.variable(self._templar, variables, "ansible_play_hosts") or ()
        try:
            return [report.failure_budget_spent(len(every) - len(left), len(every), percent)]
        except ValueError as exc:
            raise AnsibleLookupError("launchcard.inference.failure_budget_spent: %s" % to_text(exc))
