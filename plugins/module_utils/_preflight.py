# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight: what a host needs for its share of the plan, whether it has it, and the report.

Pure Python, no Ansible import. :func:`host_needs` runs on the controller (from the card model and the plan);
:func:`evaluate` runs on the host inside the ``preflight`` module, over facts that module gathered
(``_preflight_reads.py``, ``_image_store.py``): it runs the checks of :data:`REGISTRY`, one function per check
(``check_<name>``: the accelerators and the host in ``_preflight_checks.py``, the container or native runtime in
``_preflight_runtime_checks.py``), each returning one result or ``None`` where it does not apply.
:func:`report_rows` and :func:`fleet_gpu_shortfalls` read the hosts' results back on the controller. Every result
names the check, what was needed and what was found, so one table can tell an operator why a host cannot serve
its recipes.
"""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.module_utils._preflight_checks import (
    GIB,
    MIB,
    _Host,
    check_cann_driver,
    check_disk,
    check_driver,
    check_driver_branch,
    check_fabric,
    check_gpu_count,
    check_gpu_model,
    check_memory_fit,
    check_os,
    check_peers,
    check_ports,
    check_rdma,
    check_rocm_release,
    check_shm,
)
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_gpu_checks import (
    check_gpu_health,
    check_gpu_in_use,
    check_memory_budget,
)
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_removal import check_removal, check_runtime_change
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_runtime_checks import (
    check_container_amd_devices,
    check_container_ascend_devices,
    check_container_cdi_spec,
    check_container_engine,
    check_container_nvidia_runtime,
    check_image_disk,
    check_image_vendor,
    check_native_install,
)


def _fp8(quant):
    return bool(quant) and "fp8" in str(quant).lower()


def _peer_index(plan):
    """The plan's instances another host may connect to, in one pass: ``(by_role, first_ranks)``, the rank-0
    instances with an address by role and the first ranks (``node_rank`` 0) with an address by (recipe, replica),
    each in the order of the sorted hosts."""
    by_role, first_ranks = {}, {}
    for dummy, hp in sorted((plan or {}).get("hosts", {}).items()):
        for inst in hp.get("instances", []):
            if not inst.get("address"):
                continue
            if inst.get("node_rank", 0) == 0:
                by_role.setdefault(inst.get("role"), []).append(inst)
            if inst.get("node_rank") == 0:
                first_ranks.setdefault((inst.get("recipe"), inst.get("replica")), []).append(inst)
    return by_role, first_ranks


def peer_table(cards, plan):
    """Every planned host's ``peers`` (:func:`host_needs`) from one index of the plan, for a task run once: each
    host's preflight call then reads its own entry instead of scanning the fleet (a router lists every worker
    anyway, but no host walks every other host's instances to find its own).

    :param cards: card name -> card (``launchcard_cards``); a host's card is its plan entry's ``card``.
    :returns: ``{host: [{"address", "port", "why"}]}``.
    """
    index = _peer_index(plan)
    return dict((host, _peers(cards[hp["card"]], hp, plan, index))
                for host, hp in ((plan or {}).get("hosts") or {}).items())


def peer_links(card, host_plan, plan, index=None):
    """Each connection an instance of this host opens to an instance on another host, as the plan places them:
    ``(inst, peer, key, what)``, ``key`` the peer's field that holds the port (``port``, ``bootstrap_port``,
    ``dist_init_port``), ``what`` its name in a report. The one rule of who reaches whom: :func:`_peers` (the ports
    preflight probes) and plugin_utils/_limit_peers.py (the consumers a ``--limit`` run would strand) read it.
    ``index``: :func:`_peer_index` of ``plan``, made once for the fleet by :func:`peer_table`."""
    recipes = {r["name"]: r for r in card["recipes"]}
    by_role, first_ranks = index or _peer_index(plan)

    def peers_of(inst, role):
        return [p for p in by_role.get(role, ()) if p.get("host") != inst.get("host")]

    for inst in host_plan.get("instances", []):
        r = dict(recipes.get(inst["recipe"]) or {}, **(inst.get("recipe_facts") or {}))
        if inst["role"] == "router":
            if r.get("pd_disaggregation"):
                for p in peers_of(inst, "prefill"):
                    yield inst, p, "port", "port"
                    yield inst, p, "bootstrap_port", "bootstrap port"
                for p in peers_of(inst, "decode"):
                    yield inst, p, "port", "port"
            elif r.get("worker_urls"):
                for p in peers_of(inst, "aggregated"):
                    yield inst, p, "port", "port"
        elif inst["role"] == "decode":
            for p in peers_of(inst, "prefill"):
                yield inst, p, "bootstrap_port", "bootstrap port"
        elif inst["role"] == "language" and r.get("encoder_urls"):
            for p in peers_of(inst, "encoder"):
                yield inst, p, "port", "port"
        if inst.get("node_rank"):
            # a multi-node rank > 0 connects to its rank 0's init port (--dist-init-addr / --master-port)
            for p in first_ranks.get((inst["recipe"], inst.get("replica")), ()):
                if p.get("host") != inst.get("host"):
                    yield inst, p, "dist_init_port", "init port"


def _peers(card, host_plan, plan, index=None):
    """Ports on other hosts that this host's instances must reach (see :func:`host_needs`); ``index``:
    :func:`_peer_index` of ``plan``, made once for the fleet by :func:`peer_table`."""
    out, seen = [], {}
    for inst, peer, key, what in peer_links(card, host_plan, plan, index):
        port = peer.get(key)
        if not port:
            continue
        why = "%s -> %s %s" % (inst["recipe"], peer["recipe"], what)
        k = (peer["address"], int(port))
        if k in seen:
            if why not in seen[k]["why"].split("; "):
                seen[k]["why"] += "; " + why
            continue
        seen[k] = {"address": peer["address"], "port": int(port), "why": why}
        out.append(seen[k])
    return out


# Instances that move data between hosts and want RDMA (#25 item 3): a PD prefill or decode (KV transfer over NIXL
# or Mooncake) and every rank of a multi-node group (NCCL). The units (plugin_utils/_units.py) and the rdma check
# (through ``needs.rdma``) both read this rule.
RDMA_ROLES = ("prefill", "decode")


def needs_rdma(inst):
    """Whether the plan makes an instance move data between hosts: a PD prefill or decode, or a multi-node rank."""
    return bool(inst.get("gpus")) and (inst.get("role") in RDMA_ROLES or int(inst.get("nnodes") or 1) > 1)


def disk_need(card):
    """Bytes the weights' filesystem must hold: the card's ``hardware.min_disk_gib``, but never less than its
    ``hf.weight_gib`` (the revision is staged whole); None where the card gives neither."""
    sizes = [b for b in (card["hardware"].get("min_disk_bytes"), card["model"].get("weight_bytes")) if b is not None]
    return max(sizes) if sizes else None


def host_needs(card, host_plan, plan=None, peers=None):
    """Compute what one host needs, from the card model and its plan entry.

    :returns: dict with ``disk_bytes`` (int or None: :func:`disk_need`; None on a host that runs only routers,
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
        ``plan``), ``rdma`` (sorted units that move data between hosts: :func:`needs_rdma`), ``units`` and ``former_units``
        (sorted: the units of the instances placed here, and their names in earlier releases).
    :param plan: the whole plan (``launchcard_plan``), to find the peers;
        optional for backward compatibility.
    :param peers: this host's entry of :func:`peer_table`, made once for the fleet (``plan`` is then not read).
    """
    recipes = {r["name"]: r for r in card["recipes"]}
    validated = set()
    per_gpu = spread_per_gpu = None
    ports, by_unit, spread_by_unit = [], {}, {}
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
                by_unit[inst["unit"]] = int(mib)
                spread = shards * _expert_spread(r)
                if spread > shards:
                    spread_per_gpu = max(spread_per_gpu or 0, int(mib * shards / spread))
                    spread_by_unit[inst["unit"]] = int(mib * shards / spread)
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
        "disk_bytes": disk_need(card) if any(i["role"] != "router" for i in host_plan.get("instances", [])) else None,
        "gpus": sum(i["gpus"] for i in host_plan.get("instances", [])),
        "validated_models": sorted(validated),
        "weights_per_gpu_mib": per_gpu,
        "weights_per_gpu_spread_mib": spread_per_gpu,
        # each GPU instance's own share, for the memory_budget check's needs (plugin_utils/_memory_budget.py)
        "weights_by_unit": by_unit,
        "weights_spread_by_unit": spread_by_unit,
        "ports": ports,
        "images": sorted({i["image"] for i in host_plan.get("instances", []) if i.get("image")}),
        "peers": list(peers) if peers is not None else _peers(card, host_plan, plan) if plan else [],
        "rdma": sorted(i["unit"] for i in host_plan.get("instances", []) if needs_rdma(i)),
        # what the removal check keeps of the host's record (an instance's unit, or its name in an earlier release)
        "units": sorted(i["unit"] for i in host_plan.get("instances", [])),
        "former_units": sorted(u for i in host_plan.get("instances", []) for u in i.get("former_units") or ()),
    }


def _expert_spread(recipe):
    """How many more GPUs than TP x PP a vLLM recipe spreads MoE experts over: vllm/config/parallel.py
    (``data_parallel_size``: "MoE layers will be sharded according to the product of the tensor,
    prefill-context, and data parallel sizes"); 1 for SGLang, whose experts stay within the TP group."""
    if recipe.get("launcher") != "vllm":
        return 1
    return max(1, (recipe.get("prefill_context_parallel_size") or 1) * (recipe.get("data_parallel_size") or 1))


REGISTRY = (
    ("os", check_os),
    ("disk", check_disk),
    ("gpu_count", check_gpu_count),
    ("gpu_model", check_gpu_model),
    ("memory_fit", check_memory_fit),
    ("memory_budget", check_memory_budget),
    ("gpu_in_use", check_gpu_in_use),
    ("gpu_health", check_gpu_health),
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
    ("removal", check_removal),
    ("runtime_change", check_runtime_change),
)
"""Every check, in report order: ``(name, function)``. A function takes the host view
(facts, needs, options) and returns one result dict, or ``None`` where it does not apply."""

CHECKS = tuple(entry[0] for entry in REGISTRY)
# what runs on a host the plan gives nothing (``options.placed`` false): the checks of what it serves today
RECORD_CHECKS = ("removal",)


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
        ``/dev/davinciN`` the units pass; None: those found), ``allow_removal`` and ``allow_runtime_change`` (bool;
        None: the ``removal`` or ``runtime_change`` check does not apply), ``misspelt`` (the host's unknown variables
        near ``launchcard_runtime``), ``placed`` (False: the plan gives the host nothing, only :data:`RECORD_CHECKS`
        run). ``facts.container_access`` is
        :func:`container_access` output.
    :returns: list of result dicts ``{check, ok, need, found, message,
        severity}`` where severity is ``ok``, ``warning`` or ``error``.
    """
    options = options or {}
    enabled = dict.fromkeys(CHECKS, True)
    enabled.update(options.get("checks") or {})
    if options.get("placed") is False:
        enabled = dict((name, on and name in RECORD_CHECKS) for name, on in enabled.items())
    host = _Host(facts, needs, options)
    out = []
    for name, check in REGISTRY:
        if enabled.get(name, True):
            result = check(host)
            if result is not None:
                out.append(result)
    return out


def failed(results):
    """Return the results whose severity is ``error``."""
    return [r for r in results if r["severity"] == "error"]


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
