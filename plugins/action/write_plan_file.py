# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin for launchcard.inference.write_plan_file; documented in plugins/modules/write_plan_file.py."""

from __future__ import annotations

from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _planfile as planfile


class ActionModule(ActionBase):
    """The plan file's text made here, then written by ansible.builtin.copy (its check mode, diff and mode)."""

    # ansible.builtin.copy makes and removes its own temporary directory
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            planned=dict(type="dict", required=True),
            resolved=dict(type="dict"),
            dest=dict(type="path", required=True),
            mode=dict(type="raw", default="0644"),
        ))
        try:
            content = planfile.text_of(args["planned"], args["resolved"])
        except planfile.PlanFileError as exc:
            # returned, not raised: ansible-core 2.19 prints a raised failure twice (plugins/action/launch_card.py)
            result.update(failed=True, changed=False, msg="planned: %s" % to_text(exc))
            return result
        new_task = self._task.copy()
        new_task.args.clear()
        new_task.args.update(content=content, dest=args["dest"], mode=args["mode"])
        # ansible.legacy, as ansible-core's template action calls copy (lib/ansible/plugins/action/template.py)
        copy_action = self._shared_loader_obj.action_loader.get(
            "ansible.legacy.copy", task=new_task, connection=self._connection, play_context=self._play_context,
            loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        result.update(copy_action.run(task_vars=task_vars))
        return result
