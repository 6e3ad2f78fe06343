# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The recipe model: what one card recipe (``envs[i]``) means for placement.

Pure Python, no Ansible import. One dialect per launcher reads the recipe's
argv the way the engine's own argparse would and derives what the planner
needs: role, parallel sizes, GPUs per instance, ports, peers and multi-node
flags. Flags the dialect does not know pass through untouched.

Sources for defaults and flag names: vLLM ``vllm/engine/arg_utils.py`` and
``vllm/entrypoints/openai/cli_args.py`` (port 8000, host all interfaces);
SGLang ``python/sglang/srt/server_args.py`` (port 30000, host 127.0.0.1,
bootstrap port 8998); ``sglang_router/router_args.py`` (port 30000,
``--prefill URL [BOOTSTRAP]``, ``--decode URL``).
"""

from __future__ import annotations

import json
import re

from ansible_collections.launchcard.inference.plugins.plugin_utils import _argv_numbers
from ansible_collections.launchcard.inference.plugins.plugin_utils._argv import Argv, abbreviations

VLLM_DEFAULT_PORT = 8000
SGLANG_DEFAULT_PORT = 30000
ROUTER_DEFAULT_PORT = 30000
SGLANG_DEFAULT_BOOTSTRAP_PORT = 8998
VLLM_DEFAULT_NIXL_SIDE_CHANNEL_PORT = 5600
#: vLLM multi-node without Ray: rank 0 listens on ``--master-port`` (vLLM
#: ``vllm/config/parallel.py``, ``master_port``, default 29501).
VLLM_DEFAULT_MASTER_PORT = 29501
#: vLLM data parallel over several nodes: the head listens on ``--data-parallel-rpc-port``
#: (vllm/config/parallel.py ``data_parallel_rpc_port``, default 29550, "shared by all nodes").
VLLM_DEFAULT_DP_RPC_PORT = 29550
#: sglang_router/router_args.py:31: ``worker_startup_timeout_secs`` default 1800.
ROUTER_DEFAULT_WORKER_STARTUP_TIMEOUT_S = 1800
ROUTER_STARTUP_FLAG = "--worker-startup-timeout-secs"
#: SGLang multi-node: the port of ``--dist-init-addr HOST:PORT`` has no
#: default (SGLang needs the option with ``--nnodes`` > 1); the planner writes
#: 5000 when the card gives none.
SGLANG_DEFAULT_DIST_INIT_PORT = 5000
#: Ports SGLang's rank 0 opens from the ``--dist-init-addr`` port P: P itself
#: (torch.distributed's TCP store) and P+1 .. P+6 (ZMQ sockets at
#: ``port_base = P + 1`` plus offsets, ``PortArgs.init_new`` in
#: ``python/sglang/srt/server_args.py``); with ``--enable-dp-attention`` one
#: more per DP rank, up to P+5+dp_size.
SGLANG_DIST_INIT_PORT_SPAN = 7
#: Where each launcher binds when its argv names no ``--host`` (the sources above).
DEFAULT_BIND = {"vllm": "0.0.0.0", "sglang": "127.0.0.1", "router": "127.0.0.1"}
#: sglang_router/router_args.py (0.3.2) add_cli_args: ``--prometheus-port`` default 29000, ``--prometheus-host``
#: default "0.0.0.0" (all interfaces: a monitoring host reaches the router's metrics listener).
ROUTER_DEFAULT_PROMETHEUS_PORT = 29000
ROUTER_DEFAULT_PROMETHEUS_HOST = "0.0.0.0"
#: The option each launcher needs to serve ``/metrics``, added by the planner unless the card writes it (metrics on
#: by default; an override's ``remove`` turns it off). SGLang 0.5.23: sglang/srt/arg_groups/fields/observability.py:70
#: ``enable_metrics`` defaults to False, and sglang/srt/entrypoints/http_server.py:314 mounts ``/metrics`` only when
#: it is set (the encoder's server too: sglang/srt/disaggregation/encoder/http_server.py). vLLM serves ``/metrics``
#: on its API port unconditionally (vllm/entrypoints/serve/instrumentator/metrics.py, 0.32.0); the router always
#: listens on ``--prometheus-port``.
METRICS_FLAGS = {"sglang": "--enable-metrics"}

#: What a recipe does. ``aggregated``: one server does prefill and decode
#: (aggregated serving, the engines' own term, as opposed to prefill/decode
#: disaggregation).
ROLES = ("aggregated", "encoder", "language", "prefill", "decode", "router")
#: Role names of earlier releases, still accepted where an operator types a
#: recipe name (``launchcard_recipes``), with a deprecation warning.
FORMER_ROLES = {"monolithic": "aggregated"}
_RECIPE_NAME = re.compile(r"^(?P<engine>[a-z0-9]+)-(?P<role>[a-z]+)(?P<index>-[0-9]+)?$")

_V_TP = ("--tensor-parallel-size", "-tp")
_V_PP = ("--pipeline-parallel-size", "-pp")
_V_DP = ("--data-parallel-size", "-dp")
_V_DPL = ("--data-parallel-size-local", "-dpl")
_V_DCP = ("--decode-context-parallel-size", "-dcp")
# vllm/engine/arg_utils.py add_cli_args: -pcp, -dpr, -dpa, -dpp, -dpn are the short names of these options
_V_PCP = ("--prefill-context-parallel-size", "-pcp")
_V_DPR = ("--data-parallel-start-rank", "-dpr")
_V_DPA = ("--data-parallel-address", "-dpa")
_V_DPP = ("--data-parallel-rpc-port", "-dpp")
_V_DPN = ("--data-parallel-rank", "-dpn")
#: The spellings of the options the planner writes on a vLLM data parallel group over nodes.
VLLM_DP_GROUP_FLAGS = {"address": _V_DPA, "rpc_port": _V_DPP, "start_rank": _V_DPR}
_S_TP = ("--tp-size", "--tp", "--tensor-parallel-size")
_S_PP = ("--pp-size", "--pp", "--pipeline-parallel-size")
_S_DP = ("--dp-size", "--dp", "--data-parallel-size")
_S_EP = ("--ep-size", "--ep", "--expert-parallel-size")
_S_CP = ("--attn-cp-size",)
_S_MODEL = ("--model-path", "--model")

#: Every option each dialect reads or the planner rewrites. A long option
#: written as an abbreviation of one of these is refused (see
#: :func:`_refuse_unread_forms`).
KNOWN_OPTIONS = {
    "vllm": frozenset(_V_TP + _V_PP + _V_DP + _V_DPL + _V_DCP + _V_PCP + _V_DPR + _V_DPA + _V_DPP + _V_DPN + (
        "--nnodes", "--node-rank", "--port", "--host", "--kv-transfer-config", "--enable-expert-parallel",
        "--master-addr", "--master-port", "--headless", "--served-model-name",
        "--model", "--quantization", "-q", "--revision", "--tokenizer", "--tokenizer-revision")),
    "sglang": frozenset(_S_TP + _S_PP + _S_DP + _S_EP + _S_CP + _S_MODEL + (
        "--nnodes", "--node-rank", "--port", "--host", "--disaggregation-mode", "--encoder-only",
        "--language-only", "--enable-dp-attention", "--base-gpu-id", "--disaggregation-bootstrap-port",
        "--disaggregation-transfer-backend", "--dist-init-addr", "--served-model-name", "--quantization",
        "--encoder-urls", "--revision", "--speculative-draft-model-path", "--speculative-draft-model",
        "--speculative-draft-model-revision", "--enable-metrics")),
    "router": frozenset((
        "--prefill", "--decode", "--port", "--host", "--pd-disaggregation", "--worker-urls",
        "--prometheus-port", "--prometheus-host", "--model-path", ROUTER_STARTUP_FLAG)),
}
#: Spellings of one option, per dialect: ``-tp 8`` and ``--tensor-parallel-size 8`` set the same thing.
#: Site argv overrides (:mod:`_overrides`) match a flag through these, as the dialects read them.
ALIASES = {
    "vllm": (_V_TP, _V_PP, _V_DP, _V_DPL, _V_DCP, _V_PCP, _V_DPR, _V_DPA, _V_DPP, _V_DPN, ("--quantization", "-q")),
    "sglang": (_S_TP, _S_PP, _S_DP, _S_EP, _S_CP, _S_MODEL),
    "router": (),
}
#: vLLM options whose value is JSON; vLLM also takes them key by key
#: (``--kv-transfer-config.kv_role kv_producer``), which the plan would not see.
_V_JSON = ("--kv-transfer-config",)


#: Where each launcher names a Hub repository and the option that pins its revision. vLLM:
#: vllm/engine/arg_utils.py:914,924 (offline, the model and tokenizer resolve through get_model_path with
#: --revision / --tokenizer-revision) and vllm/config/model.py:596-599 (the tokenizer takes --revision only
#: when --tokenizer is not given). SGLang: sglang/srt/arg_groups/fields/model.py:122 (--revision, also the
#: tokenizer's: sglang/srt/managers/tokenizer_manager.py:642-646) and speculative_hook.py:122-130 (a draft
#: model path without --speculative-draft-model-revision loads "main").
HUB_PINS = {
    "vllm": (("model", "--revision"), (("--tokenizer",), "--tokenizer-revision")),
    "sglang": (("model", "--revision"),
               (("--speculative-draft-model-path", "--speculative-draft-model"), "--speculative-draft-model-revision")),
}
#: A model argument the engine opens as a directory (both engines: os.path.exists first,
#: vllm/transformers_utils/repo_utils.py:287, sglang/srt/arg_groups/model_path_hook.py:108).
_LOCAL_PATH = re.compile(r"^(/|~|\.{1,2}(/|$))")


class RecipeError(ValueError):
    """A recipe whose argv cannot be understood; ``str()`` names the path."""

    def __init__(self, path, message):
        super().__init__("%s: %s" % (path, message))
        self.path = path
        self.message = message


def launcher(argv):
    """Return which program an argv starts: ``vllm``, ``sglang`` or ``router``.

    Recognised forms: ``vllm serve``, ``python -m vllm.entrypoints.openai.api_server``,
    ``sglang serve``, ``python -m sglang.launch_server``,
    ``python -m sglang_router.launch_router`` and ``sglang-router``.
    :returns: the launcher name, or None when the argv matches none.
    """
    exe = argv[0].rsplit("/", 1)[-1] if argv else ""
    if exe in ("sglang-router", "sglang_router"):
        return "router"
    if exe == "vllm":
        return "vllm"
    if exe == "sglang":
        return "sglang"
    if exe.startswith("python") and len(argv) > 2 and argv[1] == "-m":
        mod = argv[2]
        if mod.startswith("sglang_router"):
            return "router"
        if mod.startswith("sglang"):
            return "sglang"
        if mod.startswith("vllm"):
            return "vllm"
    return None


def argv_reader(kind, tokens):
    """An :class:`Argv` that reads option names the way ``kind``'s parser does
    (vLLM: underscores for dashes; SGLang and the router: as written)."""
    return Argv(tokens, underscores=(kind == "vllm"))


def parser_start(argv):
    """Index of the first argv token the engine's own parser reads."""
    exe = argv[0].rsplit("/", 1)[-1]
    if exe.startswith("python") and len(argv) > 2 and argv[1] == "-m":
        return 3
    if exe in ("vllm", "sglang") and len(argv) > 1 and argv[1] == "serve":
        return 2
    return 1


