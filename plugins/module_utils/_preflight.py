# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight: what a host needs for its share of the plan, and whether it has it.

Pure Python, no Ansible import. :func:`host_needs` runs on the controller
(from the card model and the plan); :func:`evaluate` runs on the host inside
the ``preflight`` module, over facts that module gathered: it runs the checks
of :data:`REGISTRY`, one function per check (``check_<name>``), each
returning one result or ``None`` where it does not apply. The host readers
(:func:`listening_sockets`, :func:`runtime_devices`, :func:`container_name`)
take their roots (:data:`PROC_ROOT`, :data:`DEV_ROOT`,
:data:`CONTAINER_STATE_ROOT`) as parameters, so tests use fake trees. Every result
names the check, what was needed and what was found, so one table can tell an
operator why a host cannot serve its recipes.

Units: bytes for disk (GiB = 2**30 bytes, the card's ``min_disk_gib``),
MiB for device memory (``nvidia-smi memory.total``).

The peer probes (:func:`probe`, :func:`probe_all`) open TCP sockets but take
the connect function as a parameter, so the classifier is testable without a
network.
"""

from __future__ import annotations

import errno
import grp
import hashlib
import json
import os
import pwd
import re
import socket
import stat as stat_mod
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.launchcard.inference.plugins.module_utils import _platforms
from ansible_collections.launchcard.inference.plugins.module_utils._accel_tables import (
    CANN_MIN_DRIVER,
    NVIDIA_GENERATIONS,
    NVIDIA_MIN_DRIVER_BRANCH,
    ROCM_MIN_RELEASE,
)

GIB = 1 << 30
MIB = 1 << 20
# Memory beyond the weights that an engine needs per GPU (activations, CUDA
# graphs, KV cache floor). A deliberately small floor: engines fill the rest
# with KV cache (--gpu-memory-utilization / --mem-fraction-static).
DEFAULT_HEADROOM_MIB = 4096
# /dev/shm floor where the runtime does not share the host's IPC namespace. NCCL (TP/PP > 1) keeps
# its intra-node buffers in /dev/shm; Docker's 64 MB default breaks it (vllm issue 1710). 1 GiB is a
# floor, not a sizing: the engines' own docs run containers with --ipc=host or --shm-size 16g+.
DEFAULT_SHM_MIN_BYTES = 1 << 30
# Disk allowance per distinct container image on a host whose size the registry did not give: an estimate
# (vLLM / SGLang CUDA images are 10-25 GB compressed+unpacked), not a measurement.
DEFAULT_IMAGE_ALLOWANCE_BYTES = 30 << 30
# Room an image takes per compressed byte its manifest lists (plugins/plugin_utils/_images.py manifest_size):
# its layers unpacked, plus the compressed blob of the layer being unpacked, which the engine holds meanwhile.
# Measured on the sandbox's stand-in image (Python 3.11 and shared libraries, one gzip layer): 49.8 MiB
# compressed, 153.2 MiB in podman's store (`podman image inspect` Size), 3.1x; with its blob, 4.1x at the peak
# of the pull. An image of many layers holds one layer's blob at a time, so 4 is a floor of the peak for
# those, not a sizing of everything the engine keeps (README "Preflight").
DEFAULT_IMAGE_UNPACK_FACTOR = 4.0
DEFAULT_CONNECT_TIMEOUT = 5.0  # a dropped SYN is retried after 1 s, then 3 s
# Where each container engine keeps its images unless configured otherwise.
IMAGE_DATA_ROOTS = {"docker": "/var/lib/docker", "podman": "/var/lib/containers"}
# probe() states that prove the network path works: a listener answered, or the host's
# kernel answered with a RST because nothing listens yet (preflight runs before the servers).
REACHABLE_STATES = ("open", "refused")
# Units are named UNIT_PREFIX + instance id + ".service" (planner.UNIT_PREFIX), and the
# docker/podman runtimes name each container after its instance id (units.command), so a
# port held by container <id> belongs to the unit launchcard-<id>.service.
UNIT_PREFIX = "launchcard-"
CONTAINER_OWNER = "container "
# Where podman looks for CDI specs (containers.conf(5) cdi_spec_dirs: /etc/cdi, then /var/run/cdi, which
# wins), the kind `nvidia-ctk cdi generate` writes and its default output; docker's daemon configuration.
CDI_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
CDI_DEFAULT_SPEC = "/etc/cdi/nvidia.yaml"
NVIDIA_CDI_KIND = "nvidia.com/gpu"
DOCKER_DAEMON_JSON = "/etc/docker/daemon.json"
# The Ascend control devices the units pass with the /dev/davinciN (plugins/plugin_utils/_units.py).
ASCEND_CONTROL_DEVICES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")
_CDI_KIND = re.compile(r'^\s*"?kind"?\s*:\s*"?([^"\s,]+)"?', re.M)
# a driver library mounted by its version (hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05)
_CDI_DRIVER = re.compile(r"lib(?:cuda|nvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?)")
_CONTAINER_CGROUP = re.compile(r"(?:^|/)(?:docker|libpod)[-/]([0-9a-f]{64})(?:\.scope)?(?:/|$)")


def _fp8(quant):
    return bool(quant) and "fp8" in str(quant).lower()


def _peers(card, host_plan, plan):
    """Ports on other hosts that this host's instances must reach (see :func:`host_needs`)."""
    recipes = {r["name"]: r for r in card["recipes"]}
    mine = host_plan.get("instances", [])
    others = [i for h, hp in sorted((plan or {}).get("hosts", {}).items())
              for i in hp.get("instances", [])]

    def peers_of(inst, role):
        return [p for p in others if p["role"] == role and p.get("node_rank", 0) == 0
                and p.get("host") != inst.get("host") and p.get("address")]

    out, index = [], {}

    def add(inst, peer, key, what):
        port = peer.get(key)
        if not port:
            return
        why = "%s -> %s %s" % (inst["recipe"], peer["recipe"], what)
        k = (peer["address"], int(port))
        if k in index:
            if why not in index[k]["why"].split("; "):
                index[k]["why"] += "; " + why
            return
        index[k] = {"address": peer["address"], "port": int(port), "why": why}
        out.append(index[k])

    for inst in mine:
        r = dict(recipes.get(inst["recipe"]) or {}, **(inst.get("recipe_facts") or {}))
        if inst["role"] == "router":
            if r.get("pd_disaggregation"):
                for p in peers_of(inst, "prefill"):
                    add(inst, p, "port", "port")
                    add(inst, p, "bootstrap_port", "bootstrap port")
                for p in peers_of(inst, "decode"):
                    add(inst, p, "port", "port")
            elif r.get("worker_urls"):
                for p in peers_of(inst, "aggregated"):
                    add(inst, p, "port", "port")
        elif inst["role"] == "decode":
            for p in peers_of(inst, "prefill"):
                add(inst, p, "bootstrap_port", "bootstrap port")
        elif inst["role"] == "language" and r.get("encoder_urls"):
            for p in peers_of(inst, "encoder"):
                add(inst, p, "port", "port")
        if inst.get("node_rank"):
            # a multi-node rank > 0 connects to its rank 0's init port (--dist-init-addr / --master-port)
            for p in others:
                if (p["recipe"], p.get("replica"), p.get("node_rank")) == (inst["recipe"], inst.get("replica"), 0) \
                        and p.get("host") != inst.get("host") and p.get("address"):
                    add(inst, p, "dist_init_port", "init port")
    return out


# Instances that move data between hosts and want RDMA (#25 item 3): a PD prefill or decode (KV transfer over NIXL
# or Mooncake) and every rank of a multi-node group (NCCL). The units (plugin_utils/_units.py) and the rdma check
# both read this rule.
RDMA_ROLES = ("prefill", "decode")
RDMA_FALLBACK = ("NCCL falls back to TCP sockets and the KV transfer (NIXL, Mooncake) to TCP or fails: "
                 "slow multi-node and PD serving")


def needs_rdma(inst):
    """Whether the plan makes an instance move data between hosts: a PD prefill or decode, or a multi-node rank."""
    return bool(inst.get("gpus")) and (inst.get("role") in RDMA_ROLES or int(inst.get("nnodes") or 1) > 1)


def host_needs(card, host_plan, plan=None):
    """Compute what one host needs, from the card model and its plan entry.

    :returns: dict with ``disk_bytes`` (int or None: the card's
        ``min_disk_gib`` in bytes; None on a host that runs only routers,
        which load no weights), ``gpus`` (GPUs the placed instances
        need), ``validated_models`` (lower-case ids the placed recipes are
        validated on; empty: none listed), ``weights_per_gpu_mib`` (largest
        per-GPU share of the resident checkpoint over the placed instances:
        resident GiB / (TP x PP), halved when the recipe quantizes a non-fp8
        checkpoint to fp8; None when unknown), ``weights_per_gpu_spread_mib``
        (the same with a vLLM recipe's MoE experts spread over TP x PCP x DP
        too: the lower bound when DP or PCP > 1, else None) and ``ports`` (list of
        ``{"port", "owner"}``: every port the plan assigns here (server,
        bootstrap, router Prometheus, vLLM NIXL side channel, a multi-node
        rank 0's init ports: the instance's ``ports``), owner = the unit
        that will hold it, and where it has any, ``former_owners`` = its
        unit's names in earlier releases, pruned before it starts), ``images`` (sorted distinct container images
        of the placed instances) and ``peers`` (list of ``{"address",
        "port", "why"}``: ports on OTHER hosts that the instances here must
        reach - a router every prefill's server and bootstrap port, every
        decode's port, or every aggregated worker with ``--worker-urls``; a
        decode every prefill's bootstrap port; a language-only server every
        encoder; a multi-node rank > 0 its rank 0's init port; empty without
        ``plan``), ``rdma`` (sorted units that move data between hosts: :func:`needs_rdma`).
    :param plan: the whole plan (``launchcard_plan``), to find the peers;
        optional for backward compatibility.
    """
    recipes = {r["name"]: r for r in card["recipes"]}
    validated = set()
    per_gpu = spread_per_gpu = None
    ports = []
    for inst in host_plan.get("instances", []):
        # an instance whose host overrides its recipe's argv carries what its effective argv says (the planner)
        r = dict(recipes[inst["recipe"]], **(inst.get("recipe_facts") or {}))
        if inst["gpus"]:
            validated.update(r["validated_hardware"])
            ckpt = card["checkpoints"].get(r.get("checkpoint") or "", {})
            resident = ckpt.get("resident_gib") or card["model"].get("weight_gib")
            shards = max(1, (r.get("tensor_parallel_size") or 1) * (r.get("pipeline_parallel_size") or 1))
            # online fp8 quantization halves a 16-bit checkpoint; an fp8
            # checkpoint is resident at its own size already.
            halve = _fp8(r.get("quantization")) and not _fp8(ckpt.get("format"))
            if resident:
                mib = resident * GIB / MIB / shards / (2 if halve else 1)
                per_gpu = max(per_gpu or 0, int(mib))
                spread = shards * _expert_spread(r)
                if spread > shards:
                    spread_per_gpu = max(spread_per_gpu or 0, int(mib * shards / spread))
        if "ports" in inst:
            # every port the planner gave the instance (server, bootstrap, Prometheus,
            # NIXL side channel, multi-node init ports)
            former = {"former_owners": inst["former_units"]} if inst.get("former_units") else {}
            ports.extend(dict({"port": x["port"], "owner": inst["unit"]}, **former) for x in inst["ports"])
            continue
        for key in ("port", "bootstrap_port", "prometheus_port"):
            if inst.get(key):
                ports.append({"port": inst[key], "owner": inst["unit"]})
        nixl = (inst.get("env") or {}).get("VLLM_NIXL_SIDE_CHANNEL_PORT")
        if nixl and str(nixl).isdigit():
            ports.append({"port": int(nixl), "owner": inst["unit"]})
    return {
        # Only engines load weights: a host that runs nothing but routers needs no weights disk.
        "disk_bytes": card["hardware"].get("min_disk_bytes") if any(
            i["role"] != "router" for i in host_plan.get("instances", [])) else None,
        "gpus": sum(i["gpus"] for i in host_plan.get("instances", [])),
        "validated_models": sorted(validated),
        "weights_per_gpu_mib": per_gpu,
        "weights_per_gpu_spread_mib": spread_per_gpu,
        "ports": ports,
        "images": sorted({i["image"] for i in host_plan.get("instances", []) if i.get("image")}),
        "peers": _peers(card, host_plan, plan) if plan else [],
        "rdma": sorted(i["unit"] for i in host_plan.get("instances", []) if needs_rdma(i)),
    }


def _expert_spread(recipe):
    """How many more GPUs than TP x PP a vLLM recipe spreads MoE experts over: vllm/config/parallel.py
    (``data_parallel_size``: "MoE layers will be sharded according to the product of the tensor,
    prefill-context, and data parallel sizes"); 1 for SGLang, whose experts stay within the TP group."""
    if recipe.get("launcher") != "vllm":
        return 1
    return max(1, (recipe.get("prefill_context_parallel_size") or 1) * (recipe.get("data_parallel_size") or 1))


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


def bare_host(accelerators, install_driver):
    """Whether a host is bare: no device answers through a vendor tool, but the PCI bus
    (``accelerators.pci``) shows accelerators, and the play installs their stack next.

    Such a host is judged on its PCI count now and checked again after the install.

    :param accelerators: the ``accelerator_facts`` summary.
    :param install_driver: the play installs the accelerator stack after preflight.
    """
    acc = accelerators or {}
    return bool(install_driver) and not acc.get("devices") and bool((acc.get("pci") or {}).get("count"))


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
    found = "%d %s GPU(s)%s" % (count, (pci.get("vendor") if bare else acc.get("vendor")) or "none",
                                " on the PCI bus, no driver yet" if bare else "")
    msg = "enough GPUs" if ok else "the recipes placed here need %d GPUs" % needs["gpus"]
    if not devices and acc.get("errors") and not bare:
        msg += " (%s)" % "; ".join(acc["errors"])[:200]
    if not devices and not bare and pci.get("count"):
        msg += " (the PCI bus shows %d %s accelerator(s) without a working driver: install its stack)" % (
            pci["count"], pci.get("vendor"))
    return _result("gpu_count", ok, "%d GPUs" % needs["gpus"], found, msg)


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


def check_container_engine(host):
    """``container_engine``: docker where the OS repositories have none (the RHEL 9 family) is installed already.

    Reported only where it matters: the docker runtime on a system whose repositories ship no Docker
    (``_platforms.engine_package``). ``engines.docker`` is the ``docker`` binary's path, or None.
    """
    options = host.options
    os_id = (host.facts.get("os") or {}).get("id")
    if options.get("runtime") != "docker" or not _platforms.is_supported(os_id, (host.facts.get("os") or {}).get(
            "version_id")) or _platforms.engine_package(os_id, "docker"):
        return None
    found = (host.facts.get("engines") or {}).get("docker")
    return _result("container_engine", bool(found),
                   "docker installed from Docker's repository (%s ships podman, not docker)" % os_id,
                   found or "no docker",
                   "docker present, installed from outside the OS repositories" if found else
                   "%s's repositories have no docker: install docker-ce from Docker's repository "
                   "(https://docs.docker.com/engine/install/rhel/) first, or set launchcard_runtime: podman" % os_id)


def check_image_disk(host):
    """``image_disk``: the container engine's data root has room for the placed images that are not in its
    store yet.

    An image is in place when the host's record names the digest it runs and the engine's own store lists that
    digest (``facts.image_disk.in_place``, :func:`images_in_place`): a re-deploy, which keeps that digest, pulls
    nothing, so it needs no room for it. Each image to pull needs its compressed size (``options.image_sizes``,
    from its manifest) times ``options.image_unpack_factor``; one of unknown size (no manifest, a registry that
    gave none) the flat ``options.image_allowance_bytes``.
    """
    options = host.options
    if not host.needs.get("images") or options.get("runtime") not in IMAGE_DATA_ROOTS:
        return None
    per = int(options.get("image_allowance_bytes", DEFAULT_IMAGE_ALLOWANCE_BYTES))
    factor = float(options.get("image_unpack_factor") or DEFAULT_IMAGE_UNPACK_FACTOR)
    sizes = options.get("image_sizes") or {}
    img = host.facts.get("image_disk") or {}
    in_place = set(img.get("in_place") or [])
    pending = [i for i in host.needs["images"] if i not in in_place]
    free = img.get("free_bytes")
    where = img.get("path") or IMAGE_DATA_ROOTS[options["runtime"]]
    if not pending:
        return _result("image_disk", True, "no room: every image is in the engine's store", "%s free" % (
            _gib(free) if free is not None else "unknown"), "the images are in place (the digests the host runs)")
    known = dict((i, _bytes(sizes.get(i))) for i in pending if _bytes(sizes.get(i)) is not None)
    unknown = [i for i in pending if i not in known]
    compressed = sum(known.values())
    want = int(compressed * factor) + per * len(unknown)
    parts = []
    if known:
        parts.append("%d image(s) to pull: %s compressed x %g = %s" % (
            len(known), _size(compressed), factor, _size(int(compressed * factor))))
    if unknown:
        parts.append("%d image(s) of unknown size to pull x %s, an estimate" % (len(unknown), _gib(per)))
    ok = free is not None and free >= want
    return _result("image_disk", ok, "%s free on %s (%s)" % (_size(want), where, "; ".join(parts)),
                   "%s free" % (_size(free) if free is not None else "unknown"),
                   "enough space for the images" if ok else "not enough free space for the container images")


def _bytes(value):
    """A size in bytes (an int, or its digits as a string), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value if isinstance(value, int) and value >= 0 else None


def container_vendor(host):
    """The vendor whose devices the units pass into containers, for the ``container_*`` checks; None where
    they do not apply: a native runtime, no accelerator placed here, a bare host, or vendor ``none``.

    The units' own choice (plugins/plugin_utils/_unit_options.py): ``launchcard_accelerator_vendor``
    (option ``container_vendor``), else the vendor preflight found (its tools, else its PCI bus).
    """
    options = host.options
    if options.get("runtime") not in IMAGE_DATA_ROOTS or not host.needs.get("gpus") or host.bare:
        # a bare host gets its driver next and is checked again (without install_driver) after it
        return None
    vendor = options.get("container_vendor") or stack_vendor(host.acc)
    return vendor if vendor in ("nvidia", "amd", "ascend") else None


def check_image_vendor(host):
    """``image_vendor``: every placed GPU instance's image serves this host's accelerator vendor.

    The host's vendor is the units' (``container_vendor`` option, ``launchcard_accelerator_vendor``), else the one
    its tools or PCI bus show (a bare host too: its stack does not change the vendor). The vendors an image serves
    come from the plan (``needs.image_vendors``, plugin_utils/_vendors.py). A CUDA image on an AMD or Ascend host
    starts no engine: refused before any host changes. Containers only (a native host installs per vendor).
    """
    options = host.options
    entries = host.needs.get("image_vendors") or []
    if options.get("runtime") not in IMAGE_DATA_ROOTS or not host.needs.get("gpus") or not entries:
        return None
    vendor = options.get("container_vendor") or stack_vendor(host.acc)
    if vendor not in ("nvidia", "amd", "ascend"):
        return None
    wrong = [e for e in entries if vendor not in (e.get("vendors") or ())]
    need = "images that serve %s" % vendor
    found = "; ".join("%s: %s (%s)" % (e["recipe"], e["image"], "/".join(e.get("vendors") or ()) or "?")
                      for e in (wrong or entries))
    if not wrong:
        return _result("image_vendor", True, need, found, "each image serves the host's %s accelerators" % vendor)
    first = wrong[0]
    return _result("image_vendor", False, need, found,
                   "%s accelerators, but recipe %s runs image %s, built for %s: set launchcard_accelerator_vendor: %s "
                   "on this host so the plan takes the %s image (launchcard_vendor_images), or name one in the card" % (
                       vendor, first["recipe"], first["image"], "/".join(first.get("vendors") or ()) or "?",
                       vendor, vendor))


def check_native_install(host):
    """``native_install``: the native runtime has a pinned pip install of each engine placed here for the host's
    vendor (``needs.native_gaps``, empty where the inventory names the packages): SGLang publishes none for AMD
    or Ascend (built from source), so such a host is refused before the weights are staged."""
    gaps = host.needs.get("native_gaps") or {}
    if host.options.get("runtime") != "native" or not gaps:
        return None
    vendor = host.options.get("container_vendor") or stack_vendor(host.acc)
    if vendor not in ("nvidia", "amd", "ascend"):
        return None
    missing = gaps.get(vendor) or []
    need = "a pip install of each engine for %s" % vendor
    if not missing:
        return _result("native_install", True, need, "published", "the engines install from pinned wheels")
    return _result("native_install", False, need, "none for %s" % ", ".join(missing),
                   "no pip install of %s is published for %s accelerators (upstream builds it from source or ships "
                   "images): set launchcard_runtime_native_packages and launchcard_runtime_native_pip_extra_args, or "
                   "run it in a container" % (", ".join(missing), vendor))


def _stack_fixes(host, what):
    """Severity and a note when the accelerator stack role installed next fixes ``what`` (nvidia only: its
    ``container-toolkit.yml``), else ``("error", "")``."""
    if host.options.get("install_driver") and host.options.get("container_toolkit", True):
        return "warning", " (the nvidia stack role, installed next, %s)" % what
    return "error", ""


def _loaded_nvidia_driver(host):
    """The NVIDIA driver the host runs now: the loaded kernel module's version, else what nvidia-smi
    reports, else the installed module's."""
    for version in [host.driver.get("loaded_version")] + [d.get("driver_version") for d in host.devices] + [
            host.driver.get("installed_version")]:
        if version:
            return str(version)
    return None


def check_container_nvidia_runtime(host):
    """``container_nvidia_runtime``: docker can hand NVIDIA GPUs to containers (``--gpus``).

    Either the ``nvidia`` runtime is registered with the daemon, as ``nvidia-ctk runtime configure
    --runtime=docker`` leaves it (``"runtimes": {"nvidia": {...}}`` in ``/etc/docker/daemon.json``; the
    running daemon's ``docker info`` ``Runtimes``), or the daemon has CDI on (``"features": {"cdi": true}``;
    ``docker info`` lists ``CDISpecDirs``). What the running daemon says wins over the file.
    """
    if container_vendor(host) != "nvidia" or host.options.get("runtime") != "docker":
        return None
    docker = (host.facts.get("container_access") or {}).get("docker") or {}
    info, conf = docker.get("info"), docker.get("daemon_json") or {}
    source = "docker info" if info is not None else (conf.get("path") or DOCKER_DAEMON_JSON)
    seen = info if info is not None else conf
    runtimes = sorted(seen.get("runtimes") or [])
    cdi = bool(seen.get("cdi"))
    ok = "nvidia" in runtimes or cdi
    found = "%s: runtimes %s, CDI %s" % (source, ", ".join(runtimes) or "none", "on" if cdi else "off")
    if conf.get("error"):
        found += " (%s)" % conf["error"]
    if ok:
        return _result("container_nvidia_runtime", True, "docker's nvidia runtime or CDI", found,
                       "containers can reach the GPUs")
    severity, note = _stack_fixes(host, "registers it")
    return _result("container_nvidia_runtime", False, "docker's nvidia runtime or CDI", found,
                   "docker cannot pass the GPUs into containers: run `nvidia-ctk runtime configure --runtime=docker` "
                   "and restart docker" + note, severity)


def check_container_cdi_spec(host):
    """``container_cdi_spec``: podman finds a CDI spec for ``nvidia.com/gpu`` that names the loaded driver.

    podman reads CDI specs from ``/etc/cdi`` and ``/var/run/cdi`` (``cdi_spec_dirs`` in containers.conf(5));
    ``nvidia-ctk cdi generate`` writes one whose mounts name the driver's libraries by version
    (``libcuda.so.580.95.05``). After a driver upgrade the old spec mounts files that are gone: regenerate it.
    """
    if container_vendor(host) != "nvidia" or host.options.get("runtime") != "podman":
        return None
    specs = [s for s in (host.facts.get("container_access") or {}).get("cdi_specs") or []
             if s.get("kind") == NVIDIA_CDI_KIND]
    loaded = _loaded_nvidia_driver(host)
    need = "a CDI spec of %s in %s naming driver %s" % (NVIDIA_CDI_KIND, " or ".join(CDI_SPEC_DIRS), loaded or "?")
    fix = "nvidia-ctk cdi generate --output=%s" % (specs[0]["path"] if specs else CDI_DEFAULT_SPEC)
    if not specs:
        severity, note = _stack_fixes(host, "generates it")
        return _result("container_cdi_spec", False, need, "no CDI spec of %s" % NVIDIA_CDI_KIND,
                       "podman cannot pass the GPUs into containers: run `%s`%s" % (fix, note), severity)
    named = sorted({v for s in specs for v in s.get("driver_versions") or []})
    found = "; ".join("%s: driver %s" % (s["path"], ", ".join(s.get("driver_versions") or []) or "not named")
                      for s in specs)
    stale = [s for s in specs if s.get("driver_versions") and loaded not in s["driver_versions"]]
    if loaded and stale:
        severity, note = _stack_fixes(host, "regenerates it")
        return _result("container_cdi_spec", False, need, found,
                       "stale CDI spec: %s names driver %s, the loaded driver is %s (a driver upgrade since): "
                       "run `nvidia-ctk cdi generate --output=%s`%s" % (
                           stale[0]["path"], ", ".join(stale[0]["driver_versions"]), loaded, stale[0]["path"], note),
                       severity)
    if not named or not loaded:
        return _result("container_cdi_spec", False, need, found,
                       "cannot tell which driver the CDI spec was generated for: if the driver changed since, "
                       "run `%s`" % fix, "warning")
    return _result("container_cdi_spec", True, need, found, "the CDI spec names the loaded driver")


def check_container_amd_devices(host):
    """``container_amd_devices``: ``/dev/kfd`` and ``/dev/dri`` exist, and the group the units add
    (``--group-add``: ``launchcard_amd_render_gid``, else the id of the host's ``render`` group) owns the
    render nodes ``/dev/dri/renderD*`` (ROCm's Docker guide: the container user must be in it)."""
    if container_vendor(host) != "amd":
        return None
    access = (host.facts.get("container_access") or {}).get("devices") or {}
    gid = host.options.get("amd_render_gid")
    if gid is None:
        gid = (host.facts.get("runtime_devices") or {}).get("render_gid")
    nodes = access.get("render_nodes") or {}
    missing = [p for p in ("/dev/kfd", "/dev/dri") if not access.get(p)]
    found = "%s; render nodes %s; units add group %s" % (
        ", ".join("%s %s" % (p, "present" if access.get(p) else "missing") for p in ("/dev/kfd", "/dev/dri")),
        ", ".join("%s gid %s" % kv for kv in sorted(nodes.items())) or "none", "none" if gid is None else gid)
    need = "/dev/kfd, /dev/dri and the render nodes' group id"
    if missing:
        return _result("container_amd_devices", False, need, found,
                       "%s missing: the amdgpu driver is not loaded (install ROCm's amdgpu-dkms, reboot)"
                       % " and ".join(missing))
    wrong = sorted(node for node, node_gid in nodes.items() if node_gid != gid)
    if not nodes or wrong:
        what = ", ".join(wrong) or "a render node (none in /dev/dri)"
        return _result("container_amd_devices", False, need, found,
                       "containers cannot open %s: the units add group %s; set launchcard_amd_render_gid to the "
                       "group id that owns the render nodes" % (what, "none" if gid is None else gid))
    return _result("container_amd_devices", True, need, found, "containers can reach the GPUs")


def check_container_ascend_devices(host):
    """``container_ascend_devices``: every ``/dev/davinciN`` the units pass exists, with ``davinci_manager``,
    ``devmm_svm`` and ``hisi_hdc`` (what Ascend's container guide passes), and they cover the NPUs placed here.

    The units pass ``launchcard_ascend_devices``, else the ``/dev/davinciN`` preflight found on the host.
    """
    if container_vendor(host) != "ascend":
        return None
    present = sorted((host.facts.get("runtime_devices") or {}).get("davinci") or [])
    stated = host.options.get("ascend_devices")
    passed = sorted(int(n) for n in stated) if stated else present
    access = (host.facts.get("container_access") or {}).get("devices") or {}
    missing = ["/dev/davinci%d" % n for n in passed if n not in present]
    missing += [p for p in ASCEND_CONTROL_DEVICES if not access.get(p)]
    want = int(host.needs.get("gpus") or 0)
    need = "%d NPU(s): /dev/davinciN for each, %s" % (want, ", ".join(ASCEND_CONTROL_DEVICES))
    found = "/dev/davinci%s present; units pass %s" % (
        "{%s}" % ",".join(str(n) for n in present) if present else "N: none",
        ", ".join(str(n) for n in passed) or "none")
    if missing:
        return _result("container_ascend_devices", False, need, found,
                       "missing on the host: %s (the NPU driver is not loaded%s)" % (
                           ", ".join(missing), ", or launchcard_ascend_devices names NPUs the host does not have"
                           if stated else ""))
    if len(passed) < want:
        return _result("container_ascend_devices", False, need, found,
                       "the units pass %d NPU(s), the recipes placed here need %d" % (len(passed), want))
    return _result("container_ascend_devices", True, need, found, "containers can reach the NPUs")


_FREE = object()

REGISTRY = (
    ("os", check_os),
    ("disk", check_disk),
    ("gpu_count", check_gpu_count),
    ("gpu_model", check_gpu_model),
    ("memory_fit", check_memory_fit),
    ("driver", check_driver),
    ("driver_branch", check_driver_branch),
    ("rocm_release", check_rocm_release),
    ("cann_driver", check_cann_driver),
    ("fabric", check_fabric),
    ("ports", check_ports),
    ("peers", check_peers),
    ("shm", check_shm),
    ("rdma", check_rdma),
    ("container_engine", check_container_engine),
    ("image_disk", check_image_disk),
    ("image_vendor", check_image_vendor),
    ("native_install", check_native_install),
    ("container_nvidia_runtime", check_container_nvidia_runtime),
    ("container_cdi_spec", check_container_cdi_spec),
    ("container_amd_devices", check_container_amd_devices),
    ("container_ascend_devices", check_container_ascend_devices),
)
"""Every check, in report order: ``(name, function)``. A function takes the host view
(facts, needs, options) and returns one result dict, or ``None`` where it does not apply."""

CHECKS = tuple(entry[0] for entry in REGISTRY)


def evaluate(facts, needs, options=None):
    """Run every enabled check of :data:`REGISTRY`.

    :param facts: gathered on the host: ``os`` (``{"id", "version_id"}`` from
        /etc/os-release), ``disk`` (``{"path", "free_bytes",
        "present_bytes"}``: statvfs of the weights filesystem and bytes of
        this revision already staged), ``accelerators`` (the
        ``accelerator_facts`` summary), ``listening`` (dict port ->
        :func:`listening_sockets` value ``{"unit", "pid", "comm"}``, or an
        owner string: a unit name, ``container <name>``, or None); optional
        ``peers`` (:func:`probe_all` output), ``shm`` (``{"path",
        "size_bytes"}``, statvfs of /dev/shm; None when absent),
        ``image_disk`` (``{"path", "data_root", "free_bytes"}``: statvfs of
        the nearest existing ancestor of the container engine's data root), ``engines``
        (``{"docker": path or None}``: the container engine binaries found).
    :param needs: :func:`host_needs` output.
    :param options: ``checks`` (dict check -> bool, default all on),
        ``allow_unvalidated_hardware`` (bool: warn instead of fail),
        ``headroom_mib`` (int), ``gpu_memory_mib`` (int: memory per GPU in
        MiB stated by the operator, used where the tool reports none),
        ``host_ipc`` (bool, default True: the
        runtime shares the host's IPC namespace, so /dev/shm is the host's
        and the ``shm`` check does not apply), ``shm_min_bytes`` (int),
        ``runtime`` (``docker``, ``podman`` or ``native``; ``image_disk``
        applies to docker/podman only), ``image_sizes`` (``{image: compressed
        bytes}`` from the registry), ``image_unpack_factor`` (float: room per
        compressed byte), ``image_allowance_bytes`` (int per distinct image of
        unknown size), ``install_driver`` (bool: the deploy installs the
        accelerator stack after preflight, so a host whose accelerators show
        only on the PCI bus (``accelerators.pci``) passes ``gpu_count`` on
        that count, with a ``driver`` warning; model and memory are checked
        on the next run), ``stack_versions`` (``{"nvidia_driver", "rocm",
        "cann", "ascend_driver"}``: the versions the stack roles pin; with
        ``install_driver`` the compatibility checks judge these instead of
        what is installed), ``container_vendor`` (the units' vendor, ``launchcard_accelerator_vendor``; empty:
        the one found), ``container_toolkit`` (bool, default True: with ``install_driver`` the NVIDIA stack role
        configures the container toolkit next, so its checks warn), ``amd_render_gid`` (int: the group the AMD
        units add; None: ``facts.runtime_devices.render_gid``), ``ascend_devices`` (list of int: the
        ``/dev/davinciN`` the units pass; None: those found). ``facts.container_access`` is
        :func:`container_access` output.
    :returns: list of result dicts ``{check, ok, need, found, message,
        severity}`` where severity is ``ok``, ``warning`` or ``error``.
    """
    options = options or {}
    enabled = dict.fromkeys(CHECKS, True)
    enabled.update(options.get("checks") or {})
    host = _Host(facts, needs, options)
    out = []
    for name, check in REGISTRY:
        if enabled.get(name, True):
            result = check(host)
            if result is not None:
                out.append(result)
    return out


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
    words = {"open": "listening", "refused": "host up, port not listening yet"}
    return _result("peers", True, need, "reachable: " + ", ".join(
        "%d %s" % (n, words.get(s, s)) for s, n in sorted(counts.items())), "every peer port is reachable")


def _tcp_connect(address, port, timeout):
    sock = socket.create_connection((address, port), timeout)
    sock.close()


def probe(address, port, timeout=DEFAULT_CONNECT_TIMEOUT, connect=None):
    """Classify one TCP connect to ``address:port``.

    States: ``open`` (connected), ``refused`` (RST: the path works, nothing
    listens yet), ``timeout``, ``unreachable`` (no route / host or network
    unreachable, ICMP), ``unresolved`` (name lookup failed) or ``error``.
    Only ``open`` and ``refused`` are reachable (:data:`REACHABLE_STATES`).

    :param connect: ``connect(address, port, timeout)``, raising like
        :func:`socket.create_connection`; default a real TCP connect.
    :returns: dict ``{"address", "port", "state", "reachable", "detail"}``.
    """
    connect = connect or _tcp_connect
    detail = ""
    try:
        connect(address, port, timeout)
        state = "open"
    except socket.timeout as exc:
        state, detail = "timeout", str(exc) or "timed out after %ss" % timeout
    except socket.gaierror as exc:
        state, detail = "unresolved", str(exc)
    except OSError as exc:
        detail = str(exc)
        code = exc.errno
        if isinstance(exc, ConnectionRefusedError) or code == errno.ECONNREFUSED:
            state = "refused"
        elif code == errno.ETIMEDOUT:
            state = "timeout"
        elif code in (errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN, errno.ENETDOWN):
            state = "unreachable"
        else:
            state = "error"
    return {"address": address, "port": port, "state": state, "reachable": state in REACHABLE_STATES,
            "detail": detail}


def probe_all(peers, timeout=DEFAULT_CONNECT_TIMEOUT, connect=None, workers=32):
    """:func:`probe` every ``{"address", "port"}`` of ``peers`` in parallel threads, in order."""
    if not peers:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(peers)))) as pool:
        return list(pool.map(lambda p: probe(p["address"], int(p["port"]), timeout, connect), peers))


