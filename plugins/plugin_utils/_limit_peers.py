# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A ``--limit`` run that would move an instance whose consumers it leaves out.

Pure Python, no Ansible import. A limited run (``--limit``, ``launchcard_target``, a slice of a plan file)
rewrites only its own hosts' units. When the plan moves an instance inside the run (its port, its bootstrap
port, its group's init port, or its host's address), the units outside the run that name it keep naming where it
was, and point at nothing once it restarts: a router's ``--prefill URL BOOTSTRAP_PORT`` / ``--decode`` /
``--worker-urls``, a language server's ``--encoder-urls``, the other ranks of a multi-node or data parallel group
(``--dist-init-addr``, ``--master-addr``/``--master-port``, ``--data-parallel-address``/``--data-parallel-rpc-port``).

Who names whom is preflight's one rule (``module_utils._preflight.peer_links``). Where an instance is today is what
its own host recorded when it last deployed it (the record's URL and argv, read by the run's preflight call or by
upgrade.yml's read of the record), not the new plan: the units outside the run were written from that same
deploy. Both sides are read the same way (:func:`served`), so only a real move counts.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from ansible_collections.launchcard.inference.plugins.module_utils._preflight import _peer_index, peer_links
from ansible_collections.launchcard.inference.plugins.plugin_utils._recipe import RecipeError, describe, launcher

OVERRIDE = "launchcard_allow_moved_peers"


def served(inst, key):
    """Where ``inst`` (a plan or record instance: ``url``, ``argv``) serves what ``key`` names, ``(address, port)``:
    ``port`` from its URL, ``bootstrap_port`` and ``dist_init_port`` from its argv as the planner reads a card's
    (``_recipe.describe``: an absent flag is the engine's default). None when they do not tell (no URL, an argv
    that names no engine)."""
    try:
        parts = urlsplit(str(inst.get("url") or ""))
        address, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not address:
        return None
    if key == "port":
        return (address, port)
    argv = [str(w) for w in inst.get("argv") or []]
    kind = launcher(argv) if argv else None
    if kind is None:
        return None
    try:
        value = describe({"engine": kind, "image": None, "argv": argv}, 0).get(key)
    except (RecipeError, ValueError):
        return None
    return (address, value) if value else None


def _recorded(instances, peer):
    """The record's entry of the planned instance ``peer`` (its unit, or a former name of it), or None."""
    names = [peer.get("unit")] + list(peer.get("former_units") or [])
    by_unit = dict((i.get("unit"), i) for i in instances or () if isinstance(i, dict))
    return next((by_unit[n] for n in names if n in by_unit), None)


def _endpoint(where):
    address, port = where
    return "%s:%s" % ("[%s]" % address if ":" in address else address, port)


def stranded_consumers(plan, cards, recorded, hosts):
    """The instances of a limited run that would move while units outside the run name them.

    :param plan: the whole fleet's plan (``launchcard_plan``; each host's entry names its ``card``).
    :param cards: card name -> card (``launchcard_cards``).
    :param recorded: ``{host: [{"unit", "url", "argv"}]}`` of the run's hosts: what each recorded running
        (``_state.record_instances``); a host without an entry recorded nothing (a first deploy moves nothing).
    :param hosts: the run's hosts (``ansible_play_hosts_all``).
    :returns: one entry per moved instance and what moved, sorted: ``{"host", "unit", "what", "was", "now",
        "consumers": [{"host", "unit"}]}`` (``was``/``now``: ``address:port``); empty on a run of every planned host.
    """
    inside = set(hosts or ())
    planned = (plan or {}).get("hosts") or {}
    if all(h in inside for h in planned):
        return []
    index = _peer_index(plan)
    found = {}
    for host, hp in sorted(planned.items()):
        if host in inside or hp.get("card") not in (cards or {}):
            continue
        for inst, peer, key, what in peer_links(cards[hp["card"]], hp, plan, index):
            # a decode learns the prefill's bootstrap host and port from each request the router sends it
            # (sglang_router mini_lb.py: bootstrap_host, bootstrap_port), not from its own argv
            if peer.get("host") not in inside or (inst["role"] == "decode" and key == "bootstrap_port"):
                continue
            k = (peer["host"], peer["unit"], key)
            if k not in found:
                before = _recorded((recorded or {}).get(peer["host"]), peer)
                was, now = (served(before, key) if before else None), served(peer, key)
                found[k] = None if was is None or now is None or was == now else {
                    "host": peer["host"], "unit": peer["unit"], "what": what, "was": _endpoint(was),
                    "now": _endpoint(now), "consumers": []}
            entry = found[k]
            if entry and {"host": host, "unit": inst["unit"]} not in entry["consumers"]:
                entry["consumers"].append({"host": host, "unit": inst["unit"]})
    return [found[k] for k in sorted(k for k in found if found[k])]


def report(entries, allowed=False):
    """The lines a limited run shows of :func:`stranded_consumers`: refused (``allowed`` false), each moved
    instance, its consumers and the hosts to add to the limit; allowed (``launchcard_allow_moved_peers``), a
    warning per consumer that now points at nothing. Empty without entries."""
    if not entries:
        return []
    consumers = sorted(set(c["host"] for e in entries for c in e["consumers"]))
    if allowed:
        return ["WARNING: %s on %s (not in this run) points at %s, where nothing serves now: %s on %s moved its %s "
                "to %s (%s)" % (c["unit"], c["host"], e["was"], e["unit"], e["host"], e["what"], e["now"], OVERRIDE)
                for e in entries for c in e["consumers"]]
    lines = ["refusing this --limit run before any host changes: it would move %d instance%s that units outside the "
             "run point at, and they would point at nothing:" % (len(entries), "" if len(entries) == 1 else "s")]
    for e in entries:
        lines.append("  %s on %s: its %s moves from %s to %s; %s still point%s at %s" % (
            e["unit"], e["host"], e["what"], e["was"], e["now"],
            ", ".join("%s on %s" % (c["unit"], c["host"]) for c in e["consumers"]),
            "s" if len(e["consumers"]) == 1 else "", e["was"]))
    lines.append("Add %s to --limit (their units then follow), or set %s=true to run it anyway." % (
        ", ".join(consumers), OVERRIDE))
    return lines
