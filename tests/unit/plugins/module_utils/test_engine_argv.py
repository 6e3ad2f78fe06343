# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A recipe's argv checked by the engine's own parser (module_utils._engine_argv): the parse-only program, run
here against the stand-in's SGLang parser (generated from SGLang 0.5.23's); tests/sandbox/test_engine_parsers.py runs
it against the real SGLang 0.5.23 and vLLM 0.32 parsers, building their environments when the cache lacks them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils import _engine_argv as ea

ROOT = Path(__file__).resolve().parents[4]
STANDIN_SRC = ROOT / "tests" / "sandbox" / "standin_engine" / "src"
CARD = json.loads((ROOT / "cards" / "glm-5.3-flash.json").read_text())


def _run(cmd, env=None):
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False,
                         env=dict(os.environ, **(env or {})))
    return ea.interpret(res.returncode, res.stdout, res.stderr)


def test_parser_tokens_follow_each_launcher():
    assert ea.parser_tokens("vllm", ["vllm", "serve", "m", "--tp", "2"]) == ["m", "--tp", "2"]
    assert ea.parser_tokens("sglang", ["sglang", "serve", "m", "--model-type", "llm", "--tp-size", "2"]) == [
        "--model-path", "m", "--tp-size", "2"]
    assert ea.parser_tokens("sglang", ["python3", "-m", "sglang.launch_server", "--model-path", "m"]) == [
        "--model-path", "m"]
    assert ea.parser_tokens("sglang", ["sglang", "serve", "--model-type=llm", "--model-path", "m"]) == [
        "--model-path", "m"]


def test_check_command_runs_in_the_pinned_image_without_pulling_or_network():
    cmd = ea.check_command("sglang", ["--model-path", "m"], "podman", image="r/sglang@sha256:" + "a" * 64)
    assert cmd[:9] == ["podman", "run", "--rm", "--pull", "never", "--network", "none", "--entrypoint", "python3"]
    assert cmd[9] == "r/sglang@sha256:" + "a" * 64 and cmd[10] == "-c" and cmd[-2:] == ["sglang", '["--model-path", "m"]']
    assert ea.check_command("vllm", ["m"], "native", python="/opt/v/bin/python")[0] == "/opt/v/bin/python"
    with pytest.raises(ValueError, match="engine"):
        ea.check_command("trtllm", [], "native")
    with pytest.raises(ValueError, match="image"):
        ea.check_command("vllm", [], "docker")


@pytest.mark.parametrize("stdout, want", [
    ("noise\n" + ea.MARKER + json.dumps({
        "status": "rejected", "code": 2, "near": {"--enable-metrcs": ["--enable-metrics"]},
        "message": "sglang serve: error: unrecognized arguments: --enable-metrcs"}),
     {"status": "rejected", "flag": "--enable-metrcs", "near": ["--enable-metrics"]}),
    (ea.MARKER + json.dumps({"status": "rejected", "code": 2, "near": {}, "message":
                             "sglang serve: error: argument --reasoning-parser: invalid choice: 'glm47' "
                             "(choose from 'auto', 'glm45', 'qwen3')"}),
     {"status": "rejected", "flag": "--reasoning-parser", "near": ["glm45"]}),
    (ea.MARKER + json.dumps({"status": "rejected", "code": 2, "near": {}, "message":
                             "vllm serve: error: argument --tokenizer-mode: invalid choice: 'x', maybe you meant "
                             "'auto'? (choose from auto, slow)"}),
     {"status": "rejected", "flag": "--tokenizer-mode", "near": ["auto"]}),
    (ea.MARKER + json.dumps({"status": "ok", "code": 0, "near": {}, "message": ""}),
     {"status": "ok", "flag": None, "near": []}),
    ("Traceback...", {"status": "unavailable", "flag": None, "near": []}),
])
def test_interpret_names_the_flag_and_its_near_spelling(stdout, want):
    got = ea.interpret(2, stdout, "")
    assert {k: got[k] for k in want} == want


