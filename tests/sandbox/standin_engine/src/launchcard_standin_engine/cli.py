"""TEST CODE: command-line handling for the stand-in ``vllm`` / ``sglang``.

The stand-in accepts the real engines' full command lines and reads only the
options that change what a client can observe (model name, host, port and
the SGLang roles). The SGLang stand-in parses its argv with the pinned SGLang
release's own parser (rebuilt from its flag table, sglang_args.py) and refuses
what SGLang refuses; the vLLM stand-in ignores every option it does not read.
"""

import os
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from launchcard_standin_engine import STANDIN_VERSION

# option -> kind: "value" (one value), "multi" (one or more values), "bool"
VLLM_OPTIONS: Dict[str, str] = {
    "--model": "value",
    "--revision": "value",
    "--tokenizer": "value",
    "--tokenizer-revision": "value",
    "--host": "value",
    "--port": "value",
    "--served-model-name": "multi",
    "--tensor-parallel-size": "value",
    "-tp": "value",
    # vllm/engine/arg_utils.py (0.32.0): --shutdown-timeout, type=int, default 0 ("0 = abort, >0 = wait")
    "--shutdown-timeout": "value",
}


class UsageError(Exception):
    pass


@dataclass
class ServerConfig:
    engine: str  # "vllm" | "sglang"
    model: str
    served_model_names: List[str]
    host: str
    port: int
    role: str = "aggregated"  # aggregated | prefill | decode | encoder | language
    tp_size: int = 1
    bootstrap_port: Optional[int] = None  # prefill only
    encoder_urls: List[str] = field(default_factory=list)  # language only
    argv: List[str] = field(default_factory=list)
    revision: Optional[str] = None  # --revision (None: the Hub's "main")
    # (name, revision) of what else the engine resolves at start (vLLM: --tokenizer, --tokenizer-revision)
    also_resolves: List[tuple] = field(default_factory=list)
    download_dir: Optional[str] = None  # SGLang's --download-dir (the Hub cache dir)
    snapshot: Optional[str] = None  # the directory the model resolved to
    shutdown_timeout: int = 0  # vLLM: seconds to finish in-flight requests after SIGTERM (0: abort them)
    enable_metrics: bool = False  # SGLang: serve /metrics


def _scan(tokens: List[str], spec: Dict[str, str]):
    """Return ({option: value or [values] or True}, [positionals]).

    Unknown ``--flag`` options are skipped together with the non-option
    tokens that follow them (their values); ``--flag=value`` is one token.
    """
    found: Dict[str, object] = {}
    positionals: List[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("-") and len(tok) > 1 and not _is_number(tok):
            name, eq, inline = tok.partition("=")
            kind = spec.get(name)
            if kind is None:
                i += 1
                if not eq:
                    while i < len(tokens) and not _is_option(tokens[i]):
                        i += 1
                continue
            if kind == "bool":
                found[name] = True if not eq else inline.lower() not in ("0", "false", "no")
                i += 1
            elif kind == "value":
                if eq:
                    found[name] = inline
                    i += 1
                else:
                    if i + 1 >= len(tokens):
                        raise UsageError(f"argument {name}: expected one argument")
                    found[name] = tokens[i + 1]
                    i += 2
            else:  # multi
                values = [inline] if eq else []
                i += 1
                while i < len(tokens) and not _is_option(tokens[i]):
                    values.append(tokens[i])
                    i += 1
                if not values:
                    raise UsageError(f"argument {name}: expected at least one argument")
                found[name] = values
        else:
            positionals.append(tok)
            i += 1
    return found, positionals


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def _is_option(tok: str) -> bool:
    return tok.startswith("-") and len(tok) > 1 and not _is_number(tok)


def _port(value, name: str) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"argument {name}: invalid int value: {value!r}")
    if not 0 < port < 65536:
        raise UsageError(f"argument {name}: port out of range: {port}")
    return port


def parse_vllm(argv: List[str]) -> ServerConfig:
    """``vllm serve MODEL [options]`` (or ``vllm serve --model MODEL``)."""
    if not argv or argv[0] != "serve":
        raise UsageError("usage: vllm serve MODEL [--host HOST] [--port PORT] ... (stand-in supports 'serve' only)")
    rest = argv[1:]
    model = None
    if rest and not _is_option(rest[0]):
        model, rest = rest[0], rest[1:]
    found = _scan(rest, VLLM_OPTIONS)[0]
    model = model or found.get("--model")
    if not model:
        raise UsageError("vllm serve: a model is required (vllm serve MODEL)")
    names = found.get("--served-model-name") or [model]
    tp = found.get("--tensor-parallel-size") or found.get("-tp") or 1
    try:
        shutdown_timeout = int(found.get("--shutdown-timeout", 0))
    except (TypeError, ValueError):
        raise UsageError(f"argument --shutdown-timeout: invalid int value: {found.get('--shutdown-timeout')!r}")
    if shutdown_timeout < 0:
        # vllm/config/vllm.py (0.32.0): shutdown_timeout is a Field(ge=0)
        raise UsageError(f"shutdown_timeout: Input should be greater than or equal to 0 (got {shutdown_timeout})")
    return ServerConfig(
        engine="vllm",
        model=model,
        served_model_names=list(names),
        host=found.get("--host") or "0.0.0.0",
        port=_port(found.get("--port", 8000), "--port"),
        tp_size=int(tp),
        argv=["vllm"] + argv,
        revision=found.get("--revision"),
        also_resolves=([(found["--tokenizer"], found.get("--tokenizer-revision"))]
                       if found.get("--tokenizer") else []),
        shutdown_timeout=shutdown_timeout,
    )


