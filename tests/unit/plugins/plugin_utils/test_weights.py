# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The weights role's peer source: the seed of each card and the copies from it (plugins/plugin_utils/_weights.py),
and the filters over it (plugins/filter/plan.py)."""

from __future__ import annotations

import random

from ansible_collections.launchcard.inference.plugins.filter import plan as filters
from ansible_collections.launchcard.inference.plugins.plugin_utils import _weights as weights


def _host(card, *roles):
    return {"card": card, "instances": [{"role": r} for r in roles]}


PLAN = {"hosts": {
    "w3": _host("tiny", "server"), "w1": _host("tiny", "server"), "w2": _host("tiny", "server"),
    "w4": _host("tiny", "server"), "router": _host("tiny", "router"),
    "b2": _host("big", "prefill"), "b1": _host("big", "decode", "router"),
}}
ALL = ["w1", "w2", "w3", "w4", "router", "b1", "b2"]


def test_one_seed_per_card_the_first_host_by_name_and_every_other_engine_host_copies():
    out = weights.peer_plan(PLAN, {}, ALL)
    assert out["cards"] == {
        "tiny": {"seed": "w1", "seed_staged": False, "copies": ["w2", "w3", "w4"], "hosts": ["w1", "w2", "w3", "w4"]},
        "big": {"seed": "b1", "seed_staged": False, "copies": ["b2"], "hosts": ["b1", "b2"]},
    }
    # routers load no weights: no part in the plan
    assert "router" not in out["hosts"]
    assert out["hosts"]["w1"] == {"card": "tiny", "seed": "w1", "copying": False, "copies": ["w2", "w3", "w4"]}
    assert out["hosts"]["w3"] == {"card": "tiny", "seed": "w1", "copying": True, "copies": []}


def test_the_choice_does_not_depend_on_the_order_of_anything():
    want = weights.peer_plan(PLAN, {"w3": True}, ALL)
    for seed in range(20):
        rnd = random.Random(seed)
        hosts = list(PLAN["hosts"].items())
        rnd.shuffle(hosts)
        active = list(ALL)
        rnd.shuffle(active)
        assert weights.peer_plan({"hosts": dict(hosts)}, {"w3": True}, active) == want


def test_a_host_that_holds_the_revision_is_the_seed_and_copies_nothing():
    out = weights.peer_plan(PLAN, {"w4": True, "w2": True}, ALL)
    assert out["cards"]["tiny"] == {"seed": "w2", "seed_staged": True, "copies": ["w1", "w3"],
                                    "hosts": ["w1", "w2", "w3", "w4"]}
    assert out["hosts"]["w4"]["copying"] is False and out["hosts"]["w4"]["seed"] == "w2"
    # every host holds it: nothing to copy, no download
    full = weights.peer_plan(PLAN, dict.fromkeys(ALL, True), ALL)
    assert full["cards"]["tiny"]["copies"] == [] and full["cards"]["big"]["copies"] == []


def test_a_host_out_of_the_run_is_never_a_seed_and_gets_nothing():
    out = weights.peer_plan(PLAN, {"w1": True}, ["w2", "w3", "router", "b2"])
    assert out["cards"]["tiny"] == {"seed": "w2", "seed_staged": False, "copies": ["w3"], "hosts": ["w2", "w3"]}
    assert out["cards"]["big"] == {"seed": "b2", "seed_staged": False, "copies": [], "hosts": ["b2"]}
    assert set(out["hosts"]) == {"w2", "w3", "b2"}
    assert weights.peer_plan(PLAN, {}, []) == {"cards": {}, "hosts": {}}


def test_one_engine_host_is_its_own_seed_and_downloads():
    out = weights.peer_plan({"hosts": {"solo": _host("tiny", "server")}}, {}, ["solo"])
    assert out["hosts"]["solo"] == {"card": "tiny", "seed": "solo", "copying": False, "copies": []}


def test_the_filters_read_preflight_and_name_who_downloads_and_who_copies():
    hostvars = {h: {"preflight_result": {"weights_staged": h == "b2"}} for h in ALL}
    hostvars["w2"] = {}  # preflight did not run (--tags weights): not staged
    peers = filters.weights_peers(PLAN, hostvars, ALL)
    assert peers == weights.peer_plan(PLAN, {"b2": True}, ALL)
    cards = {"tiny": {"model": {"repo": "org/tiny", "revision": "1" * 40}}, "big": {"model": {"repo": "org/big"}}}
    assert filters.weights_peer_report(peers, cards) == [
        "big: b2 already holds it, no download; b1 copy it from b2",
        "org/tiny@111111111111: w1 downloads it from the Hub; w2, w3, w4 copy it from w1",
    ]
    alone = weights.peer_plan(PLAN, {}, ["w1"])
    assert weights.peer_report(alone) == ["tiny: w1 downloads it from the Hub; no host copies it"]
