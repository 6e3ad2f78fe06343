# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for launchcard.inference.deploy_fleet; documented in plugins/modules/deploy_fleet.py."""

from __future__ import annotations

from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _deploy_fleet as deploy_fleet
from ansible_collections.launchcard.inference.plugins.plugin_utils import _play_vars as play_vars
from ansible_collections.launchcard.inference.plugins.plugin_utils import _run_locks as run_locks


class ActionModule(ActionBase):
    """Once for the fleet, on the controller: a limited run's stranded consumers and the fleet lock to take."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # no effect since ansible-core 2.5
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            hosts=dict(type="list", elements="str", required=True),
            consumers=dict(type="bool", default=True),
            allow_moved_peers=dict(type="bool", default=False),
            records=dict(type="str", default="preflight_result.units_found.record_instances"),
            deferred=dict(type="str", default="preflight_result.lock.deferred"),
        ))
        hostvars = task_vars.get("hostvars") or {}
        plan = play_vars.variable(self._templar, task_vars, "launchcard_plan") or {}
        cards = play_vars.variable(self._templar, task_vars, "launchcard_cards") or {}
        run = play_vars.variable(self._templar, task_vars, "launchcard_run") or {}
        hosts = args["hosts"]

        def read(host, path):
            """``path`` (dotted) in ``host``'s variables, None where a step is missing."""
            steps = path.split(".")
            value = hostvars[host].get(steps[0]) if host in hostvars else None
            return run_locks.get(value, *steps[1:]) if steps[1:] else value

        lines = []
        if args["consumers"] and not all(h in hosts for h in (plan.get("hosts") or {})):
            # where each run host's instances are today: its record, read by its preflight call
            recorded = dict((h, read(h, args["records"]) or []) for h in hosts if h in hostvars)
            try:
                lines = deploy_fleet.stranded(plan, cards, recorded, hosts, args["allow_moved_peers"])
            except (KeyError, TypeError, ValueError) as exc:
                result.update(failed=True, msg="launchcard.inference.deploy_fleet: %s" % to_text(exc))
                return result
        anchor = run.get("anchor")
        deferred = (read(anchor, args["deferred"]) or []) if anchor in hosts else []
        fleet_lock = run_locks.fleet_lock(anchor, hosts, {"lock": {"deferred": deferred}})
        holder = None
        if fleet_lock:
            try:
                holder = run_locks.lock_spec(run, anchor, plan, scope="fleet")["holder"]
            except ValueError as exc:
                result.update(failed=True, msg="launchcard.inference.deploy_fleet: %s" % to_text(exc))
                return result
        result.update(changed=False, stranded=lines, fleet_lock=fleet_lock, fleet_holder=holder)
        if lines:
            # shown once, as the debug action shows its message (the lines name the units and the hosts to add)
            result["_ansible_verbose_always"] = True
            if not args["allow_moved_peers"] and not self._task.check_mode:
                # a refusal stops the run: its lines are the failure's message, and nothing reads stranded after it
                del result["stranded"]
                result.update(failed=True, msg=lines)
        return result