_PROGRAM = {"vllm": "vLLM", "sglang": "SGLang", "router": "the SGLang router"}
# an option name run into its value or a shell word by whitespace or ";" ("--model-path; rm -rf /")
_JOINED_OPTION = re.compile(r"^(--?[A-Za-z][A-Za-z0-9_.-]*)[\s;|&]")


def _refuse_unread_forms(a, kind, path):
    """Refuse option spellings the engine reads but this dialect would not.

    argparse, with ``allow_abbrev`` on (its default, kept by vLLM, SGLang and
    the SGLang router), reads an unambiguous prefix of a long option as that
    option: https://docs.python.org/3/library/argparse.html#allow-abbrev.
    ``--tp-si 4`` is TP 4 to SGLang. Whether a prefix is unambiguous depends
    on every option of the exact engine release (hundreds, changing with each
    one), which the card does not pin down for us; so rather than guess, a
    long option that abbreviates one the planner reads is an error naming the
    element and the option. (Where the engine finds the prefix ambiguous it
    would refuse to start anyway.) vLLM's key-by-key JSON form
    (``--kv-transfer-config.kv_role``) is refused for the same reason: the
    plan would not see the key.
    """
    found = abbreviations(a.tokens, KNOWN_OPTIONS[kind], parser_start(a.tokens), a.underscores)
    if found:
        i, written, full = found[0]
        raise RecipeError("%s[%d]" % (path, i), (
            "%r abbreviates %s: %s's argparse (allow_abbrev) reads an unambiguous prefix of a long "
            "option as that option, and the planner reads options by their full name; write %s" % (
                written, " or ".join(full), _PROGRAM[kind],
                "it in full" if len(full) > 1 else full[0])))
    for i in range(parser_start(a.tokens), len(a.tokens)):
        joined = _JOINED_OPTION.match(a.tokens[i])
        # argparse reads it as a value (a space before any "=") or an unknown option: the option is never set
        if joined and a.name(joined.group(1)) in KNOWN_OPTIONS[kind]:
            raise RecipeError("%s[%d]" % (path, i), (
                "%r is one argv element, which %s does not read as the option %s: the engine gets each element "
                "as one word, and no shell splits it; write %s and its value as elements of their own" % (
                    a.tokens[i], _PROGRAM[kind], joined.group(1), joined.group(1))))
    if kind == "vllm":
        for i, tok in enumerate(a.tokens):
            name = a.name(tok)
            if name and "." in name and name.split(".", 1)[0] in _V_JSON:
                raise RecipeError("%s[%d]" % (path, i), (
                    "%r sets one key of %s; the planner reads that option only as one JSON value: "
                    "write %s '{...}'" % (tok.split("=", 1)[0], name.split(".", 1)[0], name.split(".", 1)[0])))


