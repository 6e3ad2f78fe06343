# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Dashboards as code (issue 43, item 6): monitoring/dashboards/ is what tools/dashboards.py makes with
grafana-foundation-sdk, and every metric a panel names is in the pinned contracts."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _metric_contract as contract

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("lc_dashboards", os.path.join(ROOT, "tools", "dashboards.py"))
dashboards = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dashboards)
CONTRACTS = contract.load()


def committed(name="launchcard-fleet.json"):
    with open(os.path.join(dashboards.OUT_DIR, name)) as f:
        return json.load(f)


def test_the_committed_dashboards_are_what_the_generator_makes():
    want = dashboards.files()
    assert sorted(want) == sorted(os.listdir(dashboards.OUT_DIR))
    for name, text in want.items():
        with open(os.path.join(dashboards.OUT_DIR, name)) as f:
            assert f.read() == text, "%s is out of date: python tools/dashboards.py (make docs)" % name
    res = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "dashboards.py"), "--check"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr


def test_check_fails_on_a_hand_edited_dashboard(tmp_path, monkeypatch):
    board = committed()
    board["panels"][1]["targets"][0]["expr"] = "up"
    (tmp_path / "launchcard-fleet.json").write_text(json.dumps(board, indent=2, sort_keys=True) + "\n")
    monkeypatch.setattr(dashboards, "OUT_DIR", str(tmp_path))
    assert dashboards.main(["--check"]) == 1


def test_every_metric_a_panel_or_annotation_names_is_in_the_pinned_contracts():
    queries = dashboards.dashboard_queries(committed())
    assert len(queries) >= 25
    assert contract.unknown_in(queries, CONTRACTS) == []
    # the generator's own list is the one the committed file holds
    assert sorted(e for dummy, e in dashboards.queries()) == sorted(e for dummy, e in queries)


@pytest.mark.parametrize("bad,why", [
    ("vllm:fake_metric_total", "vllm 0.32.0 does not export it"),
    ("vllm:gpu_cache_usage_perc", "vllm 0.32.0 does not export it"),
    ("sgl_router_requests_total", "no component exports metrics named like it"),
])
def test_a_panel_naming_a_metric_the_pinned_release_lacks_fails(bad, why):
    board = copy.deepcopy(committed())
    kv = [p for p in board["panels"] if p.get("title") == "KV cache use"][0]
    kv["targets"][0]["expr"] = 'max by (card, instance) (%s{card=~"$card"})' % bad
    found = contract.unknown_in(dashboards.dashboard_queries(board), CONTRACTS)
    assert [(w, n) for w, n, dummy in found] == [("KV cache use / {{instance}}", bad)]
    assert found[0][2].startswith(why)


def test_the_plan_labels_are_the_dashboard_variables_and_every_engine_query_uses_them():
    board = committed()
    names = [v["name"] for v in board["templating"]["list"]]
    assert names == ["datasource", "card", "recipe", "role", "host"]
    for var in board["templating"]["list"][1:]:
        assert var["includeAll"] and var["multi"] and var["allValue"] == ".*"
        assert var["query"].startswith("label_values(up{") and var["query"].endswith(", %s)" % var["name"])
    for where, expr in dashboards.dashboard_queries(board):
        wanted = ("$card", "$host") if "node_" in expr or "launchcard_" in expr else ("$card", "$recipe", "$role",
                                                                                      "$host")
        for var in wanted:
            assert '=~"%s"' % var in expr, (where, var)


def test_fleet_overview_rows_and_deploy_upgrade_annotations():
    board = committed()
    rows = [p["title"] for p in board["panels"] if p["type"] == "row"]
    assert rows == ["Fleet", "Prefill", "Decode", "Router"]
    titles = [p["title"] for p in board["panels"] if p["type"] != "row"]
    for want in ("Instances up by role", "Requests per second", "Time to first token", "Inter-token latency",
                 "Tokens per second", "KV cache use", "Queue", "Healthy workers"):
        assert want in titles
    ttft = [p for p in board["panels"] if p["title"] == "Time to first token"][0]
    assert [t["legendFormat"] for t in ttft["targets"]] == ["{{engine}} p50", "{{engine}} p95", "{{engine}} p99"]
    anns = dict((a["name"], a["expr"]) for a in board["annotations"]["list"])
    assert "launchcard_last_deploy_timestamp_seconds" in anns["Deploys"]
    assert "launchcard_last_upgrade_timestamp_seconds" in anns["Upgrades"]
    assert all(p["datasource"]["uid"] == "${datasource}" for p in board["panels"] if p["type"] != "row")


def test_substitute_puts_values_all_and_intervals_and_refuses_an_unknown_variable():
    expr = 'rate(x{card=~"$card", host=~"${host}"}[$__rate_interval])'
    assert dashboards.substitute(expr, {"card": "glm"}) == 'rate(x{card=~"glm", host=~".*"}[1m])'
    with pytest.raises(ValueError, match=r"\$cluster"):
        dashboards.substitute('up{a=~"$cluster"}')


@pytest.mark.parametrize("argv,rc,said", [
    (["--help"], 0, "usage: tools/dashboards.py"),
    (["--bogus"], 2, "unrecognized arguments: --bogus"),
    (["--query"], 2, "argument --query: expected one argument"),
    (["--query", "prometheus:9090"], 2, "is not a Prometheus URL"),
    (["--check", "--query", "http://p:9090"], 2, "not allowed with argument"),
])
def test_help_and_bad_arguments_write_nothing(tmp_path, monkeypatch, capsys, argv, rc, said):
    monkeypatch.setattr(dashboards, "OUT_DIR", str(tmp_path / "out"))
    with pytest.raises(SystemExit) as info:
        dashboards.main(argv)
    assert info.value.code == rc
    out = capsys.readouterr()
    assert said in out.out + out.err
    assert not (tmp_path / "out").exists()


def test_query_reports_an_annotation_without_events_as_a_note(monkeypatch, capsys):
    found = [("annotation Upgrades", "changes(x[5m]) > 0", "no data")]
    monkeypatch.setattr(dashboards, "empty_queries", lambda url, board: list(found))
    assert dashboards.main(["--query", "http://prometheus:9090"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("note: launchcard-fleet.json: annotation Upgrades: no data")
    assert out.endswith("http://prometheus:9090: every query of launchcard-fleet.json returned data\n")
    found.append(("Engines / Requests / all", "rate(y[5m])", "no data"))
    assert dashboards.main(["--query", "http://prometheus:9090"]) == 1
    assert capsys.readouterr().out.endswith("http://prometheus:9090: 1 of %d queries of launchcard-fleet.json returned "
                                            "no data\n" % len(dashboards.dashboard_queries(json.loads(dashboards.files()["launchcard-fleet.json"]))))
    found[:] = [("annotation Upgrades", "changes(x[5m]) > 0", "error: bad_data")]
    assert dashboards.main(["--query", "http://prometheus:9090"]) == 1
