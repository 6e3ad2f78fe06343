# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Surge upgrades (issue 26, item 1): which instances switch beside a twin, on which GPUs and ports."""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.plugin_utils._outages import outages
from ansible_collections.launchcard.inference.plugins.plugin_utils._rollout import report
from ansible_collections.launchcard.inference.plugins.plugin_utils._surge import surges
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import host_units
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_outages import (
    EXAMPLE,
    OPTS,
    PD_ONE_HOST,
    REGULAR_PD,
    UPGRADE_V1,
    _decode_env,
    _new_flag,
    _recipe,
    _upgrade,
)

PD_REGULAR_ONE_HOST = [(h, r, dict(v, argv_overrides=REGULAR_PD)) for h, r, v in PD_ONE_HOST]
DECODE = "launchcard-glm-5.3-flash-sglang-decode-0.service"
PREFILL = "launchcard-glm-5.3-flash-sglang-prefill-0.service"
ROUTER = "launchcard-glm-5.3-flash-sglang-router-0.service"


def _both_env(doc):
    _decode_env(doc)
    _recipe(doc, "prefill").setdefault("env", {})["SGLANG_LOG_LEVEL"] = "debug"


def test_the_example_cards_decode_surges_on_the_four_gpus_the_card_leaves_free():
    """Issue 26: prefill, decode and the regular PD router on one 8-GPU host (4 GPUs used); the decode changes: a
    twin of it starts on GPUs 4-5 and the next free port, joins the PD router as a decode, and nothing drops."""
    ro, new = _upgrade(EXAMPLE, PD_REGULAR_ONE_HOST, _decode_env)
    assert ro["outages"] == []
    (s,) = ro["surges"]
    tw = s["twin"]
    assert (s["host"], s["unit"], s["batch"]) == ("gpu-1", DECODE, 1)
    assert (tw["unit"], tw["id"], tw["host"], tw["gpu_ids"], tw["port"]) == (
        "launchcard-glm-5.3-flash-sglang-decode-0-surge.service", "glm-5.3-flash-sglang-decode-0-surge", "gpu-1",
        [4, 5], 32001)
    # every port the plan holds on the host is left alone: 30000, 29000 (router), 31000, 8998 (prefill), 32000
    held = {p["port"] for i in new["hosts"]["gpu-1"]["instances"] for p in i["ports"]}
    assert tw["port"] not in held and tw["ports"] == [{"port": 32001, "what": "port"}]
    old = next(i for i in new["hosts"]["gpu-1"]["instances"] if i["unit"] == DECODE)
    assert old["gpu_ids"] == [2, 3] and old["port"] == 32000  # the plan itself never changes
    # the argv differs in exactly the GPU and port tokens
    assert [(a, b) for a, b in zip(old["argv"], tw["argv"]) if a != b] == [("2", "4"), ("32000", "32001")]
    assert (tw["url"], tw["health_url"]) == ("http://10.0.0.1:32001", "http://127.0.0.1:32001/health")
    # the router names its own host's workers by loopback: so is the twin, as a decode (no bootstrap port)
    assert s["twin_ops"] == [{"router": "gpu-1", "router_unit": ROUTER, "api": "http://127.0.0.1:30000",
                              "unit": tw["unit"], "url": "http://127.0.0.1:32001", "worker_type": "decode",
                              "bootstrap_port": None}]
    # the PD router's regular drain does not exist: the old decode goes out and back in through the surge's ops
    assert s["own_ops"] == [{"router": "gpu-1", "router_unit": ROUTER, "api": "http://127.0.0.1:30000",
                             "unit": DECODE, "remove": "http://127.0.0.1:32000", "add": "http://127.0.0.1:32000",
                             "worker_type": "decode", "bootstrap_port": None, "old_bootstrap_port": None}]
    assert ro["hosts"]["gpu-1"]["router_ops"] == s["own_ops"]
    lines = report(ro)
    assert ("surge: gpu-1: %s (batch 1): twin launchcard-glm-5.3-flash-sglang-decode-0-surge.service on gpu-1, "
            "GPUs 4,5, port 32001; joins gpu-1 (%s, decode) before the old one leaves" % (DECODE, ROUTER)) in lines
    assert lines[-1] == "outages: none (no instance drops requests)"


