# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""End to end: the container path's failure cases. Each stops the run with an error naming the host (or the
registry) and the cause, before any unit is written or started and before any image is pulled.

Fleet: inventories/container-faults/gpus.ini (lc-cf-*, 198.18.12.0/24, state dir .sandbox-container-faults/, the
`podman` root filesystem, the registry and hub that tests/sandbox/fleet.py starts on the bridge): the example card's
prefill and decode recipes as podman containers with NVIDIA GPUs (the stand-in nvidia-smi, driver 580.95.05), so
preflight's container_cdi_spec check applies. The prefill host boots with a CDI spec for its driver, the decode host
with one left by driver 570.86.15 (stale). The cases, in order (each builds on the host state the last left):

* a stale CDI spec (decode) and a container data root too small for the image (prefill: a tmpfs over
  /var/lib/containers, mounted for that run, sized 1.5 times the image's compressed size as the registry's manifest
  gives it: room to download it, not to unpack it, so it fails on the real size x 4, where the flat 30 GiB
  estimate would fail any small disk): one preflight.yml run fails each host for its own reason;
* no CDI spec at all (decode, its spec removed): deploy.yml stops at preflight on every host;
* the registry mirror at a closed port (decode's spec written again, as `nvidia-ctk cdi generate` would): deploy.yml
  stops at the images' digests, on the controller, naming the mirror and the refusal (and Docker Hub, which a
  podman host tries after its mirrors, unreachable from the sandbox).

* a first deploy of a card whose prefill recipe carries a flag the image's SGLang rejects
  (tests/e2e/cards/argv-rejected-flag.json): preflight pulls the image by digest on one host per argv (no host holds
  it yet), the engine's own parser refuses the flag, and the run stops naming the recipe, the flag, SGLang's message
  and the near spelling; the images pulled for the checks are removed again, so no host keeps an image, a unit or
  a weights file.

A wrong revision and a truncated weights file are tests/e2e/test_deploy_sandbox.py's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import urllib.request

import pytest

from sandbox_cli import ROOT, Fleet
from playbook_output import host_failures, recap
from sandbox_registry import CONTAINER_SANDBOX, MANIFEST_TYPES

INVENTORY = "inventories/container-faults/gpus.ini"
STATE = ".sandbox-container-faults"
FLEET = Fleet(INVENTORY, STATE)
playbook, down = FLEET.playbook, FLEET.down
HOSTS = {"lc-cf-prefill": "198.18.12.11", "lc-cf-decode": "198.18.12.12"}
REGISTRY_LOG = os.path.join(ROOT, STATE, "registry.log")
DRIVER, OLD_DRIVER = "580.95.05", "570.86.15"
CLOSED_MIRROR = "198.18.12.1:5999"  # nothing listens there: the bridge address answers with a refusal
REGISTRY = "198.18.12.1:5000"  # the sandbox registry on the bridge (tests/sandbox/fleet.py)
IMAGE = "lmsysorg/sglang:latest"  # what the card names for the prefill and decode recipes
# a host's fetch from the registry (a manifest or blob GET; the controller's digest HEAD is not one)
FETCH = re.compile(r'^(\S+) - - \[[^]]*\] "GET /v2/\S+/(?:manifests|blobs)/', re.M)

pytestmark = CONTAINER_SANDBOX


def ssh(host, command):
    res = FLEET.ssh(HOSTS[host], command)
    assert res.returncode == 0, (host, command, res.stdout, res.stderr)
    return res.stdout


def host_fetches():
    """Manifest and blob GETs of the fleet's hosts in the registry's access log (kept across boots)."""
    try:
        with open(REGISTRY_LOG, errors="replace") as f:
            return len([m for m in FETCH.finditer(f.read()) if m.group(1) in HOSTS.values()])
    except FileNotFoundError:
        return 0


def assert_untouched(fetches_before):
    """No launchcard unit written, loaded or started, and no image pulled, on any host."""
    for host in HOSTS:
        out = ssh(host, "ls /etc/systemd/system | grep '^launchcard-' || true; "
                        "systemctl list-units --all --no-legend --plain 'launchcard-*'; "
                        "podman images --quiet; podman ps --all --quiet")
        assert out.strip() == "", (host, out)
    assert host_fetches() == fetches_before


