# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Summary tables."""

from __future__ import annotations

import os

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.plugin_utils._report import deploy_rows, pending_units, table

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
EXAMPLE = os.path.join(ROOT, "cards", "glm-5.3-flash.json")


def test_table_aligns_columns():
    lines = table(["host", "port", "state"], [["lc-router", 30000, "healthy"], ["b", None, "x"]])
    assert lines == [
        "host       port   state",
        "---------  -----  -------",
        "lc-router  30000  healthy",
        "b                 x",
    ]


def test_table_without_rows():
    assert table(["a", "bb"], []) == ["a  bb", "-  --"]


def test_deploy_rows():
    with open(EXAMPLE) as f:
        card = load_card(f.read(), EXAMPLE)
    p = plan(card, normalize_placement([
        ("b-pd", {"address": "10.0.0.2", "recipes": ["sglang-prefill", "sglang-decode", "sglang-router"]}),
        ("a-v", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"]}),
    ]))
    unit = "launchcard-glm-5.3-flash-sglang-%s-0.service"
    results = {
        "b-pd": {
            "units": [{"name": unit % "prefill", "active_state": "active"},
                      {"name": unit % "decode", "active_state": "failed"},
                      {"name": unit % "router", "active_state": "active"}],
            "health": [{"name": unit % "prefill", "healthy": True, "detail": "health 200"},
                       {"name": unit % "router", "healthy": False, "detail": "health answered 503"}],
        },
    }
    rows = deploy_rows(p, results)
    assert rows == [
        ["a-v", "vllm-aggregated", "vllm", "aggregated", 8000, "not in this run"],
        ["b-pd", "sglang-prefill", "sglang", "prefill", 31000, "healthy"],
        ["b-pd", "sglang-decode", "sglang", "decode", 32000, "failed"],
        ["b-pd", "sglang-router", "sglang", "router", 30000, "unhealthy: health answered 503"],
    ]
    results["b-pd"]["units"] = None
    results["b-pd"]["health"] = None
    assert [r[5] for r in deploy_rows(p, results)] == ["not in this run"] * 4


def test_deploy_rows_headless_rank_has_no_port():
    plan_ = {"hosts": {"n1": {"instances": [{"unit": "u", "recipe": "r", "engine": "vllm", "role": "aggregated",
                                             "port": None}]}}}
    assert deploy_rows(plan_, {"n1": {"units": [{"name": "u"}]}}) == [
        ["n1", "r", "vllm", "aggregated", "-", "unknown"]]


def test_deploy_rows_check_mode_pending_units():
    with open(EXAMPLE) as f:
        card = load_card(f.read(), EXAMPLE)
    p = plan(card, normalize_placement([("h", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"]})]))
    unit = p["hosts"]["h"]["instances"][0]["unit"]
    results = {"h": {"units": [{"name": unit, "active_state": "active"}], "health": [], "pending": {unit: "restart"}}}
    assert [r[5] for r in deploy_rows(p, results)] == ["would restart (check mode)"]
    results["h"]["pending"] = {}
    assert [r[5] for r in deploy_rows(p, results)] == ["active"]


def test_pending_units_only_in_check_mode():
    conv = {"actions": {"start": ["a.service"], "restart": ["b.service"], "enable": ["a.service"], "stop": []}}
    assert pending_units(conv, True) == {"a.service": "start", "b.service": "restart"}
    assert pending_units(conv, False) == {}
    assert pending_units({}, True) == {} and pending_units(None, True) == {}
