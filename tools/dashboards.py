#!/usr/bin/env python
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""monitoring/dashboards/*.json: the collection's Grafana dashboards, built with grafana-foundation-sdk.

Every metric a panel names comes from plugins/plugin_utils/_alert_rules.py (the one home of metric names) and must
be in the pinned contracts (monitoring/contracts/, tests/unit/test_dashboards.py). Series carry the scrape targets'
labels (plugins/plugin_utils/_scrape_targets.py); the dashboard variables card, recipe, role and host select them.

    python tools/dashboards.py                  rewrite the files when they differ (make docs)
    python tools/dashboards.py --check          exit 1 when a file is not what this module makes
    python tools/dashboards.py --query URL      run every query against the Prometheus at URL (its HTTP API) and
                                                list those that returned no data (exit 1 when a panel's did; an
                                                annotation with no events is a note)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".collections"))
OUT_DIR = os.path.join(ROOT, "monitoring", "dashboards")

#: The dashboard variables, each a label of the scrape targets (``_scrape_targets.LABELS``), in their order.
VARIABLES = ("card", "recipe", "role", "host")
#: What ``--query`` puts for Grafana's own interval variables. grafana/grafana#77234: $__rate_interval is
#: max($__interval + scrape interval, 4 * scrape interval), 1m at Prometheus's default 15s scrape interval.
INTERVALS = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h"}
SEL = ", ".join('%s=~"$%s"' % (v, v) for v in VARIABLES)  # every engine and router series carries all four
NODE_SEL = 'card=~"$card", host=~"$host"'  # node exporter targets carry card and host only
PERCENTILES = (0.5, 0.95, 0.99)
RATE = "[$__rate_interval]"


def _names():
    """The one home of metric names (plugins/plugin_utils/_alert_rules.py)."""
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _alert_rules
    return _alert_rules


def _sel(role=None):
    return SEL + (', role="%s"' % role if role else "")


def _either(template, vllm, sglang, **kw):
    """One query over both engines; each half keeps its ``engine`` or ``instance`` label, so ``or`` drops none."""
    return "(%s) or (%s)" % (template.format(m=vllm, **kw), template.format(m=sglang, **kw))


def _quantile(q, vllm_bucket, sglang_bucket, by, role=None):
    return _either("histogram_quantile({q}, sum by ({by}, le) (rate({m}{{{s}}}%s)))" % RATE, vllm_bucket,
                   sglang_bucket, q=q, by=by, s=_sel(role))


def panels():
    """``[(row title, [(panel title, unit, [(legend, expr)])])]``: the fleet overview, one home for the queries
    the dashboard shows and ``--query`` runs."""
    m = _names()
    by = "card, instance"
    return [
        ("Fleet", [
            ("Instances up by role", "short", [
                ("{{role}} up", "sum by (role) (up{%s})" % SEL),
                ("{{role}} down", "sum by (role) (1 - up{%s})" % SEL)]),
            ("Engine units by state", "short", [
                ("{{state}}", 'count by (state) (%s{%s, %s} == 1)' % (m.NODE_UNIT_STATE, NODE_SEL, m.UNIT_MATCH))]),
            ("Requests per second", "reqps", [
                ("{{instance}}", _either("sum by (%s) (rate({m}{{%s}}%s))" % (by, SEL, RATE), m.VLLM_REQUESTS,
                                         m.SGLANG_REQUESTS))]),
            ("Time to first token", "s", [
                ("{{engine}} p%g" % (q * 100), _quantile(q, m.VLLM_TTFT_BUCKET, m.SGLANG_TTFT_BUCKET, "engine"))
                for q in PERCENTILES]),
            ("Inter-token latency", "s", [
                ("{{engine}} p%g" % (q * 100), _quantile(q, m.VLLM_ITL_BUCKET, m.SGLANG_ITL_BUCKET, "engine"))
                for q in PERCENTILES]),
            ("Tokens per second", "short", [
                ("{{instance}} generated", _either("sum by (%s) (rate({m}{{%s}}%s))" % (by, SEL, RATE),
                                                   m.VLLM_GENERATION_TOKENS, m.SGLANG_GENERATION_TOKENS)),
                ("{{instance}} prompt", _either("sum by (%s) (rate({m}{{%s}}%s))" % (by, SEL, RATE),
                                                m.VLLM_PROMPT_TOKENS, m.SGLANG_PROMPT_TOKENS))]),
            ("KV cache use", "percentunit", [
                ("{{instance}}", _either("max by (%s) ({m}{{%s}})" % (by, SEL), m.VLLM_KV_USAGE, m.SGLANG_KV_USAGE))]),
            ("Queue", "short", [
                ("{{instance}} waiting", _either("sum by (%s) ({m}{{%s}})" % (by, SEL), m.VLLM_WAITING,
                                                 m.SGLANG_WAITING)),
                ("{{instance}} running", _either("sum by (%s) ({m}{{%s}})" % (by, SEL), m.VLLM_RUNNING,
                                                 m.SGLANG_RUNNING))]),
        ]),
        ("Prefill", [
            # SGLang's PD prefill observes no time to first token: its requests' latency, which ends with the prefill
            ("Prefill latency p95", "s", [
                ("{{instance}}", _quantile(0.95, m.VLLM_TTFT_BUCKET, m.SGLANG_E2E_LATENCY_BUCKET, by, "prefill"))]),
            ("Prefill prompt tokens per second", "short", [
                ("{{instance}}", _either("sum by (%s) (rate({m}{{%s}}%s))" % (by, _sel("prefill"), RATE),
                                         m.VLLM_PROMPT_TOKENS, m.SGLANG_PROMPT_TOKENS))]),
            ("Prefill queue", "short", [
                ("{{instance}}", _either("sum by (%s) ({m}{{%s}})" % (by, _sel("prefill")), m.VLLM_WAITING,
                                         m.SGLANG_WAITING))]),
        ]),
        ("Decode", [
            ("Decode inter-token latency p95", "s", [
                ("{{instance}}", _quantile(0.95, m.VLLM_ITL_BUCKET, m.SGLANG_ITL_BUCKET, by, "decode"))]),
            ("Decode tokens per second", "short", [
                ("{{instance}}", _either("sum by (%s) (rate({m}{{%s}}%s))" % (by, _sel("decode"), RATE),
                                         m.VLLM_GENERATION_TOKENS, m.SGLANG_GENERATION_TOKENS))]),
            ("Decode KV cache use", "percentunit", [
                ("{{instance}}", _either("max by (%s) ({m}{{%s}})" % (by, _sel("decode")), m.VLLM_KV_USAGE,
                                         m.SGLANG_KV_USAGE))]),
        ]),
        ("Router", [
            ("Router requests per second", "reqps", [
                ("{{instance}}", "sum by (%s) (rate(%s{%s}%s))" % (by, m.ROUTER_REQUESTS, _sel("router"), RATE))]),
            ("Router request duration p95", "s", [
                ("{{instance}}", "histogram_quantile(0.95, sum by (%s, le) (rate(%s{%s}%s)))" % (
                    by, m.ROUTER_DURATION_BUCKET, _sel("router"), RATE))]),
            ("Healthy workers", "short", [
                ("{{instance}}", "sum by (%s) (%s{%s})" % (by, m.ROUTER_WORKER_HEALTH, _sel("router")))]),
            ("Requests in flight per worker", "short", [
                ("{{instance}} {{worker}}",
                 "sum by (%s, worker) (%s{%s})" % (by, m.ROUTER_WORKER_ACTIVE, _sel("router")))]),
        ]),
    ]


def annotations():
    """``[(name, color, expr)]``: a deploy or an upgrade that changed a unit, from the textfile facts: a mark
    while the unit's timestamp is under two minutes old. Not ``changes()``: a unit's first upgrade (or deploy) adds
    its series with one value, which ``changes()`` never counts (module_utils/_textfile_facts.py writes none before)."""
    m = _names()
    return [("Deploys", "blue", "%s{%s} > time() - 120" % (m.LAST_DEPLOY, NODE_SEL)),
            ("Upgrades", "purple", "%s{%s} > time() - 120" % (m.LAST_UPGRADE, NODE_SEL))]


def queries():
    """``[(where, expr)]``: every query the dashboard runs, panels and annotations (the contract test reads it)."""
    out = []
    for row, items in panels():
        for title, dummy, targets in items:
            out.extend(("%s / %s / %s" % (row, title, legend), expr) for legend, expr in targets)
    out.extend(("annotation %s" % name, expr) for name, dummy, expr in annotations())
    return out


def fleet_dashboard():
    """The fleet overview (``launchcard-fleet.json``) as Grafana's dashboard JSON model (a dict)."""
    from grafana_foundation_sdk.builders import dashboard as gd
    from grafana_foundation_sdk.builders import prometheus as gp
    from grafana_foundation_sdk.builders import timeseries as gt
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh

    ds = DataSourceRef(type_val="prometheus", uid="${datasource}")
    board = (gd.Dashboard("launchcard fleet").uid("launchcard-fleet").tags(["launchcard"]).refresh("30s")
             .time("now-3h", "now").timezone("browser")
             .description("A launchcard.inference fleet per card: engines and routers from the plan's scrape targets. "
                          "Generated by tools/dashboards.py; edit that, not this.")
             .with_variable(gd.DatasourceVariable("datasource").label("Prometheus").type("prometheus")))
    for i, var in enumerate(VARIABLES):
        # each variable lists the values left by the ones before it (the card's recipes, their roles, hosts)
        scope = ", ".join('%s=~"$%s"' % (v, v) for v in VARIABLES[:i]) or 'card!=""'
        board = board.with_variable(
            gd.QueryVariable(var).label(var).datasource(ds).query("label_values(up{%s}, %s)" % (scope, var))
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).multi(True).include_all(True).all_value(".*"))
    for name, color, expr in annotations():
        board = board.annotation(gd.AnnotationQuery().name(name).datasource(ds).enable(True).icon_color(color)
                                 .expr(expr))
    for row, items in panels():
        board = board.with_row(gd.Row(row))
        for title, unit, targets in items:
            panel = gt.Panel().title(title).datasource(ds).unit(unit).height(8).span(8)
            for n, (legend, expr) in enumerate(targets):
                panel = panel.with_target(gp.Dataquery().expr(expr).legend_format(legend).ref_id(chr(ord("A") + n)))
            board = board.with_panel(panel)
    return json.loads(json.dumps(board.build(), cls=JSONEncoder))


def files():
    """``{file name: text}`` of every dashboard, sorted JSON with a final newline."""
    return {"launchcard-fleet.json": json.dumps(fleet_dashboard(), indent=2, sort_keys=True) + "\n"}


def dashboard_queries(board):
    """``[(where, expr)]`` of a dashboard JSON model (plugins/plugin_utils/_metric_contract.py, which an upgrade's
    check of the contracts reads too)."""
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _metric_contract
    return _metric_contract.dashboard_queries(board)


def substitute(expr, values=None):
    """``expr`` with the dashboard's variables put in: ``values`` (name -> regex), else ``.*`` (Grafana's
    "All", the variables' ``allValue``), and Grafana's interval variables (:data:`INTERVALS`)."""
    values = dict(values or {})

    def put(match):
        name = match.group(1) or match.group(2)
        if name in INTERVALS:
            return INTERVALS[name]
        if name in VARIABLES or name == "datasource":
            return values.get(name, ".*")
        raise ValueError("unknown dashboard variable $%s in %s" % (name, expr))
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", put, expr)


def empty_queries(prometheus, board, values=None, start=None, end=None, step=15, timeout=10.0):
    """``[(where, expr, why)]`` for every query of ``board`` (a dashboard JSON model) that returned no data
    from the Prometheus HTTP API at ``prometheus`` (``http://HOST:PORT``), run as Grafana runs it: a range query
    (``/api/v1/query_range``) from ``start`` (``end`` less an hour) to ``end`` (now), the variables substituted
    (:func:`substitute`). A query that errs is listed with the error; one whose every point is NaN (a quantile of
    a histogram with no new observations) as no data."""
    end = time.time() if end is None else end
    start = end - 3600 if start is None else start
    out = []
    for where, expr in dashboard_queries(board):
        query = substitute(expr, values)
        params = {"query": query, "start": "%.3f" % start, "end": "%.3f" % end, "step": str(step)}
        url = prometheus.rstrip("/") + "/api/v1/query_range?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:  # nosec: the operator's own Prometheus
                answer = json.load(resp)
        except urllib.error.HTTPError as exc:
            try:  # Prometheus's API errors are JSON; a server still starting answers 503 in plain text
                answer = json.load(exc)
            except ValueError:
                out.append((where, query, "no answer: HTTP %d %s" % (exc.code, exc.reason)))
                continue
        except (OSError, ValueError) as exc:
            out.append((where, query, "no answer: %s" % exc))
            continue
        if answer.get("status") != "success":
            out.append((where, query, "error: %s" % answer.get("error")))
        elif not answer["data"]["result"]:
            out.append((where, query, "no data"))
        elif all(v in ("NaN", "+Inf", "-Inf") for r in answer["data"]["result"] for dummy, v in r["values"]):
            out.append((where, query, "no data: every point is NaN or infinite"))
    return out


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="tools/dashboards.py", description="Write monitoring/dashboards/*.json (the default, make docs), check "
        "them, or run their queries against a Prometheus.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 when a file is not what this module makes; "
                      "write nothing")
    mode.add_argument("--query", metavar="URL", help="run every query against the Prometheus HTTP API at URL "
                      "(http://HOST:9090); list those that returned no data, exit 1 when a panel's did (an "
                      "annotation with no events is a note)")
    args = parser.parse_args(argv)
    if args.query is not None:
        url = urllib.parse.urlsplit(args.query)
        if url.scheme not in ("http", "https") or not url.netloc:
            parser.error("argument --query: %r is not a Prometheus URL (http://HOST:PORT)" % args.query)
    return args


def main(argv):
    args = parse_args(argv)
    if args.query is not None:
        rc, empty, total, names = 0, 0, 0, sorted(files())
        for name in names:
            with open(os.path.join(OUT_DIR, name)) as f:
                board = json.load(f)
            total += len(dashboard_queries(board))
            for where, query, why in empty_queries(args.query, board):
                # an annotation marks events (an upgrade): none in the range is no fault of the query
                event = where.startswith("annotation ") and why.startswith("no data")
                rc, empty = (rc, empty) if event else (1, empty + 1)
                print("%s%s: %s: %s%s\n    %s" % ("note: " if event else "", name, where, why,
                                                  " (no events in the last hour)" if event else "", query))
        # a run that finds nothing wrong still says what it ran
        print("%s: %d of %d queries of %s returned no data" % (args.query, empty, total, ", ".join(names))
              if empty else "%s: every query of %s returned data" % (args.query, ", ".join(names)))
        return rc
    rc = 0
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, want in sorted(files().items()):
        path = os.path.join(OUT_DIR, name)
        try:
            with open(path) as f:
                have = f.read()
        except IOError:
            have = None
        if have == want:
            continue
        if args.check:
            sys.stderr.write("%s is out of date: run python tools/dashboards.py (make docs)\n" % os.path.relpath(path, ROOT))
            rc = 1
            continue
        with open(path, "w") as f:
            f.write(want)
        print("wrote %s" % os.path.relpath(path, ROOT))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
