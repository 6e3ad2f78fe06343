# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TEST CODE: load through a sandbox router while an upgrade runs, shared by the upgrade e2e files
(test_upgrade_sandbox.py: native engines; test_upgrade_containers_sandbox.py: podman containers)."""

from __future__ import annotations

import json
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
