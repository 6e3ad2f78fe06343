# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Installed against wanted package versions: the drift the stack roles report.

Pure Python (standard library only, no Ansible import).
"""

from __future__ import annotations


def matches(installed, wanted):
    """Whether an installed version is the wanted one.

    Equal, or the wanted version plus a packaging revision: dpkg's
    ``7.0.2.70002-1~launchcard1`` and rpm's ``7.0.2.70002-1.el9`` are release
    ``7.0.2.70002``.

    :param installed: version string as the package manager reports it.
    :param wanted: the pinned version, with or without a revision.
    """
    installed, wanted = str(installed), str(wanted)
    return installed == wanted or installed.startswith(wanted + "-")


def drift(installed, wanted):
    """Installed packages whose version is not the wanted one.

    :param installed: ``{name: version}``; a name absent (or ``None``) is not
        installed, which is not drift (there is nothing to report, only to install).
    :param wanted: ``{name: version}``, in the order the report lists them.
    :returns: ``[[name, installed version], ...]`` in *wanted*'s order.
    """
    installed = installed or {}
    return [[name, installed[name]] for name, version in (wanted or {}).items()
            if installed.get(name) is not None and not matches(installed[name], version)]