def describe(env, index):
    """Build the recipe model of ``envs[index]``.

    :param env: one validated card recipe (dict with ``engine``, ``image``,
        ``argv``, ``env``, optional ``checkpoint``, ``validated_hardware``).
    :param index: its position in ``envs`` (used in names and error paths).
    :returns: a JSON-serialisable dict; see docs/card-schema.md, "Recipes: how argv is read".
    :raises RecipeError: the argv names no known launcher, a numeric flag the
        collection reads is not a number, not finite or out of range (:mod:`._argv_numbers`), or a JSON flag (``--kv-transfer-config``) is not JSON.
    """
    path = "envs[%d].argv" % index
    argv = list(env["argv"])
    kind = launcher(argv)
    if kind is None:
        raise RecipeError(path + "[0]", "expected a vLLM, SGLang or SGLang router command "
                          "(vllm serve, sglang serve, python -m sglang.launch_server, "
                          "python -m sglang_router.launch_router), found %r" % argv[0])
    engine = env["engine"]
    if kind != "router" and kind != engine:
        raise RecipeError(path + "[0]", "engine is %r but argv starts %s" % (engine, kind))
    a = argv_reader(kind, argv)
    _refuse_unread_forms(a, kind, path)
    try:
        if kind == "router":
            model = _router(a, path)
        elif kind == "vllm":
            model = _vllm(a, path)
        else:
            model = _sglang(a, path)
        _argv_numbers.check(a, kind, path)
    except ValueError as exc:
        if isinstance(exc, RecipeError):
            raise
        where, _sep, message = str(exc).partition(": ")
        # Argv errors name the element (envs[4].argv[8]); keep that finer path
        raise RecipeError(where if where.startswith(path) else path, message if _sep else str(exc))
    model.update({
        "index": index,
        "engine": engine,
        "launcher": kind,
        "image": env["image"],
        "argv": argv,
        "env": dict(env.get("env") or {}),
        "checkpoint": env.get("checkpoint"),
        "validated_hardware": [h.lower() for h in (env.get("validated_hardware") or [])],
    })
    if env.get("engine_version") is not None:
        # only where the card names one: a card without it keeps its digest (_rollout.card_sha256), so its hosts'
        # records stay as they are; what the release means for the metric contract: _engine_version.py
        model["engine_version"] = env["engine_version"]
    return model


