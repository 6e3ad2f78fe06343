# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory mistakes (docs/untrusted-input.md, "Inventory mistakes"): each is named at planning, on the
controller, before any host is contacted; none is ignored or silently changed.

The launch_card action runs in-process on the sandbox inventory written out as hostvars
(tests/unit/plugins/action/test_launch_card_action.py), its connection a mock that proves no host was contacted.
"""

from __future__ import annotations

import io
import json
import os
import re

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _inventory_check as inventory_check
from ansible_collections.launchcard.inference.plugins.plugin_utils import _preflight_steps as preflight_steps
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import MAX_CARD_BYTES, CardError, load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_spec import VARIABLES
from ansible_collections.launchcard.inference.tests.unit.plugins.action.test_launch_card_action import (
    CARD,
    REPO_ROOT,
    action,
    assert_no_host_contacted,
    failure,
    task_vars,
)


def plan(tv, args=None):
    plugin, connection = action(args)
    result = plugin.run(task_vars=tv)
    assert_no_host_contacted(connection)
    return result


# --- unknown variables ---------------------------------------------------------------------------------------------
def test_a_misspelt_variable_is_named_with_its_likely_meaning_and_the_plan_goes_on():
    tv = task_vars()
    tv["hostvars"]["lc-vllm"]["launchcard_runtim"] = "podman"
    tv["hostvars"]["lc-cp"]["launchcard_recipe"] = ["sglang-aggregated"]
    tv["hostvars"]["lc-decode"]["launchcard_runtim"] = "podman"
    result = plan(tv)
    assert "failed" not in result
    assert "launchcard_runtim (lc-decode, lc-vllm): not a variable of launchcard.inference, ignored; did you mean " \
           "launchcard_runtime?" in result["warnings"]
    assert "launchcard_recipe (lc-cp): not a variable of launchcard.inference, ignored; did you mean " \
           "launchcard_recipes?" in result["warnings"]


def test_a_liveness_opt_out_naming_no_recipe_is_named_with_its_likely_meaning_and_the_plan_goes_on():
    tv = task_vars()
    tv["hostvars"]["lc-vllm"]["launchcard_liveness_recipes"] = {"vllm-agregated": False, "vllm-aggregated": True}
    tv["hostvars"]["lc-cp"]["launchcard_liveness_recipes"] = {"vllm-agregated": False}
    result = plan(tv)
    assert "failed" not in result
    assert [w for w in result["warnings"] if "launchcard_liveness_recipes" in w] == [
        "launchcard_liveness_recipes['vllm-agregated'] (lc-cp, lc-vllm): no recipe of the card, ignored; did you mean "
        "vllm-aggregated?"]


def test_a_misspelt_variable_fails_the_plan_with_the_strict_switch():
    tv = task_vars(launchcard_recipe=["vllm-aggregated"])
    message = failure(plan(tv, {"strict_variables": True}))
    assert message.startswith("launchcard_recipe (lc-cp, lc-decode, lc-encoder, lc-language, lc-prefill and 2 more): ")
    assert "did you mean launchcard_recipes?" in message
    assert "launchcard_strict_variables is true" in message


def test_the_known_variables_are_read_from_the_roles_and_playbooks():
    known = inventory_check.known_variables(REPO_ROOT)
    # every unit option's variable (the units role's argument_specs), the planner's, the play's own
    assert set(VARIABLES.values()) - {None} <= known
    assert {"launchcard_card_src", "launchcard_recipes", "launchcard_argv_overrides", "launchcard_plan_file",
            "launchcard_allow_removal", "launchcard_strict_variables", "launchcard_upgrade_serial",
            "launchcard_max_fail_percentage"} <= known
    # a variable the collection does not read, however close, is not
    assert "launchcard_recipe" not in known and "launchcard_runtim" not in known


def test_the_preflight_step_finds_each_checked_variable_s_misspellings_in_one_pass():
    names = ["launchcard_runtim", "launchcard_recipe", "launchcard_weights_dir", "ansible_host"]
    assert preflight_steps.misspelt(names, ("launchcard_runtime", "launchcard_recipes")) == {
        "launchcard_runtime": ["launchcard_runtim"], "launchcard_recipes": ["launchcard_recipe"]}
    assert preflight_steps.misspelt(["launchcard_recipes"], ("launchcard_runtime", "launchcard_recipes")) == {
        "launchcard_runtime": [], "launchcard_recipes": []}


def test_a_misspelt_runtime_is_found_among_a_hosts_variables_for_the_check_that_names_it():
    known = inventory_check.known_variables(REPO_ROOT)
    names = ["launchcard_runtim", "launchcard_recipes", "launchcard_recipe", "ansible_host", "launchcard_allow_runtime_change"]
    assert inventory_check.misspelt(names, ["launchcard_runtime"], known) == {"launchcard_runtime": ["launchcard_runtim"]}
    # spelt right, or near another variable: nothing to name
    assert inventory_check.misspelt(["launchcard_runtime", "launchcard_recipe"], ["launchcard_runtime"], known) == {}


def test_every_variable_the_guides_name_is_known():
    # a variable read only in Python (a filter's host variable) is named where the playbook that calls it is
    names = set()
    for page in ("inventory.md", "operations.md", "upgrades.md", "deploy.md", "hardening.md"):
        with open(os.path.join(REPO_ROOT, "docs", page)) as f:
            names.update(re.findall(r"\blaunchcard_[a-z0-9_]*[a-z0-9]\b", f.read()))
    assert names - inventory_check.known_variables(REPO_ROOT) == set()


def test_a_variable_the_collection_reads_is_never_reported():
    tv = task_vars(launchcard_runtime="podman", launchcard_hf_offline=True, launchcard_max_fail_percentage=10)
    assert not [w for w in plan(tv).get("warnings", []) if "not a variable" in w]


# --- nothing to plan -----------------------------------------------------------------------------------------------
def test_an_inventory_where_no_host_names_a_recipe_fails_saying_so():
    tv = task_vars()
    for hv in tv["hostvars"].values():
        hv["launchcard_recipe"] = hv.pop("launchcard_recipes")
    message = failure(plan(tv))
    assert message.startswith("no host names a recipe: lc-cp, lc-decode, lc-encoder, lc-language, lc-prefill and 2 "
                              "more set launchcard_card_src but no host sets launchcard_recipes")


# --- an explicit port that collides --------------------------------------------------------------------------------
def test_an_overridden_port_that_collides_is_an_error_naming_the_override():
    tv = task_vars()
    tv["hostvars"]["lc-vllm"]["launchcard_recipes"] = ["vllm-aggregated", "sglang-aggregated"]
    tv["hostvars"]["lc-cp"]["launchcard_recipes"] = []
    vllm_port = plan(tv)["ansible_facts"]["launchcard_plan"]["hosts"]["lc-vllm"]["instances"][0]["port"]
    tv["hostvars"]["lc-vllm"]["launchcard_argv_overrides"] = {"sglang-aggregated": {"set": {"--port": vllm_port}}}
    message = failure(plan(tv))
    assert "lc-vllm: launchcard_argv_overrides['sglang-aggregated'].set['--port']: --port %d is taken on this host " \
           "by glm-5.3-flash-vllm-aggregated-0; an overridden port is not moved" % vllm_port in message


def test_a_card_port_that_collides_is_still_moved():
    tv = task_vars()
    tv["hostvars"]["lc-vllm"]["launchcard_recipes"] = ["sglang-aggregated", "sglang-aggregated"]
    tv["hostvars"]["lc-cp"]["launchcard_recipes"] = []
    first, second = plan(tv)["ansible_facts"]["launchcard_plan"]["hosts"]["lc-vllm"]["instances"]
    assert second["port"] == first["port"] + 1


# --- credentials and endpoints -------------------------------------------------------------------------------------
@pytest.mark.parametrize("entry, found", [({"username": "ci", "password": ""}, "password is empty"),
                                          ({"username": "ci"}, "password is missing"),
                                          ({"username": "", "password": "s3cret-value"}, "username is empty")])
def test_an_empty_registry_credential_is_refused_without_showing_the_other(entry, found):
    message = failure(plan(task_vars(launchcard_registry_credentials={"registry.example:5000": entry})))
    assert message == "launchcard_registry_credentials['registry.example:5000'].%s: the registry would be asked " \
                      "without credentials" % found
    assert "s3cret-value" not in message


@pytest.mark.parametrize("endpoint", ["hub.internal:8080", "hub.internal", "ftp://hub.internal", "https://"])
def test_a_hub_endpoint_without_a_scheme_or_host_is_refused(endpoint):
    message = failure(plan(task_vars(launchcard_hf_endpoint=endpoint)))
    assert message == "launchcard_hf_endpoint: expected an http:// or https:// URL with a host, found %r" % endpoint


def test_good_credentials_and_endpoints_pass():
    tv = task_vars(launchcard_hf_endpoint="http://198.18.0.1:8080",
                   launchcard_registry_credentials={"registry.example": {"username": "ci", "password": "x"}})
    assert "failed" not in plan(tv)


# --- where a relative card path is read from -----------------------------------------------------------------------
def test_a_relative_card_path_is_read_from_the_inventory_directory(tmp_path):
    inventory = tmp_path / "inventory"
    (inventory / "cards").mkdir(parents=True)
    (inventory / "cards" / "card.json").write_bytes(open(CARD, "rb").read())
    tv = task_vars(card="cards/card.json", inventory_dir=str(inventory))
    result = plan(tv)
    assert list(result["ansible_facts"]["launchcard_cards"]) == [str(inventory / "cards" / "card.json")]


def test_a_relative_card_path_is_not_looked_up_in_the_collection(tmp_path):
    # the playbook's search path holds a card of that name: a relative inventory path must not find it there
    os.mkdir(str(tmp_path / "files"))
    (tmp_path / "files" / "card.json").write_bytes(open(CARD, "rb").read())
    tv = task_vars(card="card.json", inventory_dir=str(tmp_path / "inventory"))
    plugin, dummy = action(search_path=str(tmp_path))
    message = failure(plugin.run(task_vars=tv))
    assert message.startswith("launchcard_card_src: cannot read %s" % (tmp_path / "inventory" / "card.json"))


def test_a_relative_card_path_without_an_inventory_directory_is_refused_naming_the_variable():
    message = failure(plan(task_vars(card="cards/card.json")))
    assert message.startswith("launchcard_card_src of lc-cp: 'cards/card.json' is a relative path and the host has "
                              "no inventory directory")


# --- oversized cards -----------------------------------------------------------------------------------------------
def _huge(tmp_path):
    """A well-formed card padded past the limit (a long description): only its size is wrong."""
    doc = json.load(open(CARD))
    doc["description"] = "x" * MAX_CARD_BYTES
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_card_file_over_the_limit_is_refused_unparsed(tmp_path, monkeypatch):
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _card_validate

    parsed = []
    monkeypatch.setattr(_card_validate, "parse_card_text", lambda *a: parsed.append(a))
    path = _huge(tmp_path)
    message = failure(plan(task_vars(card=str(path))))
    assert message == "launchcard_card_src: %s holds more than %d bytes (4 MiB), the most a card may hold; it was " \
                      "not read further" % (path, MAX_CARD_BYTES)
    assert parsed == []
    message = failure(plan(task_vars(card=None), {"src": str(path)}))
    assert message.startswith("src: %s holds more than" % path)


def test_a_card_url_over_the_limit_is_refused_after_one_byte_more(tmp_path, monkeypatch):
    from ansible_collections.launchcard.inference.plugins.action import launch_card

    body = _huge(tmp_path).read_bytes()
    reads = []

    class Response(io.BytesIO):
        def read(self, size=-1):
            reads.append(size)
            return super().read(size)

    monkeypatch.setattr(launch_card, "open_url", lambda *a, **k: Response(body))
    message = failure(plan(task_vars(card="https://cards.invalid/huge.json")))
    assert message.startswith("launchcard_card_src: https://cards.invalid/huge.json holds more than %d bytes"
                              % MAX_CARD_BYTES)
    assert reads == [MAX_CARD_BYTES + 1]


def test_the_card_parser_refuses_text_over_the_limit_itself():
    with pytest.raises(CardError) as exc:
        load_card(b" " * (MAX_CARD_BYTES + 1), "big.json")
    assert "over the %d a card may hold" % MAX_CARD_BYTES in str(exc.value)
