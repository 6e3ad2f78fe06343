# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What card validation reports, and how it names paths and shows card values.

Pure Python, no Ansible import.

Public API
----------
``ValidationReport`` / ``Issue``
    The report: ``.errors`` and ``.warnings``, lists of ``Issue(path,
    message)`` (a namedtuple), sorted by path; ``.ok``, ``.as_dict()``,
    ``.format()``.
``format_path(parts) -> str``
    Render a JSON path (``["envs", 4, "argv", 7]`` -> ``envs[4].argv[7]``).
``show(value) -> str``
    The short, escaped rendering of a card value used in messages.
``near(name, candidates) -> str | None``
    The candidate a mistyped name most likely meant (a card key, an inventory variable).
"""

from __future__ import annotations

import collections
import difflib
import json
import re

from ansible_collections.launchcard.inference.plugins.plugin_utils._card_schema import _CONTROL_RE


def near(name, candidates):
    """The candidate ``name`` most likely meant: one slip from it, or one it starts with (enviroment); else None."""
    name = str(name)
    found = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.75) or [
        k for k in candidates if len(k) >= 3 and name.startswith(k)][:1]
    return found[0] if found else None


def no_recipe(name, names):
    """``no recipe NAME in the card[; did you mean X?]; it has A, B, ...``: a recipe name that names none."""
    guess = near(name, names) if isinstance(name, str) else None
    return "no recipe %s in the card%s; it has %s" % (
        show(name), "; did you mean %r?" % guess if guess else "", ", ".join(sorted(names)))


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------

#: One finding: ``path`` as :func:`format_path` renders it, ``message`` one
#: line of printable text (control characters of the card are escaped).
Issue = collections.namedtuple("Issue", ["path", "message"])


class ValidationReport:
    """What :func:`validate_card` / :func:`parse_card_text` found.

    :ivar errors: list of :data:`Issue`, sorted by path (array indexes
        numerically), then message; no duplicates.
    :ivar warnings: list of :data:`Issue` (unknown keys), same order.
    """

    def __init__(self, errors=(), warnings=()):
        self.errors = _sorted_unique(errors)
        self.warnings = _sorted_unique(warnings)

    @property
    def ok(self):
        """True when there is no error (warnings do not count)."""
        return not self.errors

    def as_dict(self):
        """``{"errors": [{"path", "message"}...], "warnings": [...]}`` (JSON-ready)."""
        return {
            "errors": [dict(i._asdict()) for i in self.errors],
            "warnings": [dict(i._asdict()) for i in self.warnings],
        }

    def format(self):
        """One line per item, ``error: PATH: MESSAGE`` / ``warning: ...``."""
        return "\n".join(
            ["error: %s: %s" % i for i in self.errors]
            + ["warning: %s: %s" % i for i in self.warnings]
        )

    def __repr__(self):
        return "ValidationReport(errors=%r, warnings=%r)" % (self.errors, self.warnings)


def _path_sort_key(path):
    # Sort "envs[10]" after "envs[2]": split into key/index tokens.
    key = []
    for tok in re.findall(r'\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]|([^.\[\]]+)', path):
        if tok[0]:
            key.append((0, int(tok[0]), ""))
        else:
            key.append((1, 0, tok[1] or tok[2]))
    return key


def _sorted_unique(items):
    seen = set()
    out = []
    for item in items:
        item = Issue(*item)
        if item not in seen:
            seen.add(item)
            out.append(item)
    out.sort(key=lambda i: (_path_sort_key(i.path), i.path, i.message))
    return out


# ---------------------------------------------------------------------------
# Paths and safe echoing
# ---------------------------------------------------------------------------

_BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")


def format_path(parts):
    """Render a JSON path from its parts, the way every report item names it.

    :param parts: iterable of ``str`` (object keys) and ``int`` (array
        indexes), outermost first, e.g. ``["envs", 4, "argv", 7]``.
    :returns: ``"$"`` for the empty path (the document itself); otherwise
        keys joined with ``.`` and indexes as ``[N]``: ``envs[4].argv[7]``,
        ``hf.revision``, ``envs[2].env.BAD-NAME``. A key that is not made of
        letters, digits, ``_`` and ``-`` is written as a JSON string in
        brackets, with control and non-ASCII characters escaped, so a path
        never holds a raw newline: ``envs[0].env["A=B"]``, ``x["a.b"]``,
        ``env["BAD\\nNAME"]``.
    """
    out = []
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            out.append("[%d]" % part)
            continue
        part = part if isinstance(part, str) else str(part)
        if _BARE_KEY_RE.fullmatch(part):
            out.append(("." if out else "") + part)
        else:
            out.append("[%s]" % json.dumps(part, ensure_ascii=True))
    return "".join(out) or "$"


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", "'": "\\'"}
_MAX_SHOWN = 60


def _escape(text):
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or 0x7f <= ord(ch) <= 0x9f:
            out.append("\\x%02x" % ord(ch))
        elif ch in "\u2028\u2029\ufeff" or 0xd800 <= ord(ch) <= 0xdfff:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


def show(value):
    """A short, single-line, escaped rendering of a card value for messages.

    Strings are quoted and cut after 60 characters (``'abc...' (123 chars)``);
    control characters, backslash and quote are escaped (``\\n``, ``\\x00``).
    Other values are rendered as compact JSON, cut the same way.
    """
    if isinstance(value, str):
        if len(value) > _MAX_SHOWN:
            return "'%s...' (%d chars)" % (_escape(value[:_MAX_SHOWN]), len(value))
        return "'%s'" % _escape(value)
    try:
        text = json.dumps(value, ensure_ascii=True, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = _escape(repr(value))
    if len(text) > _MAX_SHOWN:
        text = text[:_MAX_SHOWN] + "..."
    return text


_JSON_TYPE_NAMES = {
    "object": "an object", "array": "an array", "string": "a string",
    "number": "a number", "integer": "an integer", "boolean": "a boolean",
    "null": "null",
}


def _json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def _found(value):
    """``found`` phrase: type and a short rendering of the value."""
    kind = _json_type(value)
    if kind == "null":
        return "null"
    if kind == "object":
        return "an object with %d key(s)" % len(value)
    if kind == "array":
        return "an array of %d item(s)" % len(value) if value else "an empty array"
    return "%s %s" % (kind, show(value))


def _control_message(value):
    m = _CONTROL_RE.search(value)
    if m is None:  # pragma: no cover - the pattern fails only on a control character
        return "expected no control characters, found %s" % show(value)
    ch = m.group(0)
    return "expected no control characters (U+0000-U+001F, U+007F), found %s at offset %d in %s" % (
        "U+%04X (%s)" % (ord(ch), _escape(ch)), m.start(), show(value))
