# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""End to end: a frozen engine is restarted by its liveness timer, serves again, and the alert fires (issue #43
item 7).

A sandbox fleet of one (inventories/liveness/gpus.ini, 198.18.43.0/24, state dir .sandbox-liveness/): the stand-in
vLLM runs natively, its liveness timer probes it every 5 s with a 3 s timeout and restarts it after 2 failures in
a row; the same host is the fleet's Prometheus (launchcard_monitoring: playbooks/monitoring.yml installs Debian's
node exporter and Prometheus, scraping and evaluating every 5 s; the deploy writes the plan's targets). The test
stops the engine's main process (SIGSTOP: its port stays bound, requests hang, as vLLM's with a hung engine core,
vllm-project/vllm#39863) while a run lock is held: the timer stands aside, and Prometheus, which scrapes the
restart counter at 0, holds LaunchcardLivenessRestarts inactive; once the lock is gone the timer restarts the unit,
logs why, counts the restart in node_exporter's textfile, the engine answers a completion again, and
LaunchcardLivenessRestarts fires, naming the unit and the host.
"""

from __future__ import annotations

import json
import re
import os
import shutil
import time
import urllib.parse
import urllib.request

import pytest

from playbook_output import recap
from sandbox_cli import Fleet

INVENTORY = "inventories/liveness/gpus.ini"
FLEET = Fleet(INVENTORY, ".sandbox-liveness")
HOST = "live-gpu"
ADDRESS = "198.18.43.11"
UNIT = "launchcard-glm-5.3-flash-vllm-aggregated-0.service"
PROBE = "launchcard-glm-5.3-flash-vllm-aggregated-0-liveness.service"
TIMER = "launchcard-glm-5.3-flash-vllm-aggregated-0-liveness.timer"
TEXTFILE = "/var/lib/prometheus/node-exporter/launchcard-liveness-%s.prom" % UNIT
LOCK = "/var/lib/launchcard/lock.json"
# Debian's prometheus serves on 0.0.0.0:9090 (docs/observability.md)
PROMETHEUS = "http://%s:9090" % ADDRESS
ALERT = "LaunchcardLivenessRestarts"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("systemd-nspawn"),
                                reason="the sandbox fleet needs root and systemd-nspawn")


def ssh(command):
    res = FLEET.ssh(HOST, command, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout.strip()


def show(unit, prop):
    return ssh("systemctl show -p %s --value -- %s" % (prop, unit))


def until(what, check, tries=600):
    """Poll ``check`` (every 0.5 s, at most ``tries`` times) until it returns a true value; that value."""
    for dummy in range(tries):
        got = check()
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError("never: %s" % what)


def completion(model):
    body = json.dumps({"model": model, "prompt": "ping", "max_tokens": 1}).encode()
    req = urllib.request.Request("http://%s:8000/v1/completions" % ADDRESS, data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.status, json.loads(resp.read())


def prometheus(path, **query):
    """The ``data`` of Prometheus's HTTP API answer at ``path``."""
    url = PROMETHEUS + path + ("?" + urllib.parse.urlencode(query) if query else "")
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())["data"]


def alert_rule():
    """The loaded LaunchcardLivenessRestarts rule, as /api/v1/rules shows it (its state, health, query)."""
    return next(r for g in prometheus("/api/v1/rules", type="alert")["groups"] for r in g["rules"] if r["name"] == ALERT)


def restart_alerts():
    """The LaunchcardLivenessRestarts alerts Prometheus holds (pending or firing)."""
    return [a for a in prometheus("/api/v1/alerts")["alerts"] if a["labels"]["alertname"] == ALERT]


@pytest.fixture(scope="module")
def deployed():
    try:
        up = FLEET.up()
        assert up.returncode == 0, up.stdout + up.stderr
        # node exporter (its textfile directory) and Prometheus first, as a site sets a fleet up
        res = FLEET.playbook("monitoring")
        assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
        res = FLEET.playbook("deploy")
        assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
        yield FLEET.plan()
    finally:
        if not os.environ.get("LAUNCHCARD_KEEP_FLEET"):
            FLEET.down()


