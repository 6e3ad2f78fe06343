"""TEST CODE: command-line handling for the stand-in ``vllm`` / ``sglang``.

The stand-in accepts the real engines' full command lines and reads only the
options that change what a client can observe (model name, host, port and
the SGLang roles). Every other option, with its value(s), is ignored, so a
recipe copied from a launch card runs unchanged.
"""

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
}

SGLANG_OPTIONS: Dict[str, str] = {
    "--model-path": "value",
    "--model": "value",
    "--revision": "value",
    "--host": "value",
    "--port": "value",
    "--served-model-name": "value",
    "--tp-size": "value",
    "--tensor-parallel-size": "value",
    "--tp": "value",
    "--disaggregation-mode": "value",
    "--disaggregation-bootstrap-port": "value",
    "--encoder-only": "bool",
    "--language-only": "bool",
    "--encoder-urls": "multi",
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
    revision: Optional[str] = None  # --revision
    # (name, revision) of what else the engine resolves at start (vLLM: --tokenizer, --tokenizer-revision)
    also_resolves: List[tuple] = field(default_factory=list)
    snapshot: Optional[str] = None  # the directory the model resolved to (weights.resolve)


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
    )


def parse_sglang(argv: List[str]) -> ServerConfig:
    """``sglang serve --model-path M [options]`` (``serve`` may be omitted)."""
    rest = argv[1:] if argv and argv[0] == "serve" else list(argv)
    found = _scan(rest, SGLANG_OPTIONS)[0]
    model = found.get("--model-path") or found.get("--model")
    if not model:
        raise UsageError("sglang serve: the following arguments are required: --model-path")
    mode = str(found.get("--disaggregation-mode") or "null").lower()
    if mode not in ("null", "prefill", "decode"):
        raise UsageError(f"argument --disaggregation-mode: invalid choice: {mode!r} (choose from 'null', 'prefill', 'decode')")
    encoder_only = bool(found.get("--encoder-only"))
    language_only = bool(found.get("--language-only"))
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
    tp = found.get("--tp-size") or found.get("--tensor-parallel-size") or found.get("--tp") or 1
    served = found.get("--served-model-name") or model
    return ServerConfig(
        engine="sglang",
        model=model,
        served_model_names=[served],
        host=found.get("--host") or "127.0.0.1",
        port=_port(found.get("--port", 30000), "--port"),
        role=role,
        tp_size=int(tp),
        bootstrap_port=(
            _port(found.get("--disaggregation-bootstrap-port", 8998), "--disaggregation-bootstrap-port")
            if role == "prefill"
            else None
        ),
        encoder_urls=list(found.get("--encoder-urls") or []) if role == "language" else [],
        argv=["sglang"] + argv,
        revision=found.get("--revision"),
    )


def _run(engine: str, argv: List[str]) -> int:
    if argv and argv[0] in ("--version", "-v", "version"):
        print(f"{STANDIN_VERSION} (launchcard sandbox stand-in {engine}; TEST CODE, not the real engine)")
        return 0
    try:
        config = parse_vllm(argv) if engine == "vllm" else parse_sglang(argv)
    except UsageError as exc:
        print(f"{engine} (launchcard stand-in): error: {exc}", file=sys.stderr)
        return 2
    from launchcard_standin_engine import weights

    try:
        # before the port opens, as the engines resolve it (see weights.py)
        config.snapshot = weights.resolve(config.model, config.revision)
        for name, revision in config.also_resolves:
            weights.resolve(name, revision)
    except weights.ModelNotFound as exc:
        print(f"{engine} (launchcard stand-in): error: {exc}", file=sys.stderr)
        return 1
    from launchcard_standin_engine.server import serve

    return serve(config)


def vllm_main() -> int:
    return _run("vllm", sys.argv[1:])


def sglang_main() -> int:
    return _run("sglang", sys.argv[1:])


def main(argv: List[str]) -> int:
    if not argv or argv[0] not in ("vllm", "sglang"):
        print("usage: python -m launchcard_standin_engine {vllm|sglang} ARGS...", file=sys.stderr)
        return 2
    return _run(argv[0], argv[1:])
