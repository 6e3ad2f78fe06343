# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""End to end: a host's weights from Hub endpoints that lie, or that a token must not reach (issue #42).

A sandbox fleet of one (inventories/hostile/gpus.ini, 198.18.40.0/24, state dir .sandbox-hostile/). Each test runs
the weights part of a deploy (``--tags weights``: the plan, then the weights role, over real SSH with the real
huggingface_hub on the host) against the fleet's own plain-HTTP hub or a hostile one this file starts on the bridge
(tests/sandbox/hub/server.py ``--flip-once``, ``--flip``, ``--list-path``):

- a token for the plain-HTTP hub is refused at planning, before any host is asked, unless
  ``launchcard_hf_allow_http_token`` is set;
- a shard served once with one byte inverted is caught by its sha256 and fetched again; inverted on every GET,
  the host fails naming it and the revision is not stamped;
- a listing naming ``../../../../planted`` and ``/root/planted-abs`` fails the host naming the path, and both
  files, planted outside the snapshot, are still there.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest

from playbook_output import recap
from sandbox_cli import ROOT, Fleet

INVENTORY = "inventories/hostile/gpus.ini"
FLEET = Fleet(INVENTORY, ".sandbox-hostile")
HOST = "hostile-gpu"
BRIDGE = "198.18.40.1"
HF_HOME = "/var/lib/launchcard/models"
TOKEN = "hf_hostileE2Etoken42"
SHARD = "model-00001-of-00002.safetensors"

with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as _f:
    _HF = json.load(_f)["hf"]
REPO, REV = _HF["repo"], _HF["revision"]
SNAPSHOT = "hub/models--%s/snapshots/%s" % (REPO.replace("/", "--"), REV)
STAMP = "hub/models--%s/.launchcard-complete-%s" % (REPO.replace("/", "--"), REV)

sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
from hub import server  # noqa: E402
from sandbox_fleet.base import port_open  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("systemd-nspawn"),
                                reason="the sandbox fleet needs root and systemd-nspawn")


def ssh(command):
    return FLEET.ssh(HOST, command, timeout=120)


def stats(url):
    with urllib.request.urlopen(url + "/_sandbox/stats", timeout=10) as resp:
        return json.loads(resp.read())


def weights(*extra):
    """The weights part of a deploy; ``(result, output)``."""
    res = FLEET.playbook("deploy", "--tags", "weights", *extra)
    return res, res.stdout + res.stderr


@contextlib.contextmanager
def hostile_hub(port, *flags):
    """A sandbox hub serving the card's revision on the bridge with ``flags``; its URL. Stopped after (its pid)."""
    args = [sys.executable, "-m", "hub.server", "--bind", BRIDGE, "--port", str(port), "--repo", "%s@%s" % (REPO, REV)]
    proc = subprocess.Popen(args + list(flags), cwd=os.path.join(ROOT, "tests", "sandbox"), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for dummy in range(100):
            if port_open(BRIDGE, port):
                break
            assert proc.poll() is None, "the hostile hub on port %d exited" % port
            time.sleep(0.1)
        yield "http://%s:%d" % (BRIDGE, port)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def fleet():
    try:
        up = FLEET.up()
        assert up.returncode == 0, up.stdout + up.stderr
        yield
    finally:
        if not os.environ.get("LAUNCHCARD_KEEP_FLEET"):
            FLEET.down()


def test_a_token_for_the_plain_http_hub_is_refused_at_planning_unless_allowed(fleet):
    hub = "http://%s:8470" % BRIDGE
    asked = stats(hub)["api_requests"]
    res, out = weights("-e", "launchcard_hf_token=%s" % TOKEN)
    assert res.returncode != 0
    assert "hostile-gpu: the Hub endpoint %s is plain HTTP and a token is set (launchcard_hf_token)" % hub in out, out[-3000:]
    assert "set launchcard_hf_allow_http_token: true" in out and TOKEN not in out
    assert ssh("test -e %s/hub && echo there || echo absent" % HF_HOME).stdout.strip() == "absent"
    assert stats(hub)["api_requests"] == asked

    res, out = weights("-e", "launchcard_hf_token=%s" % TOKEN, "-e", "launchcard_hf_allow_http_token=true")
    assert res.returncode == 0, out[-4000:]
    assert recap(res.stdout)[HOST]["failed"] == 0 and TOKEN not in out
    assert ssh("cat %s/%s" % (HF_HOME, STAMP)).stdout.strip() == str(sum(map(len, server.generate_repo(REPO, REV).values())))


def test_one_flipped_byte_is_caught_by_its_sha256_and_fetched_again(fleet):
    files = server.generate_repo(REPO, REV)
    home = "/srv/hostile-flip-once"
    with hostile_hub(8471, "--flip-once", SHARD) as hub:
        res, out = weights("-e", "launchcard_hf_endpoint=%s" % hub, "-e", "launchcard_weights_dir=%s" % home)
        served = stats(hub)
    assert res.returncode == 0, out[-4000:]
    assert served["flipped"] == 1 and served["files"][SHARD] == 2
    got = ssh("sha256sum %s/%s/%s" % (home, SNAPSHOT, SHARD)).stdout.split()[0]
    assert got == hashlib.sha256(files[SHARD]).hexdigest()
    assert ssh("test -e %s/%s && echo stamped" % (home, STAMP)).stdout.strip() == "stamped"


def test_a_byte_flipped_on_every_fetch_fails_naming_the_file_and_stamps_nothing(fleet):
    home = "/srv/hostile-flip-always"
    with hostile_hub(8472, "--flip", SHARD) as hub:
        res, out = weights("-e", "launchcard_hf_endpoint=%s" % hub, "-e", "launchcard_weights_dir=%s" % home)
        served = stats(hub)
    assert res.returncode != 0 and recap(res.stdout)[HOST]["failed"] == 1
    assert "checksum mismatch: %s of %s at %s, downloaded from %s and fetched again" % (SHARD, REPO, REV, hub) in out, \
        out[-4000:]
    assert served["files"][SHARD] == 2
    assert ssh("test -e %s/%s && echo stamped || echo none" % (home, STAMP)).stdout.strip() == "none"


def test_a_hostile_listing_deletes_nothing_outside_the_snapshot(fleet):
    # the snapshot folder exists (the first test staged it), so ../../../../planted resolves to <hf_home>/planted
    planted = ssh("test -d %s/%s && echo keep > %s/planted && echo keep > /root/planted-abs && echo planted"
                  % (HF_HOME, SNAPSHOT, HF_HOME))
    assert planted.stdout.strip() == "planted", planted.stdout + planted.stderr
    with hostile_hub(8473, "--list-path", "../../../../planted", "--list-path", "/root/planted-abs") as hub:
        res, out = weights("-e", "launchcard_hf_endpoint=%s" % hub)
        served = stats(hub)
    assert ssh("cat %s/planted /root/planted-abs" % HF_HOME).stdout.split() == ["keep", "keep"]
    assert res.returncode != 0 and recap(res.stdout)[HOST]["failed"] == 1
    # the listing names them in this order, and the first one stops the host
    assert "unsafe listing: the hub listed the file '../../../../planted', which is not a path inside the snapshot " \
        "(it climbs out with '..'); nothing was read, removed or downloaded" in out, out[-4000:]
    assert served["file_requests"] == 0
