# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decide what to do to a host's units; parse what systemd reports.

Pure Python, no Ansible import. The module ``systemd_units`` feeds it the
desired unit files, the files on disk and one ``systemctl show`` call's
output, and runs the few batched ``systemctl`` calls it returns.
"""

from __future__ import annotations

import re

SHOW_PROPERTIES = ("Id", "LoadState", "ActiveState", "SubState", "UnitFileState", "NRestarts", "ExecMainPID")


def diff_files(desired, existing, prefix):
    """Compare desired unit files with those on disk.

    :param desired: dict unit name -> content (str).
    :param existing: dict unit name -> content for every file on disk whose
        name starts with ``prefix`` (the collection's own units).
    :returns: dict with sorted lists ``write`` (new or different),
        ``remove`` (ours on disk, no longer desired), ``same``.
    """
    write = sorted(n for n, c in desired.items() if existing.get(n) != c)
    remove = sorted(n for n in existing if n.startswith(prefix) and n not in desired)
    same = sorted(n for n in desired if n not in write)
    return {"write": write, "remove": remove, "same": same}


def parse_show(text):
    """Parse ``systemctl show -p P1,P2 u1 u2 ...`` output.

    systemd prints one ``Key=Value`` block per unit, blocks separated by an
    empty line, in the order the units were named (systemctl(1), "show").
    :returns: dict unit Id -> dict of properties (str values).
    """
    units = {}
    for block in text.strip().split("\n\n"):
        props = {}
        for line in block.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                props[key] = value
        if props.get("Id"):
            units[props["Id"]] = props
    return units


def actions(names, states, written, state):
    """Return the batched systemctl actions that bring units to ``state``.

    :param names: desired unit names.
    :param states: output of :func:`parse_show` (before any action).
    :param written: names whose file changed in this run.
    :param state: ``started`` (enabled and running; changed files restart)
        or ``stopped`` (disabled and stopped).
    :returns: dict of sorted lists ``enable``, ``disable``, ``start``,
        ``restart``, ``stop``.
    """
    out = {"enable": [], "disable": [], "start": [], "restart": [], "stop": []}
    for n in sorted(names):
        st = states.get(n, {})
        active = st.get("ActiveState") in ("active", "activating", "reloading")
        enabled = st.get("UnitFileState") in ("enabled", "enabled-runtime")
        if state == "started":
            if not enabled:
                out["enable"].append(n)
            if not active:
                out["start"].append(n)
            elif n in written:
                out["restart"].append(n)
        else:
            if enabled:
                out["disable"].append(n)
            if active:
                out["stop"].append(n)
    return out


_SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_VALUE = re.compile(r"^[^\x00-\x20\x7f\"'\\]*$")


def render_env_file(values):
    """Render a secrets environment file, one ``NAME=value`` per line.

    The same file serves systemd's ``EnvironmentFile=`` (systemd.exec(5)) and
    ``docker run --env-file``, which takes values literally (no quote
    processing), so values are written unquoted and must not need quoting.
    :raises ValueError: a name that is not an identifier, or a value with
        whitespace, a quote, a backslash or a control character. The message
        names the variable, never the value.
    """
    lines = []
    for name in sorted(values):
        value = str(values[name])
        if not _SECRET_NAME.match(name):
            raise ValueError("secret name %r is not an identifier" % name)
        if not _SECRET_VALUE.match(value):
            raise ValueError("secret %s holds whitespace, a quote, a backslash or a control character" % name)
        lines.append("%s=%s" % (name, value))
    return "\n".join(lines) + "\n"
