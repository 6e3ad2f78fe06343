# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 42, "A card's argv words": a word that a shell would run (``$(touch /tmp/pwned)``, backquotes, ``;``,
``&&``, ``|``) or systemd would expand (``$X``, ``${X}``, ``%n``) reaches the engine as the card wrote it, for every
runtime: no shell is involved (systemd.service(5), "Command lines"), and ``$``/``%``/quotes are escaped as systemd
unescapes them. docs/untrusted-input.md lists these cases."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import render
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units import directives, parse_exec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as _f:
    DOC = json.load(_f)
VLLM = [i for i, e in enumerate(DOC["envs"]) if e["engine"] == "vllm"][0]
HOSTILE = ["$(touch /tmp/pwned)", "`touch /tmp/pwned`", "${HOME}", "$HOME", "%n", "100%", "%%", "a; touch /tmp/x",
           ";", "&&", "|", "'single'", '"double"', "back\\slash", "*", "with space", ""]
FLAVOURS = ({"runtime": "native", "native_venv": "/opt/lc"}, {"runtime": "docker"}, {"runtime": "podman"},
            {"runtime": "podman", "podman_quadlet": True})
SHELLS = ("sh", "bash", "dash", "zsh")


def _instance():
    doc = copy.deepcopy(DOC)
    for word in HOSTILE:
        doc["envs"][VLLM]["argv"] += ["--api-key", word]
    card = load_card(json.dumps(doc), "card.json")
    recipe = card["recipes"][VLLM]
    p = plan(card, normalize_placement([("h", {"address": "10.0.0.1", "recipes": [recipe["name"]]})]))
    return recipe["argv"], p["hosts"]["h"]["instances"][0]


@pytest.mark.parametrize("options", FLAVOURS, ids=lambda o: "-".join(str(v) for v in o.values()))
def test_shell_and_systemd_syntax_in_argv_words_reaches_the_engine_as_written_and_no_shell_runs(options):
    argv, inst = _instance()
    text = render(inst, options)
    (line,) = directives(text, "Exec" if options.get("podman_quadlet") else "ExecStart")
    # systemd's own unescaping (the reference parser: %% -> %, $$ -> $, "..." and \\ escapes, words at whitespace)
    words = parse_exec(line)
    tail = argv[argv.index("--api-key"):]
    assert any(words[i:i + len(tail)] == tail for i in range(len(words))), (tail, words)
    # written escaped: a single $ or % would be expanded by systemd
    assert "$$(touch /tmp/pwned)" in line and "%%n" in line and '";"' in line
    # the command systemd runs is the runtime, env(1) or (Quadlet) the engine's own arguments, never a shell
    if not options.get("podman_quadlet"):
        assert words[0].rsplit("/", 1)[-1] not in SHELLS and "-c" not in words[:3], words[:3]
