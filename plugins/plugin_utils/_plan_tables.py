# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the collection: the fleet tables the planning step (plugins/action/launch_card.py, facts=false)
hands every host of the play with the plan, each computed once for the fleet instead of once per host."""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.launchcard.inference.plugins.module_utils import _preflight as preflight
from ansible_collections.launchcard.inference.plugins.plugin_utils import _planfile as planfile
from ansible_collections.launchcard.inference.plugins.plugin_utils import _report as report
from ansible_collections.launchcard.inference.plugins.plugin_utils import _rollout as rollout


def plan_final(value, var="launchcard_plan_final"):
    """``launchcard_plan_final`` as None (unset or empty) or a bool; ValueError naming ``var`` for anything else."""
    if value is None or value == "":
        return None
    try:
        return boolean(value, strict=True)
    except TypeError as exc:
        raise ValueError("%s: %s" % (var, exc))


def record_card(cards, key):
    """``{sha256, repo, revision}`` of one loaded card, for the host's record.

    ``key`` (the card's source, a controller path or URL) only finds the card: the record compares whole, so a field
    that named where the card was read from would make the same card, read from another path, a change of every
    host's record.

    :raises ValueError: no card ``key``.
    """
    card = (cards or {}).get(key)
    if card is None:
        raise ValueError("no card %r" % (key,))
    return {"sha256": rollout.card_sha256(card), "repo": card["model"]["repo"], "revision": card["model"]["revision"]}


def fleet_tables(cards, plan, run, play_hosts, final=None):
    """What the play's hosts read of the whole plan, found once here:

    ``launchcard_gates``: every host's health gate with the peers each endpoint answers through
    (_report.gate_table), for the units role; ``launchcard_peer_ports``: every host's peer ports for its preflight
    call (module_utils._preflight.peer_table); ``launchcard_foreign_peers``: the instances on the plan's hosts
    outside ``play_hosts`` (_report.foreign_peers, empty on a full run); ``launchcard_keep_fleet_lock``: whether
    this job, a slice of a plan file, leaves the fleet lock held for the plan's final job
    (_planfile.keeps_fleet_lock); ``launchcard_record_cards``: each card as a host's record names it
    (:func:`record_card`), by source.

    :param final: ``launchcard_plan_final`` (None, a bool or its string; see :func:`plan_final`).
    :raises ValueError: a host's card is not in ``cards``, or ``final`` is no boolean.
    """
    try:
        peer_ports = preflight.peer_table(cards or {}, plan or {})
    except KeyError as exc:
        raise ValueError("a host's card is not in the cards: %s" % exc)
    return {
        "launchcard_gates": report.gate_table(plan or {}),
        "launchcard_peer_ports": peer_ports,
        "launchcard_foreign_peers": report.foreign_peers(plan or {}, play_hosts),
        "launchcard_keep_fleet_lock": planfile.keeps_fleet_lock(run, (plan or {}).get("hosts"), play_hosts,
                                                                plan_final(final)),
        "launchcard_record_cards": dict((src, record_card(cards, src)) for src in (cards or {})),
    }
