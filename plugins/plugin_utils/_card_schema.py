# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The strict schema of a launch card (``onefrontier.launch-card/v1``) and its validator.

Pure Python, no Ansible import. ``jsonschema`` (>= 4.18, draft 2020-12) is a
controller-side requirement; its import is guarded so that this file imports
without it (ansible-test sanity), and :func:`validate_card` raises
:class:`RuntimeError` naming the library when it is missing.

Public API
----------
``CARD_SCHEMA``
    The JSON Schema (draft 2020-12) of a card, as a dict.
``validate_card(doc) -> ValidationReport``
    Schema errors, semantic errors and unknown-key warnings of a decoded card.
``parse_card_text(text) -> (doc, ValidationReport)``
    Decode JSON text (duplicate keys, bad JSON, non-object top level become
    errors at ``$``-rooted paths), then validate it.
``format_path(parts) -> str``
    Render a JSON path (``["envs", 4, "argv", 7]`` -> ``envs[4].argv[7]``).
``ValidationReport`` / ``Issue``
    The report: ``.errors`` and ``.warnings``, lists of ``Issue(path,
    message)`` (a namedtuple), sorted by path; ``.ok``, ``.as_dict()``,
    ``.format()``.
``show(value) -> str``
    The short, escaped rendering of a card value used in messages.

Where the rules come from (``docs/card-schema.md`` has them field by field):

* Field shapes: the example card ``cards/glm-5.3-flash.json`` and the field
  notes section 1 (nulls are common and mean "not known", never an error).
* Required keys: only what a deploy needs: ``schema``, ``hf.repo``,
  ``hf.revision`` (offline serving pins ``--revision SHA``), ``envs`` with
  ``engine``, ``image`` and ``argv`` per recipe, and ``hardware`` with
  ``min_gpus`` and ``min_disk_gib`` present (null allowed: preflight skips the
  check). Everything else is optional; unknown keys are warnings.
