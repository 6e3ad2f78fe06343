# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner: fidelity, peer URLs, GPUs and ports, errors, multi-node, NIXL
(property tests over random placements: test_planner_properties.py)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._argv import Argv
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import CardError, load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import PlanError, normalize_placement

from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import (
    CARD_ARGV,
    CORPUS,
    EX,
    SANDBOX,
    SLUG,
    VALID,
    WORKER_CARD,
    _diff,
    _h,
    _insts,
    _moved,
    _one,
    _pinned,
    _plan,
    _read,
    _variant,
)


# -- (1) fidelity -------------------------------------------------------------------
@pytest.mark.parametrize("gpus", [None, 4])
def test_card_placement_keeps_every_token(gpus):
    p = _plan(EX, [_h("pd", "10.1.0.5", ["sglang-prefill", "sglang-decode", "sglang-router"], gpus)])
    assert list(p["hosts"]) == ["pd"]
    hp = p["hosts"]["pd"]
    assert hp["gpus_needed"] == 4
    assert [i["recipe"] for i in hp["instances"]] == ["sglang-prefill", "sglang-decode", "sglang-router"]
    for inst in hp["instances"]:
        assert inst["argv"] == CARD_ARGV[inst["recipe"]]
        assert _moved(inst) == []
        assert inst["env"] == {}
    pre, dec, rtr = hp["instances"]
    assert pre["gpu_ids"] == [0, 1] and dec["gpu_ids"] == [2, 3] and rtr["gpu_ids"] == []
    assert (pre["port"], pre["bootstrap_port"]) == (31000, 8998)
    assert (dec["port"], dec["bootstrap_port"]) == (32000, None)
    assert (rtr["port"], rtr["prometheus_port"]) == (30000, 29000)
    assert [i["gpu_selection"] for i in hp["instances"]] == ["base_gpu_id", "base_gpu_id", "none"]
    assert [i["probe"] for i in hp["instances"]] == ["health", "health", "completion"]
    assert pre["health_url"] == "http://127.0.0.1:31000/health"
    assert rtr["url"] == "http://10.1.0.5:30000"
    assert rtr["id"] == SLUG + "-sglang-router-0"
    assert rtr["unit"] == "launchcard-%s-sglang-router-0.service" % SLUG
    assert p["model"] == {"repo": "zai-org/GLM-5.3-Flash", "revision": "46a050bec13002ad29ee795c16e61cf4fa3c4a9c",
                          "slug": SLUG}


def test_placement_order_on_a_host_does_not_matter():
    a = _plan(EX, [_h("pd", "10.1.0.5", ["sglang-router", "sglang-decode", "sglang-prefill"])])
    for inst in a["hosts"]["pd"]["instances"]:
        assert inst["argv"] == CARD_ARGV[inst["recipe"]]
        assert _moved(inst) == []


@pytest.mark.parametrize("recipe", ["vllm-aggregated", "sglang-encoder", "sglang-aggregated"])
def test_a_standalone_recipe_alone_keeps_its_argv(recipe):
    p = _plan(EX, [_h("solo", "10.1.0.9", [recipe], 8)])
    inst = _one(p, recipe)
    assert inst["argv"] == CARD_ARGV[recipe]
    assert _moved(inst) == []
    assert inst["gpu_ids"] == list(range(inst["gpus"]))


def test_recipe_by_index():
    p = _plan(EX, [_h("solo", "10.1.0.9", [0, {"index": 3}])])
    assert [i["recipe"] for i in _insts(p)] == ["vllm-aggregated", "sglang-aggregated"]
    assert _one(p, "sglang-aggregated")["gpu_ids"] == [8, 9, 10, 11]


def test_vllm_selects_gpus_outside_argv():
    p = _plan(EX, [_h("a", "10.1.0.9", ["sglang-encoder", "vllm-aggregated"])])
    v = _one(p, "vllm-aggregated")
    assert v["gpu_ids"] == list(range(8))
    enc = _one(p, "sglang-encoder")
    assert enc["gpu_ids"] == [8, 9, 10, 11]
    assert _moved(enc) == ["--base-gpu-id 8 (card: 0)"]
    assert Argv(enc["argv"]).get("--base-gpu-id") == "8"
    assert v["gpu_selection"] == "visible_devices"
    assert v["argv"] == CARD_ARGV["vllm-aggregated"]
    assert "CUDA_VISIBLE_DEVICES" not in v["env"]
    assert v["env"] == {"VLLM_ENGINE_READY_TIMEOUT_S": "3600", "VLLM_USE_RUST_FRONTEND": "1"}
    assert v["served_model"] == "zai-org/GLM-5.3-Flash"


