# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lookup plugin launchcard.inference.host_entry: one host's entry of a fleet-wide table, read without copying it."""

from __future__ import annotations

DOCUMENTATION = r"""
name: host_entry
author:
  - launchcard.inference contributors (@launchcard)
version_added: 1.0.0
short_description: One host's entry of a fleet-wide table, without a copy of the table
description:
  - Returns, for each term, the entry of the current host (or O(host)) in a variable that maps every host's name to
    a value, such as C(launchcard_plan.hosts) (the plan's share of each host) or C(launchcard_peer_ports); O(missing)
    where the table has no entry for the host, O(undefined) where the variable is not defined (both V(null) unless
    set).
  - "Why a lookup: an expression such as C(launchcard_plan.hosts[inventory_hostname]) makes ansible-core 2.19
    wrap every host's entry of the table before it indexes one, on every host and every task that evaluates it,
    so its cost grows with the fleet (docs/speed.md). This lookup reads the variable as stored and indexes it."
  - A term names a variable and, after dots, the keys to follow in it (C(launchcard_plan.hosts)). A step that is a
    template (a play variable) is rendered first.
options:
  _terms:
    description: The tables, each a variable name and the keys that lead to the table (C(launchcard_plan.hosts)).
    type: list
    elements: str
    required: true
  host:
    description: The host whose entry to return; the current host (C(inventory_hostname)) when unset.
    type: str
  missing:
    description: What to return for a table that has no entry for the host.
    type: raw
  undefined:
    description: What to return where the variable is not defined (or a key on the way to the table is missing).
    type: raw
"""

EXAMPLES = r"""
- name: Show this host's share of the plan
  ansible.builtin.debug:
    msg: "{{ lookup('launchcard.inference.host_entry', 'launchcard_plan.hosts') }}"

- name: This host's instances, an empty list on a host the plan gives nothing
  ansible.builtin.debug:
    msg: "{{ (lookup('launchcard.inference.host_entry', 'launchcard_plan.hosts') or {}).instances | default([]) }}"
"""

RETURN = r"""
_raw:
  description: One entry per term, V(null) where the host has none.
  type: list
  elements: raw
"""

from collections.abc import Mapping

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _play_vars as play_vars


class LookupModule(LookupBase):
    """Index a fleet-wide table by host name, as stored."""

    def run(self, terms, variables=None, **kwargs):
        # options read directly: set_options() costs more than the lookup itself, evaluated on every host and task
        play_vars.check_options("launchcard.inference.host_entry", kwargs, ("host", "missing", "undefined"))
        variables = variables or {}
        host = kwargs.get("host") or play_vars.variable(self._templar, variables, "inventory_hostname")
        if not host:
            raise AnsibleLookupError("launchcard.inference.host_entry: no host (inventory_hostname is not set)")
        missing, undefined = kwargs.get("missing"), kwargs.get("undefined")
        out = []
        for term in terms:
            if not isinstance(term, str) or not term:
                raise AnsibleLookupError("launchcard.inference.host_entry: a term must name a variable, found %r" % (term,))
            path = term.split(".")
            value = play_vars.variable(self._templar, variables, path[0])
            for key in path[1:]:
                value = play_vars.stored(self._templar, value.get(key)) if isinstance(value, Mapping) else None
            if not isinstance(value, Mapping):
                out.append(undefined)
            else:
                out.append(value[host] if host in value else missing)
        return out
