# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The alert rules (issue 43, item 4): the shipped file is what _alert_rules makes, and Prometheus's own promtool
passes every case of monitoring/launchcard-alerts.test.yml (promtool comes from Debian's prometheus package, which
make host-deps installs: a machine without it fails here)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.launchcard.inference.plugins.plugin_utils import _alert_rules as alert_rules

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MONITORING = os.path.join(ROOT, "monitoring")
RULES = os.path.join(MONITORING, "launchcard-alerts.yml")
CASES = os.path.join(MONITORING, "launchcard-alerts.test.yml")


def promtool():
    path = shutil.which("promtool")
    assert path, "promtool is missing: make host-deps installs Debian's prometheus package, which has it"
    return path


def _test_rules(directory):
    return subprocess.run([promtool(), "test", "rules", os.path.basename(CASES)], cwd=directory,
                          capture_output=True, text=True, check=False)


def _with_rules(tmp_path, groups):
    (tmp_path / "launchcard-alerts.yml").write_text(yaml.safe_dump(groups, sort_keys=False))
    shutil.copy(CASES, str(tmp_path))
    return str(tmp_path)


def test_the_shipped_rules_file_is_what_the_rules_module_makes():
    res = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "alert_rules.py"), "--check"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr


def test_promtool_checks_the_rules_and_passes_every_case():
    check = subprocess.run([promtool(), "check", "rules", RULES], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: %d rules found" % len(alert_rules.rule_groups()["groups"][0]["rules"]) in check.stdout
    res = _test_rules(MONITORING)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


def test_every_rule_has_a_case_that_fires_and_one_that_must_not():
    with open(CASES) as f:
        cases = yaml.safe_load(f)
    fires, silent = set(), set()
    for case in cases["tests"]:
        for check in case["alert_rule_test"]:
            (fires if check["exp_alerts"] else silent).add(check["alertname"])
    alerts = set(r["alert"] for r in alert_rules.rule_groups()["groups"][0]["rules"])
    assert fires == alerts and silent == alerts


@pytest.mark.parametrize("thresholds,alert", [
    ({"kv_cache_ratio": 0.96}, "LaunchcardKVCacheFull"),
    ({"wedged_for": "15m"}, "LaunchcardEngineWedged"),
    ({"disk_free_ratio": 0.01}, "LaunchcardWeightsDiskNearlyFull"),
])
def test_the_cases_hold_the_thresholds_a_looser_rule_fails_them(thresholds, alert, tmp_path):
    res = _test_rules(_with_rules(tmp_path, alert_rules.rule_groups(thresholds)))
    assert res.returncode != 0
    assert "alertname: %s" % alert in res.stdout + res.stderr


def test_a_rule_that_selects_no_series_fails_its_case(tmp_path):
    groups = alert_rules.rule_groups()
    for rule in groups["groups"][0]["rules"]:
        if rule["alert"] == "LaunchcardRouterNoHealthyWorkers":
            rule["expr"] = rule["expr"].replace("smg_worker_health", "sgl_router_worker_health")  # a former name
    res = _test_rules(_with_rules(tmp_path, groups))
    assert res.returncode != 0 and "alertname: LaunchcardRouterNoHealthyWorkers" in res.stdout + res.stderr


def test_thresholds_a_site_sets_are_checked():
    with pytest.raises(ValueError, match="unknown alert threshold"):
        alert_rules.rule_groups({"kv_cache_percent": 95})
    rules = alert_rules.rule_groups({"ttft_p95_seconds": 4})["groups"][0]["rules"]
    ttft = [r for r in rules if r["alert"] == "LaunchcardTimeToFirstTokenHigh"][0]
    assert ttft["expr"].count(") > 4)") == 2