* Control characters (U+0000-U+001F and U+007F) are refused in every value
  that ends up in a systemd unit or on a command line: argv elements, env
  names and values, image, hf.repo, hf.revision, checkpoint names, subdirs
  and source repos (systemd.syntax(7): a newline in a value ends the
  directive, so a card value could otherwise add ``ExecStartPre=``). The
  schema says it with the pattern ``SAFE_STRING_PATTERN``
  (``^[^\\u0000-\\u001f\\u007f]*$(?!\\n)``); the lookahead is there because
  Python's ``re`` lets ``$`` match before a trailing newline, so ``^...$``
  patterns alone would accept ``"main\\n"``-style values. (It is inlined in
  every place rather than a ``$ref``: argv lists are long and jsonschema pays
  for each indirection.) ``command`` and ``notes`` are free text for
  humans (the example card's ``command`` holds ``\\`` + newline) and are
  never executed.
* Other characters that matter to systemd or a shell (``%``, ``$``, quotes,
  backslash, ``;``, spaces) are legal in argv and env values: escaping them is
  the unit renderer's job. Only ``image`` and env names are restricted to
  a grammar that has no room for them.
"""

from __future__ import annotations

import collections
import json
import math
import re

try:
    import jsonschema
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match
except ImportError:  # pragma: no cover - exercised only without the library
    jsonschema = None
    Draft202012Validator = None
    best_match = None


SCHEMA_ID = "onefrontier.launch-card/v1"
ENGINES = ("vllm", "sglang")

# ---------------------------------------------------------------------------
# Patterns (each named for messages in _PATTERN_EXPECT)
# ---------------------------------------------------------------------------

#: A string without control characters (C0 range and DEL). ``(?!\\n)`` after
#: ``$`` closes the gap of Python's ``re``, whose ``$`` also matches before a
#: trailing newline (ECMA 262 ``$`` does not; the lookahead is a no-op there).
SAFE_STRING_PATTERN = "^[^\\u0000-\\u001f\\u007f]*$(?!\\n)"
_CONTROL_RE = re.compile("[\x00-\x1f\x7f]")

#: Hugging Face repo id ``owner/name`` (huggingface_hub ``validate_repo_id``:
#: letters, digits, ``-``, ``_``, ``.``; at most 96 characters).
HF_REPO_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$"

#: A full git commit SHA as the Hub reports it: 40 lowercase hex digits.
REVISION_PATTERN = "^[0-9a-f]{40}$"

#: POSIX-portable environment variable name (also what systemd accepts).
ENV_NAME_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$"

# OCI image reference, after github.com/distribution/reference (grammar in
# reference.go): [domain[:port]/]path[:tag][@sha256:<64 hex>]. The first
# component is a registry only when it holds a "." or a ":port", or is
# "localhost" (docker's own rule), so "UPPER/Case" is a path and is refused.
_DOMAIN_COMPONENT = "(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])"
_DOMAIN = (
    "(?:localhost(?::[0-9]+)?"
    "|" + _DOMAIN_COMPONENT + "(?:\\." + _DOMAIN_COMPONENT + ")+(?::[0-9]+)?"
    "|" + _DOMAIN_COMPONENT + ":[0-9]+)"
)
_PATH_COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG = "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
IMAGE_PATTERN = (
    "^(?:" + _DOMAIN + "/)?"
    + _PATH_COMPONENT + "(?:/" + _PATH_COMPONENT + ")*"
    + "(?::" + _TAG + ")?"
    + "(?:@sha256:[0-9a-f]{64})?$"
)

_PATTERN_EXPECT = {
    HF_REPO_PATTERN: "a Hugging Face repo id 'owner/name' (letters, digits, '-', '_', '.')",
    REVISION_PATTERN: "a 40-character lowercase hex commit SHA (not a branch or tag name)",
    ENV_NAME_PATTERN: "an environment variable name matching ^[A-Za-z_][A-Za-z0-9_]*$",
    IMAGE_PATTERN: (
        "an OCI image reference [registry[:port]/]lowercase/path[:tag][@sha256:<64 hex>]"
    ),
}

# ---------------------------------------------------------------------------
# The schema
# ---------------------------------------------------------------------------

_NO_CONTROL = {"pattern": SAFE_STRING_PATTERN}


def _safe(**extra):
    """A string without control characters (inlined, not a $ref: argv lists are long)."""
    d = {"type": "string", "pattern": SAFE_STRING_PATTERN}
    d.update(extra)
    return d


def _nullable(type_name, **extra):
    d = {"type": [type_name, "null"]}
    d.update(extra)
    return d


#: The largest size a card may state, in GiB: 1 PiB (2^20 GiB). No model's
#: weights and no host's disk come near it; a larger value is a typo or an
#: attack (``1e300`` GiB overflows to infinity once converted to bytes).
MAX_GIB = 1 << 20
#: The largest count a card may state: 2^53 - 1, the largest integer a JSON
#: number holds exactly in every implementation (RFC 7493, I-JSON, section
#: 2.2). ``1e300`` is an integer to JSON Schema but not a usable count.
MAX_COUNT = (1 << 53) - 1
#: The largest parameter count, in billions (``hf.params_b``): 10^6 B.
MAX_PARAMS_B = 1000000

#: Linux refuses to exec a command line with an argument or an environment
#: string longer than MAX_ARG_STRLEN = 32 pages = 131072 bytes, counting the
#: terminating NUL (include/uapi/linux/binfmts.h; fs/exec.c copy_strings()
#: fails with E2BIG). Measured in UTF-8 bytes, not characters.
MAX_ARG_STRLEN = 131072
#: The most bytes (UTF-8, one NUL per string) that a recipe's argv and env
#: strings may hold together: 256 KiB. Two documented limits sit above it:
#: systemd reads a unit file's logical line (``ExecStart=`` with its
#: continuation lines joined) of at most LONG_LINE_MAX = 1 MiB
#: (src/basic/fileio.h; src/shared/conf-parser.c refuses a longer one with
#: "Line too long" / "Continuation line too long", and the unit does not
#: load), and Linux's execve() takes at most a quarter of the stack limit,
#: 2 MiB with the default 8 MiB RLIMIT_STACK, for argv and environment
#: together (fs/exec.c, bprm_stack_limits()). Escaping a word for
#: ``ExecStart=`` at most doubles it (``%%``, ``$$``, ``\\``, ``\"``) plus
#: quotes, so 256 KiB of card argv stays under 1 MiB with room for the
#: runtime's own flags (container devices, mounts, environment).
MAX_COMMAND_BYTES = 256 * 1024

_SIZE = {"type": ["number", "null"], "minimum": 0, "maximum": MAX_GIB,
         "description": "A size in GiB (2^30 bytes), at most 2^20 (1 PiB); null = not known."}
_COUNT = {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_COUNT}
_TEXT = {"type": ["string", "null"]}
_STRINGS = {"type": ["array", "null"], "items": {"type": "string"}}

CARD_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://onefrontier.ai/schemas/launch-card/v1.json",
    "title": "onefrontier launch card v1",
    "description": (
        "One model at one pinned revision, with the serving recipes (envs) "
        "published for it and the hardware it needs. Null means 'not known'. "
        "Unknown keys are allowed (validate_card warns about them)."
    ),
    "type": "object",
    "required": ["schema", "hf", "envs", "hardware"],
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "hf": {"$ref": "#/$defs/hf"},
        "checkpoints": {
            "type": ["array", "null"],
            "items": {"$ref": "#/$defs/checkpoint"},
        },
        "envs": {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": "#/$defs/env"},
        },
        "hardware": {"$ref": "#/$defs/hardware"},
        "performance": _TEXT,
        "evidence": {"type": ["array", "null"], "items": {"$ref": "#/$defs/source"}},
        "gaps": {"type": ["array", "null"], "items": {"$ref": "#/$defs/gap"}},
        "captured_at": _TEXT,
        "captured_by": _TEXT,
    },
    "$defs": {
        "hf_repo": {
            "type": "string",
            "maxLength": 96,
            "pattern": HF_REPO_PATTERN,
            "allOf": [_NO_CONTROL],
        },
        "hf": {
            "type": "object",
            "required": ["repo", "revision"],
            "properties": {
                "repo": {"$ref": "#/$defs/hf_repo"},
                "revision": {
                    "type": "string",
                    "pattern": REVISION_PATTERN,
                    "allOf": [_NO_CONTROL],
                },
                "license": _TEXT,
                "gated": _nullable("boolean"),
                "params_b": _nullable("number", minimum=0, maximum=MAX_PARAMS_B),
                "modality": _STRINGS,
                "weight_gib": _SIZE,
                "last_modified": _TEXT,
                "downloads": _COUNT,
            },
        },
        "checkpoint": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": _safe(minLength=1),
                "format": _TEXT,
                "subdir": {"type": ["string", "null"], "allOf": [_NO_CONTROL]},
                "source_repo": {
                    "anyOf": [{"$ref": "#/$defs/hf_repo"}, {"type": "null"}],
                },
                "resident_gib": _SIZE,
                "host_gib": _SIZE,
                "gated": _nullable("boolean"),
                "notes": _TEXT,
            },
        },
        "env": {
            "type": "object",
            "required": ["engine", "image", "argv"],
            "properties": {
                "engine": {"enum": list(ENGINES)},
                "checkpoint": {"type": ["string", "null"], "allOf": [_NO_CONTROL]},
                "engine_version": _TEXT,
                "image": {
                    "type": "string",
                    "maxLength": 512,
                    "pattern": IMAGE_PATTERN,
                    "allOf": [_NO_CONTROL],
                },
                "argv": {
                    "type": "array",
                    "minItems": 1,
                    "prefixItems": [_safe(minLength=1)],
                    "items": _safe(),
                },
                "command": _TEXT,
                "env": {
                    "type": "object",
                    "propertyNames": {"pattern": ENV_NAME_PATTERN, "allOf": [_NO_CONTROL]},
                    "additionalProperties": _safe(),
                },
                "validated_hardware": _STRINGS,
                "notes": _TEXT,
                "source": {
                    "anyOf": [{"$ref": "#/$defs/source"}, {"type": "null"}],
                },
            },
        },
        "source": {
            "type": "object",
            "properties": {
                "kind": _TEXT,
                "url": _TEXT,
                "fetched_at": _TEXT,
            },
        },
        "gap": {
            "type": "object",
            "properties": {"field": _TEXT, "why": _TEXT},
        },
        "hardware": {
            "type": "object",
            "required": ["min_gpus", "min_disk_gib"],
            "properties": {
                "gpu_models": _STRINGS,
                "gpu_arch": _STRINGS,
                "min_gpus": _COUNT,
                "tp_rule": _TEXT,
                "min_vram_per_gpu_gib": _SIZE,
                "min_total_vram_gib": _SIZE,
                "min_disk_gib": _SIZE,
                "min_host_ram_gib": _SIZE,
                "interconnect": _TEXT,
                "cuda_min": _TEXT,
                "driver_min": _TEXT,
                "context_tokens": _COUNT,
            },
        },
    },
}

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


# ---------------------------------------------------------------------------
# Schema errors -> issues
# ---------------------------------------------------------------------------

_VALIDATOR = []


def _validator():
    if jsonschema is None:
        raise RuntimeError(
            "launchcard.inference: validating a launch card needs the Python library "
            "'jsonschema' (>= 4.18) on the controller; install it with "
            "'pip install jsonschema'"
        )
    if not _VALIDATOR:
        _VALIDATOR.append(Draft202012Validator(CARD_SCHEMA))
    return _VALIDATOR[0]


def _issues_from_error(error):
    """Translate one jsonschema error into issues (a list, usually of one)."""
    if error.context and error.validator in ("anyOf", "oneOf"):
        return _issues_from_alternatives(error)

    parts = list(error.absolute_path)
    v = error.validator
    inst = error.instance
    expect = error.validator_value
    schema_path = list(error.absolute_schema_path)

    if "propertyNames" in schema_path:
        # propertyNames errors are reported at the object: point at the key.
        parts.append(inst)
        if v == "pattern" and expect != SAFE_STRING_PATTERN:
            return [Issue(format_path(parts), "expected %s, found %s" % (
                _PATTERN_EXPECT.get(expect, "a key matching %s" % expect), show(inst)))]

    path = format_path(parts)
    if v == "required":
        if not isinstance(inst, dict):
            return []
        return [Issue(format_path(parts + [k]), "required key %s is missing" % show(k))
                for k in expect if k not in inst]
    if v == "type" and _non_finite(inst):
        return [Issue(path, _finite_message(inst))]
    if v == "type":
        types = expect if isinstance(expect, list) else [expect]
        wanted = " or ".join(_JSON_TYPE_NAMES.get(t, t) for t in types)
        return [Issue(path, "expected %s, found %s" % (wanted, _found(inst)))]
    if v == "pattern" and expect == SAFE_STRING_PATTERN and isinstance(inst, str):
        return [Issue(path, _control_message(inst))]
    if v == "const":
        return [Issue(path, "expected %s, found %s" % (show(expect), _found(inst)))]
    if v == "enum":
        return [Issue(path, "expected one of %s, found %s" % (
            ", ".join(show(e) for e in expect), _found(inst)))]
    if v == "pattern":
        return [Issue(path, "expected %s, found %s" % (
            _PATTERN_EXPECT.get(expect, "a string matching %s" % expect), show(inst)))]
    if v == "minLength":
        if expect == 1:
            return [Issue(path, "expected a non-empty string, found ''")]
        return [Issue(path, "expected a string of at least %d characters, found %d: %s" % (
            expect, len(inst), show(inst)))]
    if v == "maxLength":
        return [Issue(path, "expected a string of at most %d characters, found %d: %s" % (
            expect, len(inst), show(inst)))]
    if v == "minItems":
        if expect == 1:
            return [Issue(path, "expected a non-empty array, found an empty array")]
        return [Issue(path, "expected at least %d items, found %d" % (expect, len(inst)))]
    if v in ("minimum", "maximum") and _non_finite(inst):
        return [Issue(path, _finite_message(inst))]
    if v == "maximum":
        return [Issue(path, "expected a number <= %s (a larger value is not a usable size or count), "
                      "found %s" % (expect, show(inst)))]
    if v == "minimum":
        return [Issue(path, "expected a number >= %s (negative sizes/counts are not allowed), "
                      "found %s" % (expect, show(inst)))]
    return [Issue(path, "%s (found %s)" % (_escape(error.message[:200]), _found(inst)))]


def _issues_from_alternatives(error):
    """anyOf/oneOf ("X or null"): report the branch the value was meant for.

    A branch whose failure is a type mismatch of the value itself was not
    meant for it. When exactly one branch remains, all its errors are
    reported at their own (deeper) paths; when none remains, one "expected
    T1 or T2" type error is reported at the value; otherwise jsonschema's
    ``best_match`` relevance heuristic picks one.
    """
    branches = collections.OrderedDict()
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    wanted = []
    meant = []
    for errs in branches.values():
        mismatch = [e for e in errs if e.validator == "type" and not e.relative_path]
        if mismatch:
            for e in mismatch:
                types = e.validator_value if isinstance(e.validator_value, list) else [e.validator_value]
                wanted.extend(t for t in types if t not in wanted)
        else:
            meant.append(errs)
    if len(meant) == 1:
        issues = []
        for sub in meant[0]:
            issues.extend(_issues_from_error(sub))
        return issues
    if not meant:
        return [Issue(format_path(error.absolute_path), "expected %s, found %s" % (
            " or ".join(_JSON_TYPE_NAMES.get(t, t) for t in wanted), _found(error.instance)))]
    return _issues_from_error(best_match(error.context))


# ---------------------------------------------------------------------------
# Semantic checks and unknown keys
# ---------------------------------------------------------------------------

def _non_finite(value):
    return isinstance(value, float) and not math.isfinite(value)


def _finite_message(value):
    if math.isnan(value):
        return "expected a finite number, found NaN"
    return ("expected a finite number, found %s (a number literal too large for a double, "
            "such as 1e400, reads as infinity)" % show(value))


def _non_finite_issues(value, parts, out):
    """Every infinite or NaN number anywhere in the card, at its path.

    JSON has no such values, but Python's decoder turns an overflowing
    literal (``1e400``) into ``inf``, and a caller may hand
    :func:`validate_card` a decoded ``float('nan')``, which no ``minimum`` /
    ``maximum`` keyword catches (every comparison with NaN is false).
    """
    stack = [(value, parts)]
    while stack:
        value, parts = stack.pop()
        if _non_finite(value):
            out.append(Issue(format_path(parts), _finite_message(value)))
        elif isinstance(value, dict):
            stack.extend((v, parts + [k]) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, parts + [i]) for i, v in enumerate(value))


def _utf8_len(text):
    return len(text.encode("utf-8", "surrogatepass"))


def command_size_issues(envs):
    """Argv and env strings the kernel or systemd would refuse, as ``(path, message)`` pairs: the card's own
    rule, also applied to an argv built after the card (site overrides, ``plugin_utils/_overrides.py``)."""
    out = []
    _command_size_issues(envs, out)
    return [(i.path, i.message) for i in out]


def _command_size_issues(envs, out):
    """Argv and env strings the kernel or systemd would refuse (see MAX_ARG_STRLEN)."""
    if not isinstance(envs, list):
        return
    for i, env in enumerate(envs):
        if not isinstance(env, dict):
            continue
        total = 0
        argv = env.get("argv")
        if isinstance(argv, list):
            for j, word in enumerate(argv):
                if not isinstance(word, str):
                    continue
                size = _utf8_len(word) + 1
                total += size
                if size > MAX_ARG_STRLEN:
                    out.append(Issue(format_path(["envs", i, "argv", j]), (
                        "expected an argument of at most %d bytes, found %d bytes (UTF-8, with the "
                        "terminating NUL): Linux refuses to start a command with an argument over "
                        "MAX_ARG_STRLEN (%d bytes)" % (MAX_ARG_STRLEN - 1, size - 1, MAX_ARG_STRLEN))))
        argv_total = total
        variables = env.get("env")
        if isinstance(variables, dict):
            for name, val in variables.items():
                if not isinstance(name, str) or not isinstance(val, str):
                    continue
                size = _utf8_len(name) + 1 + _utf8_len(val) + 1
                total += size
                if size > MAX_ARG_STRLEN:
                    out.append(Issue(format_path(["envs", i, "env", name]), (
                        "expected NAME=VALUE of at most %d bytes, found %d bytes: Linux refuses to "
                        "start a command with an environment string over MAX_ARG_STRLEN (%d bytes)" % (
                            MAX_ARG_STRLEN - 1, size - 1, MAX_ARG_STRLEN))))
        if total > MAX_COMMAND_BYTES:
            out.append(Issue(format_path(["envs", i, "argv"]), (
                "expected at most %d bytes of argv and env together, found %d (argv %d, env %d; "
                "UTF-8 with one NUL per string): the escaped ExecStart= line of a larger recipe can "
                "pass systemd's 1 MiB line limit, and the unit would not load" % (
                    MAX_COMMAND_BYTES, total, argv_total, total - argv_total))))


def _semantic_issues(doc):
    """Rules JSON Schema can't say: finite numbers, command sizes, checkpoint
    references and uniqueness."""
    issues = []
    _non_finite_issues(doc, [], issues)
    _command_size_issues(doc.get("envs"), issues)
    checkpoints = doc.get("checkpoints")
    names = {}
    if isinstance(checkpoints, list):
        for i, cp in enumerate(checkpoints):
            if not isinstance(cp, dict) or not isinstance(cp.get("name"), str):
                continue
            name = cp["name"]
            if name in names:
                issues.append(Issue(
                    format_path(["checkpoints", i, "name"]),
                    "expected unique checkpoint names, found duplicate %s (first at %s)" % (
                        show(name), format_path(["checkpoints", names[name], "name"]))))
            else:
                names[name] = i
    envs = doc.get("envs")
    if names and isinstance(envs, list):
        known = ", ".join(show(n) for n in sorted(names))
        for i, env in enumerate(envs):
            if not isinstance(env, dict):
                continue
            ref = env.get("checkpoint")
            if isinstance(ref, str) and ref not in names:
                issues.append(Issue(
                    format_path(["envs", i, "checkpoint"]),
                    "expected the name of a checkpoint in checkpoints[].name (%s), "
                    "found unknown checkpoint %s" % (known, show(ref))))
    return issues


def _resolve(schema):
    while isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        name = ref.rsplit("/", 1)[-1]
        merged = dict(CARD_SCHEMA["$defs"][name])
        merged.update((k, v) for k, v in schema.items() if k != "$ref")
        schema = merged
    return schema


def _unknown_keys(schema, value, parts, out):
    """Warn about keys an object schema does not declare (allowed, but likely typos)."""
    if not isinstance(value, (dict, list)):
        return
    schema = _resolve(schema)
    if not isinstance(schema, dict):
        return
    for alt in schema.get("anyOf", ()):
        alt = _resolve(alt)
        if "properties" in alt and isinstance(value, dict):
            schema = alt
            break
    if isinstance(value, dict):
        props = schema.get("properties")
        if props is not None:
            for key in value:
                if key in props:
                    _unknown_keys(props[key], value[key], parts + [key], out)
                else:
                    out.append(Issue(
                        format_path(parts + [key]),
                        "unknown key %s (not part of %s); ignored" % (show(key), SCHEMA_ID)))
    elif isinstance(value, list):
        prefix = schema.get("prefixItems", [])
        items = schema.get("items")
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else items
            if sub is not None:
                _unknown_keys(sub, item, parts + [i], out)


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------

def validate_card(doc):
    """Validate a decoded launch card.

    :param doc: the card as decoded from JSON (``dict`` expected; anything
        else yields one error at ``$``).
    :returns: :class:`ValidationReport`. ``errors`` holds every violation of
        :data:`CARD_SCHEMA` (translated into "expected ..., found ..."
        messages at the failing value's path; a missing required key is
        reported at the key's own path, e.g. ``hf.revision``) plus the
        semantic rules (unknown ``envs[i].checkpoint``, duplicate checkpoint
        names). ``warnings`` holds keys the schema does not declare.
    :raises RuntimeError: when the ``jsonschema`` library is not installed.
    """
    validator = _validator()
    errors = []
    for error in validator.iter_errors(doc):
        errors.extend(_issues_from_error(error))
    warnings = []
    if isinstance(doc, dict):
        errors.extend(_semantic_issues(doc))
        _unknown_keys(CARD_SCHEMA, doc, [], warnings)
    return ValidationReport(errors, warnings)


class _CardJSONError(ValueError):
    pass


def _reject_constant(name):
    raise _CardJSONError("invalid JSON: %s is not a JSON value (JSON has no NaN/Infinity)" % name)


def parse_card_text(text):
    """Decode a card from JSON text and validate it.

    :param text: the file's content, ``str`` (``bytes`` are decoded as UTF-8).
    :returns: ``(doc, report)``. ``doc`` is the decoded value, or ``None``
        when the text is not JSON. Decoding problems are errors at ``$``
        (message with line and column), a top level that is not an object
        is an error at ``$``, and every duplicate key is an error at that
        key's path (the last value wins in ``doc``, as in ``json.loads``).
        Otherwise the report also holds :func:`validate_card`'s findings.
    :raises RuntimeError: when the text is JSON and ``jsonschema`` is missing.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, ValidationReport([Issue("$", "invalid UTF-8 at byte %d: %s" % (
                exc.start, _escape(exc.reason)))])
    if text.startswith("\ufeff"):
        text = text[1:]

    kept = []       # every decoded object with its duplicate keys (kept alive: ids stay unique)
    dup_ids = {}

    def hook(pairs):
        obj = {}
        dups = []
        for key, val in pairs:
            if key in obj:
                dups.append(key)
            obj[key] = val
        if dups:
            kept.append(obj)
            dup_ids[id(obj)] = dups
        return obj

    try:
        doc = json.loads(text, object_pairs_hook=hook, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return None, ValidationReport([Issue("$", "invalid JSON at line %d column %d: %s" % (
            exc.lineno, exc.colno, _escape(exc.msg)))])
    except _CardJSONError as exc:
        return None, ValidationReport([Issue("$", str(exc))])
    except RecursionError:
        return None, ValidationReport([Issue("$", "invalid JSON: nested too deeply")])

    if not isinstance(doc, dict):
        return doc, ValidationReport([Issue("$", "expected a JSON object at the top level, "
                                                 "found %s" % _found(doc))])
    errors = []
    if dup_ids:
        try:
            _find_duplicates(doc, [], dup_ids, errors)
        except RecursionError:
            errors.append(Issue("$", "duplicate keys found, in an object nested too deeply to name"))
    report = validate_card(doc)
    return doc, ValidationReport(errors + report.errors, report.warnings)


def _find_duplicates(value, parts, dup_ids, out):
    if isinstance(value, dict):
        for key in dup_ids.get(id(value), ()):
            out.append(Issue(format_path(parts + [key]),
                             "duplicate key %s in one object (the last value is used)" % show(key)))
        for key, val in value.items():
            _find_duplicates(val, parts + [key], dup_ids, out)
    elif isinstance(value, list):
        for i, val in enumerate(value):
            _find_duplicates(val, parts + [i], dup_ids, out)
