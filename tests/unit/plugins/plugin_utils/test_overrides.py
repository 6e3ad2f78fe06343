# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Site overrides of a card's argv (launchcard_argv_overrides): how flags are matched, what is refused,
and that planning (GPUs, ports, peer URLs) uses the effective argv of the host an instance lands on."""

from __future__ import annotations

import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import (
    PlanError,
    normalize_placement,
    plan,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as _f:
    EX = load_card(_f.read(), "card")
with open(os.path.join(ROOT, "tests", "unit", "cards", "valid", "02-sglang-multinode-tp16.json")) as _f:
    MULTI = load_card(_f.read(), "multi")
ARGV = {r["name"]: r["argv"] for r in EX["recipes"]}


def _plan(hosts, card=None):
    return plan(card or EX, normalize_placement(hosts))


def _h(name, recipes, overrides=None, gpus=None, address=None):
    return (name, {"address": address or name, "recipes": recipes, "gpus": gpus, "argv_overrides": overrides})


PINS = ("--revision", "--tokenizer-revision")


def _unpinned(inst):
    """The instance without the revision options the planner appends to every engine (test_revision_pin.py):
    what the overrides made of the card's argv. The pin is checked to close the argv of every engine."""
    argv, changes = list(inst["argv"]), list(inst["changes"])
    revisions = (EX["model"]["revision"], MULTI["model"]["revision"])
    if inst["role"] != "router":
        assert argv[-2] == "--revision" and argv[-1] in revisions or argv[-4] == "--revision", argv
    while len(argv) >= 2 and argv[-2] in PINS and argv[-1] in revisions:
        argv = argv[:-2]
    if argv[-1:] == ["--enable-metrics"] and any(c.startswith("--enable-metrics ") for c in changes):
        argv = argv[:-1]  # the planner's metrics flag (test_metrics_flag.py), added before the pins
    return dict(inst, argv=argv, changes=[c for c in changes if not c.startswith(PINS + ("--enable-metrics ",))])


def _inst(p, host, recipe):
    found = [i for i in p["hosts"][host]["instances"] if i["recipe"] == recipe]
    assert len(found) == 1
    return _unpinned(found[0])


def _vllm(overrides, gpus=None):
    p = _plan([_h("v", ["vllm-aggregated"], {"vllm-aggregated": overrides}, gpus)])
    return _inst(p, "v", "vllm-aggregated")


def _errors(hosts, card=None):
    with pytest.raises(PlanError) as exc:
        _plan(hosts, card)
    return exc.value.errors


def _vllm_errors(overrides):
    return _errors([_h("v", ["vllm-aggregated"], {"vllm-aggregated": overrides})])


def test_remove_drops_the_flag_with_its_values():
    inst = _vllm({"remove": ["--tokenizer-mode", "--disable-flashinfer-autotune"]})
    card = ARGV["vllm-aggregated"]
    i = card.index("--tokenizer-mode")
    assert inst["argv"] == card[:i] + [t for t in card[i + 2:] if t != "--disable-flashinfer-autotune"]
    assert inst["changes"] == ["launchcard_argv_overrides: remove --tokenizer-mode",
                               "launchcard_argv_overrides: remove --disable-flashinfer-autotune"]


def test_set_replaces_in_place_keeping_the_card_spelling_and_appends_what_is_absent():
    inst = _vllm({"set": {"--reasoning-parser": "deepseek_r1", "--max-model-len": 4096,
                          "--no-enable-flashinfer-autotune": True, "--gpu-memory-utilization": 0.5}})
    card = ARGV["vllm-aggregated"]
    want = [("deepseek_r1" if t == "glm47" and card[k - 1] == "--reasoning-parser" else t) for k, t in enumerate(card)]
    assert inst["argv"][:len(card)] == want
    assert inst["argv"][len(card):] == ["--max-model-len", "4096", "--no-enable-flashinfer-autotune",
                                        "--gpu-memory-utilization", "0.5"]


