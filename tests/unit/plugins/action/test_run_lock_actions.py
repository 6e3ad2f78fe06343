# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run_lock action (the locks of a run found on the controller from the run and the plan) and run_lock_status
(the locks a run holds across its hosts, and why it must stop), as playbooks/undeploy.yml runs them. The host side
is the real lock code (module_utils/_lock.py) on files under tmp_path."""

from __future__ import annotations

from unittest.mock import MagicMock

import pytest

from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext

from ansible_collections.launchcard.inference.plugins.action.run_lock import ActionModule as RunLock
from ansible_collections.launchcard.inference.plugins.action.run_lock_status import ActionModule as RunLockStatus
from ansible_collections.launchcard.inference.plugins.module_utils import _lock as lock

RUN_A = {"id": "20261130T130055Z-aaaaaaaa", "user": "alice", "controller": "ctl-a", "playbook": "undeploy.yml",
         "cards": {"c.json": "sha256:" + "a" * 64, "d.json": "sha256:" + "d" * 64}, "anchor": "h1"}
RUN_B = dict(RUN_A, id="20261130T130056Z-bbbbbbbb", user="bob", controller="ctl-b", playbook="deploy.yml")
PLAN = {"hosts": {"h1": {"card": "c.json", "instances": []}, "h2": {"card": "d.json", "instances": []}}}


def plugin(cls, args, check_mode=False):
    task = MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = check_mode
    connection = MagicMock()
    connection._shell.tmpdir = None
    action = cls(task, connection, PlayContext(), DataLoader(), None, None)
    return action, connection


def take(args, host, check_mode=False, **task_vars):
    """The run_lock action on ``host``, its module answered by the real lock code (as plugins/modules/run_lock.py)."""
    action, dummy = plugin(RunLock, args, check_mode)
    sent = []

    def module(module_name, module_args, task_vars):
        sent.append((module_name, module_args))
        results, held, broken, dummy = lock.apply_all(module_args.get("state", "present"), module_args["paths"],
                                                      module_args["holder"], module_args["break_stale"], check_mode)
        return {"changed": False, "locks": results, "held_by": held, "broken": broken, "failed": bool(held)}
    action._execute_module = MagicMock(side_effect=module)
    return action.run(task_vars=dict(task_vars, inventory_hostname=host)), sent


def test_with_run_the_host_is_sent_its_paths_and_holder_never_the_plan(tmp_path):
    res, [(name, sent)] = take({"run": RUN_A, "plan": PLAN, "lock_dir": str(tmp_path) + "/"}, "h2")
    assert name == "launchcard.inference.run_lock" and not res["failed"]
    assert sent == {"state": "present", "break_stale": False, "paths": [{"path": "%s/lock.json" % tmp_path, "scope": "host"}],
                    "holder": {"run_id": RUN_A["id"], "user": "alice", "controller": "ctl-a", "playbook": "undeploy.yml",
                               "card": RUN_A["cards"]["d.json"]}}
    # the anchor takes the fleet lock too; the plan defaults to the play's launchcard_plan
    res, [(dummy, sent)] = take({"run": RUN_A, "lock_dir": str(tmp_path), "break_stale": True}, "h1", launchcard_plan=PLAN)
    assert [p["scope"] for p in sent["paths"]] == ["host", "fleet"] and sent["holder"]["card"] == RUN_A["cards"]["c.json"]
    assert sent["break_stale"] is True and not set(sent) & {"run", "plan", "scope", "lock_dir"}
    # the fleet lock alone names every card of the run
    res, [(dummy, sent)] = take({"run": RUN_A, "plan": PLAN, "scope": "fleet", "lock_dir": str(tmp_path)}, "h2")
    assert sent["paths"] == [{"path": "%s/fleet-lock.json" % tmp_path, "scope": "fleet"}]
    assert sent["holder"]["card"] == ",".join(sorted(RUN_A["cards"].values()))


def test_without_run_the_paths_and_holder_go_as_given(tmp_path):
    paths = [{"path": "%s/lock.json" % tmp_path, "scope": "host"}]
    res, [(dummy, sent)] = take({"state": "absent", "paths": paths, "holder": {"run_id": "x"}, "fail_msg": "stop"}, "h1")
    assert sent == {"state": "absent", "paths": paths, "holder": {"run_id": "x"}, "break_stale": False, "fail_msg": "stop"}


def test_a_run_without_id_is_refused_before_the_host_is_contacted():
    res, sent = take({"run": {"user": "alice"}}, "h1", launchcard_plan=PLAN)
    assert res["failed"] is True and res["msg"] == "run: no launchcard_run (the plan role sets it)" and sent == []


@pytest.mark.parametrize("args, message", [
    ({"run": RUN_A, "paths": [{"path": "/x", "scope": "host"}], "holder": {"run_id": "x"}}, "mutually exclusive"),
    ({"state": "present"}, "one of the following is required: run, paths"),
])
def test_a_run_with_paths_too_or_neither_is_refused_before_the_host_is_contacted(args, message):
    with pytest.raises(AnsibleActionFail, match=message):
        take(args, "h1", launchcard_plan=PLAN)


def test_status_gives_the_locks_this_run_took_and_the_refusal_naming_the_other_run(tmp_path):
    dirs = dict((h, tmp_path / h) for h in ("h1", "h2", "h3"))
    for d in dirs.values():
        d.mkdir()
    # another run holds h2's lock: this run takes h1's (and the fleet lock, h1 is the anchor), not h2's
    take({"run": RUN_B, "plan": PLAN, "lock_dir": str(dirs["h2"])}, "h2")
    hostvars = {"h1": {"locked": take({"run": RUN_A, "plan": PLAN, "lock_dir": str(dirs["h1"])}, "h1")[0]},
                "h2": {"locked": take({"run": RUN_A, "plan": PLAN, "lock_dir": str(dirs["h2"])}, "h2")[0]},
                "h3": {"locked": {"skipped": True, "changed": False}}}
    action, connection = plugin(RunLockStatus, {"results": ["locked"], "anchor": "h1"})
    out = action.run(task_vars={"hostvars": hostvars, "ansible_play_hosts_all": ["h1", "h2", "h3"]})
    assert out["changed"] is False and "failed" not in out
    assert out["taken"] == [{"host": "h1", "paths": [{"path": "%s/lock.json" % dirs["h1"], "scope": "host"},
                                                     {"path": "%s/fleet-lock.json" % dirs["h1"], "scope": "fleet"}]}]
    assert out["refusal"].startswith("another run holds the lock of this fleet; nothing was changed:\n")
    assert "h2:%s/lock.json held by bob@ctl-b, deploy.yml, run %s" % (dirs["h2"], RUN_B["id"]) in out["refusal"]
    assert not connection.mock_calls or all(c[0].startswith("_shell") for c in connection.mock_calls)


def test_status_counts_the_fleet_lock_taken_outside_the_play_for_the_anchor(tmp_path):
    fleet, dummy = take({"run": RUN_A, "plan": PLAN, "scope": "fleet", "lock_dir": str(tmp_path)}, "h2")
    action, dummy = plugin(RunLockStatus, {"results": ["locked"], "anchor": "h1", "fleet": fleet})
    out = action.run(task_vars={"hostvars": {"h2": {"locked": {"skipped": True}}}, "ansible_play_hosts_all": ["h2"]})
    assert out["taken"] == [{"host": "h1", "paths": [{"path": "%s/fleet-lock.json" % tmp_path, "scope": "fleet"}]}]
    assert out["refusal"] == ""
    # nothing taken anywhere: nothing to release, nothing refused
    action, dummy = plugin(RunLockStatus, {"results": ["locked"], "anchor": None})
    assert action.run(task_vars={"hostvars": {}, "ansible_play_hosts_all": ["h2"]}) == {"changed": False, "taken": [], "refusal": ""}


def test_status_says_the_run_changes_nothing_only_when_every_live_host_is_settled_and_no_lock_is_held(tmp_path):
    reading = {"changed": False, "units": {}}
    settled = {"settled": reading, "setup_parts": []}
    hostvars = {"h1": {"step": settled}, "h2": {"step": settled}, "h3": {"step": {"skipped": True}}}
    task_vars = {"hostvars": hostvars, "ansible_play_hosts_all": ["h1", "h2", "h3"], "ansible_play_hosts": ["h1", "h2"]}

    def status(**args):
        action, dummy = plugin(RunLockStatus, dict({"results": ["step"], "anchor": "h1", "settled": "step"}, **args))
        return action.run(task_vars=task_vars)

    # h3 failed preflight (out of the live hosts): the two that go on are left as they are
    assert status()["settled"] is True
    # a host with a setup part, or without a reading, changes
    hostvars["h2"]["step"] = {"settled": reading, "setup_parts": ["weights"]}
    assert status()["settled"] is False
    hostvars["h2"]["step"] = {"settled": None, "setup_parts": []}
    assert status()["settled"] is False
    assert status(settled_hosts=["h1"])["settled"] is True
    # no host left: not a run that changed nothing
    assert status(settled_hosts=[])["settled"] is False
    # a lock still held (the fleet lock taken outside the play) sends the run the whole way, to its release
    hostvars["h2"]["step"] = settled
    fleet, dummy = take({"run": RUN_A, "plan": PLAN, "scope": "fleet", "lock_dir": str(tmp_path)}, "h2")
    assert status(fleet=fleet)["settled"] is False
    # without the option: no answer
    action, dummy = plugin(RunLockStatus, {"results": ["step"], "anchor": "h1"})
    assert "settled" not in action.run(task_vars=task_vars)


def test_status_reads_the_host_step_inside_the_preflight_result_by_its_dotted_path():
    reading = {"changed": False, "units": {}}
    hostvars = {"h1": {"preflight_result": {"host_step": {"settled": reading, "setup_parts": []}}},
                "h2": {"preflight_result": {"host_step": {"settled": reading, "setup_parts": []}}},
                # unreachable: its result holds no host step
                "h3": {"preflight_result": {"unreachable": True}}}
    task_vars = {"hostvars": hostvars, "ansible_play_hosts_all": ["h1", "h2", "h3"], "ansible_play_hosts": ["h1", "h2"]}

    def status(**args):
        action, dummy = plugin(RunLockStatus, dict({"results": ["preflight_result"], "anchor": "h1",
                                                    "settled": "preflight_result.host_step"}, **args))
        return action.run(task_vars=task_vars)

    assert status()["settled"] is True
    # every host of the play asked for: the unreachable one has no step, so the run goes the whole way
    assert status(settled_hosts=["h1", "h2", "h3"])["settled"] is False
    hostvars["h2"]["preflight_result"]["host_step"] = {}
    assert status()["settled"] is False