# -- (2) one role per host -------------------------------------------------------------
def test_one_role_per_host_rewrites_only_peer_tokens():
    p = _plan(EX, SANDBOX)
    assert sorted(p["hosts"]) == sorted(h for h, dummy in SANDBOX)
    for host, hv in SANDBOX:
        (inst,) = p["hosts"][host]["instances"]
        assert inst["address"] == hv["address"]
    expect_changes = {
        "vllm-aggregated": [],
        "sglang-encoder": [],
        "sglang-aggregated": [],
        "sglang-prefill": [],
        "sglang-language": ["--encoder-urls http://198.18.0.12:30001"],
        "sglang-decode": ["--base-gpu-id 0 (card: 2)"],
        "sglang-router": ["--prefill http://198.18.0.15:31000 8998", "--decode http://198.18.0.16:32000"],
    }
    for inst in _insts(p):
        assert _moved(inst) == expect_changes[inst["recipe"]], inst["recipe"]
        card = CARD_ARGV[inst["recipe"]]
        if not expect_changes[inst["recipe"]]:
            assert inst["argv"] == card
    lang = _one(p, "sglang-language")
    k = CARD_ARGV["sglang-language"].index("--encoder-urls")
    assert _diff(lang["argv"], CARD_ARGV["sglang-language"]) == [k + 1]
    assert Argv(lang["argv"]).values("--encoder-urls") == ["http://198.18.0.12:30001"]
    dec = _one(p, "sglang-decode")
    k = CARD_ARGV["sglang-decode"].index("--base-gpu-id")
    assert _diff(dec["argv"], CARD_ARGV["sglang-decode"]) == [k + 1]
    assert dec["argv"][k + 1] == "0" and dec["gpu_ids"] == [0, 1]
    rtr = _one(p, "sglang-router")
    assert _diff(rtr["argv"], CARD_ARGV["sglang-router"]) == [6, 9]
    a = Argv(rtr["argv"])
    assert a.groups("--prefill") == [["http://198.18.0.15:31000", "8998"]]
    assert a.groups("--decode") == [["http://198.18.0.16:32000"]]


def test_loopback_kept_for_a_peer_on_the_same_host():
    p = _plan(EX, [_h("ed", "10.2.0.1", ["sglang-encoder", "sglang-language"])])
    lang = _one(p, "sglang-language")
    assert Argv(lang["argv"]).values("--encoder-urls") == ["http://localhost:30001"]
    assert _moved(lang) == ["--base-gpu-id 4 (card: 0)"]
    assert lang["argv"] == CARD_ARGV["sglang-language"] + ["--base-gpu-id", "4"]
    assert _one(p, "sglang-language")["gpu_ids"] == [4, 5, 6, 7]
    assert _one(p, "sglang-encoder")["gpu_ids"] == [0, 1, 2, 3]


# -- (3) two prefill + two decode + router -------------------------------------------
def test_two_prefill_two_decode_and_a_router():
    p = _plan(EX, [
        _h("p1", "10.3.0.1", ["sglang-prefill"]), _h("p2", "10.3.0.2", ["sglang-prefill"]),
        _h("d1", "10.3.0.3", ["sglang-decode"]), _h("d2", "10.3.0.4", ["sglang-decode"]),
        _h("r", "10.3.0.5", ["sglang-router"]),
    ])
    a = Argv(_one(p, "sglang-router")["argv"])
    assert a.groups("--prefill") == [["http://10.3.0.1:31000", "8998"], ["http://10.3.0.2:31000", "8998"]]
    assert a.groups("--decode") == [["http://10.3.0.3:32000"], ["http://10.3.0.4:32000"]]
    prefills = [i["id"] for i in _insts(p) if i["role"] == "prefill"]
    assert prefills == [SLUG + "-sglang-prefill-0", SLUG + "-sglang-prefill-1"]
    # everything but the peer lists is the card's
    rest = Argv(_one(p, "sglang-router")["argv"])
    rest.replace_groups("--prefill", [])
    rest.replace_groups("--decode", [])
    card = Argv(CARD_ARGV["sglang-router"])
    card.replace_groups("--prefill", [])
    card.replace_groups("--decode", [])
    assert rest.tokens == card.tokens


def test_two_prefill_replicas_on_one_host_get_distinct_bootstrap_ports():
    p = _plan(EX, [
        _h("pp", "10.3.1.1", [{"name": "sglang-prefill", "replicas": 2}], 4),
        _h("dr", "10.3.1.2", ["sglang-decode", "sglang-router"]),
    ])
    p0, p1 = _one(p, "sglang-prefill", 0), _one(p, "sglang-prefill", 1)
    assert (p0["gpu_ids"], p0["port"], p0["bootstrap_port"]) == ([0, 1], 31000, 8998)
    assert (p1["gpu_ids"], p1["port"], p1["bootstrap_port"]) == ([2, 3], 31001, 8999)
    assert p0["argv"] == CARD_ARGV["sglang-prefill"]
    a1 = Argv(p1["argv"])
    assert (a1.get("--port"), a1.get("--disaggregation-bootstrap-port"), a1.get("--base-gpu-id")) == (
        "31001", "8999", "2")
    assert _moved(p1) == [
        "--base-gpu-id 2 (card: 0)",
        "--port 31001 (card: 31000, taken by %s-sglang-prefill-0)" % SLUG,
        "--disaggregation-bootstrap-port 8999 (card: 8998, taken by %s-sglang-prefill-0)" % SLUG,
    ]
    rtr = _one(p, "sglang-router")
    assert Argv(rtr["argv"]).groups("--prefill") == [["http://10.3.1.1:31000", "8998"],
                                                     ["http://10.3.1.1:31001", "8999"]]
    # decode and router share a host: the card's loopback URL is kept for the decode
    assert Argv(rtr["argv"]).groups("--decode") == [["http://127.0.0.1:32000"]]
    assert _moved(_one(p, "sglang-decode")) == ["--base-gpu-id 0 (card: 2)"]


