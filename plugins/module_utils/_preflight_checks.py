# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's checks of the accelerators and the host (``_preflight.REGISTRY`` runs them, with those of
``_preflight_runtime_checks.py``), and what every check shares.

Pure Python, no Ansible import. Each ``check_<name>`` takes the host view (:class:`_Host`: the facts the
``preflight`` module gathered, the host's needs, the options) and returns one result, or ``None`` where it does
not apply.

Units: bytes for disk (GiB = 2**30 bytes, the card's ``min_disk_gib``),
MiB for device memory (``nvidia-smi memory.total``).
"""

from __future__ import annotations

import re

from ansible_collections.launchcard.inference.plugins.module_utils import _platforms
from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import bare_host
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_options import GIB
from ansible_collections.launchcard.inference.plugins.module_utils._accel_tables import (
    CANN_MIN_DRIVER,
    NVIDIA_GENERATIONS,
    NVIDIA_MIN_DRIVER_BRANCH,
    ROCM_MIN_RELEASE,
)
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_reads import CONTAINER_OWNER, REACHABLE_STATES

MIB = 1 << 20
# Memory beyond the weights that an engine needs per GPU (activations, CUDA
# graphs, KV cache floor). A deliberately small floor: engines fill the rest
# with KV cache (--gpu-memory-utilization / --mem-fraction-static).
DEFAULT_HEADROOM_MIB = 4096
# /dev/shm floor where the runtime does not share the host's IPC namespace. NCCL (TP/PP > 1) keeps
# its intra-node buffers in /dev/shm; Docker's 64 MB default breaks it (vllm issue 1710). 1 GiB is a
# floor, not a sizing: the engines' own docs run containers with --ipc=host or --shm-size 16g+.
DEFAULT_SHM_MIN_BYTES = 1 << 30
# Units are named UNIT_PREFIX + instance id + ".service" (planner.UNIT_PREFIX), and the
# docker/podman runtimes name each container after its instance id (units.command), so a
# port held by container <id> belongs to the unit launchcard-<id>.service.
UNIT_PREFIX = "launchcard-"
# What a host without RDMA falls back to (the rdma check's warning).
RDMA_FALLBACK = ("NCCL falls back to TCP sockets and the KV transfer (NIXL, Mooncake) to TCP or fails: "
                 "slow multi-node and PD serving")


def _validated(model, validated):
    """Whether a device model id is among the recipes' validated hardware.

    Cards may suffix a count to a validated model (``ascend_950pr_8x``: an
    8-NPU node); the device's model id (``ascend_950pr``) matches it.
    """
    if model in validated:
        return True
    return any(re.match(r"^%s_\d+x$" % re.escape(model), v) for v in validated if model)


def _holds(holder, owner):
    """Whether the listener ``holder`` (see :func:`evaluate`'s ``listening``) is ``owner``'s unit."""
    if holder == owner:
        return True
    return bool(holder) and holder.startswith(CONTAINER_OWNER) and \
        owner == "%s%s.service" % (UNIT_PREFIX, holder[len(CONTAINER_OWNER):])


def _gib(n):
    return "%.1f GiB" % (n / float(GIB))


def _size(n):
    """GiB, or MiB below 1 GiB (a small image would read 0.0 GiB)."""
    return _gib(n) if n >= GIB else "%.1f MiB" % (n / float(MIB))


def _result(check, ok, need, found, message, severity="error"):
    return {"check": check, "ok": ok, "need": need, "found": found, "message": message,
            "severity": "ok" if ok else severity}


class _Host(object):
    """What every check reads: the gathered facts, the needs, the options, and views of them."""

    def __init__(self, facts, needs, options):
        self.facts = facts
        self.needs = needs
        self.options = options
        self.acc = facts.get("accelerators") or {}
        self.devices = self.acc.get("devices") or []
        self.pci = self.acc.get("pci") or {}
        self.driver = self.acc.get("driver") or {}
        self.bare = bare_host(self.acc, options.get("install_driver"))


def check_os(host):
    """``os``: the OS is one the roles support (``/etc/os-release`` ID and VERSION_ID)."""
    os_id = (host.facts.get("os") or {}).get("id")
    ver = (host.facts.get("os") or {}).get("version_id")
    ok = _platforms.is_supported(os_id, ver)
    return _result("os", ok, _platforms.SUMMARY,
                   "%s %s" % (os_id, ver), "supported" if ok else "OS not supported by the roles")


def check_disk(host):
    """``disk``: free bytes of the weights filesystem cover what of the revision is not staged yet."""
    if host.needs.get("disk_bytes") is None:
        return None
    disk = host.facts.get("disk") or {}
    free = disk.get("free_bytes")
    want = max(0, host.needs["disk_bytes"] - (disk.get("present_bytes") or 0))
    ok = free is not None and free >= want
    return _result("disk", ok, "%s free on %s" % (_gib(want), disk.get("path")),
                   "%s free" % (_gib(free) if free is not None else "unknown"),
                   "enough space for the weights" if ok else "not enough free space for the weights")


def check_gpu_count(host):
    """``gpu_count``: devices the vendor tool lists (a bare host: the PCI bus) cover the placed instances."""
    needs, acc, pci, devices, bare = host.needs, host.acc, host.pci, host.devices, host.bare
    if not needs.get("gpus"):
        return None
    count = pci["count"] if bare else len(devices)
    ok = count >= needs["gpus"]
    vendor = pci.get("vendor") if bare else acc.get("vendor")
    # a host where no tool answered reads vendor "none" (_accelerators): say so, not "0 none GPU(s)"
    found = "%d %s GPU(s)%s" % (count, vendor, " on the PCI bus, no driver yet" if bare else "") \
        if count or vendor not in (None, "none") else "no GPU found"
    need = "%d GPU%s" % (needs["gpus"], "" if needs["gpus"] == 1 else "s")
    msg = "enough GPUs" if ok else "the recipes placed here need %s" % need
    if not devices and acc.get("errors") and not bare:
        msg += " (%s)" % "; ".join(acc["errors"])[:200]
    if not devices and not bare and pci.get("count"):
        msg += " (the PCI bus shows %d %s accelerator(s) without a working driver: install its stack)" % (
            pci["count"], pci.get("vendor"))
    return _result("gpu_count", ok, need, found, msg)


def check_gpu_model(host):
    """``gpu_model``: every device model is in the placed recipes' ``validated_hardware``."""
    needs = host.needs
    if not (needs.get("gpus") and needs.get("validated_models") and host.devices):
        return None
    models = sorted({d.get("model_id") or "unknown" for d in host.devices})
    bad = [m for m in models if not _validated(m, needs["validated_models"])]
    sev = "warning" if host.options.get("allow_unvalidated_hardware") else "error"
    msg = "validated" if not bad else "not validated for these recipes: %s" % ", ".join(bad)
    if bad and sev == "warning":
        msg += " (allowed by allow_unvalidated_hardware)"
    return _result("gpu_model", not bad, "one of %s" % ", ".join(needs["validated_models"]),
                   ", ".join(models), msg, sev)


def check_memory_fit(host):
    """``memory_fit``: the smallest device memory holds the weights' per-GPU share plus headroom.

    Memory the tool cannot report (``[N/A]`` on unified-memory parts such as GB10,
    ``[Insufficient Permissions]`` under MIG) is unknown, never 0: the check warns and says
    how to state it (``gpu_memory_mib``), which then replaces the unknown values.
    """
    needs, options = host.needs, host.options
    if not (needs.get("weights_per_gpu_mib") and host.devices):
        return None
    head = int(options.get("headroom_mib", DEFAULT_HEADROOM_MIB))
    want = needs["weights_per_gpu_mib"] + head
    need = "%d MiB per GPU (weights %d + headroom %d)" % (want, needs["weights_per_gpu_mib"], head)
    stated = options.get("gpu_memory_mib")
    sizes = [d.get("memory_mib") if d.get("memory_mib") is not None else stated for d in host.devices]
    unknown = [d.get("index", i) for i, d in enumerate(host.devices) if d.get("memory_mib") is None]
    if any(size is None for size in sizes):
        return _result("memory_fit", False, need, "unknown: the %s tool does not report the memory of GPU(s) %s" % (
            host.acc.get("vendor") or "vendor", ", ".join(str(i) for i in unknown)),
            "cannot check device memory (unified memory, or MIG without permission): state the memory per GPU "
            "in MiB with preflight_gpu_memory_mib (module option gpu_memory_mib) to check it", "warning")
    have = min(sizes)
    ok = have >= want
    found = "%d MiB" % have + (" (stated: the tool does not report it)" if unknown else "")
    spread = needs.get("weights_per_gpu_spread_mib")
    if not ok and spread and have >= spread + head:
        # the dense/expert split of the checkpoint is unknown here: between the two bounds, warn
        return _result("memory_fit", False, need, found,
                       "fits only if the weights are mostly MoE experts spread over the data parallel ranks "
                       "(%d MiB per GPU if all are); the dense share is not known here" % spread, "warning")
    return _result("memory_fit", ok, need, found,
                   "the weights fit" if ok else "the weights do not fit in device memory")


def check_driver(host):
    """``driver``: a working driver whose loaded kernel module is the installed one."""
    drv, pci = host.driver, host.pci
    if not host.needs.get("gpus"):
        return None
    if drv.get("reboot_required"):
        return _result("driver", False, "loaded driver = installed driver",
                       "loaded %s, installed %s" % (drv.get("loaded_version"), drv.get("installed_version")),
                       "reboot needed: the loaded kernel module differs from the installed driver")
    if host.devices:
        return _result("driver", True, "a working driver", drv.get("installed_version") or "present",
                       "driver loaded")
    if host.bare:
        return _result("driver", False, "a working driver", "none",
                       "not installed yet: the %s stack is installed next, then model, memory and "
                       "driver are checked again" % pci.get("vendor"), "warning")
    return None


def check_fabric(host):
    """``fabric``: on a host that needs fabric manager, the NVSwitch fabric is ready.

    GPUs that report a fabric state (Hopper and later) must all read ``completed``.
    GPUs that report none (``[N/A]``: Ampere, which has no fabric state) are judged by the
    ``nvidia-fabricmanager`` service instead (``driver.fabric_manager_active``).
    """
    drv, devices = host.driver, host.devices
    if not (host.needs.get("gpus") and drv.get("fabric_manager_required")):
        return None
    counts = {}
    for d in devices:
        state = str(d.get("fabric_state") or "unknown")
        counts[state] = counts.get(state, 0) + 1
    if devices and set(counts) == {"unknown"}:
        active = drv.get("fabric_manager_active")
        found = {True: "active", False: "not active"}.get(active, "unknown (systemctl not readable)")
        return _result("fabric", bool(active), "nvidia-fabricmanager active (these GPUs report no fabric state)",
                       "nvidia-fabricmanager %s" % found,
                       "fabric manager running" if active else
                       "start nvidia-fabricmanager at exactly the driver's version (CUDA error 802 otherwise)",
                       "error" if active is False else "warning")
    ok = {s.lower() for s in counts} == {"completed"}
    found = "%s of %d GPUs" % (", ".join("%s on %d" % (s, n) for s, n in sorted(counts.items())), len(devices))
    return _result("fabric", ok, "fabric state Completed on every GPU", found,
                   "fabric manager ready" if ok else "NVSwitch fabric not ready: start nvidia-fabricmanager "
                   "at exactly the driver's version (CUDA error 802 otherwise)")


def _planned_or_installed(host, key, installed):
    """The version the deploy will run: the stack's pinned one when it installs the stack
    (``install_driver`` and ``stack_versions[key]``), else what is installed."""
    planned = (host.options.get("stack_versions") or {}).get(key)
    if planned and host.options.get("install_driver"):
        return str(planned), "%s, installed next" % key
    if installed:
        return str(installed), "installed"
    return None, None


def check_driver_branch(host):
    """``driver_branch``: the NVIDIA driver branch supports every GPU generation on the host
    (:data:`NVIDIA_MIN_DRIVER_BRANCH`: Hopper from R525, Blackwell from R570, Blackwell Ultra
    from R580, per NVIDIA's data-center driver release notes)."""
    if host.acc.get("vendor") != "nvidia" or not host.needs.get("gpus"):
        return None
    version, source = _planned_or_installed(host, "nvidia_driver", host.driver.get("installed_version"))
    gens = sorted({(NVIDIA_GENERATIONS[d.get("model_id")], d.get("model_id")) for d in host.devices
                   if d.get("model_id") in NVIDIA_GENERATIONS})
    major = (version or "").split(".", 1)[0]
    if not gens or not major.isdigit():
        return None
    branch = int(major)
    too_old = [model for gen, model in gens if branch < NVIDIA_MIN_DRIVER_BRANCH[gen]]
    need = "; ".join("%s (%s): R%d or later" % (model, gen, NVIDIA_MIN_DRIVER_BRANCH[gen]) for gen, model in gens)
    return _result("driver_branch", not too_old, need, "%s (%s)" % (version, source),
                   "the driver branch supports these GPUs" if not too_old else
                   "driver branch R%d does not support %s: pin nvidia_driver_version to a branch that does "
                   "(see NVIDIA's data-center driver release notes)" % (branch, ", ".join(too_old)))


def check_rocm_release(host):
    """``rocm_release``: the ROCm release supports every Instinct model on the host
    (:data:`ROCM_MIN_RELEASE`, from AMD's ROCm compatibility matrix)."""
    if host.acc.get("vendor") != "amd" or not host.needs.get("gpus"):
        return None
    version, source = _planned_or_installed(host, "rocm", host.driver.get("runtime_version"))
    models = sorted({d.get("model_id") for d in host.devices if d.get("model_id") in ROCM_MIN_RELEASE})
    release = _release(version)
    if not release or not models:
        return None
    too_old = [m for m in models if release < ROCM_MIN_RELEASE[m]]
    need = "; ".join("%s: ROCm %d.%d or later" % ((m,) + ROCM_MIN_RELEASE[m]) for m in models)
    return _result("rocm_release", not too_old, need, "ROCm %s (%s)" % (version, source),
                   "the ROCm release supports these GPUs" if not too_old else
                   "ROCm %s does not support %s: pin rocm_version to a release AMD's compatibility matrix lists"
                   % (version, ", ".join(too_old)))


def check_cann_driver(host):
    """``cann_driver``: the Ascend NPU driver (HDK) is one the CANN release supports
    (:data:`CANN_MIN_DRIVER`, from Huawei's CANN/HDK version compatibility table)."""
    if host.acc.get("vendor") != "ascend" or not host.needs.get("gpus"):
        return None
    cann, cann_source = _planned_or_installed(host, "cann", host.driver.get("runtime_version"))
    drv, drv_source = _planned_or_installed(host, "ascend_driver", host.driver.get("installed_version"))
    cann_rel, drv_rel = _release(cann), _release(drv)
    if not cann_rel or not drv_rel:
        return None
    wanted = dict(CANN_MIN_DRIVER).get(cann_rel)
    if wanted is None:
        return None
    ok = drv_rel >= wanted
    return _result("cann_driver", ok, "CANN %s: NPU driver %d.%d or later" % ((cann,) + wanted),
                   "driver %s (%s), CANN %s (%s)" % (drv, drv_source, cann, cann_source),
                   "the driver supports this CANN release" if ok else
                   "NPU driver %s is older than CANN %s supports: pin ascend_driver_version (and its firmware) "
                   "to the HDK release Huawei's compatibility table pairs with it" % (drv, cann))


def _release(version):
    """``(major, minor)`` of ``7.0.2``, ``6.2.0-66``, ``8.2.RC1``, ``25.2.0``; ``None`` otherwise."""
    match = re.match(r"^\s*(\d+)\.(\d+)", str(version or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def _owner_text(holder):
    """``python3, pid 812, in ssh.service`` for a :func:`listening_sockets` value (or an owner string)."""
    if not isinstance(holder, dict):
        return holder or "another process"
    parts = []
    if holder.get("comm"):
        parts.append(holder["comm"])
    if holder.get("pid") is not None:
        parts.append("pid %s" % holder["pid"])
    if holder.get("unit"):
        parts.append("in %s" % holder["unit"])
    return ", ".join(parts) or "another process"


def check_ports(host):
    """``ports``: every planned port is free, or held by the unit the plan gives it."""
    needs = host.needs
    if not needs.get("ports"):
        return None
    listening = host.facts.get("listening") or {}
    busy = []
    for p in needs["ports"]:
        port = p["port"]
        holder = listening.get(port, listening.get(str(port))) if (
            port in listening or str(port) in listening) else _FREE
        if holder is _FREE:
            continue
        unit = holder.get("unit") if isinstance(holder, dict) else holder
        if not any(_holds(unit, o) for o in [p["owner"]] + list(p.get("former_owners") or [])):
            busy.append("%d (held by %s)" % (port, _owner_text(holder)))
    return _result("ports", not busy, ", ".join(str(p["port"]) for p in needs["ports"]) + " free",
                   ", ".join(busy) or "all free or ours",
                   "ports free" if not busy else "ports in use by something else")


def check_peers(host):
    """``peers``: every peer port this host's instances must reach answers (open or refused)."""
    if not host.needs.get("peers"):
        return None
    return _peers_result(host.needs["peers"], host.facts.get("peers"))


def check_shm(host):
    """``shm``: ``/dev/shm`` is big enough for NCCL where the runtime has its own IPC namespace."""
    if not host.needs.get("gpus") or host.options.get("host_ipc", True):
        return None
    want = int(host.options.get("shm_min_bytes", DEFAULT_SHM_MIN_BYTES))
    shm = host.facts.get("shm") or {}
    size = shm.get("size_bytes")
    ok = size is not None and size >= want
    return _result("shm", ok, "%s on /dev/shm (container without host IPC)" % _gib(want),
                   "%s on %s" % (_gib(size), shm.get("path")) if size is not None else "no /dev/shm",
                   "enough shared memory for NCCL" if ok else
                   "/dev/shm too small for NCCL with TP>1: run with --ipc host or a larger --shm-size")


def check_rdma(host):
    """``rdma``: a host whose PD or multi-node instances move data between hosts has RDMA devices.

    A warning, never an error: the engines still serve over TCP (:data:`RDMA_FALLBACK`). Not reported where the
    plan needs no RDMA here, nor by a module too old to read the devices (no ``runtime_devices.rdma``).
    """
    units = host.needs.get("rdma")
    found = (host.facts.get("runtime_devices") or {}).get("rdma")
    if not units or found is None:
        return None
    return _result("rdma", bool(found), "RDMA devices for %s" % ", ".join(units),
                   ", ".join(found) if found else "no RDMA device (/sys/class/infiniband, /dev/infiniband)",
                   "RDMA devices present" if found else "no RDMA here: %s" % RDMA_FALLBACK, "warning")


_FREE = object()


def _peers_result(peers, probes):
    """The ``peers`` result: every needed peer port reachable (open or refused) from this host."""
    states = {(p.get("address"), p.get("port")): p for p in (probes or [])}
    blocked, counts = [], {}
    for peer in peers:
        pr = states.get((peer["address"], peer["port"])) or {"state": "not probed"}
        counts[pr["state"]] = counts.get(pr["state"], 0) + 1
        if pr["state"] not in REACHABLE_STATES:
            blocked.append("%s:%d %s (%s)" % (peer["address"], peer["port"], pr["state"], peer["why"]))
    need = "TCP from here to " + ", ".join("%s:%d" % (p["address"], p["port"]) for p in peers)
    if blocked:
        return _result("peers", False, need, "blocked: " + ", ".join(blocked),
                       "peers cannot be reached: open the firewall / routes between the hosts "
                       "(a refused connect would do: the servers are not running yet)")
    words = {"open": "listening", "refused": "refused (host up, port not listening yet)"}
    return _result("peers", True, need, "reachable: " + ", ".join(
        "%d %s" % (n, words.get(s, s)) for s, n in sorted(counts.items())), "every peer port is reachable")
