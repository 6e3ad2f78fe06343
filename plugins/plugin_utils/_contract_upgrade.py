# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an upgrade does to the metric contract: each engine it moves to another release, against the release the
rules and dashboards are held to (:mod:`_metric_contract`).

Pure Python, no Ansible import; the controller runs it once, in the upgrade's rollout planning (no host task).
Old: what each host's record says runs (its unit files, and the image each runs: the record's ``runtime.image_refs``
entry whose digest the unit runs; a record's instances name no image, ``module_utils/_state.py`` ``INSTANCE_KEYS``).
New: the target plan, its unit files and the cards (:mod:`_engine_version`). A finding never stops the upgrade: it is a line of the rollout, a
warning where the new release lacks a contract or a metric the rules and dashboards use.
"""

from __future__ import annotations

import os

from ansible_collections.launchcard.inference.plugins.plugin_utils import _engine_version as engine_version
from ansible_collections.launchcard.inference.plugins.plugin_utils import _metric_contract as contract
from ansible_collections.launchcard.inference.plugins.plugin_utils._rollout import _unit_of, runs

_ROOT = os.path.dirname(os.path.dirname(contract.CONTRACTS_DIR))


def _texts(files):
    """``{unit: text}`` of ``{file name: text}`` (a Quadlet ``NAME.container`` runs ``NAME.service``)."""
    return {_unit_of(n): t for n, t in files.items()}


def _card_version(cards, card_key, index):
    """The card's ``envs[index].engine_version`` (the loaded card's recipe of that index), or None."""
    for recipe in ((cards or {}).get(card_key) or {}).get("recipes") or []:
        if recipe.get("index") == index:
            return recipe.get("engine_version")
    return None


def engine_moves(current, target, target_units, cards, runtime="docker", pins=None):
    """Every engine instance whose process the upgrade replaces with another build, and the releases before and
    after.

    :param current: ``{host: record}`` (``_rollout`` module docstring).
    :param target: the target plan.
    :param target_units: ``{host: [{"name", "content"}]}`` of the target.
    :param cards: ``{card key: card}`` of the target (``envs[].engine_version``).
    :param runtime: ``launchcard_runtime`` of the run.
    :param pins: ``{host: ["NAME==VERSION", ...]}``, what each host's native install pins.
    :returns: ``[{"host", "unit", "recipe", "engine", "old": {"version", "from"}, "new": {"version", "from"}}]``.
    """
    out = []
    for host, hplan in sorted(((target or {}).get("hosts") or {}).items()):
        record = (current or {}).get(host) or {}
        old_text = _texts({n: (u or {}).get("text", "") for n, u in (record.get("units") or {}).items()})
        new_text = _texts({u["name"]: u["content"] for u in (target_units or {}).get(host) or []})
        for inst in hplan.get("instances") or []:
            engine, unit = inst.get("engine"), inst["unit"]
            if inst.get("role") == "router" or engine not in engine_version.IMAGES:
                continue  # the router's release is not its image's (sglang-router, pinned on its own)
            before, after = old_text.get(unit), new_text.get(unit)
            was_image = recorded_image(record, before, inst.get("image"))
            if before == after or _same_build(before, after, was_image, inst):
                continue  # the same build runs (its flags or revision may change)
            new = engine_version.resolve(engine, inst.get("image"), runtime,
                                         _card_version(cards, hplan.get("card"), inst.get("recipe_index")),
                                         (pins or {}).get(host))
            if before is None:
                old = {"version": None, "from": "not running"}
            elif not runs(before)[1] and (runs(before)[0] or runtime != "native"):
                # a container: its unit names no native requirements (_units.py writes them into a native unit)
                old = engine_version.resolve(engine, was_image)
                if old["version"] is None and not was_image:
                    old = {"version": None, "from": "its record names no image"}
            else:
                old = {"version": None, "from": "native install, its release not recorded"}
            if old["version"] is not None and old["version"] == new["version"]:
                continue
            out.append({"host": host, "unit": unit, "recipe": inst.get("recipe"), "engine": engine,
                        "old": old, "new": new})
    return out


def recorded_image(record, before, planned=None):
    """The image a recorded unit runs, as the card named it: the key of the record's ``runtime.image_refs``
    (``{image: name@sha256:...}``) whose digest the unit's ``ExecStart`` runs; ``planned`` where several name that
    digest and it is one of them; None for a unit that runs no image by digest (native) or a record without refs."""
    digests = set(runs(before)[0].values())
    refs = (record.get("runtime") or {}).get("image_refs") or {}
    named = sorted(k for k, v in refs.items() if isinstance(v, str) and v.rpartition("@")[2] in digests)
    return planned if planned in named else (named[0] if named else None)


def _same_build(before, after, was_image, inst):
    """Whether the unit's process stays the same build: the same native requirements, and for a container the same
    image (a digest differing only where both unit files name one: a check-mode run resolves none)."""
    (old_images, old_req), (new_images, new_req) = runs(before), runs(after)
    if old_req != new_req:
        return False
    if old_req is not None:
        return True  # a native unit: its virtualenv's requirements are its build
    if was_image is None or was_image != inst.get("image"):
        return False
    return all(old_images[i] == new_images[i] for i in set(old_images) & set(new_images))


def _rel(path):
    """A contract's path as the collection names it (``monitoring/contracts/...``), else whole."""
    return os.path.relpath(path, _ROOT) if path.startswith(_ROOT + os.sep) else path


