#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: weights_plan
short_description: Choose, once for the play, the hosts that download each card's weights and the waves of copies
version_added: 1.0.0
description:
  - An action plugin, run on the controller (the C(weights) role runs it with C(run_once) and C(register) before
    any host stages weights, so a host that fails later changes no one's seed).
  - Reads each host's preflight result (the host variable O(result_var), its C(weights_staged)) once. With
    O(source=peer), one host per card downloads what it lacks from the Hub (the first, by name, that already holds
    the revision, else the first), and the card's other hosts that lack it copy it in waves, O(fanout) per source
    and wave, a host that received it in one wave being a source in the next. With O(source=hub) and a bound
    O(hub_concurrency), the hosts that lack the revision download it in rounds of that many. Only the play's hosts
    (C(ansible_play_hosts)) take part - a failed, unreachable or C(--limit)-ed out host is never a seed or a source.
  - O(source=path), or O(source=hub) without a bound - nothing to plan (empty RV(hosts)).
options:
  source:
    description: C(launchcard_weights_source).
    type: str
    choices: [peer, hub, path]
    default: peer
  fanout:
    description: C(launchcard_weights_fanout) - hosts one source copies to in one wave; 0 - no bound.
    type: raw
    default: 0
  hub_concurrency:
    description: C(launchcard_weights_hub_concurrency) - hosts that download from the Hub at once; 0 - no bound.
    type: raw
    default: 0
  result_var:
    description: The host variable holding each host's preflight result; empty - no host counts as holding the
      revision before the run.
    type: str
    default: preflight_result
  hosts:
    description: The hosts that take part. Defaults to C(ansible_play_hosts).
    type: list
    elements: str
  plan:
    description: The plan. Defaults to the play's C(launchcard_plan).
    type: dict
  cards:
    description: The cards by name, to name each repository and revision in RV(report). Defaults to the play's
      C(launchcard_cards).
    type: dict
author:
  - launchcard.inference contributors (@launchcard)
notes:
  - A O(fanout) or O(hub_concurrency) that is not a whole number fails the task, naming the variable.
extends_documentation_fragment:
  - launchcard.inference.attributes.controller
  - launchcard.inference.attributes.action
  - launchcard.inference.attributes.read_only
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
"""

EXAMPLES = r"""
- name: Choose the hosts that download from the Hub and the waves of copies from them
  launchcard.inference.weights_plan:
    source: peer
    fanout: 2
  register: weights_peers
  run_once: true
"""

RETURN = r"""
hosts:
  description: Per host, C({card, seed, copying, copies, source, wave, source_load, downloading, download_round}) -
    whether and in which round it downloads, in which wave it copies from which host.
  returned: success
  type: dict
cards:
  description: Per card, C({seed, seed_staged, copies, hosts, waves}).
  returned: success
  type: dict
waves:
  description: The most waves of copies of any card.
  returned: success
  type: int
download_rounds:
  description: The most rounds of downloads of any card.
  returned: success
  type: int
report:
  description: One line per card naming the host that downloads and those that copy from whom (O(source=peer)).
  returned: success
  type: list
  elements: str
"""
