# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The card model: a validated launch card as plain, JSON-ready facts.

Pure Python, no Ansible import. :func:`load_card` is the one door: text in,
either a model out or a :class:`CardError` listing every problem with its JSON
path (``envs[4].argv[7]``). Validation rules live in
:mod:`card_schema` and :mod:`card_validate`; what each recipe means lives in :mod:`recipe`.
"""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.plugin_utils import _card_validate as card_validate
from ansible_collections.launchcard.inference.plugins.plugin_utils._recipe import (
    RecipeError,
    describe,
    hub_pins,
    name_recipes,
    slug,
)

GIB = 1 << 30
# The most bytes a card may hold: the example card is 11 KiB, and a larger one is refused before it is parsed
# (json.loads reads a document whole into memory, and every key of it is walked by the schema).
MAX_CARD_BYTES = 4 << 20


class CardError(ValueError):
    """A card that cannot be used.

    :ivar errors: list of ``(path, message)`` tuples, sorted by path.
    :ivar hints: the card's warnings (unknown keys), shown after the errors
        because a misspelt key is often the cause of a "missing" error.
    ``str()`` gives one line per error, ``path: message``, then one
    ``(note) path: message`` line per hint.
    """

    def __init__(self, errors, source="card", hints=()):
        self.errors = list(errors)
        self.source = source
        self.hints = list(hints)
        lines = ["%s: %s" % (p, m) for p, m in self.errors]
        lines += ["(note) %s: %s" % (p, m) for p, m in self.hints]
        super().__init__("%s is not a valid launch card:\n  %s" % (source, "\n  ".join(lines)))


def load_card(text, source="card"):
    """Parse, validate and model a launch card.

    :param text: the card's JSON text (str or UTF-8 bytes).
    :param source: how to name the card in messages (a path or URL).
    :returns: the card model, a dict:

        - ``schema`` (str), ``source`` (str)
        - ``model``: ``repo``, ``revision`` (40 hex), ``slug`` (for unit
          names), ``weight_gib`` (GiB = 2**30 bytes, float or None),
          ``weight_bytes`` (int or None), ``gated`` (bool or None)
        - ``checkpoints``: name -> ``{format, resident_gib, subdir}``
        - ``hardware``: ``min_gpus``, ``min_disk_gib``, ``min_disk_bytes``,
          ``gpu_models`` (lower-case ids), ``gpu_arch``
        - ``recipes``: list of recipe models (see :func:`recipe.describe`),
          each with a unique ``name`` and ``hub_pins`` (the revision options
          the planner appends, :func:`recipe.hub_pins`)
        - ``warnings``: list of ``"path: message"`` strings (unknown keys)

    :raises CardError: the text is not JSON, breaks the schema, or a recipe's
        argv cannot be understood. Nothing is partially returned.
    """
    if len(text) > MAX_CARD_BYTES:
        raise CardError([("$", "%d bytes, over the %d a card may hold (%d MiB); it was not parsed" % (
            len(text), MAX_CARD_BYTES, MAX_CARD_BYTES >> 20))], source)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CardError([("$", "not UTF-8 text (%s)" % exc)], source)
    doc, report = card_validate.parse_card_text(text)
    if report.errors:
        # Unknown keys are only warnings, but next to an error they are often
        # the typo behind it (hf.revison beside "hf.revision is missing").
        raise CardError([(e.path, e.message) for e in report.errors], source,
                        [(w.path, w.message) for w in report.warnings])
    recipes = []
    errors = []
    hf = doc["hf"]
    for i, env in enumerate(doc["envs"]):
        try:
            recipe = describe(env, i)
            recipe["hub_pins"] = hub_pins(recipe, hf["repo"], hf["revision"])
            recipes.append(recipe)
        except RecipeError as exc:
            errors.append((exc.path, exc.message))
    if errors:
        raise CardError(errors, source, [(w.path, w.message) for w in report.warnings])
    name_recipes(recipes)
    hw = doc.get("hardware") or {}
    return {
        "schema": doc["schema"],
        "source": source,
        "model": {
            "repo": hf["repo"],
            "revision": hf["revision"],
            "slug": slug(hf["repo"].split("/")[-1]),
            "weight_gib": hf.get("weight_gib"),
            "weight_bytes": _bytes(hf.get("weight_gib")),
            "gated": hf.get("gated"),
        },
        "checkpoints": {
            c["name"]: {
                "format": c.get("format"),
                "resident_gib": c.get("resident_gib"),
                "subdir": c.get("subdir"),
            }
            for c in (doc.get("checkpoints") or [])
        },
        "hardware": {
            "min_gpus": hw.get("min_gpus"),
            "min_disk_gib": hw.get("min_disk_gib"),
            "min_disk_bytes": _bytes(hw.get("min_disk_gib")),
            "gpu_models": [m.lower() for m in (hw.get("gpu_models") or [])],
            "gpu_arch": list(hw.get("gpu_arch") or []),
        },
        "recipes": recipes,
        "warnings": ["%s: %s" % (w.path, w.message) for w in report.warnings],
    }


def _bytes(gib):
    return None if gib is None else int(round(gib * GIB))
