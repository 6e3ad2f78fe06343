# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run lock through the modules that carry it, in-process: run_lock, preflight's ``lock`` option,
host_state's ``release_lock`` option, and plugin_utils._run_locks that builds them. Lock files are real
files in a temporary directory. (The warnings, a broken lock and a held lock in check mode, go to the
controller's display in this process; tests/e2e/test_upgrade_sandbox.py reads them in a real run.)"""

from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.modules import host_state, preflight, run_lock
from ansible_collections.launchcard.inference.plugins.plugin_utils import _planfile as planfile
from ansible_collections.launchcard.inference.plugins.plugin_utils import _run_locks as run_locks
from ansible_collections.launchcard.inference.plugins.plugin_utils._plan_tables import plan_final

RUN_A = {"id": "20261130T130055Z-aaaaaaaa", "user": "alice", "controller": "ctl-a", "playbook": "upgrade.yml",
         "cards": {"c.json": "sha256:" + "a" * 64}, "anchor": "h1"}
RUN_B = dict(RUN_A, id="20261130T130056Z-bbbbbbbb", user="bob", controller="ctl-b", playbook="deploy.yml")
PLAN = {"hosts": {"h1": {"card": "c.json", "instances": []}, "h2": {"card": "c.json", "instances": []}}}


def call(module, capsys, args, check_mode=False):
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            module.main()
    return info.value.code, json.loads(capsys.readouterr().out)


def spec(run, host, lock_dir, **kw):
    return run_locks.lock_spec(run, host, PLAN, str(lock_dir), **kw)


def test_the_spec_gives_the_anchor_the_fleet_lock_and_names_the_holder(tmp_path):
    one, two = spec(RUN_A, "h1", tmp_path), spec(RUN_A, "h2", tmp_path)
    assert [p["scope"] for p in one["paths"]] == ["host", "fleet"] and [p["scope"] for p in two["paths"]] == ["host"]
    assert one["holder"] == {"run_id": RUN_A["id"], "user": "alice", "controller": "ctl-a", "playbook": "upgrade.yml",
                             "card": "sha256:" + "a" * 64}
    fleet = spec(RUN_A, "h2", tmp_path, scope="fleet")
    assert fleet["paths"] == [{"path": str(tmp_path / "fleet-lock.json"), "scope": "fleet"}]


def test_run_lock_takes_refuses_naming_the_holder_and_releases_only_its_own(tmp_path, capsys):
    a, b = spec(RUN_A, "h1", tmp_path), spec(RUN_B, "h1", tmp_path)
    rc, res = call(run_lock, capsys, {"paths": a["paths"], "holder": a["holder"]})
    assert rc == 0 and not res["changed"] and all(r["acquired"] for r in res["locks"])
    rc, res = call(run_lock, capsys, {"paths": b["paths"], "holder": b["holder"]})
    assert rc == 1 and res["failed"]
    assert "another run holds the lock of this fleet; nothing was changed" in res["msg"]
    assert "%s/fleet-lock.json held by alice@ctl-a, upgrade.yml, run %s" % (tmp_path, RUN_A["id"]) in res["msg"]
    # check mode: a held lock is a warning, not a failure
    rc, res = call(run_lock, capsys, {"paths": b["paths"], "holder": b["holder"]}, check_mode=True)
    assert rc == 0 and len(res["held_by"]) == 2 and not any(r["acquired"] for r in res["locks"])
    rc, res = call(run_lock, capsys, {"state": "absent", "paths": b["paths"], "holder": {"run_id": RUN_B["id"]}})
    assert rc == 0 and len(res["held_by"]) == 2 and os.path.exists(str(tmp_path / "lock.json"))
    rc, res = call(run_lock, capsys, {"state": "absent", "paths": a["paths"], "holder": {"run_id": RUN_A["id"]}})
    assert rc == 0 and all(r["released"] for r in res["locks"])
    assert not os.path.exists(str(tmp_path / "lock.json")) and not os.path.exists(str(tmp_path / "fleet-lock.json"))


def test_run_lock_breaks_a_stale_lock_on_request_and_fails_after_releasing_with_fail_msg(tmp_path, capsys):
    a, b = spec(RUN_A, "h2", tmp_path), spec(RUN_B, "h2", tmp_path, break_stale=True)
    call(run_lock, capsys, {"paths": a["paths"], "holder": a["holder"]})
    rc, res = call(run_lock, capsys, {"paths": b["paths"], "holder": b["holder"], "break_stale": True})
    assert rc == 0 and res["broken"] == ["%s/lock.json held by %s" % (tmp_path, "alice@ctl-a, upgrade.yml, run "
                                                                      "20261130T130055Z-aaaaaaaa, card sha256:aaaaaaaaaaaa, since "
                                                                      + res["locks"][0]["broken"]["since"].replace("T", " ")
                                                                      .replace("Z", " UTC"))]
    rc, res = call(run_lock, capsys, {"state": "absent", "paths": b["paths"], "holder": {"run_id": RUN_B["id"]},
                                      "fail_msg": "stopped"})
    assert rc == 1 and res["msg"] == "stopped" and not os.path.exists(str(tmp_path / "lock.json"))


def test_run_lock_wants_absolute_paths_and_a_run_id(tmp_path, capsys):
    rc, res = call(run_lock, capsys, {"paths": [{"path": "lock.json"}], "holder": {"run_id": "x"}})
    assert rc == 1 and "paths[0].path: an absolute path is required" in res["msg"]
    rc, res = call(run_lock, capsys, {"paths": [{"path": str(tmp_path / "l.json")}], "holder": {"user": "x"}})
    assert rc == 1 and "run_id" in res["msg"]


def preflight_args(host, lock):
    return {"needs": {"disk_bytes": 0, "gpus": 0, "validated_models": [], "weights_per_gpu_mib": 0, "ports": [],
                      "images": [], "peers": []},
            "weights_dir": str(host["tmp"] / "models"), "checks": {"os": False}, "runtime": "native",
            "pci_devices_dir": str(host["tmp"] / "no-pci-bus"), "lock": lock}


def test_preflight_takes_the_lock_in_its_call_and_reports_another_runs(host, capsys):
    lock_dir = host["tmp"] / "state"
    rc, res = call(preflight, capsys, preflight_args(host, spec(RUN_A, "h1", lock_dir)))
    assert rc == 0 and not res["failed_checks"], res["checks"]
    assert res["lock"]["taken"] and not res["changed"] and [r["scope"] for r in res["lock"]["locks"]] == ["host", "fleet"]
    # the same run again: re-entrant; another run: reported (not failed), nothing written
    rc, res = call(preflight, capsys, preflight_args(host, spec(RUN_A, "h1", lock_dir)))
    assert res["lock"]["taken"] and all(r["reentrant"] for r in res["lock"]["locks"])
    rc, res = call(preflight, capsys, preflight_args(host, spec(RUN_B, "h1", lock_dir)))
    assert rc == 0 and not res["lock"]["taken"] and res["lock"]["reason"] == "held by another run"
    assert len(res["lock"]["held_by"]) == 2 and "alice@ctl-a" in res["lock"]["held_by"][0]
    hostvars = {"h1": {"preflight_result": res}, "h2": {}}
    msg = run_locks.refusal(hostvars, ["h1", "h2"])
    assert msg.startswith("another run holds the lock") and "h1:%s/lock.json held by alice@ctl-a" % lock_dir in msg
    assert run_locks.taken(hostvars, ["h1", "h2"]) == []


def test_preflight_takes_no_lock_in_check_mode_or_when_a_check_fails(host, capsys):
    lock_dir = host["tmp"] / "state"
    rc, res = call(preflight, capsys, preflight_args(host, spec(RUN_A, "h2", lock_dir)), check_mode=True)
    assert rc == 0 and not res["lock"]["taken"] and not os.path.exists(str(lock_dir / "lock.json"))
    args = preflight_args(host, spec(RUN_A, "h2", lock_dir))
    args["needs"]["gpus"] = 8  # no GPU on this fake host: gpu_count fails
    rc, res = call(preflight, capsys, args)
    assert res["failed_checks"] and not res["lock"]["taken"] and "a check of this host failed" in res["lock"]["reason"]
    assert not os.path.exists(str(lock_dir / "lock.json"))
    rc, res = call(preflight, capsys, dict(preflight_args(host, None)))
    assert res["lock"] is None


def test_host_state_releases_the_run_lock_in_its_record_call(tmp_path, capsys):
    a = spec(RUN_A, "h1", tmp_path / "state")
    call(run_lock, capsys, {"paths": a["paths"], "holder": a["holder"]})
    args = {"state": "present", "path": str(tmp_path / "state" / "state.json"), "directory": str(tmp_path / "units"),
            "card": {"key": "c.json"}, "release_lock": {"run_id": RUN_B["id"], "paths": a["paths"]}}
    rc, res = call(host_state, capsys, args)
    assert rc == 0 and res["lock"]["released"] == [] and len(res["lock"]["held_by"]) == 2
    rc, res = call(host_state, capsys, dict(args, release_lock={"run_id": RUN_A["id"], "paths": a["paths"]}))
    assert rc == 0 and not res["changed"] and res["lock"]["released"] == [p["path"] for p in a["paths"]]
    assert sorted(os.listdir(str(tmp_path / "state"))) == ["fleet-lock.json.guard", "lock.json.guard", "state.json"]
    hostvars = {"h1": {"preflight_result": {"lock": {"locks": [dict(p, acquired=True) for p in a["paths"]]}},
                       "record": res}}
    assert run_locks.taken(hostvars, ["h1"], released="record") == []
    assert run_locks.taken(hostvars, ["h1"]) == [{"host": "h1", "paths": a["paths"]}]
    # the units role's converge call carries the gate's result, record and release under `health`
    hostvars["h1"] = {"preflight_result": hostvars["h1"]["preflight_result"], "units_converge": {"health": res}}
    assert run_locks.taken(hostvars, ["h1"], released=["units_converge.health", "units_health"]) == []
    assert run_locks.taken(hostvars, ["h1"], released=["units_health"]) == [{"host": "h1", "paths": a["paths"]}]


def test_deferred_locks_are_checked_in_preflight_and_taken_only_by_run_lock(host, capsys):
    lock_dir = host["tmp"] / "state"
    deferred = spec(RUN_A, "h1", lock_dir, defer=True)
    assert all(p["defer"] for p in deferred["paths"]) and [p["scope"] for p in deferred["paths"]] == ["host", "fleet"]
    # with break_stale the run takes every lock in preflight, as before
    assert not any(p.get("defer") for p in spec(RUN_A, "h1", lock_dir, defer=True, break_stale=True)["paths"])
    rc, res = call(preflight, capsys, preflight_args(host, deferred))
    assert rc == 0 and not res["lock"]["taken"] and res["lock"]["reason"].startswith("deferred")
    assert res["lock"]["deferred"] == [{"path": str(lock_dir / "lock.json"), "scope": "host"},
                                       {"path": str(lock_dir / "fleet-lock.json"), "scope": "fleet"}]
    assert not os.path.exists(str(lock_dir / "lock.json")) and not os.path.exists(str(lock_dir / "fleet-lock.json"))
    assert run_locks.taken({"h1": {"preflight_result": res}}, ["h1"]) == []
    # another run's lock on a deferred path still refuses this one at preflight
    other = spec(RUN_B, "h1", lock_dir)
    call(run_lock, capsys, {"paths": other["paths"][:1], "holder": other["holder"]})
    rc, res = call(preflight, capsys, preflight_args(host, deferred))
    assert rc == 0 and res["lock"]["held_by"] and "bob@ctl-b" in res["lock"]["held_by"][0]
    msg = run_locks.refusal({"h1": {"preflight_result": res}}, ["h1"])
    assert msg.startswith("another run holds the lock") and "h1:%s/lock.json held by bob@ctl-b" % lock_dir in msg


def test_a_fleet_lock_taken_after_preflight_counts_for_the_anchor_and_its_record_releases_it():
    fleet_lock = {"locks": [{"path": "/l/fleet-lock.json", "scope": "fleet", "acquired": True}]}
    host_lock = {"locks": [{"path": "/l/lock.json", "scope": "host", "acquired": True}]}
    hostvars = {"h1": {"launchcard_host_lock": host_lock}, "h2": {"launchcard_host_lock": {"skipped": True}}}
    names = ["preflight_result", "launchcard_host_lock"]
    assert run_locks.taken(hostvars, ["h1", "h2"], fleet_lock, "h1", result=names) == [
        {"host": "h1", "paths": [{"path": "/l/lock.json", "scope": "host"}, {"path": "/l/fleet-lock.json", "scope": "fleet"}]}]
    hostvars["h1"]["units_converge"] = {"health": {"lock": {"released": ["/l/lock.json", "/l/fleet-lock.json"]}}}
    assert run_locks.taken(hostvars, ["h1", "h2"], fleet_lock, "h1", ["units_converge.health"], names) == []
    # an anchor outside the hosts looked at: its fleet lock is listed on its own, as before
    assert run_locks.taken(hostvars, ["h2"], fleet_lock, "h1", result=names) == [
        {"host": "h1", "paths": [{"path": "/l/fleet-lock.json", "scope": "fleet"}]}]


def test_the_slices_of_one_plan_are_one_run_and_only_the_final_job_releases_the_fleet_lock(tmp_path, capsys):
    """Issue 28 item 2: parallel slices of one plan file (one run id) take the fleet lock together; a slice keeps
    it when it ends, the plan's final job releases it, and another run is refused meanwhile."""
    plan_run = dict(RUN_A, id="plan-0123456789abcdef", plan="sha256:" + "0" * 64, playbook="deploy.yml")
    fleet = spec(plan_run, "h1", tmp_path, scope="fleet")
    for dummy in range(2):  # two slices take it: the second re-enters
        rc, res = call(run_lock, capsys, {"paths": fleet["paths"], "holder": fleet["holder"]})
        assert rc == 0 and res["locks"][0]["acquired"]
    other = spec(RUN_B, "h1", tmp_path, scope="fleet")
    rc, res = call(run_lock, capsys, {"paths": other["paths"], "holder": other["holder"]})
    assert rc == 1 and "run plan-0123456789abcdef" in res["msg"]
    # what a slice (h2 only) releases when it ends: its host lock, not the fleet lock
    taken = {"locks": [dict(p, acquired=True) for p in fleet["paths"]]}
    hostvars = {"h2": {"launchcard_host_lock": {"locks": [{"path": "/l/lock.json", "scope": "host", "acquired": True}]}}}
    keep = planfile.keeps_fleet_lock(plan_run, PLAN["hosts"], ["h2"])
    assert keep is True and planfile.keeps_fleet_lock(plan_run, PLAN["hosts"], ["h2"], plan_final("true")) is False
    assert planfile.keeps_fleet_lock(RUN_A, PLAN["hosts"], ["h2"]) is False
    names = ["preflight_result", "launchcard_host_lock"]
    assert run_locks.taken(hostvars, ["h2"], taken, "h1", result=names, keep_fleet=keep) == [
        {"host": "h2", "paths": [{"path": "/l/lock.json", "scope": "host"}]}]
    hostvars["h1"] = {"launchcard_host_lock": taken}
    assert run_locks.taken(hostvars, ["h1"], None, "h1", result=names, keep_fleet=keep) == []
    # the final job
    rc, res = call(run_lock, capsys, {"state": "absent", "paths": fleet["paths"], "holder": {"run_id": plan_run["id"]}})
    assert rc == 0 and res["locks"][0]["released"] and not os.path.exists(str(tmp_path / "fleet-lock.json"))
