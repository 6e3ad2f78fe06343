# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's record of what it runs."""

from __future__ import annotations

import hashlib
import os

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils import _state as state

CARD = {"key": "c.json", "sha256": "ab", "repo": "org/m", "revision": "1" * 40}
INST = [{"id": "m-x-0", "unit": "launchcard-m-x-0.service", "role": "monolithic", "argv": ["sglang", "serve"],
         "gpu_ids": [0], "changes": []}]


def test_build_hashes_units_trims_instances_and_keeps_one_previous():
    first = state.build({"launchcard-m-x-0.service": "A\n"}, CARD, INST, {"kind": "native"})
    assert first["units"]["launchcard-m-x-0.service"] == {"sha256": hashlib.sha256(b"A\n").hexdigest(), "text": "A\n"}
    assert set(first["instances"][0]) == set(state.INSTANCE_KEYS) and first["instances"][0]["role"] == "monolithic"
    second = state.build({"launchcard-m-x-0.service": "B\n"}, dict(CARD, revision="2" * 40), INST, {}, previous=first)
    third = state.build({"launchcard-m-x-0.service": "C\n"}, CARD, INST, {}, previous=second)
    assert second["previous"]["units"]["launchcard-m-x-0.service"]["text"] == "A\n"
    assert third["previous"]["card"]["revision"] == "2" * 40 and "previous" not in third["previous"]


def test_same_state_ignores_previous_only():
    a = state.build({"u": "A"}, CARD, INST, {})
    assert state.same_state(a, state.build({"u": "A"}, CARD, INST, {}, previous=a))
    assert not state.same_state(a, state.build({"u": "B"}, CARD, INST, {}))
    assert not state.same_state(None, a)


def test_round_trip_and_bad_files():
    a = state.build({"u": "A"}, CARD, INST, {"kind": "native"})
    assert state.parse(state.dumps(a)) == a
    assert state.parse("") is None and state.parse(None) is None
    with pytest.raises(ValueError, match="not JSON"):
        state.parse("{")
    with pytest.raises(ValueError, match="version"):
        state.parse('{"version": 7}')


def test_from_unit_files():
    rec = state.from_unit_files({"launchcard-a.service": "X"})
    assert rec["source"] == "unit-files" and rec["card"] is None and rec["units"]["launchcard-a.service"]["text"] == "X"


def test_the_record_holds_quadlet_files_beside_the_unit_files(tmp_path):
    # a Debian 13 host runs its engines from /etc/containers/systemd/*.container (podman >= 4.4)
    units, quadlet = tmp_path / "system", tmp_path / "containers-systemd"
    units.mkdir()
    quadlet.mkdir()
    (units / "launchcard-a.service").write_text("A")
    (units / "launchcard-b.container").write_text("not read here")
    (quadlet / "launchcard-b.container").write_text("B")
    (quadlet / "launchcard-c.service").write_text("not read here")
    (quadlet / "other.container").write_text("not ours")
    assert state.unit_files(str(units), "launchcard-", str(quadlet)) == {
        "launchcard-a.service": "A", "launchcard-b.container": "B"}
    assert state.unit_files(str(units), "launchcard-", str(tmp_path / "absent")) == {"launchcard-a.service": "A"}


def test_the_record_holds_the_liveness_timer_as_the_controller_names_it(tmp_path):
    # the controller's expected record (_units_gate.settled) names every file the converge writes: a record that
    # left the timer out never matched it, so a host with a liveness timer was never settled on a no-op deploy
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _units_gate as units_gate
    files = {"launchcard-a.service": "A", "launchcard-a-liveness.service": "L", "launchcard-a-liveness.timer": "T"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert state.unit_files(str(tmp_path), "launchcard-", str(tmp_path / "absent")) == files
    changed, record, dummy = state.write_present(str(tmp_path / "state.json"), str(tmp_path), "launchcard-", CARD, INST,
                                                 {"kind": "native"}, False, os.replace,
                                                 str(tmp_path / "absent"))
    assert changed
    units = [{"name": n, "content": t} for n, t in files.items()]
    expected = state.state_sha256(state.build(files, CARD, INST, {"kind": "native"}))
    assert state.state_sha256(record) == expected
    found = {"files": dict((n, state.sha256_text(t)) for n, t in files.items()),
             "states": {"launchcard-a.service": {"ActiveState": "active", "SubState": "running", "UnitFileState": "enabled"},
                        "launchcard-a-liveness.timer": {"ActiveState": "active", "SubState": "waiting",
                                                        "UnitFileState": "enabled"},
                        "launchcard-a-liveness.service": {"ActiveState": "inactive", "SubState": "dead",
                                                          "UnitFileState": "static"}},
             "dropins": [], "secrets_in_place": True, "endpoints": [], "then": [],
             "record_sha256": state.state_sha256(record)}
    assert units_gate.settled(found, units, None, {"card": CARD, "instances": INST, "runtime": {"kind": "native"}})
