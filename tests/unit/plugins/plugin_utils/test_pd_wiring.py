# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PD and multi-node wiring the engines accept (issue #25 item 2): routable bootstrap addresses, prefills
listening for remote decodes, vLLM PD refused behind the SGLang router, vLLM data parallel over nodes,
the world size with PCP, a NIXL side channel per DP rank, the router outlasting its workers' start-up."""

from __future__ import annotations

import json

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._argv import Argv
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import PlanError
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import command
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import _h, _plan, _variant


def _one(p, recipe, rank=0):
    found = [i for h in p["hosts"].values() for i in h["instances"] if i["recipe"] == recipe and i["node_rank"] == rank]
    assert len(found) == 1, recipe
    return found[0]


def _errors(card, hosts):
    with pytest.raises(PlanError) as exc:
        _plan(card, hosts)
    return exc.value.errors


# PD with the prefill and the router on one host and the decode on another (defect 3)
SPLIT = [_h("ha", "10.5.0.1", ["sglang-prefill", "sglang-router"]), _h("hb", "10.5.0.2", ["sglang-decode"])]


def test_prefill_beside_the_router_is_named_by_its_routable_address_for_a_remote_decode():
    p = _plan(_variant(), SPLIT)
    rtr = Argv(_one(p, "sglang-router")["argv"])
    # the router hands the prefill URL's host to the decode as bootstrap_host: never loopback here
    assert rtr.groups("--prefill") == [["http://10.5.0.1:31000", "8998"]]
    assert rtr.groups("--decode") == [["http://10.5.0.2:32000"]]


