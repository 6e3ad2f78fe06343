# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The weights role run for real by ansible-playbook on the controller (connection local) against the sandbox
hub (tests/sandbox/hub) on 127.0.0.1: the download runs async, the run's output shows its progress between
polls, the result is the module's; a second run is one module call and no download; the token shows nowhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request

import pytest
import yaml

pytest.importorskip("huggingface_hub")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
REPO = "zai-org/GLM-5.3-Flash"
REV = "46a050bec13002ad29ee795c16e61cf4fa3c4a9c"
TOKEN = "hf_roleTESTtoken77"
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
           ANSIBLE_NOCOLOR="1", PATH=BIN + os.pathsep + os.environ.get("PATH", ""))


@pytest.fixture(scope="module")
def hub():
    sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
    from hub import server
    h = server.Hub(["%s@%s" % (REPO, REV)])
    srv = server.start(h)
    yield h, "http://127.0.0.1:%d" % srv.server_address[1], server.generate_repo(REPO, REV)
    srv.shutdown()
    srv.server_close()


def served(url):
    with urllib.request.urlopen(url + "/_sandbox/stats", timeout=5) as resp:
        return json.loads(resp.read())["bytes_served"]


def command_lines():
    """The command line of every process on this machine now."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                found.append(f.read().replace(b"\0", b" ").decode("utf-8", "replace"))
        except OSError:
            pass
    return found


def play(tmp_path, url):
    venv = tmp_path / "venv"
    site = venv / "lib" / ("python%d.%d" % sys.version_info[:2]) / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    (venv / ".launchcard-test").write_text("[]\n")  # the role's virtualenv stamp: no pip install here
    extra = {
        "launchcard_plan": {"hosts": {"localhost": {"card": "glm", "instances": [{"role": "prefill"}]}}},
        "launchcard_cards": {"glm": {"model": {"repo": REPO, "revision": REV}}},
        "weights_source": "hub", "weights_dir": str(tmp_path / "models"), "weights_hf_endpoint": url,
        "weights_hf_token": TOKEN, "weights_hf_allow_http_token": True,  # the hub on 127.0.0.1: plain HTTP
        "weights_venv": str(venv), "weights_venv_stamp": "test",
        "weights_progress_dir": str(tmp_path / "progress"), "weights_progress_interval_s": 1,
        "weights_max_workers": 1, "ansible_python_interpreter": sys.executable,
    }
    (tmp_path / "vars.yml").write_text(yaml.safe_dump(extra))
    (tmp_path / "play.yml").write_text(
        "- hosts: localhost\n  gather_facts: false\n  connection: local\n"
        "  roles:\n    - role: launchcard.inference.weights\n")
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", str(tmp_path / "play.yml"),
                           "-e", "@%s" % (tmp_path / "vars.yml")],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600, check=False)


def test_the_download_runs_async_prints_its_progress_and_a_second_run_is_one_listing(hub, tmp_path):
    server_hub, url, files = hub
    total = sum(len(b) for b in files.values())
    server_hub.delay = 1.0  # one file a second, one worker: a few polls see the download half done
    argv_seen = []
    server_hub.before_body = lambda path: argv_seen.extend(command_lines())  # while the async module runs
    try:
        res = play(tmp_path, url)
    finally:
        server_hub.delay = 0.0
        server_hub.before_body = None
    out = res.stdout + res.stderr
    if os.environ.get("LAUNCHCARD_SHOW_RUN"):
        sys.stderr.write(out)
    assert res.returncode == 0, out
    assert TOKEN not in out
    assert any("async_wrapper" in a for a in argv_seen)  # the download was running in the background
    assert not [a for a in argv_seen if TOKEN in a]
    lines = re.findall(r"ok: \[localhost\] => \(item=(.*)\)", out)
    partial = [l for l in lines if re.match(r"\d+(\.\d+ KiB| bytes) of %s \(\d+%%\), \d of 5 files" % re.escape(
        "%.2f KiB" % (total / 1024.0)), l)]
    assert partial and any(" 5 of 5 files" not in l for l in partial), lines
    assert lines[-1].startswith("done: %.2f KiB of %.2f KiB (100%%), 5 of 5 files" % (total / 1024.0, total / 1024.0))
    assert re.search(r"TASK \[launchcard\.inference\.weights : Weights \| Collect the download's result\] \*+\n"
                     r"changed: \[localhost\]", out), out
    snap = tmp_path / "models" / "hub" / "models--zai-org--GLM-5.3-Flash" / "snapshots" / REV
    for path, data in files.items():
        assert (snap / path).read_bytes() == data
    stamp = tmp_path / "models" / "hub" / "models--zai-org--GLM-5.3-Flash" / (".launchcard-complete-" + REV)
    assert stamp.read_text().strip() == str(total)
    assert os.listdir(str(tmp_path / "progress")) == []  # the progress file (and its lock) removed
    assert (tmp_path / "progress").stat().st_mode & 0o777 == 0o700

    before = served(url)
    res = play(tmp_path, url)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert served(url) == before
    ran = re.findall(r"TASK \[launchcard\.inference\.weights : Weights \| ([^\]]*)\] \*+\n(?:ok|changed): ", out)
    # the virtualenv's stamp, one listing (one hf_snapshot call), the completion stamp (a stat, unchanged)
    assert ran == ["Look for the stamp of the huggingface_hub virtualenv",
                   "Compare the cache with the Hub's listing of the revision", "Record that the revision is complete"], out
    assert re.search(r"changed=0 ", out), out


def test_a_download_that_fails_in_the_background_fails_the_host_with_the_modules_cause(hub, tmp_path):
    """Case C through the async download: the progress loop stops when the download does, and the host fails
    in the task that collects the result, with the module's cause and message (not a timeout, not a poll)."""
    server_hub, url, files = hub
    shard = "model-00002-of-00002.safetensors"
    server_hub.truncate.add(shard)
    try:
        res = play(tmp_path, url)
    finally:
        server_hub.truncate.discard(shard)
    out = res.stdout + res.stderr
    assert res.returncode == 2, out
    assert TOKEN not in out
    failed = out.split("Collect the download's result] ***", 1)[1].split("PLAY RECAP", 1)[0]
    assert "fatal: [localhost]: FAILED!" in failed and "cause: truncated download" in failed, out
    assert "truncated download: %s of %s at %s from %s" % (shard, REPO, REV, url) in out
    assert re.search(r"ok: \[localhost\] => \(item=failed: ", out), out
    stamp = tmp_path / "models" / "hub" / "models--zai-org--GLM-5.3-Flash" / (".launchcard-complete-" + REV)
    assert not stamp.exists()
