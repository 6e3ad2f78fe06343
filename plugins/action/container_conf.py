# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin for launchcard.inference.container_conf; documented in plugins/modules/container_conf.py."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as images
from ansible_collections.launchcard.inference.plugins.plugin_utils import _runtime_files as runtime_files
from ansible_collections.launchcard.inference.plugins.plugin_utils._action_copy import run_copy

ARGUMENT_SPEC = dict(
    part=dict(type="str", default="settings", choices=["settings", "auth"]),
    runtime=dict(type="str", required=True, choices=list(runtime_files.RUNTIMES)),
    mirrors=dict(type="dict", default={}),
    keyring=dict(type="bool", default=True),
    conf_dir=dict(type="path", default="/etc/containers"),
    images=dict(type="list", elements="str", default=[]),
    pull_concurrency=dict(type="raw", default=0),
    credentials=dict(type="dict", default={}, no_log=True),
    credentials_plain_http=dict(type="list", elements="str", default=[]),
    auth_file=dict(type="path", default=images.REGISTRY_AUTH_FILE),
)


class ActionModule(ActionBase):
    """Computes each file on the controller, then writes it with ansible.builtin.copy (check mode and diff as copy's)."""

    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            if args["part"] == "auth":
                steps = runtime_files.auth_steps(args["credentials"], args["auth_file"]) if args["runtime"] == "podman" else []
            else:
                steps = runtime_files.settings_steps(args["runtime"], args["mirrors"], args["keyring"], args["conf_dir"])
                result["pull_groups"] = images.pull_groups(args["images"], args["pull_concurrency"])
            # every file's content is checked before anything is read or changed on the host (daemon.json: with the
            # mirrors alone, then again with what the file holds)
            texts = dict((step["content"], runtime_files.content(step["content"], args["mirrors"], args["keyring"],
                                                                 args["credentials"], args["credentials_plain_http"]))
                         for step in steps if step.get("content"))
        except images.ImageError as exc:
            raise AnsibleActionFail(to_text(exc))
        results, slurped, daemon_changed = [], None, False
        try:
            for step in steps:
                if step["module"] == "slurp":
                    # no daemon.json yet: an empty one (what the file module would say is a failure)
                    slurped = self._execute_module(module_name="ansible.legacy.slurp", module_args=step["args"],
                                                   task_vars=task_vars)
                    continue
                if step["module"] == "file":
                    res = self._execute_module(module_name="ansible.legacy.file", module_args=dict(step["args"]),
                                               task_vars=task_vars)
                else:
                    text = texts[step["content"]]
                    if step["content"] == "docker_daemon":
                        try:
                            text = runtime_files.docker_daemon_text(slurped, args["mirrors"])
                        except images.ImageError as exc:
                            raise AnsibleActionFail(to_text(exc))
                    res = run_copy(self, dict(step["args"], content=text), task_vars)
                    daemon_changed = daemon_changed or (step["content"] == "docker_daemon" and bool(res.get("changed")))
                results.append(res)
                if res.get("failed"):
                    break
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        result.update(runtime_files.merge_results(results) if results else {"changed": False})
        if args["part"] == "settings":
            result["daemon_changed"] = daemon_changed
        return result
