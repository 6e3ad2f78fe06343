# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's checks of what each placed GPU can give an engine (``_preflight.REGISTRY`` runs them):
``memory_budget`` (the engine's share of the GPU holds the weights, an activation floor and the KV cache of one
sequence), ``gpu_in_use`` (that share is free: no other process holds it) and ``gpu_health`` (nvidia-smi's
health facts, ``_accel_health``).

Pure Python, no Ansible import. The needs come from the controller (``plugin_utils/_memory_budget.py``:
``needs.memory``, one entry per GPU instance); the facts from the ``preflight`` module's ``accelerator_facts``
collection (``memory_reserved_mib``, ``memory_free_mib``, ``processes``, ``health_issues`` per device) and
``gpu_owners`` (``_preflight_reads.gpu_owners``). Memory in MiB.
"""

from __future__ import annotations

import math

from ansible_collections.launchcard.inference.plugins.module_utils._preflight_checks import _holds, _result

# A CUDA context's own memory, which the engine's share must also hold: on an H200 with driver 580 CUDA reports
# 143155 MiB total and 142629 MiB free once a context exists (tests/unit/fixtures/real-inputs/h200-vm/README.md).
CUDA_CONTEXT_MIB = 526
# The highest fraction this check suggests: the engines need some memory outside their share (NCCL, the allocator).
MAX_SUGGESTED_FRACTION = 0.95
TP_FLAGS = {"vllm": "--tensor-parallel-size", "sglang": "--tp-size"}


# python/sglang/srt/arg_groups/memory_hook.py (0.5.23) handle_gpu_memory_settings: by GPU memory (MiB, below the
# limit), the default chunked_prefill_size and decode CUDA graph max_bs at TP < 4 and at TP >= 4.
_SGLANG_TIERS = ((20 * 1024, 2048, 8, 8), (35 * 1024, 4096, 48, 160), (60 * 1024, 4096, 32, 160),
                 (90 * 1024, 8192, 256, 512), (160 * 1024, 8192, 256, 512), (None, 16384, 512, 512))


def _prefill_graph_sizes(max_bs):
    """arg_groups/cuda_graph_hook.py (0.5.23) generate_prefill_cuda_graph_batch_sizes: how many token counts the
    prefill CUDA graph captures up to ``max_bs``."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32)) +
             list(range(576, 1025, 64)) + list(range(1280, 4097, 256)) + list(range(4608, max_bs + 1, 512)))
    return len([s for s in sizes if s <= max_bs])


