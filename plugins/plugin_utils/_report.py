# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plain-text tables for the end-of-run summaries. Pure Python."""

from __future__ import annotations

import json


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


_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def _authority(address, port):
    """``//address:port`` as a URL names it (an IPv6 address in brackets)."""
    a = str(address)
    return "//%s:%s" % (a if ":" not in a or a.startswith("[") else "[%s]" % a, port)


def _gated_instances(plan, hosts=None):
    """``{host: [(instance, peers)]}`` for each instance with a health endpoint of ``hosts`` (default: every host of
    the plan): the planned instances (on any host) whose HTTP endpoint (``address:port``, or a loopback URL for a
    peer on the instance's own host) its argv names, in plan order.

    One pass over the fleet: the peers are found through an index of the endpoints by the authority a URL would
    give them, so the whole fleet costs what its instances and argv words do, not their product.
    """
    all_hosts = (plan or {}).get("hosts") or {}
    everyone = [i for hp in all_hosts.values() for i in hp.get("instances", [])]
    by_authority = {}
    for order, peer in enumerate(everyone):
        if peer.get("port") and peer.get("health_url"):
            by_authority.setdefault(_authority(peer.get("address"), peer["port"]), []).append((order, peer))
            for loop in _LOOPBACK:  # a peer on the consumer's own host may be named by a loopback URL
                by_authority.setdefault(_authority(loop, peer["port"]), []).append((order, peer, "local"))
    out = {}
    for host in all_hosts if hosts is None else hosts:
        out[host] = []
        for inst in (all_hosts.get(host) or {}).get("instances", []):
            if not inst.get("health_url"):
                continue
            named = {}
            for w in inst.get("argv") or []:
                w = str(w)
                if "//" not in w:
                    continue
                for hit in by_authority.get("//%s" % w.split("//", 1)[1].split("/", 1)[0], ()):
                    peer = hit[1]
                    if peer is inst or (len(hit) > 2 and peer.get("host") != inst.get("host")):
                        continue
                    named[hit[0]] = peer
            out[host].append((inst, [named[k] for k in sorted(named)]))
    return out


def gate_table(plan, hosts=None):
    """The health gate of every host as planned, computed once for the fleet: what :func:`gate_endpoints` and
    :func:`peers_settled` read for one host, without scanning the fleet again for each.

    :param hosts: the hosts to give (default every host of the plan); the peers are found on every host.
    :returns: ``{host: [{"name", "url", "probe", "model", "unit", "peers": [{"host", "unit"}]}]}``: one entry per
        instance with a health endpoint; ``peers`` are the planned instances whose endpoint its argv names (none:
        the first stage; some: the second).
    """
    return dict((host, [{"name": inst["unit"], "url": inst["health_url"], "probe": inst["probe"],
                         "model": inst.get("served_model"), "unit": inst["unit"],
                         "peers": [{"host": p["host"], "unit": p["unit"]} for p in peers]}
                        for inst, peers in gated])
                for host, gated in _gated_instances(plan, hosts).items())


def foreign_peers(plan, hosts):
    """The planned instances on the hosts of the plan outside ``hosts`` (a --limit run's play), by address: what the
    units role checks a unit inside the limit is not pointed at when the plan moved it (``systemd_units``'
    ``foreign_peers``). Computed once for the run: empty on a full run.

    :returns: ``{address: host}`` (a later instance at the same address wins).
    """
    inside = set(hosts or ())
    return dict((inst.get("address"), inst.get("host")) for host, hp in ((plan or {}).get("hosts") or {}).items()
                if host not in inside for inst in hp.get("instances") or ())


def gate_endpoints(plan, host, stage, prior=None, pending=None, table=None):
    """The health-gate endpoints of one host, in two stages.

    A router (or a language server) answers a completion only through its
    peers: when a decode engine crashed on another host, the router on its
    own host would wait out the whole health timeout. So the gate runs in two
    stages: first the instances that name no peer (``first``), then those
    that do (``then``), and an instance whose peer was unhealthy in the
    first stage is not probed: it reads unhealthy at once, naming the peer.

    :param plan: the whole plan (``launchcard_plan``); not read when ``table`` is given.
    :param host: the inventory host name.
    :param stage: ``first``, ``then``, or ``None`` (every endpoint, one stage).
    :param prior: for ``then``, dict host name -> that host's ``first``
        stage result (an ``http_health`` result: its ``endpoints`` are read);
        a host without one (not in this run, or it failed earlier) blocks
        nothing.
    :param pending: for ``then`` in check mode, dict host name -> the units
        a check-mode converge would start or restart there (:func:`pending_units`):
        an endpoint with such a peer is left out (not gated), as the pending
        units themselves are, since the real run would restart its peers
        first and what runs now says nothing of what the run would leave.
    :param table: :func:`gate_table` of the plan, computed once for the fleet (default: this host's, from ``plan``).
    :returns: list of endpoint dicts for ``http_health``: ``name`` (the
        unit), ``url``, ``probe``, ``model``, ``unit``, plus ``blocked``
        (str) for the endpoints not to probe.
    :raises ValueError: an unknown ``stage``.
    """
    if stage not in ("first", "then", None):
        raise ValueError("stage must be 'first', 'then' or none, not %r" % (stage,))
    if table is None:
        table = gate_table(plan, [host])
    out = []
    for entry in table.get(host) or []:
        peers = entry.get("peers") or []
        if (stage == "first" and peers) or (stage == "then" and not peers):
            continue
        if stage == "then" and any(p["unit"] in ((pending or {}).get(p["host"]) or ()) for p in peers):
            continue
        ep = dict((k, entry[k]) for k in ("name", "url", "probe", "model", "unit"))
        bad = []
        for peer in peers if stage == "then" else []:
            res = ((prior or {}).get(peer["host"]) or {}).get("endpoints") or []
            for r in res:
                if r.get("name") == peer["unit"] and not r.get("healthy"):
                    bad.append("%s on %s (%s)" % (peer["unit"], peer["host"], r.get("detail")))
        if bad:
            ep["blocked"] = "not probed: its peer is not healthy: %s" % "; ".join(bad)
        out.append(ep)
    return out


