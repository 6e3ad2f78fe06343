# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the collection: the run lock a host takes (docs/operations.md, "Run lock"), which hosts a deploy leaves
as they are, the locks a run holds across its hosts and why it must stop; the lock itself is
plugins/module_utils/_lock.py. Used by the action plugins (plugins/action/run_lock.py,
run_lock_status.py, and the deploy's settle_or_lock.py and deploy_fleet.py)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.launchcard.inference.plugins.module_utils import _lock as lock

HOST_LOCK = "lock.json"
FLEET_LOCK = "fleet-lock.json"


def get(mapping, *keys):
    """``mapping``'s entry at ``keys``, or None where a step is missing."""
    for key in keys:
        if not isinstance(mapping, dict) and not hasattr(mapping, "get"):
            return None
        mapping = mapping.get(key)
        if mapping is None:
            return None
    return mapping


def lock_spec(run, host, plan, lock_dir="/var/lib/launchcard", break_stale=False, scope="host", defer=False):
    """The ``lock`` option of one host's preflight call (``scope="host"``: its host lock, and the fleet lock
    when ``host`` is the anchor), or of the fleet lock alone (``scope="fleet"``).

    :param defer: the locks are only checked in the preflight call (``defer: true``), to be taken later where the
        run changes a host (``playbooks/deploy.yml``: the host lock on that host, the fleet lock on the anchor); not
        with ``break_stale``, whose run takes every lock in the preflight call.

    :param run: ``launchcard_run`` (set by the plan role).
    :returns: ``{"holder": {...}, "paths": [{"path", "scope"}], "break_stale": bool}``.
    :raises ValueError: without a run id.
    """
    if not run or not run.get("id"):
        raise ValueError("no launchcard_run (the plan role sets it)")
    lock_dir = (lock_dir or "/var/lib/launchcard").rstrip("/") or "/"
    cards = run.get("cards") or {}
    if scope == "fleet":
        card = ",".join(sorted(set(cards.values())))
        paths = [{"path": "%s/%s" % (lock_dir, FLEET_LOCK), "scope": "fleet"}]
    else:
        card = cards.get(get(plan, "hosts", host, "card")) or ",".join(sorted(set(cards.values())))
        paths = [{"path": "%s/%s" % (lock_dir, HOST_LOCK), "scope": "host"}]
        if host == run.get("anchor"):
            paths.append({"path": "%s/%s" % (lock_dir, FLEET_LOCK), "scope": "fleet"})
        if defer and not break_stale:
            for path in paths:
                path["defer"] = True
    holder = {"run_id": run["id"], "user": run.get("user"), "controller": run.get("controller"),
              "playbook": run.get("playbook"), "card": card}
    return {"holder": holder, "paths": paths, "break_stale": bool(break_stale)}


def deferred_locks(preflight):
    """The locks the host's preflight call deferred (checked, not taken): ``[{path, scope, ...}]``."""
    lock = preflight.get("lock") if isinstance(preflight, Mapping) else None
    deferred = lock.get("deferred") if isinstance(lock, Mapping) else None
    return list(deferred or ())


def host_decision(preflight, setup_parts, settled, planned=True):
    """One host's decisions: ``settled``, the converge result when the host is left as it is (its preflight
    call deferred its locks, or the plan gives it nothing (``planned`` false: it takes no lock); it has no setup
    step; and ``settled()`` gives a reading), else None; ``setup_parts``; ``lock``, the host-scope locks it takes
    (none when settled).

    ``settled`` is a callable, so the costly reading is made only for a host that may be left as it is.
    """
    deferred = deferred_locks(preflight)
    parts = list(setup_parts or ())
    reading = settled() if (deferred or not planned) and not parts else None
    reading = reading or None
    lock = [] if reading else [d for d in deferred if isinstance(d, Mapping) and d.get("scope") == "host"]
    return {"settled": reading, "setup_parts": parts, "lock": lock}


def fleet_lock(anchor, hosts, anchor_preflight):
    """The fleet-scope locks the anchor's preflight call deferred, when the anchor is in the run; the play takes
    them only once some host has taken its lock (a run that changes nothing takes none)."""
    if anchor is None or anchor not in hosts:
        return []
    return [d for d in deferred_locks(anchor_preflight) if isinstance(d, Mapping) and d.get("scope") == "fleet"]


def _locks(result):
    """The per-path lock results of a registered preflight (``lock.locks``) or run_lock (``locks``) result."""
    return get(result, "lock", "locks") or get(result, "locks") or []


def _taken(result):
    return [{"path": r["path"], "scope": r.get("scope") or "host"} for r in _locks(result) if r.get("acquired")]


def taken(hostvars, hosts, fleet=None, anchor=None, released=None, result="preflight_result", keep_fleet=False):
    """The locks this run holds: ``[{"host", "paths": [{"path", "scope"}]}]``, hosts in ``hosts`` order.

    :param hostvars: ``hostvars`` (or any mapping of host to its variables); a host's locks are in its registered
        ``result`` (``preflight_result.lock``, or a ``run_lock`` result; a list of names: each of them).
    :param hosts: the hosts to look at (``ansible_play_hosts_all``).
    :param fleet: the registered result of the task that took the fleet lock on ``anchor`` (outside the limit, or
        deferred to after preflight); when ``anchor`` is one of ``hosts``, its ``released`` paths count for it.
    :param released: the name (or a list of names; a dotted name reads into a result, as
        ``units_converge.health``) of registered ``host_state`` or gate results whose ``lock.released``
        lists the paths a host already released (those are left out).
    :param keep_fleet: leave the fleet lock out (a slice of a plan, _planfile.keeps_fleet_lock).
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


def all_settled(hostvars, hosts, step):
    """Whether the host step (its registered result named ``step``, or a dotted path into one:
    ``preflight_result.host_step``) left every one of ``hosts`` as it is: a settled reading, no setup part. False for
    no host (a run that reaches no host is not a run that changed nothing)."""
    hosts = list(hosts or ())
    for host in hosts:
        result = get(hostvars[host] if host in hostvars else {}, *step.split("."))
        if not isinstance(get(result, "settled"), Mapping) or get(result, "setup_parts"):
            return False
    return bool(hosts)


def refusal(hostvars, hosts, fleet=None, anchor=None, result="preflight_result"):
    """Why this run must not go on: each lock another run holds (``<host>:<path> held by <holder>``), and how to
    break a stale one; ``""`` when no other run holds a lock this run needs. ``result``: as :func:`taken`'s."""
    conflicts = []
    for host in hosts or ():
        hv = hostvars[host] if host in hostvars else {}
        for name in [result] if isinstance(result, str) else result or ():
            for r in _locks(get(hv, name)):
                if r.get("held_by"):
                    conflicts.append((host, r["path"], r["held_by"]))
    for r in _locks(fleet):
        if r.get("held_by"):
            conflicts.append((anchor, r["path"], r["held_by"]))
    return lock.refusal(conflicts) if conflicts else ""
