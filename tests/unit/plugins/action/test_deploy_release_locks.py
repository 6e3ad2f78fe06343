# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/tasks/release-locks.yml, deploy.yml's always section, in a real play: the locks a run still holds when it
ends are released (run_lock_status finds them, the run_lock action the final job's fleet lock)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

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
    assert "(item=h2: %s/h2-lock.json)" % tmp_path in res.stdout
    # (a task every host skips prints nothing: display_skipped_hosts is off in ansible.cfg)
    assert ("Release the fleet lock of this plan's slices" in res.stdout) is final, res.stdout
