"""TEST CODE: the pinned SGLang release's server parser, rebuilt from its flag table.

``sglang_flags.json`` is generated from the real ``ServerArgs.add_cli_args`` when the sandbox is built
(tests/sandbox/sandbox_fleet/sglang_env.py); the parser built here has the same option strings, in the same order,
with the same nargs, choices, defaults and required options, so argparse accepts, abbreviates and refuses an argv
as SGLang's own parser does (exit 2, argparse's message). Values of SGLang's own type functions (json, sizes) are
kept as strings: only ``int``/``float`` values are converted and checked.
"""

import argparse
import json
import os
from typing import List

TABLE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sglang_flags.json")
_TYPES = {"str": str, "int": int, "float": float}


def load_table(path: str = TABLE_PATH) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _named_str(name: str):
    """A pass-through type function called ``name``: argparse names the type in its messages."""
    def convert(value):
        return value
    convert.__name__ = name
    return convert


def add_cli_args(parser: argparse.ArgumentParser, table: dict = None) -> None:
    """Add the table's options to ``parser`` (what ``ServerArgs.add_cli_args`` does in the real release)."""
    table = table or load_table()
    for act in table["actions"]:
        kind = act["kind"]
        if kind == "help":
            continue  # argparse.ArgumentParser adds -h/--help itself
        kw = {"dest": act["dest"], "default": act["default"]}
        if act.get("hidden"):
            kw["help"] = argparse.SUPPRESS
        if act["required"]:
            kw["required"] = True
        if kind in ("store", "append", "custom:LoRAPathAction"):
            kw["action"] = "append" if kind == "append" else "store"
            if act["nargs"] is not None:
                kw["nargs"] = act["nargs"]
            if act["choices"] is not None:
                kw["choices"] = act["choices"]
            if act["type"]:
                kw["type"] = _TYPES.get(act["type"]) or _named_str(act["type"])
            if act["metavar"] is not None:
                kw["metavar"] = tuple(act["metavar"]) if isinstance(act["metavar"], list) else act["metavar"]
            if act["const"] is not None and act["nargs"] == "?":
                kw["const"] = act["const"]
        elif kind in ("store_true", "store_false", "count"):
            kw["action"] = kind
        elif kind == "boolean_optional":
            kw["action"] = argparse.BooleanOptionalAction
        elif kind == "store_const" or (kind.startswith("custom:") and not act["takes_value"]):
            kw.update(action="store_const", const=act["const"])
        elif kind.startswith("custom:"):  # a custom action that takes values: store them as given
            kw["action"] = "store"
            if act["nargs"] is not None:
                kw["nargs"] = act["nargs"]
            if act["choices"] is not None:
                kw["choices"] = act["choices"]
        else:
            raise ValueError(f"sglang flag table: unknown action kind {kind!r} for {act['options']}")
        options = act["options"]
        if kind == "boolean_optional":
            # BooleanOptionalAction adds the --no- spelling itself: give it only the positive ones
            options = [o for o in options if not o.startswith("--no-")]
        parser.add_argument(*options, **kw)


def make_parser(table: dict = None) -> argparse.ArgumentParser:
    """``sglang serve``'s parser (sglang/srt/server_args.py prepare_server_args: prog="sglang serve")."""
    table = table or load_table()
    parser = argparse.ArgumentParser(prog=table.get("prog", "sglang serve"),
                                     allow_abbrev=table.get("allow_abbrev", True))
    add_cli_args(parser, table)
    return parser


def serve_argv(argv: List[str]) -> List[str]:
    """What ``sglang serve`` hands its server parser (sglang/cli/serve.py): a leading positional becomes
    ``--model-path`` (_normalize_positional_model_path) and ``--model-type`` is taken out (_extract_model_type_override)."""
    argv = list(argv)
    if argv and not argv[0].startswith("-"):
        argv = ["--model-path"] + argv
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--model-type":
            i += 2
            continue
        if argv[i].startswith("--model-type="):
            i += 1
            continue
        out.append(argv[i])
        i += 1
    return out


def parse(argv: List[str]) -> argparse.Namespace:
    """Parse a server argv as SGLang does; on a bad one argparse prints usage and message and exits 2."""
    return make_parser().parse_args(argv)
