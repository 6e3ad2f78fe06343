# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run locks a run still holds, from its registered results (docs/operations.md, "Run lock"); private to the
collection. The lock itself is plugins/module_utils/_lock.py."""

from __future__ import annotations


def get(mapping, *keys):
    """``mapping[k1][k2]...``, or None where a step is missing or not a mapping."""
    for key in keys:
        if not isinstance(mapping, dict) and not hasattr(mapping, "get"):
            return None
        mapping = mapping.get(key)
        if mapping is None:
            return None
    return mapping


def _locks(result):
    """The per-path lock results of a registered preflight (``lock.locks``) or run_lock (``locks``) result."""
    return get(result, "lock", "locks") or get(result, "locks") or []


def _taken(result):
    return [{"path": r["path"], "scope": r.get("scope") or "host"} for r in _locks(result) if r.get("acquired")]


def taken(hostvars, hosts, fleet=None, anchor=None, released=None, result="preflight_result", keep_fleet=False):
    """The locks this run holds: ``[{"host", "paths": [{"path", "scope"}]}]``, hosts in ``hosts`` order.

    :param hostvars: ``hostvars``; a host's locks are in its registered ``result`` (``preflight_result.lock``, or a
        ``run_lock`` result; a list of names: each of them).
    :param hosts: the hosts to look at (``ansible_play_hosts_all``).
    :param fleet: the registered result of the task that took the fleet lock on ``anchor`` (outside the limit, or
        deferred to after preflight); when ``anchor`` is one of ``hosts``, its ``released`` paths count for it.
    :param released: the name (or a list of names; a dotted name reads into a result, as
        ``units_converge.health``) of registered ``host_state`` or gate results whose ``lock.released``
        lists the paths a host already released (those are left out).
    :param keep_fleet: leave the fleet lock out (a slice of a plan, ``run_lock_keeps_fleet``).
    """
    if isinstance(released, str):
        released = [released]
    out = []
    fleet_paths = _taken(fleet) if anchor else []
    for host in hosts or ():
        hv = hostvars[host] if host in hostvars else {}
        paths = [p for name in ([result] if isinstance(result, str) else result or ()) for p in _taken(get(hv, name))]
        if host == anchor:
            paths += [p for p in fleet_paths if p not in paths]
            fleet_paths = []
        gone = set(p for name in released or () for p in (get(hv, *(name.split(".") + ["lock", "released"])) or []))
        paths = [p for p in paths if p["path"] not in gone and not (keep_fleet and p["scope"] == "fleet")]
        if paths:
            out.append({"host": host, "paths": paths})
    if fleet_paths and not keep_fleet:
        out.append({"host": anchor, "paths": fleet_paths})
    return out