def sglang_default_fraction(gpu_mem_mib, args, cuda=True):
    """SGLang's ``--mem-fraction-static`` when the argv sets none: python/sglang/srt/arg_groups/memory_hook.py
    (0.5.23) ``handle_gpu_memory_settings`` and ``reserve_for_graph_mb``: ``reserved_mem`` = 512 + 1.5 x the
    activation tokens (``max(chunked_prefill_size, 2048)``; a PD decode server's running requests) + TP x PP / 8 x
    1024 + the CUDA graphs' reserve (decode: 2 x max_bs, DP attention's padding; prefill, on CUDA only: 8 per
    captured size, 1.5 GiB with MLA), at least 10 GiB above 60 GiB of GPU memory, + 2 GiB for DeepEP; the fraction
    is ``round((gpu_mem - reserved_mem) / gpu_mem, 3)``. Left out: its multimodal adjustment and the opt-in
    post-capture sizing (``SGLANG_ENABLE_POST_CAPTURE_KV_SIZING``, off by default).

    :param gpu_mem_mib: the GPU's memory (SGLang reads nvidia-smi's ``memory.total``, the smallest GPU's), MiB.
    :param args: ``needs.memory[].sglang`` (``plugin_utils/_memory_budget.py``): what the argv sets.
    :param cuda: an NVIDIA GPU (the prefill graph's default backend is breakable on CUDA, disabled elsewhere).
    """
    tp, pp = args.get("tp") or 1, args.get("pp") or 1
    for limit, chunk, small_bs, large_bs in _SGLANG_TIERS:
        if limit is None or gpu_mem_mib < limit:
            break
    chunk = args.get("chunked_prefill_size") or chunk
    decode_bs = args.get("decode_max_bs")
    if decode_bs is None:
        decode_bs = small_bs if tp < 4 else large_bs
        if args.get("max_running_requests") and decode_bs > args["max_running_requests"]:
            decode_bs = args["max_running_requests"]
    mode = args.get("disaggregation_mode") or "null"
    if mode == "decode":
        activation = max(args.get("max_running_requests") or decode_bs or 1, 2048)
    else:
        activation = max(chunk if chunk > 0 else args.get("max_prefill_tokens") or 16384, 2048)
    reserved = 512 + activation * 1.5 + tp * pp / 8.0 * 1024
    decode_graph = mode != "prefill" and not args.get("disable_decode_graph")
    if decode_graph:
        reserved += decode_bs * 2
    if args.get("dp_attention") and mode != "prefill":
        dp = args.get("attn_dp_size") or 1
        reserved += decode_bs * dp * 3 + (decode_bs * dp * 1.5 if decode_bs > 300 else 0)
    if mode != "decode" and cuda and not args.get("disable_prefill_graph"):
        if args.get("mla"):
            reserved += 1.5 * 1024
        else:
            reserved += _prefill_graph_sizes(args.get("prefill_max_bs") or chunk) * 8
    if gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if args.get("deepep") and decode_graph:
        reserved += 2 * 1024
    return round((gpu_mem_mib - reserved) / float(gpu_mem_mib), 3)


def _placed(devices, gpu_ids):
    """The devices an instance is placed on (all of them when the plan names none)."""
    if not gpu_ids:
        return list(devices)
    return [d for d in devices if d.get("index") in gpu_ids]


def _share(entry, device, stated, cuda=True):
    """``(visible, fraction, budget)`` of one GPU for one instance, or None when its memory is unknown."""
    total = device.get("memory_mib") if device.get("memory_mib") is not None else stated
    if not total:
        return None
    # what CUDA reports as total: nvidia-smi's memory.total less memory.reserved (the H200: 143771 - 616 = 143155)
    visible = total - (device.get("memory_reserved_mib") or 0)
    fraction = entry.get("fraction")
    if fraction is None and entry.get("launcher") == "sglang":
        fraction = sglang_default_fraction(total, entry.get("sglang") or {}, cuda)
    if fraction is None:
        return None
    # vllm/v1/worker/utils.py (0.32.0) request_memory: math.ceil(total_memory * gpu_memory_utilization)
    return visible, fraction, int(math.ceil(visible * fraction))


def _floor(entry, headroom):
    """Memory beyond weights and KV cache inside the share: vLLM's share also holds its activations and the CUDA
    context (vllm/v1/worker/utils.py sizes the KV cache from what is left of the share after profiling them);
    SGLang's fraction holds weights and KV pool only (server_args.py: the rest is activations and graphs)."""
    return headroom + CUDA_CONTEXT_MIB if entry.get("launcher") == "vllm" else 0


def _advice(entry, need, visible, budget, floor):
    """What would make an instance fit: the flags to change, most specific first."""
    out = []
    weights = entry.get("weights_mib") or 0
    per_1k = entry.get("kv_mib_per_1k_tokens")
    room = budget - weights - floor
    if entry.get("kv_mib") and per_1k and room > 0:
        out.append("lower %s to %d" % (entry["context_flag"], int(room / per_1k * 1024)))
    wanted = math.ceil(need * 100.0 / visible) / 100.0
    if entry.get("fraction_flag") and wanted <= MAX_SUGGESTED_FRACTION:
        out.append("raise %s to %.2f" % (entry["fraction_flag"], wanted))
    if weights + floor > int(visible * MAX_SUGGESTED_FRACTION) or not out:
        flag = TP_FLAGS.get(entry.get("launcher"), "--tensor-parallel-size")
        out.append("use more tensor parallel (%s) to split the weights" % flag)
    return " or ".join(out)


