# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health gate after a queued restart counts only the unit's new process.

``systemctl --no-block restart`` returns before the job runs, so the process
about to be replaced still answers ``/health`` for a while. These tests give
the gate an endpoint that always answers 200 (the old process, then the new
one) and a ``fresh`` reader standing in for systemd, and check that the gate
passes only after ``fresh`` named the unit, and times out when it never does.
"""

from __future__ import annotations

import threading
import time

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils._health import wait_all
from ansible_collections.launchcard.inference.plugins.module_utils._systemd import (
    restart_baseline,
    runs_new_invocation,
)

URL = "http://127.0.0.1:1/health"
UNIT = "launchcard-m-sglang-aggregated-0.service"
OLD = {"invocation_id": "aaaa", "main_pid": 100}


def always_200(url, payload=None, timeout=10.0):
    return 200, ""


def test_baseline_reads_invocation_and_pid():
    assert restart_baseline({"InvocationID": "aaaa", "MainPID": "100"}) == OLD
    # a unit never started (or not found) has neither
    assert restart_baseline({}) == {"invocation_id": "", "main_pid": 0}
    assert restart_baseline({"InvocationID": "", "MainPID": "[not set]"}) == {"invocation_id": "", "main_pid": 0}


@pytest.mark.parametrize("props, new", [
    # the restart job has not run yet: the old process
    ({"ActiveState": "active", "InvocationID": "aaaa", "MainPID": "100"}, False),
    # stopping the old one, or the new one still in its readiness check (ExecStartPost=)
    ({"ActiveState": "deactivating", "InvocationID": "aaaa", "MainPID": "100"}, False),
    ({"ActiveState": "activating", "InvocationID": "bbbb", "MainPID": "200"}, False),
    ({"ActiveState": "failed", "InvocationID": "bbbb", "MainPID": "0"}, False),
    # the new process, ready
    ({"ActiveState": "active", "InvocationID": "bbbb", "MainPID": "200"}, True),
    # same PID number reused by the new process: the invocation tells
    ({"ActiveState": "active", "InvocationID": "bbbb", "MainPID": "100"}, True),
])
def test_runs_new_invocation(props, new):
    assert runs_new_invocation(props, OLD) is new


def test_without_invocation_ids_the_main_pid_tells():
    before = {"invocation_id": "", "main_pid": 100}
    assert runs_new_invocation({"ActiveState": "active", "MainPID": "100"}, before) is False
    assert runs_new_invocation({"ActiveState": "active", "MainPID": "200"}, before) is True
    assert runs_new_invocation({"ActiveState": "active", "MainPID": "0"}, {"invocation_id": "", "main_pid": 0}) is False
    # a unit that was never started: any invocation is new
    assert runs_new_invocation({"ActiveState": "active", "InvocationID": "cccc"}, {"invocation_id": "", "main_pid": 0})


class Systemd:
    """Stands in for systemd: the unit runs the old process until ``switch`` is set."""

    def __init__(self):
        self.switch = threading.Event()
        self.calls = []

    def fresh(self, held):
        self.calls.append([ep["name"] for ep in held])
        props = ({"ActiveState": "active", "InvocationID": "bbbb"} if self.switch.is_set()
                 else {"ActiveState": "active", "InvocationID": "aaaa"})
        return set(ep["name"] for ep in held if runs_new_invocation(props, ep["previous"]))


def test_the_old_process_answering_does_not_pass_the_gate():
    sd = Systemd()
    started = time.monotonic()
    res = wait_all([{"name": UNIT, "url": URL, "unit": UNIT, "previous": OLD}], timeout=0.6,
                   request=always_200, interval=0.05, fresh=sd.fresh)
    assert res[0]["healthy"] is False
    assert res[0]["detail"].startswith("health 200, but from the process before the queued restart")
    assert time.monotonic() - started >= 0.6
    assert sd.calls and all(c == [UNIT] for c in sd.calls)


def test_the_gate_passes_once_the_new_process_is_active():
    sd = Systemd()
    threading.Timer(0.3, sd.switch.set).start()
    res = wait_all([{"name": UNIT, "url": URL, "unit": UNIT, "previous": OLD},
                    {"name": "plain", "url": "http://127.0.0.1:2/health"}],
                   timeout=10, request=always_200, interval=0.05, fresh=sd.fresh)
    assert [r["healthy"] for r in res] == [True, True]
    assert res[0]["elapsed_s"] >= 0.3  # not before systemd reported the new process
    assert res[1]["elapsed_s"] < 0.3  # an endpoint without ``previous`` is not held
    # once named, the unit is not asked about again
    assert sd.calls[-1] == [UNIT] and len(sd.calls) < 100


def test_a_failing_reader_never_lets_the_old_process_pass():
    def broken(held):
        raise OSError("systemctl gone")
    res = wait_all([{"name": UNIT, "url": URL, "unit": UNIT, "previous": OLD}], timeout=0.3,
                   request=always_200, interval=0.05, fresh=broken)
    assert res[0]["healthy"] is False


def test_previous_without_a_reader_is_ignored():
    res = wait_all([{"name": UNIT, "url": URL, "unit": UNIT, "previous": OLD}], timeout=1,
                   request=always_200, interval=0.05)
    assert res[0]["healthy"] is True


def test_health_endpoints_carry_what_a_queued_unit_ran_before():
    from ansible_collections.launchcard.inference.plugins.filter.plan import health_endpoints
    host = {"instances": [
        {"unit": UNIT, "health_url": "http://10.0.0.1:30000/health", "probe": "completion", "served_model": "m"},
        {"unit": "launchcard-m-sglang-router-0.service", "health_url": "http://10.0.0.1:30080/health",
         "probe": "health", "served_model": "m"},
        {"unit": "launchcard-m-vllm-headless-1.service", "health_url": None, "probe": "health", "served_model": "m"},
    ]}
    converge = {"queued": {UNIT: {"verb": "restart", "invocation_id": "aaaa", "main_pid": 100}}}
    eps = health_endpoints(host, converge)
    assert [ep["name"] for ep in eps] == [UNIT, "launchcard-m-sglang-router-0.service"]
    assert eps[0]["previous"] == OLD and "previous" not in eps[1]
    # without a converge result (or in check mode, where nothing is queued), nothing is held
    assert all("previous" not in ep for ep in health_endpoints(host))
    assert all("previous" not in ep for ep in health_endpoints(host, {"queued": {}}))


def test_the_second_stage_reads_the_first_stage_where_the_converge_call_put_it():
    from ansible_collections.launchcard.inference.plugins.filter.plan import first_stage_result
    in_converge = {"units_converge": {"health": {"unhealthy": ["a"]}}}
    on_its_own = {"units_converge": {"skipped": True}, "units_health_first": {"unhealthy": ["b"]}}
    assert first_stage_result(in_converge) == {"unhealthy": ["a"]}
    assert first_stage_result(on_its_own) == {"unhealthy": ["b"]}
    assert first_stage_result({}) == {}
    assert first_stage_result(in_converge, "units_health_first") == {}
