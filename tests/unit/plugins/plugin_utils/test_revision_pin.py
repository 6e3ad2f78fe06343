# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bug-report case A: every engine is told the card's revision, so it finds the snapshot staged by commit hash offline."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._argv import Argv
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import CardError, load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import host_units, render, render_quadlet

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
EXAMPLE = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
with open(EXAMPLE) as _f:
    DOC = json.load(_f)
REPO, REV = DOC["hf"]["repo"], DOC["hf"]["revision"]
OTHER = "0123456789abcdef0123456789abcdef01234567"


def _card(mutate=None):
    doc = json.loads(json.dumps(DOC))
    if mutate:
        mutate(doc)
    return load_card(json.dumps(doc), "variant")


def _argv(i, tokens):
    """A mutation that replaces envs[i].argv."""
    def mutate(doc):
        doc["envs"][i]["argv"] = list(tokens)
    return mutate


def _errors(mutate):
    with pytest.raises(CardError) as info:
        _card(mutate)
    return info.value.errors


def _plan_all(card):
    """Every recipe of the card on one host of its own."""
    hosts = [("h%d" % r["index"], {"address": "10.0.0.%d" % (r["index"] + 1), "recipes": [r["name"]]})
             for r in card["recipes"]]
    return plan(card, normalize_placement(hosts))


def test_every_engine_role_gets_the_revision_and_routers_none():
    p = _plan_all(_card())
    roles = {}
    for hp in p["hosts"].values():
        for inst in hp["instances"]:
            a = Argv(inst["argv"])
            roles[inst["role"]] = a.values("--revision")
            if inst["role"] != "router":
                assert inst["argv"][-2:] == ["--revision", REV]
                assert "--revision %s (hf.revision: the staged snapshot, loaded offline)" % REV in inst["changes"]
    # encoder, language, aggregated (vLLM and SGLang), prefill, decode: all of them; the router none
    assert roles == {"aggregated": [REV], "encoder": [REV], "language": [REV], "prefill": [REV], "decode": [REV],
                     "router": []}


@pytest.mark.parametrize("runtime", ["native", "docker", "podman"])
def test_the_unit_runs_the_engine_with_the_revision(runtime):
    p = _plan_all(_card())
    inst = p["hosts"]["h0"]["instances"][0]
    text = render(inst, {"runtime": runtime, "podman_cgroups": "enabled"})
    assert "--revision %s" % REV in text and "HF_HUB_OFFLINE=1" in text


def test_the_quadlet_file_runs_the_engine_with_the_revision():
    inst = _plan_all(_card())["hosts"]["h1"]["instances"][0]
    text = render_quadlet(inst, {"runtime": "podman", "podman_quadlet": True})
    exec_part = text.split("\nExec=", 1)[1].split("\n[Service]", 1)[0]
    assert "--revision %s" % REV in " ".join(exec_part.split())


def test_a_new_revision_is_a_new_unit_file():
    old = host_units(_plan_all(_card())["hosts"]["h3"], {"runtime": "native"})
    new = host_units(_plan_all(_card(lambda d: d["hf"].update(revision=OTHER)))["hosts"]["h3"], {"runtime": "native"})
    assert [u["name"] for u in old] == [u["name"] for u in new]
    assert old[0]["content"] != new[0]["content"] and "--revision %s" % OTHER in new[0]["content"]


@pytest.mark.parametrize("written", [["--revision", REV], ["--revision=" + REV]])
def test_the_same_revision_in_the_card_is_kept_once(written):
    card = _card(_argv(1, DOC["envs"][1]["argv"] + written))
    inst = _plan_all(card)["hosts"]["h1"]["instances"][0]
    assert Argv(inst["argv"]).values("--revision") == [REV]
    assert sum(t.startswith("--revision") for t in inst["argv"]) == 1
    assert not any(c.startswith("--revision") for c in inst["changes"])


@pytest.mark.parametrize("written,where", [
    (["--revision", OTHER], "envs[1].argv[12]"),
    (["--revision=main"], "envs[1].argv[11]"),
])
def test_another_revision_in_the_card_is_refused_naming_the_element(written, where):
    errors = _errors(_argv(1, DOC["envs"][1]["argv"] + written))
    assert len(errors) == 1
    path, message = errors[0]
    assert path == where
    assert "is not the card's hf.revision %s" % REV in message


