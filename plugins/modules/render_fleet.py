#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This file only documents the module; the work happens on the controller in
# plugins/action/render_fleet.py.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: render_fleet
short_description: Plan launch cards and write every host's plan and unit files on the controller
version_added: 1.0.0
description:
  - Plans the inventory's cards exactly as M(launchcard.inference.launch_card) does (every host of the
    inventory, so peer URLs never depend on C(--limit)), then writes, for each host of O(hosts), a
    folder C(DEST/HOST) holding C(plan.json) and the unit files the C(launchcard.inference.units) role
    would install there.
  - One task for the whole fleet, run once (C(run_once=true)); contacts no host.
  - Each host's unit options come from its variables through the same builder the C(units) role
    uses (the C(launchcard.inference.unit_settings) filter); C(launchcard_hf_token) only decides whether units read
    the secrets file, C(launchcard_registry_credentials) only whether podman units name the registry auth file
    (C(--authfile)).
  # generated: tools/unit_docs.py unit_variables
  - The unit options' variables, each described in C(docs/inventory.md) (Engines and their units) -
    C(launchcard_runtime), C(launchcard_accelerator_vendor), C(launchcard_runtime_native_venv),
    C(launchcard_weights_dir), C(launchcard_hf_offline), C(launchcard_unit_start_timeout_s),
    C(launchcard_unit_stop_timeout_s), C(launchcard_engine_shutdown_timeout_s), C(launchcard_docker_bin),
    C(launchcard_podman_bin), C(launchcard_secrets_env_file), C(launchcard_amd_render_gid),
    C(launchcard_amd_container_unconfined), C(launchcard_ascend_devices), C(launchcard_ascend_device_count),
    C(launchcard_extra_container_args), C(launchcard_container_shm_size), C(launchcard_podman_cgroups),
    C(launchcard_podman_quadlet), C(launchcard_rdma), C(launchcard_selinux_labels), C(launchcard_jit_cache),
    C(launchcard_liveness_interval_s), C(launchcard_liveness_timeout_s), C(launchcard_liveness_failures),
    C(launchcard_liveness_recipes), C(launchcard_lock_dir).
  # end unit_variables
  - What only the hosts know is not seen here; the deploy takes it from preflight when the variable is
    unset (the vendor, the AMD C(render) group id, the Ascend devices, the podman version that decides Quadlet
    C(.container) files) and from the runtime role (image digests). Set those variables to make the files equal to what a deploy writes.
  - Every file is rendered before any is written, so a bad card or variable writes nothing. A file is
    rewritten only when its content changes; unit files the plan no longer places on a host are removed
    from its folder.
  - Prometheus scrape targets as file-based service discovery files (C(launchcard-engines.json), every engine
    and router the plan places, C(launchcard-nodes.json), every host's node exporter, and C(launchcard-gpus.json),
    the accelerator exporters of the hosts whose C(launchcard_gpu_exporter_enabled) is true (role
    C(launchcard.inference.gpu_exporter)), an empty list when none is; see C(docs/observability.md)), in the folder
    of each host of the inventory group C(launchcard_monitoring), as that host reaches them (its own instances
    through loopback).
  - A C(launchcard_gpu_exporter_*) setting of a planned host that the exporter cannot run with fails the render,
    naming the host and the variable, as the deploy's planning does.
options:
  dest:
    description:
      - Directory on the controller; one folder per host is made under it.
    type: path
    required: true
  strict_variables:
    description:
      - An unknown C(launchcard_*) variable of a host fails the render, as
        M(launchcard.inference.launch_card)'s O(launchcard.inference.launch_card#module:strict_variables) does; false -
        a warning.
    type: bool
    default: false
  plan_file:
    description:
      - A plan file written by C(playbooks/plan.yml), applied instead of planning, as
        M(launchcard.inference.launch_card)'s O(launchcard.inference.launch_card#module:plan_file) does (refused when a
        card or a host's planner variables changed since). Empty - plan.
    type: path
  hosts:
    description:
      - Hosts whose folders are written. Defaults to the play's hosts (C(ansible_play_hosts_all)).
    type: list
    elements: str
author:
  - launchcard.inference contributors (@launchcard)
notes:
  - Errors name the field (card errors, for example C(envs[4].argv[7])) or the host and variable
    (for example C(lc-x) and C(launchcard_amd_render_gid must be an integer)).
extends_documentation_fragment:
  - launchcard.inference.card_source
  - launchcard.inference.attributes.controller
  - launchcard.inference.attributes.action
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Write every host's plan and unit files to /tmp/render
  launchcard.inference.render_fleet:
    dest: /tmp/render
  run_once: true
"""

RETURN = r"""
hosts:
  description: Number of host folders rendered.
  returned: success
  type: int
units:
  description: Number of unit files rendered.
  returned: success
  type: int
written:
  description: Files (C(HOST/NAME)) written, or to be written in check mode, because their content changed.
  returned: success
  type: list
  elements: str
removed:
  description: Stale unit files (C(HOST/NAME)) removed, or to be removed in check mode.
  returned: success
  type: list
  elements: str
dest:
  description: The output directory.
  returned: success
  type: str
scrape_notes:
  description: One line per planned instance that gets no scrape target, and why (a headless rank, metrics turned
    off, a --mini-lb router, metrics bound to loopback on another host).
  returned: success
  type: list
  elements: str
"""