def hub_pins(recipe, repo, revision, path=None):
    """The revision options the engine needs to load ``repo`` at ``revision`` from an offline cache.

    The weights role stages ``hf.repo`` by commit hash, which writes no ``refs/main``; an engine given
    only the repo id under ``HF_HUB_OFFLINE=1`` looks up ``main`` and fails (LocalEntryNotFoundError).
    So every engine that names ``repo`` as its model (and vLLM's ``--tokenizer``, SGLang's draft model,
    when they name it too) gets the revision option, unless the card already gives it the same value.
    Routers load no weights and get none. A model argument that is a local path (``/``, ``./``,
    ``../``, ``~``) is the site's own directory: the engine reads it as it is and no revision applies.

    :param recipe: a recipe model (:func:`describe`).
    :param repo: the card's ``hf.repo``; ``revision``: its ``hf.revision``.
    :returns: list of ``[flag, value]`` to append to the argv (empty when none is needed).
    :raises RecipeError: naming the element: the argv pins another revision, or its model is another
        repository (or none), which the weights role does not stage.
    """
    kind = recipe["launcher"]
    if kind not in HUB_PINS:
        return []
    path = path or "envs[%d].argv" % recipe["index"]
    a = argv_reader(kind, recipe["argv"])
    pins = []
    for names, flag in HUB_PINS[kind]:
        if names == "model":
            named = recipe.get("model_arg")
            if named is None:
                raise RecipeError(path, "names no model: %s would load its default model, not the card's "
                                  "hf.repo %r; name it" % (_PROGRAM[kind], repo))
            if _LOCAL_PATH.match(named):
                return []
            if named != repo:
                raise RecipeError(_model_where(a, kind, path, named), (
                    "the model %r is not the card's hf.repo %r: the weights role stages hf.repo at hf.revision "
                    "only, and the engine serves offline from that cache; name hf.repo (or an absolute path "
                    "for a directory the site provides)" % (named, repo)))
        elif a.get(names) != repo:
            continue
        if a.has(flag):
            written_at, written = a.where(flag, path)
            if a.get(flag) != revision:
                raise RecipeError(written_at, "%s %r is not the card's hf.revision %s: the weights role stages "
                                  "that revision only; drop the option or write %s" % (
                                      written, a.get(flag), revision, revision))
            continue
        pins.append([flag, revision])
    return pins