# -- (4) co-located servers on the card's port 30000 -----------------------------------
def test_language_cp_and_router_on_one_host_move_ports():
    p = _plan(EX, [
        _h("e", "10.4.0.1", ["sglang-encoder"]),
        _h("big", "10.4.0.2", ["sglang-language", "sglang-aggregated", "sglang-router"], 8),
        _h("pd", "10.4.0.3", ["sglang-prefill", "sglang-decode"]),
    ])
    lang, cp, rtr = _one(p, "sglang-language"), _one(p, "sglang-aggregated"), _one(p, "sglang-router")
    ports = [lang["port"], cp["port"], rtr["port"], rtr["prometheus_port"]]
    assert ports == [30000, 30001, 30002, 29000]
    assert _moved(cp) == ["--base-gpu-id 4 (card: 0)",
                          "--port 30001 (card: 30000, taken by %s-sglang-language-0)" % SLUG]
    assert Argv(cp["argv"]).get("--port") == "30001"
    assert Argv(cp["argv"]).get("--base-gpu-id") == "4"
    assert cp["gpu_ids"] == [4, 5, 6, 7]
    assert _moved(rtr)[0] == "--port 30002 (card: 30000, taken by %s-sglang-language-0)" % SLUG
    assert Argv(rtr["argv"]).get("--port") == "30002"
    assert rtr["health_url"] == "http://127.0.0.1:30002/health"
    assert rtr["url"] == "http://10.4.0.2:30002"
    # the router's PD peers share a host with each other, not with the router
    assert Argv(rtr["argv"]).groups("--prefill") == [["http://10.4.0.3:31000", "8998"]]
    assert Argv(rtr["argv"]).groups("--decode") == [["http://10.4.0.3:32000"]]
    assert _moved(lang) == ["--encoder-urls http://10.4.0.1:30001"]


def test_two_routers_on_one_host_move_the_prometheus_port():
    p = _plan(EX, [_h("a", "10.4.1.1", ["sglang-prefill", "sglang-decode", {"name": "sglang-router", "replicas": 2}])])
    r0, r1 = _one(p, "sglang-router", 0), _one(p, "sglang-router", 1)
    assert (r0["port"], r0["prometheus_port"]) == (30000, 29000)
    assert (r1["port"], r1["prometheus_port"]) == (30001, 29001)
    assert Argv(r1["argv"]).get("--prometheus-port") == "29001"
    assert "--prometheus-port 29001 (card: 29000, taken by %s-sglang-router-0)" % SLUG in _moved(r1)


# -- (5) replicas -----------------------------------------------------------------------
def test_four_decode_replicas_fill_eight_gpus():
    p = _plan(EX, [_h("dec", "10.5.0.1", [{"name": "sglang-decode", "replicas": 4}], 8),
                   _h("pre", "10.5.0.2", ["sglang-prefill"], 2)])
    hp = p["hosts"]["dec"]
    assert hp["gpus_needed"] == 8
    assert [i["gpu_ids"] for i in hp["instances"]] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert [Argv(i["argv"]).get("--base-gpu-id") for i in hp["instances"]] == ["0", "2", "4", "6"]
    assert [i["port"] for i in hp["instances"]] == [32000, 32001, 32002, 32003]
    assert [i["replica"] for i in hp["instances"]] == [0, 1, 2, 3]
    assert hp["instances"][1]["argv"][:8] == CARD_ARGV["sglang-decode"][:8]
    assert len({i["unit"] for i in hp["instances"]}) == 4


def test_five_decode_replicas_do_not_fit_eight_gpus():
    with pytest.raises(PlanError) as exc:
        _plan(EX, [_h("dec", "10.5.0.1", [{"name": "sglang-decode", "replicas": 5}], 8),
                   _h("pre", "10.5.0.2", ["sglang-prefill"], 2)])
    (where, msg), = exc.value.errors
    assert where == "dec"
    assert "need 10 GPUs" in msg and "the host has 8" in msg
    assert "%s-sglang-decode-4: 2" % SLUG in msg


def test_undeclared_gpus_are_not_checked():
    p = _plan(EX, [_h("dec", "10.5.0.1", [{"name": "sglang-decode", "replicas": 5}]),
                   _h("pre", "10.5.0.2", ["sglang-prefill"])])
    assert p["hosts"]["dec"]["gpus_needed"] == 10


# -- (6) errors ---------------------------------------------------------------------------
def _errors(card, hosts):
    with pytest.raises(PlanError) as exc:
        _plan(card, hosts)
    return exc.value.errors


