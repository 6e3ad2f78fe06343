# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health gate policy (fake HTTP) and one real loopback server."""

from __future__ import annotations

import http.client
import http.server
import json
import socket
import socketserver
import threading
import urllib.error
import urllib.request

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils._health import (
    check_once,
    completion_url,
    wait_all,
)

HEALTH = "http://127.0.0.1:30000/health"
OK_COMPLETION = json.dumps({"id": "c", "choices": [{"index": 0, "text": " pong"}]})


def stdlib_request(url, payload=None, timeout=10.0):
    """The request contract over real HTTP: ``(status, body)``, HTTP errors returned."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(url, data=data, method="GET" if data is None else "POST",
                                 headers={"Content-Type": "application/json"} if data else {})
    try:
        with opener.open(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class FakeHTTP:
    """Answers from a script: url -> list of (status, body) or exceptions; the last repeats."""

    def __init__(self, script):
        self.script = {k: list(v) for k, v in script.items()}
        self.calls = []
        self.lock = threading.Lock()

    def __call__(self, url, payload=None, timeout=10.0):
        with self.lock:
            self.calls.append((url, payload, timeout))
            answers = self.script[url]
            answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer


def test_completion_url():
    assert completion_url(HEALTH) == "http://127.0.0.1:30000/v1/completions"


@pytest.mark.parametrize("exc", [
    ConnectionRefusedError(111, "Connection refused"),
    urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")),
    socket.timeout("timed out"),
    http.client.RemoteDisconnected("closed"),
    http.client.BadStatusLine("garbage"),
    http.client.IncompleteRead(b"par"),
])
def test_no_answer_is_not_yet(exc):
    ok, detail = check_once({"url": HEALTH, "probe": "health"}, FakeHTTP({HEALTH: [exc]}))
    assert ok is False
    assert detail.startswith("no answer yet")


def test_503_is_not_yet():
    fake = FakeHTTP({HEALTH: [(503, "starting")]})
    assert check_once({"url": HEALTH, "probe": "completion", "model": "m"}, fake) == (False, "health answered 503")
    assert len(fake.calls) == 1  # no completion attempted


def test_health_probe_200_is_healthy():
    fake = FakeHTTP({HEALTH: [(200, "")]})
    assert check_once({"url": HEALTH, "probe": "health"}, fake) == (True, "health 200")
    assert fake.calls == [(HEALTH, None, 10.0)]


def test_completion_probe_requires_one_real_token():
    url = completion_url(HEALTH)
    fake = FakeHTTP({HEALTH: [(200, "")], url: [(200, OK_COMPLETION)]})
    ok, detail = check_once({"url": HEALTH, "probe": "completion", "model": "zai-org/GLM-5.3-Flash"}, fake)
    assert (ok, detail) == (True, "health 200, completion ' pong'")
    (called, payload, timeout) = fake.calls[1]
    assert called == url
    assert payload == {"model": "zai-org/GLM-5.3-Flash", "prompt": "ping", "max_tokens": 1, "temperature": 0}
    assert timeout == 120.0


@pytest.mark.parametrize("body", [
    json.dumps({"choices": []}),
    json.dumps({"object": "error"}),
    json.dumps({"choices": "x"}),
    json.dumps([1]),
    "<html>proxy</html>",
])
def test_completion_200_without_choices_is_unhealthy(body):
    url = completion_url(HEALTH)
    ok, detail = check_once({"url": HEALTH, "probe": "completion", "model": "m"},
                            FakeHTTP({HEALTH: [(200, "")], url: [(200, body)]}))
    assert ok is False
    assert detail.startswith("completion answered 200 without choices")


def test_completion_with_null_text_is_an_answer():
    url = completion_url(HEALTH)
    ok, detail = check_once({"url": HEALTH, "probe": "completion", "model": "m"},
                            FakeHTTP({HEALTH: [(200, "")], url: [(200, json.dumps({"choices": [{"text": None}]}))]}))
    assert (ok, detail) == (True, "health 200, completion ''")


def test_completion_errors_are_unhealthy():
    url = completion_url(HEALTH)
    ok, detail = check_once({"url": HEALTH, "probe": "completion", "model": "m"},
                            FakeHTTP({HEALTH: [(200, "")], url: [(500, "wedged")]}))
    assert (ok, detail) == (False, "completion answered 500: wedged")
    ok, detail = check_once({"url": HEALTH, "probe": "completion", "model": "m"},
                            FakeHTTP({HEALTH: [(200, "")], url: [socket.timeout("timed out")]}))
    assert ok is False and detail.startswith("completion failed")


class FakeTime:
    """Per-thread fake clock: ``sleep`` advances only the calling thread."""

    def __init__(self):
        self.local = threading.local()

    def clock(self):
        return getattr(self.local, "t", 0.0)

    def sleep(self, s):
        self.local.t = self.clock() + s


def test_wait_all_polls_each_endpoint_until_healthy_or_timeout():
    a, b, c = "http://127.0.0.1:1/health", "http://127.0.0.1:2/health", "http://127.0.0.1:3/health"
    fake = FakeHTTP({
        a: [ConnectionRefusedError(), (503, ""), (503, ""), (200, "")],
        b: [(503, "")],
        c: [(200, "")],
        completion_url(c): [(200, OK_COMPLETION)],
    })
    t = FakeTime()
    res = wait_all([{"name": "launchcard-a.service", "url": a, "probe": "health"},
                    {"url": b},
                    {"name": "c", "url": c, "probe": "completion", "model": "m"}],
                   timeout=10, request=fake, interval=2.0, clock=t.clock, sleep=t.sleep)
    assert res[0] == {"name": "launchcard-a.service", "url": a, "probe": "health", "healthy": True,
                      "detail": "health 200", "elapsed_s": 6.0}
    assert res[1] == {"name": b, "url": b, "probe": "health", "healthy": False,
                      "detail": "health answered 503", "elapsed_s": 10.0}
    assert res[2]["healthy"] is True and res[2]["elapsed_s"] == 0.0
    assert len([x for x in fake.calls if x[0] == a]) == 4
    assert len([x for x in fake.calls if x[0] == b]) == 6


def test_wait_all_survives_a_probe_that_raises():
    def boom(url, payload=None, timeout=10.0):
        raise RuntimeError("bug")
    t = FakeTime()
    res = wait_all([{"url": HEALTH}], timeout=1, request=boom, interval=1, clock=t.clock, sleep=t.sleep)
    assert res[0]["healthy"] is False
    assert "RuntimeError" in res[0]["detail"]


def test_wait_all_with_no_endpoints():
    assert wait_all([], timeout=1, request=stdlib_request) == []


# -- a real server on the loopback ---------------------------------------------------------------
class _Engine(http.server.BaseHTTPRequestHandler):
    starting = 2  # /health answers 503 this many times first

    def log_message(self, *args):
        pass

    def _send(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path != "/health":
            return self._send(404, "{}")
        server = self.server
        server.health_calls += 1
        if server.health_calls <= self.starting:
            return self._send(503, '{"status": "starting"}')
        return self._send(200, "")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.server.posts.append((self.path, json.loads(self.rfile.read(length))))
        if self.path != "/v1/completions":
            return self._send(404, "{}")
        return self._send(200, OK_COMPLETION)


@pytest.fixture
def engine():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Engine)
    server.health_calls = 0
    server.posts = []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_real_loopback_server_503_twice_then_healthy(engine):
    url = "http://127.0.0.1:%d/health" % engine.server_address[1]
    res = wait_all([{"name": "launchcard-x.service", "url": url, "probe": "completion", "model": "m"}],
                   timeout=20, request=stdlib_request, interval=0.05)
    assert res[0]["healthy"] is True, res
    assert res[0]["detail"] == "health 200, completion ' pong'"
    assert engine.health_calls == 3
    assert engine.posts == [("/v1/completions", {"model": "m", "prompt": "ping", "max_tokens": 1,
                                                 "temperature": 0})]


def test_real_closed_port_is_not_yet():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ok, detail = check_once({"url": "http://127.0.0.1:%d/health" % port, "probe": "health"}, stdlib_request)
    assert ok is False and detail.startswith("no answer yet")


def test_real_garbage_answer_is_not_yet():
    class Garbage(socketserver.BaseRequestHandler):
        def handle(self):
            self.request.recv(1024)
            self.request.sendall(b"NOT-HTTP\r\n\r\n")

    server = socketserver.TCPServer(("127.0.0.1", 0), Garbage)
    thread = threading.Thread(target=server.handle_request, daemon=True)
    thread.start()
    try:
        ok, detail = check_once({"url": "http://127.0.0.1:%d/health" % server.server_address[1]}, stdlib_request)
    finally:
        thread.join(5)
        server.server_close()
    assert ok is False and detail.startswith("no answer yet")


def test_a_watched_gate_whose_endpoints_answer_at_once_returns_at_once():
    """The unit watch observes every interval; once every probe has ended the gate returns without
    waiting out the interval (a no-op deploy makes one such call per host and stage)."""
    import time
    observed = []

    def watch(pending):
        observed.append(len(pending))
        return {}, {}

    fake = FakeHTTP({"http://127.0.0.1:1/health": [(200, "")]})

    def slow(url, payload=None, timeout=10.0):  # an answer takes a moment, as over a real socket
        time.sleep(0.3)
        return fake(url, payload, timeout)

    started = time.monotonic()
    res = wait_all([{"name": "launchcard-a.service", "url": "http://127.0.0.1:1/health", "unit": "launchcard-a.service"}],
                   timeout=60, request=slow, interval=5.0, watch=watch)
    assert res[0]["healthy"] is True
    assert time.monotonic() - started < 2.0
    assert observed == [1]  # before the first probe only
