# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for launchcard.inference.runtime_settings; documented in plugins/modules/runtime_settings.py."""

from __future__ import annotations

from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils._runtime_host import RuntimeHost


class ActionModule(ActionBase):
    """Controller-side: the runtime role's decisions for the host (no remote execution)."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        self.validate_argument_spec(argument_spec={})
        try:
            result.update(RuntimeHost(self._templar, task_vars).settings())
        except ValueError as exc:
            result.update(failed=True, msg="launchcard.inference.runtime_settings: %s; nothing was changed" % to_text(exc))
            return result
        result["changed"] = False
        return result
