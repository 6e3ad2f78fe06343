# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stack_reboot role's two controller steps: the batches (once for the play) and a host's drains."""

from __future__ import annotations

from unittest.mock import MagicMock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible_collections.launchcard.inference.plugins.action.reboot_batches import ActionModule as Batches
from ansible_collections.launchcard.inference.plugins.action.reboot_drains import ActionModule as Drains
from ansible_collections.launchcard.inference.plugins.plugin_utils._rollout import reboot_drains
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_reboot_drains import _replica_plan

HOSTS = ["g1", "g2", "g3", "g4", "g5"]


def run(cls, task_vars, **args):
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = False
    connection = MagicMock()
    connection._shell.tmpdir = None
    templar = MagicMock()
    templar.template.side_effect = lambda value: value
    return cls(task, connection, PlayContext(), DataLoader(), templar, None).run(task_vars=task_vars)


def test_the_batches_read_each_hosts_verdict_in_play_order():
    hostvars = {"g1": {"stack_reboot_wanted": True}, "g2": {"stack_reboot_wanted": False},
                "g3": {"stack_reboot_wanted": "True"}, "g4": {}, "g5": {"stack_reboot_wanted": "true"}}
    result = run(Batches, {"ansible_play_hosts": HOSTS, "hostvars": hostvars}, serial="2")
    assert result == {"batches": [["g1", "g3"], ["g5"]], "changed": False}
    # a host of the list the hostvars do not know reboots not
    assert run(Batches, {"hostvars": hostvars}, hosts=["g9", "g1"])["batches"] == [["g1"]]


def test_a_bad_serial_fails_naming_the_variable():
    with pytest.raises(AnsibleActionFail, match="launchcard_stack_reboot_serial"):
        run(Batches, {"ansible_play_hosts": HOSTS, "hostvars": {}}, serial=0)


def test_the_drains_of_a_host_come_from_the_plan_the_play_holds_and_its_listing():
    plan, host = _replica_plan(), "w1"
    units = [i["unit"] for i in plan["hosts"][host]["instances"]]
    lines = ["%s loaded active running %s" % (u, "an engine") for u in units]
    result = run(Drains, {"launchcard_plan": plan, "inventory_hostname": host}, serving=lines)
    wanted = reboot_drains(plan, host, units)
    assert wanted["ops"] and wanted["routers"]
    assert (result["ops"], result["drain"], result["routers"], result["notes"]) == (
        wanted["ops"], wanted["drain"], wanted["routers"], wanted["warnings"])
    # Ansible prints a result's "warnings" itself: the role's debug task says them instead
    assert "warnings" not in result and result["changed"] is False


def test_nothing_serving_or_no_plan_drains_nothing():
    plan, host = _replica_plan(), "w0"
    for task_vars, lines in (({"launchcard_plan": plan, "inventory_hostname": host}, []),
                             ({"inventory_hostname": host}, ["launchcard-x.service loaded active running x"])):
        result = run(Drains, task_vars, serving=lines)
        assert (result["ops"], result["drain"], result["routers"]) == ([], [], [])
