#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: deploy_fleet
short_description: The deploy's decisions for the whole fleet after preflight, once, on the controller
version_added: 1.0.0
description:
  - Runs on the controller (an action plugin), once for the fleet (C(run_once) and C(register)); contacts no host.
    C(playbooks/deploy.yml) calls it after every host's M(launchcard.inference.preflight) call.
  - Reads the play's C(launchcard_plan), C(launchcard_cards) and C(launchcard_run) (the plan step sets them) and
    what each host's registered preflight result holds (O(records), O(deferred)).
  - A limited run (C(--limit), C(launchcard_target), a slice of a plan file) rewrites only its own hosts' units.
    With O(consumers), it lists each instance of the run whose address or port the plan moves while a unit on a
    planned host outside the run names it (a router's worker URLs, a language server's encoders, the other ranks
    of a group), with those units and the hosts to add to the limit; where the instance is today is its host's
    record, read by its preflight call. Such a run fails, before any host changes, unless O(allow_moved_peers)
    (the lines then say which units now point at nothing, and the deploy's summary repeats them); check mode
    lists them without failing. Nothing is read on a run of every planned host.
  - Returns the fleet lock that the fleet's anchor (the plan's first host) deferred in its preflight call, when
    the anchor is in O(hosts); the play takes it only once some host has taken its own lock, so a run that
    changes nothing takes none, and the holder to take it for.
options:
  hosts:
    description: The run's hosts (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  consumers:
    description:
      - Check the units outside a limited run (RV(stranded)). C(playbooks/deploy.yml) sets it from the run's tags
        (the check belongs to the C(units) tag).
    type: bool
    default: true
  allow_moved_peers:
    description: Run a limited run that strands units outside it anyway (C(launchcard_allow_moved_peers)).
    type: bool
    default: false
  records:
    description:
      - Where, in each host's variables, its record's instances are (C(unit), C(url), C(argv)), as a dotted path.
      - C(playbooks/upgrade.yml) reads the records with its own task (C(upgrade_current.record.instances)).
    type: str
    default: preflight_result.units_found.record_instances
  deferred:
    description: Where, in the anchor's variables, the locks its preflight call deferred are, as a dotted path.
    type: str
    default: preflight_result.lock.deferred
seealso:
  - module: launchcard.inference.settle_or_lock
  - module: launchcard.inference.preflight
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
- name: Decide for the fleet after preflight
  launchcard.inference.deploy_fleet:
    hosts: "{{ ansible_play_hosts_all }}"
    allow_moved_peers: "{{ launchcard_allow_moved_peers | default(false) }}"
  run_once: true
  any_errors_fatal: true
  register: launchcard_deploy_fleet

- name: The units a limited run left pointing at an instance it moved
  ansible.builtin.debug:
    msg: "{{ launchcard_deploy_fleet.stranded | default([]) }}"
  when: launchcard_deploy_fleet.stranded | default([]) | length > 0
"""

RETURN = r"""
stranded:
  description:
    - One line per instance a limited run moves while units outside it name it (refused), or, with
      O(allow_moved_peers), per unit that now points at nothing. Empty on a full run.
  returned: always
  type: list
  elements: str
msg:
  description: RV(stranded), when it is not empty.
  returned: when RV(stranded) is not empty
  type: list
  elements: str
fleet_lock:
  description: The fleet-scope locks (C(path), C(scope)) the anchor's preflight call deferred; empty when the anchor
    is not in the run or took its locks in that call.
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/var/lib/launchcard/fleet-lock.json", "scope": "fleet", "defer": true}]
fleet_holder:
  description: The holder the fleet lock is taken for (the run id, user, controller, playbook and the checksums of the
    plan's cards), when RV(fleet_lock) is not empty; else null.
  returned: always
  type: dict
"""
