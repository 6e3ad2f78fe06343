# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The http_health module in-process, against real HTTP servers on 127.0.0.1.

Each test starts ``http.server`` servers in threads that answer
``GET /health`` and ``POST /v1/completions`` the way the engines do (vLLM and
SGLang: 200 when serving, 503 while starting or dead; an OpenAI-style
completion body), and runs the module's main() against them over real
sockets.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.modules import http_health


class Engine(object):
    """One fake engine: what /health answers, what a completion returns, and what it was asked."""

    def __init__(self, health=200, healthy_after=0, completion_status=200, completion_body=None, delay=0.0):
        self.health = health
        self.healthy_after = healthy_after  # answer 503 to this many health probes first
        self.completion_status = completion_status
        self.completion_body = completion_body if completion_body is not None else json.dumps(
            {"id": "cmpl-1", "object": "text_completion", "model": "m",
             "choices": [{"index": 0, "text": " pong", "finish_reason": "length"}]})
        self.delay = delay
        self.requests = []
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status, body):
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                engine.requests.append(("GET", self.path, None))
                time.sleep(engine.delay)
                if self.path != "/health":
                    return self._answer(404, "{}")
                probes = sum(1 for r in engine.requests if r[1] == "/health")
                status = 503 if probes <= engine.healthy_after else engine.health
                self._answer(status, "" if status == 200 else '{"error": "not ready"}')

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                engine.requests.append(("POST", self.path, body))
                if self.path != "/v1/completions":
                    return self._answer(404, "{}")
                self._answer(engine.completion_status, engine.completion_body)

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/health" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.daemon = True
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def engines():
    started = []

    def start(**kwargs):
        engine = Engine(**kwargs)
        started.append(engine)
        return engine

    yield start
    for engine in started:
        engine.close()


@pytest.fixture
def closed_port_url():
    """A URL on 127.0.0.1 where nothing listens (connection refused).

    The port stays bound (not listening) for the test, so no other process
    can start listening on it meanwhile.
    """
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    yield "http://127.0.0.1:%d/health" % sock.getsockname()[1]
    sock.close()


