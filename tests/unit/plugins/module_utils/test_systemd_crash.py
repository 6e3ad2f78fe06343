# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Crash detection from successive systemctl show readings, and the gate that uses it."""

from __future__ import annotations

import threading

from ansible_collections.launchcard.inference.plugins.module_utils._health import wait_all
from ansible_collections.launchcard.inference.plugins.module_utils._systemd import CrashWatch, exit_status

U = "launchcard-m-sglang-decode-0.service"


def props(active="active", sub="running", restarts="0", result="success", code="0", status="0"):
    return {"Id": U, "LoadState": "loaded", "ActiveState": active, "SubState": sub, "NRestarts": restarts,
            "Result": result, "ExecMainCode": code, "ExecMainStatus": status}


def test_exit_status_names_exit_codes_and_signals():
    assert exit_status(props(code="1", status="1")) == "exit status 1"
    assert exit_status(props(code="2", status="9")) == "signal SIGKILL"
    assert exit_status(props(code="3", status="6")) == "signal SIGABRT"
    assert exit_status(props(code="0", status="0")) == ""
    assert exit_status({}) == ""


def test_a_loading_unit_is_not_a_crash():
    w = CrashWatch()
    for dummy in range(5):
        assert w.observe({U: props()}) == {}
        assert w.observe({U: props("activating", "start-post")}) == {}
    # a restart job the converge queued passes through deactivating and one inactive reading
    assert w.observe({U: props("deactivating", "stop-sigterm")}) == {}
    assert w.observe({U: props("inactive", "dead")}) == {}
    assert w.observe({U: props("activating", "start")}) == {}


def test_auto_restart_is_a_crash_with_its_exit_status():
    w = CrashWatch()
    assert w.observe({U: props()}) == {}
    out = w.observe({U: props("activating", "auto-restart", "1", "exit-code", "1", "1")})
    assert out == {U: "engine exited, systemd restarts it (Result=exit-code, exit status 1, NRestarts=1)"}


def test_restarts_rising_between_readings_is_a_crash():
    w = CrashWatch()
    assert w.observe({U: props(restarts="3")}) == {}  # old restarts, before the gate: not this run's crash
    assert w.observe({U: props(restarts="3")}) == {}
    out = w.observe({U: props(restarts="4", code="2", status="9")})
    assert out == {U: "engine restarted by systemd (Result=success, signal SIGKILL, NRestarts=4)"}


def test_a_manual_restart_resets_the_baseline():
    w = CrashWatch()
    assert w.observe({U: props(restarts="3")}) == {}
    assert w.observe({U: props(restarts="0")}) == {}  # systemctl restart: count back to 0
    assert w.observe({U: props(restarts="1")})[U].startswith("engine restarted by systemd")


def test_failed_and_start_limit_hit():
    w = CrashWatch()
    out = w.observe({U: props("failed", "failed", "5", "start-limit-hit", "1", "1")})
    assert out == {U: "unit failed (Result=start-limit-hit, exit status 1, NRestarts=5)"}


def test_inactive_twice_and_not_found():
    w = CrashWatch()
    assert w.observe({U: props("inactive", "dead")}) == {}
    assert w.observe({U: props("inactive", "dead")})[U].startswith("unit not running (inactive)")
    other = "launchcard-gone.service"
    assert w.observe({other: {"Id": other, "LoadState": "not-found", "ActiveState": "inactive"}})[other].startswith(
        "unit not found")


class FakeTime:
    """Per-thread fake clock: ``sleep`` advances only the calling thread."""

    def __init__(self):
        self.local = threading.local()

    def clock(self):
        return getattr(self.local, "t", 0.0)

    def sleep(self, s):
        self.local.t = self.clock() + s


def test_watch_ends_only_the_crashed_endpoints_wait():
    refused = ConnectionRefusedError(111, "Connection refused")
    seen = []

    def request(url, payload=None, timeout=10.0):
        if url.endswith(":2/health"):
            return 200, ""
        raise refused

    def watch(pending):
        seen.append(sorted(ep["name"] for ep in pending))
        return ({"a": "unit failed (Result=exit-code)"} if len(seen) >= 2 else {}), {}

    eps = [{"name": "a", "url": "http://127.0.0.1:1/health", "unit": "a"},
           {"name": "b", "url": "http://127.0.0.1:2/health", "unit": "b"}]
    res = wait_all(eps, timeout=600, request=request, interval=0.01, watch=watch)
    assert res[0]["healthy"] is False and res[0]["crashed"] is True
    assert res[0]["detail"] == "unit failed (Result=exit-code)"
    assert res[0]["elapsed_s"] < 60  # ended by the unit's state, not the 600 s timeout
    assert res[1]["healthy"] is True and "crashed" not in res[1]
    assert ["a"] in seen  # b, healthy at once, is no longer watched


def test_a_watch_that_raises_leaves_the_gate_to_health_and_timeout():
    def watch(pending):
        raise RuntimeError("systemctl vanished")
    t = FakeTime()
    res = wait_all([{"name": "a", "url": "http://x/health"}], timeout=4, request=lambda *a, **k: (503, ""),
                   interval=1, clock=t.clock, sleep=t.sleep, watch=watch)
    assert res[0]["healthy"] is False and res[0]["detail"] == "health answered 503" and "crashed" not in res[0]