def test_refusal_names_recipe_flag_message_and_near_spelling():
    line = ea.refusal("glm-vllm", {"engine_label": "vLLM 0.32.0", "flag": "--disable-flashinfer-autotune",
                                   "message": "vllm serve: error: unrecognized arguments: --disable-flashinfer-autotune",
                                   "near": ["--no-enable-flashinfer-autotune"]})
    assert line == ("recipe glm-vllm: vLLM 0.32.0 rejects --disable-flashinfer-autotune: vllm serve: error: "
                    "unrecognized arguments: --disable-flashinfer-autotune (did you mean --no-enable-flashinfer-autotune?)")


def test_a_flag_that_is_not_one_word_is_quoted_apart_from_the_engine_s_message():
    # a fresh user's hostile card: one argv element with a space and ';' (walkthrough, 2026-12-05)
    line = ea.refusal("vllm-aggregated", {"engine_label": "vLLM 0.32.0", "flag": "--model-path; rm -rf /",
                                          "message": "vllm serve: error: unrecognized arguments: --model-path; rm -rf /"},
                      "envs[0].argv[13]")
    assert line == ("recipe vllm-aggregated (envs[0].argv[13]): vLLM 0.32.0 rejects '--model-path; rm -rf /': vllm serve: "
                    "error: unrecognized arguments: --model-path; rm -rf /")
    assert ea.refusal("r", {"message": "m"}) == "recipe r: the engine rejects its argv: m"


def test_the_standin_sglang_answers_the_program():
    """The sandbox's stand-in SGLang image provides sglang.srt.server_args from its generated flag table: the
    program gets the same verdicts from it as from the real SGLang 0.5.23 (test below)."""
    env = {"PYTHONPATH": str(STANDIN_SRC)}
    bad = _run(ea.check_command("sglang", ea.parser_tokens("sglang", [
        "sglang", "serve", "--model-path", "m", "--reasoning-parser", "glm47"]), "native", python=sys.executable), env)
    assert (bad["status"], bad["flag"], bad["near"]) == ("rejected", "--reasoning-parser", ["glm45"])
    assert bad["message"].startswith("sglang serve: error: argument --reasoning-parser: invalid choice: 'glm47'")
    typo = _run(ea.check_command("sglang", ["--model-path", "m", "--enable-metrcs"], "native",
                                 python=sys.executable), env)
    assert (typo["flag"], typo["near"][0]) == ("--enable-metrcs", "--enable-metrics")
    # one argv word that holds a flag and its value: named whole, so the refusal finds its envs[i].argv[j]
    joined = _run(ea.check_command("sglang", ["--model-path", "m", "--enable-metrics", "--tp-size 2"], "native",
                                   python=sys.executable), env)
    assert joined["message"].endswith("unrecognized arguments: --tp-size 2"), joined
    assert (joined["status"], joined["flag"], joined["near"][:1]) == ("rejected", "--tp-size 2", ["--tp-size"])
    for recipe in CARD["envs"]:
        if recipe["command"].startswith("sglang serve"):
            ok = _run(ea.check_command("sglang", ea.parser_tokens("sglang", recipe["command"].split()), "native",
                                       python=sys.executable), env)
            assert ok["status"] == "ok", (recipe["command"], ok)


def test_the_module_runs_each_check_it_is_given(monkeypatch):
    from ansible_collections.launchcard.inference.plugins.modules import engine_argv

    monkeypatch.setenv("PYTHONPATH", str(STANDIN_SRC))
    res = engine_argv.run_check({"engine": "sglang", "tokens": ["--model-path", "m", "--tp-sise", "2"],
                                 "runtime": "native", "python": sys.executable}, timeout=120)
    assert (res["status"], res["flag"], res["near"][:1]) == ("rejected", "--tp-sise", ["--tp-size"])
    res = engine_argv.run_check({"engine": "sglang", "tokens": [], "runtime": "podman", "image": None}, 10)
    assert res["status"] == "unavailable" and "image" in res["message"]
