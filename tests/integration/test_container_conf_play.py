# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container_conf action run by ansible-playbook (connection local, podman's files in a temporary folder): in
check mode and with --diff it says what the file and copy tasks it replaced said, a real run writes the same
bytes, a second run changes nothing, and the auth file's password shows nowhere."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as images  # noqa: E402
BIN = os.path.dirname(sys.executable)
PASSWORD = "s3cret-conf-pw"
MIRRORS = {"quay.io": [{"location": "10.0.0.5:5000", "insecure": True}]}
CREDS = {"quay.io": {"username": "robot", "password": PASSWORD}}
# the tasks the action replaced (roles/runtime/tasks/containers.yml before issue 45), the filters' logic inlined
OLD = '''
    - name: Runtime | Name the registry mirrors (podman)
      ansible.builtin.copy:
        content: "{{ registries }}"
        dest: "{{ conf }}/registries.conf.d/50-launchcard-mirrors.conf"
        mode: "0644"
    - name: Runtime | Create the drop-in directory of containers.conf (podman)
      ansible.builtin.file:
        path: "{{ conf }}/containers.conf.d"
        state: directory
        mode: "0755"
    - name: Runtime | Turn off the per-container keyring (podman)
      ansible.builtin.copy:
        dest: "{{ conf }}/containers.conf.d/50-launchcard.conf"
        content: "{{ containers }}"
        mode: "0644"
'''
NEW = '''
    - name: Runtime | Name the registry mirrors and the engine's settings
      launchcard.inference.container_conf:
        runtime: podman
        mirrors: "{{ mirrors }}"
        keyring: false
        conf_dir: "{{ conf }}"
        images: [quay.io/org/engine:1]
      register: conf_result
    - name: Runtime | Write or remove the registry auth file (podman)
      launchcard.inference.container_conf:
        part: auth
        runtime: podman
        mirrors: "{{ mirrors }}"
        credentials: "{{ creds }}"
        credentials_plain_http: [10.0.0.5:5000]
        auth_file: "{{ conf }}/auth/registry-auth.json"
      no_log: "{{ creds | length > 0 }}"
    - name: Show the pull groups
      ansible.builtin.debug:
        msg: "GROUPS {{ conf_result.pull_groups | to_json }}"
'''


def play(tmp_path, tasks, conf, *args, creds=None):
    (tmp_path / "play.yml").write_text("- hosts: all\n  gather_facts: false\n  tasks:" + tasks)
    (tmp_path / "inventory.ini").write_text("h ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
    extra = {"conf": str(conf), "mirrors": MIRRORS, "creds": CREDS if creds is None else creds,
             "registries": images.podman_registries_conf(MIRRORS), "containers": images.podman_containers_conf(False)}
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_NOCOLOR="1", PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(tmp_path / "inventory.ini"),
                          str(tmp_path / "play.yml"), "-e", json.dumps(extra)] + list(args), cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert PASSWORD not in res.stdout + res.stderr
    return res.stdout


def diffs(out, conf):
    """The --diff blocks of a run, the folder written into named CONF."""
    said = "".join(re.findall(r"^(--- before.*?)(?=^(?:changed|ok|skipping): )", out, re.M | re.S))
    return ["--- before" + b.rstrip("\n") for b in said.replace(str(conf), "CONF").split("--- before")[1:]]


def files(conf):
    return dict((os.path.relpath(os.path.join(d, f), str(conf)), open(os.path.join(d, f)).read())
                for d, dummy, names in os.walk(str(conf)) for f in names)


def test_check_mode_and_diff_say_what_the_replaced_tasks_said_and_the_files_are_the_same(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    for conf in (old, new):
        (conf / "registries.conf.d").mkdir(parents=True)
    said_old = play(tmp_path, OLD, old, "--check", "--diff")
    said_new = play(tmp_path, NEW, new, "--check", "--diff")
    assert diffs(said_new, new) == diffs(said_old, old) and len(diffs(said_old, old)) == 3, (said_old, said_new)
    assert files(old) == files(new) == {}  # check mode wrote nothing
    play(tmp_path, OLD, old)
    out = play(tmp_path, NEW, new, "--diff")
    assert json.loads(re.search(r"GROUPS (\{.*\})", out).group(1).replace('\\"', '"')) == {
        "quay.io": {"images": ["quay.io/org/engine:1"], "throttle": 0}}
    written = files(new)
    auth = written.pop("auth/registry-auth.json")
    assert written == files(old)
    assert json.loads(auth) == images.registry_auth(CREDS, MIRRORS, ["10.0.0.5:5000"])
    assert os.stat(str(new / "auth" / "registry-auth.json")).st_mode & 0o777 == 0o600
    assert os.stat(str(new / "auth")).st_mode & 0o777 == 0o700
    again = play(tmp_path, NEW, new, "--diff")
    assert re.search(r"^h\s+: ok=3\s+changed=0 ", again, re.M), again
    # emptied credentials remove the file, its diff shown as the file module's
    gone = play(tmp_path, NEW, new, "--diff", creds={})
    assert not (new / "auth" / "registry-auth.json").exists()
    assert "after" in gone and "absent" in gone
