# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of ``launchcard.inference.host_state``: with ``runtime_role``, the runtime the record names and
whether the runtime role has anything to do come from that role's decisions (``plugins/plugin_utils/_runtime_host.py``),
then the module runs on the host as a task without an action plugin would."""

from __future__ import annotations

from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils._runtime_host import RuntimeHost


class ActionModule(ActionBase):
    """Fill in the runtime role's part (``runtime_role``), then run the module."""

    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # no effect since ansible-core 2.5
        args = dict(self._task.args)
        runtime_role = boolean(args.pop("runtime_role", False), strict=False)
        needed = None
        if runtime_role:
            try:
                here = RuntimeHost(self._templar, task_vars)
                if args.get("state") == "present":
                    args.setdefault("runtime", here.record())
                else:
                    needed = here.needed()
            except ValueError as exc:
                result.update(failed=True, msg="launchcard.inference.host_state: %s; nothing was changed" % to_text(exc))
                return result
        result.update(self._execute_module(module_name="launchcard.inference.host_state", module_args=args,
                                           task_vars=task_vars))
        if needed is not None:
            result["runtime_needed"] = needed
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
