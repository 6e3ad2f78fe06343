# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The router worker API helper, against a fake router that acts in the background like sglang-router 0.3."""

from __future__ import annotations

import json

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils._router import converge


def uid(n):
    return "00000000-0000-4000-8000-%012d" % n


class FakeRouter:
    """Requests take effect one listing later (the real API answers 202 and works in the background)."""

    def __init__(self, urls, lag=1):
        self.live = {u: uid(i) for i, u in enumerate(urls)}
        self.queue, self.lag, self.calls = [], lag, []

    def __call__(self, url, method="GET", payload=None, timeout=10.0):
        self.calls.append((method, url, payload))
        if method == "GET":
            ready = [q for q in self.queue if q[0] <= 0]
            self.queue = [(n - 1, op, arg) for n, op, arg in self.queue if n > 0]
            for dummy, op, arg in ready:
                if op == "del":
                    self.live = {u: i for u, i in self.live.items() if i != arg}
                else:
                    self.live[arg] = uid(1000 + len(self.calls))
            return 200, json.dumps({"workers": [{"id": i, "url": u, "is_healthy": True} for u, i in self.live.items()]})
        if method == "DELETE":
            self.queue.append((self.lag, "del", url.rsplit("/", 1)[1]))
            return 202, "{}"
        self.queue.append((self.lag, "add", payload["url"]))
        return 202, "{}"


def test_remove_waits_until_gone_then_add_waits_until_listed():
    r = FakeRouter(["http://a:1", "http://b:1"])
    out = converge("http://rt:9", ["http://a:1"], [], r, sleep=lambda s: None)
    assert out == {"changed": True, "removed": ["http://a:1"], "added": [], "workers": ["http://b:1"], "api": "uuid"}
    assert ("DELETE", "http://rt:9/workers/" + uid(0), None) in r.calls
    out = converge("http://rt:9", [], ["http://a:1"], r, sleep=lambda s: None)
    assert out["added"] == ["http://a:1"] and out["workers"] == ["http://a:1", "http://b:1"]
    assert ("POST", "http://rt:9/workers", {"url": "http://a:1"}) in r.calls


def test_noop_and_add_wins():
    r = FakeRouter(["http://a:1"])
    assert converge("http://rt:9", ["http://a:1"], ["http://a:1"], r, sleep=lambda s: None)["changed"] is False
    assert converge("http://rt:9", ["http://zz:1"], [], r, sleep=lambda s: None)["changed"] is False


def test_timeout_names_the_pending_worker():
    r = FakeRouter(["http://a:1"], lag=10 ** 6)
    t = iter(range(1000))
    with pytest.raises(RuntimeError, match="still pending http://a:1"):
        converge("http://rt:9", ["http://a:1"], [], r, timeout=3, clock=lambda: next(t), sleep=lambda s: None)


def test_refusal_is_an_error():
    def refuse(url, method="GET", payload=None, timeout=10.0):
        return (200, json.dumps({"workers": [{"id": uid(7), "url": "http://a:1"}]})) if method == "GET" else (401, "no")
    with pytest.raises(RuntimeError, match="answered 401"):
        converge("http://rt:9", ["http://a:1"], [], refuse, sleep=lambda s: None)
