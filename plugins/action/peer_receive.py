# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin for launchcard.inference.peer_receive; documented in plugins/modules/peer_receive.py."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _weights as weights
from ansible_collections.launchcard.inference.plugins.plugin_utils._action_copy import run_copy


class ActionModule(ActionBase):
    """The receiving side of a peer copy: the settings computed on the controller, the folder and file on the host."""

    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            hf_home=dict(type="str", required=True),
            repo=dict(type="str", required=True),
            conf=dict(type="str", required=True),
            address=dict(type="str", required=True),
        ))
        try:
            receiving = weights.peer_receive(args["hf_home"], args["repo"], args["conf"], args["address"])
        except ValueError as exc:
            raise AnsibleActionFail(to_text(exc))
        try:
            # the daemon chroots to the repository's folder, which must exist
            made = self._execute_module(module_name="ansible.legacy.file", task_vars=task_vars,
                                        module_args={"path": receiving["repo_dir"], "state": "directory", "mode": "0755"})
            if made.get("failed"):
                result.update(made)
                return result
            written = run_copy(self, {"dest": args["conf"], "content": receiving["config"], "mode": "0600"}, task_vars)
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        if written.get("failed"):
            result.update(written)
            return result
        result["changed"] = bool(made.get("changed") or written.get("changed"))
        diffs = [d for d in (made.get("diff"), written.get("diff")) if d]
        if diffs:
            result["diff"] = diffs
        # what the later tasks read: the key's options, where the source sends
        result.update(repo_dir=receiving["repo_dir"], key_options=receiving["key_options"], dest=receiving["dest"])
        return result
