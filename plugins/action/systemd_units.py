# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of ``launchcard.inference.systemd_units``: a host the preflight call found settled is not
contacted; with ``from_plan`` the units role's options are built here, in Python, from the host's variables.

The ``settled`` option carries the result the module would return on a host where it would change nothing
(``plugins/module_utils/_systemd.py`` ``settled_converge``, from the host's preflight reading). Given, this plugin
returns it; otherwise it runs the module on the host with the other options, as a task without an action plugin
would, filling in ``textfile.directory`` (node exporter's textfile directory, ``plugins/plugin_utils/_textfile.py``:
the host side cannot import plugin_utils) and, with ``from_plan``, the unit files, secrets, gate and textfile facts
(``plugins/plugin_utils/_units_host.py``). With ``prepare``, the units role's setup decisions and its --limit check.
"""

from __future__ import annotations

from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils._textfile import with_directory
from ansible_collections.launchcard.inference.plugins.plugin_utils._units_host import UnitsHost

# what from_plan builds: given beside it, they would be overwritten, so they are refused
FROM_PLAN = ("units", "secrets", "secrets_file", "remove_secrets", "health", "textfile")


class ActionModule(ActionBase):
    """Return ``settled`` when given, else run the module (its options built from the plan with ``from_plan``)."""

    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # no effect since ansible-core 2.5
        args = dict(self._task.args)
        settled = args.pop("settled", None)
        from_plan = boolean(args.pop("from_plan", False), strict=False)
        if boolean(args.pop("prepare", False), strict=False):
            return self._prepare(result, args, task_vars)
        if settled:
            if not isinstance(settled, dict) or not settled.get("settled"):
                result.update(failed=True, msg="settled: expected the result of launchcard.inference.settle_or_lock's settled "
                                               "(a dict with settled: true) or null, found %r" % (type(settled).__name__,))
                return result
            result.update(settled)
            result["changed"] = False
            return result
        if from_plan:
            both = sorted(set(FROM_PLAN) & set(args))
            if both:
                result.update(failed=True, msg="from_plan builds %s: give them or from_plan, not both" % ", ".join(both))
                return result
            try:
                args.update(UnitsHost(self._templar, task_vars).converge_args(args.get("state", "started")))
            except ValueError as exc:
                result.update(failed=True, msg="launchcard.inference.systemd_units: %s; nothing was changed" % to_text(exc))
                return result
        result.update(self._execute_module(module_name="launchcard.inference.systemd_units", module_args=with_directory(args),
                                           task_vars=task_vars))
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _prepare(self, result, args, task_vars):
        """The units role's ``tasks/prepare.yml``: what its setup steps have to do (``setup``), and a --limit run's
        moved peers checked against the host's unit files on the host, writing nothing; no round trip without any."""
        if args:
            result.update(failed=True, msg="prepare takes no other option, found %s" % ", ".join(sorted(args)))
            return result
        try:
            found = UnitsHost(self._templar, task_vars).prepare()
        except ValueError as exc:
            result.update(failed=True, msg="launchcard.inference.systemd_units: %s; nothing was changed" % to_text(exc))
            return result
        if found["moved_peers"]:
            module_args = {"units": found["units"], "foreign_peers": found["moved_peers"], "verify": False, "prune": False}
            result.update(self._execute_module(module_name="launchcard.inference.systemd_units", module_args=module_args,
                                               task_vars=task_vars))
            self._remove_tmp_path(self._connection._shell.tmpdir)
        result.update(changed=False, setup=found["setup"], moved_peers=found["moved_peers"])
        return result
