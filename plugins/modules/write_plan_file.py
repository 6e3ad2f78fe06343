#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: write_plan_file
short_description: Write a plan file from the planning step's result and the resolved images
version_added: 1.0.0
description:
  - An action plugin. Makes the text of a plan file (C(launchcard.plan/v1), as C(playbooks/plan.yml) writes it) from
    the result of M(launchcard.inference.launch_card) with C(facts=false) (O(planned)) and the images
    M(launchcard.inference.resolve_images) resolved (O(resolved)), then writes it to O(dest) with
    M(ansible.builtin.copy) - the same text for the same plan, so an unchanged plan is C(ok), not C(changed).
  - The file holds the plan, each card's sha256, repo and revision, the fingerprint of the inventory variables
    the planner read, and the resolved image digests and sizes; M(launchcard.inference.launch_card)'s
    C(plan_file) applies it.
  - Run it on the controller (C(delegate_to) C(localhost)) where the plan file lives there.
options:
  planned:
    description:
      - The registered result of M(launchcard.inference.launch_card) with C(facts=false) (C(plan_planned) in
        C(playbooks/tasks/plan.yml)); its C(launchcard_plan), C(launchcard_cards) and C(launchcard_plan_inputs)
        are read.
    type: dict
    required: true
  resolved:
    description:
      - The registered result of M(launchcard.inference.resolve_images) (C(image_refs), C(image_sizes)), written
        into the file so every job applying it pins the same digests; unset or without C(image_refs) - none.
    type: dict
  dest:
    description: The plan file's path; its directory must exist.
    type: path
    required: true
  mode:
    description: The file's permissions, as M(ansible.builtin.copy)'s C(mode).
    type: raw
    default: "0644"
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes.action
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  check_mode:
    details: As M(ansible.builtin.copy) - says whether the file would change; nothing is written.
  diff_mode:
    support: full
    details: As M(ansible.builtin.copy) - the file's text before and after.
seealso:
  - module: launchcard.inference.launch_card
  - module: launchcard.inference.resolve_images
"""

EXAMPLES = r"""
- name: Plan the fleet (the cards, the plan and what they were made from, registered)
  launchcard.inference.launch_card:
    facts: false
  run_once: true
  delegate_to: localhost
  register: plan_planned

- name: Write the plan file on the controller
  launchcard.inference.write_plan_file:
    planned: "{{ plan_planned }}"
    dest: /srv/plans/fleet.json
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
dest:
  description: The plan file's path, as M(ansible.builtin.copy) returns it (with its C(checksum), C(mode) and the rest).
  returned: success
  type: str
  sample: /srv/plans/fleet.json
checksum:
  description: The sha1 of the text written, as M(ansible.builtin.copy) returns it.
  returned: success
  type: str
"""
