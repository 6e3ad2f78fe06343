# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a play's variables as stored, for the collection's lookups and action plugins (controller side)."""

from __future__ import annotations

import collections
import copy
from collections.abc import Mapping

from ansible.errors import AnsibleLookupError
from ansible.module_utils.parsing.convert_bool import boolean


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


def results(hostvars, hosts, names):
    """``{host: {name: its registered result}}`` for each of ``hosts`` in ``hostvars`` and each of ``names`` it has,
    as stored, copied: ``hostvars[host][name]`` would template the whole result on every read (ansible-core 2.19
    vars/hostvars.py ``HostVarsVars.__getitem__``), about ten times the cost, though module output holds no template."""
    raw = getattr(hostvars, "raw_get", None)
    out = {}
    for host in hosts:
        if host not in hostvars:
            continue
        found = raw(host) if raw is not None else hostvars[host]
        out[host] = copy.deepcopy(dict((n, found[n]) for n in names if n in found))
    return out


def variable(templar, variables, name):
    """The variable ``name`` of ``variables`` (null when undefined), its template rendered."""
    return stored(templar, variables.get(name)) if variables else None


class HostView(object):
    """One host's variables as the task running there sees them, each rendered once, only when read:
    ``HostView(self._templar, task_vars)`` (the roles' views, ``_units_host.UnitsHost``, ``_runtime_host.RuntimeHost``)."""

    def __init__(self, templar, task_vars):
        self._templar, self._vars = templar, task_vars or {}
        self.host = self._vars.get("inventory_hostname")
        self._cache = {}

    def var(self, name):
        """A variable of the task (a role default or play variable rendered), null when undefined."""
        if name not in self._cache:
            self._cache[name] = variable(self._templar, self._vars, name)
        return self._cache[name]

    def flag(self, name):
        """A variable read as Jinja's ``bool`` filter reads it."""
        return boolean(self.var(name), strict=False)

    @property
    def plan(self):
        return self.var("launchcard_plan") or {}

    @property
    def host_plan(self):
        """This host's share of the plan, None when it gives the host nothing."""
        return (self.plan.get("hosts") or {}).get(self.host)


class _HostvarsWith(Mapping):
    """``hostvars`` with ``extra`` over one host's variables (the others as they are)."""

    def __init__(self, hostvars, host, extra):
        self._hostvars, self._host, self._extra = hostvars, host, extra

    def __getitem__(self, name):
        if name == self._host:
            return collections.ChainMap(self._extra, self._hostvars[name] if name in self._hostvars else {})
        return self._hostvars[name]

    def __contains__(self, name):
        return name == self._host or name in self._hostvars

    def __iter__(self):
        return iter(self._hostvars)

    def __len__(self):
        return len(self._hostvars)


def registered(templar, task_vars, extra):
    """``(templar, task_vars)`` as the host's later tasks see them once ``extra`` (``{name: value}``, e.g. a result
    this task registers) is set on it: in its variables, its ``hostvars`` entry and the templar's variables."""
    host = task_vars.get("inventory_hostname")
    merged = dict(task_vars)
    merged.update(extra)
    merged["hostvars"] = _HostvarsWith(task_vars.get("hostvars") or {}, host, dict(extra))
    return templar.copy_with_new_env(available_variables=merged), merged
