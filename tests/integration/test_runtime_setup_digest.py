# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/runtime's setup digest (runtime_settings' setup, kept in each host's record) as ansible-playbook gets it
from the role's defaults: a rotated registry password changes it, so the container steps run again and rewrite the
auth file; the same credentials keep it, so a no-op run skips them; neither it nor the output shows the password."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
PASSWORD = "rotate-me-0"
PLAY = '''
- hosts: all
  gather_facts: false
  tasks:
    - name: The runtime role's defaults
      ansible.builtin.include_vars:
        file: %s
    - name: Decide what the runtime steps do
      launchcard.inference.runtime_settings:
      register: runtime_settings
    - name: Show each host's setup digest
      ansible.builtin.debug:
        msg: "DIGEST {{ inventory_hostname }} {{ runtime_settings.setup }}"
''' % os.path.join(ROOT, "roles", "runtime", "defaults", "main.yml")


def digests(tmp_path, creds):
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "inventory.ini").write_text("".join(
        "%s ansible_connection=local ansible_python_interpreter=%s\n" % (h, sys.executable) for h in ("a", "b")))
    extra = {"launchcard_runtime": "podman", "launchcard_plan": {"hosts": {}},
             "launchcard_registry_mirrors": {"docker.io": [{"location": "10.0.0.5:5000", "insecure": True}]}}
    if creds is not None:
        extra["launchcard_registry_credentials"] = creds
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(tmp_path / "inventory.ini"),
                          str(tmp_path / "play.yml"), "-e", json.dumps(extra)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert PASSWORD[:-1] not in res.stdout + res.stderr
    return dict(re.findall(r"DIGEST (\w+) ([0-9a-f]{40})\b", res.stdout))


def test_a_rotated_password_changes_the_setup_digest_and_the_same_one_keeps_it(tmp_path):
    creds = {"docker.io": {"username": "puller", "password": PASSWORD}}
    first = digests(tmp_path, creds)
    assert set(first) == {"a", "b"}
    assert digests(tmp_path, creds) == first
    rotated = digests(tmp_path, {"docker.io": {"username": "puller", "password": PASSWORD[:-1] + "1"}})
    assert all(rotated[h] != first[h] for h in first)
    # without credentials: the digest as before they existed (records of hosts deployed without them stay valid)
    none, empty = digests(tmp_path, None), digests(tmp_path, {})
    assert none == empty and all(none[h] != first[h] for h in first)
