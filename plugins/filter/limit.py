# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of a limited run: the instances it would move while their consumers run outside it."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.launchcard.inference.plugins.plugin_utils import _limit_peers as limit_peers


def _dig(value, path):
    """``value``'s entry at the dotted ``path`` (a registered result's key), or None where a step is missing."""
    for step in path.split("."):
        value = value.get(step) if hasattr(value, "get") else None
    return value


def stranded_consumers(plan, cards, hostvars, hosts, source, allowed=False):
    """The lines of plugin_utils._limit_peers.report: what this limited run would move while units outside it
    point at it (refused), or, ``allowed``, which of those units now point at nothing. Empty on a full run.

    ``source``: the dotted path, in each run host's variables, of its record's instances (``unit``, ``url``,
    ``argv``): the preflight call's ``preflight_result.units_found.record_instances`` or upgrade.yml's
    ``upgrade_current.record.instances``.
    """
    inside = list(hosts or ())
    if all(h in inside for h in ((plan or {}).get("hosts") or {})):
        return []  # a full run: no host's variables read
    try:
        recorded = dict((h, _dig(hostvars[h], source) or []) for h in inside if h in hostvars)
        entries = limit_peers.stranded_consumers(plan, cards or {}, recorded, inside)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("launchcard.inference.stranded_consumers: %s" % to_text(exc))
    return limit_peers.report(entries, boolean(allowed, strict=False))


class FilterModule(object):
    """launchcard.inference filters of a limited run."""

    def filters(self):
        return {"stranded_consumers": stranded_consumers}
