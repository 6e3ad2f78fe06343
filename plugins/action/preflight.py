# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of ``launchcard.inference.preflight``: the options that come from the plan and the host's
variables (its needs, whether the plan places it, its misspelt variables, its run lock, what the units role reads in
the same call) are computed here from the task's variables, then the module runs on the host.

Logic: ``plugins/plugin_utils/_preflight_steps.py`` (needs), ``_units_host.py`` (the units role's reads) and
``_run_locks.py`` (the lock's holder)."""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.module_utils._preflight_options import CONTROLLER_SPEC
from ansible_collections.launchcard.inference.plugins.plugin_utils import _play_vars as play_vars
from ansible_collections.launchcard.inference.plugins.plugin_utils import _preflight_steps as steps
from ansible_collections.launchcard.inference.plugins.plugin_utils import _run_locks as run_locks
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as unit_options
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units_host as units_host


class ActionModule(ActionBase):
    """Fill in the preflight call's options from the plan, then run the module."""

    TRANSFERS_FILES = False
    _supports_check_mode = True

    def _var(self, task_vars, name):
        return play_vars.variable(self._templar, task_vars, name)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # no effect since ansible-core 2.5
        task_vars = task_vars or {}
        args = dict(self._task.args)
        if args.get("from_role"):
            # each variable rendered once here: as task arguments each would be a template of a template
            args = dict(steps.role_args(lambda name: self._templar.template(task_vars[name])), **args)
            args.pop("from_role")
        own = dict((k, args.pop(k)) for k in list(args) if k in CONTROLLER_SPEC)
        checked = ArgumentSpecValidator(CONTROLLER_SPEC).validate(own)
        try:
            if checked.error_messages:
                raise ValueError("; ".join(checked.error_messages))
            module_args = self._module_args(args, checked.validated_parameters, task_vars)
        except ValueError as exc:
            # returned, not raised: ansible-core 2.19 prints a raised failure twice (plugins/action/run_lock.py)
            result.update(failed=True, changed=False, msg="launchcard.inference.preflight: %s" % exc)
            return result
        result.update(self._execute_module(module_name="launchcard.inference.preflight", module_args=module_args,
                                           task_vars=task_vars))
        if not result.get("failed"):
            steps.checked(result, module_args.get("needs"), module_args.get("lock"))
        self._remove_tmp_path(self._connection._shell.tmpdir)
        params = checked.validated_parameters
        if params["host_step"] is not None and params["read_units"] and not params["recheck"] \
                and not result.get("failed") and not result.get("failed_checks"):
            result["host_step"] = self._host_step(result, params["host_step"], task_vars)
        return result

    def _host_step(self, result, step, task_vars):
        """The deploy's host step (``_units_host.host_step``) as the task after this one makes it, from this result and
        the images resolved for the fleet (``step.image_refs``; the play pins them later, the same where no tag moved:
        the record compared names them); ``{}`` where it cannot be made here (that task then names why)."""
        extra = {"preflight_result": dict(result)}
        if "host_plan" in step:
            # the host's share as this task rendered it: the record's templates read it again (a lookup each time)
            extra["launchcard_host_plan"] = step["host_plan"]
        if "runtime_image_refs" not in task_vars:
            extra["runtime_image_refs"] = step.get("image_refs") or {}
        templar, variables = play_vars.registered(self._templar, task_vars, extra)
        try:
            decision = units_host.host_step(templar, variables, result, step.get("host_plan"),
                                            step.get("stack_roles") or {}, step.get("install_stack", True))
        except (OSError, ValueError):
            return {}
        return {"settled": decision["settled"], "setup_parts": decision["setup_parts"]}

    def _module_args(self, args, own, task_vars):
        """The module's options: the task's, less the unset ones, and those computed from the plan."""
        host = task_vars.get("inventory_hostname")
        plan = self._var(task_vars, "launchcard_plan") or {}
        host_plan = (plan.get("hosts") or {}).get(host)
        out = steps.optional_args(args)
        if own["recheck"]:
            # the check after the accelerator stack: the driver is in place, the converge's reads were made
            out["install_driver"] = False
        planned = "needs" not in out
        if planned:
            # a task that gives its own needs (an ad-hoc call) gives its own placed too
            out["placed"] = host_plan is not None
            out["needs"] = {}
        if planned and host_plan is not None:
            card = (self._var(task_vars, "launchcard_cards") or {})[host_plan["card"]]
            # the peer ports from playbooks/tasks/plan.yml's table where it ran (else found in the plan, on this host)
            peers = self._var(task_vars, "launchcard_peer_ports")
            peers = peers.get(host, []) if isinstance(peers, dict) else None
            out["needs"] = steps.host_needs(card, host_plan, plan, own["image_vendors"], own["native_packages"], peers,
                                            own["native_lock"])
            out.setdefault("repo", card["model"]["repo"])
            out.setdefault("revision", card["model"]["revision"])
        hostvars = task_vars.get("hostvars") or {}
        host_vars = hostvars[host] if host in hostvars else {}
        if "misspelt" not in out or "misspelt_recipes" not in out:
            near = steps.misspelt(list(host_vars), ("launchcard_runtime", "launchcard_recipes"))
            out.setdefault("misspelt", near["launchcard_runtime"])
            out.setdefault("misspelt_recipes", near["launchcard_recipes"])
        if own["read_units"]:
            setup = unit_options.setup_reads(host_vars)
            for name, found in (("inspect", setup["inspect"]), ("users", setup["users"])):
                given = list(out.get(name) or [])
                out[name] = given + [x for x in found if x not in given]
            if not own["recheck"]:
                out["units_reads"] = units_host.UnitsHost(self._templar, task_vars).reads()
        if own["take_lock"] and host_plan is not None:
            # the re-check of a bare host takes its lock again (re-entrant: the same run), so its result, which
            # replaces the first one, still lists the locks that the record and the always section release
            out["lock"] = run_locks.lock_spec(self._var(task_vars, "launchcard_run"), host, plan, own["lock_dir"],
                                              own["break_lock"], defer=own["lock_defer"])
        return out
