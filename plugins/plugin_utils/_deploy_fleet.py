# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the collection: the deploy's decisions for the fleet after preflight (plugins/action/deploy_fleet.py):
the instances a limited run would move while units outside it point at them (plugins/plugin_utils/_limit_peers.py).
The lock decisions are in _run_locks.py, which the per-host step imports without this module's planner imports.
"""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.plugin_utils import _limit_peers as limit_peers


def stranded(plan, cards, recorded, hosts, allowed):
    """The lines of a limited run that would move an instance whose consumers it leaves out (empty on a full run)."""
    inside = list(hosts or ())
    if all(h in inside for h in ((plan or {}).get("hosts") or {})):
        return []
    entries = limit_peers.stranded_consumers(plan, cards or {}, recorded, inside)
    return limit_peers.report(entries, bool(allowed))