def test_units_stop_restarting_after_a_bounded_number_of_tries():
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units
    inst = {"id": "m-sglang-decode-0", "engine": "sglang", "role": "decode", "recipe": "sglang-decode",
            "host": "h", "argv": ["python3", "-m", "sglang.launch_server"], "env": {}, "gpus": 0, "gpu_ids": [],
            "gpu_selection": "base_gpu_id", "image": "lmsysorg/sglang:v0.5.4", "unit": "launchcard-x.service"}
    text = units.render(inst, {"runtime": "native"})
    unit_section = text.split("[Service]", maxsplit=1)[0]
    assert "StartLimitBurst=%d" % units.START_LIMIT_BURST in unit_section
    assert "StartLimitIntervalSec=%d" % units.START_LIMIT_INTERVAL_S in unit_section
    assert "StartLimitIntervalSec=0" not in text  # 0 would mean: restart forever
    # the limit is reachable by a crash loop: the burst of restarts RestartSec apart fits in the interval
    assert units.START_LIMIT_BURST * units.RESTART_SEC < units.START_LIMIT_INTERVAL_S
    assert "Restart=on-failure" in text and "RestartSec=%d" % units.RESTART_SEC in text


# -- --limit and peers outside it ----------------------------------------------------------------
def test_a_limited_run_that_moves_a_peer_outside_it_is_found():
    from ansible_collections.launchcard.inference.plugins.module_utils._systemd import foreign_peer_changes
    old = ("ExecStart=/v/bin/sglang-router --pd-disaggregation \\\n    --prefill http://198.18.0.15:30000 8998 \\\n"
           "    --decode http://198.18.0.16:32000 \\\n    --host 0.0.0.0 \\\n    --port 30000\n")
    foreign = {"198.18.0.16": "lc-decode", "198.18.0.15": "lc-prefill"}
    moved = old.replace("198.18.0.16:32000", "198.18.0.16:32001")
    assert foreign_peer_changes(old, moved, foreign) == [("198.18.0.16:32001", "lc-decode")]
    assert foreign_peer_changes(old, old.replace("--port 30000", "--port 30001"), foreign) == []  # own port
    assert foreign_peer_changes(old, moved, {"198.18.0.15": "lc-prefill"}) == []  # decode is in the run
    assert foreign_peer_changes("", moved, foreign) == []  # a new unit pointed nowhere before
    ipv6 = foreign_peer_changes("--decode http://[fd00::16]:32000", "--decode http://[fd00::16]:32001",
                                {"fd00::16": "lc-decode"})
    assert ipv6 == [("[fd00::16]:32001", "lc-decode")]


def test_an_exit_during_the_readiness_check_is_a_crash():
    w = CrashWatch()
    assert w.observe({U: props("activating", "start-post")}) == {}  # loading, main process alive
    out = w.observe({U: props("activating", "start-post", code="1", status="1")})
    assert out == {U: "engine exited while starting (Result=success, exit status 1, NRestarts=0)"}


# -- a health answer counts only from an active unit -------------------------------------------
def test_units_not_active_yet_are_unsettled():
    from ansible_collections.launchcard.inference.plugins.module_utils._systemd import unsettled
    states = {"a": props("deactivating", "stop-sigterm"), "b": props(), "c": props("activating", "start-post")}
    assert unsettled(states) == {"a": "deactivating/stop-sigterm", "c": "activating/start-post"}


def test_an_answer_from_a_unit_that_is_still_restarting_is_not_healthy():
    """A queued restart: the old process answers 200 while systemd stops it; the gate waits until
    the unit is active (its readiness check passed), then takes the answer."""
    readings = []

    def watch(pending):
        readings.append(1)
        return {}, ({"a": "deactivating/stop-sigterm"} if len(readings) <= 3 else {})

    res = wait_all([{"name": "a", "url": "http://x/health", "unit": "a"}], timeout=600,
                   request=lambda *a, **k: (200, ""), interval=0.01, watch=watch)
    assert res[0]["healthy"] is True and len(readings) >= 4
    t = FakeTime()
    res = wait_all([{"name": "a", "url": "http://x/health", "unit": "a"}], timeout=3, request=lambda *a, **k: (200, ""),
                   interval=1, clock=t.clock, sleep=t.sleep, watch=lambda pending: ({}, {"a": "deactivating/stop-sigterm"}))
    assert res[0]["healthy"] is False
    assert res[0]["detail"] == "health 200, but its unit is deactivating/stop-sigterm (not ready yet, or the old process)"


def test_a_blocked_endpoint_is_not_probed():
    probed = []

    def request(url, payload=None, timeout=10.0):
        probed.append(url)
        return 200, ""

    eps = [{"name": "r", "url": "http://r/health", "unit": "r", "blocked": "not probed: its peer is not healthy: d"},
           {"name": "s", "url": "http://s/health"}]
    res = wait_all(eps, timeout=600, request=request, interval=0.01, watch=lambda pending: ({}, {}))
    assert res[0]["healthy"] is False and res[0]["blocked"] is True and res[0]["detail"].endswith("healthy: d")
    assert res[1]["healthy"] is True and probed == ["http://s/health"]
