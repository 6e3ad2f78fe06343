# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Metrics on by default (issue 43): SGLang engines get --enable-metrics unless the card writes it or the host's
overrides remove it; vLLM and the router are left as the card writes them."""

from __future__ import annotations

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._argv import Argv
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import PlanError, normalize_placement, plan

from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import EX, SANDBOX, _variant

FLAG = "--enable-metrics"


def _plan(card, hosts):
    return plan(card, normalize_placement(hosts))


def _insts(p):
    return [i for h in p["hosts"].values() for i in h["instances"]]


def _host(name, recipes, overrides=None):
    return (name, {"address": name, "recipes": recipes, "argv_overrides": overrides})


def test_every_sglang_engine_gets_the_flag_once_vllm_and_the_router_none():
    for inst in _insts(_plan(EX, SANDBOX)):
        count = inst["argv"].count(FLAG)
        assert count == (1 if inst["launcher"] == "sglang" else 0), inst["id"]
        if inst["launcher"] == "sglang":
            # before the revision pin, which closes every engine's argv
            assert inst["argv"][-3:] == [FLAG, "--revision", EX["model"]["revision"]]
            assert [c for c in inst["changes"] if c.startswith(FLAG)] == [
                FLAG + " (metrics on by default; launchcard_argv_overrides remove turns them off)"]


def test_a_card_that_writes_the_flag_keeps_its_own_and_gets_no_second():
    def written(doc):
        doc["envs"][3]["argv"].insert(4, FLAG)
    card = _variant(written)
    inst = _insts(_plan(card, [_host("cp", ["sglang-aggregated"])]))[0]
    assert inst["argv"].count(FLAG) == 1 and inst["argv"].index(FLAG) == 4
    assert not [c for c in inst["changes"] if c.startswith(FLAG)]


@pytest.mark.parametrize("in_card", [False, True])
def test_an_override_that_removes_the_flag_turns_the_metrics_off(in_card):
    card = _variant((lambda doc: doc["envs"][3]["argv"].append(FLAG)) if in_card else None)
    off = {"sglang-aggregated": {"remove": [FLAG]}}
    p = _plan(card, [_host("cp", ["sglang-aggregated"], off), _host("cp2", ["sglang-aggregated"])])
    mine, other = sorted(_insts(p), key=lambda i: i["host"])
    assert FLAG not in mine["argv"]
    assert "launchcard_argv_overrides: remove %s%s" % (FLAG, "" if in_card else " (metrics off)") in mine["changes"]
    # another host without the override keeps the default
    assert other["argv"].count(FLAG) == 1


def test_a_misspelt_flag_in_remove_is_still_an_error():
    with pytest.raises(PlanError) as err:
        _plan(EX, [_host("cp", ["sglang-aggregated"], {"sglang-aggregated": {"remove": ["--enable-metric"]}})])
    assert "'--enable-metric' is not in the recipe's argv" in str(err.value)


def test_the_router_metrics_listener_is_planned_like_every_port_and_binds_all_interfaces():
    p = _plan(EX, [_host("r", ["sglang-router", "sglang-router"]), _host("p", ["sglang-prefill"]),
                   _host("d", ["sglang-decode"])])
    routers = [i for i in _insts(p) if i["role"] == "router"]
    assert [i["prometheus_port"] for i in routers] == [29000, 29001]
    assert [{"port": 29001, "what": "prometheus port"}] == [x for x in routers[1]["ports"] if x["port"] == 29001]
    # sglang_router/router_args.py (0.3.2): --prometheus-host defaults to 0.0.0.0, so the card's argv needs none
    assert not Argv(routers[0]["argv"]).has("--prometheus-host")
