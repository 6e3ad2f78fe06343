# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for launchcard.inference.validate_role_vars; documented in plugins/modules/validate_role_vars.py."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _role_vars as role_vars


class ActionModule(ActionBase):
    """Controller-side: every host's role variables checked once per distinct set (no remote execution)."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            argument_spec=dict(type="dict"),
            roles=dict(type="list", elements="str"),
            hosts=dict(type="list", elements="str"),
        ), mutually_exclusive=[("argument_spec", "roles")], required_one_of=[("argument_spec", "roles")])
        try:
            # read here, not templated into the task's arguments: Ansible would tag and copy every line of them
            spec = args["argument_spec"] if args["roles"] is None else role_vars.role_options(args["roles"])
        except ValueError as exc:
            result.update(failed=True, changed=False, msg="launchcard.inference.validate_role_vars: %s" % exc)
            return result
        hosts = args["hosts"] if args["hosts"] is not None else task_vars.get("ansible_play_hosts_all") or []
        # the play's variables and the roles' defaults, templated, as ansible.builtin.validate_argument_spec reads
        # them (lib/ansible/plugins/action/validate_argument_spec.py get_args_from_task_vars)
        base = self._templar.template(dict((name, task_vars[name]) for name in spec if name in task_vars))
        groups = role_vars.by_host(task_vars.get("hostvars") or {}, hosts, list(spec))
        found = role_vars.errors(spec, base, groups)
        result["changed"] = False
        result["checked"] = [g["label"] for g in groups]
        if found:
            lines = ["%s: %s" % (label, message) for label, messages in found for message in messages]
            result.update(failed=True, argument_errors=lines, msg="Validation of arguments failed:\n%s" % "\n".join(lines))
        else:
            result["msg"] = "The arg spec validation passed"
        return result