def test_a_list_sets_several_values_and_replaces_every_occurrence():
    p = _plan([_h("l", ["sglang-language"], {"sglang-language": {"set": {"--cuda-graph-bs": [1, 2, "4"]}}}),
               _h("e", ["sglang-encoder"])])
    assert _inst(p, "l", "sglang-language")["argv"][-4:] == ["--cuda-graph-bs", "1", "2", "4"]
    # the card writes the nargs option twice: the first occurrence takes every value, the second goes
    argv = ARGV["sglang-decode"] + ["--cuda-graph-bs", "8", "16", "--enable-metrics", "--cuda-graph-bs=32"]
    card = dict(EX, recipes=[dict(r, argv=argv) if r["name"] == "sglang-decode" else r for r in EX["recipes"]])
    p = _plan([_h("d", ["sglang-decode", "sglang-prefill"],
                  {"sglang-decode": {"set": {"--cuda-graph-bs": [1, 2]}}})], card)
    assert _inst(p, "d", "sglang-decode")["argv"][len(ARGV["sglang-decode"]):] == [
        "--cuda-graph-bs", "1", "2", "--enable-metrics"]


def test_equals_form_and_underscores_are_the_same_flag():
    # vLLM reads --max_model_len as --max-model-len (FlexibleArgumentParser); the card's --flag=value form stays
    doc_argv = ARGV["vllm-aggregated"] + ["--max_model_len=8192"]
    recipe = dict(EX["recipes"][0], argv=doc_argv)
    card = dict(EX, recipes=[recipe] + EX["recipes"][1:])
    p = plan(card, normalize_placement([_h("v", ["vllm-aggregated"],
                                           {"vllm-aggregated": {"set": {"--max-model-len": 2048}}})]))
    argv = _inst(p, "v", "vllm-aggregated")["argv"]
    assert argv[-1] == "--max_model_len=2048" and argv[:-1] == ARGV["vllm-aggregated"]
    p = plan(card, normalize_placement([_h("v", ["vllm-aggregated"],
                                           {"vllm-aggregated": {"remove": ["--max-model-len"]}})]))
    assert _inst(p, "v", "vllm-aggregated")["argv"] == ARGV["vllm-aggregated"]


def test_aliases_of_the_dialect_are_one_flag_and_planning_uses_the_effective_value():
    # the card writes --tensor-parallel-size 8; -tp is its alias (vLLM), so it is replaced in place
    inst = _vllm({"set": {"-tp": 2}}, gpus=2)
    card = ARGV["vllm-aggregated"]
    k = card.index("--tensor-parallel-size")
    assert inst["argv"] == card[:k + 1] + ["2"] + card[k + 2:]
    assert inst["gpus"] == 2 and inst["gpu_ids"] == [0, 1]
    # without the override the same host is refused: the card's TP 8 needs 8 GPUs
    assert _errors([_h("v", ["vllm-aggregated"], None, 2)])[0][0] == "v"


def test_an_abbreviation_of_an_option_the_planner_reads_is_refused_as_in_the_card():
    errors = _errors([_h("d", ["sglang-decode"], {"sglang-decode": {"set": {"--tp-si": 1}}})])
    assert len(errors) == 1 and errors[0][0] == "d"
    assert errors[0][1].startswith("launchcard_argv_overrides['sglang-decode'].set['--tp-si']: '--tp-si' "
                                   "abbreviates --tp-size"), errors
    # an option the planner does not read is passed on as written: --tokenizer is vLLM's own option, not a
    # prefix of the card's --tokenizer-mode to refuse
    inst = _vllm({"set": {"--tokenizer": "zai-org/GLM-5.3-Flash"}})
    assert inst["argv"][-2:] == ["--tokenizer", "zai-org/GLM-5.3-Flash"]
    assert "--tokenizer-mode" in inst["argv"]


def test_removing_what_the_argv_does_not_hold_is_an_error():
    errors = _vllm_errors({"remove": ["--disable-flashinfer-autotun"]})
    assert errors == [("v", "launchcard_argv_overrides['vllm-aggregated'].remove[0]: "
                       "'--disable-flashinfer-autotun' is not in the recipe's argv")]
    # the card's own abbreviation is named: the engine may read it as the removed flag
    card = dict(EX, recipes=[dict(EX["recipes"][0], argv=ARGV["vllm-aggregated"] + ["--max-model", "9"])]
                + EX["recipes"][1:])
    errors = _errors([_h("v", ["vllm-aggregated"], {"vllm-aggregated": {"remove": ["--max-model-len"]}})], card)
    assert "the card writes '--max-model' (envs[0].argv[13])" in errors[0][1]