def image_data_root(runtime, daemon_json=None, storage_conf=None):
    """The container engine's data root: docker's ``data-root`` in
    /etc/docker/daemon.json, podman's ``graphroot`` in
    /etc/containers/storage.conf, else the engine's default
    (:data:`IMAGE_DATA_ROOTS`); None for a runtime without images."""
    if runtime == "docker" and daemon_json:
        try:
            root = json.loads(daemon_json).get("data-root")
            if root:
                return root
        except (ValueError, AttributeError):
            pass
    if runtime == "podman" and storage_conf:
        section = None
        for line in storage_conf.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("["):
                section = line.strip("[] ")
                continue
            key, sep, value = line.partition("=")
            if sep and section == "storage" and key.strip() == "graphroot" and value.strip().strip('"\''):
                return value.strip().strip('"\'')
    return IMAGE_DATA_ROOTS.get(runtime)


# The engines' own listing of their image stores, one call each (no private file: docker 29's containerd store
# writes no image/overlay2/repositories.json, docs.docker.com/engine/storage/containerd). `--all`: docker CLI 29
# hides images without a tag unless asked (docker/cli e9a941001c, cli/command/image/list.go), and the hosts pull
# NAME@sha256:... only; `--digests`: without it docker leaves the Digest of such a row empty
# (cli/command/formatter/image.go imageFormatTaggedAndDigest); `{{json .}}` rather than `json`, which docker's
# CLI takes only from 23.0 (docker/cli eb27a94c3f; Debian 12's docker.io is 20.10). podman prints one JSON array
# (cmd/podman/images/list.go writeJSON).
IMAGE_LIST_ARGV = {
    "podman": ("image", "ls", "--all", "--format", "json"),
    "docker": ("image", "ls", "--all", "--digests", "--format", "{{json .}}"),
}
IMAGE_LIST_TIMEOUT = 60  # seconds; a hung daemon answers nothing, and the deploy then pulls (a no-op if present)
# The recorded refs hold sha256 digests (plugin_utils/_images.py); docker's "<none>" and "" never match.
_STORED_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def _digest_of(ref):
    """The digest of ``NAME@sha256:...`` or of a bare ``sha256:...``; None for anything else."""
    digest = str(ref or "").rsplit("@", 1)[-1]
    return digest if _STORED_DIGEST.match(digest) else None