def _sglang_main_parser():
    """``sglang``'s own top-level parser (sglang/cli/main.py: subcommands serve, generate, version; required)."""
    import argparse

    parser = argparse.ArgumentParser(prog="sglang")
    sub = parser.add_subparsers(dest="subcommand", required=True)
    sub.add_parser("serve", help="Launch an SGLang server.", add_help=False)
    sub.add_parser("generate", help="Run inference on a multimodal model.", add_help=False)
    sub.add_parser("version", help="Show the version information.")
    return parser


def parse_sglang(argv: List[str], subcommand: bool = True) -> ServerConfig:
    """``sglang serve [MODEL] [options]`` (or, with ``subcommand=False``, ``python -m sglang.launch_server``'s
    argv), parsed by the pinned SGLang release's own parser rebuilt from its flag table (sglang_args.py):
    an unknown flag, a bad choice or a missing value exits 2 with argparse's message, as SGLang does."""
    from launchcard_standin_engine import sglang_args

    rest = list(argv)
    if subcommand:
        # sglang/cli/main.py: parse_known_args, then serve() gets the rest
        args, rest = _sglang_main_parser().parse_known_args(rest)
        if args.subcommand != "serve":
            raise UsageError(f"stand-in: 'sglang {args.subcommand}' is not imitated (only 'sglang serve')")
        rest = sglang_args.serve_argv(rest)
    ns = sglang_args.parse(rest)
    model = ns.model_path
    mode = ns.disaggregation_mode
    encoder_only = bool(ns.encoder_only)
    language_only = bool(ns.language_only)
    if encoder_only and language_only:
        raise UsageError("--encoder-only and --language-only are mutually exclusive")
    if mode != "null" and (encoder_only or language_only):
        raise UsageError("stand-in: --disaggregation-mode cannot be combined with --encoder-only/--language-only")
    role = "aggregated"
    if mode != "null":
        role = mode
    elif encoder_only:
        role = "encoder"
    elif language_only:
        role = "language"
    return ServerConfig(
        engine="sglang",
        model=model,
        served_model_names=[ns.served_model_name or model],
        host=ns.host,
        port=_port(ns.port, "--port"),
        role=role,
        tp_size=ns.tp_size,
        bootstrap_port=(_port(ns.disaggregation_bootstrap_port, "--disaggregation-bootstrap-port")
                        if role == "prefill" else None),
        encoder_urls=list(ns.encoder_urls or []) if role == "language" else [],
        argv=["sglang"] + list(argv),
        revision=ns.revision,
        download_dir=ns.download_dir,
        enable_metrics=bool(ns.enable_metrics),
    )


def resolve_sglang_model(config: ServerConfig) -> Optional[str]:
    """The weights directory SGLang would load for ``--model-path``, found as its loader finds it
    (sglang/srt/model_loader/weight_utils.py download_weights_from_hf): a local directory is used as it is;
    a repo id goes to ``snapshot_download(repo, revision=--revision, cache_dir=--download-dir,
    local_files_only=HF_HUB_OFFLINE)``, where no ``--revision`` means the Hub's ``main`` ref (refs/main).

    Offline (``HF_HUB_OFFLINE``, as the units set it) a snapshot that is not in the cache fails start-up with
    huggingface_hub's ``LocalEntryNotFoundError``, as the real SGLang does. Online the stand-in downloads
    nothing: it returns None.
    """
    if os.path.isdir(config.model):
        return os.path.abspath(config.model)
    from huggingface_hub import constants, snapshot_download

    if not constants.HF_HUB_OFFLINE:
        return None
    return snapshot_download(config.model, revision=config.revision, cache_dir=config.download_dir,
                             local_files_only=True)


def _run(engine: str, argv: List[str], subcommand: bool = True) -> int:
    if argv and argv[0] in ("--version", "-v", "version"):
        print(f"{STANDIN_VERSION} (launchcard sandbox stand-in {engine}; TEST CODE, not the real engine)")
        return 0
    try:
        config = parse_vllm(argv) if engine == "vllm" else parse_sglang(argv, subcommand=subcommand)
    except UsageError as exc:
        print(f"{engine} (launchcard stand-in): error: {exc}", file=sys.stderr)
        return 2
    from launchcard_standin_engine import weights

    if engine == "sglang":
        try:
            config.snapshot = resolve_sglang_model(config)
        except Exception as exc:  # noqa: BLE001  (SGLang dies with the loader's error; so does the stand-in)
            print(f"{type(exc).__module__}.{type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
    else:
        try:
            # before the port opens, as vLLM resolves it (see weights.py)
            config.snapshot = weights.resolve(config.model, config.revision)
            for name, revision in config.also_resolves:
                weights.resolve(name, revision)
        except weights.ModelNotFound as exc:
            print(f"{engine} (launchcard stand-in): error: {exc}", file=sys.stderr)
            return 1
    from launchcard_standin_engine.lifecycle import serve

    return serve(config)


def vllm_main() -> int:
    return _run("vllm", sys.argv[1:])


def sglang_main() -> int:
    return _run("sglang", sys.argv[1:])


def sglang_launch_server_main() -> int:
    """``python -m sglang.launch_server ARGS``: the server parser without a subcommand (sglang/launch_server.py)."""
    return _run("sglang", sys.argv[1:], subcommand=False)


def main(argv: List[str]) -> int:
    if not argv or argv[0] not in ("vllm", "sglang"):
        print("usage: python -m launchcard_standin_engine {vllm|sglang} ARGS...", file=sys.stderr)
        return 2
    return _run(argv[0], argv[1:])
