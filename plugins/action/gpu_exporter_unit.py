# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin for launchcard.inference.gpu_exporter_unit; documented in plugins/modules/gpu_exporter_unit.py."""

from __future__ import annotations

from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _gpu_exporter as gpu_exporter

# systemd.unit(5), system unit search path: /etc/systemd/system holds the local configuration
UNIT_PATH = "/etc/systemd/system/" + gpu_exporter.UNIT


class ActionModule(ActionBase):
    """The exporter's unit rendered here (plugin_utils/_gpu_exporter.py), then written by ansible.builtin.copy."""

    # ansible.builtin.copy makes and removes its own temporary directory
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            vendor=dict(type="str", required=True),
            image=dict(type="str", required=True),
            runtime=dict(type="str"),
            port=dict(type="raw"),
            docker_bin=dict(type="str"),
            podman_bin=dict(type="str"),
            dest=dict(type="path", default=UNIT_PATH),
        ))
        try:
            conf = gpu_exporter.settings(args["vendor"], args["image"], args["runtime"] or None, args["port"] or None)
            content = gpu_exporter.render(conf, args["docker_bin"], args["podman_bin"])
        except ValueError as exc:
            # returned, not raised: a raised failure is printed twice (as write_plan_file, launch_card)
            result.update(failed=True, changed=False, msg="launchcard.inference.gpu_exporter_unit: %s" % to_text(exc))
            return result
        new_task = self._task.copy()
        new_task.args.clear()
        new_task.args.update(content=content, dest=args["dest"], owner="root", group="root", mode="0644")
        # ansible.legacy, as ansible-core's template action calls copy (lib/ansible/plugins/action/template.py)
        copy_action = self._shared_loader_obj.action_loader.get(
            "ansible.legacy.copy", task=new_task, connection=self._connection, play_context=self._play_context,
            loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        result.update(copy_action.run(task_vars=task_vars))
        return result
