# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 42, "A card's paths": ``checkpoints[].subdir`` names a folder inside the repository and cannot leave it
(absolute, ``..``, ``.`` or empty parts, control characters refused, naming the field). docs/untrusted-input.md
lists these cases."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import CardError, load_card

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as _f:
    DOC = json.load(_f)


def _with_subdir(value):
    doc = copy.deepcopy(DOC)
    doc["checkpoints"][0]["subdir"] = value
    return json.dumps(doc)


@pytest.mark.parametrize("value", ["../../etc", "..", "fp8/../../etc", "/etc", "/", "./fp8", "fp8/.", "fp8//x", "fp8/",
                                   ""])
def test_a_checkpoint_subdir_that_leaves_the_repository_folder_is_refused_naming_the_field(value):
    with pytest.raises(CardError) as exc:
        load_card(_with_subdir(value), "card.json")
    (path, message), = exc.value.errors
    assert path == "checkpoints[0].subdir" and "relative path inside the repository" in message, exc.value.errors


def test_a_checkpoint_subdir_with_a_control_character_is_refused_naming_the_field():
    with pytest.raises(CardError) as exc:
        load_card(_with_subdir("fp8\nExecStartPre=/bin/sh"), "card.json")
    assert [p for p, dummy in exc.value.errors] == ["checkpoints[0].subdir"], exc.value.errors


@pytest.mark.parametrize("value", ["fp8", "quant/w4a16", "..fp8", "v1..2", None])
def test_a_subdir_inside_the_repository_passes(value):
    card = load_card(_with_subdir(value), "card.json")
    assert card["checkpoints"][DOC["checkpoints"][0]["name"]]["subdir"] == value
