# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation of the action plugin launchcard.inference.preflight_fleet (plugins/action/preflight_fleet.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: preflight_fleet
short_description: The preflight role's step for the whole fleet, after every host's preflight call
version_added: 1.0.0
description:
  - Runs on the controller, once for the play's hosts (C(run_once)); reads each host's registered
    M(launchcard.inference.preflight) result (O(result)) and, for the report, its M(launchcard.inference.engine_argv)
    result (O(argv_result)), with the plan and cards of C(launchcard_plan), C(launchcard_cards), C(launchcard_run).
  - O(step=argv) - which host checks each distinct image and argv with the engine's own parser (one that holds the
    image or, unless the run stops anyway - check mode, another run's lock, a spent failure budget
    C(launchcard_max_fail_percentage) - one that pulls it); RV(checks).
  - O(step=report) - the preflight table of every host and the fleet's warnings (RV(msg), printed at every
    verbosity, as M(ansible.builtin.debug) prints its message), and what the role does next (RV(then)) - the locks
    to release when the run stops here, the images pulled for accepted argv checks to remove when another check is
    rejected, the rejected argv, and whether the failure budget is spent.
  - Changes nothing and contacts no host.
options:
  step:
    description: Which step - the argv checks to give the hosts, or the report after them.
    type: str
    choices: [argv, report]
    required: true
  result:
    description: The name of each host's registered preflight result.
    type: str
    default: preflight_result
  argv_result:
    description: The name of each host's registered engine_argv result (O(step=report)).
    type: str
    default: preflight_argv
  image_refs:
    description: The plan's images resolved to digests (C(launchcard_resolved_images.image_refs)).
    type: dict
    default: {}
  argv_python:
    description: O(step=argv) - the native virtualenv's Python, for an argv check on a native host.
    type: str
    default: /opt/launchcard/venv/bin/python
  checks:
    description: O(step=report) - the checks the argv step gave (its RV(checks)).
    type: list
    elements: dict
    default: []
  hold_moved:
    description:
      - O(step=report) - warn of each tag that moved in the registry since the hosts recorded its digest.
      - A deploy's report (C(playbooks/deploy.yml) sets it, C(playbooks/upgrade.yml) does not) also warns, naming the
        hosts, when the plan moves hosts to another revision than their records name
        (RV(launchcard.inference.preflight#module:recorded_card)), as after an upgrade whose new card the inventory's
        C(launchcard_card_src) does not name yet; the warning is also one of Ansible's own.
    type: bool
    default: false
  lock:
    description: O(step=report) - the hosts took their run locks in their preflight calls.
    type: bool
    default: false
  fleet_lock:
    description: O(step=report) - the registered result of the task that took the fleet lock on the anchor host.
    type: raw
  recheck:
    description: O(step=report) - the check after the accelerator stack's install; only the table is given.
    type: bool
    default: false
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
- name: Give each distinct image and argv to one host
  launchcard.inference.preflight_fleet:
    step: argv
    image_refs: "{{ launchcard_resolved_images.image_refs }}"
  register: preflight_argv_plan
  run_once: true

- name: Report every host
  launchcard.inference.preflight_fleet:
    step: report
    checks: "{{ preflight_argv_plan.checks }}"
  register: preflight_fleet
  run_once: true
"""

RETURN = r"""
checks:
  description: O(step=argv) - each distinct check, with the host that runs it and whether it pulls the image.
  returned: with step=argv
  type: list
  elements: dict
msg:
  description: The preflight table, then an empty line and one C(WARNING (fleet)) line per fleet warning.
  returned: with step=report
  type: str
then:
  description: What the tasks after the report do.
  returned: with step=report
  type: dict
  contains:
    release:
      description:
        - The locks to release, C([{host, paths}]), when the run stops here (another run's lock, a spent failure budget,
          a rejected argv); one entry without paths when there is nothing to release but a refusal to make. Empty
          otherwise, in check mode, and without O(lock).
      returned: with step=report
      type: list
      elements: dict
    refusal:
      description: Each lock another run holds, and how to break a stale one; empty when none.
      returned: with step=report
      type: str
    argv_refusals:
      description: One line per rejected argv (the card field, the flag, the engine's message).
      returned: with step=report
      type: list
      elements: str
    remove:
      description: C([{host, runtime, image}]) - images pulled for accepted checks, to remove when an argv is rejected.
      returned: with step=report
      type: list
      elements: dict
    lost:
      description: The hosts out of the run once the hosts that failed a check stop, in play order.
      returned: with step=report
      type: list
      elements: str
    budget_spent:
      description: Whether those hosts exceed the failure budget (C(launchcard_max_fail_percentage)).
      returned: with step=report
      type: bool
"""
