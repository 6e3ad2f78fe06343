# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_exporter_unit action (role gpu_exporter): the unit rendered on the controller from the role's settings,
handed to ansible.builtin.copy (a fake here, which records its task); a bad setting fails before copy, naming its
variable."""

from __future__ import annotations

import re
from unittest.mock import MagicMock

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible.playbook.task import Task

from ansible_collections.launchcard.inference.plugins.action.gpu_exporter_unit import ActionModule
from ansible_collections.launchcard.inference.plugins.plugin_utils import _gpu_exporter as ge

IMAGE = "rocm/device-metrics-exporter@sha256:" + "0" * 64


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


def test_the_unit_is_the_rendered_text_written_by_copy_as_root():
    # the role's empty runtime and port: the defaults
    result, [(name, args)] = write({"vendor": "amd", "image": IMAGE, "runtime": "", "port": ""})
    assert name == "ansible.legacy.copy" and result["changed"] is True
    assert args == {"content": ge.render(ge.settings("amd", IMAGE)), "dest": "/etc/systemd/system/launchcard-gpu-exporter.service",
                    "owner": "root", "group": "root", "mode": "0644"}
    result, [(name, args)] = write({"vendor": "amd", "image": IMAGE, "runtime": "podman", "port": "9500",
                                    "podman_bin": "/usr/local/bin/podman"})
    assert args["content"] == ge.render(ge.settings("amd", IMAGE, "podman", "9500"), None, "/usr/local/bin/podman")
    assert "/usr/local/bin/podman" in args["content"] and "9500" in args["content"]


@pytest.mark.parametrize("args, message", [
    ({"image": "rocm/device-metrics-exporter:v1.3.0"}, "launchcard_gpu_exporter_image: 'rocm/device-metrics-exporter:v1"),
    ({"vendor": "intel"}, "launchcard_gpu_exporter_vendor: 'intel'"),
    ({"port": "70000"}, "launchcard_gpu_exporter_port"),
])
def test_a_bad_setting_fails_naming_its_variable_before_copy(args, message):
    result, copies = write(dict({"vendor": "amd", "image": IMAGE}, **args))
    assert result["failed"] is True and result["changed"] is False and copies == []
    assert re.match("^launchcard.inference.gpu_exporter_unit: .*" + message, result["msg"]), result["msg"]
