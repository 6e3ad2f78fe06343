# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit converge decisions: file diff, ``systemctl show`` parsing, actions."""

from __future__ import annotations

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils._systemd import (
    SHOW_PROPERTIES,
    actions,
    diff_files,
    parse_show,
    settled_converge,
    triggered,
)

P = "launchcard-"


def test_diff_files():
    desired = {P + "a.service": "A2", P + "b.service": "B", P + "new.service": "N"}
    existing = {P + "a.service": "A1", P + "b.service": "B", P + "old.service": "O", "other.service": "X"}
    assert diff_files(desired, existing, P) == {
        "write": [P + "a.service", P + "new.service"],
        "remove": [P + "old.service"],
        "same": [P + "b.service"],
    }


def test_diff_files_nothing_to_do_and_everything_to_remove():
    units = {P + "a.service": "A"}
    assert diff_files(units, dict(units), P) == {"write": [], "remove": [], "same": [P + "a.service"]}
    assert diff_files({}, units, P) == {"write": [], "remove": [P + "a.service"], "same": []}


SHOW = """Id=launchcard-a.service
LoadState=loaded
ActiveState=active
SubState=running
UnitFileState=enabled
NRestarts=0
ExecMainPID=4242

Id=launchcard-b.service
LoadState=loaded
ActiveState=failed
SubState=failed
UnitFileState=disabled
NRestarts=3
ExecMainPID=0

Id=launchcard-c.service
LoadState=not-found
ActiveState=inactive
SubState=dead
UnitFileState=
NRestarts=0
ExecMainPID=0
"""


def test_parse_show_multi_unit_output():
    units = parse_show(SHOW)
    assert sorted(units) == [P + "a.service", P + "b.service", P + "c.service"]
    assert units[P + "a.service"] == {"Id": P + "a.service", "LoadState": "loaded", "ActiveState": "active",
                                      "SubState": "running", "UnitFileState": "enabled", "NRestarts": "0",
                                      "ExecMainPID": "4242"}
    assert units[P + "b.service"]["NRestarts"] == "3"
    assert units[P + "c.service"]["UnitFileState"] == ""
    assert set(units[P + "c.service"]) == set(SHOW_PROPERTIES)


def test_parse_show_values_with_equals_and_blank_runs():
    text = "Id=x.service\nDescription=a=b\n\n\n\nId=y.service\nActiveState=active\n"
    units = parse_show(text)
    assert units["x.service"]["Description"] == "a=b"
    assert units["y.service"]["ActiveState"] == "active"
    assert parse_show("") == {}
    assert parse_show("LoadState=loaded\n") == {}


def _states(**kw):
    return {name: {"ActiveState": active, "UnitFileState": enabled} for name, (active, enabled) in kw.items()}


def test_actions_started():
    states = _states(running=("active", "enabled"), changed=("active", "enabled"), dead=("inactive", "enabled"),
                     failed=("failed", "disabled"), starting=("activating", "enabled"),
                     runtime=("active", "enabled-runtime"))
    names = ["running", "changed", "dead", "failed", "starting", "runtime", "new"]
    out = actions(names, states, {"changed", "starting", "new"}, "started")
    assert out == {
        "enable": ["failed", "new"],
        "disable": [],
        "start": ["dead", "failed", "new"],
        "restart": ["changed", "starting"],
        "stop": [],
    }


def test_actions_started_when_all_is_well_does_nothing():
    states = _states(a=("active", "enabled"), b=("reloading", "enabled"))
    nothing = {"enable": [], "disable": [], "start": [], "restart": [], "stop": []}
    assert actions(["a", "b"], states, set(), "started") == nothing


def test_actions_stopped():
    states = _states(a=("active", "enabled"), b=("inactive", "disabled"), c=("activating", "disabled"),
                     d=("failed", "enabled-runtime"))
    out = actions(["a", "b", "c", "d", "missing"], states, {"a"}, "stopped")
    assert out == {"enable": [], "disable": ["a", "d"], "start": [], "restart": [], "stop": ["a", "c"]}


@pytest.mark.parametrize("state", ["started", "stopped"])
def test_actions_are_sorted(state):
    if state == "started":
        states = _states(b=("inactive", "disabled"), a=("active", "enabled"))
    else:
        states = _states(b=("active", "enabled"), a=("active", "enabled"))
    out = actions(["b", "a", "c"], states, set(), state)
    for verb, names in out.items():
        assert names == sorted(names), verb


LIVE = P + "card-vllm-aggregated-0"


def test_the_converge_starts_the_timer_and_never_the_service_it_fires():
    names = [LIVE + ".service", LIVE + "-liveness.service", LIVE + "-liveness.timer"]
    assert triggered(names) == {LIVE + "-liveness.service"}
    fresh = actions(names, {}, set(names), "started")
    assert fresh["start"] == sorted([LIVE + ".service", LIVE + "-liveness.timer"])
    assert fresh["enable"] == fresh["start"] and not fresh["restart"]
    running = {LIVE + ".service": {"ActiveState": "active", "UnitFileState": "enabled"},
               LIVE + "-liveness.timer": {"ActiveState": "active", "UnitFileState": "enabled"},
               LIVE + "-liveness.service": {"ActiveState": "inactive", "UnitFileState": "static"}}
    assert not any(actions(names, running, set(), "started").values())
    # a rewritten probe is not run by the converge; its timer fires it
    assert actions(names, running, {LIVE + "-liveness.service"}, "started")["restart"] == []
    running[LIVE + "-liveness.service"]["ActiveState"] = "activating"
    assert actions(names, running, set(), "stopped")["stop"] == sorted(names)
    # a probe that failed does not unsettle a deploy that changes nothing
    running[LIVE + "-liveness.service"]["ActiveState"] = "failed"
    found = {"files": {}, "states": running, "dropins": [], "secrets_in_place": True, "endpoints": [], "then": []}
    assert settled_converge(found, []) is not None