def parse_podman_image_list(text):
    """The manifest digests of ``podman image ls --all --format json``.

    podman prints a JSON array of ``ImageSummary`` (pkg/domain/entities/types/images.go, podman 4.3 to 5.8):
    ``Digest``, the digest the image was pulled by (containers-storage ``Digest``: an index's when pulled by
    it), and ``RepoDigests``, ``NAME@DIGEST`` for each of its names and each of its digests (libimage
    ``RepoDigests``: an index pulled by digest lists the index's and its platform manifest's).

    :returns: set of ``sha256:...``.
    :raises ValueError: the output is not such an array.
    """
    images = json.loads(text or "[]")
    if not isinstance(images, list) or not all(isinstance(i, dict) for i in images):
        raise ValueError("not a JSON array of images")
    out = set()
    for image in images:
        for ref in [image.get("Digest")] + list(image.get("RepoDigests") or []):
            if _digest_of(ref):
                out.add(_digest_of(ref))
    return out


def parse_docker_image_list(text):
    """The manifest digests of ``docker image ls --all --digests --format '{{json .}}'``.

    docker prints one JSON object a line, one per repository, tag and digest of each image
    (cli/command/formatter/image.go); ``Digest`` is the digest of a ``RepoDigests`` entry, ``<none>`` or empty
    where the image has none. The classic store's ``RepoDigests`` are the ``NAME@DIGEST`` references pulls left
    (moby daemon/images/image_list.go); the containerd store's (docker 29's default for new installs) the
    image's own target, an index's digest when pulled by it (moby daemon/containerd/image_list.go).

    :returns: set of ``sha256:...``.
    :raises ValueError: a line is not a JSON object.
    """
    out = set()
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row, dict):
            raise ValueError("not a JSON object a line")
        if _digest_of(row.get("Digest")):
            out.add(_digest_of(row.get("Digest")))
    return out


