# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for launchcard.inference.settle_or_lock; documented in plugins/modules/settle_or_lock.py."""

from __future__ import annotations

from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _play_vars as play_vars
from ansible_collections.launchcard.inference.plugins.plugin_utils import _run_locks as run_locks
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units_host as units_host


class ActionModule(ActionBase):
    """A host this run leaves as it is: its reading, no round trip; else its host lock (the run_lock module)."""

    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # no effect since ansible-core 2.5
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            preflight=dict(type="dict", default={}),
            host_plan=dict(type="dict"),
            stack_roles=dict(type="dict", default={}),
            install_stack=dict(type="bool", default=True),
        ))
        host = task_vars.get("inventory_hostname")
        try:
            decision = units_host.host_step(self._templar, task_vars, args["preflight"], args["host_plan"],
                                            args["stack_roles"], args["install_stack"])
        except (OSError, ValueError) as exc:
            result.update(failed=True, msg="launchcard.inference.settle_or_lock: %s" % to_text(exc))
            return result
        result.update(changed=False, settled=decision["settled"], setup_parts=decision["setup_parts"])
        if not decision["lock"]:
            return result
        try:
            holder = run_locks.lock_spec(play_vars.variable(self._templar, task_vars, "launchcard_run"), host,
                                         play_vars.variable(self._templar, task_vars, "launchcard_plan"))["holder"]
        except ValueError as exc:
            result.update(failed=True, msg="launchcard.inference.settle_or_lock: %s" % to_text(exc))
            return result
        result.update(self._execute_module(module_name="launchcard.inference.run_lock", task_vars=task_vars,
                                           module_args={"paths": decision["lock"], "holder": holder}))
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
