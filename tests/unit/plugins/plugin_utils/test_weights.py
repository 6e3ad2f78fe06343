# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The weights role's peer source: the seed of each card, the waves of copies that fan its revision out, the rounds
of Hub downloads (plugins/plugin_utils/_weights.py), and its report lines."""

from __future__ import annotations

import random

from ansible_collections.launchcard.inference.plugins.plugin_utils import _weights as weights


def _host(card, *roles):
    return {"card": card, "instances": [{"role": r} for r in roles]}


PLAN = {"hosts": {
    "w3": _host("tiny", "server"), "w1": _host("tiny", "server"), "w2": _host("tiny", "server"),
    "w4": _host("tiny", "server"), "router": _host("tiny", "router"),
    "b2": _host("big", "prefill"), "b1": _host("big", "decode", "router"),
}}
ALL = ["w1", "w2", "w3", "w4", "router", "b1", "b2"]


def _entry(card, seed, copying=False, copies=(), source=None, wave=None, load=0, downloading=False, rnd=None):
    return {"card": card, "seed": seed, "copying": copying, "copies": list(copies), "source": source, "wave": wave,
            "source_load": load, "downloading": downloading, "download_round": rnd}


def test_one_seed_per_card_the_first_host_by_name_and_every_other_engine_host_copies():
    out = weights.peer_plan(PLAN, {}, ALL)
    assert out["cards"] == {
        "tiny": {"seed": "w1", "seed_staged": False, "copies": ["w2", "w3", "w4"], "hosts": ["w1", "w2", "w3", "w4"],
                 "waves": [[["w2", "w1"], ["w3", "w1"], ["w4", "w1"]]]},
        "big": {"seed": "b1", "seed_staged": False, "copies": ["b2"], "hosts": ["b1", "b2"], "waves": [[["b2", "b1"]]]},
    }
    # routers load no weights: no part in the plan
    assert "router" not in out["hosts"]
    assert out["hosts"]["w1"] == _entry("tiny", "w1", copies=["w2", "w3", "w4"], downloading=True, rnd=1)
    assert out["hosts"]["w3"] == _entry("tiny", "w1", copying=True, source="w1", wave=1, load=3)
    # no fan-out bound: one wave; the two seeds download at once (no Hub bound)
    assert (out["waves"], out["download_rounds"]) == (1, 1)


def test_waves_grow_the_holders_fanout_plus_one_times_and_no_source_serves_more_than_fanout():
    hosts = ["h%02d" % i for i in range(1, 22)]  # 21 engine hosts, as the 24-host bench fleet has
    for fanout in (1, 2, 3, 4, 20):
        waves = weights.fanout_waves(hosts, ["h01"], fanout)
        holders, targets = 1, []
        for wave in waves:
            sources = [src for dummy, src in wave]
            assert max(sources.count(src) for src in sources) <= fanout
            # every source holds it before its wave; every target is new
            assert set(sources) <= set(["h01"] + targets) and not set(t for t, dummy in wave) & set(["h01"] + targets)
            assert len(wave) == min(fanout * holders, 20 - len(targets))
            targets += [t for t, dummy in wave]
            holders += len(wave)
        assert sorted(targets) == hosts[1:]
    # ceil(log_{F+1} 21) waves: 5 with F=1 (1 2 4 8 16 32), 3 with F=2 (3 9 27), 1 when F covers every host
    assert [len(weights.fanout_waves(hosts, ["h01"], f)) for f in (1, 2, 3, 4, 20, 0)] == [5, 3, 3, 2, 1, 1]
    # F=1 is a doubling: each holder copies to one host a wave
    assert weights.fanout_waves(["a", "b", "c", "d", "e"], ["a"], 1) == [
        [("b", "a")], [("c", "a"), ("d", "b")], [("e", "a")]]


def test_targets_are_spread_over_the_sources_in_turn():
    # the last wave of 9 holders and 12 targets, F=2: no source serves more than ceil(12 / 9) = 2
    waves = weights.fanout_waves(["h%02d" % i for i in range(1, 22)], ["h01"], 2)
    last = [src for dummy, src in waves[-1]]
    assert len(last) == 12 and len(set(last)) == 9 and max(last.count(s) for s in last) == 2


def test_staged_hosts_are_sources_of_the_first_wave_and_no_download():
    out = weights.peer_plan(PLAN, {"w2": True, "w4": True}, ALL, fanout=1)
    assert out["cards"]["tiny"]["waves"] == [[["w1", "w2"], ["w3", "w4"]]]
    assert out["cards"]["tiny"]["seed"] == "w2" and out["cards"]["tiny"]["seed_staged"] is True
    assert not any(e["downloading"] for h, e in out["hosts"].items() if e["card"] == "tiny")
    assert out["hosts"]["w3"] == _entry("tiny", "w2", copying=True, source="w4", wave=1, load=1)
    # the big card has no staged host: its seed downloads, in the one round
    assert out["hosts"]["b1"]["downloading"] and out["download_rounds"] == 1


def test_the_slowest_card_sets_the_number_of_waves():
    out = weights.peer_plan(PLAN, {}, ALL, fanout=1)
    assert [len(c["waves"]) for c in (out["cards"]["big"], out["cards"]["tiny"])] == [1, 2]
    assert out["waves"] == 2


def test_hub_source_every_host_that_lacks_it_downloads_in_rounds_of_the_hub_bound():
    out = weights.peer_plan(PLAN, {"w2": True}, ALL, source="hub", hub_concurrency=2)
    rounds = {h: e["download_round"] for h, e in out["hosts"].items() if e["downloading"]}
    # b1 b2 | w1 w3 | w4, by name across the cards; no copies
    assert rounds == {"b1": 1, "b2": 1, "w1": 2, "w3": 2, "w4": 3}
    assert out["download_rounds"] == 3 and out["waves"] == 0
    assert not any(e["copying"] for e in out["hosts"].values())
    # no bound: one round
    assert weights.peer_plan(PLAN, {}, ALL, source="hub")["download_rounds"] == 1
    # peer: one download per card, two cards, one at a time
    peer = weights.peer_plan(PLAN, {}, ALL, hub_concurrency=1)
    assert [(h, e["download_round"]) for h, e in sorted(peer["hosts"].items()) if e["downloading"]] == [
        ("b1", 1), ("w1", 2)]


def test_the_choice_does_not_depend_on_the_order_of_anything():
    want = weights.peer_plan(PLAN, {"w3": True}, ALL, fanout=1)
    shuffled = weights.fanout_waves(["c", "a", "b", "d"], ["d", "b"], 1)
    assert shuffled == weights.fanout_waves(["a", "b", "c", "d"], ["b", "d"], 1)
    for seed in range(20):
        rnd = random.Random(seed)
        hosts = list(PLAN["hosts"].items())
        rnd.shuffle(hosts)
        active = list(ALL)
        rnd.shuffle(active)
        assert weights.peer_plan({"hosts": dict(hosts)}, {"w3": True}, active, fanout=1) == want


def test_a_host_that_holds_the_revision_is_the_seed_and_copies_nothing():
    out = weights.peer_plan(PLAN, {"w4": True, "w2": True}, ALL)
    assert out["cards"]["tiny"] == {"seed": "w2", "seed_staged": True, "copies": ["w1", "w3"],
                                    "hosts": ["w1", "w2", "w3", "w4"], "waves": [[["w1", "w2"], ["w3", "w4"]]]}
    assert out["hosts"]["w4"]["copying"] is False and out["hosts"]["w4"]["seed"] == "w2"
    # every host holds it: nothing to copy, no download
    full = weights.peer_plan(PLAN, dict.fromkeys(ALL, True), ALL)
    assert full["cards"]["tiny"]["copies"] == [] and full["cards"]["big"]["copies"] == []


def test_a_host_out_of_the_run_is_never_a_seed_and_gets_nothing():
    out = weights.peer_plan(PLAN, {"w1": True}, ["w2", "w3", "router", "b2"])
    assert out["cards"]["tiny"] == {"seed": "w2", "seed_staged": False, "copies": ["w3"], "hosts": ["w2", "w3"],
                                    "waves": [[["w3", "w2"]]]}
    assert out["cards"]["big"] == {"seed": "b2", "seed_staged": False, "copies": [], "hosts": ["b2"], "waves": []}
    assert set(out["hosts"]) == {"w2", "w3", "b2"}
    assert weights.peer_plan(PLAN, {}, []) == {"cards": {}, "hosts": {}, "waves": 0, "download_rounds": 0}


def test_a_slice_spreads_among_its_own_hosts_only():
    # a slice (--limit, a plan file applied in parts) of hosts w2..w4 with w1, which holds it, left out
    hosts = ["h%02d" % i for i in range(1, 22)]
    plan = {"hosts": {h: _host("tiny", "server") for h in hosts}}
    part = hosts[7:14]
    out = weights.peer_plan(plan, {"h01": True}, part, fanout=2)
    used = {x for wave in out["cards"]["tiny"]["waves"] for pair in wave for x in pair}
    assert used == set(part) and out["cards"]["tiny"]["seed"] == "h08"
    assert out["hosts"]["h08"]["downloading"] and set(out["hosts"]) == set(part)


def test_one_engine_host_is_its_own_seed_and_downloads():
    out = weights.peer_plan({"hosts": {"solo": _host("tiny", "server")}}, {}, ["solo"], fanout=1)
    assert out["hosts"]["solo"] == _entry("tiny", "solo", downloading=True, rnd=1)
    assert (out["waves"], out["download_rounds"]) == (0, 1)
    assert weights.fanout_waves(["solo"], ["solo"], 3) == [] and weights.fanout_waves([], [], 3) == []


def test_the_report_names_who_downloads_and_who_copies_by_each_cards_repo():
    # the weights_plan action reads each host's preflight result and the options (test_weights_actions)
    peers = weights.peer_plan(PLAN, {"b2": True}, ALL)
    cards = {"tiny": {"model": {"repo": "org/tiny", "revision": "1" * 40}}, "big": {"model": {"repo": "org/big"}}}
    assert weights.card_repos(cards) == {"tiny": "org/tiny@111111111111"}  # big names no revision: its card's name
    assert weights.peer_report(peers, weights.card_repos(cards)) == [
        "big: b2 already holds it, no download; b1 copies it from b2",
        "org/tiny@111111111111: w1 downloads it from the Hub; w2, w3, w4 copy it from w1",
    ]
    alone = weights.peer_plan(PLAN, {}, ["w1"])
    assert weights.peer_report(alone) == ["tiny: w1 downloads it from the Hub; no host copies it"]
    # in waves: each wave's copies by source
    fanned = weights.peer_plan(PLAN, {}, ["w1", "w2", "w3", "w4"], fanout=1)
    assert weights.peer_report(fanned, weights.card_repos(cards)) == [
        "org/tiny@111111111111: w1 downloads it from the Hub; wave 1: w2 copies it from w1; "
        "wave 2: w3 copies it from w1; w4 copies it from w2"]
