# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every dashboard query against a real Prometheus (issue 43, item 6): tools/dashboards.py's ``empty_queries``,
the helper the sandbox e2e calls against the sandbox Prometheus, run here against Debian's Prometheus started on
127.0.0.1 (temporary config and storage, stopped by its handle) scraping, every second:

- the real sglang-router of .venv in front of one stand-in SGLang worker (tests/sandbox/standin_engine), with
  completions sent through it while the test runs;
- the recorded scrape of the real vLLM 0.32.0 (tests/unit/fixtures/metrics/vllm-0.32.0.prom) served by a
  loopback HTTP server as three instances (aggregated, prefill, decode), its counters and histograms multiplied by
  the number of scrapes served so far, so rates and quantiles move as under load;
- Debian's prometheus-node-exporter with its textfile collector reading the collection's deploy and upgrade facts.

Labels are the plan's (card, recipe, role, instance, host), as the file_sd files give them. No SGLang engine runs
here (its CPU backend needs kernels PyPI's sglang-kernel does not build): each query's SGLang half is held to the
contract only. This machine has no systemd D-Bus, so node_exporter's systemd collector exports nothing: the one
panel on it is the one query expected empty.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "sandbox"))
from test_standin_engine import Procs, free_port, http, wait_port  # noqa: E402

_spec = importlib.util.spec_from_file_location("lc_dashboards", str(ROOT / "tools" / "dashboards.py"))
dashboards = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dashboards)

VLLM_SCRAPE = ROOT / "tests" / "unit" / "fixtures" / "metrics" / "vllm-0.32.0.prom"
PROMETHEUS = "/usr/bin/prometheus"
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
CARD = "glm-5.3-flash"
#: Without systemd's D-Bus here, node_exporter's systemd collector exports nothing (its source: collector/systemd_linux.go)
NEEDS_SYSTEMD = {"Engine units by state / {{state}}"}


def growing(text, n):
    """The scrape with every counter and histogram sample multiplied by ``n`` (gauges and ``_created`` as they are)."""
    growing_families = set(re.findall(r"^# TYPE (\S+) (?:counter|histogram)$", text, re.M))
    out = []
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})? (\S+)$", line)
        if match and not match.group(1).endswith("_created"):
            family = re.sub(r"_(total|bucket|sum|count)$", "", match.group(1))
            if family in growing_families or match.group(1) in growing_families:
                line = "%s%s %r" % (match.group(1), match.group(2) or "", float(match.group(3)) * n)
        out.append(line)
    return "\n".join(out) + "\n"


class _Replay(BaseHTTPRequestHandler):
    scrapes = 0
    lock = threading.Lock()

    def do_GET(self):  # noqa: N802 (http.server's name)
        with _Replay.lock:
            _Replay.scrapes += 1
            n = _Replay.scrapes
        body = growing(VLLM_SCRAPE.read_text(), n).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def procs():
    started = Procs()
    yield started
    started.stop()


@pytest.fixture
def replay():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Replay)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _router(procs):
    port = free_port()
    proc = procs.engine("sglang", "serve", "--model-path", "org/model", "--port", str(port), "--host", "127.0.0.1")
    wait_port(port, proc=proc)
    api, metrics = free_port(), free_port()
    proc = procs.start([sys.executable, "-m", "sglang_router.launch_router", "--worker-urls",
                        "http://127.0.0.1:%d" % port, "--host", "127.0.0.1", "--port", str(api),
                        "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics),
                        "--worker-startup-check-interval", "1", "--health-check-interval-secs", "1"])
    wait_port(api, timeout=30, proc=proc)
    wait_port(metrics, timeout=30, proc=proc)
    return "http://127.0.0.1:%d" % api, metrics


def _facts(textfile_dir, deployed, upgraded=None):
    """The collection's textfile facts (monitoring/contracts/launchcard.yml), written as node_exporter reads them:
    a whole file renamed into place; a unit never upgraded has no upgrade timestamp (module_utils/_textfile_facts.py)."""
    part = textfile_dir / "launchcard.prom.part"
    unit = "launchcard-%s-vllm-aggregated-0.service" % CARD
    text = "launchcard_last_deploy_timestamp_seconds{unit=\"%s\"} %d\n" % (unit, deployed)
    if upgraded is not None:
        text += "launchcard_last_upgrade_timestamp_seconds{unit=\"%s\"} %d\n" % (unit, upgraded)
    part.write_text(text)
    os.replace(part, textfile_dir / "launchcard.prom")


def _scraped(url, name):
    status, body = http("GET", "%s/api/v1/query?query=%s" % (url, name))
    return status == 200 and bool(json.loads(body)["data"]["result"])


