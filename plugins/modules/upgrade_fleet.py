#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This file only documents the module; the work happens on the controller in
# plugins/action/upgrade_fleet.py.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: upgrade_fleet
short_description: Decide an upgrade's rollout once for the fleet, on the controller
version_added: 1.0.0
description:
  - The fleet step of C(playbooks/upgrade.yml), run once (C(run_once=true)) after each host's record was read
    (M(launchcard.inference.host_state) with O(launchcard.inference.host_state#module:state=read), registered as
    O(state_var)). Contacts no host and changes nothing.
  - Reads the plan and the loaded cards (C(launchcard_plan), C(launchcard_cards), set by the C(launchcard.inference.plan)
    role), and of each host of the play (C(ansible_play_hosts_all)) its registered record, C(launchcard_gpus) (else the
    accelerators its preflight call counted), C(launchcard_upgrade_surge), its unit options' variables and its
    C(preflight_result).
  - Returns the rollout (the batches, encoders first, each prefill/decode group as one batch, routers last, unchanged
    hosts untouched; the surge twins and the outages), the rollout in words, the regular-mode routers whose worker
    API the batches drive, a C(--limit) run's refusal when it would move an instance whose consumers it leaves out,
    and what each host's batch reads, keyed by host.
  - With O(step=locks), returns only the run locks this run still holds (each host's preflight call, the fleet
    lock C(preflight_fleet_lock) on the anchor), less those each host's record released.
options:
  step:
    description:
      - C(rollout) - the rollout and everything the batches read.
      - C(locks) - the locks this run still holds (RV(locks)), for the task that releases them.
    type: str
    choices: [rollout, locks]
    default: rollout
  options:
    description: The unit options of the host that runs the step (the C(units) role's C(units_settings.options)); the
      unit files every host must have are rendered with them (a podman host's Quadlet choice is its own).
    type: dict
    default: {}
  serial:
    description: Hosts of one recipe switched together (C(launchcard_upgrade_serial)).
    type: raw
    default: 1
  allow_outage:
    description: Accept a rollout that drops requests (C(launchcard_upgrade_allow_outage)); false - a real run is
      refused (RV(outage_refusal)).
    type: bool
    default: false
  allow_moved_peers:
    description: Run a C(--limit) upgrade that moves an instance whose consumers it leaves out
      (C(launchcard_allow_moved_peers)); RV(stranded) then warns of each consumer.
    type: bool
    default: false
  gate_timeout:
    description: The health gate's wait (C(launchcard_upgrade_gate_timeout_s)); empty - what each host's engines need to
      load.
    type: raw
  state_var:
    description: The variable each host registered its record read in.
    type: str
    default: upgrade_current
author:
  - launchcard.inference contributors (@launchcard)
notes:
  - Check mode lists the outages and a C(--limit) run's moved instances without refusing them.
extends_documentation_fragment:
  - launchcard.inference.attributes.controller
  - launchcard.inference.attributes.action
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  check_mode:
    details: Changes nothing either way; in check mode RV(outage_refusal) is empty and RV(stranded_refused) false.
  diff_mode:
    support: N/A
    details: The module changes nothing, so there is nothing to diff.
"""

EXAMPLES = r"""
- name: Read what each host runs
  launchcard.inference.host_state:
    state: read
  register: upgrade_current

- name: Plan the rollout
  launchcard.inference.upgrade_fleet:
    options: "{{ units_settings.options }}"
    serial: "{{ launchcard_upgrade_serial | default(1) }}"
  run_once: true
  register: upgrade_fleet

- name: The rollout
  ansible.builtin.debug:
    msg: "{{ upgrade_fleet.report }}"
  run_once: true
"""

RETURN = r"""
rollout:
  description: "The rollout - C(batches) (C({index, tier, hosts})), C(unchanged), C(routers), C(surges),
    C(surge_routers), C(outages) (each with its C(line)), C(diff_lines) (C({host: lines})), C(contracts),
    C(warnings), C(serial)."
  returned: O(step=rollout)
  type: dict
report:
  description: The rollout in words, one line per item (check mode prints it).
  returned: O(step=rollout)
  type: list
  elements: str
routers:
  description: C({host, unit, api}) of each regular-mode router of the plan.
  returned: O(step=rollout)
  type: list
  elements: dict
stranded:
  description: A C(--limit) run's lines - the instances it would move while units outside it point at them, and the
    hosts to add; with O(allow_moved_peers), a warning per consumer. Empty on a run of every planned host.
  returned: O(step=rollout)
  type: list
  elements: str
stranded_refused:
  description: Whether the run stops for RV(stranded) (not in check mode, not with O(allow_moved_peers)).
  returned: O(step=rollout)
  type: bool
outage_refusal:
  description: Why a real run stops before it changes anything - the outages and how to accept them; empty when it
    goes on.
  returned: O(step=rollout)
  type: str
hosts:
  description:
    - Per host of the play - C(change) (what its batch does, null where the rollout leaves it out), C(runs) (what it
      runs before its batch, in words), C(card) (its record's card), and on a host the rollout involves,
      C(release_paths) (the host lock its record releases), C(gate_timeout), C(textfile_instances) and C(record_units)
      (its rollback's unit files).
  returned: O(step=rollout)
  type: dict
locks:
  description: C({host, paths}) of each lock this run still holds.
  returned: O(step=locks)
  type: list
  elements: dict
"""
