# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the units role's action plugins read of one host's variables, each read once and only when asked
(private to the collection; controller side).

The plan (``launchcard_plan``), the gate table found once for the fleet (``launchcard_gates``, when the play set it),
the host's unit settings (:func:`._unit_options.host_settings` of ``hostvars[host]``, as ``playbooks/render.yml``
reads them) and the units role's variables (``units_*``: defaults, or what the play passes).
"""

from __future__ import annotations

import hashlib


from ansible_collections.launchcard.inference.plugins.plugin_utils import _play_vars as play_vars
from ansible_collections.launchcard.inference.plugins.plugin_utils import _report as report
from ansible_collections.launchcard.inference.plugins.plugin_utils import _run_locks as run_locks
from ansible_collections.launchcard.inference.plugins.plugin_utils._runtime_host import RuntimeHost
from ansible_collections.launchcard.inference.plugins.plugin_utils import _textfile as textfile
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as unit_options
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_times as unit_times
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units_gate as units_gate


class UnitsHost(play_vars.HostView):
    """One host's view, for the task running there: ``UnitsHost(self._templar, task_vars)``."""

    @property
    def gates(self):
        """``{host: [...]}``: this host's gate as planned, from the fleet's table when the play found it once."""
        if "gates" not in self._cache:
            table = self.var("launchcard_gates")
            self._cache["gates"] = ({self.host: table[self.host]} if hasattr(table, "get") and self.host in table
                                    else report.gate_table(self.plan, [self.host]))
        return self._cache["gates"]

    @property
    def settings(self):
        """:func:`._unit_options.host_settings` of the host's variables (``hostvars[host]``, as render.yml reads them).

        :raises ValueError: a variable the options refuse (the message names it).
        """
        if "settings" not in self._cache:
            hostvars = self._vars.get("hostvars") or {}
            self._cache["settings"] = unit_options.host_settings(hostvars[self.host] if self.host in hostvars else {})
        return self._cache["settings"]

    def reads(self):
        """The preflight call's ``units_reads`` option (:func:`._units_gate.reads`), as the role variable builds it.

        :raises ValueError: a secret the secrets file cannot hold.
        """
        hostvars = self._vars.get("hostvars") or {}
        return units_gate.reads(self.host_plan, self.plan, self.host, hostvars[self.host] if self.host in hostvars else {},
                                self.flag("units_hf_token_remove"), self.gates)

    def record(self):
        """What the host's record names once its gate passed (``units_record``: the card, the instances and the locks
        to release; null: nothing recorded), with the runtime the runtime role applied
        (:meth:`._runtime_host.RuntimeHost.record`) where the play gives none.

        :raises ValueError: see :meth:`._runtime_host.RuntimeHost.record`.
        """
        if "record" not in self._cache:
            record = self.var("units_record")
            if record is not None and record.get("runtime") is None:
                record = dict(record, runtime=RuntimeHost(self._templar, self._vars).record())
            self._cache["record"] = record
        return self._cache["record"]

    def settled(self):
        """The converge result of a host where the units role's converge would change nothing (:func:`._units_gate.settled`
        of the preflight call's reading, ``units_found``, against the unit files the converge writes and the record its
        gate writes, ``units_record``), or None: it would act, nothing was read, or ``units_state`` is not started.

        :raises ValueError: see :attr:`settings`; a unit the plan cannot render.
        """
        found = self.var("units_found")
        if not found or self.var("units_state") != "started":
            return None
        files = units.host_units(self.host_plan or {}, self.settings["options"])
        return units_gate.settled(found, files, self.var("units_allowed_dropins"), self.record())

    def setup_needed(self):
        """Whether ``tasks/prepare.yml``'s setup steps have anything to do (``tasks/prepare.yml``'s ``setup.needed``):
        :func:`._unit_options.setup_needed` of the preflight call's reading (``units_setup_found``; null: they run) and
        the SHA-1 of the readiness helper the role ships (``units_ready_helper_src``)."""
        found = self.var("units_setup_found")
        if found is None:
            return True
        with open(self.var("units_ready_helper_src"), "rb") as f:
            helper_sha1 = hashlib.sha1(f.read()).hexdigest()
        return unit_options.setup_needed(found, self.settings["options"], helper_sha1)

    def foreign_peers(self):
        """``{address: host}`` of the planned instances outside the play (``launchcard_foreign_peers``, found once for the
        run by ``playbooks/tasks/plan.yml``, else from the plan): empty on a full run."""
        found = self.var("launchcard_foreign_peers")
        if found is not None:
            return found
        return report.foreign_peers(self.plan, self._vars.get("ansible_play_hosts_all") or [])

    def check_moved_peers(self):
        """Whether a --limit run leaves out a planned peer this host's units may point at, to check before any host
        writes (while ``units_state`` is started, unless ``units_allow_moved_peers``)."""
        return self.var("units_state") == "started" and not self.flag("units_allow_moved_peers") and bool(self.foreign_peers())

    def prepare_needed(self):
        """Whether ``tasks/prepare.yml`` has anything to do on the host: the plan gives it something, and it has moved
        peers to check (:meth:`check_moved_peers`) or a setup step is not done (:meth:`setup_needed`)."""
        if self.host_plan is None:
            return False
        return self.check_moved_peers() or self.setup_needed()

    def prepare(self):
        """What ``tasks/prepare.yml`` does on the host: ``{"setup": {"needed", "native", "weights_dir",
        "ready_helper_dir"}, "moved_peers": {address: host} to check (empty: none), "units": the unit files they are
        checked against}``.

        :raises ValueError: see :attr:`settings`; a unit the plan cannot render.
        """
        options = self.settings["options"]
        planned = self.host_plan is not None
        peers = self.foreign_peers() if planned and self.check_moved_peers() else {}
        return {"setup": {"needed": planned and self.setup_needed(), "native": options["runtime"] == "native",
                          "weights_dir": options["weights_dir"],
                          "ready_helper_dir": self.settings["ready_helper"].rsplit("/", 1)[0]},
                "moved_peers": dict(peers),
                "units": units.host_units(self.host_plan, options) if peers else []}

    def gate_timeout(self):
        """``units_health_timeout_s``, else what the host's engines need to load (:func:`._unit_times.gate_timeout`).

        :raises ValueError: ``units_health_timeout_s`` is not a whole number of seconds above 0.
        """
        try:
            return unit_times.gate_timeout(self.host_plan or {}, self.settings["options"], self.var("units_health_timeout_s"))
        except ValueError as exc:
            raise ValueError("units_health_timeout_s: %s" % exc)

    def converge_args(self, state):
        """``systemd_units``' options for the units role's converge: the unit files, the secrets and their file, the
        gate's first stage (``health``, when ``state`` is ``started`` and the plan gives the host something) and the
        instances' textfile facts.

        :raises ValueError: see :attr:`settings`, :meth:`gate_timeout`; a unit the plan cannot render.
        """
        settings, host_plan = self.settings, self.host_plan
        args = {"units": units.host_units(host_plan or {}, settings["options"]),
                "secrets": settings["secrets"], "secrets_file": settings["secrets_file"],
                "remove_secrets": not settings["secrets"] and self.flag("units_hf_token_remove"),
                "textfile": {"instances": textfile.instances(self.plan, self.host)}}
        if state == "started" and host_plan is not None:
            args["health"] = units_gate.gate_first(host_plan, None, self.host, self.gate_timeout(),
                                                   self.var("units_health_interval_s"), self.record(), self.gates)
        return args

    def gate_stage(self, stage, check_mode=False):
        """``http_health``'s options for a stage of the units role's gate on this host, or ``{"skip_reason": ...}``
        where it has nothing to gate. Its results are written into ``launchcard.prom`` (``textfile``).

        ``first`` (``--tags health``, no converge in the run): the engines that name no peer. ``then``: those that
        answer through their peers, less those whose peers' results this run stand for them
        (:func:`._units_gate.host_second_stage`, read from this host's results and its peers' alone), with the
        record when this run's converge did not write it (:func:`._units_gate.record_now`).

        :raises ValueError: see :meth:`gate_timeout`.
        """
        if self.var("units_state") != "started" or self.host_plan is None:
            return {"skip_reason": "the plan gives this host nothing to gate" if self.host_plan is None
                    else "units_state is %s" % self.var("units_state")}
        if stage == "first":
            endpoints = report.gate_endpoints(None, self.host, "first", table=self.gates)
            if not endpoints:
                return {"skip_reason": "no endpoint of this host names no peer"}
            return {"endpoints": endpoints, "timeout": self.gate_timeout(), "interval": self.var("units_health_interval_s"),
                    "textfile": {}}
        if not report.gate_endpoints(None, self.host, "then", table=self.gates):
            return {"skip_reason": "no endpoint of this host answers through its peers"}
        converge = self._vars.get(units_gate.CONVERGE_RESULT)
        health = (converge or {}).get("health")
        # null: the converge call gated this host and found no endpoint for this stage
        then_gated = health.get("then_gated", False) if hasattr(health, "get") else False
        if then_gated is None:
            return {"skip_reason": "the converge call found no endpoint of this stage"}
        hostvars = self._vars.get("hostvars") or {}

        def vars_of(name):
            return self._vars if name == self.host else (hostvars[name] if name in hostvars else None)

        found = units_gate.host_second_stage(self.host, self.gates, vars_of, check_mode)
        if then_gated and found["peers_settled"]:
            return {"skip_reason": "the converge call gated these endpoints and their peers stayed as they were"}
        # the gate's results go into launchcard.prom (launchcard_gate_passed), as the converge call's first stage's do
        out = {"endpoints": found["endpoints"], "timeout": self.gate_timeout(), "interval": self.var("units_health_interval_s"),
               "textfile": {}}
        record = units_gate.record_now(self.record(), converge)
        if record is not None:
            out["record"] = record
        return out


def host_step(templar, task_vars, preflight, host_plan, stack_roles, install_stack=True):
    """The deploy's decision for one host after its preflight call (:func:`._run_locks.host_decision`): the setup parts
    preflight found missing, picked by the run's --tags/--skip-tags (:func:`._unit_options.setup_parts`), and the
    converge's reading where the host is left as it is, else the host-scope locks it takes.

    :param preflight: the host's preflight result; ``host_plan``, ``stack_roles``, ``install_stack``: as
        ``plugins/modules/settle_or_lock.py`` documents them.
    :raises ValueError: a variable the unit options refuse; ``OSError``: the readiness helper cannot be read.
    """
    here = UnitsHost(templar, task_vars)
    parts = unit_options.setup_parts(preflight, host_plan, stack_roles, task_vars.get("ansible_run_tags") or ["all"],
                                     task_vars.get("ansible_skip_tags") or [], install_stack,
                                     RuntimeHost(templar, task_vars).needed(), here.prepare_needed())
    # the reading is built only for a host that may be left as it is (it renders the unit files, the costly part)
    return run_locks.host_decision(preflight, parts, here.settled, planned=host_plan is not None)