def test_decode_without_prefill():
    assert _errors(EX, [_h("d", "10.6.0.1", ["sglang-decode"])]) == [
        (SLUG + "-sglang-decode-0", "a decode server needs a prefill server placed")]


def test_prefill_without_decode():
    assert _errors(EX, [_h("p", "10.6.0.1", ["sglang-prefill"])]) == [
        (SLUG + "-sglang-prefill-0", "a prefill server needs a decode server placed")]


def test_pd_router_without_workers():
    errors = _errors(EX, [_h("r", "10.6.0.1", ["sglang-router"])])
    want = "a PD router needs at least one prefill and one decode placed (found 0 prefill, 0 decode)"
    assert errors == [(SLUG + "-sglang-router-0", want)]


def test_language_without_encoder():
    assert _errors(EX, [_h("l", "10.6.0.1", ["sglang-language"])]) == [
        (SLUG + "-sglang-language-0", "a language-only server needs at least one encoder placed")]


def test_unknown_recipe_lists_the_names():
    (where, msg), = _errors(EX, [_h("x", "10.6.0.1", ["sglang-prefil"])])
    assert where == "x"
    assert msg == ("launchcard_recipes: no recipe 'sglang-prefil' in the card; did you mean 'sglang-prefill'?; it has "
                   "sglang-aggregated, sglang-decode, sglang-encoder, sglang-language, sglang-prefill, sglang-router, "
                   "vllm-aggregated")
    (where, msg), = _errors(EX, [_h("x", "10.6.0.1", [7])])
    assert msg.startswith("launchcard_recipes: no recipe 7 in the card; it has ")


def test_error_message_lists_every_error():
    with pytest.raises(PlanError) as exc:
        _plan(EX, [_h("x", "10.6.0.1", ["nope", "also-nope"])])
    assert len(exc.value.errors) == 2
    assert str(exc.value).startswith("the placement cannot be planned:\n  x: launchcard_recipes: no recipe 'nope'")


def test_multinode_on_the_wrong_host_count():
    c = CORPUS["02-sglang-multinode-tp16.json"]
    errors = _errors(c, [_h("a", "10.6.0.1", ["sglang-aggregated-0"]), _h("b", "10.6.0.2", ["sglang-aggregated-0"]),
                         _h("c", "10.6.0.3", ["sglang-aggregated-0"])])
    assert errors == [("sglang-aggregated-0", "spans --nnodes 2 but is placed on 3 host(s): a, b, c")]
    errors = _errors(c, [_h("a", "10.6.0.1", [{"name": "sglang-aggregated-0", "replicas": 2}])])
    assert errors == [("a", "sglang-aggregated-0 spans 2 nodes; list it once per host instead of replicas")]


def _encoder_host(value):
    def mutate(doc):
        argv = doc["envs"][1]["argv"]
        k = argv.index("--host")
        if value is None:
            del argv[k:k + 2]
        else:
            argv[k + 1] = value
    return mutate


def test_explicit_loopback_server_that_a_remote_peer_must_reach():
    card = _variant(_encoder_host("127.0.0.1"))
    errors = _errors(card, [_h("e", "10.6.1.1", ["sglang-encoder"]), _h("l", "10.6.1.2", ["sglang-language"])])
    assert errors == [(SLUG + "-sglang-encoder-0", "binds 127.0.0.1 but a peer on another host must reach it; "
                                                   "remove --host or set it to 0.0.0.0 in the card")]
    # on one host that is fine, and nothing changes
    p = _plan(card, [_h("el", "10.6.1.1", ["sglang-encoder", "sglang-language"])])
    assert _one(p, "sglang-encoder")["argv"] == _pinned(card["recipes"][1])


def test_default_loopback_server_is_opened_for_a_remote_peer():
    card = _variant(_encoder_host(None))
    assert card["recipes"][1]["bind_host"] == "127.0.0.1"
    p = _plan(card, [_h("e", "10.6.1.1", ["sglang-encoder"]), _h("l", "10.6.1.2", ["sglang-language"])])
    enc = _one(p, "sglang-encoder")
    assert enc["argv"] == _pinned(card["recipes"][1]) + ["--host", "0.0.0.0"]
    assert _moved(enc) == ["--host 0.0.0.0 (a peer on another host reaches it)"]
    assert enc["health_url"] == "http://127.0.0.1:30001/health"
    p = _plan(card, [_h("el", "10.6.1.1", ["sglang-encoder", "sglang-language"])])
    assert _moved(_one(p, "sglang-encoder")) == []


def test_health_url_uses_a_specific_bind_address():
    card = _variant(_encoder_host("10.6.1.1"))
    p = _plan(card, [_h("e", "10.6.1.1", ["sglang-encoder"]), _h("l", "10.6.1.2", ["sglang-language"])])
    assert _one(p, "sglang-encoder")["health_url"] == "http://10.6.1.1:30001/health"
    assert _one(p, "sglang-encoder")["probe"] == "health"


