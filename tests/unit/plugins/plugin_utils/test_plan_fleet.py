# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several cards in one fleet: each host group serves its own card."""

from __future__ import annotations

import glob
import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import (
    PlanError,
    normalize_placement,
    plan_fleet,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def _card(path):
    with open(path, "rb") as f:
        return load_card(f.read(), source=path)


@pytest.fixture(scope="module")
def two_cards():
    glm = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
    small = next(p for p in sorted(glob.glob(os.path.join(ROOT, "tests", "unit", "cards", "valid", "*.json")))
                 if [r["role"] for r in _card(p)["recipes"]] == ["aggregated"] and _card(p)["recipes"][0]["gpus"] == 1)
    return {glm: _card(glm), small: _card(small)}


def test_two_models_on_two_groups(two_cards):
    glm, small = sorted(two_cards, key=lambda k: "glm" not in k)
    placements = {
        glm: normalize_placement([("a1", {"address": "10.0.0.1", "recipes": ["sglang-prefill", "sglang-decode",
                                                                             "sglang-router"]})]),
        small: normalize_placement([("b1", {"address": "10.0.1.1", "recipes": [0]}),
                                    ("b2", {"address": "10.0.1.2", "recipes": [0]})]),
    }
    fleet = plan_fleet(two_cards, placements)
    assert set(fleet["cards"]) == {glm, small}
    assert fleet["hosts"]["a1"]["card"] == glm
    assert [fleet["hosts"][h]["card"] for h in ("b1", "b2")] == [small, small]
    assert len(fleet["hosts"]["a1"]["instances"]) == 3
    slug = two_cards[small]["model"]["slug"]
    assert all(i["unit"].startswith("launchcard-%s-" % slug) for i in fleet["hosts"]["b1"]["instances"])


def test_errors_name_the_card(two_cards):
    glm = next(k for k in two_cards if "glm" in k)
    placements = {k: [] for k in two_cards}
    placements[glm] = normalize_placement([("a1", {"address": "10.0.0.1", "recipes": ["sglang-decode"]})])
    with pytest.raises(PlanError) as err:
        plan_fleet(two_cards, placements)
    assert any(where.startswith(glm + ": ") and "prefill" in msg for where, msg in err.value.errors)


def test_a_host_in_two_cards_is_refused(two_cards):
    glm, small = sorted(two_cards, key=lambda k: "glm" not in k)
    placements = {
        glm: normalize_placement([("h", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"]})]),
        small: normalize_placement([("h", {"address": "10.0.0.1", "recipes": [0]})]),
    }
    with pytest.raises(PlanError) as err:
        plan_fleet(two_cards, placements)
    assert err.value.errors[0][0] == "h" and "two cards" in err.value.errors[0][1]


def test_deprecations_name_the_card(two_cards):
    glm, small = sorted(two_cards, key=lambda k: "glm" not in k)
    placements = {
        glm: normalize_placement([("a1", {"address": "10.0.0.1", "recipes": ["vllm-monolithic"]})]),
        small: normalize_placement([("b1", {"address": "10.0.1.1", "recipes": ["vllm-aggregated"]})]),
    }
    fleet = plan_fleet(two_cards, placements)
    assert fleet["deprecations"] == [
        "%s: a1: launchcard_recipes names 'vllm-monolithic'; the role is now called 'aggregated' "
        "(aggregated serving): write 'vllm-aggregated'" % glm]
