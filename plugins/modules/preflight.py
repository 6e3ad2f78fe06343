#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: preflight
short_description: Check one host against its share of a launch card's plan, in one call
version_added: 1.0.0
description:
  - Gathers, in one round trip, everything the preflight checks need - the OS from C(/etc/os-release),
    free bytes of the filesystem that will hold the weights (C(statvfs)), bytes of the card's revision
    already in the Hugging Face cache, accelerator facts (the same collectors as
    M(launchcard.inference.accelerator_facts)), listening TCP ports with the systemd unit (or the docker/podman
    container) holding each, a TCP connect to every peer port this host must reach (all in parallel threads),
    the size of C(/dev/shm) and the free bytes of the container engine's data root.
  - A peer connect that is refused (RST) counts as reachable - at preflight time the servers are not running
    yet, so a refusal proves the network path works; a timeout, no route or an unreachable host is blocked.
  - Evaluates the checks and returns them; it never fails the host by itself and never changes it, so
    one report can cover the whole fleet before anything is touched.
options:
  needs:
    description:
      - What this host needs, as computed on the controller by the C(launchcard.inference.preflight_needs) filter
        (C(disk_bytes), C(gpus), C(validated_models), C(weights_per_gpu_mib), C(ports), C(images), C(peers)).
    type: dict
    required: true
  weights_dir:
    description: Directory that will hold the Hugging Face cache (HF_HOME); its filesystem is measured.
    type: path
    required: true
  repo:
    description: Hugging Face repository of the card, to count what of its revision is already staged.
    type: str
  revision:
    description: The card's pinned revision (40 hex).
    type: str
  checks:
    description: Checks to run; any left out stays on. Keys C(os), C(disk), C(gpu_count), C(gpu_model),
      C(memory_fit), C(driver), C(fabric), C(ports), C(peers), C(shm), C(image_disk).
    type: dict
    default: {}
  allow_unvalidated_hardware:
    description: Report a GPU model outside the recipe's C(validated_hardware) as a warning instead of an error.
    type: bool
    default: false
  headroom_mib:
    description: Device memory (MiB) required per GPU beyond the weights' share.
    type: int
    default: 4096
  vendor:
    description: Accelerator vendor to query, or C(auto).
    type: str
    choices: [auto, nvidia, amd, ascend]
    default: auto
  install_driver:
    description:
      - The play installs the accelerator stack after this check (C(launchcard_install_accelerator_stack)).
      - A bare host, whose accelerators show on the PCI bus but whose vendor tool is missing or has no
        driver to talk to, then passes C(gpu_count) on the PCI count, with a C(driver) warning;
        C(gpu_model), C(memory_fit) and C(driver) are checked when preflight runs again after the install.
      - With V(false), such a host fails C(gpu_count), naming the accelerators the PCI bus shows.
    type: bool
    default: false
  pci_devices_dir:
    description:
      - The sysfs directory listing PCI functions (vendor, device and class of each), read to find
        accelerators before any driver is installed. Another path when the host's sysfs is mounted elsewhere.
    type: path
    default: /sys/bus/pci/devices
  connect_timeout:
    description: Seconds each TCP connect to a peer port (C(needs.peers)) may take before it counts as blocked.
    type: float
    default: 5.0
  host_ipc:
    description:
      - Whether the engines share the host's IPC namespace (containers run with C(--ipc host), native engines).
        Then C(/dev/shm) is the host's and the C(shm) check does not apply; otherwise C(/dev/shm) must hold
        O(shm_min_gib).
    type: bool
    default: true
  shm_min_gib:
    description:
      - Size of C(/dev/shm) (GiB) needed when O(host_ipc=false). NCCL with TP>1 keeps its buffers there and
        Docker's 64 MB default breaks it (vllm issue 1710); 1 GiB is a floor, not a sizing.
    type: float
    default: 1.0
  runtime:
    description:
      - How the engines run. For C(docker) and C(podman) the free space of the engine's data root (C(data-root)
        in C(/etc/docker/daemon.json), C(graphroot) in C(/etc/containers/storage.conf), else C(/var/lib/docker)
        or C(/var/lib/containers); its nearest existing ancestor) is checked; C(native) skips that check.
    type: str
    choices: [docker, podman, native]
    default: docker
  image_allowance_gib:
    description:
      - Free space (GiB) needed per distinct container image placed on the host (C(needs.images)). An estimate,
        not a measurement - vLLM and SGLang CUDA images take 10-25 GB.
    type: float
    default: 30.0
  native_venv:
    description:
      - The C(native) runtime's virtualenv. When set, RV(native_stamps) lists its requirement stamps, so a
        deploy learns in this same call whether the engines need installing (no separate round trip).
      - Unset (the default) reads nothing.
    type: path
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: Preflight this host
  launchcard.inference.preflight:
    needs: "{{ card | launchcard.inference.preflight_needs(launchcard_plan.hosts[inventory_hostname], launchcard_plan) }}"
    weights_dir: /var/lib/launchcard/models
    repo: "{{ card.model.repo }}"
    revision: "{{ card.model.revision }}"
  vars:
    card: "{{ launchcard_cards[launchcard_plan.hosts[inventory_hostname].card] }}"