_IMAGE_LIST_PARSERS = {"podman": parse_podman_image_list, "docker": parse_docker_image_list}


def stored_image_digests(runtime, get_bin_path, run_command, timeout=IMAGE_LIST_TIMEOUT):
    """The manifest digests of the images in the container engine's store, as the engine's CLI lists them
    (:data:`IMAGE_LIST_ARGV`).

    :param get_bin_path: ``AnsibleModule.get_bin_path``.
    :param run_command: ``AnsibleModule.run_command``.
    :returns: ``(digests, problem)``: a set of ``sha256:...`` and None; or an empty set and why nothing could be
        read (no CLI, the CLI failed or timed out, output it did not parse) - nothing is known to be in place.
    """
    if runtime not in IMAGE_LIST_ARGV:
        return set(), None
    binary = get_bin_path(runtime)
    if not binary:
        return set(), "%s is not installed (no %s on PATH)" % (runtime, runtime)
    limiter = get_bin_path("timeout")
    argv = ([limiter, str(timeout)] if limiter else []) + [binary] + list(IMAGE_LIST_ARGV[runtime])
    shown = " ".join([runtime] + list(IMAGE_LIST_ARGV[runtime]))
    try:
        rc, out, err = run_command(argv)
    except OSError as exc:
        return set(), "`%s` did not run: %s" % (shown, exc)
    if limiter and rc == 124:  # timeout(1): the command timed out
        return set(), "`%s` gave no answer within %d s" % (shown, timeout)
    if rc != 0:
        lines = [line for line in (err or out or "").splitlines() if line.strip()]
        return set(), "`%s` failed (rc %s): %s" % (shown, rc, lines[-1].strip() if lines else "no output")
    try:
        return _IMAGE_LIST_PARSERS[runtime](out), None
    except (ValueError, TypeError, AttributeError) as exc:
        return set(), "`%s` printed what is not its JSON listing (%s)" % (shown, exc)


