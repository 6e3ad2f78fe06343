# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The example card, placed three ways, rendered to unit files (native and
docker): per host the unit names, and in each ExecStart the right peer URLs."""

from __future__ import annotations

import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._argv import Argv
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._liveness import is_liveness, kind
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import host_units

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
UNIT = "launchcard-glm-5.3-flash-%s.service"

with open(EXAMPLE) as _f:
    EX = load_card(_f.read(), EXAMPLE)
# the card's argv, plus SGLang's metrics flag (metrics on by default) and the revision pin on every engine (routers
# load no weights)
CARD_ARGV = {r["name"]: r["argv"] + (["--enable-metrics"] if r["launcher"] == "sglang" else []) + (
    [] if r["launcher"] == "router" else ["--revision", EX["model"]["revision"]]) for r in EX["recipes"]}


def _h(name, address, recipes):
    return (name, {"address": address, "recipes": recipes})


PLACEMENTS = {
    # the card's own layout: recipes 4-6 together, every other recipe on its own host
    "as-in-the-card": [
        _h("g-vllm", "10.10.0.1", ["vllm-aggregated"]),
        _h("g-enc", "10.10.0.2", ["sglang-encoder"]),
        _h("g-lang", "10.10.0.3", ["sglang-language"]),
        _h("g-cp", "10.10.0.4", ["sglang-aggregated"]),
        _h("g-pd", "10.10.0.5", ["sglang-prefill", "sglang-decode", "sglang-router"]),
    ],
    # inventories/sandbox/gpus.ini: one role per host
    "one-role-per-host": [
        _h("lc-vllm", "198.18.0.11", ["vllm-aggregated"]),
        _h("lc-encoder", "198.18.0.12", ["sglang-encoder"]),
        _h("lc-language", "198.18.0.13", ["sglang-language"]),
        _h("lc-cp", "198.18.0.14", ["sglang-aggregated"]),
        _h("lc-prefill", "198.18.0.15", ["sglang-prefill"]),
        _h("lc-decode", "198.18.0.16", ["sglang-decode"]),
        _h("lc-router", "198.18.0.17", ["sglang-router"]),
    ],
    "two-prefill-two-decode": [
        _h("p1", "10.30.0.1", ["sglang-prefill"]),
        _h("p2", "10.30.0.2", ["sglang-prefill"]),
        _h("d1", "10.30.0.3", ["sglang-decode"]),
        _h("d2", "10.30.0.4", ["sglang-decode"]),
        _h("rt", "10.30.0.5", ["sglang-router"]),
    ],
}

EXPECT_UNITS = {
    "as-in-the-card": {
        "g-vllm": ["vllm-aggregated-0"],
        "g-enc": ["sglang-encoder-0"],
        "g-lang": ["sglang-language-0"],
        "g-cp": ["sglang-aggregated-0"],
        "g-pd": ["sglang-prefill-0", "sglang-decode-0", "sglang-router-0"],
    },
    "one-role-per-host": {
        "lc-vllm": ["vllm-aggregated-0"],
        "lc-encoder": ["sglang-encoder-0"],
        "lc-language": ["sglang-language-0"],
        "lc-cp": ["sglang-aggregated-0"],
        "lc-prefill": ["sglang-prefill-0"],
        "lc-decode": ["sglang-decode-0"],
        "lc-router": ["sglang-router-0"],
    },
    "two-prefill-two-decode": {
        "p1": ["sglang-prefill-0"],
        "p2": ["sglang-prefill-1"],
        "d1": ["sglang-decode-0"],
        "d2": ["sglang-decode-1"],
        "rt": ["sglang-router-0"],
    },
}

# (host, unit) -> what the unit's ExecStart must say about its peers
EXPECT_PEERS = {
    "as-in-the-card": {
        ("g-lang", "sglang-language-0"): {"--encoder-urls": [["http://10.10.0.2:30001"]]},
        ("g-pd", "sglang-router-0"): {"--prefill": [["http://127.0.0.1:31000", "8998"]],
                                      "--decode": [["http://127.0.0.1:32000"]]},
    },
    "one-role-per-host": {
        ("lc-language", "sglang-language-0"): {"--encoder-urls": [["http://198.18.0.12:30001"]]},
        ("lc-router", "sglang-router-0"): {"--prefill": [["http://198.18.0.15:31000", "8998"]],
                                           "--decode": [["http://198.18.0.16:32000"]]},
    },
    "two-prefill-two-decode": {
        ("rt", "sglang-router-0"): {"--prefill": [["http://10.30.0.1:31000", "8998"],
                                                  ["http://10.30.0.2:31000", "8998"]],
                                    "--decode": [["http://10.30.0.3:32000"], ["http://10.30.0.4:32000"]]},
    },
}


def exec_start_argv(content):
    """The ExecStart= of a unit, split and unescaped as systemd would (the
    renderer only ever writes ``"..."`` quoting, ``\\\\``/``\\"``, ``%%``, ``$$``)."""
    joined = content.replace("\\\n", " ")  # systemd joins continuation lines with a space
    (line,) = [ln[len("ExecStart="):] for ln in joined.splitlines() if ln.startswith("ExecStart=")]
    line = line.replace("%%", "\0")
    assert "%" not in line
    words, word, quoted, i = [], None, False, 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            word = (word or "") + line[i + 1]
            i += 2
            continue
        if c == '"':
            quoted = not quoted
            word = word or ""
        elif c == " " and not quoted:
            if word is not None:
                words.append(word)
            word = None
        else:
            word = (word or "") + c
        i += 1
    assert not quoted
    if word is not None:
        words.append(word)
    return [w.replace("\0", "%").replace("$$", "$") for w in words]


RUNTIMES = {
    "native": {"runtime": "native", "native_venv": "/opt/launchcard/venv"},
    "docker": {"runtime": "docker", "image_refs": {"lmsysorg/sglang:latest": "lmsysorg/sglang@sha256:" + "b" * 64}},
}


def _render(placement, runtime):
    """The plan and each host's engine units (their liveness units left out: tests/unit/.../test_liveness.py)."""
    p = plan(EX, normalize_placement(PLACEMENTS[placement]))
    rendered = {host: host_units(hp, RUNTIMES[runtime]) for host, hp in p["hosts"].items()}
    for host, units in rendered.items():
        # every engine that serves completions and every router with a worker API has its timer and probe
        assert sorted(u["name"] for u in units if is_liveness(u["name"])) == sorted(
            i["unit"][:-len(".service")] + "-liveness" + ext for i in p["hosts"][host]["instances"] if kind(i)
            for ext in (".service", ".timer"))
    return p, {host: [u for u in units if not is_liveness(u["name"])] for host, units in rendered.items()}


def _native_command(words):
    """A native ExecStart's words after env(1) and its NAME=VALUE words: the engine's program and argv."""
    assert words[0] == "/usr/bin/env", words
    return words[next(i for i, w in enumerate(words[1:], 1) if "=" not in w):]


def _engine_argv(words, runtime):
    """The engine's own argv from the ExecStart words (argv[0] as the card wrote it)."""
    if runtime == "native":
        words = _native_command(words)
        return [words[0].rsplit("/", 1)[-1]] + words[1:]
    k = words.index("--entrypoint")
    return [words[k + 1]] + words[k + 3:]


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_units_per_host(placement, runtime):
    p, rendered = _render(placement, runtime)
    assert {h: [u["name"] for u in units] for h, units in rendered.items()} == {
        h: [UNIT % n for n in names] for h, names in EXPECT_UNITS[placement].items()}
    for host, units in rendered.items():
        for u in units:
            assert u["instance"] == u["name"][len("launchcard-"):-len(".service")]
            assert "[Service]" in u["content"] and u["content"].endswith("WantedBy=multi-user.target\n")


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_exec_start_carries_the_peer_urls(placement, runtime):
    p, rendered = _render(placement, runtime)
    seen = set()
    for host, units in rendered.items():
        insts = {i["unit"]: i for i in p["hosts"][host]["instances"]}
        for u in units:
            words = exec_start_argv(u["content"])
            argv = _engine_argv(words, runtime)
            inst = insts[u["name"]]
            # the card's argv, and the graceful stop a vLLM engine needs (_units.engine_argv)
            assert argv == inst["argv"] + (["--shutdown-timeout", "30"] if inst["launcher"] == "vllm" else [])
            argv = inst["argv"]
            a = Argv(argv)
            key = (host, u["instance"][len("glm-5.3-flash-"):])
            for flag, groups in EXPECT_PEERS[placement].get(key, {}).items():
                assert a.groups(flag) == groups, (key, flag)
                seen.add(key)
            # apart from peer URLs and GPU offsets, the card's argv is untouched
            stripped, card = Argv(argv), Argv(CARD_ARGV[inst["recipe"]])
            for flag in ("--encoder-urls", "--prefill", "--decode", "--base-gpu-id"):
                stripped.replace_groups(flag, [])
                card.replace_groups(flag, [])
            assert stripped.tokens == card.tokens, key
            if runtime == "docker":
                image = words[words.index("--entrypoint") + 2]
                assert image == RUNTIMES["docker"]["image_refs"].get(inst["image"], inst["image"])
            else:
                assert _native_command(words)[0] == "/opt/launchcard/venv/bin/" + CARD_ARGV[inst["recipe"]][0]
    assert seen == set(EXPECT_PEERS[placement])


def test_card_layout_renders_the_card_argv_exactly():
    for runtime in RUNTIMES:
        p, rendered = _render("as-in-the-card", runtime)
        for u in rendered["g-pd"]:
            inst = [i for i in p["hosts"]["g-pd"]["instances"] if i["unit"] == u["name"]][0]
            assert _engine_argv(exec_start_argv(u["content"]), runtime) == CARD_ARGV[inst["recipe"]]
