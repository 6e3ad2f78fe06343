# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of the modules that write node exporter's textfile facts on their own (``engine_drain``,
``http_health``): run the module with ``textfile.directory`` filled in (``_textfile.py``, its one home)."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils._textfile import with_directory


class TextfileAction(ActionBase):
    """Run ``MODULE`` on the host, as a task without an action plugin would, with the textfile directory."""

    MODULE = None
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def module_args(self, task_vars, result):
        """The module's arguments: the task's. A subclass may build them, or fail or skip ``result`` instead."""
        del task_vars, result
        return dict(self._task.args)

    def run(self, tmp=None, task_vars=None):
        result = super(TextfileAction, self).run(tmp, task_vars)
        del tmp  # no effect since ansible-core 2.5
        args = self.module_args(task_vars, result)
        if result.get("failed") or result.get("skipped"):
            return result
        result.update(self._execute_module(module_name=self.MODULE, module_args=with_directory(args), task_vars=task_vars))
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