def run_module(capsys, rc=0, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            http_health.main()
    result = json.loads(capsys.readouterr().out)
    assert info.value.code == rc, result
    return result


def test_healthy_endpoints_pass_in_one_call(engines, capsys):
    vllm, router = engines(), engines()
    result = run_module(capsys, timeout=10, interval=0.1, endpoints=[
        {"name": "vllm", "url": vllm.url}, {"name": "router", "url": router.url}])
    assert result["changed"] is False
    assert result["unhealthy"] == []
    assert [(e["name"], e["healthy"], e["detail"], e["probe"]) for e in result["endpoints"]] == [
        ("vllm", True, "health 200", "health"), ("router", True, "health 200", "health")]
    assert vllm.requests == [("GET", "/health", None)]
    assert router.requests == [("GET", "/health", None)]


def test_unhealthy_endpoint_fails_with_a_message_naming_it(engines, capsys):
    good, dead = engines(), engines(health=503)
    result = run_module(capsys, rc=1, timeout=3, interval=0.1, endpoints=[
        {"name": "launchcard-a.service", "url": good.url}, {"name": "launchcard-b.service", "url": dead.url}])
    assert result["failed"] is True
    assert result["msg"].startswith("not healthy: launchcard-b.service (health answered 503, after ")
    assert result["unhealthy"] == ["launchcard-b.service"]
    assert [e["healthy"] for e in result["endpoints"]] == [True, False]
    # the dead one was polled until the deadline, the good one once
    assert len(dead.requests) >= 3
    assert len(good.requests) == 1


def test_an_endpoint_that_comes_up_late_is_waited_for(engines, capsys):
    loading = engines(healthy_after=3)
    result = run_module(capsys, timeout=20, interval=0.1, endpoints=[{"name": "loading", "url": loading.url}])
    assert result["unhealthy"] == []
    assert result["endpoints"][0]["healthy"] is True
    assert len(loading.requests) == 4


def test_timeout_on_a_port_that_never_opens(capsys, closed_port_url):
    url = closed_port_url
    started = time.monotonic()
    result = run_module(capsys, rc=1, timeout=1, interval=0.2, endpoints=[{"name": "never", "url": url}])
    elapsed = time.monotonic() - started
    assert result["msg"].startswith("not healthy: never (no answer yet (")
    assert "refused" in result["msg"].lower()
    assert result["endpoints"][0]["elapsed_s"] >= 1.0
    # the module rounds its elapsed time to 0.1 s before comparing it with the timeout
    assert 0.9 <= elapsed < 10


def test_completion_probe_sends_one_token_and_reports_the_text(engines, capsys):
    engine = engines()
    result = run_module(capsys, timeout=10, interval=0.1, endpoints=[
        {"name": "router", "url": engine.url, "probe": "completion", "model": "zai-org/GLM-5.3-Flash"}])
    assert result["unhealthy"] == []
    assert result["endpoints"][0]["detail"] == "health 200, completion ' pong'"
    posts = [r for r in engine.requests if r[0] == "POST"]
    assert len(posts) == 1
    dummy, path, body = posts[0]
    assert path == "/v1/completions"
    assert body["max_tokens"] == 1
    assert body["model"] == "zai-org/GLM-5.3-Flash"


def test_health_200_with_a_broken_completion_is_unhealthy(engines, capsys):
    wedged = engines(completion_status=500, completion_body='{"error": "engine dead"}')
    empty = engines(completion_body='{"choices": []}')
    result = run_module(capsys, rc=1, timeout=1, interval=0.2, endpoints=[
        {"name": "wedged", "url": wedged.url, "probe": "completion", "model": "m"},
        {"name": "empty", "url": empty.url, "probe": "completion", "model": "m"}])
    details = dict((e["name"], e["detail"]) for e in result["endpoints"])
    assert details["wedged"] == 'completion answered 500: {"error": "engine dead"}'
    assert details["empty"] == 'completion answered 200 without choices: {"choices": []}'
    assert result["unhealthy"] == ["wedged", "empty"]
    assert "wedged (completion answered 500" in result["msg"]


def test_health_probe_does_not_send_a_completion(engines, capsys):
    engine = engines(completion_status=500)
    result = run_module(capsys, timeout=5, interval=0.1, endpoints=[{"name": "encoder", "url": engine.url}])
    assert result["unhealthy"] == []
    assert [r for r in engine.requests if r[0] == "POST"] == []


def test_check_mode_probes_once_and_does_not_fail(engines, capsys):
    dead = engines(health=503)
    result = run_module(capsys, timeout=5, interval=0.1, _ansible_check_mode=True,
                        endpoints=[{"name": "dead", "url": dead.url}])
    assert "failed" not in result
    assert result["unhealthy"] == ["dead"]
    assert len(dead.requests) == 1


def _record_args(tmp_path, run_id="run-1", held=()):
    units = tmp_path / "units"
    units.mkdir(exist_ok=True)
    (units / "launchcard-a.service").write_text("[Service]\nExecStart=/bin/true\n")
    lock = tmp_path / "lock.json"
    return {"card": {"key": "c.json", "sha256": "0" * 64, "repo": "o/m", "revision": "1" * 40},
            "instances": [{"id": "a", "unit": "launchcard-a.service"}], "runtime": {"kind": "native"},
            "release_lock": {"run_id": run_id, "paths": [{"path": str(lock), "scope": "host"}]},
            "path": str(tmp_path / "state.json"), "directory": str(units)}


def test_a_healthy_gate_records_the_host_and_releases_the_lock_in_the_same_call(engines, capsys, tmp_path):
    from ansible_collections.launchcard.inference.plugins.module_utils import _lock
    good = engines()
    rec = _record_args(tmp_path)
    _lock.apply_all("present", rec["release_lock"]["paths"], {"run_id": "run-1"})
    first = run_module(capsys, timeout=5, interval=0.1, endpoints=[{"name": "a", "url": good.url}], record=rec)
    assert first["changed"] is True and first["recorded"] is True
    assert first["lock"] == {"released": [str(tmp_path / "lock.json")], "held_by": []}
    written = json.loads((tmp_path / "state.json").read_text())
    assert written["card"]["revision"] == "1" * 40 and list(written["units"]) == ["launchcard-a.service"]
    # the same state again: nothing written (idempotent), no lock left to release
    again = run_module(capsys, timeout=5, interval=0.1, endpoints=[{"name": "a", "url": good.url}], record=rec)
    assert again["changed"] is False and again["recorded"] is False
    assert again["lock"] == {"released": [], "held_by": []}
    assert json.loads((tmp_path / "state.json").read_text()) == written


def test_an_unhealthy_gate_records_nothing_and_keeps_the_lock(engines, capsys, tmp_path):
    from ansible_collections.launchcard.inference.plugins.module_utils import _lock
    dead = engines(health=503)
    rec = _record_args(tmp_path)
    _lock.apply_all("present", rec["release_lock"]["paths"], {"run_id": "run-1"})
    result = run_module(capsys, rc=1, timeout=1, interval=0.1, endpoints=[{"name": "a", "url": dead.url}], record=rec)
    assert result["recorded"] is None and result["lock"] is None
    assert not (tmp_path / "state.json").exists()
    assert json.loads((tmp_path / "lock.json").read_text())["run_id"] == "run-1"


def test_check_mode_predicts_the_record_and_writes_nothing(engines, capsys, tmp_path):
    dead = engines(health=503)
    result = run_module(capsys, timeout=5, interval=0.1, _ansible_check_mode=True,
                        endpoints=[{"name": "a", "url": dead.url}], record=_record_args(tmp_path))
    assert result["changed"] is True and result["recorded"] is True
    assert not (tmp_path / "state.json").exists()


def test_check_mode_with_diff_shows_the_record_it_would_write(engines, capsys, tmp_path):
    good = engines()
    result = run_module(capsys, timeout=5, interval=0.1, _ansible_check_mode=True, _ansible_diff=True,
                        endpoints=[{"name": "a", "url": good.url}], record=_record_args(tmp_path))
    assert result["changed"] is True and result["diff"]["before"] == ""
    assert '"revision": "%s"' % ("1" * 40) in result["diff"]["after"]
    assert not (tmp_path / "state.json").exists()
