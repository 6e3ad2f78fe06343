#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: units_summary
short_description: The deploy's summary of every planned instance and the hosts whose health gate failed
version_added: 1.0.0
description:
  - Runs on the controller (an action plugin), once for the fleet (C(run_once) and C(register)); contacts no host.
    The C(launchcard.inference.units) role calls it after every host's converge and health gate.
  - Reads the play's C(launchcard_plan) and what each planned host registered - C(units_converge)
    (M(launchcard.inference.systemd_units), whose C(health) is the gate's first stage), C(units_health_first) (the
    first stage of a C(--tags health) run) and C(units_health) (the second stage, M(launchcard.inference.http_health)).
  - Prints one row per planned instance - host, recipe, engine, role, port and state (C(healthy), C(unhealthy) with
    why, the unit's state, C(would start (check mode)), C(not in this run) for a host outside the run) - grouped by
    state, the worst first, then an empty line and the counts, then O(notes), as plain lines at any verbosity.
options:
  notes:
    description: Lines printed after the table (C(playbooks/deploy.yml) - the units outside a limited run that now point at nothing).
    type: list
    elements: str
    default: []
seealso:
  - module: launchcard.inference.systemd_units
  - module: launchcard.inference.http_health
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes.controller
  - launchcard.inference.attributes.action
  - launchcard.inference.attributes.read_only
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
"""

EXAMPLES = r"""
- name: Summary of every planned instance
  launchcard.inference.units_summary:
    notes: "{{ units_summary_notes }}"
  run_once: true
  register: units_report

- name: Stop the hosts whose endpoints are not healthy
  ansible.builtin.fail:
    msg: "{{ units_report.failures[inventory_hostname] }}"
  when: inventory_hostname in units_report.failures | default({})
"""

RETURN = r"""
msg:
  description: The table's lines, then the counts and O(notes), joined by newlines.
  returned: success
  type: str
  sample: |-
    host     recipe           engine  role        port  state
    -------  ---------------  ------  ----------  ----  -------
    gpu-001  vllm-aggregated  vllm    aggregated  8000  healthy

    1 instance on 1 host: 1 healthy
failures:
  description: Host -> why its health gate failed (each stage's message), for the planned hosts whose gate found an
    endpoint that is not healthy in this run.
  returned: when a host's gate failed
  type: dict
  sample: {gpu-002: "launchcard-demo-vllm-aggregated-0.service: engine exited (Result=exit-code)"}
"""
