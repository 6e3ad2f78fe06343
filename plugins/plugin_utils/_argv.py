# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read and rewrite an engine's argv without losing a single token.

Pure Python, no Ansible import. The engines (vLLM, SGLang, the SGLang router)
parse their command lines with argparse, so an option is written either as
``--flag value`` or ``--flag=value``; a multi-valued option (``nargs='+'``)
takes every following token up to the next option (a token starting with
``-`` that is not a negative number, argparse's rule: ``-tp 8`` is an option,
``-1`` a value).

:class:`Argv` keeps the original tokens and only touches the tokens of the
option it is asked to change, so a recipe whose placement needs no rewrite
comes back token for token (the "recipe fidelity" rule of the planner).

vLLM's parser (``FlexibleArgumentParser``, ``vllm/utils/argparse_utils.py``)
also accepts underscores for dashes in a long option's name
(``--tensor_parallel_size``, up to the first ``.``): an :class:`Argv` made
with ``underscores=True`` reads names that way. Abbreviated options (argparse's
``allow_abbrev``) are not resolved here: :func:`abbreviations` finds them so
the recipe model can refuse them.
"""

from __future__ import annotations

import re

#: The largest magnitude of an integer the collection reads from an argv: every integer up to 2**53 converts to a
#: Python float (IEEE 754 binary64, sys.float_info.mant_dig 53) exactly and finitely, which the planner's and the
#: memory check's arithmetic need; a 400-digit count becomes float infinity there.
LARGEST_INT = 2 ** 53

# argparse's _negative_number_matcher: such tokens are values, not options.
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def is_option(token):
    """argparse's test (``_parse_optional``): ``-x...``, but not ``-``, a
    negative number, or a token with a space before any ``=`` (``--a=x y``
    is an option, ``-a b`` a value)."""
    return (token.startswith("-") and token != "-" and " " not in token.split("=", 1)[0]
            and not _NEGATIVE_NUMBER.match(token))


class Argv:
    """A mutable view of an argv list.

    :param tokens: the command line as a list of strings (``argv[0]`` is the
        executable). The list is copied; :attr:`tokens` is the current state.
    """

    def __init__(self, tokens, underscores=False):
        self.tokens = list(tokens)
        self.underscores = underscores

    def name(self, token):
        """The option name a token is read as (``--a_b=1`` -> ``--a-b`` with
        ``underscores``), or None when the token is not an option."""
        if not is_option(token):
            return None
        name = token.split("=", 1)[0]
        if self.underscores and name.startswith("--"):
            head, dot, rest = name[2:].partition(".")
            name = "--" + head.replace("_", "-") + dot + rest
        return name

    # -- reading ---------------------------------------------------------
    def _spans(self, flags):
        """Yield ``(start, end, values)`` for every occurrence of ``flags``.

        ``start`` is the flag's index, ``end`` one past its last value token,
        ``values`` the value tokens (from ``--flag=value`` or following
        tokens that are not options).
        """
        flags = (flags,) if isinstance(flags, str) else tuple(flags)
        i = 0
        toks = self.tokens
        while i < len(toks):
            tok = toks[i]
            if tok.startswith("-") and self.name(tok) in flags:
                dummy, eq, inline = tok.partition("=")
                if eq:
                    yield i, i + 1, [inline]
                    i += 1
                    continue
                j = i + 1
                while j < len(toks) and not is_option(toks[j]):
                    j += 1
                yield i, j, toks[i + 1:j]
                i = j
                continue
            i += 1

    def has(self, flags):
        """Return True when any of ``flags`` occurs (boolean or valued)."""
        return any(True for dummy in self._spans(flags))

    def values(self, flags):
        """Return the value tokens of the last occurrence of ``flags``.

        :returns: a list of strings; empty when the flag is absent or takes
            no value.
        """
        found = list(self._spans(flags))
        return found[-1][2] if found else []

    def get(self, flags, default=None):
        """Return the first value of the last occurrence, or ``default``."""
        vals = self.values(flags)
        return vals[0] if vals else default

    def _value_at(self, flags, path):
        """``(path[i], flag as written)`` of the last occurrence's first value token."""
        start, end, dummy = list(self._spans(flags))[-1]
        tok = self.tokens[start]
        index = start if "=" in tok or end == start + 1 else start + 1
        return "%s[%d]" % (path, index), tok.split("=", 1)[0]

    def where(self, flags, path="argv"):
        """Where the last occurrence of ``flags`` sets its value.

        :param path: the argv's own path in the card (``envs[4].argv``).
        :returns: ``(element path, flag as written)``: the value's element
            (``envs[4].argv[8]``; the flag's own element for ``--flag=value``
            or a flag without value), or ``(path, None)`` when the flag is
            absent.
        """
        if not self.has(flags):
            return path, None
        return self._value_at(flags, path)

    def get_int(self, flags, default, path="argv"):
        """Return an option's value as an int.

        :param path: where the argv sits in the card (``envs[4].argv``); errors
            name the value's element, ``envs[4].argv[8]``.
        :raises ValueError: with a message naming the element and the flag as
            written when the value is not an integer or its magnitude exceeds :data:`LARGEST_INT`.
        """
        raw = self.get(flags)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            where, written = self._value_at(flags, path)
            raise ValueError("%s: %s expects an integer, found %r" % (where, written, raw))
        if abs(value) > LARGEST_INT:
            where, written = self._value_at(flags, path)
            raise ValueError("%s: %s is out of range: an integer of at most 2**53 (%d) is expected, found %d digits" % (
                where, written, LARGEST_INT, len(raw.strip().lstrip("+-"))))
        return value

    def get_port(self, flags, default, path="argv"):
        """Return an option's value as a TCP port (an int from 1 to 65535).

        :raises ValueError: naming the element and the flag, when the value is
            not an integer or out of range.
        """
        try:
            port = self.get_int(flags, default, path)
        except ValueError:
            digits = (self.get(flags) or "").strip().lstrip("+-")
            if not digits.isdigit():
                raise
            # an integer beyond 2**53: named as a port, not with get_int's message (a fresh user's trial)
            where, written = self._value_at(flags, path)
            raise ValueError("%s: %s is out of range: a TCP port from 1 to 65535 is expected, found an integer of %d "
                             "digits" % (where, written, len(digits)))
        if port is not None and port != default and not 1 <= port <= 65535:
            where, written = self._value_at(flags, path)
            raise ValueError("%s: %s expects a TCP port from 1 to 65535, found %d" % (where, written, port))
        return port

    def occurrences(self, flags):
        """Return ``(index of the flag, value tokens)`` of every occurrence, in order."""
        return [(span[0], span[2]) for span in self._spans(flags)]

    def groups(self, flags):
        """Return the value lists of every occurrence, in order."""
        return [span[2] for span in self._spans(flags)]

    def positionals_after(self, index):
        """Return the token right after ``index`` unless it is an option."""
        rest = self.tokens[index + 1:index + 2]
        return rest[0] if rest and not rest[0].startswith("-") else None

    # -- rewriting -------------------------------------------------------
    def set(self, flags, value):
        """Set a single-valued option, keeping its written form.

        The last occurrence is rewritten in place (``--flag=v`` stays in that
        form); when the option is absent ``--flag value`` is appended, using
        the first name in ``flags``.
        """
        value = str(value)
        found = list(self._spans(flags))
        if not found:
            self.tokens.extend([_first(flags), value])
            return
        start, end, vals = found[-1]
        tok = self.tokens[start]
        if "=" in tok:
            self.tokens[start] = tok.split("=", 1)[0] + "=" + value
        elif vals:
            self.tokens[start + 1] = value
        else:
            self.tokens.insert(start + 1, value)

    def add_flag(self, flag):
        """Append a boolean flag when it is not present."""
        if not self.has(flag):
            self.tokens.append(flag)

    def remove(self, flags):
        """Remove every occurrence of a boolean option (the flag token only).

        Meant for flags that take no value (``--headless``): tokens after
        the flag are left in place.
        """
        flags = (flags,) if isinstance(flags, str) else tuple(flags)
        self.tokens = [t for t in self.tokens if not ("=" not in t and self.name(t) in flags)]

    def replace_groups(self, flags, groups):
        """Replace every occurrence of a repeatable option with ``groups``.

        :param groups: a list of value lists; each becomes one
            ``flag v1 v2 ...`` occurrence, inserted where the first old
            occurrence stood (appended when there was none). An empty list
            removes the option.
        """
        found = list(self._spans(flags))
        name = self.tokens[found[0][0]].split("=", 1)[0] if found else _first(flags)
        at = found[0][0] if found else len(self.tokens)
        for start, end, dummy in reversed(found):
            del self.tokens[start:end]
        new = []
        for vals in groups:
            new.append(name)
            new.extend(str(v) for v in vals)
        self.tokens[at:at] = new


def abbreviations(tokens, known, start=1, underscores=False):
    """Find long options written as an abbreviation of an option in ``known``.

    argparse (``allow_abbrev=True``, its default, which vLLM, SGLang and the
    SGLang router keep) reads an unambiguous prefix of a long option as that
    option (https://docs.python.org/3/library/argparse.html#allow-abbrev):
    ``--tp-si 4`` is ``--tp-size 4`` to SGLang.

    :param tokens: the argv.
    :param known: option names the caller reads (exact names are fine).
    :param start: index of the first token that belongs to the engine's
        parser (after ``vllm serve`` or ``python -m module``).
    :returns: list of ``(index, written name, [known options it is a prefix
        of])``, in argv order; tokens after a bare ``--`` are positionals.
    """
    reader = Argv([], underscores=underscores)
    out = []
    for i in range(start, len(tokens)):
        tok = tokens[i]
        if tok == "--":
            break
        name = reader.name(tok)
        if name is None or not name.startswith("--") or name in known:
            continue
        full = sorted(k for k in known if k.startswith("--") and k.startswith(name))
        if full:
            out.append((i, tok.split("=", 1)[0], full))
    return out


def _first(flags):
    return flags if isinstance(flags, str) else flags[0]