def cdi_spec(driver):
    """/etc/cdi/nvidia.yaml as the sandbox's stand-in `nvidia-ctk cdi generate` writes it for 2 GPUs and ``driver``."""
    spec = importlib.util.spec_from_file_location(
        "standin_nvidia_ctk", os.path.join(ROOT, "tests", "sandbox", "pkgrepo", "standin_nvidia_ctk.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.spec_text([("0", "GPU-0"), ("1", "GPU-1")], driver)


def compressed_size(registry, image):
    """Config and layer bytes of ``image``'s manifest in the sandbox registry (an index: its linux/amd64 one)."""
    repo, reference = image.rsplit(":", 1)
    while True:
        req = urllib.request.Request("http://%s/v2/%s/manifests/%s" % (registry, repo, reference),
                                     headers={"Accept": MANIFEST_TYPES})
        with urllib.request.urlopen(req, timeout=10) as resp:
            doc = json.load(resp)
        if "layers" in doc:
            return doc["config"]["size"] + sum(layer["size"] for layer in doc["layers"])
        reference = next(m["digest"] for m in doc["manifests"]
                         if (m.get("platform") or {}).get("architecture") == "amd64")


def failure(res, host):
    return " ".join(host_failures(res.stdout).get(host, []))


@pytest.fixture(scope="module")
def fleet():
    down()
    up = FLEET.up()
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        yield host_fetches()
    finally:
        if not os.environ.get("LAUNCHCARD_KEEP_FLEET"):
            down()


def test_stale_cdi_spec_and_a_too_small_image_disk_fail_preflight_each_naming_its_host_and_cause(fleet):
    size = compressed_size(REGISTRY, IMAGE)
    disk_kib = size * 3 // 2 // 4096 * 4  # room for the download, not for the layers unpacked (x 4); whole pages
    ssh("lc-cf-prefill", "mount -t tmpfs -o size=%dk lc-small-disk /var/lib/containers" % disk_kib)
    try:
        res = playbook("preflight")
    finally:
        ssh("lc-cf-prefill", "umount /var/lib/containers")
    assert res.returncode != 0
    counts = recap(res.stdout)
    assert {h: (c["failed"], c["changed"]) for h, c in counts.items()} == {h: (1, 0) for h in HOSTS}, counts
    decode, prefill = failure(res, "lc-cf-decode"), failure(res, "lc-cf-prefill")
    assert "preflight failed on lc-cf-decode: container_cdi_spec" in decode, decode
    assert ("stale CDI spec: /etc/cdi/nvidia.yaml names driver %s, the loaded driver is %s" % (OLD_DRIVER, DRIVER)
            in decode), decode
    assert "run `nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`" in decode
    assert "preflight failed on lc-cf-prefill: image_disk" in prefill, prefill
    # the image's real size from its manifest, read on the controller before preflight, not the flat estimate
    mib = 1 << 20
    assert ("needs %.1f MiB free on /var/lib/containers (1 image(s) to pull: %.1f MiB compressed x 4 = %.1f MiB)"
            % (size * 4 / mib, size / mib, size * 4 / mib)) in prefill, (size, prefill)
    found = re.search(r"found ([0-9.]+) MiB free", prefill)
    assert found and abs(float(found.group(1)) - disk_kib * 1024 / mib) < 0.5, prefill  # the tmpfs, less its root
    assert "not enough free space for the container images" in prefill
    assert "container_cdi_spec" not in prefill  # its spec names the loaded driver
    assert_untouched(fleet)


def test_a_missing_cdi_spec_stops_the_deploy_at_preflight_on_every_host(fleet):
    ssh("lc-cf-decode", "rm /etc/cdi/nvidia.yaml")
    res = playbook("deploy")
    assert res.returncode != 0
    decode = failure(res, "lc-cf-decode")
    assert "preflight failed on lc-cf-decode: container_cdi_spec" in decode, decode
    assert "found no CDI spec of nvidia.com/gpu" in decode
    assert "podman cannot pass the GPUs into containers: run `nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`" \
        in decode
    counts = recap(res.stdout)
    # no failure budget (launchcard_max_fail_percentage 0): the good host stops too, unchanged
    assert all(c["changed"] == 0 for c in counts.values()), counts
    assert "Deploy | Prepare the runtime" not in res.stdout
    assert_untouched(fleet)


def test_an_unreachable_registry_stops_the_deploy_before_any_pull_or_unit(fleet):
    ssh("lc-cf-decode", "cat > /etc/cdi/nvidia.yaml <<'EOF'\n%sEOF" % cdi_spec(DRIVER))
    mirrors = {"launchcard_registry_mirrors": {"docker.io": [{"location": CLOSED_MIRROR, "insecure": True}]}}
    res = playbook("deploy", "-e", json.dumps(mirrors))
    assert res.returncode != 0
    out = " ".join(res.stdout.split())
    # the mirror, then Docker Hub itself (podman's order: the registry comes after its mirrors), each named
    assert "image lmsysorg/sglang:latest: no source gave it, in the order the podman hosts ask" in out, res.stdout[-4000:]
    assert "cannot reach the mirror %s at http://%s/v2/lmsysorg/sglang/manifests/latest" % (CLOSED_MIRROR, CLOSED_MIRROR) in out
    assert "the registry docker.io at https://registry-1.docker.io" in out
    assert "Connection refused" in out
    # the run stopped at the digests, on the controller, before preflight (the spec names the loaded driver again)
    assert "preflight failed" not in out and "Preflight | Check this host" not in out
    assert "Runtime | Pull" not in res.stdout
    assert_untouched(fleet)


def test_a_first_deploy_whose_engine_rejects_a_flag_stops_in_preflight_leaving_every_host_as_it_was(fleet):
    card = os.path.join(ROOT, "tests", "e2e", "cards", "argv-rejected-flag.json")
    res = playbook("deploy", "-e", "launchcard_card_src=%s" % card)
    assert res.returncode != 0
    out = " ".join(res.stdout.split())
    # no host held the image: each argv's check pulled it on a host that runs it, by digest, through the mirror
    assert ("recipe sglang-prefill (envs[4].argv[10]): SGLang 0.5.23 rejects --kv-cache-data-type: sglang serve: "
            "error: unrecognized "
            "arguments: --kv-cache-data-type bfloat16 (did you mean --kv-cache-dtype or ") in out, res.stdout[-4000:]
    assert "pulled on lc-cf-prefill for the check, removed]" in out
    assert "sglang-decode" not in out.split("Stop the run when an engine rejects", 1)[1]  # decode's argv passed
    # stopped in preflight: no runtime, weights or units step ran on any host
    assert not re.search(r"TASK \[launchcard\.inference\.(runtime|weights|units) :", res.stdout)
    for host in HOSTS:
        left = ssh(host, "ls /etc/systemd/system | grep '^launchcard-' || true; podman images --quiet; "
                         "podman ps --all --quiet; "
                         "find /var/lib/launchcard/models -mindepth 1 -not -path '*/lost+found*' 2>/dev/null || true")
        assert left.strip() == "", (host, left)  # decode's image, pulled for its accepted check, went too
    assert host_fetches() > fleet  # the hosts did fetch the image (from the sandbox registry, the mirror)
