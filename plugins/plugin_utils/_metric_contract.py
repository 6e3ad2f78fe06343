# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The metric contract: which metric names each pinned release exports, against the names the alert rules and
dashboards use.

Pure Python, no Ansible import. A contract is a YAML file in ``monitoring/contracts/`` per component and version
(``vllm-0.32.0.yml``): ``component``, ``version`` and ``metrics`` (name as Prometheus stores it -> ``type``,
``source`` where the release defines it, ``defined_as`` when the release spells it otherwise, e.g. a counter
without its ``_total``). A rule that names a metric its component's contract lacks is reported: engines rename
metrics between releases (vLLM's ``gpu_cache_usage_perc`` became ``kv_cache_usage_perc``; the router's
``sgl_router_*`` became ``smg_*``), and a rule on a name nobody exports never fires.

The files directly in ``monitoring/contracts/`` are the pinned releases, the ones the rules and dashboards are held
to; ``monitoring/contracts/unpinned/`` may hold other releases' contracts, which an upgrade to such a release is
compared with (:mod:`_contract_upgrade`).
"""

from __future__ import annotations

import glob
import json
import os
import re

import yaml

CONTRACTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                             "monitoring", "contracts")
#: Contracts of releases the collection does not pin, under the contracts directory.
UNPINNED = "unpinned"
DASHBOARDS_DIR = os.path.join(os.path.dirname(CONTRACTS_DIR), "dashboards")
#: Which component exports a metric, by the name's prefix.
PREFIXES = (("vllm:", "vllm"), ("sglang:", "sglang"), ("smg_", "sglang-router"), ("node_", "node-exporter"),
            ("launchcard_", "launchcard"))
#: Series Prometheus makes itself for every target (prometheus.io docs, "Jobs and instances": up).
PROMETHEUS_OWN = frozenset(("up",))
_KEYWORDS = frozenset(("and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                       "offset", "inf", "nan"))
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_NUMBER = re.compile(r"(?<![A-Za-z0-9_:])[0-9][0-9.]*(?:[eE][+-]?[0-9]+|ms|[smhdwy])*")  # 0.95, 1e3, 5m, 1h30m
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def load(directory=CONTRACTS_DIR):
    """``{component: contract}`` of every contract file (one version per component)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.yml"))):
        with open(path) as f:
            doc = yaml.safe_load(f)
        doc["path"] = path
        if doc["component"] in out:
            raise ValueError("two contracts for %s: %s and %s" % (doc["component"], out[doc["component"]]["path"], path))
        out[doc["component"]] = doc
    return out


def release(component, version, directory=CONTRACTS_DIR):
    """The contract of one release: the pinned one where it is that release, else ``unpinned/COMPONENT-VERSION.yml``;
    None where there is none. ``version`` is a release number (``_engine_version.VERSION``), never a path."""
    pinned = load(directory).get(component)
    if pinned is not None and str(pinned["version"]) == version:
        return pinned
    path = os.path.join(directory, UNPINNED, "%s-%s.yml" % (component, version))
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        doc = yaml.safe_load(f)
    doc["path"] = path
    return doc


def dashboard_queries(board):
    """``[(where, expr)]`` of a dashboard JSON model: every panel's targets and every annotation."""
    out = []
    for panel in board.get("panels", []):
        for target in panel.get("targets", []):
            out.append(("%s / %s" % (panel.get("title"), target.get("legendFormat", target.get("refId"))),
                        target["expr"]))
    for ann in board.get("annotations", {}).get("list", []):
        if ann.get("expr"):
            out.append(("annotation %s" % ann.get("name"), ann["expr"]))
    return out


def used_names(groups, dashboards_dir=DASHBOARDS_DIR):
    """``{component: set of names}`` the rules (``_alert_rules.rule_groups``) and the shipped dashboards name."""
    queries = [(rule["alert"], rule["expr"]) for group in groups["groups"] for rule in group["rules"]]
    for path in sorted(glob.glob(os.path.join(dashboards_dir, "*.json"))):
        with open(path) as f:
            queries += dashboard_queries(json.load(f))
    out = {}
    for dummy, expr in queries:
        for name in metric_names(expr):
            component = component_of(name)
            if component is not None:
                out.setdefault(component, set()).add(name)
    return out


def metric_names(expr):
    """The metric names a PromQL expression selects (strings, label matchers, ranges and groupings removed;
    numbers and durations too; an identifier followed by ``(`` is a function, an aggregation or a keyword)."""
    text = _STRING.sub(" ", expr)
    text = _MATCHERS.sub(" ", text)
    text = _RANGE.sub(" ", text)
    text = _GROUPING.sub(" ", text)
    text = _NUMBER.sub(" ", text)
    names = set()
    for m in _IDENT.finditer(text):
        word = m.group(0)
        rest = text[m.end():].lstrip()
        if word.lower() in _KEYWORDS or rest.startswith("("):
            continue
        names.add(word)
    return names


def component_of(name):
    """The component whose contract must hold ``name``, or None (a name of no known exporter)."""
    for prefix, component in PREFIXES:
        if name.startswith(prefix):
            return component
    return None


def unknown_metrics(groups, contracts=None):
    """``[(alert, name, why)]`` for every metric a rule names that no pinned contract holds.

    :param groups: a rules document (``_alert_rules.rule_groups``).
    """
    return unknown_in([(rule["alert"], rule["expr"]) for group in groups["groups"] for rule in group["rules"]],
                      contracts)


def unknown_in(queries, contracts=None):
    """``[(where, name, why)]`` for every metric the PromQL ``queries`` (``[(where, expr)]``: a rule, a
    dashboard's panel) name that no pinned contract holds."""
    contracts = load() if contracts is None else contracts
    out = []
    for where, expr in queries:
        for name in sorted(metric_names(expr)):
            if name in PROMETHEUS_OWN:
                continue
            component = component_of(name)
            if component is None:
                out.append((where, name, "no component exports metrics named like it"))
            elif component not in contracts:
                out.append((where, name, "no contract for %s" % component))
            elif name not in contracts[component]["metrics"]:
                out.append((where, name, "%s %s does not export it (%s)" % (
                    component, contracts[component]["version"], os.path.basename(contracts[component]["path"]))))
    return out