def _model_where(a, kind, path, named):
    """The element of ``path`` that names the model (``vllm serve MODEL``'s positional or the model option)."""
    flags = ("--model",) if kind == "vllm" else _S_MODEL
    if a.has(flags):
        return a.where(flags, path)[0]
    return "%s[%d]" % (path, a.tokens.index(named))


def _size(a, flags, path, what):
    """A parallel size or count (an int >= 1, default 1); errors name the element."""
    val = a.get_int(flags, 1, path)
    if val < 1:
        where, written = a.where(flags, path)
        raise RecipeError(where, "%s (%s) must be >= 1, found %d" % (written, what, val))
    return val


def _base(a, path, tp, pp, dp, port, host):
    nnodes = _size(a, "--nnodes", path, "number of nodes")
    rank = a.get_int("--node-rank", 0, path)
    if not 0 <= rank < nnodes:
        where, written = a.where("--node-rank", path)
        raise RecipeError(where, "%s must be from 0 to --nnodes - 1 (%d), found %d" % (written, nnodes - 1, rank))
    return {
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        "data_parallel_size": dp,
        "nnodes": nnodes,
        "node_rank": rank,
        "port": port,
        "bind_host": host,
    }


def _per_node(a, total, nnodes, path):
    if total % nnodes:
        where, written = a.where("--nnodes", path)
        raise RecipeError(where, "%d GPUs do not split evenly over %s %d" % (total, written, nnodes))
    return total // nnodes


