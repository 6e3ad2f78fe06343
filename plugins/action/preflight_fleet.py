# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin ``launchcard.inference.preflight_fleet``: the preflight role's step for the whole fleet, run once
after every host's preflight call (see plugins/modules/preflight_fleet.py). Runs on the controller only; reads each
host's registered results once; logic in ``plugins/plugin_utils/_preflight_steps.py``."""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _play_vars as play_vars
from ansible_collections.launchcard.inference.plugins.plugin_utils import _preflight_steps as steps

ARGUMENT_SPEC = dict(
    step=dict(type="str", choices=["argv", "report"], required=True),
    result=dict(type="str", default="preflight_result"),
    argv_result=dict(type="str", default="preflight_argv"),
    image_refs=dict(type="dict", default={}),
    argv_python=dict(type="str", default="/opt/launchcard/venv/bin/python"),
    checks=dict(type="list", elements="dict", default=[]),
    hold_moved=dict(type="bool", default=False),
    lock=dict(type="bool", default=False),
    fleet_lock=dict(type="raw"),
    recheck=dict(type="bool", default=False),
)


class ActionModule(ActionBase):
    """Compute the fleet's preflight step from every host's results."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # no effect since ansible-core 2.5
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        hosts_all = list(task_vars.get("ansible_play_hosts_all") or [])
        hosts = list(task_vars.get("ansible_play_hosts") or [])
        hostvars = task_vars.get("hostvars") or {}
        # each host's variables merged once (hostvars merges them anew on every read)
        host_vars = dict((h, hostvars[h]) for h in hosts_all if h in hostvars)
        found = play_vars.results(hostvars, list(host_vars), [args["result"]])
        results = dict((h, found[h].get(args["result"]) or {}) for h in host_vars)

        def var(name):
            return play_vars.variable(self._templar, task_vars, name)

        percent = var("launchcard_max_fail_percentage")
        check_mode = bool(task_vars.get("ansible_check_mode", self._play_context.check_mode))
        try:
            if args["step"] == "argv":
                result["checks"] = steps.argv_step(var("launchcard_plan") or {}, args["image_refs"], host_vars, results,
                                                   hosts_all, hosts, args["argv_python"], check_mode, percent)
                result["changed"] = False
                return result
            run = var("launchcard_run") or {}
            out = steps.report_step(
                var("launchcard_plan") or {}, var("launchcard_cards") or {}, results,
                dict((h, host_vars[h].get(args["argv_result"]) or {}) for h in host_vars), hosts_all, hosts,
                checks=args["checks"], image_refs=args["image_refs"], hold=args["hold_moved"], lock_taken=args["lock"],
                check_mode=check_mode, recheck=args["recheck"], fleet=args["fleet_lock"], anchor=run.get("anchor"),
                keep_fleet=boolean(var("launchcard_keep_fleet_lock") or False, strict=False), percent=percent)
        except ValueError as exc:
            # returned, not raised: ansible-core 2.19 prints a raised failure twice (plugins/action/run_lock.py)
            result.update(failed=True, changed=False, msg="launchcard.inference.preflight_fleet: %s" % exc)
            return result
        moved = out.pop("warnings")
        result.update(out)
        if moved:
            # Ansible's [WARNING] lines too: a revision move is easy to miss under a long table
            result["warnings"] = list(result.get("warnings") or []) + moved
        result["changed"] = False
        # the table is printed as debug prints its msg, at every verbosity
        result["_ansible_verbose_always"] = True
        return result
