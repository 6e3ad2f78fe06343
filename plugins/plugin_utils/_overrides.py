# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Site overrides of a card's argv (``launchcard_argv_overrides``).

Pure Python, no Ansible import. A site sometimes has to change a recipe's command line: the engine
release it pins spells a flag differently from the one the card was written for, or the hosts need a
smaller context. The variable maps a recipe name (as ``launchcard_recipes`` names it) to::

    {remove: [FLAG, ...], set: {FLAG: VALUE | [VALUE, ...] | true}, env: {NAME: VALUE | null}}

``remove`` drops every occurrence of a flag with its values; ``set`` replaces a flag's values where the
card writes it (at its first occurrence, in the card's spelling and form; later occurrences dropped) or
appends ``FLAG VALUE...`` to the argv; ``true`` is a flag without value, a list several values (an
``nargs`` option). Removes apply first, then sets, in the order written.

How a flag is matched, the way the planner reads the card (one reader, ``_recipe.argv_reader``):
``--flag value`` and ``--flag=value`` alike; vLLM's ``_`` for ``-`` in long names; the spellings of one
option the dialect knows (``ALIASES``: ``-tp`` is ``--tensor-parallel-size``); only tokens the engine's
own parser reads (after ``vllm serve`` or ``python -m MODULE``). Abbreviations are not resolved (whether
``--tokenizer`` is an option or a prefix of ``--tokenizer-mode`` depends on the engine release): the
effective argv goes through the card's own checks (``_recipe.describe``), which refuse an abbreviation of
any option the planner reads, so the planner and the engine never read an override differently. A removed
flag that the argv does not hold is an error (a typo, or a card that changed), naming the card's spelling
when the card abbreviates it.
Values are strings or numbers (written as strings), without control characters and not readable as an
option; the effective argv reaches the unit through the same escaping as the card's (``_units``), so no
value adds a systemd directive or a shell word. An override may change how a recipe runs, not what it
is: one that changes the recipe's role (its name) is refused.

``env`` sets a variable of the recipe's environment (``null`` removes one the card sets; a name the card
does not set is then an error). Names follow the card's grammar (``ENV_NAME_PATTERN``), values are strings
or numbers without control characters, as the card's, under the card's rules of :mod:`._env_policy` (no name that
changes what a process loads or where it connects). Secrets have their own route (``launchcard_hf_token``,
written to the secrets file, never into a unit), so an override cannot name one.
"""

from __future__ import annotations

import json
import math
import re

from ansible_collections.launchcard.inference.plugins.plugin_utils import _card_issues as card_issues
from ansible_collections.launchcard.inference.plugins.plugin_utils import _card_schema as card_schema
from ansible_collections.launchcard.inference.plugins.plugin_utils import _card_validate as card_validate
from ansible_collections.launchcard.inference.plugins.plugin_utils import _env_policy as env_policy
from ansible_collections.launchcard.inference.plugins.plugin_utils._argv import is_option
from ansible_collections.launchcard.inference.plugins.plugin_utils._recipe import (
    ALIASES,
    METRICS_FLAGS,
    RecipeError,
    argv_reader,
    current_name,
    describe,
    hub_pins,
    parser_start,
)

#: The inventory variable (host, group or all) the planner reads.
VARIABLE = "launchcard_argv_overrides"
#: An option as the engines' argparse reads one: ``-x``, ``-tp``, ``--long-name``, ``--a_b``, ``--a.b``.
_FLAG = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9_.-]*$")
_KEYS = ("remove", "set", "env")
_ENV_NAME = re.compile(card_schema.ENV_NAME_PATTERN)


class OverrideError(ValueError):
    """Overrides that cannot be applied; ``errors`` lists ``(where, message)``."""

    def __init__(self, errors):
        self.errors = list(errors)
        super().__init__("\n".join("%s: %s" % e for e in self.errors))


def _path(variable, name, part=None, key=None):
    """``launchcard_argv_overrides['vllm-aggregated'].set['--port']``."""
    out = "%s[%s]" % (variable, card_issues.show(name))
    if part is not None:
        out += ".%s" % part
    if key is not None:
        out += "[%s]" % (card_issues.show(key) if isinstance(key, str) else key)
    return out


def _value(raw, where, errors):
    """One value as an argv token, or None (an error is recorded)."""
    if isinstance(raw, bool) or raw is None:
        errors.append((where, "expected a string or a number, found %s" % card_issues.show(raw)))
        return None
    if isinstance(raw, int):
        return str(raw)
    if isinstance(raw, float):
        if not math.isfinite(raw):
            errors.append((where, "expected a finite number, found %r" % raw))
            return None
        return repr(raw)
    if not isinstance(raw, str):
        errors.append((where, "expected a string or a number, found %s" % card_issues.show(raw)))
        return None
    if card_schema._CONTROL_RE.search(raw):
        errors.append((where, card_issues._control_message(raw)))
        return None
    if is_option(raw):
        errors.append((where, "%s would be read as an option by the engine's parser, not as a value" %
                       card_issues.show(raw)))
        return None
    return str(raw)


def _flag(raw, where, errors):
    if not isinstance(raw, str) or not _FLAG.match(raw) or not is_option(raw):
        errors.append((where, "expected an option name such as '--max-model-len' or '-tp' (no '=', no value), "
                       "found %s" % card_issues.show(raw)))
        return None
    return str(raw)


def parse(raw, recipe_names, variable=VARIABLE):
    """Check the variable's shape against a card's recipe names.

    :param raw: the variable's value (None or ``{}``: no overrides).
    :param recipe_names: the card's recipe names.
    :returns: ``(specs, deprecations)``: ``specs`` maps a recipe name to ``{"remove": [flag, ...], "set":
        [[flag, [value, ...] or None], ...]}`` (None: a flag without value); ``deprecations`` one line per
        key that used a former role name (``vllm-monolithic``).
    :raises OverrideError: every problem, each naming the variable, the recipe and the flag.
    """
    if raw is None or raw == {}:
        return {}, []
    if not isinstance(raw, dict):
        raise OverrideError([(variable, "expected a mapping from recipe name to {remove: [FLAG, ...], set: "
                              "{FLAG: VALUE}}, found %s" % card_issues.show(raw))])
    errors, deprecations, specs = [], [], {}
    names = set(recipe_names)
    for name, body in raw.items():
        where = _path(variable, name)
        target = name
        if isinstance(name, str) and name not in names and current_name(name) in names:
            target = current_name(name)
            deprecations.append("%s names %r; the role is now called 'aggregated' (aggregated serving): write %r" % (
                variable, name, target))
        if not isinstance(name, str) or target not in names:
            errors.append((where, card_issues.no_recipe(name, names)))
            continue
        if target in specs:
            errors.append((where, "names recipe %r twice (once under its former name)" % target))
            continue
        if not isinstance(body, dict):
            errors.append((where, "expected {remove: [FLAG, ...], set: {FLAG: VALUE}}, found %s" %
                           card_issues.show(body)))
            continue
        for key in body:
            if key not in _KEYS:
                errors.append(("%s.%s" % (where, key), "unknown key; expected remove, set or env"))
        spec = {"remove": [], "set": [], "env": []}
        remove = body.get("remove")
        if remove is not None and not isinstance(remove, list):
            errors.append((_path(variable, name, "remove"), "expected a list of flags, found %s" %
                           card_issues.show(remove)))
            remove = []
        for i, flag in enumerate(remove or []):
            flag = _flag(flag, _path(variable, name, "remove", i), errors)
            if flag is not None:
                spec["remove"].append(flag)
        sets = body.get("set")
        if sets is not None and not isinstance(sets, dict):
            errors.append((_path(variable, name, "set"), "expected a mapping from flag to value, found %s" %
                           card_issues.show(sets)))
            sets = {}
        for flag, raw_value in (sets or {}).items():
            fwhere = _path(variable, name, "set", flag)
            if _flag(flag, fwhere, errors) is None:
                continue
            if flag in spec["remove"]:
                errors.append((fwhere, "the flag is also in remove; set replaces its values already"))
                continue
            if raw_value is True:
                spec["set"].append([flag, None])
                continue
            if raw_value is False or raw_value is None:
                errors.append((fwhere, "expected a value, a list of values or true (a flag without value), found "
                               "%s; to drop the flag, list it in remove" % card_issues.show(raw_value)))
                continue
            raws = raw_value if isinstance(raw_value, list) else [raw_value]
            if not raws:
                errors.append((fwhere, "expected at least one value (true: a flag without value)"))
                continue
            values = [_value(v, fwhere if len(raws) == 1 and not isinstance(raw_value, list)
                             else "%s[%d]" % (fwhere, i), errors) for i, v in enumerate(raws)]
            if None not in values:
                spec["set"].append([flag, values])
        spec["env"] = _env(body.get("env"), variable, name, errors)
        specs[target] = spec
    if errors:
        raise OverrideError(errors)
    return specs, deprecations


def _env(raw, variable, name, errors):
    """The ``env`` part as ``[[NAME, VALUE or None], ...]`` (None: remove the card's variable)."""
    if raw is None:
        return []
    if not isinstance(raw, dict):
        errors.append((_path(variable, name, "env"), "expected a mapping from variable name to a value (null: "
                       "remove the card's variable), found %s" % card_issues.show(raw)))
        return []
    out = []
    for var, value in raw.items():
        where = _path(variable, name, "env", var)
        if not isinstance(var, str) or not _ENV_NAME.match(var) or var.endswith("\n"):
            errors.append((where, "expected an environment variable name (letters, digits and '_', not starting "
                           "with a digit), found %s" % card_issues.show(var)))
            continue
        problem = env_policy.issue(var, value)
        if problem:
            errors.append((where, problem))
            continue
        if value is None:
            out.append([var, None])
            continue
        if isinstance(value, (bool, list, dict)):
            errors.append((where, "expected a string, a number or null (remove the card's variable), found %s" %
                           card_issues.show(value)))
            continue
        if isinstance(value, str) and card_schema._CONTROL_RE.search(value):
            errors.append((where, card_issues._control_message(value)))
            continue
        # an env value is never parsed as an option: only _value's number and string checks apply
        checked = _value(value, where, errors) if not isinstance(value, str) else value
        if checked is not None:
            out.append([var, str(checked)])
    return out


def set_paths(kind, recipe_name, spec, variable=VARIABLE):
    """``{flag as kind's parser names it: the override's path}`` for each flag ``spec`` sets (a port it pins)."""
    reader = argv_reader(kind, [])
    return dict((reader.name(flag), _path(variable, recipe_name, "set", flag)) for flag, dummy in (spec or {}).get("set") or ())


def spec_key(spec):
    """A hashable, order-preserving identity of one recipe's overrides (equal overrides, equal key)."""
    return json.dumps(spec, sort_keys=True)


def _names(kind, flag):
    """Every spelling of ``flag`` as ``kind``'s parser reads it (its dialect's aliases)."""
    reader = argv_reader(kind, [])
    name = reader.name(flag)
    for group in ALIASES.get(kind, ()):
        if name in {reader.name(g) for g in group}:
            return frozenset(reader.name(g) for g in group)
    return frozenset((name,))


class _Tokens(object):
    """The recipe's argv with where each token came from (the card's element, or an override's flag)."""

    def __init__(self, recipe):
        self.kind = recipe["launcher"]
        self.tokens = list(recipe["argv"])
        self.origin = [("card", i) for i in range(len(self.tokens))]
        self.reader = argv_reader(self.kind, [])
        self.start = parser_start(self.tokens)

    def stop(self):
        """One past the last token the engine reads as an option (a bare ``--`` ends them)."""
        rest = self.tokens[self.start:]
        return self.start + (rest.index("--") if "--" in rest else len(rest))

    def spans(self, names):
        """``(start, end)`` of every occurrence of an option in ``names``, flag and values."""
        out, stop = [], self.stop()
        i = self.start
        while i < stop:
            tok = self.tokens[i]
            if self.reader.name(tok) in names:
                j = i + 1
                if "=" not in tok:
                    while j < stop and not is_option(self.tokens[j]):
                        j += 1
                out.append((i, j))
                i = j
                continue
            i += 1
        return out

    def options(self):
        """``(index, name)`` of every option token the engine's parser reads."""
        return [(i, self.reader.name(self.tokens[i])) for i in range(self.start, self.stop())
                if self.reader.name(self.tokens[i])]

    def card_path(self, index, card_index):
        kind, at = self.origin[index]
        return "envs[%d].argv[%d]" % (card_index, at) if kind == "card" else None

    def delete(self, start, end):
        del self.tokens[start:end]
        del self.origin[start:end]

    def insert(self, at, tokens, origin):
        self.tokens[at:at] = tokens
        self.origin[at:at] = [origin] * len(tokens)


def apply(recipe, spec, variable=VARIABLE):
    """Apply one recipe's overrides to its argv.

    :param recipe: a recipe model (``_recipe.describe``, named).
    :param spec: the recipe's entry of :func:`parse`.
    :returns: ``(tokens, origin, notes)``: the effective argv; for each token ``("card", element)`` or
        ``("set", flag)``; one line per change for the plan's ``changes``.
    :raises OverrideError: a removed flag the argv does not hold.
    """
    t = _Tokens(recipe)
    name, index = recipe["name"], recipe["index"]
    errors, notes = [], []
    for i, flag in enumerate(spec["remove"]):
        where = _path(variable, name, "remove", i)
        names = _names(t.kind, flag)
        found = t.spans(names)
        if not found and METRICS_FLAGS.get(t.kind) in names:
            # the planner adds it when the card does not write it: removing it turns the metrics off
            notes.append("%s: remove %s (metrics off)" % (variable, flag))
            continue
        if not found:
            near = [(j, o) for j, o in t.options() if o.startswith("--") and t.reader.name(flag).startswith(o)]
            errors.append((where, "%r is not in the recipe's argv%s" % (flag, (
                "; the card writes %r (%s), which the engine may read as it: remove that spelling" % (
                    t.tokens[near[0][0]].split("=", 1)[0], t.card_path(near[0][0], index))) if near else "")))
            continue
        for start, end in reversed(found):
            t.delete(start, end)
        notes.append("%s: remove %s" % (variable, flag))
    for flag, values in spec["set"]:
        where = _path(variable, name, "set", flag)
        names = _names(t.kind, flag)
        found = t.spans(names)
        if found:
            first = t.tokens[found[0][0]]
            written = first.split("=", 1)[0]
            if "=" in first and values is not None and len(values) == 1:
                new = ["%s=%s" % (written, values[0])]
            else:
                new = [written] + list(values or [])
            at = found[0][0]
            for start, end in reversed(found):
                t.delete(start, end)
        else:
            new = [flag] + list(values or [])
            at = t.stop()
        t.insert(at, new, ("set", flag))
        notes.append("%s: set %s" % (variable, " ".join([flag] + list(values or []))))
    if errors:
        raise OverrideError(errors)
    return t.tokens, t.origin, notes


def _effective_env(recipe, spec, variable):
    """The recipe's env with the overrides' ``env`` applied, the origin of each set variable, the change lines."""
    env, origin, errors, notes = dict(recipe["env"]), {}, [], []
    for var, value in spec.get("env", ()):
        if value is None:
            if var not in env:
                errors.append((_path(variable, recipe["name"], "env", var), "the recipe has no variable %s to "
                               "remove; the card sets %s" % (card_issues.show(var), ", ".join(sorted(env)) or
                                                             "none")))
                continue
            del env[var]
            notes.append("%s: env remove %s" % (variable, var))
        else:
            env[var] = value
            origin[var] = True
            notes.append("%s: env set %s=%s" % (variable, var, value))
    if errors:
        raise OverrideError(errors)
    return env, origin, notes


def effective_recipe(recipe, spec, variable=VARIABLE, hub=None):
    """The recipe model of ``recipe`` with its overrides applied, read and checked as the card's own.

    :param hub: the card's ``(hf.repo, hf.revision)``: the effective argv's revision options
        (``_recipe.hub_pins``) are read as the card's own, so an override cannot pin another revision.
    :returns: a recipe model (as ``_recipe.describe``) with the card's ``name``, ``card_port`` (the port
        the card's argv gives, which peers' card URLs name) and ``overrides`` (the change lines).
    :raises OverrideError: naming the variable, the recipe and the flag (or the card's element the
        overrides made invalid, e.g. a ``--node-rank`` left without its ``--nnodes``).
    """
    tokens, origin, notes = apply(recipe, spec, variable)
    variables, env_origin, env_notes = _effective_env(recipe, spec, variable)
    notes += env_notes
    index = recipe["index"]
    env = {"engine": recipe["engine"], "image": recipe["image"], "argv": tokens, "env": variables,
           "checkpoint": recipe["checkpoint"], "validated_hardware": recipe["validated_hardware"]}
    base = _path(variable, recipe["name"])

    def where_of(path):
        prefix = "envs[%d].argv[" % index
        if path.startswith(prefix) and path.endswith("]") and path[len(prefix):-1].isdigit():
            kind, at = origin[int(path[len(prefix):-1])]
            if kind == "set":
                return _path(variable, recipe["name"], "set", at), ""
            return base, "with the overrides applied, the card's envs[%d].argv[%d]: " % (index, at)
        for var in env_origin:
            if path == card_issues.format_path(["envs", index, "env", var]):
                return _path(variable, recipe["name"], "env", var), ""
        return base, "with the overrides applied, %s: " % path if path != "envs[%d].argv" % index else \
            "with the overrides applied: "

    sizes = card_validate.command_size_issues([None] * index + [env])
    if sizes:
        raise OverrideError([(w, lead + m) for (w, lead), m in ((where_of(p), m) for p, m in sizes)])
    try:
        model = describe(env, index)
        model["hub_pins"] = hub_pins(model, hub[0], hub[1]) if hub else recipe.get("hub_pins", [])
    except RecipeError as exc:
        w, lead = where_of(exc.path)
        raise OverrideError([(w, lead + exc.message)])
    if model["role"] != recipe["role"]:
        raise OverrideError([(base, "changes what the recipe is (its role from %s to %s, so its name); an "
                              "override may change how a recipe runs, not its role" % (recipe["role"], model["role"]))])
    model["name"] = recipe["name"]
    model["card_port"] = recipe.get("card_port", recipe["port"])
    model["metrics_off"] = any(METRICS_FLAGS.get(recipe["launcher"]) in _names(recipe["launcher"], f)
                               for f in spec["remove"])
    model["overrides"] = notes
    return model
