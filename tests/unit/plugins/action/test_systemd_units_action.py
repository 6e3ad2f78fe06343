# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The systemd_units action plugin: a settled host's result without contacting it, else the module."""

from __future__ import annotations

from unittest.mock import MagicMock

from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible_collections.launchcard.inference.plugins.action.systemd_units import ActionModule

SETTLED = {"changed": False, "settled": True, "units": [{"name": "launchcard-a.service", "active_state": "active"}],
           "written": [], "removed": [], "health": {"endpoints": [], "unhealthy": [], "then_gated": None}}


def plugin(args):
    task = MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = False
    task.action = "launchcard.inference.systemd_units"
    connection = MagicMock()
    connection._shell.tmpdir = None
    action = ActionModule(task, connection, PlayContext(), DataLoader(), None, None)
    action._execute_module = MagicMock(return_value={"changed": True, "written": ["launchcard-a.service"]})
    return action, connection


def test_a_settled_host_returns_its_reading_and_is_not_contacted():
    action, connection = plugin({"units": [{"name": "launchcard-a.service", "content": "x"}], "settled": SETTLED})
    out = action.run(task_vars={})
    assert out["settled"] is True and out["changed"] is False and out["units"] == SETTLED["units"]
    assert not action._execute_module.called
    assert not connection.exec_command.called and not connection.put_file.called


def test_without_settled_the_module_runs_with_the_other_options():
    for settled in (None, {}):
        args = {"units": [{"name": "launchcard-a.service", "content": "x"}], "state": "started"}
        if settled is not None:
            args["settled"] = settled
        action, dummy = plugin(args)
        out = action.run(task_vars={})
        assert out["changed"] is True and out["written"] == ["launchcard-a.service"]
        kw = action._execute_module.call_args.kwargs
        assert kw["module_name"] == "launchcard.inference.systemd_units" and "settled" not in kw["module_args"]
        assert kw["module_args"]["state"] == "started"


def test_a_settled_value_that_is_not_a_reading_fails_naming_the_option():
    action, dummy = plugin({"units": [], "settled": {"changed": False}})
    out = action.run(task_vars={})
    assert out["failed"] and out["msg"].startswith("settled: expected the result of launchcard.inference.settle_or_lock's settled")
    assert not action._execute_module.called


def test_the_textfile_directory_defaults_to_the_collection_s_and_a_given_one_is_kept():
    from ansible_collections.launchcard.inference.plugins.plugin_utils._textfile import TEXTFILE_DIR
    for given, sent in (({"instances": {}}, TEXTFILE_DIR), ({"directory": "/srv/prom", "instances": {}}, "/srv/prom")):
        action, dummy = plugin({"units": [], "textfile": given})
        action.run(task_vars={})
        assert action._execute_module.call_args.kwargs["module_args"]["textfile"]["directory"] == sent
    action, dummy = plugin({"units": []})
    action.run(task_vars={})
    assert "textfile" not in action._execute_module.call_args.kwargs["module_args"]
