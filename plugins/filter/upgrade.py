# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of playbooks/upgrade.yml; the logic is in plugin_utils._rollout."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.launchcard.inference.plugins.plugin_utils import _rollout as rollout
from ansible_collections.launchcard.inference.plugins.plugin_utils import _upgrade_fleet as upgrade_fleet


def upgrade_card(cards, key):
    """``{sha256, repo, revision}`` of one loaded card, for the host's record (see plugin_utils._upgrade_fleet)."""
    try:
        return upgrade_fleet.record_card(cards, key)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.upgrade_card: %s" % to_text(exc))


def upgrade_rollout(plan, hostvars, hosts, cards, options=None, serial=1, state_var="upgrade_current"):
    """The rollout from each host's registered ``host_state`` read to ``plan`` (see plugin_utils._upgrade_fleet)."""
    try:
        return upgrade_fleet.rollout(plan, hostvars, hosts, cards, options, serial, state_var)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.upgrade_rollout: %s" % to_text(exc))


def upgrade_record_units(record):
    """The unit files of a host's record as ``[{"name", "content"}]`` (see plugin_utils._upgrade_fleet)."""
    return upgrade_fleet.record_units(record)


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
    """``[{host, unit, api}]``: the regular-mode routers of ``plan`` (see plugin_utils._upgrade_fleet)."""
    return upgrade_fleet.routers(plan)


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