def test_the_twins_unit_is_the_instances_unit_with_its_gpus_port_and_name():
    ro, new = _upgrade(EXAMPLE, PD_REGULAR_ONE_HOST, _decode_env)
    tw = ro["surges"][0]["twin"]
    (mine,) = host_units({"instances": [tw]}, OPTS)
    theirs = next(u for u in host_units(new["hosts"]["gpu-1"], OPTS) if u["name"] == DECODE)
    assert mine["name"] == tw["unit"] and mine["instance"] == tw["id"]
    changed = [(a, b) for a, b in zip(theirs["content"].splitlines(), mine["content"].splitlines()) if a != b]
    assert len(theirs["content"].splitlines()) == len(mine["content"].splitlines())
    assert changed and all("surge" in b or "32001" in b or "--base-gpu-id 4" in b for a, b in changed), changed


def test_prefill_and_decode_both_surge_with_their_own_gpus_and_bootstrap_port():
    ro, dummy = _upgrade(EXAMPLE, PD_REGULAR_ONE_HOST, _both_env)
    assert ro["outages"] == []
    by_unit = dict((s["unit"], s) for s in ro["surges"])
    pre, dec = by_unit[PREFILL]["twin"], by_unit[DECODE]["twin"]
    assert (pre["gpu_ids"], dec["gpu_ids"]) == ([6, 7], [4, 5])  # decode first (unit order), then prefill
    assert pre["ports"] == [{"port": 31001, "what": "port"}, {"port": 8999, "what": "bootstrap port"}]
    assert "--disaggregation-bootstrap-port" in pre["argv"] and pre["bootstrap_port"] == 8999
    assert pre["argv"][pre["argv"].index("--base-gpu-id") + 1] == "6"  # the card's prefill names no base: added
    (op,) = by_unit[PREFILL]["twin_ops"]
    assert (op["url"], op["worker_type"], op["bootstrap_port"]) == ("http://127.0.0.1:31001", "prefill", 8999)
    assert [o["bootstrap_port"] for o in by_unit[PREFILL]["own_ops"]] == [8998]


def test_a_host_with_no_free_gpus_does_not_surge():
    placement = [("gpu-1", ["sglang-prefill", "sglang-decode", "sglang-router"],
                  {"gpus": 5, "argv_overrides": REGULAR_PD})]
    ro, dummy = _upgrade(EXAMPLE, placement, _decode_env)
    assert ro["surges"] == []
    (o,) = ro["outages"]
    assert o["unit"] == DECODE and o["codes"] == ["not-drained", "no-replica"]
    assert o["reasons"][1].endswith("no surge: no free GPUs for a twin beside it: gpu-1 has 5, the plan uses 4, it "
                                    "needs 2")


def test_unknown_gpus_do_not_surge():
    placement = [("gpu-1", ["sglang-prefill", "sglang-decode", "sglang-router"], {"argv_overrides": REGULAR_PD})]
    ro, dummy = _upgrade(EXAMPLE, placement, _decode_env)
    assert ro["surges"] == []
    assert ro["outages"][0]["reasons"][1].endswith("no surge: the GPUs of gpu-1 are unknown (launchcard_gpus), so no "
                                                   "twin is placed beside it")


def test_a_spare_host_takes_the_twin_on_its_own_address():
    """surges() places a twin on a spare host when it is offered one (rollout() does not offer any yet: the runtime
    and the revision are installed on the plan's hosts only, test_outages.py)."""
    placement = [("w0", ["sglang-aggregated"], {"gpus": 1}), ("rt", ["sglang-router"], {})]
    ro, new = _upgrade(UPGRADE_V1, placement, _new_flag)
    found = outages(new, dict(ro, surges=[]))
    assert [o["unit"] for o in found] == ["launchcard-upgrade-tiny-sglang-aggregated-0.service"]
    got, refused = surges(new, ro, found, {"w0": 1, "rt": 0, "spare": 2}, {"spare": "10.0.0.9"})
    assert refused == {}
    tw = got[0]["twin"]
    old = new["hosts"]["w0"]["instances"][0]
    assert (tw["host"], tw["address"], tw["gpu_ids"], tw["port"]) == ("spare", "10.0.0.9", [0], old["port"])
    assert tw["url"] == "http://10.0.0.9:%d" % old["port"]
    assert tw["argv"][tw["argv"].index("--host") + 1] == "0.0.0.0"
    # a regular router: the twin joins it by its address; the old one leaves through the regular drain (router_ops)
    assert [(op["router"], op["url"], op["worker_type"]) for op in got[0]["twin_ops"]] == [
        ("rt", tw["url"], "regular")]
    assert got[0]["own_ops"] == []


