# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the run lock (docs/operations.md, "Run lock"); the lock itself is plugins/module_utils/_lock.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.launchcard.inference.plugins.module_utils import _lock as lock
from ansible_collections.launchcard.inference.plugins.plugin_utils import _locks_taken as locks_taken
from ansible_collections.launchcard.inference.plugins.plugin_utils import _planfile as planfile

HOST_LOCK = "lock.json"
FLEET_LOCK = "fleet-lock.json"


def _get(mapping, *keys):
    for key in keys:
        if not isinstance(mapping, dict) and not hasattr(mapping, "get"):
            return None
        mapping = mapping.get(key)
        if mapping is None:
            return None
    return mapping


def run_lock_spec(run, host, plan, lock_dir="/var/lib/launchcard", break_stale=False, scope="host", defer=False):
    """The ``lock`` option of one host's preflight call (``scope="host"``: its host lock, and the fleet lock
    when ``host`` is the anchor), or of the fleet lock alone (``scope="fleet"``).

    :param defer: the locks are only checked in the preflight call (``defer: true``), to be taken later where the
        run changes a host (``playbooks/deploy.yml``: the host lock on that host, the fleet lock on the anchor); not
        with ``break_stale``, whose run takes every lock in the preflight call.

    :param run: ``launchcard_run`` (set by the plan role).
    :returns: ``{"holder": {...}, "paths": [{"path", "scope"}], "break_stale": bool}``.
    """
    if not run or not run.get("id"):
        raise AnsibleFilterError("launchcard.inference.run_lock_spec: no launchcard_run (the plan role sets it)")
    lock_dir = (lock_dir or "/var/lib/launchcard").rstrip("/") or "/"
    cards = run.get("cards") or {}
    if scope == "fleet":
        card = ",".join(sorted(set(cards.values())))
        paths = [{"path": "%s/%s" % (lock_dir, FLEET_LOCK), "scope": "fleet"}]
    else:
        card = cards.get(_get(plan, "hosts", host, "card")) or ",".join(sorted(set(cards.values())))
        paths = [{"path": "%s/%s" % (lock_dir, HOST_LOCK), "scope": "host"}]
        if host == run.get("anchor"):
            paths.append({"path": "%s/%s" % (lock_dir, FLEET_LOCK), "scope": "fleet"})
        if defer and not break_stale:
            for path in paths:
                path["defer"] = True
    holder = {"run_id": run["id"], "user": run.get("user"), "controller": run.get("controller"),
              "playbook": run.get("playbook"), "card": card}
    return {"holder": holder, "paths": paths, "break_stale": bool(break_stale)}


def _locks(result):
    """The per-path lock results of a registered preflight (``lock.locks``) or run_lock (``locks``) result."""
    return _get(result, "lock", "locks") or _get(result, "locks") or []


def run_lock_taken(hostvars, hosts, fleet=None, anchor=None, released=None, result="preflight_result", keep_fleet=False):
    """The locks this run holds (see plugin_utils._locks_taken.taken)."""
    return locks_taken.taken(hostvars, hosts, fleet, anchor, released, result, keep_fleet)


def run_lock_refusal(hostvars, hosts, fleet=None, anchor=None, result="preflight_result"):
    """Why this run must not go on: each lock another run holds (``<host>:<path> held by <holder>``), and how to
    break a stale one; ``""`` when no other run holds a lock this run needs."""
    conflicts = []
    for host in hosts or ():
        hv = hostvars[host] if host in hostvars else {}
        for r in _locks(_get(hv, result)):
            if r.get("held_by"):
                conflicts.append((host, r["path"], r["held_by"]))
    for r in _locks(fleet):
        if r.get("held_by"):
            conflicts.append((anchor, r["path"], r["held_by"]))
    return lock.refusal(conflicts) if conflicts else ""


def run_lock_keeps_fleet(run, plan, hosts, final=None):
    """Whether this job leaves the fleet lock held for a later job of its plan (a slice); see
    ``_planfile.keeps_fleet_lock``. ``final`` is ``launchcard_plan_final`` (None, a bool or its string)."""
    if final is not None and final != "":
        try:
            final = boolean(final, strict=True)
        except TypeError as exc:
            raise AnsibleFilterError("launchcard.inference.run_lock_keeps_fleet: launchcard_plan_final: %s" % exc)
    else:
        final = None
    return planfile.keeps_fleet_lock(run, (plan or {}).get("hosts"), hosts, final)


class FilterModule(object):
    """launchcard.inference run lock filters."""

    def filters(self):
        return {
            "run_lock_spec": run_lock_spec,
            "run_lock_taken": run_lock_taken,
            "run_lock_refusal": run_lock_refusal,
            "run_lock_keeps_fleet": run_lock_keeps_fleet,
        }
