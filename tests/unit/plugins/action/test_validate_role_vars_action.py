# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validate_role_vars action (playbooks/tasks/deploy-check-vars.yml): every host's role variables checked once
per distinct set against the roles' real argument specs, each error named with its hosts; no host contacted."""

from __future__ import annotations

import os
from unittest.mock import MagicMock

import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible.template import Templar

from ansible_collections.launchcard.inference.plugins.action.validate_role_vars import ActionModule

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def role_spec(*roles):
    spec = {}
    for role in roles:
        with open(os.path.join(REPO_ROOT, "roles", role, "meta", "argument_specs.yml")) as f:
            spec.update(yaml.safe_load(f)["argument_specs"]["main"]["options"])
    return spec


def run(hostvars, play_vars=None, spec=None):
    task = MagicMock()
    task.args = {"argument_spec": spec or role_spec("plan", "preflight", "runtime", "units")}
    task.async_val = 0
    task.check_mode = False
    connection = MagicMock()
    loader = DataLoader()
    action = ActionModule(task, connection, PlayContext(), loader, Templar(loader=loader), None)
    task_vars = dict(play_vars or {}, hostvars=hostvars, ansible_play_hosts_all=list(hostvars))
    out = action.run(task_vars=task_vars)
    assert not connection.exec_command.called and not connection.put_file.called
    return out


def test_a_fleet_that_shares_its_settings_is_checked_once_and_passes():
    hostvars = dict(("gpu-%02d" % i, {"inventory_hostname": "gpu-%02d" % i, "units_health_timeout_s": 600}) for i in range(8))
    out = run(hostvars)
    assert "failed" not in out and out["changed"] is False, out
    assert out["checked"] == ["gpu-00, gpu-01, gpu-02 and 5 more"]


def test_each_bad_set_is_named_with_its_hosts_and_the_variable():
    hostvars = {"a": {"units_health_timeout_s": 600}, "b": {"units_health_timeout_s": "soon"},
                "c": {"units_health_timeout_s": "soon"}, "d": {"preflight_headroom_mib": "lots"}}
    out = run(hostvars)
    assert out["failed"] is True and out["checked"] == ["a", "b, c", "d"]
    assert out["msg"].startswith("Validation of arguments failed:\nb, c: ")
    assert "units_health_timeout_s" in out["argument_errors"][0] and "'soon'" in out["argument_errors"][0]
    assert out["argument_errors"][1].startswith("d: ") and "preflight_headroom_mib" in out["argument_errors"][1]
    assert len(out["argument_errors"]) == 2


def test_the_plays_variables_are_checked_under_the_hosts_values():
    spec = {"units_health_timeout_s": {"type": "int"}}
    # a bad play value is found for a host that does not set its own; a host's own value wins over it
    out = run({"a": {}, "b": {"units_health_timeout_s": 30}}, {"units_health_timeout_s": "xy"}, spec)
    assert out["failed"] is True and [e.split(":")[0] for e in out["argument_errors"]] == ["a"]
    assert "'xy'" in out["argument_errors"][0] or '"xy"' in out["argument_errors"][0]
    assert "failed" not in run({"a": {}}, {"units_health_timeout_s": "30"}, spec)


def run_roles(hostvars, roles):
    task = MagicMock()
    task.args = {"roles": roles}
    task.async_val = 0
    task.check_mode = False
    loader = DataLoader()
    action = ActionModule(task, MagicMock(), PlayContext(), loader, Templar(loader=loader), None)
    return action.run(task_vars=dict(hostvars=hostvars, ansible_play_hosts_all=list(hostvars)))


def test_roles_read_the_collections_own_specs_as_the_combined_argument_spec_does():
    hostvars = {"a": {"units_health_timeout_s": "soon"}, "b": {"preflight_headroom_mib": "lots"}}
    by_roles = run_roles(hostvars, ["plan", "preflight", "runtime", "units"])
    by_spec = run(hostvars)
    assert by_roles["failed"] is True
    assert by_roles["argument_errors"] == by_spec["argument_errors"] and len(by_roles["argument_errors"]) == 2


def test_a_name_that_is_no_role_of_the_collection_is_refused_naming_it():
    for name in ("../roles/units", "nosuchrole", "Units"):
        out = run_roles({"a": {}}, ["units", name])
        assert out["failed"] is True and "is not a role of this collection" in out["msg"] and repr(name) in out["msg"], out
