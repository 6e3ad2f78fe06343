#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: reboot_drains
short_description: Find the routers a host's stack reboot takes its serving instances out of
version_added: 1.0.0
description:
  - An action plugin, run on the controller (the C(stack_reboot) role, per host of a batch). From the plan and the
    units serving on the host before its reboot, returns which regular-mode SGLang router each serving instance
    leaves (M(launchcard.inference.router_workers)), the instances whose in-flight requests finish first
    (M(launchcard.inference.engine_drain)), the routers gated by a 1-token completion once the instances are back,
    and a warning per router that keeps sending a serving instance requests through the reboot (C(--mini-lb),
    C(--pd-disaggregation)) or reboots with the host.
options:
  serving:
    description: The units active on the host, one per item (C(systemctl list-units --plain --no-legend) lines - the
      unit's name first).
    type: list
    elements: str
    default: []
  plan:
    description: The plan. Defaults to the play's C(launchcard_plan); none (the role run alone) - nothing to drain.
    type: dict
  host:
    description: The host that reboots. Defaults to C(inventory_hostname).
    type: str
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
- name: Note the engines serving before the reboot
  ansible.builtin.command:
    argv: [systemctl, list-units, --type=service, --state=active, --plain, --no-legend, --full, "launchcard-*"]
  register: stack_reboot_serving
  changed_when: false

- name: Find the routers that send requests to the engines serving here
  launchcard.inference.reboot_drains:
    serving: "{{ stack_reboot_serving.stdout_lines }}"
  register: stack_reboot_drain
"""

RETURN = r"""
ops:
  description: One C({router, router_unit, api, unit, remove, add}) per serving instance and router it leaves before
    the reboot and rejoins after its gate.
  returned: success
  type: list
  elements: dict
drain:
  description: The serving instances (plan entries) taken out of a router, whose in-flight requests finish first.
  returned: success
  type: list
  elements: dict
routers:
  description: One C({host, unit, api, model}) per router of RV(ops), gated by a 1-token completion afterwards.
  returned: success
  type: list
  elements: dict
notes:
  description: One line per router that keeps sending a serving instance requests through the reboot, or reboots
    with the host.
  returned: success
  type: list
  elements: str
"""