@pytest.mark.parametrize("hosts,message", [
    ([("h", {"recipes": "sglang-router"})], "h: launchcard_recipes must be a list, found 'sglang-router'"),
    ([("h", {"recipes": [{"name": "x", "replicas": 0}]})], "replicas must be an integer >= 1, found 0"),
    ([("h", {"recipes": [{"name": "x", "replicas": True}]})], "replicas must be an integer >= 1, found True"),
    ([("h", {"recipes": [3.5]})], "h: launchcard_recipes[0]: expected a recipe name or index, found 3.5"),
    ([("h", {"recipes": [], "gpus": -1})], "launchcard_gpus must be a non-negative integer, found -1"),
    ([("h", {"recipes": [], "gpus": "eight"})], "launchcard_gpus must be a non-negative integer, found 'eight'"),
    ([("h", {"recipes": [], "gpus": "-8"})], "launchcard_gpus must be a non-negative integer, found '-8'"),
    ([("h", {"recipes": [], "gpus": 8.0})], "launchcard_gpus must be a non-negative integer, found 8.0"),
])
def test_normalize_placement_errors(hosts, message):
    with pytest.raises(PlanError) as exc:
        normalize_placement(hosts)
    assert message in str(exc.value)


def test_normalize_placement_defaults():
    out = normalize_placement([("lc-a", {}),
                               ("lc-b", {"address": "10.0.0.2", "recipes": ["x", {"name": "y"}], "gpus": 4})])
    assert out == [
        {"host": "lc-a", "address": "lc-a", "gpus": None, "recipes": []},
        {"host": "lc-b", "address": "10.0.0.2", "gpus": 4,
         "recipes": [{"ref": "x", "replicas": 1}, {"ref": "y", "replicas": 1}]},
    ]


def test_gpu_count_given_as_a_decimal_string_is_a_count():
    # `-e launchcard_gpus=8` passes the string "8"
    assert normalize_placement([("h", {"recipes": [], "gpus": " 8"})])[0]["gpus"] == 8


def test_hosts_without_recipes_are_left_out():
    p = _plan(EX, [_h("idle", "10.6.2.1", []), _h("v", "10.6.2.2", ["vllm-aggregated"])])
    assert list(p["hosts"]) == ["v"]


# -- former role names -------------------------------------------------------------------
def test_former_role_names_are_planned_under_the_new_name_with_a_deprecation():
    p = _plan(EX, [_h("v", "10.6.3.1", ["vllm-monolithic"]),
                   _h("c", "10.6.3.2", [{"name": "sglang-monolithic", "replicas": 2}], 8)])
    assert [i["recipe"] for i in _insts(p)] == ["vllm-aggregated", "sglang-aggregated", "sglang-aggregated"]
    assert [i["role"] for i in _insts(p)] == ["aggregated"] * 3
    assert _one(p, "vllm-aggregated")["unit"] == "launchcard-glm-5.3-flash-vllm-aggregated-0.service"
    assert p["deprecations"] == [
        "v: launchcard_recipes names 'vllm-monolithic'; the role is now called 'aggregated' (aggregated serving): "
        "write 'vllm-aggregated'",
        "c: launchcard_recipes names 'sglang-monolithic'; the role is now called 'aggregated' (aggregated serving): "
        "write 'sglang-aggregated'"]
    # the same placement under the new names plans the same, without deprecations
    q = _plan(EX, [_h("v", "10.6.3.1", ["vllm-aggregated"]),
                   _h("c", "10.6.3.2", [{"name": "sglang-aggregated", "replicas": 2}], 8)])
    assert q["deprecations"] == [] and q["hosts"] == p["hosts"]


def test_former_names_with_an_index_and_unknown_names():
    c = CORPUS["03-vllm-pd-nixl.json"]
    p = _plan(c, [_h("a", "10.6.4.1", ["vllm-monolithic-1"])])
    assert [i["recipe"] for i in _insts(p)] == ["vllm-aggregated-1"]
    assert len(p["deprecations"]) == 1
    assert _insts(p)[0]["former_units"] == ["launchcard-qwen3-32b-vllm-monolithic-1-0.service"]
    m = _plan(CORPUS["02-sglang-multinode-tp16.json"], [
        _h("n0", "10.6.4.3", ["sglang-aggregated-0"]), _h("n1", "10.6.4.4", ["sglang-aggregated-0"])])
    assert [i["former_units"] for i in _insts(m)] == [
        ["launchcard-deepseek-r1-0528-sglang-monolithic-0-0-rank%d.service" % k] for k in (0, 1)]
    assert _plan(EX, [_h("r", "10.6.4.5", ["sglang-router"]), _h("p", "10.6.4.6", ["sglang-prefill"]),
                      _h("d", "10.6.4.7", ["sglang-decode"])])["hosts"]["r"]["instances"][0]["former_units"] == []
    # a former name with no current recipe is still an unknown recipe
    (err,) = _errors(EX, [_h("a", "10.6.4.2", ["vllm-monolithic-7"])])
    assert err[0] == "a" and err[1].startswith("launchcard_recipes: no recipe 'vllm-monolithic-7' in the card; ")
    assert "vllm-aggregated" in err[1]


