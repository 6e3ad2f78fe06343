# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""End to end: upgrade.yml moves three SGLang replicas, run as podman containers behind a real sglang-router
(regular mode, itself a container), to a new image digest and a new model revision while a load generator
sends completions through the router. The container version of test_upgrade_sandbox.py (native engines):
here what moves is the image every replica runs, pinned by digest.

Fleet: inventories/upgrade-containers/gpus.ini (lc-cu-*, 198.18.11.0/24, state dir .sandbox-upgrade-containers/,
hosts on the `podman` root filesystem, the sandbox registry on the bridge as a mirror of Docker Hub). Purged
before and after. Cards: tests/e2e/cards/upgrade-containers-v1.json (every recipe on lmsysorg/sglang:v0.5.0,
deployed first) and upgrade-containers-v2.json (the replicas on lmsysorg/sglang:v0.5.1 and a new hf revision;
the router keeps v0.5.0). The fleet script pushes the one stand-in engine image under every card tag, so both
tags would name one digest: this file pushes a variant of it (one more label in its config: a new manifest
digest) under v0.5.1 before anything is deployed.

Weights come with the default `peer` source: the first deploy takes one copy of the repository from the sandbox
hub (its `/_sandbox/stats` counts the bytes), on lc-cu-w1, and the other replicas copy it from there with rsync.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import sys
import time
import urllib.request

import pytest

from sandbox_cli import ROOT, Fleet
from playbook_output import recap
from sandbox_registry import push_variant, registry_digest
from router_load import InFlightStream, Load, healthy_workers, http

sys.path.insert(0, os.path.join(ROOT, ".collections"))  # the checkout as ansible_collections.launchcard.inference
from ansible_collections.launchcard.inference.plugins.plugin_utils._weights import peer_receive  # noqa: E402

INVENTORY = "inventories/upgrade-containers/gpus.ini"
STATE = ".sandbox-upgrade-containers"
FLEET = Fleet(INVENTORY, STATE)
playbook, ssh, down = FLEET.playbook, FLEET.ssh, FLEET.down
playbook_watched = FLEET.playbook_watched
CARDS = os.path.join(ROOT, "tests", "e2e", "cards")
REGISTRY = "198.18.11.1:5000"
WORKERS = {"lc-cu-w1": "198.18.11.11", "lc-cu-w2": "198.18.11.12", "lc-cu-w3": "198.18.11.13"}
ROUTER = "198.18.11.20"
ROUTER_URL = "http://%s:30080" % ROUTER
WORKER_URLS = {"http://%s:30000" % a for a in WORKERS.values()}
MODEL = "launchcard-test/Upgrade-Tiny"
REV1, REV2 = "1" * 40, "2" * 40
# the cards' image tags (v1: every recipe; v2: the replicas, the router keeps V1) and where the hosts run them from
IMAGE_V1, IMAGE_V2 = "lmsysorg/sglang:v0.5.0", "lmsysorg/sglang:v0.5.1"
PINNED = "docker.io/lmsysorg/sglang@"
# each host's container (its instance id: the plan numbers the replicas in host order)
REPLICAS = {host: "upgrade-tiny-sglang-aggregated-%d" % n for n, host in enumerate(sorted(WORKERS))}
ROUTER_CONTAINER = "upgrade-tiny-sglang-router-0"
SERIAL = 1
HUB = "http://198.18.11.1:8470"  # the sandbox hub on the bridge (launchcard_hf_endpoint of the inventory)
SNAPSHOT = "/var/lib/launchcard/models/hub/models--%s" % MODEL.replace("/", "--")
RECEIVE_CONF = "/run/launchcard-weights-receive.conf"  # the weights role's weights_peer_receive_conf
# the hub's counters around the first deploy, and that deploy's output (filled by the fleet fixture)
FIRST = {}
# the drain waits at most 150 s for in-flight requests (the stream below needs 80 s); a gate that gives up on a
# container in 2 minutes
FAST = ["-e", "launchcard_upgrade_drain_s=150", "-e", "launchcard_upgrade_gate_timeout_s=120"]
# Bug-report case J: a stream in flight on the first batch's replica when it leaves the router. The cards' replicas
# make one token every 0.5 s (LAUNCHCARD_STANDIN_TOKEN_S): 160 tokens take 80 s, longer than the 60 s a container
# stop gives an engine before SIGKILL, so only a drain that waits for it lets it finish.
STREAM_TOKENS = 160
STREAM = {}
V2 = ["-e", "launchcard_card_src=%s/upgrade-containers-v2.json" % CARDS]

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("systemd-nspawn") or not os.path.exists("/usr/bin/docker-registry")
    or not shutil.which("skopeo"),
    reason="the container sandbox needs root, systemd-nspawn, docker-registry and skopeo (make host-deps)")


