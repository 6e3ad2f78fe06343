#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: reboot_batches
short_description: Split the hosts whose accelerator stack needs a reboot into batches, once for the play
version_added: 1.0.0
description:
  - An action plugin, run on the controller (the C(stack_reboot) role runs it with C(run_once) and C(register)). Reads
    each host's verdict (the host variable O(wanted_var)) once and returns the hosts that reboot, in play order, in
    batches of at most O(serial) hosts - never every host at once.
options:
  hosts:
    description: The hosts, in play order. Defaults to the play's hosts (C(ansible_play_hosts)).
    type: list
    elements: str
  serial:
    description: Hosts per batch (C(launchcard_stack_reboot_serial)), a whole number of 1 or more.
    type: raw
    default: 1
  wanted_var:
    description: The host variable holding whether a host reboots (a boolean, or a string C(true)/C(false)).
    type: str
    default: stack_reboot_wanted
author:
  - launchcard.inference contributors (@launchcard)
notes:
  - A bad O(serial) fails the task, naming C(launchcard_stack_reboot_serial).
extends_documentation_fragment:
  - launchcard.inference.attributes.controller
  - launchcard.inference.attributes.action
  - launchcard.inference.attributes.read_only
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
"""

EXAMPLES = r"""
- name: Split the hosts that reboot into batches
  launchcard.inference.reboot_batches:
    serial: 2
  register: stack_reboot_batches
  run_once: true
"""

RETURN = r"""
batches:
  description: Lists of host names, in play order, each at most O(serial) long; empty when no host reboots.
  returned: success
  type: list
  elements: list
  sample: [[g1, g3], [g5]]
"""