def _vllm(a, path):
    tp = _size(a, _V_TP, path, "tensor parallel size")
    pp = _size(a, _V_PP, path, "pipeline parallel size")
    dp = _size(a, _V_DP, path, "data parallel size")
    # vllm/config/parallel.py: "PCP expands the process world size" (world_size = PP x TP x PCP)
    pcp = _size(a, _V_PCP, path, "prefill context parallel size")
    m = _base(a, path, tp, pp, dp, a.get_port("--port", VLLM_DEFAULT_PORT, path), a.get("--host", DEFAULT_BIND["vllm"]))
    kv_raw = a.get("--kv-transfer-config")
    kv = None
    if kv_raw is not None:
        where, written = a.where("--kv-transfer-config", path)
        try:
            kv = json.loads(kv_raw)
        except ValueError as exc:
            raise RecipeError(where, "%s is not valid JSON (%s)" % (written, exc))
        if not isinstance(kv, dict):
            raise RecipeError(where, "%s must be a JSON object" % written)
    role = {"kv_producer": "prefill", "kv_consumer": "decode"}.get((kv or {}).get("kv_role"), "aggregated")
    dpl = a.get_int(_V_DPL, None, path)
    if dpl is not None and not 0 <= dpl <= dp:
        where, written = a.where(_V_DPL, path)
        raise RecipeError(where, "%s must be from 0 to the data parallel size %d, found %d" % (written, dp, dpl))
    world = tp * pp * pcp
    total = world * dp
    dp_nodes = _dp_nodes(a, path, dp, dpl, m["nnodes"])
    per_node = world * dpl if dpl is not None else _per_node(a, total, m["nnodes"], path)
    dp_rank = a.get_int(_V_DPN, None, path)
    start = dp_rank if dp_rank is not None else a.get_int(_V_DPR, 0, path)
    if not 0 <= start < dp:
        where, written = a.where(_V_DPN if dp_rank is not None else _V_DPR, path)
        raise RecipeError(where, "%s must be from 0 to the data parallel size - 1 (%d), found %d" % (
            written, dp - 1, start))
    serve = a.tokens.index("serve") if "serve" in a.tokens else None
    model_arg = a.get("--model") or (a.positionals_after(serve) if serve is not None else None)
    m.update({
        "role": role,
        "gpus": per_node,
        "gpus_total": total,
        "prefill_context_parallel_size": pcp,
        # DP ranks this command runs on its node (external LB, --data-parallel-rank: one), from dp_start_rank
        "dp_local_size": 1 if dp_rank is not None else (dpl if dpl is not None else dp),
        "dp_start_rank": start,
        # > 1: one data parallel group over this many nodes (-dpl < -dp), planned like --nnodes
        "dp_nodes": dp_nodes,
        "expert_parallel": a.has("--enable-expert-parallel"),
        "context_parallel_size": a.get_int(_V_DCP, 1, path),
        "bootstrap_port": None,
        "transfer_backend": (kv or {}).get("kv_connector"),
        "kv_transfer_config": kv,
        "master_addr": a.get("--master-addr"),
        "dist_init_port": (a.get_port(_V_DPP, VLLM_DEFAULT_DP_RPC_PORT, path) if dp_nodes > 1 else
                           a.get_port("--master-port", VLLM_DEFAULT_MASTER_PORT, path)),
        "dist_init_port_span": 1,
        "headless": a.has("--headless"),
        "data_parallel_address": a.get(_V_DPA),
        "served_model_name": a.get("--served-model-name"),
        "model_arg": model_arg,
        "quantization": a.get(("--quantization", "-q")),
        "encoder_urls": [],
        "prefill_urls": [],
        "decode_urls": [],
        "base_gpu_id": None,
    })
    if dp_nodes > 1:
        # the planner places the group like --nnodes: one host per dp_nodes, rank 0 the head
        m["nnodes"] = dp_nodes
        m["node_rank"] = start // dpl
    return m