@pytest.mark.parametrize("overrides, where, message", [
    ({"set": {"--max-model-len": "4096\nExecStartPre=/bin/sh"}}, ".set['--max-model-len']",
     "expected no control characters"),
    ({"set": {"--port": "http"}}, ".set['--port']", "--port expects an integer, found 'http'"),
    ({"set": {"--port": 70000}}, ".set['--port']", "--port expects a TCP port from 1 to 65535"),
    ({"set": {"--max-model-len": None}}, ".set['--max-model-len']", "to drop the flag, list it in remove"),
    ({"set": {"--max-model-len": False}}, ".set['--max-model-len']", "to drop the flag, list it in remove"),
    ({"set": {"--max-model-len": []}}, ".set['--max-model-len']", "expected at least one value"),
    ({"set": {"--max-model-len": {"a": 1}}}, ".set['--max-model-len']", "expected a string or a number"),
    ({"set": {"--cuda-graph-bs": [1, True]}}, ".set['--cuda-graph-bs'][1]", "expected a string or a number"),
    ({"set": {"--chat-template": "--evil"}}, ".set['--chat-template']", "would be read as an option"),
    ({"set": {"--a=b": 1}}, ".set['--a=b']", "expected an option name"),
    ({"set": {"; rm -rf /": 1}}, ".set['; rm -rf /']", "expected an option name"),
    ({"remove": "--tokenizer-mode"}, ".remove", "expected a list of flags"),
    ({"remove": ["--tokenizer-mode"], "set": {"--tokenizer-mode": "auto"}}, ".set['--tokenizer-mode']",
     "also in remove"),
    ({"sett": {}}, ".sett", "unknown key"),
    ({"set": {"--max-model-len": "x" * 131072}}, ".set['--max-model-len']", "MAX_ARG_STRLEN"),
    ({"set": {"--kv-transfer-config": '{"kv_role": "kv_producer", "kv_connector": "NixlConnector"}'}}, "",
     "changes what the recipe is (its role from aggregated to prefill"),
])
def test_bad_overrides_name_the_variable_the_recipe_and_the_flag(overrides, where, message):
    errors = _vllm_errors(overrides)
    assert len(errors) == 1, errors
    host, text = errors[0]
    prefix = "launchcard_argv_overrides['vllm-aggregated']%s: " % where
    assert host == "v" and text.startswith(prefix) and message in text, text


def test_unknown_recipe_names_are_refused_and_former_names_are_read():
    errors = _errors([_h("v", ["vllm-aggregated"], {"vllm-tp8": {"set": {"--max-model-len": 1}}})])
    assert errors == [("v", "launchcard_argv_overrides['vllm-tp8']: no recipe 'vllm-tp8' in the card; it has "
                       "sglang-aggregated, sglang-decode, sglang-encoder, sglang-language, sglang-prefill, "
                       "sglang-router, vllm-aggregated")]
    # a slip of one name is guessed
    assert _errors([_h("v", ["vllm-aggregated"], {"vllm-agregated": {"set": {"--max-model-len": 1}}})])[0][1].startswith(
        "launchcard_argv_overrides['vllm-agregated']: no recipe 'vllm-agregated' in the card; did you mean "
        "'vllm-aggregated'?; it has ")
    assert _errors([_h("v", ["vllm-aggregated"], ["--port"])])[0][1].startswith(
        "launchcard_argv_overrides: expected a mapping")
    p = _plan([_h("v", ["vllm-aggregated"], {"vllm-monolithic": {"set": {"--max-model-len": 1}}})])
    assert _inst(p, "v", "vllm-aggregated")["argv"][-2:] == ["--max-model-len", "1"]
    assert any("launchcard_argv_overrides names 'vllm-monolithic'" in d for d in p["deprecations"])


def test_a_card_element_the_overrides_invalidate_is_named():
    # rank 1's recipe without --nnodes: its card --node-rank 1 is now out of range
    errors = _errors([_h("n1", ["sglang-aggregated-1"], {"sglang-aggregated-1": {"remove": ["--nnodes"]}})], MULTI)
    assert errors == [("n1", "launchcard_argv_overrides['sglang-aggregated-1']: with the overrides applied, the "
                       "card's envs[1].argv[6]: --node-rank must be from 0 to --nnodes - 1 (0), found 1")]


