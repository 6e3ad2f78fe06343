# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Outages an upgrade would cause (issue 26, item 4): which instances, and why."""

from __future__ import annotations

import os

from ansible_collections.launchcard.inference.plugins.plugin_utils._upgrade_fleet import gpus as upgrade_gpus
from ansible_collections.launchcard.inference.plugins.plugin_utils._outages import mini_lb_notes, outages, report
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan_fleet
from ansible_collections.launchcard.inference.plugins.plugin_utils._rollout import card_sha256, rollout
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import host_units
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import _card

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
EXAMPLE = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
UPGRADE_V1 = os.path.join(ROOT, "tests", "e2e", "cards", "upgrade-v1.json")
OPTS = {"runtime": "native"}
NEW_REVISION = "2" * 40
REGULAR_PD = {"sglang-router": {"remove": ["--mini-lb"]}}


def _plan(card, placement):
    """``placement``: ``[(host, recipes, {more host vars})]``."""
    hosts = [(h, dict({"address": "10.0.0.%d" % (i + 1), "recipes": recipes}, **extra))
             for i, (h, recipes, extra) in enumerate(placement)]
    return plan_fleet({"card": card}, {"card": normalize_placement(hosts)})


def _upgrade(path, placement, change, gpus=None, serial=1, twin_units=None):
    """The rollout from a deploy of card ``path`` to the same card changed by ``change``, with its outages."""
    old_card, new_card = _card(path), _card(path, change)
    old, new = _plan(old_card, placement), _plan(new_card, placement)
    records = {h: {"card": {"sha256": card_sha256(old_card), "repo": old_card["model"]["repo"],
                            "revision": old_card["model"]["revision"]},
                   "instances": hp["instances"],
                   "units": {u["name"]: {"text": u["content"]} for u in host_units(hp, OPTS)}}
               for h, hp in old["hosts"].items()}
    cards = {"card": {"sha256": card_sha256(new_card), "repo": new_card["model"]["repo"],
                      "revision": new_card["model"]["revision"]}}
    units = {h: host_units(hp, OPTS) for h, hp in new["hosts"].items()}
    return rollout(records, new, units, cards, serial, gpus, twin_units=twin_units), new


def _recipe(doc, role):
    return next(e for e in doc["envs"] if ("--disaggregation-mode" in e["argv"] and role in e["argv"])
                or (role == "router" and "sglang_router.launch_router" in e["argv"]))


def _decode_env(doc):
    # issue 26's reproduction: one env value of the decode recipe changed
    _recipe(doc, "decode").setdefault("env", {})["SGLANG_LOG_LEVEL"] = "debug"


PD_ONE_HOST = [("gpu-1", ["sglang-prefill", "sglang-decode", "sglang-router"], {"gpus": 8})]


def test_the_example_cards_pd_pair_behind_mini_lb_is_an_outage():
    """Issue 26: the card as written (prefill, decode and router on one 8-GPU host, --mini-lb), one decode env
    value changed: the decode drops requests, for its router's reasons."""
    ro, new = _upgrade(EXAMPLE, PD_ONE_HOST, _decode_env)
    # the host runs the router too, so the rollout files it under the router tier (no partner restart there)
    assert [(b["tier"], b["hosts"]) for b in ro["batches"]] == [("router", ["gpu-1"])]
    (decode,) = ro["outages"]
    assert (decode["host"], decode["unit"], decode["role"], decode["batch"], decode["codes"]) == (
        "gpu-1", "launchcard-glm-5.3-flash-sglang-decode-0.service", "decode", 1, ["mini-lb", "no-replica"])
    assert "runs --mini-lb, the debug balancer of SGLang: no worker API" in decode["reasons"][0]
    assert "no other decode instance behind router gpu-1 (launchcard-glm-5.3-flash-sglang-router-0.service) " \
           "serves meanwhile (1 of 1 switch in batch 1)" in decode["reasons"][1]
    # the card uses 4 of the host's 8 GPUs (issue 26, item 1): the room is there, but no twin can join --mini-lb
    assert decode["reasons"][1].endswith("; no surge: its router gpu-1 (launchcard-glm-5.3-flash-sglang-router-0"
                                         ".service) runs --mini-lb, which has no worker API to add a twin to")
    # the router's --prefill/--decode name its own host's loopback: still these workers; the router does not change
    assert "http://127.0.0.1:32000" in new["hosts"]["gpu-1"]["instances"][2]["argv"]
    assert not any(o["role"] == "router" for o in ro["outages"])


PD_HOSTS = [("pre", ["sglang-prefill"], {"gpus": 2}), ("dec", ["sglang-decode"], {"gpus": 2}),
            ("rt", ["sglang-router"], {})]