def images_missing(recorded, in_place, needed):
    """The images this host runs (``needed``, ``needs.images``) whose recorded digest its store lacks; sorted.

    The record names every image of the fleet's run (one resolution for all hosts); an image that only other hosts
    run is never in this host's store and must not make its runtime steps run again on every deploy."""
    return sorted((set(recorded or {}) & set(needed or [])) - set(in_place or []))


def images_in_place(recorded, stored):
    """The card images whose recorded digest (``{image: NAME@sha256:...}``, the host's record) the engine's
    store holds (``stored``, the digests of :func:`stored_image_digests`); sorted."""
    return sorted(image for image, ref in (recorded or {}).items()
                  if "@" in str(ref) and str(ref).rsplit("@", 1)[1] in stored)


def failed(results):
    """Return the results whose severity is ``error``."""
    return [r for r in results if r["severity"] == "error"]


def parse_proc_net_tcp(text):
    """Listening TCP sockets from ``/proc/net/tcp`` or ``/proc/net/tcp6``.

    Columns (proc(5)): ``sl local_address rem_address st ... inode``; ``st``
    ``0A`` is LISTEN; the port is the hex part after ``:`` in local_address.
    :returns: dict port (int) -> socket inode (str).
    """
    out = {}
    for line in text.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 10 or cols[3] != "0A":
            continue
        try:
            port = int(cols[1].rsplit(":", 1)[1], 16)
        except (IndexError, ValueError):
            continue
        out.setdefault(port, cols[9])
    return out


