# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for launchcard.inference.units_summary; documented in plugins/modules/units_summary.py."""

from __future__ import annotations

from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _play_vars as play_vars
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units_gate as units_gate


class ActionModule(ActionBase):
    """The deploy summary of every planned instance, and the hosts whose gate failed; on the controller, once."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # no effect since ansible-core 2.5
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            notes=dict(type="list", elements="str", default=[]),
        ))
        plan = play_vars.variable(self._templar, task_vars, "launchcard_plan") or {}
        hostvars = task_vars.get("hostvars") or {}
        # each planned host's variables merged once (hostvars[host] merges them anew on every read)
        merged = dict((host, hostvars[host]) for host in plan.get("hosts") or {} if host in hostvars)
        try:
            lines = units_gate.summary(plan, merged, self._play_context.check_mode, args["notes"])
        except (KeyError, TypeError, ValueError) as exc:
            result.update(failed=True, msg="launchcard.inference.units_summary: launchcard_plan: %s" % to_text(exc))
            return result
        failures = dict((host, why) for host, why in ((h, units_gate.gate_failure(hv)) for h, hv in merged.items()) if why)
        # printed as ansible.builtin.debug prints its msg: the table as plain lines, at any verbosity
        result.update(changed=False, msg="\n".join(lines), _ansible_verbose_always=True)
        if failures:
            result["failures"] = failures
        return result
