# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin for launchcard.inference.reboot_batches; documented in plugins/modules/reboot_batches.py."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _rollout as rollout


class ActionModule(ActionBase):
    """Controller-side, once for the play: each host's verdict read from hostvars once, then the batches."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            hosts=dict(type="list", elements="str"),
            serial=dict(type="raw", default=1),
            wanted_var=dict(type="str", default="stack_reboot_wanted"),
        ))
        hosts = args["hosts"] if args["hosts"] is not None else list(task_vars.get("ansible_play_hosts") or [])
        hostvars = task_vars.get("hostvars") or {}
        wanted = {}
        for host in hosts:
            value = hostvars[host].get(args["wanted_var"], False) if host in hostvars else False
            wanted[host] = boolean(value, strict=False)
        try:
            result["batches"] = rollout.reboot_batches(hosts, wanted, args["serial"])
        except rollout.RolloutError as exc:
            raise AnsibleActionFail(to_text(exc))
        result["changed"] = False
        return result
