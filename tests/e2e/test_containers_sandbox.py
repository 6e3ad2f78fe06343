# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""End to end: the container path for real. The example card's prefill, decode and router recipes run as
podman containers on three sandbox hosts, their image resolved once for the fleet to a digest and pulled by
that digest from a real registry (Debian's docker-registry on the bridge, holding the stand-in engine image
under the card's image name, reached as a mirror of Docker Hub).

Fleet: inventories/containers/gpus.ini (lc-ct-*, 198.18.10.0/24, state dir .sandbox-containers/). A mixed fleet:
the prefill host runs Debian 12 (podman 4.3: `podman run` units in /etc/systemd/system), the decode and router hosts
Debian 13 (podman 5.4: Quadlet .container files in /etc/containers/systemd, made into units by podman's generator).
The registry's access log (.sandbox-containers/registry.log) tells what the hosts fetched. The fleet is purged
before and after, so the check-mode run meets hosts that hold no image. The registry asks for basic auth
(gpus.ini: sandbox_registry_auth) with the inventory's launchcard_registry_credentials for the mirror's own host
(sent over the bridge's plain HTTP as launchcard_registry_credentials_plain_http allows), which the hosts get as a
root-only auth file keyed by that host alone: their pulls authenticate, and no unit, `systemctl show` or playbook
output holds the password.
"""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.request

import pytest
import yaml

from sandbox_cli import ROOT, Fleet, run
from playbook_output import recap
from sandbox_registry import CONTAINER_SANDBOX, creds_args, push_variant, registry_digest

INVENTORY = "inventories/containers/gpus.ini"
STATE = ".sandbox-containers"
FLEET = Fleet(INVENTORY, STATE)
playbook, down = FLEET.playbook, FLEET.down
REGISTRY_LOG = os.path.join(ROOT, STATE, "registry.log")
REGISTRY = "198.18.10.1:5000"
HOSTS = {"lc-ct-prefill": "198.18.10.11", "lc-ct-decode": "198.18.10.12", "lc-ct-router": "198.18.10.13"}
CONTAINERS = {"lc-ct-prefill": "glm-5.3-flash-sglang-prefill-0", "lc-ct-decode": "glm-5.3-flash-sglang-decode-0",
              "lc-ct-router": "glm-5.3-flash-sglang-router-0"}
IMAGE = "lmsysorg/sglang:latest"  # what the card names for these three recipes
QUADLET_HOSTS = ("lc-ct-decode", "lc-ct-router")  # Debian 13 (sandbox_rootfs=podman-trixie); lc-ct-prefill: Debian 12
# a host's fetch from the registry: a manifest or blob GET answered (the controller's digest HEAD is not one,
# nor a 401 challenge to a request without credentials)
FETCH = re.compile(r'^(\S+) - - \[[^]]*\] "GET /v2/\S+/(?:manifests|blobs)/\S+ HTTP/[0-9.]+" [23]\d\d ', re.M)
# the registry's challenge to a request without credentials, and an answered fetch, in order
CHALLENGE = re.compile(r'^(\S+) - - \[[^]]*\] "GET /v2/\S* HTTP/[0-9.]+" 401 ', re.M)
# the sandbox-only credentials the registry asks for and the inventory gives the hosts (group_vars/all.yml)
with open(os.path.join(ROOT, "inventories/containers/group_vars/all.yml")) as _f:
    _CRED = yaml.safe_load(_f)["launchcard_registry_credentials"]["198.18.10.1:5000"]
AUTH = (_CRED["username"], _CRED["password"])
PASSWORD = AUTH[1]
AUTH_TOKEN = base64.b64encode(("%s:%s" % AUTH).encode()).decode()
AUTH_FILE = "/etc/launchcard/registry-auth.json"

pytestmark = CONTAINER_SANDBOX


def ssh(host, command):
    return FLEET.ssh(HOSTS[host], command)


def fetches():
    """The fleet's hosts' manifest and blob GETs in the registry's access log, by client address. The controller
    (the bridge's address) is left out: it reads each image's manifest on every run for its size (preflight's
    image_disk), which pulls nothing onto a host."""
    with open(REGISTRY_LOG, errors="replace") as f:
        text = f.read()
    out = {}
    for m in FETCH.finditer(text):
        if m.group(1) in HOSTS.values():
            out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


@pytest.fixture(scope="module")
def fleet():
    down()  # fresh hosts: no image in their stores
    up = FLEET.up()
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        yield registry_digest(REGISTRY, IMAGE, AUTH)
    finally:
        if not os.environ.get("LAUNCHCARD_KEEP_FLEET"):
            down()


@pytest.fixture(scope="module")
def checked(fleet):
    before = fetches()
    res = playbook("deploy", "--check")
    return res, before, fetches()


@pytest.fixture(scope="module")
def deployed(checked):
    before = fetches()
    start = os.path.getsize(REGISTRY_LOG)
    res = playbook("deploy")
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    with open(REGISTRY_LOG, errors="replace") as f:
        f.seek(start)
        log = f.read()
    return res, before, fetches(), log


def test_check_mode_on_fresh_hosts_predicts_each_pull_by_digest_and_fetches_nothing(fleet, checked):
    res, before, after = checked
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    assert all(r["failed"] == 0 for r in recap(res.stdout).values()) and set(recap(res.stdout)) == set(HOSTS)
    block = res.stdout.split("Pull the pinned images (podman)]", 1)[1].split("TASK [", 1)[0]
    for host in HOSTS:
        assert "changed: [%s] => (item=docker.io/lmsysorg/sglang@%s)" % (host, fleet) in block, block
    assert after == before
    for host in HOSTS:
        assert ssh(host, "podman images -q").stdout.strip() == "", host


def test_every_host_runs_the_one_digest_resolved_for_the_fleet(fleet, deployed):
    res, before, after, dummy = deployed
    assert "3 instances on 3 hosts: 3 healthy" in res.stdout
    pinned = "docker.io/lmsysorg/sglang@" + fleet
    for host, name in CONTAINERS.items():
        out = ssh(host, "podman inspect --format '{{.ImageDigest}} {{.ImageName}} {{.State.Running}}' " + name)
        assert out.stdout.split() == [fleet, pinned, "true"], (host, out.stdout, out.stderr)
        state = json.loads(ssh(host, "cat /var/lib/launchcard/state.json").stdout)
        assert state["runtime"]["kind"] == "podman"
        assert state["runtime"]["image_refs"] == {IMAGE: pinned}, host
    # every host fetched the image from the mirror itself (one manifest, config and layer at least)
    new = {addr: after.get(addr, 0) - before.get(addr, 0) for addr in HOSTS.values()}
    assert all(n >= 3 for n in new.values()), new


def test_debian_13_hosts_run_quadlet_units_and_the_debian_12_host_podman_run_units(fleet, deployed):
    # one command per host: the unit's source file, its state, what it runs, and both directories
    cmd = ("unit=launchcard-%s.service; systemctl show -p SourcePath,ActiveState,UnitFileState,ExecStart $unit; "
           "echo files: $(ls /etc/containers/systemd /etc/systemd/system | grep '^launchcard-' | sort); "
           ". /etc/os-release; echo os: $VERSION_ID")
    for host, name in CONTAINERS.items():
        out = ssh(host, cmd % name).stdout
        props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line and not line.startswith("files"))
        files = out.split("files:", 1)[1].split("\n", 1)[0].split()
        assert props["ActiveState"] == "active", (host, out)
        if host in QUADLET_HOSTS:
            assert "os: 13" in out, out
            assert files == ["launchcard-%s.container" % name], (host, files)
            assert props["SourcePath"] == "/etc/containers/systemd/launchcard-%s.container" % name, out
            assert props["UnitFileState"] == "generated", out
            # the generator's podman run, on the pinned digest, with the card's entrypoint and the sandbox's --cgroups
            assert "--cgroups=disabled" in props["ExecStart"] and "--sdnotify=conmon" in props["ExecStart"], out
        else:
            assert "os: 12" in out, out
            assert files == ["launchcard-%s.service" % name], (host, files)
            assert props["SourcePath"] == "" and props["UnitFileState"] == "enabled", out
        assert "docker.io/lmsysorg/sglang@" + fleet in props["ExecStart"], (host, out)


def test_the_hosts_pull_with_the_credentials_which_nothing_shows(fleet, checked, deployed):
    res, dummy, dummy2, log = deployed
    for host, addr in HOSTS.items():
        # the registry challenged the host's first request (no credentials yet), then served its fetches
        challenges = [m.start() for m in CHALLENGE.finditer(log) if m.group(1) == addr]
        served = [m.start() for m in FETCH.finditer(log) if m.group(1) == addr]
        assert challenges and served and challenges[0] < served[0], (host, log[-3000:])
    # the password, or the basic-auth token made of it, is in no playbook output (check mode's, deploy's)
    for out in (checked[0], res):
        text = out.stdout + out.stderr
        assert PASSWORD not in text and AUTH_TOKEN not in text
    # one command per host: the auth file's owner, mode and keys; every unit file and the generator's units
    # searched for the password; the units' `systemctl show`; the record (world-readable, 0644: it holds the
    # credentials' salted PBKDF2 digest only, folded into runtime.setup) searched too
    cmd = ("stat -c '%%U %%G %%a' %s; python3 -c 'import json,sys; print(sorted(json.load(open(sys.argv[1]))[\"auths\"]))' %s; "
           "echo grep: $(grep -rlF -e %s -e %s /etc/systemd/system /etc/containers/systemd /run/systemd/generator "
           "/var/lib/launchcard/state.json 2>/dev/null | wc -l); stat -c 'record %%a' /var/lib/launchcard/state.json; "
           "systemctl show launchcard-") % (AUTH_FILE, AUTH_FILE, PASSWORD, AUTH_TOKEN)
    for host, name in CONTAINERS.items():
        out = ssh(host, cmd + name + ".service").stdout
        lines = out.splitlines()
        assert lines[0] == "root root 600", (host, out[:500])
        assert lines[1] == str([REGISTRY]), (host, out[:500])  # the mirror's own entry; Docker Hub gets none
        assert lines[2] == "grep: 0" and lines[3] == "record 644", (host, out[:500])
        assert PASSWORD not in out and AUTH_TOKEN not in out, host
        props = dict(line.split("=", 1) for line in lines[4:] if "=" in line)
        assert "--authfile " + AUTH_FILE in props["ExecStart"], (host, props.get("ExecStart"))
    # and a pull without them is refused: the registry, not the hosts' setup, is what asks for them
    out = ssh("lc-ct-router", "REGISTRY_AUTH_FILE=/nonexistent podman pull --tls-verify=false "
                              "%s/lmsysorg/sglang@%s 2>&1" % (REGISTRY, fleet))
    assert out.returncode != 0 and "authentication required" in out.stdout, out.stdout[-2000:]


def test_a_completion_goes_through_the_router_to_both_containers(deployed):
    req = urllib.request.Request("http://%s:30000/v1/completions" % HOSTS["lc-ct-router"], method="POST",
                                 data=json.dumps({"model": "zai-org/GLM-5.3-Flash", "prompt": "hi",
                                                  "max_tokens": 4}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        body = json.loads(resp.read())
    served = body["launchcard_standin"]
    assert (served["prefill"], served["decode"]) == ("lc-ct-prefill:31000", "lc-ct-decode:32000")


def test_a_second_deploy_changes_nothing_and_fetches_nothing(deployed):
    before = fetches()
    res = playbook("deploy")
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    assert {h: r["changed"] for h, r in recap(res.stdout).items()} == {h: 0 for h in HOSTS}
    assert fetches() == before


def test_an_upgrade_to_the_deployed_card_pins_the_same_digest_and_touches_no_host(fleet, deployed):
    # upgrade.yml resolves the images as deploy does: with the tags resolved to the same digest, the
    # rollout finds every unit file as deployed (unpinned, every unit would differ by its image)
    before = fetches()
    res = playbook("upgrade")
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    said = " ".join(res.stdout.split())
    assert "unchanged (not touched): %s" % ", ".join(sorted(HOSTS)) in said, res.stdout[-4000:]
    assert {h: r["changed"] for h, r in recap(res.stdout).items()} == {h: 0 for h in HOSTS}
    assert fetches() == before
    for host, name in CONTAINERS.items():
        out = ssh(host, "podman inspect --format '{{.ImageDigest}}' " + name)
        assert out.stdout.split() == [fleet], (host, out.stdout, out.stderr)


def move_the_tag(tmp):
    """Push another image (the same layer, a new label: a new manifest digest) under the card's tag.

    Returns the path of an OCI layout holding the image the tag named before, to put back."""
    before = os.path.join(str(tmp), "before")
    res = run(["skopeo", "copy", "--quiet", "--src-tls-verify=false"] + creds_args("--src-creds", AUTH)
              + ["docker://%s/%s" % (REGISTRY, IMAGE), "oci:%s:latest" % before])
    assert res.returncode == 0, res.stderr
    push_variant(REGISTRY, IMAGE, IMAGE, "moved-tag", tmp, AUTH)
    return before


def test_a_moved_tag_is_reported_and_held_by_deploy_and_followed_by_upgrade(fleet, deployed, tmp_path):
    old = fleet
    before = move_the_tag(tmp_path)
    try:
        new = registry_digest(REGISTRY, IMAGE, AUTH)
        assert new != old
        # deploy: the drift is reported, every host keeps the digest it runs, nothing changes
        res = playbook("deploy")
        assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
        said = " ".join((res.stdout + res.stderr).split())
        assert ("image %s: the registry now resolves it to %s; the fleet runs %s and keeps it" % (IMAGE, new, old)) in said, said[-3000:]
        assert {h: r["changed"] for h, r in recap(res.stdout).items()} == {h: 0 for h in HOSTS}
        for host, name in CONTAINERS.items():
            assert ssh(host, "podman inspect --format '{{.ImageDigest}}' " + name).stdout.split() == [old], host
        # upgrade: the rollout moves every host to the tag's new digest, and the router answers through both
        res = playbook("upgrade")
        assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
        assert "%s -> %s" % (old[:19], new[:19]) in res.stdout, res.stdout[-6000:]  # the rollout names the move
        for host, name in CONTAINERS.items():
            out = ssh(host, "podman inspect --format '{{.ImageDigest}} {{.State.Running}}' " + name)
            assert out.stdout.split() == [new, "true"], (host, out.stdout, out.stderr)
            state = json.loads(ssh(host, "cat /var/lib/launchcard/state.json").stdout)
            assert state["runtime"]["image_refs"] == {IMAGE: "docker.io/lmsysorg/sglang@" + new}, host
        test_a_completion_goes_through_the_router_to_both_containers(deployed)
    finally:
        # the registry serves the tag as before, for the next run of this file
        run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false"] + creds_args("--dest-creds", AUTH)
            + ["oci:%s:latest" % before, "docker://%s/lmsysorg/sglang:latest" % REGISTRY])


def test_undeploy_stops_and_removes_every_container(deployed):
    res = playbook("undeploy")
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    for host, name in CONTAINERS.items():
        out = ssh(host, "podman ps -a --format '{{.Names}}'; ls /etc/systemd/system /etc/containers/systemd 2>/dev/null "
                        "| grep -c '^launchcard-'; systemctl show -p LoadState launchcard-%s.service" % name)
        assert out.stdout.split() == ["0", "LoadState=not-found"], (host, out.stdout)
