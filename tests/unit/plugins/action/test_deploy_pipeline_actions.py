# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy's pipeline steps after preflight: deploy_fleet (once for the fleet: a limited run's stranded consumers,
the fleet lock) and settle_or_lock (per host: its settled reading without a round trip, else its run lock)."""

from __future__ import annotations

from unittest.mock import MagicMock

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible.template import Templar
from ansible_collections.launchcard.inference.plugins.action import deploy_fleet as fleet_action
from ansible_collections.launchcard.inference.plugins.action import settle_or_lock as host_action
from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
from ansible_collections.launchcard.inference.plugins.plugin_utils import _run_locks as core
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import EX, _h, _plan

PD = [_h("pre", "10.7.0.1", ["sglang-prefill"]), _h("dec", "10.7.0.2", ["sglang-decode"]),
      _h("rtr", "10.7.0.3", ["sglang-router"])]
HOST = {"path": "/var/lib/launchcard/lock.json", "scope": "host", "defer": True}
FLEET = {"path": "/var/lib/launchcard/fleet-lock.json", "scope": "fleet", "defer": True}
SETTLED = {"changed": False, "settled": True, "units": [], "written": [], "removed": [],
           "health": {"endpoints": [], "unhealthy": [], "then_gated": None}}
RUN = {"id": "r-1", "user": "ops", "controller": "ctl", "playbook": "deploy.yml", "anchor": "pre",
       "cards": {"c": "sha256:abc"}}
LOCKED = {"changed": True, "locks": [{"path": HOST["path"], "scope": "host", "acquired": True}]}


@pytest.fixture(autouse=True)
def reading(monkeypatch):
    """The host's settled reading and its units setup as the task variables ``units_settled`` and
    ``units_prepare_needed`` give them here (UnitsHost's own are test_units_role_actions'); each reading is counted."""
    reads = []

    def settled(self):
        reads.append(self.host)
        value = self._vars.get("units_settled")
        if isinstance(value, Exception):
            raise value
        return value
    monkeypatch.setattr(host_action.units_host.UnitsHost, "settled", settled)
    # whether the units role's setup has anything to do: the task variable units_prepare_needed here
    monkeypatch.setattr(host_action.units_host.UnitsHost, "prepare_needed",
                        lambda self: bool(self._vars.get("units_prepare_needed")))
    # and whether the runtime role has anything to do: runtime_needed (RuntimeHost's own: test_runtime_host)
    monkeypatch.setattr(host_action.units_host.RuntimeHost, "needed", lambda self: bool(self._vars.get("runtime_needed")))
    return reads


def build(cls, args, check_mode=False, task_vars=None):
    task = MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = check_mode
    task.action = "launchcard.inference.x"
    connection = MagicMock()
    connection._shell.tmpdir = None
    templar = Templar(loader=DataLoader(), variables=task_vars or {})
    action = cls.ActionModule(task, connection, PlayContext(), DataLoader(), templar, None)
    action._execute_module = MagicMock(return_value=dict(LOCKED))
    return action, connection


ENGINE_PLAN = {"card": "c", "instances": [{"role": "prefill"}]}
STACKS = {"nvidia": "nvidia", "amd": "rocm"}


def host_args(deferred, host_plan=..., weights_staged=True, vendor="none", **flags):
    """The host step's arguments as deploy-locks.yml gives them: the preflight result, the host's plan, the flags."""
    host_plan = ENGINE_PLAN if host_plan is ... else host_plan
    preflight = {"lock": {"deferred": deferred}, "stack_vendor": vendor, "weights_staged": weights_staged}
    return dict(dict(preflight=preflight, host_plan=host_plan, stack_roles=STACKS), **flags)


def host_run(args, task_vars, check_mode=False):
    action, connection = build(host_action, args, check_mode, task_vars)
    return action.run(task_vars=task_vars), action, connection


def test_a_host_with_deferred_locks_no_setup_and_a_settled_reading_is_left_as_it_is():
    tv = {"inventory_hostname": "pre", "units_settled": SETTLED, "launchcard_run": RUN, "launchcard_plan": {}}
    out, action, connection = host_run(host_args([HOST, FLEET]), tv)
    assert out["settled"] == SETTLED and out["changed"] is False and out["setup_parts"] == []
    assert "locks" not in out  # the fleet lock task and the always section read 'locks' as "this host locked"
    assert not action._execute_module.called and not connection.exec_command.called


def test_a_host_with_a_setup_step_or_no_reading_takes_its_host_lock_only():
    plan = {"hosts": {"pre": {"card": "c"}}}
    for parts, reading, needed in ((["runtime"], SETTLED, True), ([], None, False)):
        tv = {"inventory_hostname": "pre", "units_settled": reading, "launchcard_run": RUN, "launchcard_plan": plan,
              "runtime_needed": needed}
        out, action, dummy = host_run(host_args([HOST, FLEET]), tv)
        assert out["settled"] is None and out["setup_parts"] == parts and out["locks"] == LOCKED["locks"]
        kw = action._execute_module.call_args.kwargs
        assert kw["module_name"] == "launchcard.inference.run_lock"
        # the fleet lock is the anchor's own task, once some host has locked; the holder names the host's card
        assert kw["module_args"]["paths"] == [HOST]
        assert kw["module_args"]["holder"] == {"run_id": "r-1", "user": "ops", "controller": "ctl",
                                               "playbook": "deploy.yml", "card": "sha256:abc"}


def test_the_reading_is_not_even_read_where_the_host_changes_anyway(reading):
    # a setup step to run: the reading (the unit files' rendering) is never built
    tv = {"inventory_hostname": "pre", "launchcard_run": RUN, "launchcard_plan": {}, "units_settled": SETTLED}
    out, action, dummy = host_run(host_args([HOST], weights_staged=False), tv)
    assert out["settled"] is None and action._execute_module.called and reading == []
    calls = []
    assert core.host_decision({"lock": {"deferred": [HOST]}}, ["weights"], lambda: calls.append(1))["settled"] is None
    assert not calls


def test_without_deferred_locks_nothing_is_read_and_nothing_is_taken():
    # --tags units (no preflight), or launchcard_lock_break (the preflight call took every lock)
    out, action, dummy = host_run(host_args([]), {"inventory_hostname": "pre", "units_settled": SETTLED})
    assert out["settled"] is None and "locks" not in out and not action._execute_module.called


def test_a_variable_the_reading_refuses_fails_the_host_naming_it_before_any_lock():
    tv = {"inventory_hostname": "pre", "units_settled": ValueError("launchcard_runtime: expected native, docker or podman")}
    out, action, dummy = host_run(host_args([HOST]), tv)
    assert out["failed"] and out["msg"] == ("launchcard.inference.settle_or_lock: launchcard_runtime: expected native, "
                                            "docker or podman")
    assert not action._execute_module.called


def test_a_lock_without_a_run_fails_before_any_host_is_contacted():
    tv = {"inventory_hostname": "pre", "units_settled": None, "launchcard_plan": {}}
    out, action, dummy = host_run(host_args([HOST]), tv)
    assert out["failed"] and "no launchcard_run" in out["msg"] and not action._execute_module.called


def moved_plan():
    """The PD fleet before and after the prefill's bootstrap port moved, each host's card named c."""
    from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_limit_peers import _override
    old = _plan(EX, PD)
    new = _plan(EX, _override(PD, "pre", "sglang-prefill", {"--disaggregation-bootstrap-port": "8999"}))
    for hp in new["hosts"].values():
        hp["card"] = "c"
    found = {"record_instances": state.record_instances({"instances": old["hosts"]["pre"]["instances"]})}
    return new, found


def fleet_run(args, hostvars, plan, check_mode=False, run=None):
    tv = {"hostvars": hostvars, "launchcard_plan": plan, "launchcard_cards": {"c": EX}, "launchcard_run": run or RUN}
    action, connection = build(fleet_action, args, check_mode, tv)
    return action.run(task_vars=tv), connection


def test_a_limited_run_that_strands_a_router_outside_it_is_refused_and_check_mode_lists_it():
    plan, found = moved_plan()
    hostvars = {"pre": {"preflight_result": {"units_found": found, "lock": {"deferred": [HOST, FLEET]}}}, "rtr": {}}
    out, connection = fleet_run({"hosts": ["pre"]}, hostvars, plan)
    assert out["failed"] and "stranded" not in out and len(out["msg"]) == 3
    assert "bootstrap port moves from 10.7.0.1:8998 to 10.7.0.1:8999" in out["msg"][1]
    assert out["_ansible_verbose_always"] and not connection.exec_command.called
    out, dummy = fleet_run({"hosts": ["pre"]}, hostvars, plan, check_mode=True)
    assert not out.get("failed") and len(out["stranded"]) == 3
    out, dummy = fleet_run({"hosts": ["pre"], "allow_moved_peers": True}, hostvars, plan)
    assert not out.get("failed") and out["stranded"][0].startswith("WARNING: ")
    # the check belongs to the units tag: without it, nothing is read
    out, dummy = fleet_run({"hosts": ["pre"], "consumers": False}, hostvars, plan)
    assert not out.get("failed") and out["stranded"] == [] and "msg" not in out


def test_a_full_run_reads_no_record_and_gives_the_anchor_s_deferred_fleet_lock():
    plan, dummy = moved_plan()
    hostvars = {"pre": {"preflight_result": {"lock": {"deferred": [HOST, FLEET]}}}, "dec": {}, "rtr": {}}
    out, dummy = fleet_run({"hosts": ["pre", "dec", "rtr"]}, hostvars, plan)
    assert out["stranded"] == [] and out["fleet_lock"] == [FLEET] and not out.get("failed")
    # the anchor outside the run (preflight took the fleet lock on it), or no anchor: nothing here
    out, dummy = fleet_run({"hosts": ["dec", "rtr"], "consumers": False}, hostvars, plan)
    assert out["fleet_lock"] == []
    out, dummy = fleet_run({"hosts": ["pre", "dec", "rtr"]}, hostvars, plan, run=dict(RUN, anchor=None))
    assert out["fleet_lock"] == []
    # launchcard_lock_break: the preflight call took every lock, nothing deferred
    hostvars["pre"]["preflight_result"]["lock"] = {"deferred": []}
    out, dummy = fleet_run({"hosts": ["pre", "dec", "rtr"]}, hostvars, plan)
    assert out["fleet_lock"] == []


def test_a_plan_the_limit_check_cannot_read_fails_naming_the_step():
    plan, found = moved_plan()
    hostvars = {"pre": {"preflight_result": {"units_found": found}}}
    out, dummy = fleet_run({"hosts": ["pre"]}, hostvars, dict(plan, hosts=dict(plan["hosts"], rtr={"card": "c", "instances": [{}]})))
    assert out["failed"] and out["msg"] == "launchcard.inference.deploy_fleet: 'recipe'"


def test_upgrade_s_read_of_the_records_gives_the_same_lines():
    # playbooks/upgrade.yml reads each record with its own task: the same refusal from that path
    plan, found = moved_plan()
    from_preflight, dummy = fleet_run({"hosts": ["pre"]}, {"pre": {"preflight_result": {"units_found": found}}}, plan)
    upgraded = {"pre": {"upgrade_current": {"record": {"instances": found["record_instances"]}}}}
    out, dummy = fleet_run({"hosts": ["pre"], "records": "upgrade_current.record.instances"}, upgraded, plan)
    assert out["msg"] == from_preflight["msg"] and len(out["msg"]) == 3 and out["failed"]
    # a host whose read returned nothing recorded nothing: a first deploy moves nothing
    out, dummy = fleet_run({"hosts": ["pre"]}, {"pre": {"preflight_result": {}}}, plan)
    assert out["stranded"] == [] and not out.get("failed")


def test_the_host_step_lists_the_setup_parts_preflight_found_missing_picked_by_the_run_s_tags():
    tv = {"inventory_hostname": "pre", "units_settled": SETTLED, "launchcard_run": RUN, "launchcard_plan": {}}
    bare = host_args([HOST], vendor="nvidia", weights_staged=False)
    tv = dict(tv, units_prepare_needed=True, runtime_needed=True)
    out, dummy, dummy = host_run(bare, tv)
    assert out["setup_parts"] == ["nvidia", "weights", "runtime", "units"] and out["settled"] is None and out["locks"]
    out, dummy, dummy = host_run(bare, dict(tv, ansible_run_tags=["units", "weights"], ansible_skip_tags=["weights"]))
    assert out["setup_parts"] == ["units"]
    # launchcard_install_accelerator_stack: false, and a --tags run none of whose parts are missing: settled
    out, action, dummy = host_run(dict(bare, install_stack=False), dict(tv, ansible_run_tags=["stack"]))
    assert out["setup_parts"] == [] and out["settled"] == SETTLED and not action._execute_module.called


def test_a_host_the_plan_gives_nothing_is_left_as_it_is_from_its_reading_and_takes_no_lock():
    # its preflight call defers no lock (it has none to take); a converge that would change nothing: no round trip
    tv = {"inventory_hostname": "old", "units_settled": SETTLED, "launchcard_run": RUN, "launchcard_plan": {}}
    out, action, dummy = host_run(host_args([], host_plan=None, vendor="nvidia"), tv)
    assert out["settled"] == SETTLED and out["setup_parts"] == [] and "locks" not in out
    # one whose units the converge removes: no reading, still no lock
    out, action, dummy = host_run(host_args([], host_plan=None), dict(tv, units_settled=None))
    assert out["settled"] is None and "locks" not in out and not action._execute_module.called
    # a planned host without deferred locks (launchcard_lock_break) is never settled
    out, dummy, dummy = host_run(host_args([]), tv)
    assert out["settled"] is None


def test_the_fleet_step_gives_the_holder_of_the_fleet_lock_it_returns():
    plan, dummy = moved_plan()
    hostvars = {"pre": {"preflight_result": {"lock": {"deferred": [HOST, FLEET]}}}, "dec": {}, "rtr": {}}
    out, dummy = fleet_run({"hosts": ["pre", "dec", "rtr"]}, hostvars, plan)
    assert out["fleet_holder"] == {"run_id": "r-1", "user": "ops", "controller": "ctl", "playbook": "deploy.yml",
                                   "card": "sha256:abc"}
    out, dummy = fleet_run({"hosts": ["dec", "rtr"]}, hostvars, plan)
    assert out["fleet_lock"] == [] and out["fleet_holder"] is None