def check_memory_budget(host):
    """``memory_budget``: on every GPU an instance is placed on, the engine's share (its fraction of the memory
    CUDA reports) holds the weights per GPU, the activation floor and the KV cache of one sequence."""
    entries = [e for e in host.needs.get("memory") or () if e.get("weights_mib")]
    if not entries or not host.devices or host.bare:
        return None
    head = int(host.options.get("headroom_mib", 4096))
    stated = host.options.get("gpu_memory_mib")
    needs, found, bad, notes = [], [], [], []
    for e in entries:
        floor = _floor(e, head)
        need = e["weights_mib"] + (e.get("kv_mib") or 0) + floor
        shares = [(d, _share(e, d, stated, host.acc.get("vendor") == "nvidia"))
                  for d in _placed(host.devices, e.get("gpu_ids"))]
        shares = [(d, s) for d, s in shares if s]
        if not shares:
            continue
        device, (visible, fraction, budget) = min(shares, key=lambda pair: pair[1][2])
        kv = ("KV %d for %d tokens (%s)" % (e["kv_mib"], e["tokens"], e["tokens_from"]) if e.get("kv_mib")
              else "KV unknown" if e.get("kv_error") else "KV fitted by the engine (%s auto)" % e["context_flag"])
        needs.append("%s: %d MiB (weights %d + %s + floor %d)" % (e["recipe"], need, e["weights_mib"], kv, floor))
        found.append("%s: GPU %s share %d MiB (%s %.3f of %d MiB)" % (
            e["recipe"], device.get("index"), budget, e.get("fraction_flag") or "fraction", fraction, visible))
        spread = e.get("weights_spread_mib")
        if need > budget and spread and need - e["weights_mib"] + spread <= budget:
            # as memory_fit: the dense/expert split is unknown here, between the two bounds a warning
            notes.append("%s fits GPU %s's share only if its weights are mostly MoE experts spread over the data "
                         "parallel ranks (%d MiB per GPU if all are)" % (e["recipe"], device.get("index"), spread))
        elif need > budget:
            bad.append("%s needs %d MiB per GPU but the engine's share of GPU %s is %d MiB: %s" % (
                e["recipe"], need, device.get("index"), budget, _advice(e, need, visible, budget, floor)))
        elif e.get("kv_error"):
            notes.append("%s: KV cache not checked (%s)" % (e["recipe"], e["kv_error"]))
    if not needs:
        return None
    if bad:
        return _result("memory_budget", False, "; ".join(needs), "; ".join(found), "; ".join(bad))
    if notes:
        return _result("memory_budget", False, "; ".join(needs), "; ".join(found), "; ".join(notes), "warning")
    return _result("memory_budget", True, "; ".join(needs), "; ".join(found), "every recipe fits the engine's share")


def _ours(owner, host):
    """Whether a GPU process is one of this host's planned engines (or one renamed from), which the run stops or
    restarts: its unit, or its container (named for the instance). Another container or unit holds the GPU."""
    units = set(host.needs.get("units") or ()) | set(host.needs.get("former_units") or ())
    return bool(owner) and any(_holds(owner, unit) for unit in units)


