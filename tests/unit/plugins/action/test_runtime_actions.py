# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runtime role's decisions as the action plugins hand them on: runtime_settings (the role's first task, no host
contacted) and host_state's runtime_role (upgrade.yml's reading of each host and the record it writes)."""

from __future__ import annotations

from unittest.mock import MagicMock

from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible_collections.launchcard.inference.plugins.action.host_state import ActionModule as HostState
from ansible_collections.launchcard.inference.plugins.action.runtime_settings import ActionModule as RuntimeSettings
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_runtime_host import host


def action(cls, args, result=None):
    task = MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = False
    connection = MagicMock()
    connection._shell.tmpdir = None
    plugin = cls(task, connection, PlayContext(), DataLoader(), None, None)
    plugin._execute_module = MagicMock(return_value=dict(result or {"changed": False}))
    return plugin


def test_runtime_settings_returns_the_role_s_decisions_without_contacting_the_host():
    here = host("native", runtime_native_stamps_found=[])
    out = action(RuntimeSettings, {}).run(task_vars=here._vars)
    assert out["needed"] is True and out["native"]["stamp"] == here.native_stamp() and out["changed"] is False
    assert out["record"] == here.record() and out["setup"] is None
    bad = host("native", runtime_native_packages="vllm")
    out = action(RuntimeSettings, {}).run(task_vars=bad._vars)
    assert out["failed"] and out["msg"].startswith("launchcard.inference.runtime_settings: runtime_native_packages")


def test_host_state_records_the_runtime_the_role_applied_and_reads_whether_it_has_anything_to_do():
    here = host(runtime_setup_recorded="0" * 40)
    plugin = action(HostState, {"state": "present", "card": {}, "runtime_role": True}, {"changed": True})
    plugin.run(task_vars=here._vars)
    sent = plugin._execute_module.call_args.kwargs["module_args"]
    assert sent["runtime"] == here.record() and "runtime_role" not in sent
    # a runtime the task gives is kept
    plugin = action(HostState, {"state": "present", "runtime": {"kind": "native"}, "runtime_role": True})
    plugin.run(task_vars=here._vars)
    assert plugin._execute_module.call_args.kwargs["module_args"]["runtime"] == {"kind": "native"}
    plugin = action(HostState, {"state": "read", "runtime_role": True}, {"record": None})
    out = plugin.run(task_vars=here._vars)
    assert out["runtime_needed"] is True and out["record"] is None
    # without runtime_role: the module as it is, nothing added
    plugin = action(HostState, {"state": "read"}, {"record": None})
    out = plugin.run(task_vars={})
    assert "runtime_needed" not in out and plugin._execute_module.call_args.kwargs["module_args"] == {"state": "read"}