def test_a_pd_pair_on_its_own_hosts_drops_requests_on_both_sides():
    """The sandbox's layout: the decode changes, its prefill partner restarts with it, both behind --mini-lb."""
    ro, dummy = _upgrade(EXAMPLE, PD_HOSTS, _decode_env)
    assert [(b["tier"], b["hosts"]) for b in ro["batches"]] == [("prefill-decode", ["dec", "pre"])]
    assert [(o["host"], o["role"], o["batch"], o["codes"]) for o in ro["outages"]] == [
        ("dec", "decode", 1, ["mini-lb", "no-replica"]), ("pre", "prefill", 1, ["mini-lb", "no-replica"])]
    assert ro["outages"][1]["reasons"][1].endswith(
        "no surge: its router rt (launchcard-glm-5.3-flash-sglang-router-0.service) runs --mini-lb, which has no "
        "worker API to add a twin to")


def test_the_regular_pd_router_drains_only_what_surges():
    """The inventory runs the regular PD router (launchcard_argv_overrides): it has a worker API, but with no GPUs
    free for twins the pair does not surge, and the rollout takes PD workers out of their router only in a surge,
    so the pair's restart still drops requests, and says why."""
    placement = [(h, r, dict(v, argv_overrides=REGULAR_PD)) for h, r, v in PD_HOSTS]
    ro, dummy = _upgrade(EXAMPLE, placement, _decode_env)
    assert [o["codes"] for o in ro["outages"]] == [["not-drained", "no-replica"]] * 2
    assert "does not take it out of its pd router rt" in ro["outages"][0]["reasons"][0]
    assert ro["outages"][0]["reasons"][1].endswith("no surge: no free GPUs for a twin beside it: dec has 2, the plan "
                                                   "uses 2, it needs 2")
    assert not any("--mini-lb" in r for o in ro["outages"] for r in o["reasons"])


def test_a_single_vllm_tp8_on_all_eight_gpus_has_no_replica():
    def bump(doc):
        doc["hf"]["revision"] = NEW_REVISION
    ro, dummy = _upgrade(EXAMPLE, [("gpu-1", ["vllm-aggregated"], {"gpus": 8})], bump)
    (only,) = ro["outages"]
    assert (only["host"], only["unit"], only["codes"]) == (
        "gpu-1", "launchcard-glm-5.3-flash-vllm-aggregated-0.service", ["no-replica"])
    assert only["reasons"] == ["no router in front of it: its clients reach http://10.0.0.1:8000 directly, an "
                               "address a new one beside it could not take while the old one holds it"]
    assert only["line"].startswith("gpu-1: launchcard-glm-5.3-flash-vllm-aggregated-0.service (batch 1): no router")


REPLICAS = [("w%d" % i, ["sglang-aggregated"], {}) for i in range(4)] + [("rt", ["sglang-router"], {})]


def _new_flag(doc):
    doc["envs"][0]["argv"] += ["--max-running-requests", "32"]


def test_replicas_drained_one_at_a_time_drop_nothing():
    ro, dummy = _upgrade(UPGRADE_V1, REPLICAS, _new_flag)
    assert len(ro["batches"]) == 4 and ro["outages"] == []
    assert report(ro["outages"]) == ["outages: none (no instance drops requests)"]


def test_a_router_whose_own_unit_changes_is_an_outage():
    def router_flag(doc):
        doc["envs"][1]["argv"] += ["--log-level", "debug"]
    ro, dummy = _upgrade(UPGRADE_V1, REPLICAS, router_flag)
    (only,) = ro["outages"]
    assert (only["host"], only["role"], only["codes"]) == ("rt", "router", ["router"])
    assert "its own unit changes: the router restarts, and its clients (http://10.0.0.5:30080) are refused" \
        in only["reasons"][0]


def _one_replica(gpus):
    return [("w0", ["sglang-aggregated"], {"gpus": gpus}), ("rt", ["sglang-router"], {})]


def test_a_lone_replica_says_why_it_does_not_surge():
    ro, dummy = _upgrade(UPGRADE_V1, _one_replica(1), _new_flag)
    (full,) = ro["outages"]
    assert full["codes"] == ["no-replica"]
    assert full["reasons"][0].endswith("no surge: no free GPUs for a twin beside it: w0 has 1, the plan uses 1, it "
                                       "needs 1")
    # a host of the play with no instance and the GPUs is a spare host: named, but no twin starts there
    ro, dummy = _upgrade(UPGRADE_V1, _one_replica(1), _new_flag, gpus={"w0": 1, "rt": 0, "spare": 2})
    assert ro["outages"][0]["reasons"][0].endswith(
        "it needs 1; spare host spare has the 1 GPU(s) a twin needs, but upgrade.yml starts twins on an instance's "
        "own host only (the runtime and the new revision are installed on the plan's hosts)")
    # GPUs from preflight (no launchcard_gpus) count as the host's: a free one, and the replica surges (test_surge.py)
    ro, dummy = _upgrade(UPGRADE_V1, [("w0", ["sglang-aggregated"], {}), ("rt", ["sglang-router"], {})], _new_flag,
                         gpus={"w0": 2, "rt": 0})
    assert ro["outages"] == [] and [s["twin"]["gpu_ids"] for s in ro["surges"]] == [[1]]


