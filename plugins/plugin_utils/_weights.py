# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who downloads a card's weights from the Hub and who copies them from a peer (the weights role's ``peer`` source).

Pure Python, no Ansible import. The weights role (roles/weights) asks :func:`peer_plan` once per run, on
every host it stages, from the same inputs: so every host agrees on the seed of its card.
"""

from __future__ import annotations


def engine_hosts(plan):
    """``{card: [host, ...]}``: the hosts of each card that run an engine (routers load no weights), sorted."""
    cards = {}
    for host, host_plan in sorted(((plan or {}).get("hosts") or {}).items()):
        if any(i.get("role") != "router" for i in host_plan.get("instances") or []):
            cards.setdefault(host_plan.get("card"), []).append(host)
    return cards


def peer_plan(plan, staged, active):
    """The seed of each card and the hosts that copy from it.

    :param plan: ``launchcard_plan`` (``hosts``: host -> ``{card, instances}``).
    :param staged: host -> whether the card's revision is already complete there (the preflight call's
        ``weights_staged``); a host not listed counts as not staged.
    :param active: the hosts this run still reaches (``ansible_play_hosts``): a failed, unreachable or
        ``--limit``-ed out host is never a seed, and is given nothing to do.
    :returns: ``{"cards": {card: {"seed", "seed_staged", "copies": [host], "hosts": [host]}},
        "hosts": {host: {"card", "seed", "copying": bool, "copies": [host]}}}``. The seed of a card is the
        first host (by name) that already holds the revision, else the first host: it alone talks to the
        Hub for the files. ``copies`` are the card's other hosts that lack the revision; a host that
        already holds it copies nothing. ``copies`` in a host's entry is set on the seed only.
    """
    active = set(active or [])
    staged = staged or {}
    out = {"cards": {}, "hosts": {}}
    for card, hosts in sorted(engine_hosts(plan).items(), key=lambda kv: str(kv[0])):
        hosts = [h for h in hosts if h in active]
        if not hosts:
            continue
        holders = [h for h in hosts if staged.get(h)]
        seed = (holders or hosts)[0]
        copies = [h for h in hosts if h != seed and not staged.get(h)]
        out["cards"][card] = {"seed": seed, "seed_staged": bool(staged.get(seed)), "copies": copies, "hosts": hosts}
        for host in hosts:
            out["hosts"][host] = {"card": card, "seed": seed, "copying": host in copies,
                                  "copies": copies if host == seed else []}
    return out


def peer_report(peers, repo_of=None):
    """Lines saying, per card, which host downloads from the Hub and which copy from it (or that none has to).

    :param peers: :func:`peer_plan`'s result.
    :param repo_of: card -> ``owner/name@revision`` to name in the lines in place of the card (optional).
    """
    lines = []
    for card, entry in sorted(peers.get("cards", {}).items(), key=lambda kv: str(kv[0])):
        what = (repo_of or {}).get(card) or str(card)
        if entry["seed_staged"]:
            head = "%s: %s already holds it, no download" % (what, entry["seed"])
        else:
            head = "%s: %s downloads it from the Hub" % (what, entry["seed"])
        tail = ("; %s copy it from %s" % (", ".join(entry["copies"]), entry["seed"]) if entry["copies"]
                else "; no host copies it")
        lines.append(head + tail)
    return lines