def test_loopback_kept_when_every_decode_is_on_the_prefill_host():
    p = _plan(_variant(), [_h("pd", "10.5.0.3", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    assert Argv(_one(p, "sglang-router")["argv"]).groups("--prefill") == [["http://127.0.0.1:31000", "8998"]]


def _prefill_without_host(doc):
    a = doc["envs"][4]["argv"]
    k = a.index("--host")
    del a[k:k + 2]


def test_a_prefill_bound_to_loopback_by_default_listens_for_a_remote_decode():
    # SGLang binds its bootstrap server to --host (default 127.0.0.1): the remote decode must reach it
    p = _plan(_variant(_prefill_without_host), SPLIT)
    pre = _one(p, "sglang-prefill")
    assert Argv(pre["argv"]).get("--host") == "0.0.0.0"
    assert "--host 0.0.0.0 (a peer on another host reaches it)" in pre["changes"]


def test_a_prefill_pinned_to_loopback_with_a_remote_decode_is_refused():
    def pin(doc):
        a = doc["envs"][4]["argv"]
        a[a.index("--host") + 1] = "127.0.0.1"
    errors = _errors(_variant(pin), SPLIT)
    assert any(where == "glm-5.3-flash-sglang-prefill-0" and "binds 127.0.0.1" in msg for where, msg in errors), errors


# vLLM prefill/decode behind the SGLang PD router (defect 4)
def _vllm_pd(doc):
    for env, role in ((doc["envs"][4], "kv_producer"), (doc["envs"][5], "kv_consumer")):
        env["engine"] = "vllm"
        env["image"] = "vllm/vllm-openai:nightly"
        env["argv"] = ["vllm", "serve", "zai-org/GLM-5.3-Flash", "--tensor-parallel-size", "2", "--port",
                       "31000" if role == "kv_producer" else "32000", "--kv-transfer-config",
                       json.dumps({"kv_connector": "NixlConnector", "kv_role": role})]


def test_vllm_prefill_decode_behind_the_sglang_pd_router_is_refused():
    card = _variant(_vllm_pd)
    errors = _errors(card, SPLIT and [_h("ha", "10.5.0.1", ["vllm-prefill", "sglang-router"]),
                                      _h("hb", "10.5.0.2", ["vllm-decode"])])
    msgs = [m for w, m in errors if w == "glm-5.3-flash-sglang-router-0"]
    assert len(msgs) == 1, errors
    assert "sglang-router" in msgs[0] and "vllm-decode, vllm-prefill" in msgs[0] and "kv_transfer_params" in msgs[0]


# vLLM data parallel over two nodes (defect 5), as vLLM's docs/serving/data_parallel_deployment.md runs it
def _vllm_dp(doc, extra=()):
    doc["envs"][0]["argv"] = ["vllm", "serve", "zai-org/GLM-5.3-Flash", "--tensor-parallel-size", "1",
                              "--data-parallel-size", "16", "--data-parallel-size-local", "8",
                              "--data-parallel-address", "10.99.48.128", "--data-parallel-rpc-port", "13345",
                              "--enable-expert-parallel"] + list(extra)


def test_vllm_data_parallel_over_two_nodes_is_planned_as_a_group():
    card = _variant(_vllm_dp)
    p = _plan(card, [_h("d1", "10.6.0.1", ["vllm-aggregated"], 8), _h("d2", "10.6.0.2", ["vllm-aggregated"], 8)])
    head, other = _one(p, "vllm-aggregated", 0), _one(p, "vllm-aggregated", 1)
    assert head["argv"] != other["argv"]
    h, o = Argv(head["argv"], underscores=True), Argv(other["argv"], underscores=True)
    assert h.get("--data-parallel-address") == o.get("--data-parallel-address") == "10.6.0.1"
    assert h.get("--data-parallel-rpc-port") == o.get("--data-parallel-rpc-port") == "13345"
    assert not h.has("--headless") and not h.has("--data-parallel-start-rank")
    assert o.has("--headless") and o.get("--data-parallel-start-rank") == "8"
    assert not h.has("--node-rank") and not o.has("--node-rank") and not o.has("--master-addr")
    assert head["gpu_ids"] == other["gpu_ids"] == list(range(8))
    # the head holds the rpc port; the other node serves no API
    assert {"port": 13345, "what": "--data-parallel-rpc-port"} in head["ports"]
    assert (other["port"], other["probe"], other["health_url"]) == (None, "none", None)
    assert head["probe"] == "completion"


def test_the_card_secondary_node_recipe_placed_alone_gets_a_head():
    card = _variant(lambda d: _vllm_dp(d, ["--headless", "--data-parallel-start-rank", "8"]))
    p = _plan(card, [_h("d1", "10.6.0.1", ["vllm-aggregated"], 8), _h("d2", "10.6.0.2", ["vllm-aggregated"], 8)])
    h = Argv(_one(p, "vllm-aggregated", 0)["argv"], underscores=True)
    assert not h.has("--headless") and h.get("--data-parallel-start-rank") == "0"
    assert Argv(_one(p, "vllm-aggregated", 1)["argv"], underscores=True).get("--data-parallel-start-rank") == "8"


def test_vllm_data_parallel_group_needs_its_node_count():
    errors = _errors(_variant(_vllm_dp), [_h("d1", "10.6.0.1", ["vllm-aggregated"], 8)])
    assert errors == [("vllm-aggregated", "spans --nnodes 2 but is placed on 1 host(s): d1")]


def test_two_data_parallel_groups_whose_heads_share_a_host_get_their_own_rpc_ports():
    def two(doc):
        _vllm_dp(doc)
        doc["envs"][0]["argv"][3:] = ["1"] + doc["envs"][0]["argv"][4:]
        second = json.loads(json.dumps(doc["envs"][0]))
        second["argv"] += ["--port", "8001"]
        doc["envs"].append(second)
    card = _variant(two)
    names = [r["name"] for r in card["recipes"] if r["engine"] == "vllm"]
    p = _plan(card, [_h("a", "10.6.1.1", names, 16), _h("b", "10.6.1.2", [names[0]], 8),
                     _h("c", "10.6.1.3", [names[1]], 8)])
    ports = [Argv(_one(p, n, 0)["argv"], underscores=True).get("--data-parallel-rpc-port") for n in names]
    assert ports == ["13345", "13346"]
    assert Argv(_one(p, names[1], 1)["argv"], underscores=True).get("--data-parallel-rpc-port") == "13346"


def test_uneven_local_data_parallel_size_names_the_element():
    with pytest.raises(Exception) as exc:
        _variant(lambda d: _vllm_dp(d, ["--data-parallel-size-local", "5"]))
    assert "does not split evenly" in str(exc.value)


# world size with every parallel dimension (defect 6)
@pytest.mark.parametrize("flags, gpus", [
    (["-tp", "2", "-pcp", "2"], 4),
    (["--tensor-parallel-size", "2", "--prefill-context-parallel-size", "4"], 8),
    (["-tp", "2", "-pcp", "2", "-dp", "2"], 8),
])
def test_vllm_world_size_counts_prefill_context_parallel(flags, gpus):
    def mutate(doc):
        doc["envs"][0]["argv"] = ["vllm", "serve", "zai-org/GLM-5.3-Flash"] + flags
    card = _variant(mutate)
    r = next(r for r in card["recipes"] if r["name"] == "vllm-aggregated")
    assert r["gpus"] == gpus
    p = _plan(card, [_h("a", "10.6.2.1", ["vllm-aggregated", "vllm-aggregated"], 2 * gpus)])
    assert [i["gpu_ids"] for i in p["hosts"]["a"]["instances"]] == [list(range(gpus)), list(range(gpus, 2 * gpus))]


def test_pcp_abbreviation_is_refused_like_the_other_read_options():
    with pytest.raises(Exception) as exc:
        _variant(lambda d: d["envs"][0]["argv"].extend(["--prefill-context-parallel", "2"]))
    assert "--prefill-context-parallel-size" in str(exc.value)


# one NIXL side channel port per DP rank (defect 8)
def test_nixl_side_channel_ports_per_data_parallel_rank():
    def mutate(doc):
        doc["envs"][0]["argv"] = ["vllm", "serve", "zai-org/GLM-5.3-Flash", "-tp", "1", "-dp", "2",
                                  "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}']
    card = _variant(mutate)
    p = _plan(card, [_h("a", "10.6.3.1", [{"name": "vllm-aggregated", "replicas": 2}], 4)])
    first, second = p["hosts"]["a"]["instances"]
    # vLLM listens on VLLM_NIXL_SIDE_CHANNEL_PORT + data_parallel_index: 5600, 5601 for the first
    assert [x["port"] for x in first["ports"] if x["what"].startswith("NIXL")] == [5600, 5601]
    assert first["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5600"
    assert [x["port"] for x in second["ports"] if x["what"].startswith("NIXL")] == [5602, 5603]
    assert second["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5602"


def test_nixl_ports_of_a_data_parallel_node_start_at_its_first_rank():
    card = _variant(lambda d: _vllm_dp(d, ["--kv-transfer-config",
                                           '{"kv_connector":"NixlConnector","kv_role":"kv_both"}']))
    p = _plan(card, [_h("d1", "10.6.0.1", ["vllm-aggregated"], 8), _h("d2", "10.6.0.2", ["vllm-aggregated"], 8)])
    other = _one(p, "vllm-aggregated", 1)
    assert other["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5600"
    assert [x["port"] for x in other["ports"] if x["what"].startswith("NIXL")] == list(range(5608, 5616))


# the router's worker start-up timeout outlasts its workers' start budget (defect 16, router side)
def _router_flag(p, options=None):
    argv = command(_one(p, "sglang-router"), options)[0]
    a = Argv(argv)
    return a.get("--worker-startup-timeout-secs")


def test_router_waits_as_long_as_its_slowest_worker_may_start():
    def slow(doc):
        doc["envs"][5]["env"] = {"SGLANG_SLOW": "1"}
    p = _plan(_variant(slow), SPLIT)
    # the engines' TimeoutStartSec is the units' start_timeout_s (1800 by default); here 2400
    assert _router_flag(p, {"start_timeout_s": 2400}) == "2400"
    assert _router_flag(p, {"start_timeout_s": 2400, "runtime": "native"}) == "2400"


def test_router_keeps_a_card_timeout_already_long_enough():
    def long(doc):
        doc["envs"][6]["argv"] += ["--worker-startup-timeout-secs", "7200"]
    p = _plan(_variant(long), SPLIT)
    assert _router_flag(p, {"start_timeout_s": 2400}) == "7200"


def test_router_outlasts_a_vllm_worker_that_may_take_an_hour():
    def regular(doc):
        doc["envs"][6]["argv"] = ["python", "-m", "sglang_router.launch_router", "--worker-urls",
                                  "http://127.0.0.1:8000", "--host", "0.0.0.0", "--port", "30000"]
    p = _plan(_variant(regular), [_h("v", "10.5.1.1", ["vllm-aggregated"]), _h("r", "10.5.1.2", ["sglang-router"])])
    # the card's vLLM recipe sets VLLM_ENGINE_READY_TIMEOUT_S=3600: its unit allows 3900 s, so must the router
    assert _one(p, "sglang-router")["workers_ready_timeout_s"] == 3600
    assert _router_flag(p) == "3900"
    units = [command(_one(p, "sglang-router"), {"runtime": rt})[0] for rt in ("docker", "podman", "native")]
    assert all(u[u.index("--worker-startup-timeout-secs") + 1] == "3900" for u in units)
