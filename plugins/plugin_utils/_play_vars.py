# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a play's variables as stored, for the collection's lookups (controller side)."""

from __future__ import annotations

from ansible.errors import AnsibleLookupError


def check_options(lookup, kwargs, allowed):
    """Refuse options ``lookup`` does not take (they are read from kwargs directly, without set_options)."""
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise AnsibleLookupError("%s: unknown option(s) %s" % (lookup, ", ".join(unknown)))


def stored(templar, value):
    """``value`` as the play sees it: a play or role variable is stored as its template, so render that one step."""
    if isinstance(value, str) and templar is not None:
        return templar.template(value)
    return value


def variable(templar, variables, name):
    """The variable ``name`` of ``variables`` (null when undefined), its template rendered."""
    return stored(templar, variables.get(name)) if variables else None
