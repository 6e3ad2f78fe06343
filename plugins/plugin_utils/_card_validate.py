# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation of a launch card against its schema (``_card_schema.CARD_SCHEMA``) and the rules a schema cannot say.

Pure Python, no Ansible import. ``jsonschema`` (>= 4.18, draft 2020-12) is a
controller-side requirement; its import is guarded so that this file imports
without it (ansible-test sanity), and :func:`validate_card` raises
:class:`RuntimeError` naming the library when it is missing.

Public API
----------
``validate_card(doc) -> ValidationReport``
    Schema errors, semantic errors and unknown-key warnings of a decoded card
    (the report: ``_card_issues.py``).
``parse_card_text(text) -> (doc, ValidationReport)``
    Decode JSON text (duplicate keys, bad JSON, non-object top level become
    errors at ``$``-rooted paths), then validate it.
``command_size_issues(envs) -> [Issue]``
    Argv and env strings the kernel or systemd would refuse.
"""

from __future__ import annotations

import collections
import json
import math

try:
    import jsonschema
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match
except ImportError:  # pragma: no cover - exercised only without the library
    jsonschema = None
    Draft202012Validator = None
    best_match = None

from ansible_collections.launchcard.inference.plugins.plugin_utils import _env_policy as env_policy
from ansible_collections.launchcard.inference.plugins.plugin_utils._card_issues import (
    Issue,
    ValidationReport,
    _JSON_TYPE_NAMES,
    _control_message,
    _escape,
    _found,
    format_path,
    near,
    show,
)
from ansible_collections.launchcard.inference.plugins.plugin_utils._card_schema import (
    _PATTERN_EXPECT,
    CARD_SCHEMA,
    MAX_ARG_STRLEN,
    MAX_COMMAND_BYTES,
    SAFE_STRING_PATTERN,
    SCHEMA_ID,
)


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
    """Rules JSON Schema can't say: finite numbers, command sizes, the environment's names and values
    (:mod:`._env_policy`), checkpoint references and uniqueness."""
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
    for i, env in enumerate(envs if isinstance(envs, list) else []):
        if isinstance(env, dict):
            # names that change what a process loads or where it connects; values a unit cannot carry (_env_policy)
            issues.extend(Issue(path, message) for path, message in env_policy.env_issues(
                env.get("env"), lambda name, i=i: format_path(["envs", i, "env", name])))
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
                    # a key one slip from a declared one, or one that starts with it (enviroment), is most likely it
                    guess = near(key, [k for k in props if k not in value])
                    out.append(Issue(
                        format_path(parts + [key]),
                        "unknown key %s (not part of %s%s); ignored" % (
                            show(key), SCHEMA_ID, "; did you mean %s?" % show(guess) if guess else "")))
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
