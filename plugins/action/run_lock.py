# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of ``launchcard.inference.run_lock``: with ``run``, the lock files and the holder of this host's
locks (or the fleet lock, ``scope: fleet``) are found here from the run and the plan (plugins/plugin_utils/
_run_locks.py ``lock_spec``), so the plan is never sent to the host; then the module runs on the host."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _run_locks as run_locks

# the options this plugin reads; the module is sent the others
CONTROLLER_OPTIONS = ("run", "plan", "scope", "lock_dir")


class ActionModule(ActionBase):
    """Find the locks of ``run`` when given, then run the module."""

    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            state=dict(type="str", choices=["present", "absent"], default="present"),
            paths=dict(type="list", elements="dict"),
            holder=dict(type="dict"),
            break_stale=dict(type="bool", default=False),
            fail_msg=dict(type="str"),
            run=dict(type="dict"),
            plan=dict(type="dict"),
            scope=dict(type="str", choices=["host", "fleet"], default="host"),
            lock_dir=dict(type="str", default="/var/lib/launchcard"),
        ), mutually_exclusive=[("run", "paths"), ("run", "holder")], required_one_of=[("run", "paths")],
            required_together=[("paths", "holder")])
        module_args = dict((k, v) for k, v in args.items() if k not in CONTROLLER_OPTIONS and v is not None)
        if args["run"] is not None:
            plan = args["plan"] if args["plan"] is not None else task_vars.get("launchcard_plan")
            try:
                spec = run_locks.lock_spec(args["run"], task_vars.get("inventory_hostname"), plan, args["lock_dir"],
                                           args["break_stale"], args["scope"])
            except ValueError as exc:
                # returned, not raised: ansible-core 2.19 prints a raised failure twice (plugins/action/launch_card.py)
                result.update(failed=True, changed=False, msg="run: %s" % exc)
                return result
            module_args.update(paths=spec["paths"], holder=spec["holder"])
        result.update(self._execute_module(module_name="launchcard.inference.run_lock", module_args=module_args,
                                           task_vars=task_vars))
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
