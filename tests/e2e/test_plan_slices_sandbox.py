# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""End to end: one plan applied in 4 parallel slices through ansible-runner, as AWX runs a sliced job (issue 28).

Fleet: inventories/bench24/gpus.ini (b24-*, 198.18.24.0/24, state dir .sandbox-slices/), every engine the stand-in.
Not part of `make e2e` (24 hosts, two full deploys): `make e2e-slices` runs it (marker fleet24).

One plan file (playbooks/plan.yml). On fresh hosts, the workflow of extensions/awx/workflows/plan-apply.yml:
4 ``deploy.yml`` jobs started at once through ``ansible_runner.run_async``, each the plan file and ``--limit`` one
AWX slice of the inventory minus the routers, then the final job (the routers, ``launchcard_plan_final``); the
unit files, their states and each host's record read over SSH, and the summaries. Then every unit and record
removed, and one unsliced ``deploy.yml`` of the file: both end in the same state.
"""

from __future__ import annotations

import json
import os
import shutil

import ansible_runner
import pytest

from playbook_output import SUMMARY_TASK, recap, report_table
from sandbox_cli import BIN, ENV, ROOT, Fleet, run

INVENTORY = "inventories/bench24/gpus.ini"
STATE = ".sandbox-slices"
FLEET = Fleet(INVENTORY, STATE)
SLICES = 4
ROUTERS = "sglang_router"
SUMMARY_COLUMNS = ("host", "recipe", "engine", "role", "port", "state")
pytestmark = pytest.mark.fleet24

# On the hosts: the record, and each launchcard unit file (sha256) with its state, as one JSON document.
READ_HOST = r"""
import glob, hashlib, json, os, subprocess
rec = "/var/lib/launchcard/state.json"
out = {"record": json.load(open(rec)) if os.path.exists(rec) else None, "units": {},
       "locks": sorted(os.path.basename(p) for p in glob.glob("/var/lib/launchcard/*lock.json"))}
for path in sorted(glob.glob("/etc/systemd/system/launchcard*")):
    if os.path.isfile(path):
        name = os.path.basename(path)
        show = subprocess.run(["systemctl", "show", "-p", "ActiveState,UnitFileState", name],
                              capture_output=True, text=True).stdout.split()
        out["units"][name] = {"sha256": hashlib.sha256(open(path, "rb").read()).hexdigest(), "state": show}
print(json.dumps(out, sort_keys=True))
"""


def awx_slices(hosts, count):
    """AWX's job slicing: the inventory's hosts ordered by name, slice k (from 1) holds every count-th from the
    k-th (awx/main/models/inventory.py, Inventory.get_script_data: ``hosts[slice_number - 1::slice_count]``)."""
    ordered = sorted(hosts)
    return [ordered[k::count] for k in range(count)]


def runner_job(name, plan_file, limit, **extra):
    """One AWX-like job: ``deploy.yml`` in ansible-runner, with a private data directory of its own."""
    pdd = os.path.join(ROOT, STATE, "runner", name)
    shutil.rmtree(pdd, ignore_errors=True)
    os.makedirs(pdd)
    extravars = dict(launchcard_plan_file=plan_file,
                     ansible_ssh_private_key_file=os.path.join(ROOT, STATE, "ssh", "id_ed25519"), **extra)
    thread, job = ansible_runner.run_async(
        private_data_dir=pdd, ident=name, project_dir=ROOT, playbook="playbooks/deploy.yml",
        inventory=os.path.join(ROOT, INVENTORY), limit=limit, extravars=extravars, quiet=True,
        envvars=dict((k, ENV[k]) for k in ("ANSIBLE_CONFIG", "ANSIBLE_NOCOLOR", "ANSIBLE_FORCE_COLOR", "PATH")))
    return thread, job


def finished(thread, job):
    thread.join()
    out = job.stdout.read()
    assert job.rc == 0, "%s: rc %s\n%s" % (job.config.ident, job.rc, out[-8000:])
    return out


def summary(out):
    """The deploy summary's rows, ``{(host, recipe, engine, role, port): state}``."""
    return dict((tuple(r[c] for c in SUMMARY_COLUMNS[:-1]), r["state"])
                for r in report_table(out, SUMMARY_TASK, SUMMARY_COLUMNS))


