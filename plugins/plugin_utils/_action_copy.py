# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible.builtin.copy run from inside another action plugin. Private to the collection."""

from __future__ import annotations


def run_copy(action, copy_args, task_vars):
    """Run ansible.builtin.copy with ``copy_args`` as ``action``'s task (its check mode, diff and no_log), the way
    ansible-core's own template action hands its result to copy (ansible-core 2.19 plugins/action/template.py)."""
    task = action._task.copy()
    task.args.clear()
    task.args.update(copy_args)
    copy_action = action._shared_loader_obj.action_loader.get(
        "ansible.legacy.copy", task=task, connection=action._connection, play_context=action._play_context,
        loader=action._loader, templar=action._templar, shared_loader_obj=action._shared_loader_obj)
    return copy_action.run(task_vars=task_vars)