def _groups(replay_port, router_metrics, node_port):
    def group(port, recipe, role, engine, instance):
        return {"targets": ["127.0.0.1:%d" % port], "labels": {
            "card": CARD, "revision": "46a050be", "recipe": recipe, "role": role, "engine": engine,
            "instance": instance, "host": "lc-local"}}
    engines = [group(replay_port, "vllm-%s" % role, role, "vllm", "%s-vllm-%s-0" % (CARD, role))
               for role in ("aggregated", "prefill", "decode")]
    engines.append(group(router_metrics, "sglang-router", "router", "sglang", "%s-sglang-router-0" % CARD))
    labels = {"card": CARD, "revision": "46a050be", "host": "lc-local"}
    nodes = [{"targets": ["127.0.0.1:%d" % node_port], "labels": labels}]
    return engines, nodes


def test_every_dashboard_query_returns_data_from_a_real_prometheus(tmp_path, procs, replay):
    # make host-deps installs both: a machine without them fails here rather than skipping
    assert os.access(PROMETHEUS, os.X_OK) and os.access(NODE_EXPORTER, os.X_OK), "make host-deps"
    api, router_metrics = _router(procs)
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    started = int(time.time())
    _facts(textfile, started - 86400)  # deployed a day ago, never upgraded: its first upgrade is marked too
    node_port = free_port()
    node = procs.start([NODE_EXPORTER, "--web.listen-address=127.0.0.1:%d" % node_port, "--collector.disable-defaults",
                        "--collector.textfile", "--collector.textfile.directory=%s" % textfile, "--collector.systemd"])
    wait_port(node_port, proc=node)
    engines, nodes = _groups(replay, router_metrics, node_port)
    (tmp_path / "launchcard-engines.json").write_text(json.dumps(engines))
    (tmp_path / "launchcard-nodes.json").write_text(json.dumps(nodes))
    (tmp_path / "prometheus.yml").write_text(json.dumps({  # JSON is YAML
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [
            {"job_name": "launchcard-engines", "file_sd_configs": [{"files": [str(tmp_path / "launchcard-engines.json")]}]},
            {"job_name": "launchcard-nodes", "file_sd_configs": [{"files": [str(tmp_path / "launchcard-nodes.json")]}]},
        ]}))
    port = free_port()
    prom = procs.start([PROMETHEUS, "--config.file=%s" % (tmp_path / "prometheus.yml"),
                        "--storage.tsdb.path=%s" % (tmp_path / "data"), "--web.listen-address=127.0.0.1:%d" % port])
    wait_port(port, timeout=30, proc=prom)
    url = "http://127.0.0.1:%d" % port
    # the port opens before the storage is ready: until then the API answers 503 (Prometheus's /-/ready)
    deadline = time.time() + 30
    while http("GET", url + "/-/ready")[0] != 200:
        assert time.time() < deadline and prom.poll() is None, "Prometheus never became ready"
        time.sleep(0.5)
    board = json.loads((ROOT / "monitoring" / "dashboards" / "launchcard-fleet.json").read_text())

    deadline = time.time() + 45
    sent, redeployed = 0, False
    while True:
        # load through the real router, and one deploy and one upgrade once Prometheus has the first facts
        try:
            status, dummy = http("POST", api + "/v1/completions", {"model": "org/model", "prompt": "hi",
                                                                   "max_tokens": 4})
        except OSError:  # the router may drop a connection while it checks its worker
            status = None
        sent += status == 200
        if not redeployed and _scraped(url, "launchcard_last_deploy_timestamp_seconds"):
            _facts(textfile, time.time(), time.time())
            redeployed = True
        empty = dashboards.empty_queries(url, board, {"card": CARD}, start=started, end=time.time(), step=1)
        if {w for w, dummy, dummy in empty} <= NEEDS_SYSTEMD or time.time() > deadline:
            break
        time.sleep(1)
    assert sent > 0
    report = "\n".join("%s: %s\n  %s" % (w, why, q) for w, q, why in empty)
    assert {w for w, dummy, dummy in empty} == NEEDS_SYSTEMD, report
    # the helper tells an absent metric from a present one: a card nobody serves has no data anywhere
    none = dashboards.empty_queries(url, board, {"card": "no-such-card"}, start=started, end=time.time(), step=1)
    assert len(none) == len(dashboards.dashboard_queries(board))
    assert subprocess.run(
        ["promtool", "check", "config", str(tmp_path / "prometheus.yml")], capture_output=True, check=False
    ).returncode == 0
