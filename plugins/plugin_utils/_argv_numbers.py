# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argv numbers the collection itself reads beyond the recipe model (the memory check, the stop timeout), how it
reads them, and their check: one place, run on every recipe's effective argv by ``_recipe.describe``.

Pure Python, no Ansible import. The engines' parsers take what this reads badly: vLLM 0.32.0 and SGLang 0.5.23
accept ``--gpu-memory-utilization 1e400`` / ``nan``, ``--mem-fraction-static 1e400`` / ``nan`` (float('1e400') is
infinity) and a 400-digit ``--max-running-requests`` or ``-tp`` (their parse-only check, module_utils/_engine_argv.py,
returns ok), which then broke the collection's own arithmetic (``int(float('inf'))``) on the controller or a host
without naming the field. Counts the recipe model reads (parallel sizes, ranks, ports) are bounded where it reads
them (``_argv.Argv.get_int``, :data:`._argv.LARGEST_INT`). Values the collection does not read are the engine's.
"""

from __future__ import annotations

import math
import re

from ansible_collections.launchcard.inference.plugins.plugin_utils._argv import LARGEST_INT
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_spec import MAX_SECONDS

FRACTION_FLAGS = {"vllm": "--gpu-memory-utilization", "sglang": "--mem-fraction-static"}
CONTEXT_FLAG = {"vllm": "--max-model-len", "sglang": "--context-length"}
#: The spellings of the parallel sizes the memory check reads from the effective argv (either launcher).
MEMORY_TP = ("--tensor-parallel-size", "-tp", "--tp-size", "--tp")
MEMORY_PP = ("--pipeline-parallel-size", "-pp", "--pp-size")
MEMORY_DP = ("--data-parallel-size", "--dp-size", "--dp")
#: SGLang counts its default --mem-fraction-static is computed from (module_utils/_preflight_gpu_checks.py, on the
#: host): python/sglang/srt/arg_groups/memory_hook.py (0.5.23).
SGLANG_COUNTS = {
    "chunked_prefill_size": ("--chunked-prefill-size",),
    "max_prefill_tokens": ("--max-prefill-tokens",),
    "max_running_requests": ("--max-running-requests",),
    "decode_max_bs": ("--cuda-graph-max-bs-decode",),
    "prefill_max_bs": ("--cuda-graph-max-bs-prefill",),
    "attn_dp_size": ("--attn-dp-size", "--attention-data-parallel-size"),
}
VLLM_SHUTDOWN_FLAG = "--shutdown-timeout"

# vllm/utils/argparse_utils.py (0.32.0) human_readable_int_or_auto: --max-model-len takes 1k (10**3), 1K (2**10),
# ... up to t/T, and -1 or "auto" (vLLM fits the length to the memory)
_SUFFIXES = {"k": 10 ** 3, "m": 10 ** 6, "g": 10 ** 9, "t": 10 ** 12, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}
AUTO = "auto"


def number(value):
    """A value as the memory check reads it: a float (``nan`` and infinity included, for :func:`check` to refuse),
    or None when it is not a number (the engine's parser judges it)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def context_tokens(value):
    """vLLM's ``--max-model-len`` as its parser reads it: a number, :data:`AUTO`, or None (unset or unreadable)."""
    text = str(value).strip() if value is not None else ""
    if text.lower() == "auto" or text == "-1":
        return AUTO
    match = re.match(r"^(\d+(?:\.\d+)?)([kKmMgGtT]?)$", text)
    if not match:
        return None
    return float(match.group(1)) * _SUFFIXES.get(match.group(2), 1)


def _context(value):
    tokens = context_tokens(value)
    return None if tokens == AUTO else tokens


# (launchers, flags, reader, minimum, maximum, what the collection reads it as)
_READ = [
    # vllm/config/cache.py (0.32.0): gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1); SGLang 0.5.23
    # sglang/srt/arg_groups/fields/schedule.py:27 mem_fraction_static: "The fraction of the memory used for static
    # allocation"; above 0 (minimum here is exclusive for fractions)
    (("vllm",), (FRACTION_FLAGS["vllm"],), number, 0.0, 1.0, "a fraction of the GPU's memory"),
    (("sglang",), (FRACTION_FLAGS["sglang"],), number, 0.0, 1.0, "a fraction of the GPU's memory"),
    (("vllm",), (CONTEXT_FLAG["vllm"],), _context, 0, LARGEST_INT, "a number of tokens"),
    (("sglang",), (CONTEXT_FLAG["sglang"],), number, -LARGEST_INT, LARGEST_INT, "a number of tokens"),
    (("vllm", "sglang"), MEMORY_TP, number, -LARGEST_INT, LARGEST_INT, "a parallel size"),
    (("vllm", "sglang"), MEMORY_PP, number, -LARGEST_INT, LARGEST_INT, "a parallel size"),
    (("sglang",), MEMORY_DP, number, -LARGEST_INT, LARGEST_INT, "a parallel size"),
    # the unit's TimeoutStopSec= carries it (_unit_times.drain_s): at most MAX_SECONDS
    (("vllm",), (VLLM_SHUTDOWN_FLAG,), number, -LARGEST_INT, MAX_SECONDS, "seconds the unit's stop timeout carries"),
] + [(("sglang",), flags, number, -LARGEST_INT, LARGEST_INT, "a count") for flags in SGLANG_COUNTS.values()]


def _span(minimum, maximum, fraction):
    if fraction:
        return "above %g and at most %g" % (minimum, maximum)
    return "from %d to %d" % (minimum, maximum)


def check(a, kind, path):
    """Refuse a number the collection reads from ``kind``'s argv ``a`` that is not finite or out of its range.

    :param a: the argv (``_argv.Argv``, read as ``kind``'s parser reads names).
    :param path: the argv's path in the card (``envs[4].argv``).
    :raises ValueError: ``"envs[4].argv[7]: --max-running-requests is ..."``, naming the value's element.
    """
    for launchers, flags, reader, minimum, maximum, what in _READ:
        if kind not in launchers or not a.has(flags):
            continue
        raw = a.get(flags)
        value = reader(raw)
        if value is None:
            continue
        fraction = isinstance(minimum, float)
        where, written = a.where(flags, path)
        if not math.isfinite(value):
            raise ValueError("%s: %s is not a finite number (%s): found %r" % (where, written, what, _short(raw)))
        if (value <= minimum if fraction else value < minimum) or value > maximum:
            raise ValueError("%s: %s is out of range: %s, %s, found %r" % (
                where, written, what, _span(minimum, maximum, fraction), _short(raw)))


def _short(raw):
    return raw if len(raw) <= 40 else "%s... (%d characters)" % (raw[:20], len(raw))
