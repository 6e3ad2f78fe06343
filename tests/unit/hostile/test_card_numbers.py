# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 42, "A card's numbers": an argv value the collection reads as a number (parallel sizes, ports, the memory
check's fraction, context and counts, the stop timeout) that is not finite or out of range is refused on the
controller naming the element (``envs[i].argv[j]``); the engines' parsers accept ``1e400``, ``nan`` and 400 digits.
docs/untrusted-input.md lists these cases."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _argv
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import CardError, load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._memory_budget import instance_needs
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import PlanError, normalize_placement, plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as _f:
    DOC = json.load(_f)
VLLM = [i for i, e in enumerate(DOC["envs"]) if e["engine"] == "vllm"][0]
# the SGLang recipe that already writes --max-running-requests and --mem-fraction-static
SGLANG = [i for i, e in enumerate(DOC["envs"]) if "--max-running-requests" in e["argv"]][0]
DIGITS = "9" * 400
CASES = [
    (SGLANG, "--max-running-requests", DIGITS, "not a finite number"),
    (SGLANG, "--mem-fraction-static", "1e400", "not a finite number"),
    (SGLANG, "--mem-fraction-static", "nan", "not a finite number"),
    (SGLANG, "--mem-fraction-static", "1.5", "out of range"),
    (SGLANG, "--mem-fraction-static", "0", "out of range"),
    (SGLANG, "--chunked-prefill-size", "Infinity", "not a finite number"),
    (SGLANG, "--context-length", "1e400", "not a finite number"),
    (SGLANG, "--tp-size", DIGITS, "out of range"),
    (SGLANG, "--port", DIGITS, "out of range"),
    (VLLM, "--gpu-memory-utilization", "inf", "not a finite number"),
    (VLLM, "--max-model-len", "1" + "0" * 400, "not a finite number"),
    (VLLM, "--shutdown-timeout", "1e400", "not a finite number"),
    (VLLM, "-tp", DIGITS, "out of range"),
    (VLLM, "--data-parallel-size", "99999999999999999999", "out of range"),
    (VLLM, "--master-port", DIGITS, "out of range"),
]


def _set(doc, index, flag, value):
    """``doc`` with ``flag value`` in ``envs[index].argv`` (replacing the value where the card writes the flag);
    returns the value's element index."""
    argv = doc["envs"][index]["argv"]
    if flag in argv:
        argv[argv.index(flag) + 1] = value
    else:
        argv.extend([flag, value])
    return argv.index(flag) + 1


@pytest.mark.parametrize("index,flag,value,why", CASES, ids=["%s %s" % (c[1], c[2][:8]) for c in CASES])
def test_a_number_the_collection_reads_that_is_not_finite_or_out_of_range_is_refused_naming_the_element(
        index, flag, value, why):
    doc = copy.deepcopy(DOC)
    at = _set(doc, index, flag, value)
    with pytest.raises(CardError) as exc:
        load_card(json.dumps(doc), "card.json")
    (path, message), = exc.value.errors
    assert path == "envs[%d].argv[%d]" % (index, at), exc.value.errors
    assert message.startswith(flag + " is " + why), message


def test_an_override_setting_such_a_number_is_refused_naming_the_override():
    card = load_card(json.dumps(DOC), "card.json")
    recipe = card["recipes"][SGLANG]["name"]
    with pytest.raises(PlanError) as exc:
        plan(card, normalize_placement([("h", {"address": "10.0.0.1", "recipes": [recipe], "argv_overrides": {
            recipe: {"set": {"--mem-fraction-static": "1e400"}}}})]))
    text = str(exc.value)
    assert "launchcard_argv_overrides['%s']" % recipe in text and "--mem-fraction-static is not a finite" in text, text


def test_the_largest_numbers_accepted_go_through_the_memory_check():
    doc = copy.deepcopy(DOC)
    _set(doc, SGLANG, "--max-running-requests", str(_argv.LARGEST_INT))
    _set(doc, SGLANG, "--mem-fraction-static", "1")
    _set(doc, SGLANG, "--context-length", str(_argv.LARGEST_INT))
    card = load_card(json.dumps(doc), "card.json")
    recipe = card["recipes"][SGLANG]
    needs = instance_needs(dict(recipe, unit="u"), 1000, {"num_hidden_layers": 2, "num_attention_heads": 4,
                                                          "hidden_size": 64})
    assert (needs["fraction"], needs["tokens"], needs["sglang"]["max_running_requests"]) == (
        1.0, _argv.LARGEST_INT, _argv.LARGEST_INT)
    assert needs["kv_mib"] > 0


@pytest.mark.parametrize("value", [DIGITS, "0", "65536", "5600.0", "1e4"])
def test_a_nixl_side_channel_port_that_is_no_port_is_refused_naming_the_variable(value):
    doc = copy.deepcopy(DOC)
    doc["envs"][VLLM].setdefault("env", {})["VLLM_NIXL_SIDE_CHANNEL_PORT"] = value
    with pytest.raises(CardError) as exc:
        load_card(json.dumps(doc), "card.json")
    (path, message), = exc.value.errors
    assert path == "envs[%d].env.VLLM_NIXL_SIDE_CHANNEL_PORT" % VLLM and message.startswith("expected a TCP port"), \
        exc.value.errors
    doc["envs"][VLLM]["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] = "65535"
    assert load_card(json.dumps(doc), "card.json")["recipes"][VLLM]["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "65535"
