# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TEST CODE: load through a sandbox router while an upgrade runs, shared by the upgrade e2e files
(test_upgrade_sandbox.py: native engines; test_upgrade_containers_sandbox.py: podman containers)."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request


def http(method, url, body=None, timeout=10.0):
    """``(status, text)`` of one JSON request; an HTTP error status is returned, not raised."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def healthy_workers(router_url, timeout=5.0):
    """The worker URLs the router reports healthy (``GET /workers``); empty when it does not answer 200."""
    status, body = http("GET", router_url + "/workers", timeout=timeout)
    if status != 200:
        return set()
    return {w["url"] for w in json.loads(body)["workers"] if w.get("is_healthy")}


class Load:
    """A steady stream of 1-token completions through the router, and capacity samples.

    Bounded: at most ``max_requests`` requests and ``max_s`` seconds, only to ``router_url`` (a sandbox
    router). Capacity: how many of ``worker_urls`` the router reports healthy, sampled every 0.5 s.
    Use as a context manager; ``ok``, ``failed``, ``errors`` (why each failed) and ``capacity`` are read after.
    """

    def __init__(self, router_url, model, worker_urls, threads=2, max_requests=20000, max_s=600.0):
        self.router_url, self.model, self.worker_urls = router_url, model, set(worker_urls)
        self.ok, self.failed, self.errors, self.capacity = 0, 0, [], []
        self.stop = threading.Event()
        self.deadline = time.time() + max_s
        self.budget = max_requests
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._send, daemon=True) for dummy in range(threads)]
        self.threads.append(threading.Thread(target=self._sample, daemon=True))

    def _running(self):
        return not self.stop.is_set() and time.time() < self.deadline

    def _send(self):
        while self._running():
            with self.lock:
                if self.budget <= 0:
                    return
                self.budget -= 1
            try:
                status, body = http("POST", self.router_url + "/v1/completions",
                                    {"model": self.model, "prompt": "hi", "max_tokens": 1}, timeout=30)
                good = status == 200 and json.loads(body)["choices"][0]["text"] is not None
                why = "" if good else "%d %s" % (status, body[:200])
            except (OSError, ValueError, KeyError) as exc:
                good, why = False, repr(exc)
            with self.lock:
                if good:
                    self.ok += 1
                else:
                    self.failed += 1
                    self.errors.append(why)
            time.sleep(0.05)

    def _sample(self):
        while self._running():
            try:
                self.capacity.append(len(healthy_workers(self.router_url) & self.worker_urls))
            except (OSError, ValueError, KeyError):
                self.capacity.append(0)
            time.sleep(0.5)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=40)


class InFlightStream:
    """TEST CODE: one long streaming completion sent straight to an engine once ``start_when()`` holds (checked
    every 0.2 s, at most ``max_wait_s``), read to its end in a thread.

    ``tokens`` (events read), ``done`` (``[DONE]`` came), ``ended`` (done | closed | timeout | never started) are read
    after ``join()``. The body is read from a raw socket, so a stream that is cut or hangs shows as such.
    """

    def __init__(self, host, port, model, max_tokens, start_when, max_wait_s=600.0, read_timeout_s=300.0):
        self.host, self.port, self.model, self.max_tokens = host, port, model, max_tokens
        self.start_when, self.max_wait_s, self.read_timeout_s = start_when, max_wait_s, read_timeout_s
        self.tokens, self.done, self.ended, self.started_at, self.first_token_at = 0, False, "never started", None, None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=self.read_timeout_s + 10)

    def _run(self):
        deadline = time.time() + self.max_wait_s
        while not self.stop.is_set() and time.time() < deadline:
            try:
                if self.start_when():
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.2)
        else:
            return
        body = json.dumps({"model": self.model, "prompt": "a long answer", "max_tokens": self.max_tokens,
                           "stream": True}).encode()
        self.started_at = time.time()
        buf = b""
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.read_timeout_s)
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (self.host.encode(), len(body), body))
            while not self.done:
                piece = sock.recv(65536)
                if not piece:
                    self.ended = "closed"
                    return
                buf += piece
                while b"data: " in buf and b"\n\n" in buf[buf.index(b"data: "):]:
                    buf = buf[buf.index(b"data: ") + len(b"data: "):]
                    data, buf = buf.split(b"\n\n", 1)
                    if data == b"[DONE]":
                        self.done = True
                    else:
                        self.tokens += 1
                        self.first_token_at = self.first_token_at or time.time()
            self.ended = "done"
            sock.close()
        except socket.timeout:
            self.ended = "timeout"
        except OSError as exc:
            self.ended = "closed (%s)" % exc
