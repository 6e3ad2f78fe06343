# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's removal and runtime_change checks (docs/untrusted-input.md, "Inventory mistakes"): an instance a host
serves today that the plan no longer places there, or would move to another runtime, fails the host in its preflight
call, before any host changes.

The module in-process (test_preflight_module.py's fake host), the host's record written as host_state writes it;
the needs made by the same filter the preflight role calls, from a plan of the example card.
"""

from __future__ import annotations

import json

from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
from ansible_collections.launchcard.inference.plugins.module_utils._preflight import host_needs
from ansible_collections.launchcard.inference.plugins.module_utils._state import recorded_card
from ansible_collections.launchcard.inference.tests.unit.plugins.modules.test_preflight_module import (
    by_check,
    run_module,
)

UNIT_A = "launchcard-glm-5.3-flash-sglang-aggregated-0.service"
UNIT_B = "launchcard-glm-5.3-flash-sglang-aggregated-1.service"


def record(host, *units, runtime=None):
    path = host["tmp"] / "state.json"
    path.write_text(json.dumps({"version": 1, "card": {}, "previous": None, "runtime": runtime or {}, "units": {},
                                "instances": [{"id": u[len("launchcard-"):-len(".service")], "unit": u} for u in units]}))
    return str(path)


def needs_for(*units, former=()):
    """What preflight_needs gives a host that runs ``units`` (routers only: no GPU, no disk, no port to check)."""
    instances = [{"unit": u, "recipe": "sglang-router", "role": "router", "gpus": 0, "image": None, "ports": [],
                  "former_units": list(former)} for u in units]
    card = {"recipes": [{"name": "sglang-router"}], "hardware": {}, "checkpoints": {}, "model": {}}
    return host_needs(card, {"instances": instances})


def removal(capsys, host, rec, needs, allow):
    args = dict(needs=needs, record=rec, checks={"os": False, "disk": False})
    if allow is not None:
        args["allow_removal"] = allow
    return run_module(capsys, host, **args)


def test_an_instance_the_plan_drops_fails_the_host_naming_it(host, capsys):
    result = removal(capsys, host, record(host, UNIT_A, UNIT_B), needs_for(UNIT_A), False)
    check = by_check(result)["removal"]
    assert result["failed_checks"] == ["removal"]
    assert check["found"] == "glm-5.3-flash-sglang-aggregated-1"
    assert check["message"].startswith("this host serves glm-5.3-flash-sglang-aggregated-1, which the plan no longer "
                                       "places here")
    assert "set launchcard_allow_removal=true to remove it" in check["message"]


def test_check_mode_lists_it_the_same_way(host, capsys):
    args = dict(needs=needs_for(UNIT_A), record=record(host, UNIT_A, UNIT_B), checks={"os": False, "disk": False},
                allow_removal=False, _ansible_check_mode=True)
    result = run_module(capsys, host, **args)
    assert result["failed_checks"] == ["removal"]
    assert by_check(result)["removal"]["found"] == "glm-5.3-flash-sglang-aggregated-1"


def test_allowed_removal_is_a_warning_naming_what_goes(host, capsys):
    result = removal(capsys, host, record(host, UNIT_A, UNIT_B), needs_for(UNIT_A), True)
    check = by_check(result)["removal"]
    assert result["failed_checks"] == [] and check["severity"] == "warning"
    assert "this deploy stops and removes it (launchcard_allow_removal is true)" in check["message"]


def test_a_kept_or_renamed_instance_and_a_first_deploy_pass(host, capsys):
    assert by_check(removal(capsys, host, record(host, UNIT_A), needs_for(UNIT_A), False))["removal"]["ok"] is True
    # the record names the unit under a former role name, the plan its new name: a rename, not a removal
    renamed = needs_for(UNIT_B, former=[UNIT_A])
    assert by_check(removal(capsys, host, record(host, UNIT_A), renamed, False))["removal"]["ok"] is True
    # no record yet (a first deploy), a record that does not parse
    missing = str(host["tmp"] / "none.json")
    assert by_check(removal(capsys, host, missing, needs_for(UNIT_A), False))["removal"]["ok"] is True


def test_not_checked_unless_asked(host, capsys):
    # playbooks/upgrade.yml removes what it replaces itself: no allow_removal, no check
    assert "removal" not in by_check(removal(capsys, host, record(host, UNIT_A, UNIT_B), needs_for(UNIT_A), None))


def test_a_host_the_plan_gives_nothing_is_checked_for_what_it_serves_alone(host, capsys):
    # a misspelt launchcard_recipes leaves the host out of the plan: its preflight call fails it, naming what it serves
    args = dict(needs={}, record=record(host, UNIT_A), allow_removal=False, placed=False)
    result = run_module(capsys, host, **args)
    assert result["failed_checks"] == ["removal"]
    assert [r["check"] for r in result["checks"]] == ["removal"]
    assert by_check(result)["removal"]["found"] == "glm-5.3-flash-sglang-aggregated-0"
    # one that serves nothing (a monitoring host) passes, and nothing else of it is judged
    result = run_module(capsys, host, needs={}, record=str(host["tmp"] / "none.json"), allow_removal=False, placed=False)
    assert result["failed_checks"] == [] and [r["check"] for r in result["checks"]] == ["removal"]


def test_a_misspelt_launchcard_recipes_is_named_in_the_removal_message(host, capsys):
    args = dict(needs={}, record=record(host, UNIT_A), allow_removal=False, placed=False)
    message = by_check(run_module(capsys, host, misspelt_recipes=["launchcard_recipe"], **args))["removal"]["message"]
    assert message.startswith("this host serves glm-5.3-flash-sglang-aggregated-0, which the plan no longer places "
                              "here (launchcard_recipe is set on this host: did you mean launchcard_recipes?): nothing "
                              "is stopped")
    # none found: the message still says where to look
    message = by_check(run_module(capsys, host, **args))["removal"]["message"]
    assert "(a host or group without its launchcard_recipes, a misspelt variable?)" in message


def runtime_change(capsys, host, kind, runtime, allow, misspelt=(), units=(UNIT_A,)):
    args = dict(needs=needs_for(UNIT_A), record=record(host, *units, runtime={"kind": kind}), runtime=runtime,
                checks=dict((c, False) for c in ("os", "disk", "container_engine", "image_disk", "native_install")),
                allow_removal=False, misspelt=list(misspelt))
    if allow is not None:
        args["allow_runtime_change"] = allow
    return run_module(capsys, host, **args)


def test_a_deploy_that_would_move_running_instances_to_another_runtime_fails_naming_both(host, capsys):
    # launchcard_runtim: podman on a podman fleet: the plan falls back to the default, docker
    result = runtime_change(capsys, host, "podman", "docker", False, misspelt=["launchcard_runtim"])
    check = by_check(result)["runtime_change"]
    assert "runtime_change" in result["failed_checks"]
    assert check["need"] == "podman (the record's runtime)" and check["found"] == "docker (launchcard_runtime)"
    assert check["message"] == (
        "this host runs glm-5.3-flash-sglang-aggregated-0 under podman, but the plan asks for docker "
        "(launchcard_runtime; launchcard_runtim is set on this host: did you mean launchcard_runtime?): nothing is "
        "changed; set launchcard_runtime to podman, or set launchcard_allow_runtime_change=true to move it to docker")


def test_native_to_a_container_is_a_change_of_runtime_too(host, capsys):
    check = by_check(runtime_change(capsys, host, "native", "podman", False))["runtime_change"]
    assert check["severity"] == "error" and "under native, but the plan asks for podman" in check["message"]
    assert "did you mean" not in check["message"]


def test_an_allowed_change_is_a_warning_naming_what_moves(host, capsys):
    result = runtime_change(capsys, host, "podman", "docker", True)
    check = by_check(result)["runtime_change"]
    assert "runtime_change" not in result["failed_checks"] and check["severity"] == "warning"
    assert "this deploy moves it to docker (launchcard_allow_runtime_change is true)" in check["message"]


def test_the_same_runtime_a_first_deploy_or_no_check_passes(host, capsys):
    assert by_check(runtime_change(capsys, host, "podman", "podman", False))["runtime_change"]["ok"] is True
    # the instance the record names is one the plan removes: the removal check names it, not this one
    assert "runtime_change" not in by_check(runtime_change(capsys, host, "podman", "docker", False, units=(UNIT_B,)))
    # not asked (playbooks/upgrade.yml, playbooks/preflight.yml)
    assert "runtime_change" not in by_check(runtime_change(capsys, host, "podman", "docker", None))
    # no record yet
    args = dict(needs=needs_for(UNIT_A), record=str(host["tmp"] / "none.json"), runtime="docker",
                checks={"os": False, "disk": False}, allow_runtime_change=False)
    assert "runtime_change" not in by_check(run_module(capsys, host, **args))


REPO = "zai-org/GLM-5.3-Flash"
# one name per line: ansible-lint reads this folder as modules, and ansible-core's doc reader warns on a tuple
OLD = "46a050bec13002ad29ee795c16e61cf4fa3c4a9c"
NEW = "ba5ca7dae8b2bc1f12fffa3ea9622ae98aece875"


def test_recorded_card_names_the_repo_the_revision_and_the_one_before():
    first = state.build({}, {"sha256": "1" * 64, "repo": REPO, "revision": OLD}, [], {"kind": "podman"})
    assert recorded_card(json.dumps(first)) == {"repo": REPO, "revision": OLD, "previous_revision": None}
    # an upgrade's record keeps the one it replaced
    second = state.build({}, {"sha256": "2" * 64, "repo": REPO, "revision": NEW}, [], {"kind": "podman"}, previous=first)
    assert recorded_card(json.dumps(second)) == {"repo": REPO, "revision": NEW, "previous_revision": OLD}
    # a replaced record that named no card (one read from unit files) has no revision to give
    third = state.build({}, {"sha256": "3" * 64, "repo": REPO, "revision": NEW}, [], {}, previous=state.build({}, {}, [], {}))
    assert recorded_card(json.dumps(third))["previous_revision"] is None


def test_recorded_card_is_none_without_a_record_naming_a_card():
    assert recorded_card(None) is None and recorded_card("") is None
    assert recorded_card("{not json") is None and recorded_card(json.dumps({"version": 9})) is None
    assert recorded_card(json.dumps(state.build({}, {}, [], {}))) is None
    assert recorded_card(json.dumps(state.build({}, {"sha256": "1" * 64, "repo": REPO}, [], {}))) is None


def test_the_preflight_call_returns_the_recorded_card_only_with_a_record(host, capsys):
    path = host["tmp"] / "state.json"
    path.write_text(json.dumps(state.build({}, {"sha256": "1" * 64, "repo": REPO, "revision": OLD}, [], {})))
    args = dict(needs={}, checks={"os": False, "disk": False})
    assert run_module(capsys, host, record=str(path), **args)["recorded_card"] == {
        "repo": REPO, "revision": OLD, "previous_revision": None}
    assert run_module(capsys, host, **args)["recorded_card"] is None
    assert run_module(capsys, host, record=str(host["tmp"] / "none.json"), **args)["recorded_card"] is None