def container(address, name):
    """``[image digest, image name, running, container id]`` of a container on a host, as podman reports them."""
    out = ssh(address, "podman inspect --format '{{.ImageDigest}} {{.ImageName}} {{.State.Running}} {{.Id}}' " + name)
    return out.stdout.split() or [out.stderr.strip()]


def hub_stats():
    with urllib.request.urlopen(HUB + "/_sandbox/stats", timeout=10) as resp:
        return json.loads(resp.read())


def hub_files(revision):
    """The files of the test model at ``revision``, as the sandbox hub generates them (tests/sandbox/hub)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
    from hub import server
    return server.generate_repo(MODEL, revision)


def record(address):
    """The host's record, /var/lib/launchcard/state.json."""
    return json.loads(ssh(address, "cat /var/lib/launchcard/state.json").stdout)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The fleet with v1 deployed; ``(v1 digest, v2 digest)`` as the registry serves the two tags."""
    down()  # fresh hosts: no image and no record from an earlier run
    up = FLEET.up()
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        old = registry_digest(REGISTRY, IMAGE_V1)
        new = push_variant(REGISTRY, IMAGE_V1, IMAGE_V2, "upgrade-containers-v2", tmp_path_factory.mktemp("image"))
        before = hub_stats()
        res = playbook("deploy")
        assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
        FIRST.update(before=before, after=hub_stats(), stdout=res.stdout)
        yield old, new
    finally:
        if not os.environ.get("LAUNCHCARD_KEEP_FLEET"):
            down()


@pytest.fixture(scope="module")
def upgraded(fleet):
    router_before = container(ROUTER, ROUTER_CONTAINER)
    seen = {}

    def watch(line):
        # when batch 1 starts (its replica still in the router, serving on the old digest), and when it switches
        for key, task in (("batch", "TASK [Upgrade | Take this host's instances out of the routers (batch 1)]"),
                          ("switch", "TASK [Upgrade | Switch the units (batch 1)]")):
            if line.startswith(task) and key not in seen:
                seen[key] = time.time()

    # straight to the first batch's replica, on its old process, as its batch starts
    with InFlightStream(WORKERS["lc-cu-w1"], 30000, MODEL, STREAM_TOKENS, lambda: "batch" in seen) as stream:
        with Load(ROUTER_URL, MODEL, WORKER_URLS) as load:
            time.sleep(2)
            res = playbook_watched("upgrade", watch, *(V2 + FAST))
            time.sleep(2)
    STREAM.update(stream=stream, seen=seen)
    return res, load, router_before


def test_v1_runs_one_digest_everywhere_and_v2_names_another(fleet):
    old, new = fleet
    assert old != new
    for address, name in [(WORKERS[h], REPLICAS[h]) for h in sorted(WORKERS)] + [(ROUTER, ROUTER_CONTAINER)]:
        assert container(address, name)[:3] == [old, PINNED + old, "true"], address
        state = record(address)
        assert state["runtime"]["kind"] == "podman" and state["card"]["revision"] == REV1, address
        assert state["runtime"]["image_refs"] == {IMAGE_V1: PINNED + old}, address
    assert healthy_workers(ROUTER_URL) == WORKER_URLS


def test_one_copy_from_the_hub_the_other_replicas_copy_it_and_a_rerun_transfers_nothing(fleet):
    files = hub_files(REV1)
    served = FIRST["after"]["bytes_served"] - FIRST["before"]["bytes_served"]
    # exactly one copy of the repository: each file once, on one host (the seed, first by name)
    assert served == sum(len(b) for b in files.values()), (served, FIRST["after"])
    counts = {p: n - FIRST["before"]["files"].get(p, 0) for p, n in FIRST["after"]["files"].items()}
    assert {p: n for p, n in counts.items() if n} == dict.fromkeys(files, 1), counts
    said = " ".join(FIRST["stdout"].split())
    assert "lc-cu-w1 downloads it from the Hub; lc-cu-w2, lc-cu-w3 copy it from lc-cu-w1" in said
    copied = FIRST["stdout"].split("Copy the repository's folder from its source]", 1)[1].split("TASK [", 1)[0]
    for host in ("lc-cu-w2", "lc-cu-w3"):
        assert "changed: [%s -> lc-cu-w1(198.18.11.11)]" % host in copied, copied
    assert not re.search(r"(ok|changed): \[lc-cu-w1\]", copied), copied
    # every replica: each file byte for byte, the completion stamp, and nothing left of a copy's key
    want = sorted("%s  %s" % (hashlib.sha256(data).hexdigest(), path) for path, data in files.items())
    for host, address in sorted(WORKERS.items()):
        got = ssh(address, "cd %s/snapshots/%s && find . -mindepth 1 \\( -type l -o -type f \\) -printf '%%P\\n' | "
                           "sort | xargs sha256sum; cat ../../.launchcard-complete-%s; echo; "
                           "grep -c launchcard-weights-copy /root/.ssh/authorized_keys; ls -A /run/launchcard-weights; "
                           "ls %s 2>/dev/null" % (SNAPSHOT, REV1, REV1, RECEIVE_CONF))
        lines = got.stdout.splitlines()
        assert sorted(lines[:len(files)]) == want, (host, got.stdout, got.stderr)
        assert lines[len(files):] == [str(sum(len(b) for b in files.values())), "0"], (host, got.stdout)
    # the router loads no weights
    assert ssh(ROUTER, "test -e %s" % SNAPSHOT).returncode != 0
    # a rerun skips the weights role (the stamps): nothing from the hub, no copy, nothing changed
    res = playbook("deploy")
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    assert not re.search(r"TASK \[launchcard\.inference\.weights :", res.stdout)
    assert all(r["changed"] == 0 for r in recap(res.stdout).values()), recap(res.stdout)
    assert hub_stats()["bytes_served"] == FIRST["after"]["bytes_served"]


def test_a_copys_key_lets_its_source_write_into_the_repository_folder_and_nowhere_else(fleet):
    """Issue #42: a hostile source holds the copy's key, authorized on the receiving host as the role authorizes it
    (the same filter: the daemon's settings and the key's forced command), and tries more than the copy."""
    seed, target = WORKERS["lc-cu-w1"], WORKERS["lc-cu-w3"]
    got = peer_receive("/var/lib/launchcard/models", MODEL, RECEIVE_CONF, target)
    assert got["repo_dir"] == SNAPSHOT
    key = "/root/hostile-copy-key"
    made = ssh(seed, "rm -f %s %s.pub && ssh-keygen -q -t ed25519 -N '' -C hostile-test -f %s && cat %s.pub"
               % (key, key, key, key))
    assert made.returncode == 0, made.stderr
    line = "%s %s" % (got["key_options"], made.stdout.strip())
    put = ssh(target, "printf %%s %s > %s && chmod 600 %s && printf '%%s\\n' %s >> /root/.ssh/authorized_keys && "
                      "rm -f /root/pwned /root/hostname" % (shlex.quote(got["config"]), RECEIVE_CONF, RECEIVE_CONF,
                                                            shlex.quote(line)))
    assert put.returncode == 0, put.stderr
    rsh = "ssh -i %s -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null" % key
    try:
        tries = {
            # a shell command as root: sshd runs the forced command instead
            "command": "%s root@%s touch /root/pwned </dev/null" % (rsh, target),
            # rsync's own remote-shell form into /root: the daemon answers, not rsync --server into /root
            "rsync-to-root": "rsync -rl --rsh=%s /etc/hostname root@%s:/root/" % (shlex.quote(rsh), target),
            # the daemon's module, walked out of with ..
            "dotdot": "rsync -rl --rsh=%s /etc/hostname %s../../../../../root/" % (shlex.quote(rsh), got["dest"]),
            # options beyond the copy's: deletion, owners, devices
            "delete": "rsync -rl --delete --rsh=%s /etc/hostname %s" % (shlex.quote(rsh), got["dest"]),
            "owner": "rsync -rlo --rsh=%s /etc/hostname %s" % (shlex.quote(rsh), got["dest"]),
        }
        said = {name: ssh(seed, cmd, timeout=120) for name, cmd in tries.items()}
        for name in ("delete", "owner"):
            assert said[name].returncode != 0, (name, said[name].stdout, said[name].stderr)
        # a link out of the folder, then a copy through it
        link = ssh(seed, "rm -rf /root/esc && mkdir -p /root/esc && ln -s /root /root/esc/out && "
                         "rsync -rl --rsh=%s /root/esc/ %s && rsync -r --rsh=%s /etc/hostname %sout/"
                         % (shlex.quote(rsh), got["dest"], shlex.quote(rsh), got["dest"]), timeout=120)
        # and the copy itself still works: the seed's folder, with the role's options
        real = ssh(seed, "rsync -rlpt --partial --delay-updates --exclude='.launchcard-complete-*' --rsh=%s %s/ %s"
                         % (shlex.quote(rsh), SNAPSHOT, got["dest"]), timeout=300)
        assert real.returncode == 0, real.stdout + real.stderr
        # nothing in /root: not the command's file, not rsync's, not through the link (which stays in the folder)
        left = ssh(target, "ls -A /root")
        assert not {"pwned", "hostname"} & set(left.stdout.split()), (left.stdout, said, link.stdout + link.stderr)
        check = ssh(target, "cd %s/snapshots/%s && find . -mindepth 1 \\( -type l -o -type f \\) -printf '%%P\\n' | "
                            "sort | xargs sha256sum" % (SNAPSHOT, REV1))
        want = sorted("%s  %s" % (hashlib.sha256(data).hexdigest(), path) for path, data in hub_files(REV1).items())
        assert sorted(check.stdout.splitlines()) == want, check.stdout
    finally:
        ssh(target, "sed -i '/hostile-test$/d' /root/.ssh/authorized_keys; rm -f %s; rm -rf %s/out" % (RECEIVE_CONF, SNAPSHOT))
        ssh(seed, "rm -rf %s %s.pub /root/esc" % (key, key))


def test_upgrade_under_load_loses_no_request(fleet, upgraded):
    old, new = fleet
    res, load, dummy = upgraded
    print("load through the router: %d ok, %d failed; replicas in the router: min %s of %d over %d samples"
          % (load.ok, load.failed, min(load.capacity or [None]), len(WORKERS), len(load.capacity)))
    assert res.returncode == 0, res.stdout[-8000:] + res.stderr[-2000:]
    assert load.failed == 0, load.errors[:5]
    assert load.ok >= 50, load.ok
    # capacity never below N - batch: the router always had at least 2 of 3 replicas healthy
    assert len(load.capacity) >= 10 and min(load.capacity) >= len(WORKERS) - SERIAL, load.capacity
    assert min(load.capacity) < len(WORKERS), "no replica ever left the router: nothing was drained"
    # the rollout names the image move and the new revision; one replica per batch, the router untouched
    said = " ".join(res.stdout.split())
    assert "image %s %s -> %s" % (PINNED[:-1], old[:19], new[:19]) in said, res.stdout[-6000:]
    assert "model revision %s -> %s" % (REV1[:12], REV2[:12]) in said
    for n, host in enumerate(sorted(WORKERS), 1):
        assert "batch %d (server): %s" % (n, host) in res.stdout
    switched = [res.stdout.find("TASK [Upgrade | Switch the units (batch %d)]" % n) for n in range(1, len(WORKERS) + 1)]
    assert -1 not in switched and switched == sorted(switched), switched
    assert "unchanged (not touched): lc-cu-router" in res.stdout
    # pre-staged: every replica pulled the new digest before the first batch stopped anything (the one that checked
    # the replicas' argv with the new image's parser in preflight pulled it there, for the check, and kept it)
    pulls = res.stdout.split("Pull the pinned images (podman)]", 1)[1].split("TASK [", 1)[0]
    checked = res.stdout.split("Check the recipes' argv with the engine's own parser]", 1)[1].split("TASK [", 1)[0]
    assert len(re.findall(r"^changed: \[", checked, re.M)) == 1, checked
    for host in WORKERS:
        assert ("changed: [%s] => (item=%s)" % (host, PINNED + new) in pulls
                or "changed: [%s]" % host in checked), (host, pulls, checked)
    assert res.stdout.find("Pull the pinned images (podman)]") < switched[0]


def test_a_stream_in_flight_when_its_replica_is_upgraded_completes(upgraded):
    """Case J: the batch waited until the replica reported no running request (engine_drain), then switched it."""
    res, dummy, dummy2 = upgraded
    stream = STREAM["stream"]
    seen = STREAM["seen"]
    assert stream.started_at is not None, "batch 1 never started"
    # the old process was streaming when the batch switched its unit
    assert stream.first_token_at is not None and stream.first_token_at < seen["switch"], (stream.first_token_at, seen)
    assert (stream.ended, stream.tokens, stream.done) == ("done", STREAM_TOKENS, True), res.stdout[-4000:]
    drained = res.stdout.split("TASK [Upgrade | Let in-flight requests finish (batch 1)]", 1)[1].split("TASK [", 1)[0]
    assert "ok: [lc-cu-w1]" in drained, drained


def test_every_replica_runs_the_new_digest_and_the_router_was_not_restarted(fleet, upgraded):
    old, new = fleet
    dummy, dummy2, router_before = upgraded
    for host, address in WORKERS.items():
        assert container(address, REPLICAS[host])[:3] == [new, PINNED + new, "true"], host
        state = record(address)
        assert state["runtime"]["image_refs"][IMAGE_V2] == PINNED + new, (host, state["runtime"])
        assert state["card"]["revision"] == REV2, host
    # the router: the same container (id) on the digest it ran, every replica back in it
    assert container(ROUTER, ROUTER_CONTAINER) == router_before
    assert router_before[:3] == [old, PINNED + old, "true"]
    assert healthy_workers(ROUTER_URL) == WORKER_URLS
    status, body = http("POST", ROUTER_URL + "/v1/completions", {"model": MODEL, "prompt": "hi", "max_tokens": 4},
                        timeout=30)
    assert status == 200 and json.loads(body)["choices"][0]["text"] is not None, (status, body[:500])


def test_rerun_changes_nothing(upgraded):
    res = playbook("upgrade", *(V2 + FAST))
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    assert "rollout: 0 batch(es)" in res.stdout
    assert all(r["changed"] == 0 for r in recap(res.stdout).values()), recap(res.stdout)
    # preflight read each host's record: the argv and images every host runs are not checked or pulled again
    assert "Preflight | Check the recipes' argv with the engine's own parser" not in res.stdout, res.stdout[-6000:]
    assert "not checked against" not in res.stdout + res.stderr
