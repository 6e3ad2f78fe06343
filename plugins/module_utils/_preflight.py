# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight: what a host needs for its share of the plan, and whether it has it.

Pure Python, no Ansible import. :func:`host_needs` runs on the controller
(from the card model and the plan); :func:`evaluate` runs on the host inside
the ``preflight`` module, over facts that module gathered. Every result
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
import json
import re
import socket
from concurrent.futures import ThreadPoolExecutor

GIB = 1 << 30
MIB = 1 << 20
# Memory beyond the weights that an engine needs per GPU (activations, CUDA
# graphs, KV cache floor). A deliberately small floor: engines fill the rest
# with KV cache (--gpu-memory-utilization / --mem-fraction-static).
DEFAULT_HEADROOM_MIB = 4096
SUPPORTED_OS = {"debian": ("12",), "ubuntu": ("22.04", "24.04"), "rhel": ("9",), "rocky": ("9",),
                "almalinux": ("9",)}
CHECKS = ("os", "disk", "gpu_count", "gpu_model", "memory_fit", "driver", "fabric", "ports",
          "peers", "shm", "image_disk")
# /dev/shm floor where the runtime does not share the host's IPC namespace. NCCL (TP/PP > 1) keeps
# its intra-node buffers in /dev/shm; Docker's 64 MB default breaks it (vllm issue 1710). 1 GiB is a
# floor, not a sizing: the engines' own docs run containers with --ipc=host or --shm-size 16g+.
DEFAULT_SHM_MIN_BYTES = 1 << 30
# Disk allowance per distinct container image on a host: an estimate (vLLM / SGLang CUDA images
# are 10-25 GB compressed+unpacked), not a measurement.
DEFAULT_IMAGE_ALLOWANCE_BYTES = 30 << 30
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
        r = recipes.get(inst["recipe"]) or {}
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


def host_needs(card, host_plan, plan=None):
    """Compute what one host needs, from the card model and its plan entry.

    :returns: dict with ``disk_bytes`` (int or None: the card's
        ``min_disk_gib`` in bytes; None on a host that runs only routers,
        which load no weights), ``gpus`` (GPUs the placed instances
        need), ``validated_models`` (lower-case ids the placed recipes are
        validated on; empty: none listed), ``weights_per_gpu_mib`` (largest
        per-GPU share of the resident checkpoint over the placed instances:
        resident GiB / (TP x PP), halved when the recipe quantizes a non-fp8
        checkpoint to fp8; None when unknown) and ``ports`` (list of
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
        ``plan``).
    :param plan: the whole plan (``launchcard_plan``), to find the peers;
        optional for backward compatibility.
    """
    recipes = {r["name"]: r for r in card["recipes"]}
    validated = set()
    per_gpu = None
    ports = []
    for inst in host_plan.get("instances", []):
        r = recipes[inst["recipe"]]
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
        "ports": ports,
        "images": sorted({i["image"] for i in host_plan.get("instances", []) if i.get("image")}),
        "peers": _peers(card, host_plan, plan) if plan else [],
    }


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