"""

RETURN = r"""
checks:
  description: One result per check that applied to this host.
  returned: always
  type: list
  elements: dict
  sample:
    - check: disk
      ok: false
      severity: error
      need: 417.0 GiB free on /var/lib/launchcard/models
      found: 400.0 GiB free
      message: not enough free space for the weights
    - check: peers
      ok: true
      severity: ok
      need: TCP from here to 10.0.0.5:31000, 10.0.0.5:8998
      found: "reachable: 2 refused"
      message: every peer port is reachable
bare_host:
  description:
    - True when O(install_driver) is set and the host is bare - no device answers through a vendor tool,
      but the PCI bus shows accelerators. Such a host is checked again after its stack is installed.
  returned: always
  type: bool
native_stamps:
  description:
    - The names of the C(.launchcard-*) requirement stamps in O(native_venv) (each records one successful
      install of an exact requirement set), empty when the virtualenv does not exist; null when O(native_venv)
      is not set.
  returned: always
  type: list
  elements: str
  sample: [.launchcard-5f0c2d1e9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d]
failed_checks:
  description: Names of the checks with severity C(error).
  returned: always
  type: list
  elements: str
facts:
  description:
    - What was gathered - os, disk, accelerators, listening ports, C(peers) (one C({address, port, state, reachable,
      detail}) per peer port; state C(open), C(refused), C(timeout), C(unreachable), C(unresolved) or C(error)),
      C(shm) (C({path, size_bytes}) or null) and C(image_disk) (C({path, data_root, free_bytes}) or null).
  returned: always
  type: dict
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.launchcard.inference.plugins.module_utils import _accelerators as accelerators
from ansible_collections.launchcard.inference.plugins.module_utils._preflight import (
    CONTAINER_OWNER,
    bare_host,
    GIB,
    container_from_cgroup,
    evaluate,
    failed,
    image_data_root,
    parse_os_release,
    probe_all,
    parse_proc_net_tcp,
    unit_from_cgroup,
)


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except (IOError, OSError):
        return None


def _existing(path):
    while not os.path.exists(path) and path not in ("/", ""):
        path = os.path.dirname(path)
    return path or "/"


def _native_stamps(venv):
    """Names of the requirement stamps (``.launchcard-*``) in the virtualenv ``venv``; [] when it is absent."""
    try:
        return sorted(n for n in os.listdir(venv) if n.startswith(".launchcard-"))
    except OSError:
        return []


def _shm():
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return {"path": "/dev/shm", "size_bytes": st.f_blocks * st.f_frsize}


def _image_disk(runtime):
    root = image_data_root(runtime, _read("/etc/docker/daemon.json"), _read("/etc/containers/storage.conf"))
    if not root:
        return None
    path = _existing(root)
    st = os.statvfs(path)
    return {"path": path, "data_root": root, "free_bytes": st.f_bavail * st.f_frsize}


def _disk(weights_dir, repo, revision):
    path = _existing(weights_dir)
    st = os.statvfs(path or "/")
    present = 0
    if repo and revision:
        snap = os.path.join(weights_dir, "hub", "models--" + repo.replace("/", "--"), "snapshots", revision)
        for root, _dirs, files in os.walk(snap):
            for name in files:
                try:
                    present += os.stat(os.path.join(root, name)).st_size
                except OSError:
                    pass
    return {"path": path, "free_bytes": st.f_bavail * st.f_frsize, "total_bytes": st.f_blocks * st.f_frsize,
            "present_bytes": present}


