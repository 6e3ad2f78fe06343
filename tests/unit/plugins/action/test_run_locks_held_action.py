# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_locks_held: the locks a deploy still holds when it ends (its always section releases them)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.launchcard.inference.plugins.action import run_locks_held
from ansible_collections.launchcard.inference.tests.unit.plugins.action.test_deploy_pipeline_actions import RUN, build

H = {"path": "/var/lib/launchcard/lock.json", "scope": "host"}
F = {"path": "/var/lib/launchcard/fleet-lock.json", "scope": "fleet"}
NAMES = ["preflight_result", "launchcard_host_step"]


def took(*paths):
    return {"locks": [dict(p, acquired=True) for p in paths]}


def held(args, hostvars, plan=None, run=RUN):
    tv = {"hostvars": hostvars, "launchcard_run": run, "launchcard_plan": plan or {"hosts": {"pre": {"card": "c"}}}}
    action, connection = build(run_locks_held, dict({"results": NAMES, "released": ["units_converge.health"]}, **args),
                               task_vars=tv)
    out = action.run(task_vars=tv)
    assert not connection.exec_command.called
    return out


def test_the_hosts_that_did_not_finish_keep_their_locks_for_the_release_and_the_anchor_its_fleet_lock():
    hostvars = {"pre": {"launchcard_host_step": took(H)}, "dec": {"launchcard_host_step": took(H)},
                # the record of rtr released its lock in its gate call
                "rtr": {"launchcard_host_step": took(H), "units_converge": {"health": {"lock": {"released": [H["path"]]}}}}}
    out = held({"hosts": ["pre", "dec", "rtr"], "fleet": took(F)}, hostvars)
    assert out["changed"] is False
    assert out["locks"] == [{"host": "pre", "paths": [H, F]}, {"host": "dec", "paths": [H]}]
    # a slice of a plan file leaves the fleet lock held
    out = held({"hosts": ["pre", "dec", "rtr"], "fleet": took(F), "keep_fleet": True}, hostvars)
    assert out["locks"] == [{"host": "pre", "paths": [H]}, {"host": "dec", "paths": [H]}]


def test_the_final_job_of_a_plan_releases_the_fleet_lock_its_slices_left_even_where_it_took_none():
    # every host settled: nothing taken, but the anchor's fleet lock is released once
    out = held({"hosts": ["pre", "dec"], "final_fleet": True, "lock_dir": "/srv/lc/"}, {"pre": {}, "dec": {}})
    assert out["locks"] == [{"host": "pre", "paths": [{"path": "/srv/lc/fleet-lock.json", "scope": "fleet"}]}]
    # the anchor outside the run's hosts, holding what this run took: one entry, the path once
    out = held({"hosts": ["dec"], "fleet": took(F), "final_fleet": True}, {"dec": {"launchcard_host_step": took(H)}})
    assert out["locks"] == [{"host": "dec", "paths": [H]}, {"host": "pre", "paths": [F]}]
    out = held({"hosts": ["dec"], "final_fleet": True}, {"dec": {}}, run=dict(RUN, id=None))
    assert out["failed"] and out["msg"] == "launchcard.inference.run_locks_held: no launchcard_run (the plan role sets it)"


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
RELEASE_PLAY = """
- hosts: all
  gather_facts: false
  vars:
    launchcard_lock_dir: "%(dir)s"
    launchcard_run: {id: plan-1, plan: "sha256:0", anchor: h1, user: ops, controller: ctl, playbook: deploy.yml,
                     cards: {c: "sha256:abc"}}
    launchcard_plan: {hosts: {h1: {card: c}, h2: {card: c}}}
    launchcard_keep_fleet_lock: false
    holder: {run_id: plan-1, user: ops, controller: ctl, playbook: deploy.yml, card: "sha256:abc"}
  tasks:
    - name: A slice of the plan left the fleet lock held on the anchor
      launchcard.inference.run_lock:
        paths: [{path: "%(dir)s/fleet-lock.json", scope: fleet}]
        holder: "{{ holder }}"
      run_once: true
    - name: h2 took its host lock and did not finish
      launchcard.inference.run_lock:
        paths: [{path: "%(dir)s/h2-lock.json", scope: host}]
        holder: "{{ holder }}"
      register: launchcard_host_step
      when: inventory_hostname == 'h2'
    - name: The deploy's always section
      ansible.builtin.import_tasks: %(root)s/playbooks/tasks/release-locks.yml
"""


@pytest.mark.parametrize("final", [True, False])
def test_the_always_section_releases_what_a_host_took_and_the_final_job_the_slices_fleet_lock(tmp_path, final):
    (tmp_path / "inventory.ini").write_text("".join("%s ansible_connection=local ansible_python_interpreter=%s\n"
                                                    % (h, sys.executable) for h in ("h1", "h2")))
    (tmp_path / "play.yml").write_text(RELEASE_PLAY % {"dir": tmp_path, "root": ROOT})
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    res = subprocess.run([os.path.join(bindir, "ansible-playbook"), "-i", str(tmp_path / "inventory.ini"),
                          str(tmp_path / "play.yml"), "-e", "launchcard_plan_final=%s" % final], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert not (tmp_path / "h2-lock.json").exists()
    assert (tmp_path / "fleet-lock.json").exists() is not final
    released = "h1: %s/fleet-lock.json" % tmp_path
    # one release loop: h2's host lock, then the anchor's fleet lock on the final job
    assert "(item=h2: %s/h2-lock.json)" % tmp_path in res.stdout
    assert ("(item=%s)" % released in res.stdout) is final, res.stdout
