# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the collection: the roles' variables each host of a play sets, checked once per distinct set against
the roles' argument specs (plugins/action/validate_role_vars.py)."""

from __future__ import annotations

import os
import re

import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.launchcard.inference.plugins.plugin_utils import _report as report


# the collection's roles: plugins/plugin_utils/ is two levels below the collection's root
ROLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles")
_ROLE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def role_options(roles, roles_dir=ROLES_DIR):
    """The options of the ``main`` entry point of each of the collection's ``roles`` (``meta/argument_specs.yml``),
    combined in order; read with libyaml's safe loader where present (no template, nothing tagged).

    :raises ValueError: a name that is not one of the collection's roles, or a spec without ``main`` options.
    """
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out = {}
    for role in roles:
        path = os.path.join(roles_dir, str(role), "meta", "argument_specs.yml")
        if not _ROLE_NAME.match(str(role)) or not os.path.isfile(path):
            raise ValueError("roles: %r is not a role of this collection" % (role,))
        with open(path) as f:
            spec = yaml.load(f, Loader=loader)
        try:
            out.update(spec["argument_specs"]["main"]["options"])
        except (KeyError, TypeError):
            raise ValueError("roles: %s has no options in meta/argument_specs.yml argument_specs.main" % role)
    return out


def by_host(hostvars, hosts, names):
    """The variables among ``names`` each host sets (inventory, extra vars), hosts grouped by equal values
    (_report.hosts_by_settings): ``[{"hosts", "vars", "label"}]``."""
    per_host = {}
    for host in hosts or []:
        host_vars = hostvars[host]
        per_host[host] = dict((name, host_vars[name]) for name in names if name in host_vars)
    return report.hosts_by_settings(per_host)


def errors(argument_spec, base, groups):
    """Each group's errors against ``argument_spec``, its values over ``base`` (the play's variables and the roles'
    defaults, as ``ansible.builtin.validate_argument_spec`` reads them), as role argument specs are validated
    (ansible-core's ArgumentSpecValidator, ``validate_role_argument_spec``): ``[(label, [message])]``, groups
    without error left out."""
    validator = ArgumentSpecValidator(argument_spec)
    out = []
    for group in groups:
        found = validator.validate(dict(base, **group["vars"]), validate_role_argument_spec=True).error_messages
        if found:
            out.append((group["label"], list(found)))
    return out