def _container_name(cid):
    """Name of a docker or podman (root) container from the engines' own state files; else a short id."""
    try:
        doc = json.loads(_read("/var/lib/docker/containers/%s/config.v2.json" % cid) or "{}")
        if doc.get("Name"):
            return doc["Name"].lstrip("/")
        for entry in json.loads(_read("/var/lib/containers/storage/overlay-containers/containers.json") or "[]"):
            if entry.get("id") == cid and entry.get("names"):
                return entry["names"][0]
    except (ValueError, AttributeError, TypeError):
        pass
    return cid[:12]


def _listening():
    inodes = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for port, inode in parse_proc_net_tcp(_read(table) or "").items():
            inodes.setdefault(inode, port)
    owners = dict.fromkeys(inodes.values())
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        fd_dir = "/proc/%s/fd" % pid
        try:
            links = [os.readlink(os.path.join(fd_dir, fd)) for fd in os.listdir(fd_dir)]
        except OSError:
            continue
        hits = [inodes[link[8:-1]] for link in links if link.startswith("socket:[") and link[8:-1] in inodes]
        if hits:
            cgroup = _read("/proc/%s/cgroup" % pid) or ""
            unit = unit_from_cgroup(cgroup)
            cid = None if unit else container_from_cgroup(cgroup)
            if cid:
                unit = CONTAINER_OWNER + _container_name(cid)
            for port in hits:
                owners[port] = owners[port] or unit or "pid %s" % pid
    return owners


def main():
    module = AnsibleModule(
        argument_spec=dict(
            needs=dict(type="dict", required=True),
            weights_dir=dict(type="path", required=True),
            repo=dict(type="str"),
            revision=dict(type="str"),
            checks=dict(type="dict", default={}),
            allow_unvalidated_hardware=dict(type="bool", default=False),
            headroom_mib=dict(type="int", default=4096),
            vendor=dict(type="str", choices=["auto", "nvidia", "amd", "ascend"], default="auto"),
            connect_timeout=dict(type="float", default=5.0),
            install_driver=dict(type="bool", default=False),
            pci_devices_dir=dict(type="path", default="/sys/bus/pci/devices"),
            host_ipc=dict(type="bool", default=True),
            shm_min_gib=dict(type="float", default=1.0),
            runtime=dict(type="str", choices=["docker", "podman", "native"], default="docker"),
            image_allowance_gib=dict(type="float", default=30.0),
            native_venv=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    on = dict((c, (p["checks"] or {}).get(c, True)) for c in ("peers", "image_disk"))
    facts = {
        "os": parse_os_release(_read("/etc/os-release") or ""),
        "disk": _disk(p["weights_dir"], p["repo"], p["revision"]),
        "accelerators": accelerators.collect(
            p["vendor"], module.get_bin_path, module.run_command, _read, pci_dir=p["pci_devices_dir"]),
        "listening": _listening(),
        "peers": probe_all(p["needs"].get("peers") or [], p["connect_timeout"]) if on["peers"] else [],
        "shm": _shm(),
        "image_disk": _image_disk(p["runtime"]) if on["image_disk"] else None,
    }
    results = evaluate(facts, p["needs"], {
        "checks": p["checks"],
        "allow_unvalidated_hardware": p["allow_unvalidated_hardware"],
        "headroom_mib": p["headroom_mib"],
        "host_ipc": p["host_ipc"],
        "shm_min_bytes": int(p["shm_min_gib"] * GIB),
        "runtime": p["runtime"],
        "image_allowance_bytes": int(p["image_allowance_gib"] * GIB),
        "install_driver": p["install_driver"],
    })
    facts["listening"] = dict((str(k), v) for k, v in facts["listening"].items())
    module.exit_json(changed=False, checks=results, failed_checks=[r["check"] for r in failed(results)],
                     bare_host=bare_host(facts["accelerators"], p["install_driver"]),
                     native_stamps=_native_stamps(p["native_venv"]) if p["native_venv"] else None,
                     facts=facts)


if __name__ == "__main__":
    main()
