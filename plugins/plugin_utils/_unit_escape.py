# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a card value is written into a unit file or a Quadlet file so that it stays one value.

Pure Python, no Ansible import. Escaping follows systemd.service(5),
"Command lines", and systemd.exec(5), ``Environment=``:

- in ``ExecStart=`` a word is quoted with double quotes when it is empty or
  holds whitespace, a quote, a backslash or ``;``; inside quotes ``\\`` and
  ``"`` are backslash-escaped; ``%`` becomes ``%%`` (specifiers) and ``$``
  becomes ``$$`` (variable expansion) everywhere;
- ``Environment="KEY=VALUE"`` expands ``%`` specifiers but not ``$``;
- a newline ends a directive, so any control character in a value is refused
  (:class:`UnsafeValue`) even though the card schema already rejects them.

Card values therefore reach the engine as the exact argv the card wrote and
can never add a directive or run a shell.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NEEDS_QUOTES = re.compile(r"[\s\"'\\;]")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class UnsafeValue(ValueError):
    """A value that cannot be written into a unit safely (names the field)."""


def _check(value, what):
    value = str(value)
    if _CONTROL.search(value):
        raise UnsafeValue("%s contains a control character (newline, tab, NUL...): %r" % (what, value[:60]))
    return value


def exec_word(word, what="argv"):
    """Escape one argv word for ``ExecStart=``.

    :raises UnsafeValue: the word holds a control character.
    """
    w = _check(word, what).replace("%", "%%").replace("$", "$$")
    if w == "" or _NEEDS_QUOTES.search(w):
        w = '"' + w.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return w


def exec_line(argv, what="argv", wrap=False):
    """Join an argv into an ``ExecStart=`` value, each word escaped.

    With ``wrap``, every option (a word starting with ``-``) after the first
    word starts a continuation line (`` \\`` + newline + 4 spaces), so a
    long command reads, and diffs, one option per line. systemd joins
    continuation lines with a space (systemd.syntax(7)), so the words are
    the same either way.
    """
    words = [exec_word(w, "%s[%d]" % (what, i)) for i, w in enumerate(argv)]
    if not wrap:
        return " ".join(words)
    out = words[:1]
    for raw, word in zip(argv[1:], words[1:]):
        out.append((" \\\n    " if raw.startswith("-") else " ") + word)
    return "".join(out)


def env_assignment(name, value):
    """Render one ``Environment=`` value, quoted, ``%`` doubled.

    :raises UnsafeValue: ``name`` is not an identifier or a control
        character is present.
    """
    if not _ENV_NAME.match(name):
        raise UnsafeValue("environment name %r is not an identifier" % name)
    v = _check(value, "env.%s" % name)
    v = v.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return '"%s=%s"' % (name, v)


def _spec(text, what="description"):
    return _check(text, what).replace("%", "%%")


_QUADLET_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+=-]*$")


def _quadlet_value(value, what):
    """A single-value Quadlet key (``Image=``, ``ContainerName=``): written as is, so it must need no quoting.

    Quadlet takes such a value literally, quotes included (podman issue 20992), and systemd expands ``%``
    specifiers in what the generator writes: only reference characters pass.
    """
    value = _check(value, what)
    if not _QUADLET_VALUE.match(value):
        raise UnsafeValue("%s %r holds a character a Quadlet value cannot carry (whitespace, quote, %%, $, ...)"
                          % (what, value[:60]))
    return value
