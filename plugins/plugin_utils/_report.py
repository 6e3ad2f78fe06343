# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plain-text tables for the end-of-run summaries. Pure Python."""

from __future__ import annotations


def table(headers, rows):
    """Render ``rows`` (lists of values) under ``headers`` as aligned text.

    :returns: a list of lines (no trailing newlines), header and rule first.
    """
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    fmt = "  ".join("%%-%ds" % w for w in widths)
    lines = [(fmt % tuple(cells[0])).rstrip(), "  ".join("-" * w for w in widths)]
    lines += [(fmt % tuple(r)).rstrip() for r in cells[1:]]
    return lines


def pending_units(converge, check_mode):
    """Units a check-mode converge would start or restart.

    :param converge: a ``systemd_units`` result (its ``actions`` are read).
    :param check_mode: whether the run is in check mode.
    :returns: dict unit name -> ``"start"`` or ``"restart"``; empty outside
        check mode (a real run applied the change, so its units are gated).
    """
    if not check_mode:
        return {}
    actions = (converge or {}).get("actions") or {}
    pending = dict((name, "start") for name in actions.get("start") or [])
    pending.update((name, "restart") for name in actions.get("restart") or [])
    return pending


def deploy_rows(plan, results):
    """Build the deploy summary rows: one per planned instance.

    :param plan: the plan (``launchcard_plan``).
    :param results: dict host -> ``{"units": [...], "health": [...]}`` as
        returned by the ``systemd_units`` and ``http_health`` modules (either
        may be missing for a host that failed earlier).
        A host's result may also hold ``pending``: unit name -> the verb
        (``start``, ``restart``) a check-mode run would take; such a unit
        is not health-checked (the change is not applied) and reads
        ``would <verb> (check mode)``.
    :returns: list of ``[host, recipe, engine, role, port, state]``; state is
        ``healthy`` when the health gate passed, else the unit's active
        state or ``not in this run`` (a host outside ``--limit``, or
        stopped before its units were converged).
    """
    rows = []
    for host, hp in sorted(plan.get("hosts", {}).items()):
        res = results.get(host) or {}
        units = {u["name"]: u for u in res.get("units") or []}
        health = {h["name"]: h for h in res.get("health") or []}
        pending = res.get("pending") or {}
        for inst in hp["instances"]:
            h = health.get(inst["unit"])
            u = units.get(inst["unit"])
            if inst["unit"] in pending and h is None:
                state = "would %s (check mode)" % pending[inst["unit"]]
            elif h is not None:
                state = "healthy" if h["healthy"] else "unhealthy: %s" % h["detail"]
            elif u is not None:
                state = u.get("active_state") or "unknown"
            else:
                state = "not in this run"
            rows.append([host, inst["recipe"], inst["engine"], inst["role"],
                         inst["port"] if inst["port"] is not None else "-", state])
    return rows


DEPLOY_HEADERS = ("host", "recipe", "engine", "role", "port", "state")


def state_group(state):
    """The group a deploy state is counted in: ``unhealthy`` for every ``unhealthy: <detail>``."""
    return "unhealthy" if state.startswith("unhealthy") else state


def _severity(state):
    """Sort key: what needs a look first (unhealthy, failed, other unit states), healthy last."""
    group = state_group(state)
    if group == "unhealthy":
        return 0
    if group == "failed":
        return 1
    if group == "healthy":
        return 5
    if group.startswith("would "):
        return 4
    if group == "not run":
        return 3
    return 2


def deploy_table(rows):
    """The deploy summary for a fleet of any size: rows grouped by state, the worst first, then counts.

    :param rows: :func:`deploy_rows` output.
    :returns: table lines (:func:`table`, columns :data:`DEPLOY_HEADERS`): the
        rows sorted by state group (unhealthy, failed, other unit states, not
        run, check-mode pending, healthy), by host within a group; then an
        empty line and one line of counts, e.g. ``256 instances on 256 hosts:
        2 unhealthy, 1 failed, 253 healthy``. Readers of the table stop at the
        empty line.
    """
    ordered = sorted(rows, key=lambda r: (_severity(r[5]), state_group(r[5]), str(r[0])))
    counts = {}
    for r in ordered:
        counts[state_group(r[5])] = counts.get(state_group(r[5]), 0) + 1
    groups = sorted(counts, key=lambda g: (_severity(g), g))
    footer = "%d instance%s on %d host%s: %s" % (
        len(rows), "" if len(rows) == 1 else "s", len(set(r[0] for r in rows)),
        "" if len(set(r[0] for r in rows)) == 1 else "s",
        ", ".join("%d %s" % (counts[g], g) for g in groups) or "nothing planned")
    return table(list(DEPLOY_HEADERS), ordered) + ["", footer]