def _said(side):
    return "%s (%s)" % (side["version"] or "unknown", side["from"])


def findings(moves, groups, pinned=None, directory=contract.CONTRACTS_DIR, dashboards_dir=contract.DASHBOARDS_DIR):
    """``[{"warning": bool, "text"}]``: one per recipe and change of release of :func:`engine_moves`.

    A warning where the new release has no contract, or its contract lacks a metric the rules or dashboards use;
    a note where the release after the upgrade is unknown, or the contracts differ only in names the rules regain.

    :param groups: the rules document (``_alert_rules.rule_groups``).
    :param pinned: ``{component: contract}`` the rules are held to (default: :func:`_metric_contract.load`).
    """
    pinned = contract.load(directory) if pinned is None else pinned
    used = contract.used_names(groups, dashboards_dir)
    merged = {}
    for m in moves:
        key = (m["recipe"], m["engine"], m["old"]["version"], m["old"]["from"], m["new"]["version"],
               m["new"]["from"])
        merged.setdefault(key, (m, []))[1].append(m["host"])
    out = []
    for dummy, (m, hosts) in sorted(merged.items(), key=lambda kv: str(kv[0])):
        recipe, engine = m["recipe"], m["engine"]
        held = pinned.get(engine)
        if held is None:
            continue  # no pinned contract: no rule names this engine's metrics
        names = used.get(engine, set())
        head = "%s of recipe %s on %s: %s -> %s: " % (
            engine, recipe, ", ".join(sorted(set(hosts))), _said(m["old"]), _said(m["new"]))
        held_to = "the rules and dashboard are held to %s %s (%s)" % (engine, held["version"], _rel(held["path"]))
        new_v, old_v = m["new"]["version"], m["old"]["version"]
        if new_v is None:
            out.append({"warning": False, "text": head + "which release runs after the upgrade is unknown; " + held_to})
            continue
        new_c = contract.release(engine, new_v, directory)
        old_c = contract.release(engine, old_v, directory) if old_v else None
        if new_c is None:
            out.append({"warning": True, "text": head + "no contract for %s %s; %s" % (engine, new_v, held_to)})
            continue
        had = names & set(old_c["metrics"]) if old_c else names
        missing = sorted(had - set(new_c["metrics"]))
        regained = sorted((names & set(new_c["metrics"])) - had)
        if missing:
            out.append({"warning": True, "text": head + "%s %s (%s) does not export %s, which the rules and dashboard "
                        "use%s" % (engine, new_v, _rel(new_c["path"]), ", ".join(missing),
                                   " and %s %s exports" % (engine, old_v) if old_c else "")})
        if regained:
            out.append({"warning": False, "text": head + "%s %s exports %s again, which %s %s does not" % (
                engine, new_v, ", ".join(regained), engine, old_v)})
    return out
