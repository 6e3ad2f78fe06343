# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/stack_reboot run by ansible-playbook on six local hosts: reboots in batches, in order, and a
host whose driver is still wrong after its reboot stops the later batches.

TEST CODE: a copy of the role in a temporary directory where the three host-touching steps are
replaced, and only they: the reboot logs the host and the time instead of rebooting, the engines
listing is an ``echo``, and the accelerator reading reports host ``g4``'s driver still mismatched.
Everything else (the verdict per host, the batches, the include order, the stop) is the role's own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
HOSTS = ["g1", "g2", "g3", "g4", "g5", "g6"]
REBOOT = '''      ansible.builtin.reboot:
        msg: "{{ stack_reboot_msg }}"
        reboot_timeout: "{{ stack_reboot_timeout }}"'''
FACTS = '''      launchcard.inference.accelerator_facts:
        vendor: "{{ stack_reboot_vendor }}"'''
LOCAL = "and ansible_connection | default('ssh') != 'local'"


@pytest.fixture
def project(tmp_path):
    role = tmp_path / "roles" / "stack_reboot"
    shutil.copytree(os.path.join(ROOT, "roles", "stack_reboot"), str(role))
    batch, main = role / "tasks" / "batch.yml", role / "tasks" / "main.yml"
    text = batch.read_text()
    assert REBOOT in text and FACTS in text and "argv: [systemctl," in text
    text = text.replace(REBOOT, '''      ansible.builtin.shell: "echo rebooted {{ inventory_hostname }} >> %s"''' % (tmp_path / "reboots.log"))
    text = text.replace(FACTS, '''      ansible.builtin.set_fact:
        cacheable: true
        launchcard_accelerators:
          errors: []
          driver: {loaded_version: "1", installed_version: "2", reboot_required: "{{ inventory_hostname in bad }}"}''')
    batch.write_text(text.replace("argv: [systemctl,", "argv: [echo,"))
    text = main.read_text()
    assert LOCAL in text
    main.write_text(text.replace(LOCAL, ""))  # the test hosts are local connections
    (tmp_path / "inventory.ini").write_text("".join(
        "%s ansible_connection=local ansible_python_interpreter=%s\n" % (h, sys.executable) for h in HOSTS))
    (tmp_path / "play.yml").write_text('''
- hosts: all
  gather_facts: false
  tasks:
    - name: The stack role's reboot
      ansible.builtin.include_role:
        name: stack_reboot
      vars:
        stack_reboot_needed: "{{ inventory_hostname != 'g2' }}"
        stack_reboot_vendor: nvidia
        # the caller's own variable, as roles/rocm and roles/ascend name theirs
        stack_reboot_result_var: caller_reboot_result
    - name: What the caller reads
      ansible.builtin.debug:
        msg: "REBOOTED {{ inventory_hostname }} {{ caller_reboot_result is changed }}"
''')
    return tmp_path


def play(project, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_ROLES_PATH=str(project / "roles"), PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(project / "inventory.ini"),
                          str(project / "play.yml")] + list(extra), cwd=ROOT, env=env, capture_output=True,
                         text=True, check=False)
    log = project / "reboots.log"
    return res, log.read_text().split() if log.exists() else []


def batches(stdout):
    """The hosts that rebooted, per batch, in the order the batches ran."""
    out = []
    for part in stdout.split("TASK [stack_reboot : Stack reboot | Reboot the host")[1:]:
        out.append(sorted(re.findall(r"^changed: \[(\w+)\]", part.split("TASK [")[0], re.M)))
    return out


def test_reboots_go_in_batches_in_play_order(project):
    res, dummy = play(project, "-e", "launchcard_stack_reboot_serial=2", "-e", "bad=[]")
    assert res.returncode == 0, res.stdout[-4000:]
    # g2 needs none; the others two at a time, one batch after another
    assert batches(res.stdout) == [["g1", "g3"], ["g4", "g5"], ["g6"]]
    # each host's result in the variable its caller named
    assert dict(re.findall(r"REBOOTED (\w+) (\w+)", res.stdout)) == dict(
        (h, str(h != "g2")) for h in HOSTS)


def test_a_host_still_wrong_after_its_reboot_stops_the_later_batches(project):
    # one host at a time by default
    res, rebooted = play(project, "-e", "bad=['g4']")
    assert res.returncode != 0
    assert batches(res.stdout) == [["g1"], ["g3"], ["g4"]]
    assert rebooted[1::2] == ["g1", "g3", "g4"]  # g5 and g6 never rebooted
    assert "g4: still a driver mismatch after the reboot" in res.stdout
    assert "stack reboots stopped: g4 failed in batch 3" in res.stdout


def test_check_mode_reboots_nothing(project):
    res, rebooted = play(project, "--check", "-e", "bad=[]")
    assert res.returncode == 0, res.stdout[-4000:]
    assert rebooted == [] and batches(res.stdout) == []
