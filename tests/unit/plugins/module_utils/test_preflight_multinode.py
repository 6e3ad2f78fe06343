# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight of multi-node groups: rank 0's init ports are checked free, and reachable from the other ranks."""

from __future__ import annotations

import os

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.module_utils._preflight import evaluate, host_needs

HERE = os.path.dirname(os.path.abspath(__file__))
VALID = os.path.join(os.path.dirname(os.path.dirname(HERE)), "cards", "valid")


def _load(name):
    with open(os.path.join(VALID, name)) as f:
        return load_card(f.read(), name)


SGL = _load("02-sglang-multinode-tp16.json")
UNIT0 = "launchcard-deepseek-r1-0528-sglang-aggregated-0-0-rank0.service"
UNIT1 = "launchcard-deepseek-r1-0528-sglang-aggregated-1-0-rank0.service"


def _two_groups_sharing_a_head():
    return plan(SGL, normalize_placement([
        ("a", {"address": "10.9.0.1", "recipes": ["sglang-aggregated-0", "sglang-aggregated-1"]}),
        ("b", {"address": "10.9.0.2", "recipes": ["sglang-aggregated-0"]}),
        ("c", {"address": "10.9.0.3", "recipes": ["sglang-aggregated-1"]})]))


def test_the_head_checks_every_init_port_free():
    p = _two_groups_sharing_a_head()
    needs = host_needs(SGL, p["hosts"]["a"], p)
    held = sorted((x["port"], x["owner"]) for x in needs["ports"])
    assert held == sorted([(30000, UNIT0), (30001, UNIT1)] + [(k, UNIT0) for k in range(5000, 5007)]
                          + [(k, UNIT1) for k in range(5007, 5014)])
    facts = {"os": {"id": "debian", "version_id": "12"}, "listening": {5010: "container jupyter"}}
    result = next(r for r in evaluate(facts, needs) if r["check"] == "ports")
    assert (result["ok"], result["found"]) == (False, "5010 (held by container jupyter)")


def test_the_other_ranks_must_reach_their_head_init_port():
    p = _two_groups_sharing_a_head()
    assert host_needs(SGL, p["hosts"]["b"], p)["peers"] == [
        {"address": "10.9.0.1", "port": 5000, "why": "sglang-aggregated-0 -> sglang-aggregated-0 init port"}]
    assert host_needs(SGL, p["hosts"]["c"], p)["peers"] == [
        {"address": "10.9.0.1", "port": 5007, "why": "sglang-aggregated-1 -> sglang-aggregated-1 init port"}]
    # a rank-0 host reaches no init port of its own group
    assert host_needs(SGL, p["hosts"]["a"], p)["peers"] == []
    # a rank > 0 holds only --port, where SGLang serves its dummy /health (engine.py launch_dummy_health_check_server)
    assert [x["port"] for x in host_needs(SGL, p["hosts"]["b"], p)["ports"]] == [30000]


def test_a_port_held_by_the_same_instance_under_its_former_role_name_is_ours():
    """An upgrade renames launchcard-...-monolithic-0.service: it is pruned before its successor starts."""
    with open(os.path.join(os.path.dirname(VALID), "..", "..", "..", "cards", "glm-5.3-flash.json")) as f:
        card = load_card(f.read(), "glm")
    p = plan(card, normalize_placement([("v", {"address": "10.9.1.1", "recipes": ["vllm-aggregated"]})]))
    inst = p["hosts"]["v"]["instances"][0]
    assert inst["former_units"] == ["launchcard-glm-5.3-flash-vllm-monolithic-0.service"]
    needs = host_needs(card, p["hosts"]["v"], p)
    facts = {"os": {"id": "debian", "version_id": "12"}}
    for holder, ok in (("launchcard-glm-5.3-flash-vllm-monolithic-0.service", True),
                       ("container glm-5.3-flash-vllm-monolithic-0", True),
                       ("launchcard-glm-5.3-flash-vllm-monolithic-1.service", False),
                       ("launchcard-glm-5.3-flash-sglang-monolithic-0.service", False)):
        result = next(r for r in evaluate(dict(facts, listening={8000: holder}), needs) if r["check"] == "ports")
        assert result["ok"] is ok, holder
