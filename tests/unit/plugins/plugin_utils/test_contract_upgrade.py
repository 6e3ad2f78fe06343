# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An upgrade that moves an engine to another release says what that does to the metric contract (issue 43,
item 5): no contract, a metric the rules use that the new release renamed, an unknown release; never a refusal."""

from __future__ import annotations

import hashlib
import os
import shutil

import pytest
import yaml

from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
from ansible_collections.launchcard.inference.plugins.plugin_utils import _alert_rules as alert_rules
from ansible_collections.launchcard.inference.plugins.plugin_utils import _contract_upgrade as contract_upgrade
from ansible_collections.launchcard.inference.plugins.plugin_utils import _metric_contract as contract
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan_fleet
from ansible_collections.launchcard.inference.plugins.plugin_utils._rollout import card_sha256, report, rollout
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import host_units
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import _card

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
V1 = os.path.join(ROOT, "tests", "e2e", "cards", "upgrade-v1.json")
PLACEMENT = [("w0", ["sglang-aggregated"]), ("w1", ["sglang-aggregated"]), ("rt", ["sglang-router"])]
PINNED = contract.load()["sglang"]
RULES = alert_rules.rule_groups()


def _image(image, engine_version=None, flag=False):
    def change(doc):
        for env in doc["envs"]:
            env["image"] = image
            env["engine_version"] = engine_version
        if flag:
            doc["envs"][0]["argv"] += ["--max-running-requests", "32"]
    return _card(V1, change)


def _plan(card):
    hosts = [(h, {"address": "10.0.0.%d" % (i + 1), "recipes": r}) for i, (h, r) in enumerate(PLACEMENT)]
    return plan_fleet({"card": card}, {"card": normalize_placement(hosts)})


def _units(p, runtime, refs=None):
    return {h: host_units(hp, dict({"runtime": runtime}, **({"image_refs": refs} if refs else {})))
            for h, hp in p["hosts"].items()}


def _pins(p):
    """Each image of the plan pinned to a digest made from its name, as a deploy resolves and records them."""
    images = {i["image"] for hp in p["hosts"].values() for i in hp["instances"] if i.get("image")}
    return {im: "%s@sha256:%s" % (im, hashlib.sha256(im.encode()).hexdigest()) for im in images}


def _records(p, card, runtime, refs=None):
    """Each host's record as the units role writes it (module_utils/_state.py build: its instances name no image,
    its runtime names the pinned ones)."""
    refs = (_pins(p) if runtime != "native" else {}) if refs is None else refs
    units = _units(p, runtime, refs)
    return {h: state.build({u["name"]: u["content"] for u in units[h]}, {"sha256": card_sha256(card)}, hp["instances"],
                           {"kind": runtime, "image_refs": refs}) for h, hp in p["hosts"].items()}


def _moves(old_card, new_card, runtime="docker", pins=None):
    old, new = _plan(old_card), _plan(new_card)
    return contract_upgrade.engine_moves(_records(old, old_card, runtime), new, _units(new, runtime),
                                         {"card": new_card}, runtime, pins)


@pytest.fixture
def contracts(tmp_path):
    """A contract directory: the pinned SGLang release, and a next one that renamed the KV cache gauge."""
    shutil.copy(PINNED["path"], str(tmp_path))
    (tmp_path / contract.UNPINNED).mkdir()
    with open(PINNED["path"]) as f:
        doc = yaml.safe_load(f)
    doc["version"] = "0.5.24"
    doc["metrics"]["sglang:kv_cache_usage"] = doc["metrics"].pop("sglang:token_usage")
    (tmp_path / contract.UNPINNED / "sglang-0.5.24.yml").write_text(yaml.safe_dump(doc))
    return str(tmp_path)


def _findings(moves, directory):
    return contract_upgrade.findings(moves, RULES, contract.load(directory), directory)


def test_an_upgrade_to_a_release_that_renamed_a_metric_the_rules_use_warns_naming_it(contracts):
    moves = _moves(_image("lmsysorg/sglang:v0.5.23-cu129"), _image("lmsysorg/sglang:v0.5.24-cu129"))
    assert [(m["host"], m["old"]["version"], m["new"]["version"]) for m in moves] == [
        ("w0", "0.5.23", "0.5.24"), ("w1", "0.5.23", "0.5.24")]  # the router's release is not its image's
    (found,) = _findings(moves, contracts)
    assert found["warning"] is True
    assert found["text"] == (
        "sglang of recipe sglang-aggregated on w0, w1: 0.5.23 (image tag v0.5.23-cu129) -> 0.5.24 (image tag "
        "v0.5.24-cu129): sglang 0.5.24 (%s) does not export sglang:token_usage, which the rules and dashboard use "
        "and sglang 0.5.23 exports" % os.path.join(contracts, "unpinned", "sglang-0.5.24.yml"))


def test_an_upgrade_to_a_release_with_no_contract_names_the_one_the_rules_are_held_to():
    moves = _moves(_image("lmsysorg/sglang:v0.5.23"), _image("lmsysorg/sglang:v0.5.99"))
    found = _findings(moves, contract.CONTRACTS_DIR)
    assert found == [{"warning": True, "text": (
        "sglang of recipe sglang-aggregated on w0, w1: 0.5.23 (image tag v0.5.23) -> 0.5.99 (image tag v0.5.99): "
        "no contract for sglang 0.5.99; the rules and dashboard are held to sglang 0.5.23 "
        "(monitoring/contracts/sglang-0.5.23.yml)")}]


def test_an_upgrade_to_an_unknown_release_is_a_note_not_a_warning():
    moves = _moves(_image("lmsysorg/sglang:v0.5.23"), _image("lmsysorg/sglang:latest"))
    (found,) = _findings(moves, contract.CONTRACTS_DIR)
    assert found["warning"] is False
    assert found["text"].startswith("sglang of recipe sglang-aggregated on w0, w1: 0.5.23 (image tag v0.5.23) -> "
                                    "unknown (image lmsysorg/sglang:latest: not a release tag of sglang's images, "
                                    "no envs[].engine_version): which release runs "
                                    "after the upgrade is unknown; the rules and dashboard are held to sglang 0.5.23")


def test_the_card_s_engine_version_names_the_release_an_untagged_image_runs(contracts):
    moves = _moves(_image("lmsysorg/sglang:v0.5.23"), _image("lmsysorg/sglang:latest", engine_version="0.5.24"))
    assert {m["new"]["from"] for m in moves} == {"card engine_version"}
    (found,) = _findings(moves, contracts)
    assert found["warning"] and "does not export sglang:token_usage" in found["text"]


def test_back_to_the_pinned_release_says_which_metrics_return(contracts):
    moves = _moves(_image("lmsysorg/sglang:v0.5.24"), _image("lmsysorg/sglang:v0.5.23"))
    (found,) = _findings(moves, contracts)
    assert found["warning"] is False
    assert found["text"].endswith("sglang 0.5.23 exports sglang:token_usage again, which sglang 0.5.24 does not")


@pytest.mark.parametrize("old,new,flag", [
    ("lmsysorg/sglang:v0.5.23", "lmsysorg/sglang:v0.5.23", True),  # flags only: the same build
    ("lmsysorg/sglang:v0.5.23", "lmsysorg/sglang:v0.5.23-cu129", False),  # another variant of the same release
    ("lmsysorg/sglang:latest", "lmsysorg/sglang:latest", True),
])
def test_the_same_release_says_nothing(old, new, flag, contracts):
    moves = _moves(_image(old), _image(new, flag=flag))
    assert _findings(moves, contracts) == []


def _revision(image, revision="2" * 40):
    def change(doc):
        for env in doc["envs"]:
            env["image"] = image
        doc["hf"]["revision"] = revision
    return _card(V1, change)


def _refs(digest):
    return {"lmsysorg/sglang:latest": "lmsysorg/sglang:latest@sha256:" + digest * 64}


def _digests(p, digest):
    """Each host's units as a deploy that pinned the card's image to ``digest`` writes them."""
    return _units(p, "docker", _refs(digest))


@pytest.mark.parametrize("old_digest,new_digest", [
    ("a", "a"),  # the pinned image unchanged
    ("a", None),  # check mode: the target's units name the tag (no registry was asked for the digest)
])
def test_a_new_revision_on_the_same_build_says_nothing(old_digest, new_digest, contracts):
    # docs/observability.md: nothing is said for an instance whose build stays the same
    old_card, new_card = _image("lmsysorg/sglang:latest"), _revision("lmsysorg/sglang:latest")
    old, new = _plan(old_card), _plan(new_card)
    records = _records(old, old_card, "docker", _refs(old_digest))
    target = _digests(new, new_digest) if new_digest else _units(new, "docker")
    moves = contract_upgrade.engine_moves(records, new, target, {"card": new_card})
    assert moves == [] and _findings(moves, contracts) == []


def test_a_tag_that_moved_to_another_build_is_said():
    old_card, new_card = _image("lmsysorg/sglang:latest"), _revision("lmsysorg/sglang:latest")
    old, new = _plan(old_card), _plan(new_card)
    records = _records(old, old_card, "docker", _refs("a"))
    moves = contract_upgrade.engine_moves(records, new, _digests(new, "b"), {"card": new_card})
    assert [m["host"] for m in moves] == ["w0", "w1"]
    (found,) = _findings(moves, contract.CONTRACTS_DIR)
    assert found["warning"] is False and "which release runs after the upgrade is unknown" in found["text"]


def test_a_native_install_runs_what_its_lock_pins():
    card = _image("lmsysorg/sglang:v0.5.23", flag=False)
    new = _image("lmsysorg/sglang:v0.5.23", flag=True)
    old_plan, new_plan = _plan(card), _plan(new)
    records = _records(old_plan, card, "native")
    units = {h: host_units(hp, {"runtime": "native", "native_requirements": "ab" * 32})
             for h, hp in new_plan["hosts"].items()}
    moves = contract_upgrade.engine_moves(records, new_plan, units, {"card": new}, "native",
                                          {"w0": ["sglang==0.5.99"], "w1": ["sglang==0.5.99"]})
    assert {(m["old"]["from"], m["new"]["version"], m["new"]["from"]) for m in moves} == {
        ("native install, its release not recorded", "0.5.99", "native lock")}
    (found,) = _findings(moves, contract.CONTRACTS_DIR)
    assert found["warning"] and "unknown (native install, its release not recorded) -> 0.5.99 (native lock): no " \
        "contract for sglang 0.5.99" in found["text"]


def test_a_native_install_whose_requirements_stay_says_nothing():
    card, new = _image("lmsysorg/sglang:v0.5.23"), _revision("lmsysorg/sglang:v0.5.23")
    old_plan, new_plan = _plan(card), _plan(new)
    pinned = {"runtime": "native", "native_requirements": "ab" * 32}
    records = {h: state.build({u["name"]: u["content"] for u in host_units(hp, pinned)}, {"sha256": card_sha256(card)},
                              hp["instances"], {"kind": "native"}) for h, hp in old_plan["hosts"].items()}
    units = {h: host_units(hp, pinned) for h, hp in new_plan["hosts"].items()}
    assert contract_upgrade.engine_moves(records, new_plan, units, {"card": new}, "native",
                                         {"w0": ["sglang==0.5.99"], "w1": ["sglang==0.5.99"]}) == []


def test_the_recorded_image_is_the_ref_whose_digest_the_unit_runs():
    p = _plan(_image("lmsysorg/sglang:v0.5.23"))
    refs = dict(_pins(p), **{"lmsysorg/sglang:latest": _pins(p)["lmsysorg/sglang:v0.5.23"].replace(":v0.5.23@", ":latest@")})
    records = _records(p, _image("lmsysorg/sglang:v0.5.23"), "docker", refs)
    unit = next(i["unit"] for i in p["hosts"]["w0"]["instances"])
    text = records["w0"]["units"][unit]["text"]
    assert "recipe" in records["w0"]["instances"][0] and "image" not in records["w0"]["instances"][0]
    # two tags of one digest: the one the plan names, else the first
    assert contract_upgrade.recorded_image(records["w0"], text, "lmsysorg/sglang:v0.5.23") == "lmsysorg/sglang:v0.5.23"
    assert contract_upgrade.recorded_image(records["w0"], text, "lmsysorg/sglang:v0.5.99") == "lmsysorg/sglang:latest"
    assert contract_upgrade.recorded_image(dict(records["w0"], runtime={}), text) is None


def test_a_new_host_is_held_to_the_contract_too():
    old, new_card = _image("lmsysorg/sglang:v0.5.23"), _image("lmsysorg/sglang:v0.5.99")
    old_plan, new_plan = _plan(old), _plan(new_card)
    records = _records(old_plan, old, "docker")
    del records["w1"]
    moves = contract_upgrade.engine_moves(records, new_plan, _units(new_plan, "docker"), {"card": new_card})
    assert [(m["host"], m["old"]["from"]) for m in moves] == [("w0", "image tag v0.5.23"), ("w1", "not running")]


def test_the_rollout_report_says_it_and_refuses_nothing():
    old_card, new_card = _image("lmsysorg/sglang:v0.5.23"), _image("lmsysorg/sglang:v0.5.99")
    old, new = _plan(old_card), _plan(new_card)
    ro = rollout(_records(old, old_card, "docker"), new, _units(new, "docker"),
                 {"card": {"sha256": card_sha256(new_card), "repo": "r", "revision": "1" * 40}})
    ro["contracts"] = _findings(_moves(old_card, new_card), contract.CONTRACTS_DIR)
    lines = report(ro)
    assert [line for line in lines if "metric contract" in line] == [
        "warning: metric contract: sglang of recipe sglang-aggregated on w0, w1: 0.5.23 (image tag v0.5.23) -> "
        "0.5.99 (image tag v0.5.99): no contract for sglang 0.5.99; the rules and dashboard are held to sglang "
        "0.5.23 (monitoring/contracts/sglang-0.5.23.yml)"]
    assert len(ro["batches"]) == 3  # both workers, then the router: the upgrade goes on


def test_the_names_the_rules_and_dashboard_use_are_each_in_their_pinned_contract():
    used = contract.used_names(RULES)
    assert "sglang:token_usage" in used["sglang"] and "vllm:kv_cache_usage_perc" in used["vllm"]
    for component, names in used.items():
        assert names <= set(contract.load()[component]["metrics"]), component


def test_an_unpinned_contract_is_found_by_release_only(contracts):
    assert contract.release("sglang", "0.5.24", contracts)["version"] == "0.5.24"
    assert contract.release("sglang", "0.5.23", contracts)["path"] == os.path.join(contracts, "sglang-0.5.23.yml")
    assert contract.release("sglang", "0.5.25", contracts) is None
    assert contract.load(contracts)["sglang"]["version"] == "0.5.23"  # the rules stay held to the pinned one


@pytest.mark.parametrize("packages,said", [
    (None, None),  # the collection's lock pins SGLang 0.5.23: the release the rules are held to
    (["sglang==0.5.99"], "0.5.99 (native lock): no contract for sglang 0.5.99"),
])
def test_the_fleet_step_reads_what_each_native_host_installs(packages, said):
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _upgrade_fleet as upgrade_fleet
    old_card, new_card = _image("lmsysorg/sglang:v0.5.23"), _image("lmsysorg/sglang:v0.5.23", flag=True)
    old_plan, new_plan = _plan(old_card), _plan(new_card)
    hostvars = {h: {"inventory_hostname": h, "launchcard_runtime_native_packages": packages} for h in new_plan["hosts"]}
    units = {h: host_units(hp, {"runtime": "native", "native_requirements": "cd" * 32})
             for h, hp in new_plan["hosts"].items()}
    found = upgrade_fleet.contracts(_records(old_plan, old_card, "native"), new_plan, units,
                                    {"card": new_card}, hostvars, "native")
    # nothing at all for the pinned release (an unknown one would be a note)
    assert [(f["warning"], f["text"].split(" -> ", 1)[1]) for f in found] == (
        [(True, "%s; the rules and dashboard are held to sglang 0.5.23 (monitoring/contracts/sglang-0.5.23.yml)"
          % said)] if said else [])