# -- (7) multi-node ----------------------------------------------------------------------
def test_sglang_multinode_ranks_and_init_address():
    c = CORPUS["02-sglang-multinode-tp16.json"]
    p = _plan(c, [_h("n0", "10.7.0.1", ["sglang-aggregated-0"], 8), _h("n1", "10.7.0.2", ["sglang-aggregated-0"], 8)])
    r0, r1 = _one(p, "sglang-aggregated-0", 0, 0), _one(p, "sglang-aggregated-0", 0, 1)
    assert (r0["host"], r1["host"]) == ("n0", "n1")
    for inst, rank in ((r0, 0), (r1, 1)):
        a = Argv(inst["argv"])
        assert a.get("--node-rank") == str(rank)
        assert a.get("--dist-init-addr") == "10.7.0.1:5000"
        assert a.get("--nnodes") == "2"
        assert inst["gpu_ids"] == list(range(8))
        assert inst["nnodes"] == 2 and inst["node_rank"] == rank
        assert inst["id"] == "deepseek-r1-0528-sglang-aggregated-0-0-rank%d" % rank
        assert "multi-node rank %d of 2, head 10.7.0.1" % rank in _moved(inst)
    assert (r0["port"], r0["probe"], r0["health_url"]) == (30000, "completion", "http://127.0.0.1:30000/health")
    # rank 1 serves SGLang's dummy /health on --port (engine.py launch_dummy_health_check_server): held and probed
    assert (r1["port"], r1["probe"], r1["health_url"], r1["url"]) == (
        30000, "health", "http://127.0.0.1:30000/health", None)
    assert {"port": 30000, "what": "port"} in r1["ports"]
    # only the init address changed on rank 0
    k = c["recipes"][0]["argv"].index("--dist-init-addr")
    assert _diff(r0["argv"], _pinned(c["recipes"][0], c["model"]["revision"])) == [k + 1]


def test_sglang_multinode_ipv6_head_is_bracketed():
    c = CORPUS["02-sglang-multinode-tp16.json"]
    p = _plan(c, [_h("n0", "fd00::1", ["sglang-aggregated-1"]), _h("n1", "fd00::2", ["sglang-aggregated-1"])])
    assert Argv(_one(p, "sglang-aggregated-1", 0, 1)["argv"]).get("--dist-init-addr") == "[fd00::1]:5000"
    assert Argv(_one(p, "sglang-aggregated-1", 0, 0)["argv"]).get("--node-rank") == "0"


@pytest.mark.parametrize("recipe", ["vllm-aggregated-0", "vllm-aggregated-1"])
def test_vllm_multinode_master_addr_and_headless(recipe):
    c = CORPUS["01-vllm-multinode-tp16.json"]
    p = _plan(c, [_h("n0", "10.7.1.1", [recipe]), _h("n1", "10.7.1.2", [recipe])])
    r0, r1 = _one(p, recipe, 0, 0), _one(p, recipe, 0, 1)
    a0, a1 = Argv(r0["argv"]), Argv(r1["argv"])
    assert (a0.get("--master-addr"), a1.get("--master-addr")) == ("10.7.1.1", "10.7.1.1")
    assert (a0.get("--node-rank"), a1.get("--node-rank")) == ("0", "1")
    # rank 0 serves the API even when the card's recipe was written for rank 1
    assert not a0.has("--headless")
    assert a1.has("--headless")
    assert r0["health_url"] == "http://127.0.0.1:8000/health" and r0["probe"] == "completion"
    assert (r1["health_url"], r1["port"]) == (None, None)
    assert r0["gpu_ids"] == r1["gpu_ids"] == list(range(8))
    assert a0.get("--master-port") == a1.get("--master-port") == "29501"


def test_vllm_multinode_two_groups_on_four_hosts():
    c = CORPUS["01-vllm-multinode-tp16.json"]
    p = _plan(c, [_h("n%d" % k, "10.7.2.%d" % k, ["vllm-aggregated-0"]) for k in range(4)])
    heads = {(i["replica"], i["node_rank"]): (i["host"], Argv(i["argv"]).get("--master-addr")) for i in _insts(p)}
    assert heads == {(0, 0): ("n0", "10.7.2.0"), (0, 1): ("n1", "10.7.2.0"),
                     (1, 0): ("n2", "10.7.2.2"), (1, 1): ("n3", "10.7.2.2")}


