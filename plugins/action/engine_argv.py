# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of ``launchcard.inference.engine_argv``: for a check that pulls, the registries configuration and
the auth file the runtime role would give the host are built here from the registry variables
(``plugins/plugin_utils/_images.py``), then the module runs on the host. The credentials travel only as the
module's ``auth`` option, which it never logs."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as images

REGISTRY_OPTIONS = ("registry_mirrors", "registry_credentials", "registry_plain_http")


class ActionModule(ActionBase):
    """Build a pull's registry settings, then run the module."""

    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # no effect since ansible-core 2.5
        args = dict(self._task.args)
        mirrors, credentials, plain_http = (args.pop(name, None) for name in REGISTRY_OPTIONS)
        try:
            for name, value, kind in (("registry_mirrors", mirrors, dict), ("registry_credentials", credentials, dict),
                                      ("registry_plain_http", plain_http, list)):
                if value is not None and not isinstance(value, kind):
                    raise ValueError("%s must be a %s, found %s" % (name, kind.__name__, type(value).__name__))
            if any(isinstance(c, dict) and c.get("pull") for c in args.get("checks") or []):
                if mirrors and "registries_conf" not in args:
                    args["registries_conf"] = images.podman_registries_conf(mirrors)
                if credentials and "auth" not in args:
                    args["auth"] = images.registry_auth(credentials, mirrors, plain_http)
        except ValueError as exc:
            # returned, not raised: ansible-core 2.19 prints a raised failure twice (plugins/action/run_lock.py)
            result.update(failed=True, changed=False, msg="launchcard.inference.engine_argv: %s" % exc)
            return result
        result.update(self._execute_module(module_name="launchcard.inference.engine_argv", module_args=args,
                                           task_vars=task_vars))
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