def test_an_encoder_has_no_router_in_front():
    placement = [("enc", ["sglang-encoder"], {}), ("lang", ["sglang-language"], {})]

    def enc_flag(doc):
        next(e for e in doc["envs"] if "--encoder-only" in e["argv"])["argv"] += ["--log-level", "debug"]
    ro, dummy = _upgrade(EXAMPLE, placement, enc_flag)
    (only,) = ro["outages"]
    assert only["host"] == "enc" and only["codes"] == ["no-replica"]
    assert "the language servers (--encoder-urls) reach http://10.0.0.1:30001 directly" in only["reasons"][0]


def test_report_and_refusal_name_each_instance_and_the_variable():
    ro, dummy = _upgrade(EXAMPLE, PD_HOSTS, _decode_env)
    lines = report(ro["outages"])
    assert lines[0].startswith("outage: dec: launchcard-glm-5.3-flash-sglang-decode-0.service (batch 1): ")
    assert lines[1].startswith("outage: pre: launchcard-glm-5.3-flash-sglang-prefill-0.service (batch 1): ")
    assert lines[2] == ("outages: 2 instance(s) would drop requests; the real run refuses this upgrade unless the "
                        "inventory sets launchcard_upgrade_allow_outage: true")
    # a run that accepts them says so instead of announcing a refusal it will not make
    accepted = report(ro["outages"], allowed=True)
    assert accepted[:2] == lines[:2]
    assert accepted[2] == ("outages: 2 instance(s) would drop requests; accepted (launchcard_upgrade_allow_outage: "
                           "true), the real run causes them")


def test_outages_read_only_what_the_rollout_restarts():
    ro, new = _upgrade(EXAMPLE, PD_HOSTS, _decode_env)
    assert len(outages(new, ro)) == 2
    # no batch: nothing restarts, nothing drops
    assert outages(new, dict(ro, batches=[])) == []
    # hosts that only gain instances stop nothing
    fresh = dict(ro, hosts=dict((h, dict(ch, action="new")) for h, ch in ro["hosts"].items()))
    assert outages(new, fresh) == []


def test_planning_says_what_a_mini_lb_router_costs():
    card = _card(EXAMPLE)
    (note,) = mini_lb_notes(_plan(card, PD_ONE_HOST))
    assert note.startswith("gpu-1: launchcard-glm-5.3-flash-sglang-router-0.service runs --mini-lb, the debug "
                           "balancer of SGLang: it has no worker API")
    assert "every upgrade of them is an outage" in note and "launchcard_upgrade_allow_outage: true" in note
    assert "launchcard_argv_overrides: {sglang-router: {remove: ['--mini-lb']}}" in note
    # with that override, the regular router runs and nothing is said
    regular = [(h, r, dict(v, argv_overrides=REGULAR_PD)) for h, r, v in PD_ONE_HOST]
    assert mini_lb_notes(_plan(card, regular)) == []


def test_upgrade_gpus_reads_the_variable_else_preflight():
    hostvars = {"a": {"launchcard_gpus": 8, "preflight_result": {"facts": {"accelerators": {"count": 4}}}},
                "b": {"preflight_result": {"facts": {"accelerators": {"count": 4}}}},
                "c": {}, "d": {"launchcard_gpus": "2"}}
    assert upgrade_gpus(hostvars, ["a", "b", "c", "d", "e"]) == {"a": 8, "b": 4, "c": None, "d": 2, "e": None}


def test_each_node_of_a_multi_node_group_is_listed_under_the_url_its_head_serves():
    """A vLLM data parallel group over two hosts (one replica): a new revision restarts both nodes; the headless
    node has no URL of its own, so its outage names the address its group serves on the first host."""
    dp = os.path.join(ROOT, "tests", "integration", "render", "glm-5.3-flash-vllm-dp.json")
    placement = [("dp1", ["vllm-aggregated"], {"gpus": 8}), ("dp2", ["vllm-aggregated"], {"gpus": 8})]

    def bump(doc):
        doc["hf"]["revision"] = NEW_REVISION
    ro, new = _upgrade(dp, placement, bump)
    assert [i["node_rank"] for h in ("dp1", "dp2") for i in new["hosts"][h]["instances"]] == [0, 1]
    assert [(o["host"], o["codes"]) for o in ro["outages"]] == [("dp1", ["no-replica"]), ("dp2", ["no-replica"])]
    assert all("reach http://10.0.0.1:8000 directly" in o["reasons"][0] for o in ro["outages"])


def test_the_report_accepts_or_refuses_the_outages_as_the_variable_says():
    from ansible_collections.launchcard.inference.plugins.plugin_utils._rollout import report
    ro, dummy = _upgrade(EXAMPLE, PD_HOSTS, _decode_env)
    assert "accepted (launchcard_upgrade_allow_outage: true)" in report(ro, True)[-1]
    assert "the real run refuses this upgrade" in report(ro, False)[-1]
