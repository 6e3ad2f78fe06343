# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The metric contract (issue 43, item 5): every metric a rule names is one the pinned release exports, and each
contract is checked against the release it names."""

from __future__ import annotations

import glob
import os
import re
import sys

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _alert_rules as alert_rules
from ansible_collections.launchcard.inference.plugins.plugin_utils import _metric_contract as contract

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRAPES = os.path.join(ROOT, "tests", "unit", "fixtures", "metrics")
CONTRACTS = contract.load()


def _site(component):
    """The pinned engine's installed source, from the sandbox cache (built, or waited for under its lock, as the
    engine parser tests do: tests/sandbox/sandbox_fleet realvllm.py, sglang_env.py)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
    from sandbox_fleet import realvllm, sglang_env
    if component == "vllm":
        return str(realvllm.ensure_vllm_env() / "site")
    venv = sglang_env.ensure_env().parent.parent
    (site,) = glob.glob(os.path.join(str(venv), "lib", "python3*", "site-packages"))
    return site


def _rule(expr):
    return {"groups": [{"name": "t", "rules": [{"alert": "Fake", "expr": expr}]}]}


def test_every_metric_a_rule_names_is_in_the_pinned_contract():
    assert contract.unknown_metrics(alert_rules.rule_groups(), CONTRACTS) == []


@pytest.mark.parametrize("expr,name,why", [
    ("vllm:gpu_cache_usage_perc > 0.9", "vllm:gpu_cache_usage_perc", "vllm 0.32.0 does not export it"),
    ('rate(vllm:fake_metric_total{card!=""}[5m]) > 0', "vllm:fake_metric_total", "vllm 0.32.0 does not export it"),
    ("sgl_router_worker_health == 0", "sgl_router_worker_health", "no component exports metrics named like it"),
    ("sum by (instance) (smg_workers_healthy) < 1", "smg_workers_healthy", "sglang-router 0.3.2 does not export it"),
])
def test_a_rule_naming_a_metric_the_pinned_release_lacks_is_reported(expr, name, why):
    found = contract.unknown_metrics(_rule(expr), CONTRACTS)
    assert [(a, n) for a, n, dummy in found] == [("Fake", name)]
    assert found[0][2].startswith(why)


def test_metric_names_skips_functions_labels_ranges_and_groupings():
    expr = ('histogram_quantile(0.95, sum by (card, le) (rate(vllm:time_to_first_token_seconds_bucket{le!="x", '
            'name=~"node_.+"}[5m]))) > 1e3 and on (card) up == 1 unless ignoring (le) node_load1 offset 5m')
    assert contract.metric_names(expr) == {"vllm:time_to_first_token_seconds_bucket", "up", "node_load1"}


@pytest.mark.parametrize("component,lock,pattern", [
    ("vllm", "tests/sandbox/vllm-cpu-lock.txt", r"^vllm==([0-9.]+)\+cpu"),
    ("sglang", "tests/sandbox/sglang-lock.txt", r"^sglang==([0-9.]+)"),
    ("sglang-router", "requirements.txt", r"^sglang-router==([0-9.]+)"),
])
def test_each_contract_is_for_the_release_the_collection_pins(component, lock, pattern):
    with open(os.path.join(ROOT, lock)) as f:
        pinned = re.search(pattern, f.read(), re.M).group(1)
    assert CONTRACTS[component]["version"] == pinned, "%s is pinned at %s in %s: write %s-%s.yml" % (
        component, pinned, lock, component, pinned)
    assert os.path.basename(CONTRACTS[component]["path"]) == "%s-%s.yml" % (component, pinned)


@pytest.mark.parametrize("component", ["vllm", "sglang"])
def test_each_engine_metric_is_defined_where_its_contract_cites_it(component):
    site = _site(component)
    for name, entry in CONTRACTS[component]["metrics"].items():
        path, line = entry["source"].rsplit(":", 1)
        with open(os.path.join(site, path)) as f:
            text = f.read().splitlines()[int(line) - 1]
        assert 'name="%s"' % entry.get("defined_as", name) in text, (name, entry["source"], text)


def test_each_router_metric_is_a_name_in_the_pinned_router_library():
    import sglang_router
    lib = glob.glob(os.path.join(os.path.dirname(sglang_router.__file__), "sglang_router_rs*.so"))
    assert lib, "the pinned sglang-router wheel has no Rust library"
    with open(lib[0], "rb") as f:
        data = f.read()
    for name, entry in CONTRACTS["sglang-router"]["metrics"].items():
        assert entry.get("defined_as", name).encode() in data, name  # a histogram's _bucket is added at export
    # a former name of the same metric is not: a rule on it would never fire
    assert b"sgl_router_worker_health" not in data


@pytest.mark.parametrize("component", ["vllm", "sglang-router"])
def test_a_real_scrape_of_the_pinned_release_holds_every_contract_metric_with_its_type(component):
    """tests/unit/fixtures/metrics/: the real vLLM and router, started on loopback, scraped once (its README)."""
    with open(os.path.join(SCRAPES, "%s-%s.prom" % (component, CONTRACTS[component]["version"]))) as f:
        text = f.read()
    samples = set(re.findall(r"^([A-Za-z_:][A-Za-z0-9_:]*)[{ ]", text, re.M))
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    for name, entry in CONTRACTS[component]["metrics"].items():
        assert name in samples, name
        family = entry.get("defined_as", name)
        if entry["type"] == "counter" and family == name:
            family = name[:-len("_total")]  # the text format names a counter's family without _total
        assert types.get(family, types.get(name)) == entry["type"], (name, family)
