#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_exporter_unit
short_description: Write the systemd unit of the accelerator vendor's Prometheus exporter
version_added: 1.0.0
description:
  - An action plugin. Renders, on the controller, the unit that runs the vendor's exporter container in the
    foreground (NVIDIA dcgm-exporter, AMD device-metrics-exporter, Ascend npu-exporter) from its image pinned by
    digest, and writes it to O(dest) on the host with M(ansible.builtin.copy) (owner and group C(root), mode
    C(0644)) - the same settings give the same text, so an unchanged unit is C(ok).
  - A setting the unit cannot take (an unknown vendor or runtime, an image not pinned by digest, a port out of
    range, a client path the unit options refuse) fails before the host is changed, naming the variable.
  - The C(launchcard.inference.gpu_exporter) role runs it, then starts the unit.
options:
  vendor:
    description: C(nvidia), C(amd) or C(ascend).
    type: str
    required: true
  image:
    description: The exporter's image, C(REPO@sha256:DIGEST).
    type: str
    required: true
  runtime:
    description: C(docker) or C(podman); empty - the default of C(launchcard_runtime) (C(native) runs it with docker).
    type: str
  port:
    description: The host port of C(/metrics); empty - the vendor's (9400, 5000, 8082).
    type: raw
  docker_bin:
    description: The docker client's path (C(launchcard_docker_bin)); unset - the unit options' default.
    type: str
  podman_bin:
    description: The podman client's path (C(launchcard_podman_bin)); unset - the unit options' default.
    type: str
  dest:
    description: Where the unit is written.
    type: path
    default: /etc/systemd/system/launchcard-gpu-exporter.service
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes.action
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  check_mode:
    details: As M(ansible.builtin.copy) - says whether the unit would change; nothing is written.
  diff_mode:
    support: full
    details: As M(ansible.builtin.copy) - the unit's text before and after.
seealso:
  - module: ansible.builtin.copy
"""

EXAMPLES = r"""
- name: Write the accelerator exporter's unit
  launchcard.inference.gpu_exporter_unit:
    vendor: nvidia
    image: nvcr.io/nvidia/k8s/dcgm-exporter@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    runtime: podman
  become: true
  register: exporter_unit
"""

RETURN = r"""
dest:
  description: The unit's path, as M(ansible.builtin.copy) returns it (with its C(checksum), C(mode) and the rest).
  returned: success
  type: str
  sample: /etc/systemd/system/launchcard-gpu-exporter.service
"""
