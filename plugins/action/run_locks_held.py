# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for launchcard.inference.run_locks_held; documented in plugins/modules/run_locks_held.py."""

from __future__ import annotations

from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _play_vars as play_vars
from ansible_collections.launchcard.inference.plugins.plugin_utils import _run_locks as run_locks


class ActionModule(ActionBase):
    """Once for the fleet, on the controller: the run locks this run still holds, by host, for the release loop."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # no effect since ansible-core 2.5
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            hosts=dict(type="list", elements="str", required=True),
            results=dict(type="list", elements="str", default=["preflight_result"]),
            released=dict(type="list", elements="str", default=[]),
            fleet=dict(type="dict"),
            keep_fleet=dict(type="bool", default=False),
            final_fleet=dict(type="bool", default=False),
            lock_dir=dict(type="str", default="/var/lib/launchcard"),
        ))
        run = play_vars.variable(self._templar, task_vars, "launchcard_run") or {}
        anchor = run.get("anchor")
        locks = run_locks.taken(task_vars.get("hostvars") or {}, args["hosts"], args["fleet"], anchor, args["released"],
                                args["results"], args["keep_fleet"])
        if args["final_fleet"]:
            # the final job of a plan file: the fleet lock its slices left held, also when this job took none
            try:
                paths = run_locks.lock_spec(run, anchor, play_vars.variable(self._templar, task_vars, "launchcard_plan"),
                                            args["lock_dir"], scope="fleet")["paths"]
            except ValueError as exc:
                result.update(failed=True, msg="launchcard.inference.run_locks_held: %s" % to_text(exc))
                return result
            entry = next((e for e in locks if e["host"] == anchor), None)
            if entry is None:
                locks.append({"host": anchor, "paths": paths})
            else:
                entry["paths"] += [p for p in paths if p["path"] not in set(q["path"] for q in entry["paths"])]
        result.update(changed=False, locks=locks)
        return result