def test_a_lone_replica_behind_a_regular_router_surges_beside_itself():
    placement = [("w0", ["sglang-aggregated"], {"gpus": 2}), ("rt", ["sglang-router"], {})]
    ro, new = _upgrade(UPGRADE_V1, placement, _new_flag)
    assert ro["outages"] == []
    (s,) = ro["surges"]
    assert s["twin"]["gpu_ids"] == [1] and s["own_ops"] == []
    assert [op["remove"] for op in ro["hosts"]["w0"]["router_ops"]] == [new["hosts"]["w0"]["instances"][0]["url"]]


def test_two_replicas_switching_one_at_a_time_need_no_surge():
    placement = [("w%d" % i, ["sglang-aggregated"], {"gpus": 2}) for i in range(2)] + [("rt", ["sglang-router"], {})]
    ro, dummy = _upgrade(UPGRADE_V1, placement, _new_flag)
    assert ro["surges"] == [] and ro["outages"] == []


def test_twins_of_one_batch_share_the_free_gpus_and_the_rest_is_an_outage():
    placement = [("gpu-1", ["sglang-prefill", "sglang-decode", "sglang-router"],
                  {"gpus": 6, "argv_overrides": REGULAR_PD})]
    ro, dummy = _upgrade(EXAMPLE, placement, _both_env)
    assert [(s["unit"], s["twin"]["gpu_ids"]) for s in ro["surges"]] == [(DECODE, [4, 5])]
    (o,) = ro["outages"]
    assert o["unit"] == PREFILL and o["reasons"][1].endswith(
        "no surge: no free GPUs for a twin beside it: gpu-1 has 6, the plan and the batch's other twins use 6, it "
        "needs 2")


def test_a_host_can_refuse_to_surge():
    """``launchcard_upgrade_surge: false`` on a host (its free GPUs are someone else's): its instances do not surge."""
    from ansible_collections.launchcard.inference.plugins.plugin_utils._upgrade_fleet import surge_hosts as upgrade_surge_hosts
    hostvars = {"a": {}, "b": {"launchcard_upgrade_surge": False}, "c": {"launchcard_upgrade_surge": "false"}}
    assert upgrade_surge_hosts(hostvars, ["a", "b", "c", "d"]) == ["a", "d"]
    ro, new = _upgrade(EXAMPLE, PD_REGULAR_ONE_HOST, _decode_env)
    found = outages(new, dict(ro, surges=[]))
    got, refused = surges(new, ro, found, None, None, None, hosts=[])
    assert got == [] and refused == {("gpu-1", DECODE): "launchcard_upgrade_surge is false on gpu-1"}


def test_the_surging_hosts_batch_reads_its_twins_and_their_units_from_the_rollout():
    """Issue 27: the twins of a host, their ops, ports, unit files and drain are fields of its change; the decode
    that switches is drained, the prefill that keeps serving beside it is not; each router a surge drives is
    probed once."""
    ro, dummy = _upgrade(EXAMPLE, PD_REGULAR_ONE_HOST, _both_env, twin_units=lambda h, twins: host_units(twins, OPTS))
    ch = ro["hosts"]["gpu-1"]
    assert [t["unit"] for t in ch["twins"]] == [s["twin"]["unit"] for s in ro["surges"]]
    assert ch["twin_ops"] == [op for s in ro["surges"] for op in s["twin_ops"]]
    assert ch["twin_ports"] == [32001, 31001, 8999]
    assert [u["name"] for u in ch["twin_units"]] == [t["unit"] for t in ch["twins"]]
    assert ch["twin_drain"] == [{"name": t["unit"], "url": "http://127.0.0.1:%d" % t["port"], "engine": "sglang"}
                                for t in ch["twins"]]
    assert sorted(d["name"] for d in ch["drain"]) == [DECODE, PREFILL]
    assert ch["gate_routers"] == [{"host": "gpu-1", "unit": ROUTER, "api": "http://127.0.0.1:30000",
                                   "model": ro["routers"][0]["model"]}]
    assert ro["surge_routers"] == [{"router": "gpu-1", "router_unit": ROUTER, "api": "http://127.0.0.1:30000"}]


def test_a_partner_beside_a_surge_keeps_serving_undrained():
    ro, dummy = _upgrade(EXAMPLE, PD_REGULAR_ONE_HOST, _decode_env)
    assert [d["name"] for d in ro["hosts"]["gpu-1"]["drain"]] == [DECODE]
    assert ro["hosts"]["gpu-1"]["twin_units"] == []  # no builder given: no files
