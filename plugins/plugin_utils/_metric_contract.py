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
"""

from __future__ import annotations

import glob
import os
import re

import yaml

CONTRACTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                             "monitoring", "contracts")
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