def evaluate(facts, needs, options=None):
    """Run every enabled check.

    :param facts: gathered on the host: ``os`` (``{"id", "version_id"}`` from
        /etc/os-release), ``disk`` (``{"path", "free_bytes",
        "present_bytes"}``: statvfs of the weights filesystem and bytes of
        this revision already staged), ``accelerators`` (the
        ``accelerator_facts`` summary), ``listening`` (dict port -> owning
        unit name, ``container <name>`` for a docker/podman container,
        or None, from /proc/net/tcp{,6} and the socket's cgroup); optional
        ``peers`` (:func:`probe_all` output), ``shm`` (``{"path",
        "size_bytes"}``, statvfs of /dev/shm; None when absent),
        ``image_disk`` (``{"path", "data_root", "free_bytes"}``: statvfs of
        the nearest existing ancestor of the container engine's data root).
    :param needs: :func:`host_needs` output.
    :param options: ``checks`` (dict check -> bool, default all on),
        ``allow_unvalidated_hardware`` (bool: warn instead of fail),
        ``headroom_mib`` (int), ``host_ipc`` (bool, default True: the
        runtime shares the host's IPC namespace, so /dev/shm is the host's
        and the ``shm`` check does not apply), ``shm_min_bytes`` (int),
        ``runtime`` (``docker``, ``podman`` or ``native``; ``image_disk``
        applies to docker/podman only), ``image_allowance_bytes`` (int per
        distinct image), ``install_driver`` (bool: the deploy installs the
        accelerator stack after preflight, so a host whose accelerators show
        only on the PCI bus (``accelerators.pci``) passes ``gpu_count`` on
        that count, with a ``driver`` warning; model and memory are checked
        on the next run).
    :returns: list of result dicts ``{check, ok, need, found, message,
        severity}`` where severity is ``ok``, ``warning`` or ``error``.
    """
    options = options or {}
    enabled = dict.fromkeys(CHECKS, True)
    enabled.update(options.get("checks") or {})
    out = []
    acc = facts.get("accelerators") or {}
    devices = acc.get("devices") or []
    if enabled["os"]:
        os_id = (facts.get("os") or {}).get("id")
        ver = (facts.get("os") or {}).get("version_id")
        ok = ver in SUPPORTED_OS.get(os_id, ()) or any(
            ver and ver.split(".")[0] == v for v in SUPPORTED_OS.get(os_id, ()))
        out.append(_result("os", ok, "Debian 12, Ubuntu 22.04/24.04, RHEL/Rocky/Alma 9",
                           "%s %s" % (os_id, ver), "supported" if ok else "OS not supported by the roles"))
    if enabled["disk"] and needs.get("disk_bytes") is not None:
        disk = facts.get("disk") or {}
        free = disk.get("free_bytes")
        want = max(0, needs["disk_bytes"] - (disk.get("present_bytes") or 0))
        ok = free is not None and free >= want
        out.append(_result("disk", ok, "%s free on %s" % (_gib(want), disk.get("path")),
                           "%s free" % (_gib(free) if free is not None else "unknown"),
                           "enough space for the weights" if ok else "not enough free space for the weights"))
    pci = acc.get("pci") or {}
    bare = bare_host(acc, options.get("install_driver"))
    if enabled["gpu_count"] and needs.get("gpus"):
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
        out.append(_result("gpu_count", ok, "%d GPUs" % needs["gpus"], found, msg))
    if enabled["gpu_model"] and needs.get("gpus") and needs.get("validated_models") and devices:
        models = sorted({d.get("model_id") or "unknown" for d in devices})
        bad = [m for m in models if not _validated(m, needs["validated_models"])]
        sev = "warning" if options.get("allow_unvalidated_hardware") else "error"
        msg = "validated" if not bad else "not validated for these recipes: %s" % ", ".join(bad)
        if bad and sev == "warning":
            msg += " (allowed by allow_unvalidated_hardware)"
        out.append(_result("gpu_model", not bad, "one of %s" % ", ".join(needs["validated_models"]),
                           ", ".join(models), msg, sev))
    if enabled["memory_fit"] and needs.get("weights_per_gpu_mib") and devices:
        head = int(options.get("headroom_mib", DEFAULT_HEADROOM_MIB))
        want = needs["weights_per_gpu_mib"] + head
        have = min((d.get("memory_mib") or 0) for d in devices)
        ok = have >= want
        out.append(_result("memory_fit", ok, "%d MiB per GPU (weights %d + headroom %d)" % (
            want, needs["weights_per_gpu_mib"], head), "%d MiB" % have,
            "the weights fit" if ok else "the weights do not fit in device memory"))
    drv = acc.get("driver") or {}
    if enabled["driver"] and needs.get("gpus"):
        if drv.get("reboot_required"):
            out.append(_result("driver", False, "loaded driver = installed driver",
                               "loaded %s, installed %s" % (drv.get("loaded_version"), drv.get("installed_version")),
                               "reboot needed: the loaded kernel module differs from the installed driver"))
        elif devices:
            out.append(_result("driver", True, "a working driver", drv.get("installed_version") or "present",
                               "driver loaded"))
        elif bare:
            out.append(_result("driver", False, "a working driver", "none",
                               "not installed yet: the %s stack is installed next, then model, memory and "
                               "driver are checked again" % pci.get("vendor"), "warning"))
    if enabled["fabric"] and needs.get("gpus") and drv.get("fabric_manager_required"):
        counts = {}
        for d in devices:
            state = str(d.get("fabric_state") or "unknown")
            counts[state] = counts.get(state, 0) + 1
        ok = {s.lower() for s in counts} == {"completed"}
        found = "%s of %d GPUs" % (", ".join("%s on %d" % (s, n) for s, n in sorted(counts.items())), len(devices))
        out.append(_result("fabric", ok, "fabric state Completed on every GPU", found,
                           "fabric manager ready" if ok else "NVSwitch fabric not ready: start nvidia-fabricmanager "
                           "at exactly the driver's version (CUDA error 802 otherwise)"))
    if enabled["ports"] and needs.get("ports"):
        listening = facts.get("listening") or {}
        busy = []
        for p in needs["ports"]:
            port = p["port"]
            if port in listening and not any(_holds(listening[port], o)
                                             for o in [p["owner"]] + list(p.get("former_owners") or [])):
                busy.append("%d (held by %s)" % (port, listening[port] or "another process"))
        out.append(_result("ports", not busy, ", ".join(str(p["port"]) for p in needs["ports"]) + " free",
                           ", ".join(busy) or "all free or ours",
                           "ports free" if not busy else "ports in use by something else"))
    if enabled["peers"] and needs.get("peers"):
        out.append(_peers_result(needs["peers"], facts.get("peers")))
    if enabled["shm"] and needs.get("gpus") and not options.get("host_ipc", True):
        want = int(options.get("shm_min_bytes", DEFAULT_SHM_MIN_BYTES))
        shm = facts.get("shm") or {}
        size = shm.get("size_bytes")
        ok = size is not None and size >= want
        out.append(_result("shm", ok, "%s on /dev/shm (container without host IPC)" % _gib(want),
                           "%s on %s" % (_gib(size), shm.get("path")) if size is not None else "no /dev/shm",
                           "enough shared memory for NCCL" if ok else
                           "/dev/shm too small for NCCL with TP>1: run with --ipc host or a larger --shm-size"))
    if enabled["image_disk"] and needs.get("images") and options.get("runtime") in IMAGE_DATA_ROOTS:
        per = int(options.get("image_allowance_bytes", DEFAULT_IMAGE_ALLOWANCE_BYTES))
        want = per * len(needs["images"])
        img = facts.get("image_disk") or {}
        free = img.get("free_bytes")
        ok = free is not None and free >= want
        out.append(_result("image_disk", ok, "%s free on %s (%d image(s) x %s, an estimate)" % (
            _gib(want), img.get("path") or IMAGE_DATA_ROOTS[options["runtime"]], len(needs["images"]), _gib(per)),
            "%s free" % (_gib(free) if free is not None else "unknown"),
            "enough space for the images" if ok else "not enough free space for the container images"))
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
