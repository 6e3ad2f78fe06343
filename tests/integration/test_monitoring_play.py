# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/monitoring.yml run by ansible-playbook on local hosts: which role runs where (issue 43).

TEST CODE: the playbook runs unchanged against a throwaway copy of the collection whose three roles
(``node_exporter``, ``gpu_exporter``, ``prometheus``) only log the host they ran on and, for the exporter, the
value of ``gpu_exporter_enabled`` it got; the real roles install packages and units this machine cannot take.
"""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
ROLES = ("node_exporter", "gpu_exporter", "prometheus")
TASK = """---
- name: Log where the role ran
  ansible.builtin.lineinfile:
    path: "%(log)s"
    line: "%(role)s {{ inventory_hostname }}%(extra)s"
    create: true
    mode: "0644"
  delegate_to: localhost
  # one writer at a time: lineinfile reads, edits and replaces the file, so parallel hosts lose each other's lines
  throttle: 1
  # a log, not a change of the host: the recap counts only the playbook's own changes
  changed_when: false
"""


def _run(tmp_path, hosts):
    """monitoring.yml over ``hosts`` (``NAME [VAR=VALUE ...]``) and the monitoring host ``prom``: its result and log."""
    coll = tmp_path / "collections" / "ansible_collections" / "launchcard" / "inference"
    log = tmp_path / "roles.log"
    for role in ROLES:
        (coll / "roles" / role / "tasks").mkdir(parents=True)
        # the real role's own default, read from its defaults file: false where the inventory says false
        extra = " {{ gpu_exporter_enabled | bool }}" if role == "gpu_exporter" else ""
        (coll / "roles" / role / "tasks" / "main.yml").write_text(TASK % {"log": log, "role": role, "extra": extra})
    os.symlink(os.path.join(ROOT, "roles", "gpu_exporter", "defaults"), str(coll / "roles" / "gpu_exporter" / "defaults"))
    # the real plugins and meta: the repository's ansible.cfg (as `make` exports it) loads the collection's callback
    for part in ("plugins", "meta"):
        os.symlink(os.path.join(ROOT, part), str(coll / part))
    (coll / "galaxy.yml").write_text("namespace: launchcard\nname: inference\nversion: 1.0.0\n")
    local = "ansible_connection=local ansible_python_interpreter=%s" % sys.executable
    (tmp_path / "inventory.ini").write_text("\n".join(
        ["%s %s" % (h, local) for h in hosts] + ["[launchcard_monitoring]", "prom %s" % local, ""]))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), PATH=BIN + os.pathsep + os.environ.get("PATH", ""),
               ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"), ANSIBLE_RETRY_FILES_ENABLED="0")
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(tmp_path / "inventory.ini"),
                          os.path.join(ROOT, "playbooks", "monitoring.yml")],
                         cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600, check=False)
    return res, log.read_text() if log.exists() else ""


def test_the_exporter_runs_only_where_a_host_set_its_variable(tmp_path):
    # gpu-off: turned off again, so the role runs there and removes the unit
    res, log = _run(tmp_path, ["gpu-on launchcard_gpu_exporter_enabled=true", "gpu-off launchcard_gpu_exporter_enabled=false",
                               "plain"])
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert sorted(log.splitlines()) == [
        "gpu_exporter gpu-off False", "gpu_exporter gpu-on True",
        "node_exporter gpu-off", "node_exporter gpu-on", "node_exporter plain", "node_exporter prom",
        "prometheus prom"]
    # the hosts that never set it get no task of the exporter's play, not even a skipped one; nothing changed
    play = res.stdout.split("PLAY [Accelerator exporters", 1)[1].split("PLAY [", 1)[0]
    assert "plain" not in play and "prom" not in play, play
    recap = res.stdout.split("PLAY RECAP", 1)[1]
    assert recap.count("changed=0") == 4, recap
    assert "WARNING" not in res.stdout + res.stderr, res.stdout + res.stderr


def test_no_host_sets_it_and_the_exporters_play_matches_nothing_quietly(tmp_path):
    res, log = _run(tmp_path, ["plain"])
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "gpu_exporter" not in log and "node_exporter plain" in log
    assert "WARNING" not in res.stdout + res.stderr, res.stdout + res.stderr