def _dp_nodes(a, path, dp, dpl, nnodes):
    """How many nodes one vLLM data parallel group spans: ``-dp N -dpl M`` with M < N runs M ranks per node
    on N / M nodes, the head with the API server and the others ``--headless --data-parallel-start-rank``
    (vLLM docs/serving/data_parallel_deployment.md, "Internal Load Balancing"); 1 otherwise."""
    if dpl is None or dpl >= dp or a.has(_V_DPN) or a.has("--data-parallel-hybrid-lb") or \
            a.has("--data-parallel-external-lb"):
        return 1
    where, written = a.where(_V_DPL, path)
    if dpl == 0:
        raise RecipeError(where, "%s 0 (an API server without engines) is not planned: give every node of the "
                          "data parallel group its share of the ranks" % written)
    if dp % dpl:
        raise RecipeError(where, "the data parallel size %d does not split evenly into %s %d per node" % (
            dp, written, dpl))
    if nnodes > 1:
        where, written = a.where("--nnodes", path)
        raise RecipeError(where, "%s with a data parallel group over nodes (-dpl < -dp) is not planned: "
                          "use one or the other" % written)
    return dp // dpl


def _sglang(a, path):
    tp = _size(a, _S_TP, path, "tensor parallel size")
    pp = _size(a, _S_PP, path, "pipeline parallel size")
    dp = _size(a, _S_DP, path, "data parallel size")
    m = _base(a, path, tp, pp, dp, a.get_port("--port", SGLANG_DEFAULT_PORT, path),
              a.get("--host", DEFAULT_BIND["sglang"]))
    mode = a.get("--disaggregation-mode", "null")
    if mode not in ("null", "prefill", "decode"):
        where, written = a.where("--disaggregation-mode", path)
        raise RecipeError(where, "%s expects prefill, decode or null, found %r" % (written, mode))
    if a.has("--encoder-only"):
        role = "encoder"
    elif a.has("--language-only"):
        role = "language"
    elif mode != "null":
        role = mode
    else:
        role = "aggregated"
    # With --enable-dp-attention the DP ranks share the TP GPUs; without it
    # SGLang starts dp_size copies of a TP group (server_args.py).
    total = tp * pp * (1 if a.has("--enable-dp-attention") else dp)
    m.update({
        "role": role,
        "gpus": _per_node(a, total, m["nnodes"], path),
        "gpus_total": total,
        "expert_parallel_size": a.get_int(_S_EP, 1, path),
        "context_parallel_size": a.get_int(_S_CP, 1, path),
        "base_gpu_id": a.get_int("--base-gpu-id", 0, path),
        "bootstrap_port": (a.get_port("--disaggregation-bootstrap-port", SGLANG_DEFAULT_BOOTSTRAP_PORT, path)
                           if role == "prefill" else None),
        "transfer_backend": a.get("--disaggregation-transfer-backend", "mooncake") if mode != "null" else None,
        "dist_init_addr": a.get("--dist-init-addr"),
        "dist_init_port": _dist_init_port(a, path),
        "dist_init_port_span": max(SGLANG_DIST_INIT_PORT_SPAN, 6 + dp if a.has("--enable-dp-attention") else 0),
        "served_model_name": a.get("--served-model-name"),
        "model_arg": a.get(_S_MODEL),
        "quantization": a.get("--quantization"),
        "encoder_urls": a.values("--encoder-urls"),
        "prefill_urls": [],
        "decode_urls": [],
    })
    return m