def peers_settled(plan, host, converges, table=None):
    """Whether the peers of a host's second-stage endpoints stayed as they were in this run.

    The converge call of a host whose endpoints answer through their peers (a router, a language server)
    probes them once when it changed nothing on its own host (module_utils._gate.run_gate, ``then_gated``); that
    probe stands for the second stage only if no peer was started or restarted meanwhile, nor found unhealthy.

    :param plan: the whole plan (``launchcard_plan``); not read when ``table`` is given.
    :param host: the inventory host name.
    :param converges: dict host name -> that host's ``systemd_units`` result in this run; a host without one
        (not in this run, or stopped before its converge) changed nothing.
    :param table: :func:`gate_table` of the plan (default: this host's, from ``plan``).
    :returns: True when every host that one of ``host``'s instances names as a peer queued no start or restart
        and has no unhealthy endpoint in its first stage.
    """
    if table is None:
        table = gate_table(plan, [host])
    peers = set(p["host"] for entry in table.get(host) or [] for p in entry.get("peers") or [])
    for peer in peers:
        conv = (converges or {}).get(peer) or {}
        actions = conv.get("actions") or {}
        if conv.get("queued") or actions.get("start") or actions.get("restart"):
            return False
        if (conv.get("health") or {}).get("unhealthy"):
            return False
    return True


def second_stage(table, hosts, prior, pending, converges):
    """The second gate stage of every host at once, for one task run once for the fleet (its per-host part then
    reads its own entry): :func:`gate_endpoints` with ``stage="then"`` and :func:`peers_settled`, each host's.

    :param table: :func:`gate_table` of the plan.
    :param hosts: the hosts to give (those of the plan in this run).
    :param prior: dict host name -> its first stage's result (see :func:`gate_endpoints`).
    :param pending: dict host name -> the units its check-mode converge would start or restart ({} in a real run).
    :param converges: dict host name -> its ``systemd_units`` result in this run (see :func:`peers_settled`).
    :returns: ``{host: {"endpoints": [...], "peers_settled": bool}}``.
    """
    return dict((host, {"endpoints": gate_endpoints(None, host, "then", prior, pending, table),
                        "peers_settled": peers_settled(None, host, converges, table)})
                for host in hosts if host in table)


def failure_budget(percent=None):
    """The failure budget as a percentage of the play's hosts.

    :param percent: ``launchcard_max_fail_percentage`` (an integer or its string from 0 to 100; None: 0).
    :returns: the percentage, an int from 0 to 100.
    :raises ValueError: a value that is not an integer from 0 to 100 (a bool included), naming the variable.
    """
    try:
        pct = 0 if percent is None else int(percent)
    except (TypeError, ValueError):
        pct = -1
    if isinstance(percent, bool) or not 0 <= pct <= 100:
        raise ValueError("launchcard_max_fail_percentage must be an integer from 0 to 100, found %r" % (percent,))
    return pct


def failure_budget_spent(lost, hosts, percent=None):
    """Whether the hosts that failed or could not be reached exceed the failure budget.

    Ansible's ``max_fail_percentage`` counts failed hosts, not unreachable ones; the
    collection counts both, so a budget of 0 changes no host once any host is lost.

    :param lost: names of the hosts lost so far (failed or unreachable; repeats count once), or their number (a
        task that every host runs passes ``ansible_play_hosts_all | length - ansible_play_hosts | length``: two
        lengths, where a set of the names would cost each host a pass over the fleet).
    :param hosts: every host of the play (``ansible_play_hosts_all``): only its length is read; or that length.
    :param percent: ``launchcard_max_fail_percentage`` (0-100; None: 0).
    :raises ValueError: a percentage that is not an integer from 0 to 100.
    """
    count = lost if isinstance(lost, int) and not isinstance(lost, bool) else len(set(lost or []))
    total = hosts if isinstance(hosts, int) and not isinstance(hosts, bool) else len(hosts or [])
    return count * 100 > total * failure_budget(percent)


def hosts_by_settings(per_host):
    """Group hosts whose settings are equal, so a fleet-wide check runs once per distinct set.

    :param per_host: dict host name -> dict of settings (JSON-like values).
    :returns: a list of ``{"hosts": [names], "vars": {settings}, "label": str}``, one per distinct set, in
        the order of each set's first host; hosts in the order given; ``label`` names the first three hosts
        and counts the rest (a loop label that stays short on a large fleet).
    """
    groups = {}
    for host, settings in per_host.items():
        key = json.dumps(settings, sort_keys=True, default=repr)
        groups.setdefault(key, {"hosts": [], "vars": settings})["hosts"].append(host)
    for group in groups.values():
        names = group["hosts"]
        group["label"] = ", ".join(names[:3]) + (" and %d more" % (len(names) - 3) if len(names) > 3 else "")
    return list(groups.values())
