# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A recipe's argv checked by the engine's own argument parser, where the engine is installed (pure Python).

A small parse-only program runs with the Python of the engine's image (``podman|docker run --rm --entrypoint
python3 IMAGE@digest -c PROGRAM ...``) or of the native virtualenv: it builds the parser the engine's server
builds, parses the recipe's argv and prints one JSON line. Nothing is started and no model is read.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import json
import re
import shlex

# The line the program prints its verdict on (an engine's import may log to stdout before it).
MARKER = "LAUNCHCARD_ARGV_CHECK "

# The parse-only program: argv[1] the engine (vllm | sglang), argv[2] the tokens its server parser reads (JSON).
PROGRAM = r'''
import argparse, contextlib, difflib, io, json, sys
engine, tokens = sys.argv[1], json.loads(sys.argv[2])
def build():
    if engine == "sglang":
        # sglang/srt/server_args.py prepare_server_args: ArgumentParser(prog="sglang serve") + ServerArgs.add_cli_args
        from sglang.srt.server_args import ServerArgs
        parser = argparse.ArgumentParser(prog="sglang serve")
        ServerArgs.add_cli_args(parser)
        return parser
    try:
        # vllm 0.32: vllm/entrypoints/cli/serve.py subparser_init calls make_arg_parser from here
        from vllm.entrypoints.launchers.cli_args import make_arg_parser
    except ImportError:
        from vllm.entrypoints.openai.cli_args import make_arg_parser
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    return make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
out = {"engine": engine}
try:
    with contextlib.redirect_stdout(sys.stderr):
        parser = build()
        try:
            out["version"] = __import__(engine).__version__
        except Exception:
            out["version"] = None
except Exception as exc:
    out.update(status="unavailable", message="%s: %s" % (type(exc).__name__, exc))
else:
    err, code = io.StringIO(), 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
        try:
            parser.parse_args(tokens)
        except SystemExit as exc:
            code = exc.code
    known = sorted(parser._option_string_actions)
    unknown = [t.split("=", 1)[0] for t in tokens if t.startswith("--")]
    unknown = [t for t in unknown if t not in known and t.replace("_", "-") not in known]
    out.update(status="ok" if code == 0 else "rejected", code=code,
               message=([l for l in err.getvalue().splitlines() if ": error: " in l] or [""])[-1],
               near=dict((t, difflib.get_close_matches(t, known, n=3, cutoff=0.6)) for t in unknown))
print("LAUNCHCARD_ARGV_CHECK " + json.dumps(out, sort_keys=True))
'''

ENGINES = ("vllm", "sglang")
# argparse's own messages (Lib/argparse.py): an unknown option; an option's bad value; a missing value
_UNRECOGNIZED = re.compile(r"unrecognized arguments: (.+)$")
_ARGUMENT = re.compile(r"argument ([^:]+): (.+)$")
# argparse 3.14 with suggest_on_error: "invalid choice: 'x', maybe you meant 'y'?"
_MAYBE = re.compile(r"maybe you meant '([^']+)'")
# argparse: "invalid choice: 'glm47' (choose from 'auto', 'glm45', ...)"
_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")
# argparse: a value its option refuses, "invalid choice: %(value)r" (_check_value) or "invalid %(type)s value:
# %(value)r" (_get_value); a value holding a single quote is repr'd in double quotes, and not matched
_BAD_VALUE = re.compile(r"argument [^:]+: invalid (?:choice|[\w ]+ value): '([^']*)'")


def bad_value(message):
    """The value an engine's parser refused for its option, as the argv holds it, or None (an unknown option, a
    missing value, a value quoted otherwise)."""
    m = _BAD_VALUE.search(message or "")
    return m.group(1) if m else None


def parser_tokens(launcher, argv):
    """The tokens of ``argv`` the engine's server parser reads: after ``vllm serve`` / ``sglang serve`` or
    ``python -m MODULE``. ``sglang serve`` hands a leading model path over as ``--model-path``
    (sglang/cli/serve.py _normalize_positional_model_path) and takes ``--model-type`` out (_extract_model_type_override).
    """
    argv = list(argv)
    exe = argv[0].rsplit("/", 1)[-1] if argv else ""
    if exe.startswith("python") and len(argv) > 2 and argv[1] == "-m":
        return argv[3:]
    rest = argv[2:] if len(argv) > 1 and argv[1] == "serve" else argv[1:]
    if launcher != "sglang":
        return rest
    if rest and not rest[0].startswith("-"):
        rest = ["--model-path"] + rest
    out, i = [], 0
    while i < len(rest):
        if rest[i] == "--model-type":
            i += 2
            continue
        if not rest[i].startswith("--model-type="):
            out.append(rest[i])
        i += 1
    return out


