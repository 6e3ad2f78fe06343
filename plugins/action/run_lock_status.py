# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for launchcard.inference.run_lock_status; documented in plugins/modules/run_lock_status.py."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _play_vars as play_vars
from ansible_collections.launchcard.inference.plugins.plugin_utils import _run_locks as run_locks


class ActionModule(ActionBase):
    """Controller-side: the play's lock results read once for the fleet (no remote execution)."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            results=dict(type="list", elements="str", default=["preflight_result"]),
            fleet=dict(type="dict"),
            anchor=dict(type="str"),
            released=dict(type="list", elements="str", default=[]),
            keep_fleet=dict(type="bool", default=False),
            hosts=dict(type="list", elements="str"),
            settled=dict(type="str"),
            settled_hosts=dict(type="list", elements="str"),
        ))
        hosts = args["hosts"] if args["hosts"] is not None else task_vars.get("ansible_play_hosts_all") or []
        hostvars = task_vars.get("hostvars") or {}
        live = args["settled_hosts"] if args["settled_hosts"] is not None else task_vars.get("ansible_play_hosts") or []
        # only the registered results read below, each host's read once, untemplated (_play_vars.results)
        names = set(n.split(".")[0] for n in list(args["results"]) + list(args["released"]) + [args["settled"] or ""] if n)
        wanted = sorted(set(hosts) | set(live if args["settled"] else ()))
        seen = dict((h, {}) for h in wanted)
        seen.update(play_vars.results(hostvars, wanted, sorted(names)))
        result.update(changed=False, taken=run_locks.taken(seen, hosts, args["fleet"], args["anchor"], args["released"],
                                                           args["results"], args["keep_fleet"]))
        result["refusal"] = run_locks.refusal(seen, hosts, args["fleet"], args["anchor"], args["results"])
        if args["settled"]:
            # nothing held, no refusal, every live host left as it is: the run changes nothing
            result["settled"] = not result["taken"] and not result["refusal"] and run_locks.all_settled(seen, live, args["settled"])
        return result