def unit_from_cgroup(text):
    """The systemd service owning a process, from ``/proc/PID/cgroup``.

    :returns: e.g. ``launchcard-x.service``, or None outside a service.
    """
    for line in text.splitlines():
        path = line.rsplit(":", 1)[-1]
        for part in reversed(path.split("/")):
            if part.endswith(".service"):
                return part
    return None


def container_from_cgroup(text):
    """The docker/podman container a process runs in, from ``/proc/PID/cgroup``.

    Docker's systemd cgroup driver puts it in ``docker-<id>.scope``, its
    cgroupfs driver in ``/docker/<id>``; podman in ``libpod-<id>.scope`` (or
    ``/libpod_parent/libpod-<id>``).

    :returns: the 64-hex container id, or None outside a container.
    """
    for line in text.splitlines():
        match = _CONTAINER_CGROUP.search(line.rsplit(":", 1)[-1])
        if match:
            return match.group(1)
    return None


def parse_os_release(text):
    """``ID`` and ``VERSION_ID`` from ``/etc/os-release`` (os-release(5))."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key in ("ID", "VERSION_ID"):
            out[key.lower()] = value.strip().strip('"').strip("'")
    return out


def report_rows(results_by_host):
    """Rows for the preflight table: host, check, result, need, found, message.

    :param results_by_host: dict host -> list of :func:`evaluate` results
        (None for a host that could not be checked).
    """
    rows = []
    for host in sorted(results_by_host):
        results = results_by_host[host]
        if results is None:
            rows.append([host, "-", "ERROR", "-", "-", "host could not be checked"])
            continue
        for r in results:
            rows.append([host, r["check"], {"ok": "ok", "warning": "WARN", "error": "FAIL"}[r["severity"]],
                         r["need"], r["found"], r["message"]])
    return rows


# --------------------------------------------------------------------------
# host facts read from /proc, /dev and the group database (roots injectable for tests)

PROC_ROOT = "/proc"
"""Where the kernel's process and socket tables are mounted; tests pass a fake tree."""

DEV_ROOT = "/dev"
"""Where the device nodes are (``/dev/davinciN`` on Ascend hosts)."""

CONTAINER_STATE_ROOT = "/"
"""Root under which docker (``var/lib/docker/containers``) and podman
(``var/lib/containers/storage``) keep their container state."""


def _read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError, UnicodeDecodeError):
        return None


def container_name(cid, root=None, read=None):
    """Name of a docker or podman (root) container from the engines' own state files.

    Sources: ``<root>/var/lib/docker/containers/<id>/config.v2.json`` (``Name``) and
    ``<root>/var/lib/containers/storage/overlay-containers/containers.json`` (``names``).
    :returns: the name, else the id's first 12 characters.
    """
    root = CONTAINER_STATE_ROOT if root is None else root
    read = read or _read_text
    try:
        doc = json.loads(read(os.path.join(root, "var/lib/docker/containers/%s/config.v2.json" % cid)) or "{}")
        if doc.get("Name"):
            return doc["Name"].lstrip("/")
        listing = read(os.path.join(root, "var/lib/containers/storage/overlay-containers/containers.json"))
        for entry in json.loads(listing or "[]"):
            if entry.get("id") == cid and entry.get("names"):
                return entry["names"][0]
    except (ValueError, AttributeError, TypeError):
        pass
    return cid[:12]


