#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_lock_status
short_description: The run locks this run holds across the play, and why it must stop
version_added: 1.0.0
description:
  - An action plugin, run once (C(run_once)) after the play's hosts took their run locks
    (M(launchcard.inference.run_lock), or M(launchcard.inference.preflight)'s C(lock)). Reads each host's
    registered lock results once on the controller and returns the locks this run holds, host by host, for a
    task that releases them (C(loop) with C(delegate_to)), and the refusal to stop the run with when another run
    holds a lock this run needs.
  - Contacts no host.
options:
  results:
    description:
      - The names of the registered results that hold each host's locks - a M(launchcard.inference.run_lock)
        result (C(locks)) or a M(launchcard.inference.preflight) result (C(lock.locks)).
    type: list
    elements: str
    default: [preflight_result]
  fleet:
    description:
      - The registered result of the task that took the fleet lock on O(anchor) when the anchor is outside the
        play (or later than its hosts' locks); its locks count for O(anchor).
    type: dict
  anchor:
    description: The run's anchor host (C(launchcard_run.anchor)), which holds the fleet lock.
    type: str
  released:
    description:
      - Names of registered results (a dotted name reads into one, as C(units_converge.health)) whose
        C(lock.released) lists the locks a host already released; those are left out of RV(taken).
    type: list
    elements: str
    default: []
  keep_fleet:
    description: Leave the fleet lock out of RV(taken) (a slice of a plan file keeps it for the plan's final job).
    type: bool
    default: false
  hosts:
    description: The hosts to read; default the play's (C(ansible_play_hosts_all)).
    type: list
    elements: str
  settled:
    description:
      - The name of each host's registered M(launchcard.inference.settle_or_lock) result, or a dotted path into a
        registered result that holds the same keys (C(preflight_result.host_step), which the preflight action plugin
        makes with the role's C(preflight_host_step)). With it, RV(settled) says whether the run changes nothing.
    type: str
  settled_hosts:
    description: The hosts O(settled) looks at; default the play's live hosts (C(ansible_play_hosts)).
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
  - module: launchcard.inference.run_lock
"""

EXAMPLES = r"""
- name: Take this host's run lock
  launchcard.inference.run_lock:
    run: "{{ launchcard_run }}"
  register: host_locked
  failed_when: false

- name: Find the locks this run holds and whether another run holds one
  launchcard.inference.run_lock_status:
    results: [host_locked]
    anchor: "{{ launchcard_run.anchor }}"
  run_once: true
  register: locks

- name: Release this run's locks, then stop the run naming the holders
  launchcard.inference.run_lock:
    state: absent
    paths: "{{ item.paths }}"
    holder: {run_id: "{{ launchcard_run.id }}"}
    fail_msg: "{{ locks.refusal if ansible_loop.last else omit }}"
  delegate_to: "{{ item.host }}"
  run_once: true
  loop: "{{ locks.taken if locks.refusal | length > 0 else [] }}"
  loop_control:
    extended: true
"""

RETURN = r"""
taken:
  description: The locks this run holds, C([{host, paths - [{path, scope}]}]), hosts in the play's order.
  returned: success
  type: list
  elements: dict
  sample: [{host: gpu-01, paths: [{path: /var/lib/launchcard/lock.json, scope: host}]}]
refusal:
  description:
    - Each lock another run holds (C(<host>:<path> held by <holder>)) and how to break a stale one; empty when
      no other run holds a lock this run needs.
  returned: success
  type: str
settled:
  description:
    - Whether the run changes nothing - it holds no lock, no other run holds one, and each of O(settled_hosts) was
      left as it is by its O(settled) result (a settled reading, no setup part). False when there is no host.
  returned: when O(settled) is given
  type: bool
"""
