# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of ``launchcard.inference.systemd_units``: a host the preflight call found settled is not
contacted.

The ``settled`` option carries the result the module would return on a host where it would change nothing
(``plugins/module_utils/_systemd.py`` ``settled_converge``, from the host's preflight reading, through the filter
``launchcard.inference.units_settled``). Given, this plugin returns it; otherwise it runs the module on the host
with the other options, as a task without an action plugin would, filling in ``textfile.directory`` (node exporter's
textfile directory, ``plugins/plugin_utils/_textfile.py``: the host side cannot import plugin_utils).
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils._textfile import with_directory


class ActionModule(ActionBase):
    """Return ``settled`` when given, else run the module."""

    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # no effect since ansible-core 2.5
        args = dict(self._task.args)
        settled = args.pop("settled", None)
        if settled:
            if not isinstance(settled, dict) or not settled.get("settled"):
                result.update(failed=True, msg="settled: expected the result of launchcard.inference.units_settled "
                                               "(a dict with settled: true) or null, found %r" % (type(settled).__name__,))
                return result
            result.update(settled)
            result["changed"] = False
            return result
        result.update(self._execute_module(module_name="launchcard.inference.systemd_units", module_args=with_directory(args),
                                           task_vars=task_vars))
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
