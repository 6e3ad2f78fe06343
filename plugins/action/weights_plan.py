# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin for launchcard.inference.weights_plan; documented in plugins/modules/weights_plan.py."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _weights as weights


class ActionModule(ActionBase):
    """Controller-side, once for the play: each host's preflight read taken from hostvars once, then the plan."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            source=dict(type="str", default="peer"),
            fanout=dict(type="raw", default=0),
            hub_concurrency=dict(type="raw", default=0),
            result_var=dict(type="str", default="preflight_result"),
            hosts=dict(type="list", elements="str"),
            plan=dict(type="dict"),
            cards=dict(type="dict"),
        ))
        if args["source"] not in ("peer", "hub", "path"):
            raise AnsibleActionFail("launchcard_weights_source must be peer, hub or path, found %r" % (args["source"],))
        hosts = args["hosts"] if args["hosts"] is not None else list(task_vars.get("ansible_play_hosts") or [])
        empty = dict(cards={}, hosts={}, waves=0, download_rounds=0, report=[], changed=False)
        # no plan to make: the path source fetches nothing, the hub source without a bound lets each host download
        if args["source"] == "path":
            result.update(empty)
            return result
        try:
            fanout, hub_concurrency = int(args["fanout"] or 0), int(args["hub_concurrency"] or 0)
        except (TypeError, ValueError):
            raise AnsibleActionFail("launchcard_weights_fanout and launchcard_weights_hub_concurrency must be whole "
                                    "numbers, found %r and %r" % (args["fanout"], args["hub_concurrency"]))
        if args["source"] == "hub" and hub_concurrency <= 0:
            result.update(empty)
            return result
        plan = args["plan"] if args["plan"] is not None else self._play_var(task_vars, "launchcard_plan")
        hostvars = task_vars.get("hostvars") or {}
        staged = {}
        for host in hosts:
            found = (hostvars[host].get(args["result_var"]) if args["result_var"] and host in hostvars else None) or {}
            staged[host] = bool(found.get("weights_staged"))
        peers = weights.peer_plan(plan, staged, hosts, fanout, args["source"], hub_concurrency)
        cards = args["cards"] if args["cards"] is not None else self._play_var(task_vars, "launchcard_cards")
        result.update(peers)
        # the debug task after this one says it (peer source)
        result["report"] = weights.peer_report(peers, weights.card_repos(cards)) if args["source"] == "peer" else []
        result["changed"] = False
        return result

    def _play_var(self, task_vars, name):
        """A play variable as the play holds it, read here once rather than copied into the task's arguments."""
        return self._templar.template(task_vars.get(name)) or {}