def fleet_state(hosts):
    """``{host: what READ_HOST printed}`` (both runs start from hosts without units or records)."""
    out = {}
    for host in hosts:
        res = FLEET.ssh(host, "python3 -c '%s'" % READ_HOST.replace("'", "'\\''"))
        assert res.returncode == 0, (host, res.stderr)
        out[host] = json.loads(res.stdout)
    return out


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("plan") / "fleet.json")
    res = run([os.path.join(BIN, "ansible-playbook"), "playbooks/plan.yml", "-i", INVENTORY,
               "-e", "launchcard_plan_file=%s" % path])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    return path


@pytest.fixture(scope="module")
def hosts():
    return sorted(FLEET.addresses())


@pytest.fixture(scope="module")
def fleet():
    """Fresh hosts; LAUNCHCARD_REUSE_FLEET=1 keeps the hosts as they are (weights and engines' virtualenv in place,
    the units and records removed by :func:`remove_units`), a shorter run."""
    with FLEET.booted(fresh=not os.environ.get("LAUNCHCARD_REUSE_FLEET")):
        yield


def remove_units(hosts):
    """Every host back to no unit and no record (the weights, the virtualenv and the users stay)."""
    for host in hosts:
        res = FLEET.ssh(host, "systemctl stop 'launchcard*' 2>/dev/null; systemctl disable 'launchcard*' 2>/dev/null; "
                              "rm -rf /etc/systemd/system/launchcard* /var/lib/launchcard/state.json "
                              "/var/lib/launchcard/*lock.json; systemctl daemon-reload; systemctl reset-failed")
        assert res.returncode == 0, (host, res.stderr)


@pytest.fixture(scope="module")
def sliced(fleet, plan_file, hosts):
    """The workflow: 4 slices at once, then the routers' final job. ``(summaries, fleet state, the locks on the
    anchor between the slices and the final job, what a run without the plan met there, each job's output)``."""
    remove_units(hosts)
    jobs = [runner_job("slice%d" % (k + 1), plan_file, ",".join(part) + ",!" + ROUTERS)
            for k, part in enumerate(awx_slices(hosts, SLICES))]
    outs = [finished(*job) for job in jobs]
    held = fleet_state([hosts[0]])[hosts[0]]["locks"]
    # another run (no plan file: a run id of its own) is refused while the slices' fleet lock is held
    other = FLEET.playbook("deploy", "--limit", "b24-rtr1",
                           "-e", "ansible_ssh_private_key_file=%s" % os.path.join(ROOT, STATE, "ssh", "id_ed25519"))
    outs.append(finished(*runner_job("final", plan_file, ROUTERS, launchcard_plan_final=True)))
    return [summary(o) for o in outs], fleet_state(hosts), held, other, outs


@pytest.fixture(scope="module")
def unsliced(sliced, plan_file, hosts):
    """One unsliced run of the plan, from the same hosts with their units and records removed: ``(summary, fleet
    state)``."""
    remove_units(hosts)
    out = finished(*runner_job("unsliced", plan_file, None))
    return summary(out), fleet_state(hosts)


def test_the_slices_are_awxs():
    hosts = ["h%02d" % n for n in range(10)]
    assert awx_slices(reversed(hosts), 4) == [["h00", "h04", "h08"], ["h01", "h05", "h09"], ["h02", "h06"], ["h03", "h07"]]


def test_four_parallel_slices_and_the_final_job_end_with_the_same_units_records_and_summary(unsliced, sliced, hosts):
    want_summary, want_state = unsliced
    summaries, state, dummy, dummy2, dummy3 = sliced
    # every host has its units, running and enabled, and a record; no lock is left
    for host, got in want_state.items():
        assert got["record"] and got["units"], host
        assert got["locks"] == [], host
    assert state == want_state
    # the summary: each instance's row from the job that ran its host (the others read "not in this run")
    merged = {}
    for rows in summaries:
        for key, value in rows.items():
            if value != "not in this run":
                assert key not in merged, key
                merged[key] = value
    assert merged == want_summary
    assert set(want_summary.values()) == {"healthy"}


def test_the_slices_hold_one_fleet_lock_that_refuses_another_run_until_the_final_job(sliced, hosts):
    dummy, state, held, other, outs = sliced
    # the anchor (first host by name) held the fleet lock after the 4 slices, released by the final job
    assert "fleet-lock.json" in held
    assert state[hosts[0]]["locks"] == []
    assert other.returncode != 0
    said = " ".join(other.stdout.split())  # the YAML result may fold a long line
    assert "another run holds the lock of this fleet" in said, other.stdout[-4000:]
    assert "run plan-" in said
    # no slice failed or was unreachable
    for out in outs:
        assert all(r["failed"] == 0 and r["unreachable"] == 0 for r in recap(out).values())