def test_sglang_groups_whose_rank0_share_a_host_get_their_own_init_ports():
    c = CORPUS["02-sglang-multinode-tp16.json"]
    p = _plan(c, [_h("a", "10.7.3.1", ["sglang-aggregated-0", "sglang-aggregated-1"]),
                  _h("b", "10.7.3.2", ["sglang-aggregated-0"]), _h("c", "10.7.3.3", ["sglang-aggregated-1"])])
    g0 = [_one(p, "sglang-aggregated-0", 0, k) for k in (0, 1)]
    g1 = [_one(p, "sglang-aggregated-1", 0, k) for k in (0, 1)]
    assert [i["host"] for i in g0 + g1] == ["a", "b", "a", "c"]
    # SGLang opens P .. P+6 from the init port: the second group starts past that block
    assert [Argv(i["argv"]).get("--dist-init-addr") for i in g0] == ["10.7.3.1:5000"] * 2
    assert [Argv(i["argv"]).get("--dist-init-addr") for i in g1] == ["10.7.3.1:5007"] * 2
    assert [i["dist_init_port"] for i in g0 + g1] == [5000, 5000, 5007, 5007]
    assert "--dist-init-addr port 5007 (card: 5000, taken by deepseek-r1-0528-sglang-aggregated-0-0-rank0)" \
        in _moved(g1[0])
    held = {h: sorted(x["port"] for i in p["hosts"][h]["instances"] for x in i["ports"]) for h in p["hosts"]}
    # ranks 1 hold their dummy health port too
    assert held == {"a": list(range(5000, 5014)) + [30000, 30001], "b": [30000], "c": [30000]}
    assert [x for x in g1[0]["ports"] if x["port"] in (5007, 5013)] == [
        {"port": 5007, "what": "--dist-init-addr port + 0"}, {"port": 5013, "what": "--dist-init-addr port + 6"}]


def test_sglang_dp_attention_widens_the_init_port_block():
    doc = json.loads(_read(os.path.join(VALID, "02-sglang-multinode-tp16.json")))
    for env in doc["envs"]:
        env["argv"] += ["--enable-dp-attention", "--dp-size", "8"]
    c = load_card(json.dumps(doc), "dp")
    p = _plan(c, [_h("a", "10.7.4.1", ["sglang-aggregated-0", "sglang-aggregated-1"]),
                  _h("b", "10.7.4.2", ["sglang-aggregated-0"]), _h("c", "10.7.4.3", ["sglang-aggregated-1"])])
    # P .. P+5+dp_size: 14 ports
    assert _one(p, "sglang-aggregated-1")["dist_init_port"] == 5014


def test_vllm_groups_whose_rank0_share_a_host_get_their_own_master_ports():
    c = CORPUS["01-vllm-multinode-tp16.json"]
    p = _plan(c, [_h("a", "10.7.5.1", ["vllm-aggregated-0", "vllm-aggregated-1"]),
                  _h("b", "10.7.5.2", ["vllm-aggregated-0"]), _h("c", "10.7.5.3", ["vllm-aggregated-1"])])
    g1 = [_one(p, "vllm-aggregated-1", 0, k) for k in (0, 1)]
    assert [Argv(i["argv"]).get("--master-port") for i in g1] == ["29502", "29502"]
    assert [Argv(i["argv"]).get("--master-addr") for i in g1] == ["10.7.5.1", "10.7.5.1"]
    assert Argv(_one(p, "vllm-aggregated-0")["argv"]).get("--master-port") == "29501"
    assert {"port": 29502, "what": "--master-port"} in g1[0]["ports"]


def test_every_port_an_instance_holds_is_listed():
    p = _plan(EX, [_h("all", "10.7.6.1", sorted(CARD_ARGV))])
    for inst in _insts(p):
        named = [inst[k] for k in ("port", "bootstrap_port", "prometheus_port") if inst[k]]
        assert sorted(x["port"] for x in inst["ports"]) == sorted(named), inst["id"]
    router = next(i for i in _insts(p) if i["role"] == "router")
    assert [x["what"] for x in router["ports"]] == ["port", "prometheus port"]


@pytest.mark.parametrize("value", ["10.0.0.1", "10.0.0.1:x", "10.0.0.1:70000", ":5000"])
def test_a_bad_dist_init_addr_names_its_element(value):
    doc = json.loads(_read(os.path.join(VALID, "02-sglang-multinode-tp16.json")))
    argv = doc["envs"][1]["argv"]
    k = argv.index("--dist-init-addr")
    argv[k + 1] = value
    with pytest.raises(CardError) as exc:
        load_card(json.dumps(doc), "x")
    assert exc.value.errors == [("envs[1].argv[%d]" % (k + 1), "--dist-init-addr expects HOST:PORT (a TCP port from "
                                 "1 to 65535; IPv6 as [ADDR]:PORT), found %r" % value)]