def test_port_override_moves_the_port_and_the_peer_urls():
    moved = {"sglang-prefill": {"set": {"--port": 31500, "--disaggregation-bootstrap-port": 9000}}}
    hosts = [_h("pre", ["sglang-prefill"], moved, address="10.9.0.1"),
             _h("dec", ["sglang-decode"], None, address="10.9.0.2"),
             _h("rt", ["sglang-router"], None, address="10.9.0.3")]
    p = _plan(hosts)
    pre = _inst(p, "pre", "sglang-prefill")
    assert (pre["port"], pre["bootstrap_port"]) == (31500, 9000)
    assert {x["port"] for x in pre["ports"]} == {31500, 9000}
    assert pre["url"] == "http://10.9.0.1:31500"
    line = " ".join(_inst(p, "rt", "sglang-router")["argv"])
    assert "--prefill http://10.9.0.1:31500 9000" in line and "--decode http://10.9.0.2:32000" in line
    # without the override: the card's ports
    line = " ".join(_inst(_plan([h[:1] + (dict(h[1], argv_overrides=None),) for h in hosts]), "rt",
                          "sglang-router")["argv"])
    assert "--prefill http://10.9.0.1:31000 8998" in line


def test_overrides_apply_per_host_and_a_shared_value_is_read_once():
    shared = {"sglang-decode": {"set": {"--mem-fraction-static": 0.7}}}
    p = _plan([_h("d1", ["sglang-decode"], shared, address="10.9.1.1"),
               _h("d2", ["sglang-decode"], None, address="10.9.1.2"),
               _h("pre", ["sglang-prefill"], shared, address="10.9.1.3")])
    assert _inst(p, "d1", "sglang-decode")["argv"][-2:] == ["--mem-fraction-static", "0.7"]
    assert _inst(p, "d2", "sglang-decode")["argv"] == ARGV["sglang-decode"][:7] + ["0"] + ARGV["sglang-decode"][8:]
    # an override for a recipe the host does not run changes nothing there
    assert "--mem-fraction-static" not in _inst(p, "pre", "sglang-prefill")["argv"]


def test_a_multinode_recipe_needs_the_same_overrides_on_every_host():
    one = {"sglang-aggregated-0": {"set": {"--mem-fraction-static": 0.8}}}
    errors = _errors([_h("n0", ["sglang-aggregated-0"], one, 8), _h("n1", ["sglang-aggregated-0"], None, 8)], MULTI)
    assert errors == [("sglang-aggregated-0", "spans 2 nodes, so its launchcard_argv_overrides must be the same on "
                       "every host it is placed on (n0, n1): set it for their group, not per host")]
    p = _plan([_h("n0", ["sglang-aggregated-0"], one, 8), _h("n1", ["sglang-aggregated-0"], one, 8)], MULTI)
    for host in ("n0", "n1"):
        assert _inst(p, host, "sglang-aggregated-0")["argv"][-2:] == ["--mem-fraction-static", "0.8"]


def test_no_overrides_plan_exactly_as_before():
    hosts = [_h("pd", ["sglang-prefill", "sglang-decode", "sglang-router"])]
    p = _plan(hosts)
    for inst in map(_unpinned, p["hosts"]["pd"]["instances"]):
        assert inst["argv"] == ARGV[inst["recipe"]] and inst["changes"] == []
    assert _plan([_h("pd", ["sglang-prefill", "sglang-decode", "sglang-router"], {})]) == p


def test_preflight_reads_the_effective_argv_of_an_overridden_recipe():
    # the weights each GPU holds follow the effective tensor-parallel size, not the card's
    from ansible_collections.launchcard.inference.plugins.module_utils._preflight import host_needs
    card_tp = host_needs(EX, _plan([_h("v", ["vllm-aggregated"])])["hosts"]["v"])["weights_per_gpu_mib"]
    p = _plan([_h("v", ["vllm-aggregated"], {"vllm-aggregated": {"set": {"--tensor-parallel-size": 2}}})])
    inst = p["hosts"]["v"]["instances"][0]
    assert inst["recipe_facts"]["tensor_parallel_size"] == 2
    assert abs(host_needs(EX, p["hosts"]["v"])["weights_per_gpu_mib"] - card_tp * 4) < 4
    assert "recipe_facts" not in _plan([_h("v", ["vllm-aggregated"])])["hosts"]["v"]["instances"][0]


