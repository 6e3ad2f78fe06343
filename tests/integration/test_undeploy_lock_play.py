# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real playbooks/undeploy.yml's run lock (issue 45: found by the run_lock action from the run and the plan,
the locks taken and the refusal by run_lock_status, run once), on local hosts whose lock folder is a temporary
directory: a lock another run holds stops the run before any unit is touched, after this run released the locks it
took, naming the holder. The inventory is test_file_sd_play's (every host local)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from test_file_sd_play import BIN, ENV, INVENTORY, ROOT

OTHER = {"version": 1, "run_id": "20261130T130056Z-bbbbbbbb", "user": "bob", "controller": "ctl-b", "playbook": "deploy.yml",
         "card": "sha256:" + "b" * 64, "since": "2026-11-30T13:00:56Z"}


def held(path, scope):
    """A lock of another run, as plugins/module_utils/_lock.py writes one."""
    path.write_text(json.dumps(dict(OTHER, scope=scope), sort_keys=True) + "\n")


def undeploy(tmp_path, *args):
    locks = tmp_path / "locks"
    (tmp_path / "sd").mkdir(exist_ok=True)
    (tmp_path / "inventory.ini").write_text(
        INVENTORY.replace("[prefill]", "ansible_connection=local\nlaunchcard_lock_dir=%s\n\n[prefill]" % locks)
        % {"root": ROOT, "sd": tmp_path / "sd", "p1": "", "python": sys.executable})
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(tmp_path / "inventory.ini"),
                           os.path.join(ROOT, "playbooks", "undeploy.yml")] + list(args),
                          cwd=ROOT, env=dict(ENV, ANSIBLE_PYTHON_INTERPRETER=sys.executable),
                          capture_output=True, text=True, timeout=600, check=False)


def test_a_host_lock_another_run_holds_stops_the_undeploy_after_it_released_its_own(tmp_path):
    """r-d1 is the plan's anchor (its first host in sorted order): its locks are its host lock and the fleet lock.
    Another run holds the host lock: this run takes the fleet lock, releases it, and stops naming the holder."""
    locks = tmp_path / "locks"
    locks.mkdir()
    held(locks / "lock.json", "host")
    before = (locks / "lock.json").read_text()
    res = undeploy(tmp_path, "--limit", "r-d1")
    out = " ".join(res.stdout.split())
    assert res.returncode == 2, res.stdout[-4000:] + res.stderr[-2000:]
    assert "another run holds the lock of this fleet; nothing was changed: r-d1:%s/lock.json held by bob@ctl-b, " \
           "deploy.yml, run %s" % (locks, OTHER["run_id"]) in out, out[-3000:]
    # released before the refusal: the fleet lock it took is gone, the other run's lock is as it was
    assert "TASK [Undeploy | Refuse the run when another run holds a lock, releasing this run's locks first]" in res.stdout
    assert "(item=r-d1: %s/lock.json, %s/fleet-lock.json)" % (locks, locks) in out or \
           "(item=r-d1: %s/fleet-lock.json)" % locks in out, out[-3000:]
    assert not (locks / "fleet-lock.json").exists()
    assert (locks / "lock.json").read_text() == before
    assert "Stop, disable and delete every unit" not in res.stdout


def test_a_fleet_lock_another_run_holds_outside_the_limit_stops_the_undeploy(tmp_path):
    """--limit r-p1: the anchor r-d1 is outside the run, its fleet lock is taken there first, and refused."""
    locks = tmp_path / "locks"
    locks.mkdir()
    held(locks / "fleet-lock.json", "fleet")
    res = undeploy(tmp_path, "--limit", "r-p1")
    out = " ".join(res.stdout.split())
    assert res.returncode == 2, res.stdout[-4000:] + res.stderr[-2000:]
    assert "TASK [Undeploy | Take the fleet lock on its anchor host, outside this run's limit]" in res.stdout
    assert "%s/fleet-lock.json held by bob@ctl-b" % locks in out, out[-3000:]
    assert not (locks / "lock.json").exists()
    assert json.loads((locks / "fleet-lock.json").read_text())["run_id"] == OTHER["run_id"]
