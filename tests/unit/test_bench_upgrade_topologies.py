# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure parts of bench/upgrade_topologies.py: its case list, capacity figure, TSV line and output parsing."""

from __future__ import annotations

import importlib.util
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("upgrade_topologies",
                                               os.path.join(ROOT, "bench", "upgrade_topologies.py"))
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _card():
    with open(bench.CARD) as f:
        return json.load(f)


def test_the_cases_place_every_recipe_of_the_example_card():
    placed = {r for dummy, dummy2, hosts in bench.CASES for h in hosts for r in h[4]}
    assert placed == set(bench.recipe_names(_card()))


def test_the_single_host_pd_case_is_the_card_as_written():
    hosts = dict((c[0], c[2]) for c in bench.CASES)["pd-one-host"]
    assert [(h[2], h[4]) for h in hosts] == [(8, ["sglang-prefill", "sglang-decode", "sglang-router"])]


def test_cases_keep_to_their_subnet_and_distinct_addresses():
    hosts = [h for c in bench.CASES for h in c[2]]
    assert len({h[0] for h in hosts}) == len({h[1] for h in hosts}) == len(hosts)
    text = bench.inventory_text(hosts)
    assert text.count("ansible_host=198.18.19.") == len(hosts)


def test_the_entry_point_is_the_router_else_the_changed_instance():
    cases = {c[0]: c for c in bench.CASES}
    for name, want in [("pd-three-hosts", "http://198.18.19.17:30000"),
                       ("pd-one-host", "http://198.18.19.18:30000"),
                       ("vllm-tp8", "http://198.18.19.11:8000"),
                       ("sglang-encoder-language", "http://198.18.19.13:30000")]:
        dummy, recipe, hosts = cases[name]
        assert bench.entry_point(bench.case_plan(hosts), recipe)[0] == want


def test_the_regular_pd_router_is_planned():
    hosts = dict((c[0], c[2]) for c in bench.CASES)["pd-one-host"]
    router = next(i for i in bench.case_plan(hosts) if i["role"] == "router")
    assert "--mini-lb" not in router["argv"] and "--pd-disaggregation" in router["argv"]


def test_the_changed_card_differs_in_one_env_value_of_one_recipe():
    old = _card()
    new = bench.changed_card(old, "sglang-decode")
    diff = [i for i, (a, b) in enumerate(zip(old["envs"], new["envs"])) if a != b]
    assert len(diff) == 1 and "decode" in new["envs"][diff[0]]["argv"]
    assert new["envs"][diff[0]]["env"] == {bench.ENV_KEY: "2"}
    assert old["envs"][diff[0]]["env"] == {}


def test_capacity_is_the_scarcest_role_and_its_minimum_a_fraction_of_before():
    assert bench.capacity({"prefill": 1, "decode": 2}) == 1
    assert bench.capacity({"prefill": 1, "decode": 0}) == 0
    assert bench.capacity({}) == 0
    assert bench.min_fraction([2, 2, 1, 3, 2]) == 0.5
    assert bench.min_fraction([1, 2, 1]) == 1.0
    assert bench.min_fraction([0, 1]) == 0.0
    assert bench.min_fraction([]) == 0.0


def test_tsv_line_has_every_column_and_no_stray_tabs():
    row = dict((c, c) for c in bench.COLUMNS)
    row["outages"] = "outage: a\tb\nc"
    fields = bench.tsv_line(row).split("\t")
    assert len(fields) == len(bench.COLUMNS) and fields[-1] == "outage: a b c"


CHECKED = """TASK [Upgrade | Plan the rollout] **********************************************
ok: [lc-bt-prefill]

TASK [Upgrade | The rollout] ***************************************************
ok: [lc-bt-prefill] =>
    msg:
    - 'rollout: 2 batch(es), serial 1 (hosts per recipe per batch)'
    - 'batch 1 (prefill/decode): lc-bt-prefill, lc-bt-decode'
    - '  lc-bt-decode: update (1 unit file(s) change)'
    - 'batch 2 (router): lc-bt-decode'
    - 'outage: lc-bt-decode: launchcard-glm-5.3-flash-sglang-decode-0.service (batch 1): no surge: no
        free GPUs'

TASK [Upgrade | Check the worker API of each router a surge drives] ************
"""


def test_outage_and_batch_lines_are_read_from_check_mode_output():
    lines = bench.rollout_lines(CHECKED)
    assert bench.batch_hosts(lines) == ["lc-bt-prefill", "lc-bt-decode"]
    assert bench.outage_lines(lines) == [
        "outage: lc-bt-decode: launchcard-glm-5.3-flash-sglang-decode-0.service (batch 1): no surge: no free GPUs"]
    assert bench.rollout_lines("PLAY RECAP") == []
