# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin for launchcard.inference.reboot_drains; documented in plugins/modules/reboot_drains.py."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _rollout as rollout


class ActionModule(ActionBase):
    """Controller-side: the routers a host's stack reboot takes its serving instances out of (_rollout.reboot_drains)."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            serving=dict(type="list", elements="str", default=[]),
            plan=dict(type="dict"),
            host=dict(type="str"),
        ))
        # the plan as the play holds it, read here once rather than copied into this task's arguments
        plan = args["plan"] if args["plan"] is not None else (self._templar.template(task_vars.get("launchcard_plan")) or {})
        host = args["host"] or task_vars.get("inventory_hostname")
        # `systemctl list-units --plain --no-legend` lines: the unit's name first
        serving = [line.split()[0] for line in args["serving"] if line.split()]
        try:
            found = rollout.reboot_drains(plan, host, serving)
        except (ValueError, KeyError, TypeError) as exc:
            raise AnsibleActionFail("the plan's routers of %s: %s" % (host, to_text(exc)))
        # not "warnings", which Ansible would print on its own: the role's debug task says them
        result.update(ops=found["ops"], drain=found["drain"], routers=found["routers"], notes=found["warnings"], changed=False)
        return result