@pytest.mark.parametrize("i,flag", [(0, "--revis"), (1, "--rev")])
def test_an_abbreviated_revision_is_refused_naming_the_element(i, flag):
    tokens = DOC["envs"][i]["argv"] + [flag, REV]
    (path, message), = _errors(_argv(i, tokens))
    assert path == "envs[%d].argv[%d]" % (i, len(tokens) - 2)
    assert "abbreviates --revision" in message


def test_vllm_tokenizer_of_the_same_repo_gets_its_revision_too():
    # vLLM resolves an explicit --tokenizer with --tokenizer-revision only (vllm/engine/arg_utils.py)
    card = _card(_argv(0, DOC["envs"][0]["argv"] + ["--tokenizer", REPO]))
    a = Argv(_plan_all(card)["hosts"]["h0"]["instances"][0]["argv"])
    assert a.values("--revision") == [REV] and a.values("--tokenizer-revision") == [REV]
    errors = _errors(_argv(0, DOC["envs"][0]["argv"] + ["--tokenizer", REPO, "--tokenizer-revision", OTHER]))
    assert errors[0][0] == "envs[0].argv[16]"
    # a tokenizer from elsewhere is the card's own business
    card = _card(_argv(0, DOC["envs"][0]["argv"] + ["--tokenizer", "/srv/tok"]))
    assert not Argv(_plan_all(card)["hosts"]["h0"]["instances"][0]["argv"]).has("--tokenizer-revision")


def test_sglang_draft_model_of_the_same_repo_gets_its_revision_too():
    # SGLang loads a draft model path without --speculative-draft-model-revision at "main"
    card = _card(_argv(2, DOC["envs"][2]["argv"] + ["--speculative-draft-model-path", REPO]))
    a = Argv(_plan_all(card)["hosts"]["h2"]["instances"][0]["argv"])
    assert a.values("--speculative-draft-model-revision") == [REV] and a.values("--revision") == [REV]


@pytest.mark.parametrize("model", ["/srv/models/glm", "./glm", "~/glm"])
def test_a_local_model_path_is_served_as_it_is(model):
    tokens = list(DOC["envs"][1]["argv"])
    tokens[3] = model
    inst = _plan_all(_card(_argv(1, tokens)))["hosts"]["h1"]["instances"][0]
    assert inst["argv"] == tokens + ["--enable-metrics"]  # no pin; the metrics flag only (test_metrics_flag.py)
    assert not any(c.startswith("--revision") for c in inst["changes"])


@pytest.mark.parametrize("i,k,model", [(0, 2, "zai-org/GLM-5.3-Flash-FP8"), (1, 3, "zai-org/glm-5.3-flash")])
def test_another_repo_as_the_model_is_refused_naming_the_element(i, k, model):
    tokens = list(DOC["envs"][i]["argv"])
    tokens[k] = model
    (path, message), = _errors(_argv(i, tokens))
    assert path == "envs[%d].argv[%d]" % (i, k)
    assert "is not the card's hf.repo %r" % REPO in message


def test_a_vllm_recipe_without_a_model_is_refused():
    (path, message), = _errors(_argv(0, ["vllm", "serve", "--port", "8000"]))
    assert path == "envs[0].argv" and "names no model" in message


def test_an_override_cannot_pin_another_revision():
    from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import PlanError
    card = _card()
    bad = [("h", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"],
                  "argv_overrides": {"vllm-aggregated": {"set": {"--revision": OTHER}}}})]
    with pytest.raises(PlanError) as info:
        plan(card, normalize_placement(bad))
    (where, message), = info.value.errors
    # the host, then the override's own path (launchcard_argv_overrides.vllm-aggregated.set...)
    assert where == "h" and "launchcard_argv_overrides" in message and "is not the card's hf.revision" in message
    same = [("h", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"],
                   "argv_overrides": {"vllm-aggregated": {"set": {"--revision": REV}}}})]
    inst = plan(card, normalize_placement(same))["hosts"]["h"]["instances"][0]
    assert Argv(inst["argv"]).values("--revision") == [REV] and inst["argv"].count("--revision") == 1