def listening_sockets(proc=None, read=None, listdir=None, readlink=None, container_root=None):
    """Who holds each listening TCP port: the process and its systemd unit or container.

    Sources: ``<proc>/net/tcp`` and ``<proc>/net/tcp6`` (port -> socket inode,
    :func:`parse_proc_net_tcp`), each ``<proc>/<pid>/fd/*`` link (``socket:[inode]``)
    to find the process holding the inode, its ``<proc>/<pid>/comm`` (the process
    name, at most 15 characters) and its ``<proc>/<pid>/cgroup`` (the systemd service,
    :func:`unit_from_cgroup`, or the docker/podman container, :func:`container_from_cgroup`
    named by :func:`container_name`). Processes whose fds cannot be read (another
    user's, without root) leave their ports with ``pid`` None.

    :param proc: the proc root (default :data:`PROC_ROOT`); the other callables
        default to the ``os`` functions and are there for tests.
    :returns: ``{port (int): {"unit": str | None ("ssh.service", "container
        jupyter"), "pid": int | None, "comm": str | None}}``; the lowest PID wins when
        several processes share a socket (a forking server).
    """
    proc = PROC_ROOT if proc is None else proc
    read = read or _read_text
    listdir = listdir or os.listdir
    readlink = readlink or os.readlink
    inodes = {}
    for table in ("net/tcp", "net/tcp6"):
        for port, inode in parse_proc_net_tcp(read(os.path.join(proc, table)) or "").items():
            inodes.setdefault(inode, port)
    owners = dict((port, {"unit": None, "pid": None, "comm": None}) for port in inodes.values())
    try:
        pids = sorted((name for name in listdir(proc) if name.isdigit()), key=int)
    except OSError:
        pids = []
    for pid in pids:
        fd_dir = os.path.join(proc, pid, "fd")
        try:
            links = []
            for fd in listdir(fd_dir):
                try:
                    links.append(readlink(os.path.join(fd_dir, fd)))
                except OSError:
                    continue
        except OSError:
            continue
        hits = [inodes[link[8:-1]] for link in links if link.startswith("socket:[") and link[8:-1] in inodes]
        if not hits:
            continue
        cgroup = read(os.path.join(proc, pid, "cgroup")) or ""
        unit = unit_from_cgroup(cgroup)
        cid = None if unit else container_from_cgroup(cgroup)
        if cid:
            unit = CONTAINER_OWNER + container_name(cid, container_root)
        comm = (read(os.path.join(proc, pid, "comm")) or "").strip() or None
        for port in hits:
            if owners[port]["pid"] is None:
                owners[port] = {"unit": unit, "pid": int(pid), "comm": comm}
    return owners


def runtime_devices(dev=None, getgrnam=None, listdir=None):
    """What container device flags need from the host.

    Sources: the group database (``getent group render``: ``grp.getgrnam``, so NSS
    sources such as LDAP count) for the ``render`` group that owns ``/dev/dri/renderD*``
    on AMD hosts, and the ``davinciN`` nodes in ``<dev>`` (Ascend NPUs; ``davinci_manager``
    is not one).

    :returns: ``{"render_gid": int | None (no such group), "davinci": [int, ...]}``
        (sorted N of each ``/dev/davinciN``; empty when none).
    """
    dev = DEV_ROOT if dev is None else dev
    listdir = listdir or os.listdir
    getgrnam = getgrnam or grp.getgrnam
    try:
        render_gid = int(getgrnam("render").gr_gid)
    except (KeyError, AttributeError, TypeError, ValueError):
        render_gid = None
    try:
        names = listdir(dev)
    except OSError:
        names = []
    davinci = sorted(int(match.group(1)) for match in (re.match(r"^davinci(\d+)$", n) for n in names) if match)
    return {"render_gid": render_gid, "davinci": davinci}


SYS_ROOT = "/sys"
"""Where sysfs is mounted; tests pass a fake tree."""


def rdma_and_selinux(sys_root=None, dev=None, listdir=None, read=None):
    """What the units' RDMA and SELinux options need from the host, read in the preflight call.

    - ``rdma``: the RDMA devices (``/sys/class/infiniband/<device>``, kernel Documentation/ABI/stable/
      sysfs-class-infiniband) when the verbs device directory ``/dev/infiniband`` exists too (what the containers
      are given), else an empty list;
    - ``selinux``: ``enforcing`` or ``permissive`` (the selinuxfs ``enforce`` file, ``1``/``0``: the kernel's
      security/selinux/selinuxfs.c; libselinux's is_selinux_enabled() tests that mount), else ``disabled``.
    """
    sys_root = SYS_ROOT if sys_root is None else sys_root
    dev = DEV_ROOT if dev is None else dev
    listdir = listdir or os.listdir
    read = read or _read_text
    try:
        names = sorted(listdir(os.path.join(sys_root, "class", "infiniband")))
        listdir(os.path.join(dev, "infiniband"))
    except OSError:
        names = []
    enforce = read(os.path.join(sys_root, "fs", "selinux", "enforce"))
    selinux = {"1": "enforcing", "0": "permissive"}.get((enforce or "").strip(), "disabled")
    return {"rdma": names, "selinux": selinux}


def parse_cdi_spec(path, text):
    """What the ``container_cdi_spec`` check reads of one CDI spec (YAML or JSON, as
    ``nvidia-ctk cdi generate`` writes it): ``{"path", "kind", "driver_versions"}``.

    ``kind`` is the spec's device kind (``nvidia.com/gpu``), None when there is none; ``driver_versions``
    the sorted versions of the driver libraries its mounts name (``libcuda.so.580.95.05``,
    ``libnvidia-ml.so.580.95.05``), empty when it names none. Read as text, so no YAML parser is needed
    on the host.
    """
    kind = None
    if path.endswith(".json"):
        try:
            kind = (json.loads(text) or {}).get("kind")
        except (ValueError, AttributeError):
            kind = None
    else:
        match = _CDI_KIND.search(text)
        kind = match.group(1) if match else None
    return {"path": path, "kind": kind, "driver_versions": sorted(set(_CDI_DRIVER.findall(text)))}


def parse_docker_daemon_json(text, path=DOCKER_DAEMON_JSON):
    """The runtimes and CDI switch of docker's ``daemon.json`` (dockerd(8)): ``{"path", "runtimes": [names],
    "cdi": bool, "error": str or None}``; no file: no runtime, CDI off."""
    out = {"path": path, "runtimes": [], "cdi": False, "error": None}
    if not (text or "").strip():
        return out
    try:
        doc = json.loads(text)
        out["runtimes"] = sorted(doc.get("runtimes") or {})
        out["cdi"] = bool((doc.get("features") or {}).get("cdi"))
    except (ValueError, AttributeError, TypeError) as exc:
        out["error"] = "%s does not parse: %s" % (path, exc)
    return out


def parse_docker_info(text):
    """The runtimes and CDI state of the running docker daemon, from ``docker info --format '{{json .}}'``
    (``Runtimes``: name -> runtime; ``CDISpecDirs``: listed when CDI is on): ``{"runtimes", "cdi"}``, or
    None when the output is not that (no daemon answering)."""
    try:
        doc = json.loads(text or "")
    except ValueError:
        return None
    if not isinstance(doc, dict) or "Runtimes" not in doc:
        return None
    return {"runtimes": sorted(doc.get("Runtimes") or {}), "cdi": bool(doc.get("CDISpecDirs"))}


def container_access(runtime, vendor, dev=None, read=None, listdir=None, stat_path=None, docker_info=None,
                     cdi_dirs=None, daemon_json=None):
    """What the ``container_*`` checks need to tell whether containers can reach the accelerators.

    Read only for what applies (``runtime`` docker/podman, ``vendor`` nvidia/amd/ascend): docker + NVIDIA
    the daemon's configuration (``daemon_json``, default :data:`DOCKER_DAEMON_JSON`;
    :func:`parse_docker_daemon_json`) and, when ``docker_info`` returns text, the running daemon's view
    (:func:`parse_docker_info`); podman + NVIDIA every CDI spec (``*.yaml``, ``*.yml``, ``*.json``) in
    ``cdi_dirs`` (default :data:`CDI_SPEC_DIRS`; :func:`parse_cdi_spec`); AMD ``/dev/kfd``, ``/dev/dri``
    and the group id of each ``/dev/dri/renderD*``; Ascend the control devices
    (:data:`ASCEND_CONTROL_DEVICES`).

    :param docker_info: callable returning ``docker info --format '{{json .}}'`` output, or None.
    :returns: ``{"docker": {"daemon_json", "info"} | None, "cdi_specs": [...], "devices": {path: bool,
        "render_nodes": {path: gid}}}``.
    """
    dev = DEV_ROOT if dev is None else dev
    cdi_dirs = CDI_SPEC_DIRS if cdi_dirs is None else cdi_dirs
    daemon_json = DOCKER_DAEMON_JSON if daemon_json is None else daemon_json
    read = read or _read_text
    listdir = listdir or os.listdir
    stat_path = stat_path or os.stat
    out = {"docker": None, "cdi_specs": [], "devices": {}}
    if runtime not in IMAGE_DATA_ROOTS or vendor not in ("nvidia", "amd", "ascend"):
        return out

    def exists(path):
        try:
            stat_path(path)
            return True
        except OSError:
            return False

    def in_dev(path):
        return os.path.join(dev, path[len("/dev/"):])

    if vendor == "nvidia" and runtime == "docker":
        out["docker"] = {"daemon_json": parse_docker_daemon_json(read(daemon_json), daemon_json),
                         "info": parse_docker_info(docker_info()) if docker_info else None}
    elif vendor == "nvidia":
        for directory in cdi_dirs:
            try:
                names = sorted(listdir(directory))
            except OSError:
                continue
            for name in names:
                if name.endswith((".yaml", ".yml", ".json")):
                    text = read(os.path.join(directory, name))
                    if text is not None:
                        out["cdi_specs"].append(parse_cdi_spec(os.path.join(directory, name), text))
    elif vendor == "amd":
        for path in ("/dev/kfd", "/dev/dri"):
            out["devices"][path] = exists(in_dev(path))
        nodes = {}
        try:
            names = listdir(in_dev("/dev/dri"))
        except OSError:
            names = []
        for name in sorted(names):
            if name.startswith("renderD"):
                try:
                    nodes["/dev/dri/" + name] = stat_path(os.path.join(in_dev("/dev/dri"), name)).st_gid
                except OSError:
                    continue
        out["devices"]["render_nodes"] = nodes
    else:
        for path in ASCEND_CONTROL_DEVICES:
            out["devices"][path] = exists(in_dev(path))
    return out