def check_command(engine, tokens, runtime, image=None, container_engine="podman", python="python3", run_args=()):
    """The command that runs the parse-only program: in ``image`` (pinned by digest, not pulled: the host must
    hold it; no network; ``run_args``: the run options the host's units carry, such as podman's ``--cgroups``) for
    the container runtime, else with the native virtualenv's ``python``."""
    if engine not in ENGINES:
        raise ValueError("engine must be one of %s, got %r" % (", ".join(ENGINES), engine))
    program = ["-c", PROGRAM, engine, json.dumps(list(tokens))]
    if runtime == "native":
        return [python] + program
    if not image:
        raise ValueError("a container runtime needs the recipe's image")
    # podman-run(1), docker run: --pull never uses only a local image; --network none: the parser needs none
    return ([container_engine, "run", "--rm", "--pull", "never", "--network", "none"] + list(run_args or [])
            + ["--entrypoint", "python3", image] + program)


def interpret(rc, stdout, stderr):
    """The program's verdict as a dict: status ``ok`` | ``rejected`` | ``unavailable`` (the engine's parser could
    not be built or the program did not run), ``message`` (the engine's own), ``flag`` and ``near`` (for a
    rejected argv: the flag named, and its near spellings: the engine's own suggestion when it offers one, else
    the closest option strings of its parser)."""
    line = None
    for candidate in (stdout or "").splitlines():
        if candidate.startswith(MARKER):
            line = candidate[len(MARKER):]
    if line is None:
        tail = ((stderr or "") + (stdout or "")).strip().splitlines()[-3:]
        return {"status": "unavailable", "message": "the parse-only program printed no verdict (rc %s): %s"
                % (rc, " | ".join(tail) or "no output"), "flag": None, "near": []}
    try:
        out = json.loads(line)
    except ValueError:
        return {"status": "unavailable", "message": "unreadable verdict: %s" % line[:200], "flag": None, "near": []}
    result = {"status": out.get("status"), "message": out.get("message") or "", "flag": None, "near": [],
              "version": out.get("version")}
    if result["status"] != "rejected":
        return result
    message = result["message"].split(": error: ", 1)[-1]
    near_by_flag = out.get("near") or {}
    m = _UNRECOGNIZED.search(message)
    if m:
        listed = m.group(1)
        # the message joins the words with spaces; the program's own unknown words keep one that holds a space whole
        # (argparse takes a word with a space for a positional: Lib/argparse.py _parse_optional)
        words = [w for w in near_by_flag if listed.find(w) >= 0]
        result["flag"] = min(words, key=listed.find) if words else listed.split()[0].split("=", 1)[0]
    else:
        m = _ARGUMENT.search(message)
        if m:
            result["flag"] = m.group(1).split("/")[0]
    offered = _MAYBE.findall(message)
    choice = _CHOICE.search(message)
    if offered:
        result["near"] = offered
    elif choice:
        # a bad value: the closest of the choices the engine's message lists
        result["near"] = difflib.get_close_matches(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)),
                                                   n=3, cutoff=0.6)
    else:
        result["near"] = list(near_by_flag.get(result["flag"] or "", []))
    return result


def refusal(recipe, result, field=None):
    """One line naming the recipe (and the card field, e.g. ``envs[4].argv[6]``), the flag, the engine's message
    and the near spelling."""
    label = result.get("engine_label") or "the engine"
    # quoted only when it is not one plain word (an element with spaces or ';' reads apart from the message)
    flag = shlex.quote(result["flag"]) if result.get("flag") else "its argv"
    text = "recipe %s%s: %s rejects %s: %s" % (recipe, " (%s)" % field if field else "", label, flag, result.get("message"))
    if result.get("near"):
        text += " (did you mean %s?)" % " or ".join(result["near"])
    return text


# docker keys Docker Hub's credentials by its index address (moby registry/config.go: IndexServer)
DOCKER_HUB_INDEX = "https://index.docker.io/v1/"


def exists_command(container_engine, image):
    """Whether the engine's store holds ``image``: ``podman image exists`` (rc 0/1), ``docker image inspect``."""
    if container_engine == "podman":
        return ["podman", "image", "exists", image]
    return ["docker", "image", "inspect", "--format", "{{.Id}}", image]


def pull_command(container_engine, image, config_dir=None, auth_file=None):
    """The pull of ``image`` (by digest) for a check: podman with ``--authfile`` (containers-auth.json(5)); docker
    with ``--config DIR`` (its config.json holds the same ``auths``). Credentials only ever in those files."""
    if container_engine == "podman":
        return ["podman", "pull", "--quiet"] + (["--authfile", auth_file] if auth_file else []) + [image]
    return ["docker"] + (["--config", config_dir] if config_dir else []) + ["pull", "--quiet", image]


def remove_command(container_engine, image):
    """The removal of an image a check pulled and the engine rejected (podman-rmi(1), docker image rm)."""
    return [container_engine if container_engine in ("podman", "docker") else "docker", "rmi", image]


def docker_auths(auths):
    """The ``auths`` of a containers-auth.json(5) document as docker's CLI looks them up: Docker Hub's entry also
    under its index address."""
    auths = dict((auths or {}).get("auths") or {})
    for hub in ("docker.io", "index.docker.io", "registry-1.docker.io"):
        if hub in auths and DOCKER_HUB_INDEX not in auths:
            auths[DOCKER_HUB_INDEX] = auths[hub]
    return {"auths": auths}
