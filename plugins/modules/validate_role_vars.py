#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: validate_role_vars
short_description: Check the roles' variables of every host of the play at once, against the roles' argument specs
version_added: 1.0.0
description:
  - An action plugin, run once (C(run_once)) for the fleet. Groups the play's hosts by the values they set (inventory,
    group and extra variables) of the options of O(argument_spec), and checks each distinct set once, over the
    play's variables and the roles' defaults, as M(ansible.builtin.validate_argument_spec) checks a role's
    variables - so a fleet whose hosts share their settings is checked once, not once per host and role.
  - "Fails naming the hosts of each set with each error (C(<hosts>: <error>)), before any host is changed."
  - Contacts no host.
options:
  argument_spec:
    description:
      - The options to check, as a role's C(meta/argument_specs.yml) gives them (C(argument_specs.main.options));
        several roles' combined.
      - One of O(argument_spec) and O(roles) is required.
    type: dict
  roles:
    description:
      - Names of this collection's roles (C(preflight), C(units)...) whose C(meta/argument_specs.yml) main options are
        checked, combined in order; read on the controller, which costs less than templating them into
        O(argument_spec).
    type: list
    elements: str
  hosts:
    description: The hosts whose variables are read; default the play's (C(ansible_play_hosts_all)).
    type: list
    elements: str
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes.controller
  - launchcard.inference.attributes.action
  - launchcard.inference.attributes.read_only
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
seealso:
  - module: ansible.builtin.validate_argument_spec
"""

EXAMPLES = r"""
- name: Check the variables of the collection's preflight and units roles on every host
  launchcard.inference.validate_role_vars:
    roles: [preflight, units]
  run_once: true

- name: Check the variables of the preflight and units roles on every host
  launchcard.inference.validate_role_vars:
    argument_spec: >-
      {{ (lookup('ansible.builtin.file', 'roles/preflight/meta/argument_specs.yml') | from_yaml).argument_specs.main.options
         | combine((lookup('ansible.builtin.file', 'roles/units/meta/argument_specs.yml') | from_yaml).argument_specs.main.options) }}
  run_once: true
"""

RETURN = r"""
checked:
  description: One label per distinct set of values checked, naming its first hosts (C(gpu-01, gpu-02, gpu-03 and 5 more)).
  returned: success
  type: list
  elements: str
argument_errors:
  description: "Each error, C(<hosts>: <error>)."
  returned: failure
  type: list
  elements: str
msg:
  description: C(Validation of arguments failed:) and the errors, one a line; or that the check passed.
  returned: always
  type: str
"""