def podman_version(get_bin_path, run_command):
    """The installed podman's version (``5.4.2``), from ``podman --version`` (``podman version 5.4.2``).

    The units role writes Quadlet ``.container`` files where it is 4.4 or newer (podman-systemd.unit(5)).

    :param get_bin_path: ``AnsibleModule.get_bin_path``.
    :param run_command: ``AnsibleModule.run_command``.
    :returns: the version (str), or None when podman is not installed or does not say.
    """
    binary = get_bin_path("podman")
    if not binary:
        return None
    rc, out, dummy = run_command([binary, "--version"])
    match = re.search(r"(\d+\.\d+(?:\.\d+)?)", out or "") if rc == 0 else None
    return match.group(1) if match else None


def stack_vendor(accelerators):
    """Whose driver stack the host needs: the vendor whose tools answered, else the vendor
    whose accelerators the PCI bus shows, else ``"none"``.

    :param accelerators: the ``accelerator_facts`` summary.
    :returns: ``"nvidia"``, ``"amd"``, ``"ascend"`` or ``"none"``.
    """
    acc = accelerators or {}
    vendor = acc.get("vendor") or "none"
    if vendor != "none":
        return vendor
    return (acc.get("pci") or {}).get("vendor") or "none"


def inspect_path(path, stat_path=None, getpwuid=None, getgrgid=None, opener=open):
    """What a setup step needs to know of ``path`` to tell that it has nothing to do, read only.

    The deploy's setup steps (the engines' user and its weights directory, the
    units' readiness helper) are skipped on a host whose preflight read shows
    them in place; their own ``ansible.builtin`` tasks make any change.

    :param path: absolute path; a symbolic link is followed (as
        ``ansible.builtin.file`` and ``ansible.builtin.copy`` do with their
        ``path``/``dest``).
    :returns: ``{"exists": bool, "type": "file" | "directory" | "other" | None,
        "owner": str | None, "group": str | None, "mode": "0755" | None,
        "checksum": str | None}``: ``owner`` and ``group`` are names from the
        host's user and group databases (None when the id has no name),
        ``mode`` the permission bits as four octal digits, ``checksum`` the
        SHA-1 (hex) of a regular file's content, as ``ansible.builtin.stat``
        and ``copy`` compute it; everything None when the path is absent or
        unreadable.
    """
    stat_path = stat_path or os.stat
    getpwuid = getpwuid or pwd.getpwuid
    getgrgid = getgrgid or grp.getgrgid
    out = {"exists": False, "type": None, "owner": None, "group": None, "mode": None, "checksum": None}
    try:
        st = stat_path(path)
    except OSError:
        return out
    out["exists"] = True
    out["type"] = ("directory" if stat_mod.S_ISDIR(st.st_mode)
                   else "file" if stat_mod.S_ISREG(st.st_mode) else "other")
    out["mode"] = "%04o" % stat_mod.S_IMODE(st.st_mode)
    try:
        out["owner"] = getpwuid(st.st_uid).pw_name
    except KeyError:
        pass
    try:
        out["group"] = getgrgid(st.st_gid).gr_name
    except KeyError:
        pass
    if out["type"] == "file":
        digest = hashlib.sha1()
        try:
            with opener(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 16), b""):
                    digest.update(chunk)
            out["checksum"] = digest.hexdigest()
        except (IOError, OSError):
            pass
    return out


def user_exists(name, getpwnam=None):
    """Whether the host's user database (NSS, as ``getent passwd``) knows the user ``name``."""
    try:
        (getpwnam or pwd.getpwnam)(name)
    except KeyError:
        return False
    return True


def weights_staged(stamp_text, present_bytes):
    """Whether a revision's completion stamp still matches what its snapshot holds.

    The weights role writes the stamp (the revision's size in bytes, as
    ``hf_snapshot`` listed it, in decimal) once ``hf_snapshot`` found the
    revision complete. The snapshot is taken as still complete when the stamp
    is there and the bytes now under the snapshot (``present_bytes``, every
    file's size through its link) are exactly that many: a file removed or
    truncated since changes the sum, and then the role checks against the Hub
    again.

    :param stamp_text: the stamp's content, or None when there is no stamp.
    :returns: bool.
    """
    if stamp_text is None:
        return False
    try:
        recorded = int(stamp_text.strip())
    except ValueError:
        return False
    return recorded > 0 and recorded == present_bytes


def accelerator_count(result):
    """Accelerators one host's preflight result found: the devices its vendor tool lists, or on a
    bare host (no driver yet) the PCI bus's count; None when the host was not checked.

    :param result: the ``preflight`` module's result for the host (its ``facts.accelerators``).
    """
    facts = (result or {}).get("facts")
    if not isinstance(facts, dict):
        return None
    acc = facts.get("accelerators") or {}
    devices = acc.get("devices") or []
    return len(devices) if devices else int((acc.get("pci") or {}).get("count") or 0)


def fleet_gpu_shortfalls(plan, cards, results):
    """Cards whose engine hosts together hold fewer accelerators than the card's ``hardware.min_gpus``.

    ``min_gpus`` is the fewest accelerators one deployment of the model needs, across nodes; the
    per-host ``gpu_count`` check only covers the recipes' own TP sizes. When every engine host of a
    card together has fewer, no deployment can meet it. A card is not judged when a host of it has
    no result (outside ``--limit``, unreachable: the failure budget covers those).

    :param plan: the plan (``launchcard_plan``: ``hosts`` -> ``card``, ``gpus_needed``).
    :param cards: card source -> card model (``launchcard_cards``: ``hardware.min_gpus``).
    :param results: host -> its ``preflight`` result (missing or None: not checked).
    :returns: list of messages, one per short card, naming ``hardware.min_gpus`` and each host's count.
    """
    by_card = {}
    for host, hp in sorted(((plan or {}).get("hosts") or {}).items()):
        if hp.get("gpus_needed"):
            by_card.setdefault(hp.get("card"), []).append(host)
    out = []
    for card, hosts in sorted(by_card.items(), key=lambda kv: str(kv[0])):
        want = (((cards or {}).get(card) or {}).get("hardware") or {}).get("min_gpus")
        if not want:
            continue
        counts = [(h, accelerator_count((results or {}).get(h))) for h in hosts]
        if any(n is None for dummy, n in counts):
            continue
        total = sum(n for dummy, n in counts)
        if total < want:
            out.append("hardware.min_gpus of %s: one deployment needs at least %d accelerators, but the %d "
                       "host(s) that serve it have %d together (%s)" % (
                           card, want, len(hosts), total, ", ".join("%s %d" % c for c in counts)))
    return out
