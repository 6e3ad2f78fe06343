# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade's fleet step (plugins/action/upgrade_fleet.py), private to the collection: from each host's record
and the new plan, the rollout (_rollout), its report, the routers to probe, the limited-run refusal (_limit_peers),
and what each host's batch (playbooks/tasks/upgrade-batch-hosts.yml) reads, keyed by host.

Controller only. ``hostvars`` is Ansible's ``hostvars`` (or a dict of dicts in tests): only the variables named
here are read of each host.
"""

from __future__ import annotations

import yaml
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.launchcard.inference.plugins.plugin_utils import _alert_rules as alert_rules
from ansible_collections.launchcard.inference.plugins.plugin_utils import _contract_upgrade as contract_upgrade
from ansible_collections.launchcard.inference.plugins.plugin_utils import _limit_peers as limit_peers
from ansible_collections.launchcard.inference.plugins.plugin_utils import _plan_tables as plan_tables
from ansible_collections.launchcard.inference.plugins.plugin_utils import _rollout as rollout_mod
from ansible_collections.launchcard.inference.plugins.plugin_utils import _textfile as textfile
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as unit_options
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_times as unit_times
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units

# the registered host_state read of each host (playbooks/upgrade.yml "Read what each host runs")
STATE_VAR = "upgrade_current"


class HostvarsOnce(object):
    """``hostvars`` whose hosts are each read once: ansible-core's ``hostvars[host]`` merges that host's variables
    anew on every read (ansible-core 2.19 lib/ansible/vars/hostvars.py ``raw_get``: ``VariableManager.get_vars``, no
    cache)."""

    def __init__(self, hostvars):
        self._hostvars = hostvars
        self._read = {}

    def __contains__(self, host):
        return host in self._hostvars

    def __getitem__(self, host):
        if host not in self._read:
            self._read[host] = self._hostvars[host]
        return self._read[host]


def _vars(hostvars, host):
    return hostvars[host] if host in hostvars else {}


def _dig(value, path):
    """``value``'s entry at the dotted ``path``, or None where a step is missing."""
    for step in path.split("."):
        value = value.get(step) if hasattr(value, "get") else None
    return value


def record_units(record):
    """The unit files of a host's record as ``[{"name", "content"}]`` (for ``systemd_units``); [] for none."""
    return [{"name": name, "content": (u or {}).get("text", "")}
            for name, u in sorted(((record or {}).get("units") or {}).items())]


def gpus(hostvars, hosts):
    """``{host: GPUs or None}``: ``launchcard_gpus``, else the accelerators this run's preflight counted."""
    out = {}
    for host in hosts or []:
        hv = _vars(hostvars, host)
        count = hv.get("launchcard_gpus")
        if count is None:
            facts = ((hv.get("preflight_result") or {}).get("facts") or {}).get("accelerators") or {}
            count = facts.get("count")
        out[host] = None if isinstance(count, bool) or not str(count).isdigit() else int(count)
    return out


def surge_hosts(hostvars, hosts):
    """The hosts whose instances may surge: ``launchcard_upgrade_surge`` (default true) is not false there."""
    out = []
    for host in hosts:
        value = _vars(hostvars, host).get("launchcard_upgrade_surge", True)
        if to_text(value).strip().lower() not in ("false", "no", "0", "off"):
            out.append(host)
    return out


def routers(plan):
    """``[{host, unit, api}]``: the regular-mode routers of ``plan``, whose worker API the batches drive."""
    return [{"host": r["host"], "unit": r["unit"], "api": r["api"]} for r in rollout_mod.routers_of(plan or {})
            if r["mode"] == "regular" and r["api"]]


def records(hostvars, hosts, state_var=STATE_VAR):
    """``{host: record}`` of the hosts whose registered ``host_state`` read found one."""
    current = {}
    for host in hosts:
        rec = (_vars(hostvars, host).get(state_var) or {}).get("record")
        if rec:
            current[host] = rec
    return current


def rollout(plan, hostvars, hosts, cards, options=None, serial=1, state_var=STATE_VAR):
    """The rollout from each host's registered ``host_state`` read to ``plan`` (see _rollout; ``contracts`` added).

    The units a host runs now are its unit files as found on disk; the record adds the card and instances.
    :raises ValueError: bad input (the message names the variable or host).
    """
    current = records(hostvars, hosts, state_var)

    def host_options(host):
        # ``options`` are the options of the host that runs this step (run_once); the kind of podman unit is each
        # host's own (Quadlet where its podman has it), so a fleet of Debian 12 and 13 hosts compares every host
        # with the files it really has
        opts = dict(options or {})
        if opts.get("runtime") == "podman" and host in hostvars:
            opts["podman_quadlet"] = unit_options.host_options(hostvars[host])["podman_quadlet"]
        return opts

    try:
        target_units = {h: units.host_units(hp, host_options(h)) for h, hp in (plan or {}).get("hosts", {}).items()}
        summary = {k: plan_tables.record_card(cards, k) for k in (plan or {}).get("cards", {})}
        result = rollout_mod.rollout(current, plan, target_units, summary, serial, gpus(hostvars, hosts),
                                     surge_hosts(hostvars, hosts),
                                     lambda h, twins: units.host_units(twins, host_options(h)))
    except KeyError as exc:
        raise ValueError(to_text(exc))
    result["contracts"] = contracts(current, plan, target_units, cards, hostvars, (options or {}).get("runtime"))
    return result


