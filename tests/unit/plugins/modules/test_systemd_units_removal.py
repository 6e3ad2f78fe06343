# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd_units' allow_removal (docs/untrusted-input.md, "Inventory mistakes"): a host the plan gives nothing
(its recipes dropped or misspelt in the inventory) keeps serving; nothing on it changes unless removal is allowed.

The module in-process against the fake ``systemctl`` of test_systemd_units.py.
"""

from __future__ import annotations

import pytest

from ansible_collections.launchcard.inference.tests.unit.plugins.modules.test_systemd_units import (
    A,
    FOREIGN,
    OLD,
    run_module,
    unit_text,
)


def serving(systemd):
    systemd.put(A, unit_text("/bin/a"))
    systemd.put(OLD, unit_text("/bin/old"))
    systemd.put(FOREIGN, unit_text("/usr/sbin/nginx"))
    systemd.running(A, OLD, FOREIGN)


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_host_given_no_unit_refuses_to_stop_what_it_serves(systemd, capsys, check_mode):
    serving(systemd)
    args = {"allow_removal": False}
    if check_mode:
        args["_ansible_check_mode"] = True
    result, dummy = run_module(capsys, systemd, [], rc=1, **args)
    assert result["msg"].startswith("refusing to stop %s, %s: the plan places nothing on this host any more" % (A, OLD))
    assert "set launchcard_allow_removal=true" in result["msg"] and "nothing was changed" in result["msg"]
    assert result["removals"] == [A, OLD]
    assert systemd.mutating() == []
    assert systemd.listing() == [A, OLD, FOREIGN]
    assert all(s["active"] == "active" for s in systemd.state().values())


def test_allowed_removal_stops_and_removes_them(systemd, capsys):
    serving(systemd)
    result, dummy = run_module(capsys, systemd, [], allow_removal=True)
    assert result["removed"] == [A, OLD]
    assert systemd.listing() == [FOREIGN]


def test_units_that_no_longer_run_are_pruned_without_the_variable(systemd, capsys):
    systemd.put(OLD, unit_text("/bin/old"))  # left by a deploy, stopped since: nothing serves
    result, dummy = run_module(capsys, systemd, [], allow_removal=False)
    assert result["removed"] == [OLD]


def test_a_host_that_keeps_units_is_left_to_preflights_removal_check(systemd, capsys):
    # a unit renamed by a release is pruned beside its new name: preflight tells a rename from a removal
    serving(systemd)
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a"))], allow_removal=False)
    assert result["removed"] == [OLD]


def test_a_removed_unit_whose_stop_failed_is_not_left_failed(systemd, capsys):
    # podman's client exiting 127 on the stop left the router's unit `not-found failed`, which node_exporter's
    # systemd collector reports (LaunchcardUnitFailed) after an undeploy
    serving(systemd)
    state = systemd.state()
    state["_stop_fails"] = [A]
    state[OLD].update(active="failed", sub="failed")  # crashed before the undeploy
    systemd.save(state)
    result, dummy = run_module(capsys, systemd, [], allow_removal=True)
    assert result["removed"] == [A, OLD]
    after = systemd.state()
    assert (after[A]["active"], after[OLD]["active"]) == ("inactive", "inactive")
    assert after[FOREIGN]["active"] == "active"
    reset = [c for c in systemd.mutating() if c[0] == "reset-failed"]
    assert reset == [["reset-failed", "--", A, OLD]]
    # after the reload that dropped their files
    assert systemd.mutating().index(reset[0]) > systemd.mutating().index(["daemon-reload"])