def test_a_bad_group_value_is_one_error_naming_its_hosts():
    bad = {"vllm-aggregated": {"set": {"--port": "http"}}}
    errors = _errors([_h("v%d" % i, ["vllm-aggregated"], bad) for i in range(5)])
    assert errors == [("v0, v1, v2 and 2 more host(s)", "launchcard_argv_overrides['vllm-aggregated'].set['--port']: "
                       "--port expects an integer, found 'http'")]


def test_a_bad_group_value_names_the_hosts_that_run_its_recipe():
    """A value set for the whole fleet reaches every host; the error names those that run the recipe it is for."""
    bad = {"vllm-aggregated": {"set": {"--port": "http"}}}
    hosts = [_h("e%d" % i, ["sglang-encoder"], bad) for i in range(4)] + [_h("v", ["vllm-aggregated"], bad)]
    assert [h for h, dummy in _errors(hosts)] == ["v"]
    # where no host runs it, the error still names where the value is set
    assert [h for h, dummy in _errors(hosts[:2])] == ["e0, e1"]


def test_env_sets_and_removes_the_recipes_variables():
    inst = _vllm({"env": {"VLLM_USE_RUST_FRONTEND": None, "VLLM_CPU_KVCACHE_SPACE": 1,
                          "VLLM_ENGINE_READY_TIMEOUT_S": "600"}})
    assert inst["env"] == {"VLLM_ENGINE_READY_TIMEOUT_S": "600", "VLLM_CPU_KVCACHE_SPACE": "1"}
    assert inst["changes"] == ["launchcard_argv_overrides: env remove VLLM_USE_RUST_FRONTEND",
                               "launchcard_argv_overrides: env set VLLM_CPU_KVCACHE_SPACE=1",
                               "launchcard_argv_overrides: env set VLLM_ENGINE_READY_TIMEOUT_S=600"]
    # the argv is the card's; an env override alone is one, so the facts come from the effective recipe
    assert inst["argv"] == ARGV["vllm-aggregated"] and "recipe_facts" in inst
    assert _inst(_plan([_h("v", ["vllm-aggregated"])]), "v", "vllm-aggregated")["env"] == EX["recipes"][0]["env"]


def test_env_overrides_reach_every_unit_flavour():
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_spec as unit_spec
    env = {"VLLM_USE_RUST_FRONTEND": None, "VLLM_CPU_OMP_THREADS_BIND": "all"}
    p = _plan([_h("v", ["vllm-aggregated"], {"vllm-aggregated": {"env": env}})])
    inst = p["hosts"]["v"]["instances"][0]
    for runtime, quadlet in (("docker", False), ("podman", False), ("podman", True), ("native", False)):
        opts = dict(unit_spec.DEFAULTS, runtime=runtime, podman_quadlet=quadlet, vendor="none")
        text = units.render(inst, opts)
        assert "VLLM_CPU_OMP_THREADS_BIND" in text and "VLLM_USE_RUST_FRONTEND" not in text, (runtime, quadlet)
    assert inst["env"]["VLLM_CPU_OMP_THREADS_BIND"] == "all"


@pytest.mark.parametrize("env, where, message", [
    ({"VLLM_X": "a\nExecStartPre=/bin/sh"}, ".env['VLLM_X']", "expected no control characters"),
    ({"BAD-NAME": "1"}, ".env['BAD-NAME']", "expected an environment variable name"),
    ({"1X": "1"}, ".env['1X']", "expected an environment variable name"),
    ({"A=B": "1"}, ".env['A=B']", "expected an environment variable name"),
    ({"VLLM_X": True}, ".env['VLLM_X']", "expected a string, a number or null"),
    ({"VLLM_X": [1]}, ".env['VLLM_X']", "expected a string, a number or null"),
    ({"HF_TOKEN": "hf_abc"}, ".env['HF_TOKEN']", "launchcard_hf_token"),
    ({"NOT_IN_CARD": None}, ".env['NOT_IN_CARD']", "the recipe has no variable 'NOT_IN_CARD'"),
    ([], ".env", "expected a mapping from variable name"),
    ({"VLLM_X": "x" * 131072}, ".env['VLLM_X']", "MAX_ARG_STRLEN"),
])
def test_bad_env_overrides_name_the_variable_the_recipe_and_the_name(env, where, message):
    test_bad_overrides_name_the_variable_the_recipe_and_the_flag({"env": env}, where, message)
