# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of ``launchcard.inference.http_health``: the module, with ``textfile.directory`` filled in; with
``stage``, the units role's gate stage of this host built here from its variables and its peers' results
(``plugins/plugin_utils/_units_host.py``), or the task skipped where that stage has nothing to gate."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.launchcard.inference.plugins.plugin_utils._textfile_action import TextfileAction

STAGES = ("first", "then")


class ActionModule(TextfileAction):
    """Run the module on the host (with ``stage``, on the endpoints of the units role's gate stage found first)."""

    MODULE = "launchcard.inference.http_health"

    def module_args(self, task_vars, result):
        args = dict(self._task.args)
        stage = args.pop("stage", None)
        if stage is None:
            return args
        # raised, not returned: a task's failed_when (the gate's own) does not hide a mistake in its options
        if stage not in STAGES or "endpoints" in args:
            raise AnsibleActionFail("stage: expected one of %s without endpoints (the stage builds them), found %r%s"
                                    % (", ".join(STAGES), stage, " with endpoints" if "endpoints" in args else ""))
        # imported here: the gates of other plays (upgrade, stack reboot) give their endpoints and need none of it
        from ansible_collections.launchcard.inference.plugins.plugin_utils._units_host import UnitsHost
        try:
            found = UnitsHost(self._templar, task_vars).gate_stage(stage, self._play_context.check_mode)
        except ValueError as exc:
            raise AnsibleActionFail("launchcard.inference.http_health: %s" % to_text(exc))
        if found.get("skip_reason"):
            result.update(changed=False, skipped=True, skip_reason=found["skip_reason"])
        found.update(args)  # a timeout or interval the task gives is kept
        return found
