# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the collection: the deploy's decisions for the fleet after preflight (plugins/action/deploy_fleet.py).

From each host's preflight reading: which hosts this run leaves as they are (their converge result is that
reading), which take their run lock, what each sets up, and the fleet lock the anchor may take; and the instances a
limited run would move while units outside it point at them (plugins/plugin_utils/_limit_peers.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.launchcard.inference.plugins.plugin_utils import _limit_peers as limit_peers


def deferred_locks(preflight):
    """The locks the host's preflight call deferred (checked, not taken): ``[{path, scope, ...}]``."""
    lock = preflight.get("lock") if isinstance(preflight, Mapping) else None
    deferred = lock.get("deferred") if isinstance(lock, Mapping) else None
    return list(deferred or ())


def host_decision(preflight, setup_parts, settled):
    """One host's decisions: ``settled``, the converge result when the host is left as it is (its preflight
    call deferred its locks, it has no setup step, and ``settled()`` gives a reading), else None; ``setup_parts``;
    ``lock``, the host-scope locks it takes (none when settled).

    ``settled`` is a callable, so the costly reading is made only for a host that may be left as it is.
    """
    deferred = deferred_locks(preflight)
    parts = list(setup_parts or ())
    reading = settled() if deferred and not parts else None
    reading = reading or None
    lock = [] if reading else [d for d in deferred if isinstance(d, Mapping) and d.get("scope") == "host"]
    return {"settled": reading, "setup_parts": parts, "lock": lock}


def fleet_lock(anchor, hosts, anchor_preflight):
    """The fleet-scope locks the anchor's preflight call deferred, when the anchor is in the run; the play takes
    them only once some host has taken its lock (a run that changes nothing takes none)."""
    if anchor is None or anchor not in hosts:
        return []
    return [d for d in deferred_locks(anchor_preflight) if isinstance(d, Mapping) and d.get("scope") == "fleet"]


def stranded(plan, cards, recorded, hosts, allowed):
    """The lines of a limited run that would move an instance whose consumers it leaves out (empty on a full run)."""
    inside = list(hosts or ())
    if all(h in inside for h in ((plan or {}).get("hosts") or {})):
        return []
    entries = limit_peers.stranded_consumers(plan, cards or {}, recorded, inside)
    return limit_peers.report(entries, bool(allowed))
