# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The card model's error: every problem with its path, plus the hints."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import CardError, load_card

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def test_a_misspelt_key_is_shown_next_to_the_missing_one():
    with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as f:
        doc = json.load(f)
    doc["hf"]["revison"] = doc["hf"].pop("revision")
    with pytest.raises(CardError) as err:
        load_card(json.dumps(doc), source="typo.json")
    text = str(err.value)
    assert "hf.revision: required key 'revision' is missing" in text
    assert "(note) hf.revison: unknown key 'revison' (not part of onefrontier.launch-card/v1; did you mean 'revision'?)" in text
    assert err.value.errors == [("hf.revision", "required key 'revision' is missing")]


def test_an_unknown_key_far_from_every_declared_one_gets_no_guess():
    with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as f:
        doc = json.load(f)
    doc["envs"][2]["imgae"] = doc["envs"][2].pop("image")
    doc["envs"][2]["owner"] = "platform"
    with pytest.raises(CardError) as err:
        load_card(json.dumps(doc), source="typo.json")
    text = str(err.value)
    assert "envs[2].imgae: unknown key 'imgae' (not part of onefrontier.launch-card/v1; did you mean 'image'?)" in text
    assert "envs[2].owner: unknown key 'owner' (not part of onefrontier.launch-card/v1); ignored" in text


def test_an_argv_error_keeps_the_unknown_key_notes_and_a_key_that_starts_with_a_declared_one_is_guessed():
    with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as f:
        doc = json.load(f)
    i = next(n for n, e in enumerate(doc["envs"]) if "env" in e and "--tp-size" in e["argv"])
    doc["envs"][i]["enviroment"] = doc["envs"][i].pop("env")
    argv = doc["envs"][i]["argv"]
    argv[argv.index("--tp-size") + 1] = "four"
    with pytest.raises(CardError) as err:
        load_card(json.dumps(doc), source="typo.json")
    text = str(err.value)
    assert "envs[%d].argv[%d]" % (i, argv.index("--tp-size") + 1) in text and "--tp-size expects an integer" in text
    assert "(note) envs[%d].enviroment: unknown key 'enviroment' (not part of onefrontier.launch-card/v1; did you " \
           "mean 'env'?)" % i in text


@pytest.mark.parametrize("env, flag, value", [(1, "--port", "-30000"), (4, "--disaggregation-bootstrap-port", "70000"),
                                              (5, "--port", "thirty")])
def test_a_port_that_is_not_a_tcp_port_names_its_argv_element(env, flag, value):
    with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as f:
        doc = json.load(f)
    index = doc["envs"][env]["argv"].index(flag) + 1
    doc["envs"][env]["argv"][index] = value
    with pytest.raises((CardError, ValueError)) as err:
        load_card(json.dumps(doc), source="ports.json")
    assert "envs[%d].argv[%d]: %s expects " % (env, index, flag) in str(err.value)


@pytest.mark.parametrize("section, key, literal, path", [
    ("hardware", "min_disk_gib", "1e300", "hardware.min_disk_gib"),
    ("hf", "weight_gib", "1e308", "hf.weight_gib"),
    ("hardware", "min_disk_gib", "1e999", "hardware.min_disk_gib"),
])
def test_a_huge_size_is_a_card_error_with_its_path_not_a_crash(section, key, literal, path):
    with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as f:
        doc = json.load(f)
    doc[section][key] = 4242.25
    text = json.dumps(doc).replace("4242.25", literal)
    with pytest.raises(CardError) as err:
        load_card(text, source="huge.json")
    assert [p for p, dummy in err.value.errors] == [path]
    assert "infinity to integer" not in str(err.value)
