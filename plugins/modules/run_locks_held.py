#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_locks_held
short_description: The run locks this run still holds, by host, for the task that releases them
version_added: 1.0.0
description:
  - Runs on the controller (an action plugin), once for the fleet (C(run_once) and C(register)); contacts no host.
    C(playbooks/deploy.yml) calls it in its C(always) section, and loops M(launchcard.inference.run_lock) with
    C(state=absent) and C(delegate_to) over RV(locks), so a run that stopped early releases what it took.
  - A host's locks are those its registered results (O(results)) say it acquired, less those a later result
    (O(released)) says it released already. The fleet lock is on the anchor (the plan's first host, from the play's
    C(launchcard_run)); O(fleet) is the result of the task that took it where the anchor's own results do not hold it.
  - Docs on the run lock, C(docs/operations.md) "Run lock".
options:
  hosts:
    description: The run's hosts (C(ansible_play_hosts_all)), in the order the locks are released.
    type: list
    elements: str
    required: true
  results:
    description: The names of each host's registered results that hold the locks it took (a preflight result's
      C(lock.locks), a M(launchcard.inference.run_lock) or M(launchcard.inference.settle_or_lock) result's C(locks)).
    type: list
    elements: str
    default: [preflight_result]
  released:
    description: The names (a dotted name reads into a result, as C(units_converge.health)) of each host's
      registered results whose C(lock.released) lists the lock paths it released already.
    type: list
    elements: str
    default: []
  fleet:
    description: The registered result of the task that took the fleet lock on the anchor (outside the run's limit,
      or deferred to after preflight); null where none ran.
    type: dict
  keep_fleet:
    description: Leave the fleet lock held (a slice of a plan file; the plan's final job releases it).
    type: bool
    default: false
  final_fleet:
    description: Add the anchor's fleet lock even where this run took none (the final job of a plan file,
      C(launchcard_plan_final)), so the lock its slices left held is released.
    type: bool
    default: false
  lock_dir:
    description: The folder of the lock files on each host (C(launchcard_lock_dir)), for O(final_fleet).
    type: str
    default: /var/lib/launchcard
seealso:
  - module: launchcard.inference.run_lock
  - module: launchcard.inference.settle_or_lock
  - module: launchcard.inference.deploy_fleet
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes.controller
  - launchcard.inference.attributes.read_only
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
"""

EXAMPLES = r"""
- name: Find the locks this run still holds
  launchcard.inference.run_locks_held:
    hosts: "{{ ansible_play_hosts_all }}"
    results: [preflight_result, launchcard_host_step]
    released: [units_converge.health, units_health]
  run_once: true
  register: launchcard_locks_held

- name: Release them
  launchcard.inference.run_lock:
    state: absent
    paths: "{{ item.paths }}"
    holder: {run_id: "{{ launchcard_run.id }}"}
  delegate_to: "{{ item.host }}"
  run_once: true
  loop: "{{ launchcard_locks_held.locks }}"
"""

RETURN = r"""
locks:
  description: Per host that still holds a lock of this run, in O(hosts) order (the anchor last when it is not one
    of them), the lock files (C(path), C(scope) C(host) or C(fleet)) to release.
  returned: always
  type: list
  elements: dict
  sample: [{"host": "gpu-1", "paths": [{"path": "/var/lib/launchcard/lock.json", "scope": "host"}]}]
"""