def _dist_init_port(a, path):
    """The port of SGLang's ``--dist-init-addr HOST:PORT`` (``[v6]:PORT``), or the default."""
    raw = a.get("--dist-init-addr")
    if raw is None:
        return SGLANG_DEFAULT_DIST_INIT_PORT
    host, sep, port = raw.rpartition(":")
    where, written = a.where("--dist-init-addr", path)
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise RecipeError(where, "%s expects HOST:PORT (a TCP port from 1 to 65535; IPv6 as [ADDR]:PORT), "
                          "found %r" % (written, raw))
    return int(port)


def _router(a, path):
    prefill = []
    for start, vals in a.occurrences("--prefill"):
        if not vals:
            raise RecipeError("%s[%d]" % (path, start), "--prefill expects URL [BOOTSTRAP_PORT]")
        port = vals[1] if len(vals) > 1 else None
        prefill.append({"url": vals[0], "bootstrap_port": port})
    return {
        "role": "router",
        "tensor_parallel_size": 0,
        "pipeline_parallel_size": 0,
        "data_parallel_size": 0,
        "nnodes": 1,
        "node_rank": 0,
        "gpus": 0,
        "gpus_total": 0,
        "port": a.get_port("--port", ROUTER_DEFAULT_PORT, path),
        "bind_host": a.get("--host", DEFAULT_BIND["router"]),
        "pd_disaggregation": a.has("--pd-disaggregation"),
        "bootstrap_port": None,
        "base_gpu_id": None,
        "transfer_backend": None,
        "encoder_urls": [],
        "prefill_urls": prefill,
        "decode_urls": [v[0] for v in a.groups("--decode") if v],
        "worker_urls": a.values("--worker-urls"),
        "prometheus_port": a.get_port("--prometheus-port", ROUTER_DEFAULT_PROMETHEUS_PORT, path),
        "worker_startup_timeout_s": a.get_int(ROUTER_STARTUP_FLAG, None, path),
        "served_model_name": None,
        "model_arg": a.get("--model-path"),
        "quantization": None,
    }


_SLUG = re.compile(r"[^a-z0-9.]+")


def slug(text):
    """Lower-case ``text`` into ``[a-z0-9.-]`` for unit and recipe names."""
    return _SLUG.sub("-", text.lower()).strip("-.") or "x"


def current_name(name):
    """The recipe name ``name`` is in this release, when it uses a former role
    name (``vllm-monolithic`` -> ``vllm-aggregated``, ``sglang-monolithic-3``
    -> ``sglang-aggregated-3``); None when it does not."""
    m = _RECIPE_NAME.match(name) if isinstance(name, str) else None
    if not m or m.group("role") not in FORMER_ROLES:
        return None
    return "%s-%s%s" % (m.group("engine"), FORMER_ROLES[m.group("role")], m.group("index") or "")


def name_recipes(recipes):
    """Give each recipe model a stable ``name``: ``<engine>-<role>``.

    When two recipes of a card share engine and role, each of them gets its
    index appended (``sglang-aggregated-3``), so names stay unique.
    Mutates and returns ``recipes``.
    """
    counts = {}
    for r in recipes:
        key = "%s-%s" % (r["engine"], r["role"])
        counts[key] = counts.get(key, 0) + 1
    for r in recipes:
        key = "%s-%s" % (r["engine"], r["role"])
        r["name"] = key if counts[key] == 1 else "%s-%d" % (key, r["index"])
    return recipes
