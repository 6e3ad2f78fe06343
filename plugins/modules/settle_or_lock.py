#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: settle_or_lock
short_description: Leave a host as it is from its preflight reading, or take its run lock
version_added: 1.0.0
description:
  - An action plugin, one task per host, after preflight; C(playbooks/deploy.yml) calls it before the setup steps.
  - Lists the setup steps the deploy runs on the host before its units (RV(setup_parts)), from its preflight
    call's verdict (O(preflight)) - the accelerator stack of the vendor it found (O(stack_roles), unless
    O(install_stack) is false; then preflight again on a host that was bare), the model weights on a host that runs
    an engine where preflight did not find them staged, the runtime (where the C(launchcard.inference.runtime) role
    has something to do, as M(launchcard.inference.runtime_settings) decides it) and the units' setup (the
    C(launchcard.inference.units) role's engines' user, weights directory and readiness helper where the preflight
    call did not find them in place, or a C(--limit) run's moved peers to check), each only where the run's
    C(--tags)/C(--skip-tags) select its tag (C(stack), C(weights), C(runtime), C(units)).
  - A host is left as it is when it has no setup step, its preflight call deferred its locks (or the plan gives it
    nothing, O(host_plan) is null, and it takes no lock), and the converge would change nothing there - the units
    role's converge compares, on the controller, the preflight call's reading of the host (C(units_found)) with the
    unit files it would write from the plan and the host's variables and with the record its gate would write
    (C(units_record)), while C(units_state) is C(started). Then the host is not contacted; RV(settled) is that
    converge result, which the converge task returns without a round trip
    (O(launchcard.inference.systemd_units#module:settled)). The unit files are rendered only on a host that may be
    left as it is.
  - Any other host takes the host-scope locks its preflight call deferred through M(launchcard.inference.run_lock),
    for the run the play's C(launchcard_run) names (its holder is the run id, user, controller, playbook and the
    host's card checksum from C(launchcard_plan)); a lock another run holds fails the host, naming the holder.
options:
  preflight:
    description: The host's M(launchcard.inference.preflight) result (C(lock.deferred), C(stack_vendor), C(bare_host),
      C(weights_staged)); empty where preflight did not run.
    type: dict
    default: {}
  host_plan:
    description: The host's share of the plan (its C(instances)), or null where the plan gives it nothing.
    type: dict
  stack_roles:
    description: Vendor to the role that installs its accelerator stack, for example C({nvidia - nvidia}).
    type: dict
    default: {}
  install_stack:
    description: Install the accelerator stack where preflight found it missing (C(launchcard_install_accelerator_stack)).
    type: bool
    default: true
seealso:
  - module: launchcard.inference.deploy_fleet
  - module: launchcard.inference.run_lock
  - module: launchcard.inference.systemd_units
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes.action
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  check_mode:
    support: full
    details: As M(launchcard.inference.run_lock) in check mode; a settled host's reading is the same.
  diff_mode:
    support: N/A
    details: The lock files are the run's bookkeeping; nothing to diff.
"""

EXAMPLES = r"""
- name: Leave the settled hosts as they are, lock the others
  launchcard.inference.settle_or_lock:
    preflight: "{{ preflight_result | default({}) }}"
    host_plan: "{{ launchcard_host_plan }}"
    stack_roles: {nvidia: nvidia, amd: rocm, ascend: ascend}
  register: launchcard_host_step

- name: Converge, or return the settled reading without a round trip
  launchcard.inference.systemd_units:
    settled: "{{ launchcard_host_step.settled }}"
    units: "{{ [] if launchcard_host_step.settled else my_units }}"
"""

RETURN = r"""
settled:
  description: The converge result of a host left as it is (C(settled=true)), else null.
  returned: always
  type: dict
setup_parts:
  description: The roles the deploy includes on the host before its units, in order (empty on a no-op run).
  returned: always
  type: list
  elements: str
locks:
  description: The run_lock module's result per lock path, when the host took its locks.
  returned: when the host takes a lock
  type: list
  elements: dict
"""
