# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run lock (plugins/module_utils/_lock.py) on real files in a temporary directory."""

from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils import _lock as lock

A = {"run_id": "20261130T130055Z-aaaa", "user": "alice", "controller": "ctl-a", "playbook": "upgrade.yml",
     "card": "sha256:" + "a" * 64}
B = {"run_id": "20261130T130056Z-bbbb", "user": "bob", "controller": "ctl-b", "playbook": "deploy.yml",
     "card": "sha256:" + "b" * 64}


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "var" / "lib" / "launchcard" / "lock.json")


def on_file(path):
    with open(path) as f:
        return json.load(f)


def test_acquire_creates_the_file_with_the_holder_and_utc_time(path):
    res = lock.acquire(path, A, now="2026-11-30T13:00:56Z")
    assert res["acquired"] and res["changed"] and not res["reentrant"] and res["held_by"] is None
    held = on_file(path)
    assert held["run_id"] == A["run_id"] and held["user"] == "alice" and held["controller"] == "ctl-a"
    assert held["playbook"] == "upgrade.yml" and held["card"] == A["card"] and held["scope"] == "host"
    assert held["since"] == "2026-11-30T13:00:56Z" and held["version"] == 1
    assert lock.read(path)["run_id"] == A["run_id"]


def test_a_second_run_is_refused_and_told_who_holds_the_lock(path):
    lock.acquire(path, A, now="2026-11-30T13:00:56Z")
    res = lock.acquire(path, B)
    assert not res["acquired"] and not res["changed"]
    assert res["held_by"]["run_id"] == A["run_id"]
    assert on_file(path)["run_id"] == A["run_id"]  # untouched
    line = lock.describe(res["held_by"])
    assert line == ("alice@ctl-a, upgrade.yml, run 20261130T130055Z-aaaa, card sha256:aaaaaaaaaaaa, "
                    "since 2026-11-30 13:00:56 UTC")
    msg = lock.refusal([("lc-up-w1", path, res["held_by"])])
    assert "lc-up-w1:%s held by alice@ctl-a" % path in msg and "launchcard_lock_break=true" in msg


def test_the_same_run_reacquires_without_a_change_and_keeps_the_first_time(path):
    lock.acquire(path, A, now="2026-11-30T13:00:56Z")
    res = lock.acquire(path, A, now="2026-11-30T14:00:00Z")
    assert res["acquired"] and res["reentrant"] and not res["changed"]
    assert on_file(path)["since"] == "2026-11-30T13:00:56Z"


def test_a_stale_lock_is_broken_only_on_request_and_the_broken_holder_returned(path):
    lock.acquire(path, A)
    assert not lock.acquire(path, B)["acquired"]
    res = lock.acquire(path, B, break_stale=True)
    assert res["acquired"] and res["changed"] and res["broken"]["run_id"] == A["run_id"]
    assert on_file(path)["run_id"] == B["run_id"]
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.endswith(".tmp")]


def test_an_unreadable_lock_file_counts_as_held(path):
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("{half")
    res = lock.acquire(path, A)
    assert not res["acquired"] and "unreadable" in res["held_by"]
    assert lock.describe(res["held_by"]).startswith("an unreadable lock file (not JSON")
    assert lock.acquire(path, A, break_stale=True)["acquired"]


def test_release_drops_only_our_own_lock(path):
    lock.acquire(path, A)
    other = lock.release(path, B["run_id"])
    assert not other["released"] and not other["changed"] and other["held_by"]["run_id"] == A["run_id"]
    assert os.path.exists(path)
    mine = lock.release(path, A["run_id"])
    assert mine["released"] and mine["changed"] and not os.path.exists(path)
    again = lock.release(path, A["run_id"])
    assert not again["released"] and not again["changed"] and again["held_by"] is None


def test_check_mode_reports_and_writes_nothing(path):
    res = lock.acquire(path, A, check_mode=True)
    assert res["would_acquire"] and not res["acquired"] and not os.path.exists(os.path.dirname(path))
    lock.acquire(path, A)
    held = lock.acquire(path, B, check_mode=True)
    assert not held["acquired"] and held["held_by"]["run_id"] == A["run_id"]
    broken = lock.acquire(path, B, break_stale=True, check_mode=True)
    assert broken["would_acquire"] and not broken["acquired"] and broken["broken"]["run_id"] == A["run_id"]
    assert on_file(path)["run_id"] == A["run_id"]
    assert lock.release(path, A["run_id"], check_mode=True)["released"] and os.path.exists(path)


def test_a_holder_without_run_id_is_an_error(path):
    with pytest.raises(ValueError, match="run_id"):
        lock.acquire(path, {"user": "x"})


def _race(path, holder, queue):
    queue.put(lock.acquire(path, holder)["acquired"])


def test_two_processes_racing_for_one_lock_get_it_once(path):
    os.makedirs(os.path.dirname(path))
    queue = multiprocessing.get_context("fork").Queue()
    procs = [multiprocessing.get_context("fork").Process(target=_race, args=(path, dict(A, run_id="r%d" % n), queue))
             for n in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(20)
    assert sorted(queue.get(timeout=5) for dummy in procs) == [False] * 7 + [True]
