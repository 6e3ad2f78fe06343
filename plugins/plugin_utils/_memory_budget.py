# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each GPU instance needs of its GPUs' memory, from its effective argv and the model's ``config.json``.

Pure Python, no Ansible import. Runs on the controller (_preflight_steps.host_needs): :func:`instance_needs`
gives one entry of ``needs.memory`` per GPU instance; the host's ``memory_budget`` and ``gpu_in_use`` checks
(``module_utils/_preflight_gpu_checks.py``) set them against the memory each GPU has. The engine's share of a GPU
is its fraction (``--gpu-memory-utilization``, ``--mem-fraction-static``) of the memory CUDA reports; the weights,
an activation floor and the KV cache of one sequence of ``--max-model-len`` tokens must fit in it.
"""

from __future__ import annotations

import math

from ansible_collections.launchcard.inference.plugins.plugin_utils._argv_numbers import (
    AUTO, CONTEXT_FLAG, FRACTION_FLAGS, MEMORY_DP, MEMORY_PP, MEMORY_TP, SGLANG_COUNTS, context_tokens, number as _number)
from ansible_collections.launchcard.inference.plugins.plugin_utils._recipe import argv_reader

MIB = 1 << 20
GIB = 1 << 30

# vllm/config/cache.py (0.32.0): gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)
VLLM_DEFAULT_UTILIZATION = 0.92

# Bytes per KV element by --kv-cache-dtype: vllm/utils/torch_utils.py (0.32.0) STR_DTYPE_TO_TORCH_DTYPE (fp8* and
# int8 are one byte, float16/bfloat16 two); SGLang 0.5.23's --kv-cache-dtype choices (auto, fp8_e5m2, fp8_e4m3, mxfp8,
# bf16, bfloat16, nvfp4, fp4_mx_block16). nvfp4 / 4-bit kinds: half a byte (their per-block scales are left out).
_KV_BYTES = {"float16": 2, "half": 2, "bfloat16": 2, "bf16": 2, "float32": 4, "float": 4, "fp32": 4}
_MODEL_DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1}


class MemoryConfigError(ValueError):
    """A model ``config.json`` without the fields the KV cache is computed from."""


def kv_element_bytes(kv_cache_dtype, model_dtype):
    """Bytes of one KV cache element for ``--kv-cache-dtype`` (``auto``: the model's dtype, else 2)."""
    dtype = str(kv_cache_dtype or "auto").lower()
    if dtype == "auto":
        return _MODEL_DTYPE_BYTES.get(str(model_dtype or "").lower(), 2)
    if dtype in _KV_BYTES:
        return _KV_BYTES[dtype]
    if dtype.startswith(("fp8", "int8", "mxfp8")):
        return 1
    if dtype == "turboquant_k8v4":
        return 0.75
    if dtype.startswith(("nvfp4", "fp4", "int4", "ultraquant_4bit", "turboquant_")):
        return 0.5
    return 2


def text_config(config):
    """The language model's part of a ``config.json``: ``text_config`` or ``llm_config`` of a multimodal model."""
    for key in ("text_config", "llm_config", "language_config"):
        if isinstance(config.get(key), dict) and config[key].get("num_hidden_layers"):
            return dict(config[key], torch_dtype=config[key].get("torch_dtype") or config.get("torch_dtype"))
    return config


def kv_bytes_per_token(config, kv_cache_dtype, tp=1, pp=1):
    """KV cache bytes one token takes on one GPU of a TP x PP group.

    Standard attention: 2 (K and V) x layers / PP x KV heads / TP (at least one per GPU: the engines replicate a
    KV head over TP ranks when TP exceeds the KV heads) x head size x element bytes. MLA (``kv_lora_rank``,
    DeepSeek V2/V3): one latent of ``kv_lora_rank + qk_rope_head_dim`` per layer, the same on every TP rank.
    Sliding-window layers (``layer_types`` naming ``sliding_attention``) are counted with the full sequence
    too: an upper bound, stated as such in the check's message.

    :raises MemoryConfigError: a field the formula needs is missing.
    """
    cfg = text_config(config or {})
    layers = cfg.get("num_hidden_layers")
    if not layers:
        raise MemoryConfigError("config.json has no num_hidden_layers")
    per_gpu_layers = math.ceil(layers / float(max(1, pp)))
    elem = kv_element_bytes(kv_cache_dtype, cfg.get("torch_dtype") or cfg.get("dtype"))
    if cfg.get("kv_lora_rank"):
        return per_gpu_layers * (cfg["kv_lora_rank"] + (cfg.get("qk_rope_head_dim") or 0)) * elem
    heads = cfg.get("num_attention_heads")
    kv_heads = cfg.get("num_key_value_heads") or heads
    head_dim = cfg.get("head_dim") or (cfg.get("hidden_size") // heads if heads and cfg.get("hidden_size") else None)
    if not kv_heads or not head_dim:
        raise MemoryConfigError("config.json has no num_key_value_heads / num_attention_heads and head_dim / hidden_size")
    return 2 * per_gpu_layers * max(1, math.ceil(kv_heads / float(max(1, tp)))) * head_dim * elem


def instance_needs(inst, weights_mib, model_config, config_error=None):
    """One GPU instance's memory needs (an entry of ``needs.memory``).

    :param inst: the planned instance (``launcher``, ``argv`` - the effective argv -, ``unit``, ``recipe``,
        ``gpus``, ``gpu_ids``).
    :param weights_mib: the weights per GPU (``host_needs``' arithmetic), or None when the card states no size.
    :param model_config: the model's ``config.json`` facts at the card's revision (the plan's ``model_configs``),
        or None: the KV cache is then unknown and the check says so (``config_error``: why).
    :returns: ``{"unit", "recipe", "launcher", "gpu_ids", "weights_mib", "fraction", "fraction_flag",
        "context_flag", "tokens", "tokens_from", "kv_mib_per_1k_tokens", "kv_mib", "kv_error", "sglang"}``:
        ``fraction`` None is the engine's default (vLLM's constant; SGLang's from the GPU's memory, computed on
        the host: ``sglang`` holds the argv it reads).
    """
    launcher = inst.get("launcher")
    a = argv_reader(launcher, inst.get("argv") or [])
    flag = FRACTION_FLAGS.get(launcher)
    fraction = _number(a.get(flag)) if flag else None
    if fraction is None and launcher == "vllm":
        fraction = VLLM_DEFAULT_UTILIZATION
    # _recipe.describe refused a number here that is not finite or out of range (_argv_numbers.check)
    tp = int(_number(a.get(MEMORY_TP)) or 1)
    pp = int(_number(a.get(MEMORY_PP)) or 1)
    ctx_flag = CONTEXT_FLAG.get(launcher, "--max-model-len")
    written = a.get(ctx_flag)
    tokens = context_tokens(written) if launcher == "vllm" else _number(written)
    tokens_from = ctx_flag
    cfg = text_config(model_config or {})
    if tokens is None and cfg.get("max_position_embeddings"):
        tokens, tokens_from = cfg["max_position_embeddings"], "max_position_embeddings"
    per_token, error = None, None
    if tokens == AUTO:
        # vLLM then fits the context to the memory left: no sequence length to hold
        tokens, tokens_from = None, None
    elif model_config is None:
        error = config_error or "the model's config.json was not read at planning"
    else:
        try:
            per_token = kv_bytes_per_token(model_config, a.get("--kv-cache-dtype", "auto"), tp, pp)
        except MemoryConfigError as exc:
            error = str(exc)
        if per_token and not tokens:
            error = "no %s in the argv and no max_position_embeddings in config.json" % ctx_flag
    out = {
        "unit": inst.get("unit"),
        "recipe": inst.get("recipe"),
        "launcher": launcher,
        "gpu_ids": list(inst.get("gpu_ids") or []),
        "weights_mib": weights_mib,
        "fraction": fraction,
        "fraction_flag": flag,
        "context_flag": ctx_flag,
        "tokens": int(tokens) if tokens else None,
        "tokens_from": tokens_from if tokens else None,
        "kv_mib_per_1k_tokens": round(per_token * 1024 / MIB, 3) if per_token else None,
        "kv_mib": int(math.ceil(per_token * tokens / MIB)) if per_token and tokens else None,
        "kv_error": error,
    }
    if launcher == "sglang":
        # what SGLang's default --mem-fraction-static reads (module_utils/_preflight_gpu_checks.py computes it on the
        # host, from the GPU's memory): python/sglang/srt/arg_groups/memory_hook.py (0.5.23)
        dp = _int(a.get(MEMORY_DP)) or 1
        counts = dict((key, _int(a.get(flags))) for key, flags in SGLANG_COUNTS.items())
        out["sglang"] = dict(counts, **{
            "tp": tp, "pp": pp,
            "disable_decode_graph": a.has(("--disable-cuda-graph", "--disable-decode-cuda-graph")),
            "disable_prefill_graph": a.has(("--disable-cuda-graph", "--disable-prefill-cuda-graph")),
            "disaggregation_mode": a.get("--disaggregation-mode"),
            "dp_attention": a.has("--enable-dp-attention"),
            "attn_dp_size": counts["attn_dp_size"] or dp,
            "deepep": str(a.get("--moe-a2a-backend") or "").startswith("deepep"),
            "mla": bool(text_config(model_config or {}).get("kv_lora_rank")),
        })
    return out


def _int(value):
    number = _number(value)
    return int(number) if number is not None else None


# The config.json fields the KV cache is computed from: only these, as positive integers (or the dtype's name), are
# kept in the plan; the rest of an untrusted config.json never leaves this function.
CONFIG_INTS = ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "hidden_size",
               "kv_lora_rank", "qk_rope_head_dim", "max_position_embeddings")
CONFIG_DTYPES = ("torch_dtype", "dtype")


def config_facts(config):
    """The fields of a ``config.json`` (and of its ``text_config``/``llm_config``/``language_config``) that
    :func:`kv_bytes_per_token` reads, each a positive integer below 2**31 or a short dtype name; others dropped."""
    if not isinstance(config, dict):
        raise MemoryConfigError("config.json is not a JSON object")
    out = {}
    for key in CONFIG_INTS:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2 ** 31:
            out[key] = value
    for key in CONFIG_DTYPES:
        value = config.get(key)
        if isinstance(value, str) and value.replace("_", "").isalnum() and len(value) < 32:
            out[key] = value
    for key in ("text_config", "llm_config", "language_config"):
        if isinstance(config.get(key), dict):
            out[key] = config_facts(config[key])
    return out


def model_configs(cards, fetch):
    """Each card's model ``config.json`` facts at its revision, for the plan (``model_configs``).

    :param cards: card source -> card model (``model.repo``, ``model.revision``).
    :param fetch: ``fetch(repo, revision) -> parsed config.json``; raises on any failure (the Hub's, the
        network's, JSON's).
    :returns: ``{card: {"repo", "revision", "config": facts}}`` or ``{..., "error": text}``: a config that could
        not be read makes the ``memory_budget`` check warn, never stops the plan.
    """
    out, seen = {}, {}
    for src, card in sorted((cards or {}).items()):
        model = card.get("model") or {}
        key = (model.get("repo"), model.get("revision"))
        if key not in seen:
            entry = {"repo": key[0], "revision": key[1]}
            try:
                entry["config"] = config_facts(fetch(*key))
            except Exception as exc:  # pylint: disable=broad-except
                why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
                entry["error"] = "config.json of %s@%s not read: %s" % (key[0], key[1], why)
            seen[key] = entry
        out[src] = seen[key]
    return out