def test_the_timer_runs_and_a_second_deploy_changes_nothing(deployed):
    assert show(TIMER, "ActiveState") == "active"
    assert show(TIMER, "UnitFileState") == "enabled"
    # the probe ran at least once (its first run is OnActiveSec after the timer started)
    until("the probe ran", lambda: show(PROBE, "InvocationID"))
    res = FLEET.playbook("deploy", "-v")
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    assert recap(res.stdout)[HOST]["changed"] == 0, res.stdout[-6000:]
    # settled from the preflight call's reading alone: the liveness units are no reason to call the converge
    converge = res.stdout.split("Units | Converge every unit of this host", 1)[1].split("\nTASK [", 1)[0]
    assert re.search(r"^ {4}settled: true$", converge, re.M), converge[-3000:]


def test_a_frozen_engine_waits_out_the_run_lock_then_is_restarted_and_serves_again(deployed):
    model = next(i["served_model"] for hp in deployed["hosts"].values() for i in hp["instances"])
    before = show(UNIT, "InvocationID")
    lock = {"version": 1, "run_id": "liveness-e2e", "user": "e2e", "controller": "test", "playbook": "deploy.yml",
            "card": "sha256:0", "scope": "host", "since": "2026-12-04T00:00:00Z"}
    ssh("printf '%%s' '%s' > %s" % (json.dumps(lock), LOCK))
    main_pid = show(UNIT, "MainPID")
    ssh("kill -STOP %s" % main_pid)
    try:
        # three probe runs while the lock is held: none restarts the frozen engine
        seen = {show(PROBE, "InvocationID")}
        until("three probe runs under the lock", lambda: seen.add(show(PROBE, "InvocationID")) or len(seen) > 3)
        assert show(UNIT, "InvocationID") == before
        assert "restarting" not in ssh("journalctl -q -o cat -u %s" % PROBE)
        # Prometheus scrapes the counter at 0 from live-gpu's node exporter (the target the deploy wrote), and
        # an evaluation of the rule after that sample leaves it inactive: no alert, pending or firing
        series = until("the counter at 0 in Prometheus", lambda: [
            s for s in prometheus("/api/v1/query", query='launchcard_liveness_restarts_total{unit="%s"}' % UNIT)["result"]
            if s["value"][1] == "0"])
        assert series[0]["metric"]["host"] == HOST and series[0]["metric"]["job"] == "launchcard-nodes", series
        seen_at = alert_rule()["lastEvaluation"]
        rule = until("an evaluation of the rule after that", lambda: alert_rule()["lastEvaluation"] != seen_at
                     and alert_rule())
        assert rule["health"] == "ok" and rule["state"] == "inactive", rule
        assert prometheus("/api/v1/query", query=rule["query"])["result"] == []
        assert restart_alerts() == []
    finally:
        ssh("rm -f %s" % LOCK)
    # the lock gone, two failed probes in a row restart the unit, which comes back active (its readiness check)
    until("the engine restarted", lambda: show(UNIT, "InvocationID") not in ("", before))
    until("the engine active again", lambda: show(UNIT, "ActiveState") == "active")
    journal = ssh("journalctl -q -o cat -u %s" % PROBE)
    assert "%s: restarting it after 2 failed probes in a row: completion: no answer within 3s" % UNIT in journal
    assert "%s: probe failed (1 of 2)" % UNIT in journal
    status, answer = completion(model)
    assert status == 200 and answer["choices"], answer
    text = until("the textfile counts the restart",
                 lambda: 'launchcard_liveness_restarts_total{unit="%s"} 1' % UNIT in ssh("cat %s" % TEXTFILE)
                 and ssh("cat %s" % TEXTFILE))
    assert "# TYPE launchcard_liveness_restarts_total counter" in text
    state = json.loads(ssh("cat /var/lib/launchcard/liveness/%s.json" % UNIT))
    assert state["restarts"] == 1
    # the secrets file is out of the probe's reach (InaccessiblePaths=)
    assert "InaccessiblePaths=-/etc/launchcard/secrets.env" in ssh("systemctl cat -- %s" % PROBE)
    # the next scrape and evaluation see the counter grow: the alert fires (the rule has no `for`), naming the
    # unit and the host, with the node target's card
    alert = until("LaunchcardLivenessRestarts firing",
                  lambda: next((a for a in restart_alerts() if a["state"] == "firing"), None))
    labels = alert["labels"]
    assert (labels["unit"], labels["host"], labels["card"], labels["job"], labels["severity"]) == (
        UNIT, HOST, "glm-5.3-flash", "launchcard-nodes", "warning"), labels
    assert alert["annotations"]["summary"] == "%s was restarted by its liveness check on %s" % (UNIT, HOST), alert
    assert len(restart_alerts()) == 1, restart_alerts()
