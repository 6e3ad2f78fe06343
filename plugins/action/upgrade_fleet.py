# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin for launchcard.inference.upgrade_fleet; documented in plugins/modules/upgrade_fleet.py."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _run_locks as run_locks
from ansible_collections.launchcard.inference.plugins.plugin_utils import _upgrade_fleet as upgrade_fleet

# the registered host_state results whose lock.released lists what a host's record already released
RECORD_RESULTS = ["upgrade_record_batch", "upgrade_record_untouched"]


class ActionModule(ActionBase):
    """Controller-side, run once: the upgrade's decisions for the fleet (no remote execution)."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            step=dict(type="str", default="rollout", choices=["rollout", "locks"]),
            options=dict(type="dict", default={}),
            serial=dict(type="raw", default=1),
            allow_outage=dict(type="bool", default=False),
            allow_moved_peers=dict(type="bool", default=False),
            gate_timeout=dict(type="raw"),
            state_var=dict(type="str", default=upgrade_fleet.STATE_VAR),
        ))
        result["changed"] = False
        hostvars = task_vars.get("hostvars") or {}
        hosts = list(task_vars.get("ansible_play_hosts_all") or [])
        if args["step"] == "locks":
            run = task_vars.get("launchcard_run")
            # before the plan set launchcard_run, no lock was taken
            result["locks"] = run_locks.taken(
                hostvars, hosts, task_vars.get("preflight_fleet_lock"), (run or {}).get("anchor"),
                RECORD_RESULTS) if run else []
            return result
        try:
            result.update(upgrade_fleet.fleet(
                task_vars.get("launchcard_plan"), task_vars.get("launchcard_cards"), hostvars, hosts,
                args["options"], args["serial"], args["allow_outage"], args["allow_moved_peers"],
                args["gate_timeout"], bool(self._task.check_mode), args["state_var"],
                (task_vars.get("ansible_run_tags") or ["all"], task_vars.get("ansible_skip_tags") or [])))
        except ValueError as exc:
            raise AnsibleActionFail("launchcard.inference.upgrade_fleet: %s" % to_text(exc))
        return result
