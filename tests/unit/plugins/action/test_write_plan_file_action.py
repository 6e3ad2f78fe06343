# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The write_plan_file action in-process: the plan file's text made from the planning step's result, handed to
ansible.builtin.copy (a fake here, which records its task); playbooks/plan.yml's real write is
tests/integration/test_plan_file_render.py."""

from __future__ import annotations

import json
from unittest.mock import MagicMock

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible.playbook.task import Task

from test_launch_card_action import action as launch_card, task_vars

from ansible_collections.launchcard.inference.plugins.action.write_plan_file import ActionModule
from ansible_collections.launchcard.inference.plugins.plugin_utils import _planfile as planfile


def write(args):
    task = Task()
    task.args = dict(args)
    copies = []

    def copy_action(name, task, **kwargs):
        copy = MagicMock()
        copy.run.side_effect = lambda task_vars: copies.append((name, dict(task.args))) or {"changed": True, "dest": task.args["dest"]}
        return copy

    connection = MagicMock()
    connection._shell.tmpdir = None
    plugin = ActionModule(task, connection, PlayContext(), DataLoader(), None, None)
    # ansible-core 2.19 sets the plugin loaders whatever is passed (plugins/action/__init__.py)
    plugin._shared_loader_obj = MagicMock()
    plugin._shared_loader_obj.action_loader.get.side_effect = copy_action
    return plugin.run(task_vars={}), copies


@pytest.fixture(scope="module")
def planned():
    plugin, dummy = launch_card({"facts": False})
    return plugin.run(task_vars=task_vars())


def test_the_file_is_the_plans_text_written_by_copy(planned):
    images = {"image_refs": {"lmsysorg/sglang:v1": "lmsysorg/sglang@sha256:" + "a" * 64}, "image_sizes": {}}
    result, copies = write({"planned": planned, "resolved": images, "dest": "/srv/plans/fleet.json"})
    assert result["changed"] is True and result["dest"] == "/srv/plans/fleet.json"
    [(name, args)] = copies
    assert name == "ansible.legacy.copy"
    assert args == {"content": planfile.text_of(planned, images), "dest": "/srv/plans/fleet.json", "mode": "0644"}
    doc = json.loads(args["content"])
    assert doc["plan"] == planned["launchcard_plan"] and doc["images"]["image_refs"] == images["image_refs"]
    # without resolved images: no images in the file
    dummy, copies = write({"planned": planned, "dest": "/srv/plans/fleet.json", "mode": "0600"})
    assert "images" not in json.loads(copies[0][1]["content"]) and copies[0][1]["mode"] == "0600"


def test_a_result_that_is_not_the_planning_steps_is_refused_before_copy():
    result, copies = write({"planned": {"launchcard_plan": {}}, "dest": "/srv/plans/fleet.json"})
    assert result["failed"] is True and copies == []
    assert result["msg"] == ("planned: expected the launch_card result registered with facts=false (plan_planned), "
                             "missing 'launchcard_plan_inputs'")
