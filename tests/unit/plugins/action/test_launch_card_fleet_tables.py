# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch_card action with facts=false (playbooks/tasks/plan.yml): the tables every host of the play reads of
the whole plan come with the plan, found once in the planning step (issue 45: no Jinja glue in tasks/plan.yml).
The inventory and card are test_launch_card_action's (the sandbox fleet, the example card)."""

from __future__ import annotations

import pytest

from test_launch_card_action import FLEET, action, failure, task_vars
from test_launch_card_plan_file import ORDER, sliced, write_plan

from ansible_collections.launchcard.inference.plugins.module_utils import _preflight as preflight
from ansible_collections.launchcard.inference.plugins.plugin_utils import _plan_tables as plan_tables
from ansible_collections.launchcard.inference.plugins.plugin_utils import _report as report
from ansible_collections.launchcard.inference.plugins.plugin_utils._rollout import card_sha256

TABLES = ("launchcard_gates", "launchcard_peer_ports", "launchcard_foreign_peers", "launchcard_keep_fleet_lock",
          "launchcard_record_cards")


def planned(args=None, tv=None):
    plugin, dummy = action(dict({"facts": False}, **(args or {})))
    result = plugin.run(task_vars=tv or dict(task_vars(), ansible_play_hosts_all=sorted(FLEET)))
    assert "failed" not in result, result
    return result


def test_a_full_run_gets_every_hosts_gate_and_peer_ports_and_no_foreign_peer():
    result = planned()
    plan, cards = result["launchcard_plan"], result["launchcard_cards"]
    assert result["launchcard_gates"] == report.gate_table(plan) and set(result["launchcard_gates"]) == set(FLEET)
    assert result["launchcard_peer_ports"] == preflight.peer_table(cards, plan)
    # the router reaches its prefill and decode workers on their hosts
    router = result["launchcard_peer_ports"]["lc-router"]
    assert {"198.18.0.15", "198.18.0.16"} <= set(p["address"] for p in router), router
    assert result["launchcard_foreign_peers"] == {}
    assert result["launchcard_keep_fleet_lock"] is False
    # each card as the hosts' records name it: its model's digest, never the path it was read from
    (src, card), = cards.items()
    assert result["launchcard_record_cards"] == {src: {"sha256": card_sha256(card), "repo": card["model"]["repo"],
                                                       "revision": card["model"]["revision"]}}


def test_a_limited_run_gets_the_instances_outside_its_play_by_address():
    tv = dict(task_vars(play_hosts=["lc-router"]), ansible_play_hosts_all=["lc-router"])
    result = planned(tv=tv)
    foreign = result["launchcard_foreign_peers"]
    assert foreign["198.18.0.15"] == "lc-prefill" and foreign["198.18.0.16"] == "lc-decode"
    assert "198.18.0.17" not in foreign and set(foreign.values()) == set(FLEET) - {"lc-router"}
    # the gates and peer ports stay the whole fleet's
    assert set(result["launchcard_gates"]) == set(result["launchcard_peer_ports"]) == set(FLEET)


def test_as_facts_the_tables_are_not_returned():
    plugin, dummy = action()
    result = plugin.run(task_vars=task_vars())
    assert not set(TABLES) & (set(result) | set(result["ansible_facts"]))


@pytest.mark.parametrize("final, keeps", [(None, True), ("", True), (True, False), ("yes", False), (False, True),
                                          ("false", True)])
def test_a_slice_of_a_plan_file_keeps_the_fleet_lock_unless_it_is_the_final_job(tmp_path, final, keeps):
    path = tmp_path / "plan.json"
    write_plan(path, task_vars())
    part = sliced(task_vars(), ORDER[:3])
    part["ansible_play_hosts_all"] = ORDER[:3]
    args = {"plan_file": str(path), "plan_run": True, "plan_final": final}
    assert planned(args, part)["launchcard_keep_fleet_lock"] is keeps
    # the whole plan's job: final unless told it is not; a job of a run of its own (no plan_run) keeps nothing
    whole = dict(task_vars(), ansible_play_hosts_all=ORDER)
    assert planned(args, whole)["launchcard_keep_fleet_lock"] is (final in (False, "false"))
    assert planned({"plan_file": str(path), "plan_final": final}, part)["launchcard_keep_fleet_lock"] is False


def test_a_plan_final_that_is_no_boolean_fails_naming_the_variable(tmp_path):
    path = tmp_path / "plan.json"
    write_plan(path, task_vars())
    plugin, dummy = action({"facts": False, "plan_file": str(path), "plan_run": True, "plan_final": "maybe"})
    msg = failure(plugin.run(task_vars=dict(task_vars(), ansible_play_hosts_all=ORDER[:2])))
    assert msg.startswith("launchcard_plan_final: ") and "maybe" in msg, msg


def test_plan_final_alone():
    assert plan_tables.plan_final(None) is None and plan_tables.plan_final("") is None
    assert plan_tables.plan_final("True") is True and plan_tables.plan_final(0) is False
    with pytest.raises(ValueError, match="^launchcard_plan_final: "):
        plan_tables.plan_final("sometimes")
