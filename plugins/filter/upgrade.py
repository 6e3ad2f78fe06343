# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of playbooks/upgrade.yml; the logic is in plugin_utils._rollout."""

from __future__ import annotations

import yaml
from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.launchcard.inference.plugins.plugin_utils import _alert_rules as alert_rules
from ansible_collections.launchcard.inference.plugins.plugin_utils import _contract_upgrade as contract_upgrade
from ansible_collections.launchcard.inference.plugins.plugin_utils import _rollout as rollout
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as unit_options
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units


def upgrade_card(cards, key):
    """``{sha256, repo, revision}`` of one loaded card, for the host's record.

    ``key`` (the card's source, a controller path or URL) only finds the card: the record compares whole, so
    a field that named where the card was read from would make the same card, read from another path, a
    change of every host's record.
    """
    card = (cards or {}).get(key)
    if card is None:
        raise AnsibleFilterError("launchcard.inference.upgrade_card: no card %r" % (key,))
    return {"sha256": rollout.card_sha256(card), "repo": card["model"]["repo"], "revision": card["model"]["revision"]}


def upgrade_gpus(hostvars, hosts):
    """``{host: GPUs or None}``: ``launchcard_gpus``, else the accelerators this run's preflight counted."""
    out = {}
    for host in hosts or []:
        hv = hostvars[host] if host in hostvars else {}
        count = hv.get("launchcard_gpus")
        if count is None:
            facts = ((hv.get("preflight_result") or {}).get("facts") or {}).get("accelerators") or {}
            count = facts.get("count")
        out[host] = None if isinstance(count, bool) or not str(count).isdigit() else int(count)
    return out


def upgrade_surge_hosts(hostvars, hosts):
    """The hosts whose instances may surge: ``launchcard_upgrade_surge`` (default true) is not false there."""
    out = []
    for host in hosts:
        value = (hostvars[host] if host in hostvars else {}).get("launchcard_upgrade_surge", True)
        if to_text(value).strip().lower() not in ("false", "no", "0", "off"):
            out.append(host)
    return out


def upgrade_rollout(plan, hostvars, hosts, cards, options=None, serial=1, state_var="upgrade_current"):
    """The rollout from each host's registered ``host_state`` read to ``plan``.

    The units a host runs now are its unit files as found on disk; the record adds the card and instances.
    """
    current = {}
    for host in hosts:
        res = (hostvars[host] if host in hostvars else {}).get(state_var) or {}
        rec = res.get("record")
        if rec:
            current[host] = rec

    def host_options(host):
        # ``options`` are the options of the host that runs this filter (run_once); the kind of podman unit is
        # each host's own (Quadlet where its podman has it), so a fleet of Debian 12 and 13 hosts compares every
        # host with the files it really has
        opts = dict(options or {})
        if opts.get("runtime") == "podman" and host in hostvars:
            opts["podman_quadlet"] = unit_options.host_options(hostvars[host])["podman_quadlet"]
        return opts

    try:
        target_units = {h: units.host_units(hp, host_options(h)) for h, hp in (plan or {}).get("hosts", {}).items()}
        summary = {k: upgrade_card(cards, k) for k in (plan or {}).get("cards", {})}
        result = rollout.rollout(current, plan, target_units, summary, serial, upgrade_gpus(hostvars, hosts),
                                 upgrade_surge_hosts(hostvars, hosts),
                                 lambda h, twins: units.host_units(twins, host_options(h)))
    except (ValueError, KeyError) as exc:
        raise AnsibleFilterError("launchcard.inference.upgrade_rollout: %s" % to_text(exc))
    result["contracts"] = upgrade_contracts(current, plan, target_units, cards, hostvars, (options or {}).get("runtime"))
    return result


def upgrade_contracts(current, plan, target_units, cards, hostvars, runtime):
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


def upgrade_record_units(record):
    """The unit files of a host's record as ``[{"name", "content"}]`` (for ``systemd_units``); [] for none."""
    return [{"name": name, "content": (u or {}).get("text", "")}
            for name, u in sorted(((record or {}).get("units") or {}).items())]


def stack_reboot_batches(hosts, hostvars, serial=1):
    """The hosts whose ``stack_reboot_wanted`` is true, in batches of ``serial`` (play order)."""
    wanted = {}
    for host in hosts or []:
        hv = hostvars[host] if host in hostvars else {}
        value = hv.get("stack_reboot_wanted", False)
        wanted[host] = value if isinstance(value, bool) else str(value).strip().lower() in ("true", "1", "yes")
    try:
        return rollout.reboot_batches(list(hosts or []), wanted, serial)
    except rollout.RolloutError as exc:
        raise AnsibleFilterError("launchcard.inference.stack_reboot_batches: %s" % to_text(exc))


def stack_reboot_drains(plan, host, serving):
    """The routers a stack reboot of ``host`` takes its serving instances out of, and what it cannot (_rollout)."""
    try:
        return rollout.reboot_drains(plan, host, serving)
    except (ValueError, KeyError, TypeError) as exc:
        raise AnsibleFilterError("launchcard.inference.stack_reboot_drains: %s" % to_text(exc))


def upgrade_routers(plan):
    """``[{host, unit, api}]``: the regular-mode routers of ``plan``, whose worker API the batches drive."""
    return [{"host": r["host"], "unit": r["unit"], "api": r["api"]} for r in rollout.routers_of(plan or {})
            if r["mode"] == "regular" and r["api"]]


def upgrade_report(plan, allow_outage=False):
    """The rollout in words, one line per item; its outages accepted or refused as ``allow_outage`` says."""
    return rollout.report(plan, boolean(allow_outage, strict=False))


class FilterModule(object):
    """launchcard.inference upgrade filters."""

    def filters(self):
        return {
            "upgrade_card": upgrade_card,
            "upgrade_rollout": upgrade_rollout,
            "upgrade_record_units": upgrade_record_units,
            "upgrade_report": upgrade_report,
            "upgrade_routers": upgrade_routers,
            "stack_reboot_batches": stack_reboot_batches,
            "stack_reboot_drains": stack_reboot_drains,
        }