# -- (8) vLLM NIXL -------------------------------------------------------------------------
def test_vllm_nixl_side_channel_per_instance():
    c = CORPUS["03-vllm-pd-nixl.json"]
    p = _plan(c, [_h("a", "10.8.0.1", ["vllm-aggregated-0", {"name": "vllm-aggregated-1", "replicas": 2}], 6)])
    insts = p["hosts"]["a"]["instances"]
    assert [i["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] for i in insts] == ["10.8.0.1"] * 3
    assert [i["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] for i in insts] == ["5600", "5601", "5602"]
    assert [i["port"] for i in insts] == [8100, 8200, 8201]
    assert [i["gpu_ids"] for i in insts] == [[0, 1], [2, 3], [4, 5]]
    assert "NIXL side channel port 5602 (card: 5601, taken by qwen3-32b-vllm-aggregated-1-0)" in _moved(insts[2])
    assert insts[0]["argv"] == _pinned(c["recipes"][0], c["model"]["revision"])
    assert insts[0]["env"]["UCX_NET_DEVICES"] == "all"


def test_vllm_nixl_side_channel_host_on_each_host():
    c = CORPUS["03-vllm-pd-nixl.json"]
    p = _plan(c, [_h("a", "10.8.0.1", ["vllm-aggregated-0"]), _h("b", "10.8.0.2", ["vllm-aggregated-1"])])
    assert _one(p, "vllm-aggregated-0")["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "10.8.0.1"
    assert _one(p, "vllm-aggregated-1")["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "10.8.0.2"
    assert _one(p, "vllm-aggregated-1")["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5601"


def test_vllm_nixl_side_channel_port_must_be_a_number():
    doc = json.loads(_read(os.path.join(VALID, "03-vllm-pd-nixl.json")))
    doc["envs"][0]["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] = "fifty"
    with pytest.raises(CardError) as exc:
        load_card(json.dumps(doc), "x")
    assert [p for p, dummy in exc.value.errors] == ["envs[0].env.VLLM_NIXL_SIDE_CHANNEL_PORT"]
    # a card model that skipped the card's checks: the planner still names the instance
    doc["envs"][0]["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] = "5600"
    card = load_card(json.dumps(doc), "x")
    card["recipes"][0]["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] = "fifty"
    errors = _errors(card, [_h("a", "10.8.0.1", ["vllm-aggregated-0"])])
    assert errors == [("qwen3-32b-vllm-aggregated-0-0",
                       "env VLLM_NIXL_SIDE_CHANNEL_PORT must be a port number, found 'fifty'")]


# -- other peers -----------------------------------------------------------------------------
def test_epd_two_encoders_fidelity_and_spread():
    c = CORPUS["04-sglang-epd-two-encoders.json"]
    names = ["sglang-encoder-0", "sglang-encoder-1", "sglang-language"]
    p = _plan(c, [_h("one", "10.9.0.1", names, 8)])
    for r, inst in zip(c["recipes"], p["hosts"]["one"]["instances"]):
        assert inst["argv"] == _pinned(r, c["model"]["revision"])
        assert _moved(inst) == []
    p = _plan(c, [_h("e0", "10.9.0.1", ["sglang-encoder-0"]), _h("e1", "10.9.0.2", ["sglang-encoder-1"]),
                  _h("l", "10.9.0.3", ["sglang-language"])])
    lang = _one(p, "sglang-language")
    assert Argv(lang["argv"]).values("--encoder-urls") == ["http://10.9.0.1:30001", "http://10.9.0.2:30002"]
    assert lang["gpu_ids"] == [0, 1, 2, 3] and Argv(lang["argv"]).get("--base-gpu-id") == "0"


def test_worker_urls_router():
    card = WORKER_CARD
    assert card["recipes"][6]["name"] == "sglang-router"
    p = _plan(card, [_h("c1", "10.9.1.1", ["sglang-aggregated"]), _h("c2", "10.9.1.2", ["sglang-aggregated"]),
                     _h("r", "10.9.1.3", ["sglang-router"])])
    rtr = _one(p, "sglang-router")
    assert Argv(rtr["argv"]).values("--worker-urls") == ["http://10.9.1.1:30000", "http://10.9.1.2:30000"]
    assert _moved(rtr) == ["--worker-urls http://10.9.1.1:30000 http://10.9.1.2:30000"]
    errors = _errors(card, [_h("r", "10.9.1.3", ["sglang-router"])])
    assert errors == [(SLUG + "-sglang-router-0", "a router with --worker-urls needs at least one server placed")]


def test_ipv6_urls_are_bracketed():
    p = _plan(EX, [_h("e", "fd00::12", ["sglang-encoder"]), _h("l", "fd00::13", ["sglang-language"])])
    assert Argv(_one(p, "sglang-language")["argv"]).values("--encoder-urls") == ["http://[fd00::12]:30001"]
    assert _one(p, "sglang-encoder")["url"] == "http://[fd00::12]:30001"


@pytest.mark.parametrize("bind,health", [("::1", "http://[::1]:30001/health"),
                                         ("fd00::12", "http://[fd00::12]:30001/health"),
                                         ("localhost", "http://127.0.0.1:30001/health"),
                                         ("::", "http://127.0.0.1:30001/health")])
def test_health_url_for_each_bind_address(bind, health):
    card = _variant(_encoder_host(bind))
    p = _plan(card, [_h("e", "fd00::12", ["sglang-encoder"])])
    assert _one(p, "sglang-encoder")["health_url"] == health


def test_plan_is_json_serialisable_and_private_keys_are_gone():
    p = _plan(EX, SANDBOX)
    assert json.loads(json.dumps(p)) == p
    for inst in _insts(p):
        assert not [k for k in inst if k.startswith("_")]