def check_gpu_in_use(host):
    """``gpu_in_use``: every GPU an instance is placed on has the engine's share free (vLLM refuses to start
    otherwise: vllm/v1/worker/utils.py (0.32.0) request_memory, "Free memory on device ... is less than desired GPU
    memory utilization"; SGLang's pool then has no room: "Not enough memory. Please try to increase
    --mem-fraction-static"),
    naming the processes that hold it; the collection's own engines do not count (this run stops or restarts
    them)."""
    entries = host.needs.get("memory") or ()
    devices = [d for d in host.devices if d.get("memory_free_mib") is not None]
    if not entries or not devices or host.bare:
        return None
    owners = host.facts.get("gpu_owners") or {}
    stated = host.options.get("gpu_memory_mib")
    short, needs = {}, []
    for e in entries:
        for d in _placed(devices, e.get("gpu_ids")):
            share = _share(e, d, stated, host.acc.get("vendor") == "nvidia")
            if not share:
                continue
            procs = d.get("processes") or []
            ours = sum(p.get("used_mib") or 0 for p in procs if _ours(owners.get(str(p["pid"])), host))
            free = d["memory_free_mib"] + ours - CUDA_CONTEXT_MIB
            needs.append(share[2])
            if free < share[2]:
                short[d.get("index")] = (d, share[2], free, e["recipe"])
    if not needs:
        return None
    if not short:
        return _result("gpu_in_use", True, "the engine's share free on each placed GPU", "free",
                       "no other process holds the placed GPUs")
    parts = []
    for index in sorted(short, key=str):
        d, budget, free, recipe = short[index]
        holders = ["pid %d %s (%s MiB)" % (p["pid"], p.get("name") or "?", p.get("used_mib"))
                   for p in d.get("processes") or [] if not _ours(owners.get(str(p["pid"])), host)]
        parts.append("GPU %s: %d MiB free, %s needs %d MiB, held by %s" % (
            index, free, recipe, budget, ", ".join(holders) or "processes nvidia-smi cannot show (another PID namespace)"))
    return _result("gpu_in_use", False, "the engine's share free on each placed GPU", "; ".join(parts),
                   "another process holds GPU memory the engine needs: stop it, or place the recipe on other GPUs")


def check_gpu_health(host):
    """``gpu_health``: no placed GPU reports an uncorrectable ECC error, a pending or failed row remap, a pending
    page retirement, a recovery action or a lost device (errors); PCIe link and hardware slowdown warn.
    A GPU the plan does not place anything on only warns."""
    if not host.needs.get("gpus") or host.bare:
        return None
    lost = host.driver.get("lost_gpus") or []
    judged = [d for d in host.devices if d.get("health") is not None]
    if not judged and not lost:
        return None
    placed = set()
    for e in host.needs.get("memory") or ():
        placed.update(e.get("gpu_ids") or ())
    errors, warnings = [], []
    for bus in lost:
        errors.append("GPU at %s: nvidia-smi cannot reach it (fallen off the bus, Xid 79): drain the host and reboot "
                      "it; if it stays off the bus, reseat or RMA it" % bus)
    for d in judged:
        issues = list(d.get("health_issues") or ())
        if not issues and d.get("health") != "ok":
            # npu-smi's Health column (Ascend) reads OK on a healthy chip; any other word is its alarm level
            issues = [{"severity": "warning" if d["health"] == "warning" else "error",
                       "what": "npu-smi reports health %s" % d["health"],
                       "action": "read its alarms (npu-smi info -t health -i INDEX), then drain the host and reboot "
                                 "it, or replace the NPU"}]
        for issue in issues:
            line = "GPU %s (%s): %s: %s" % (d.get("index"), d.get("bus_id"), issue["what"],
                                            issue["action"].replace("INDEX", str(d.get("index"))))
            serious = issue["severity"] == "error" and (not placed or d.get("index") in placed)
            (errors if serious else warnings).append(line)
    need = "no GPU health error (ECC, row remap, page retirement, recovery action, bus)"
    found = "%d GPU(s) checked" % len(judged) + (", %d lost" % len(lost) if lost else "")
    if errors:
        return _result("gpu_health", False, need, found, "; ".join(errors + warnings))
    if warnings:
        return _result("gpu_health", False, need, found, "; ".join(warnings), "warning")
    return _result("gpu_health", True, need, found, "healthy")