def contracts(current, plan, target_units, cards, hostvars, runtime):
    """Each engine the upgrade moves to another release, against the metric contract (_contract_upgrade)."""
    pins = {}
    for host, hplan in ((plan or {}).get("hosts") or {}).items():
        if runtime == "native" and host in hostvars:
            try:
                pins[host] = unit_options.native_install(hostvars[host], hplan)["packages"]
            except unit_options.OptionError:
                pins[host] = None  # no lock for the host: preflight names it; the release is unknown here
    try:
        return contract_upgrade.findings(contract_upgrade.engine_moves(current, plan, target_units, cards, runtime, pins),
                                         alert_rules.rule_groups())
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as exc:
        # monitoring never stops a fleet's upgrade: a contract that cannot be read is said, not raised
        return [{"warning": True, "text": "not compared: %s" % to_text(exc)}]


def stranded(plan, cards, hostvars, hosts, allowed, state_var=STATE_VAR):
    """The limited-run lines of _limit_peers.report from each run host's record instances; [] on a full run."""
    inside = list(hosts or ())
    if all(h in inside for h in ((plan or {}).get("hosts") or {})):
        return []  # a full run: no host's variables read
    recorded = dict((h, _dig(hostvars[h], state_var + ".record.instances") or []) for h in inside if h in hostvars)
    return limit_peers.report(limit_peers.stranded_consumers(plan, cards or {}, recorded, inside), allowed)


def outage_refusal(outages):
    """Why a real run stops before it changes anything: the rollout's outages, and how to accept them."""
    return ("upgrade refused: it would drop requests on %d instance(s), so nothing was installed, staged or restarted:\n"
            % len(outages) + "".join("  %s\n" % o["line"] for o in outages)
            + "Set launchcard_upgrade_allow_outage: true in the inventory to accept these outages, or change what "
              "causes them (docs/upgrades.md, Outages).")


def host_data(plan, cards, hostvars, host, result, gate_override, check_mode, state_var=STATE_VAR, tags=(("all",), ())):
    """What ``host``'s own tasks read: its ``change`` (None: the rollout leaves it out), ``runs`` (what it runs before
    its batch, in words), ``setup_parts`` and ``setup_parts_runtime`` (the roles its setup loop includes, as deploy
    decides them, without and with the runtime role's ``runtime_needed``; ``tags``: the run's ``--tags`` and
    ``--skip-tags``), ``card`` where the plan places it, ``release_paths`` where the rollout names it (the host lock
    its record releases), and, where it has a batch, its gates' ``gate_timeout`` and ``twin_gate_timeout`` (its surge
    twins'), ``textfile_instances`` and ``record_units`` (its rollback)."""
    hplan = ((plan or {}).get("hosts") or {}).get(host)
    change = result["hosts"].get(host)
    unchanged = host in result["unchanged"]
    runs = (change or {"runs_before": "nothing"})["runs_after" if unchanged and not check_mode else "runs_before"]
    out = {"change": change, "runs": runs, "card": plan_tables.record_card(cards, hplan["card"]) if hplan is not None else None}
    hv = _vars(hostvars, host)
    # the weights where preflight did not find the new revision staged; the stack is not the upgrade's to install
    preflight = hv.get("preflight_result") or {}
    for key, runtime in (("setup_parts", False), ("setup_parts_runtime", True)):
        out[key] = unit_options.setup_parts(preflight, hplan, {}, tags[0], tags[1], False, runtime)
    if change is None and not unchanged:
        return out
    # what this host's record releases: the host lock its preflight call took (the fleet lock stays to the end)
    locks = (preflight.get("lock") or {}).get("locks") or []
    out["release_paths"] = [lock for lock in locks if lock.get("acquired") and lock.get("scope") == "host"]
    if change is not None and not unchanged:
        # a host of a batch; each host's own unit options (units_settings), as its gate's budget was read before
        opts = unit_options.host_options(hv)
        out["gate_timeout"] = unit_times.gate_timeout(hplan or {}, opts, gate_override)
        out["twin_gate_timeout"] = unit_times.gate_timeout({"instances": change["twins"]}, opts, gate_override)
        out["textfile_instances"] = textfile.instances(plan or {}, host)
        out["record_units"] = record_units(_dig(hv, state_var + ".record"))
    return out


def fleet(plan, cards, hostvars, hosts, options=None, serial=1, allow_outage=False, allow_moved_peers=False,
          gate_override=None, check_mode=False, state_var=STATE_VAR, tags=(("all",), ())):
    """Everything playbooks/upgrade.yml decides once for the fleet, after each host's record was read.

    :returns: ``{"rollout": _rollout's result less ``hosts``, "report": [lines], "routers": [{host, unit, api}],
        "stranded": [lines], "stranded_refused": bool, "outage_refusal": str ("" when the run goes on),
        "hosts": {host: host_data}}`` for every host of ``hosts``.
    :raises ValueError: bad input, naming the variable or host.
    """
    hostvars = HostvarsOnce(hostvars)
    result = rollout(plan, hostvars, hosts, cards, options, serial, state_var)
    report = rollout_mod.report(result, allow_outage)
    lines = stranded(plan, cards, hostvars, hosts, allow_moved_peers, state_var)
    per_host = dict((h, host_data(plan, cards, hostvars, h, result, gate_override, check_mode, state_var, tags))
                    for h in hosts)
    refuse = result["outages"] and not allow_outage and not check_mode
    return {"rollout": dict((k, v) for k, v in result.items() if k != "hosts"), "report": report,
            "routers": routers(plan), "stranded": lines, "stranded_refused": bool(lines) and not allow_moved_peers and not check_mode,
            "outage_refusal": outage_refusal(result["outages"]) if refuse else "", "hosts": per_host}
