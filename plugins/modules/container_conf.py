#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: container_conf
short_description: Write a host's container engine settings - registry mirrors, podman's keyring, registry credentials
version_added: 1.0.0
description:
  - An action plugin (the runtime role's container steps). It computes each file on the controller and writes it
    with M(ansible.builtin.copy), so check mode and C(--diff) report exactly what copy would.
  - O(part=settings), O(runtime=docker) with O(mirrors) - reads C(/etc/docker/daemon.json) (M(ansible.builtin.slurp))
    and writes it back with the Docker Hub mirrors in C(registry-mirrors) (a plain-HTTP one also in
    C(insecure-registries)), every other key kept. Docker mirrors Docker Hub only; a mirror of another registry
    fails the task.
  - O(part=settings), O(runtime=podman) - with O(mirrors), the C(registries.conf.d/50-launchcard-mirrors.conf) drop-in
    (containers-registries.conf(5)) under O(conf_dir); with O(keyring=false), the C(containers.conf.d/50-launchcard.conf)
    drop-in (containers.conf(5) C([containers] keyring = false)), its folder made first.
  - O(part=settings) also returns RV(pull_groups), the host's O(images) by registry with the most hosts that pull
    from each at once.
  - O(part=auth), O(runtime=podman) - the root-only auth file O(auth_file) (containers-auth.json(5)) holding each key
    of O(credentials) with its own credentials only, its folder made first (mode C(0700)); without credentials the
    file is removed. Credentials for a plain-HTTP mirror host not in O(credentials_plain_http) fail the task,
    naming the host, never a password. Run it with C(no_log) - the copy's diff would show the file. O(runtime=docker)
    changes nothing (the runtime role logs docker in with M(community.docker.docker_login)).
  - Errors name the variable (C(launchcard_registry_mirrors), C(launchcard_registry_credentials),
    C(launchcard_image_pull_concurrency)); nothing is written before the contents are known to be valid, but for
    C(daemon.json), whose content depends on the file read.
options:
  part:
    description: Which files - the mirrors and keyring settings, or the registry auth file.
    type: str
    choices: [settings, auth]
    default: settings
  runtime:
    description: The container engine (C(launchcard_runtime)).
    type: str
    required: true
    choices: [docker, podman]
  mirrors:
    description: C(launchcard_registry_mirrors) - registry to a list of mirrors, each a URL or C({location, insecure}).
    type: dict
    default: {}
  keyring:
    description: C(launchcard_podman_keyring); false writes the drop-in that turns the per-container keyring off.
    type: bool
    default: true
  conf_dir:
    description: podman's configuration folder.
    type: path
    default: /etc/containers
  images:
    description: The references the host pulls (pinned or not), grouped into RV(pull_groups).
    type: list
    elements: str
    default: []
  pull_concurrency:
    description:
      - C(launchcard_image_pull_concurrency) - the most hosts that pull from one registry at once, a whole number for
        every registry, or a mapping of registry to number (a registry not named - no bound); 0 - no bound.
    type: raw
    default: 0
  credentials:
    description: C(launchcard_registry_credentials) - registry or mirror host to C({username, password}); never shown.
    type: dict
    default: {}
  credentials_plain_http:
    description: C(launchcard_registry_credentials_plain_http) - the plain-HTTP hosts (C(HOST[:PORT])) credentials may go to.
    type: list
    elements: str
    default: []
  auth_file:
    description: Where podman's auth file goes (the units name it with C(--authfile)).
    type: path
    default: /etc/launchcard/registry-auth.json
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes.action
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  diff_mode:
    support: full
"""

EXAMPLES = r"""
- name: Name the registry mirrors and turn podman's per-container keyring off
  launchcard.inference.container_conf:
    runtime: podman
    mirrors:
      docker.io: [{location: mirror.example.com, insecure: false}]
    keyring: false
    images: [docker.io/vllm/vllm-openai@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef]
  register: runtime_container_conf

- name: Write the registry auth file
  launchcard.inference.container_conf:
    part: auth
    runtime: podman
    credentials: "{{ launchcard_registry_credentials }}"
  no_log: true
"""

RETURN = r"""
changed:
  description: Whether any file changed (or would, in check mode).
  returned: always
  type: bool
diff:
  description: Each written file's diff, as M(ansible.builtin.copy) gives it (one file - its diff alone).
  returned: with --diff, when a file was written
  type: raw
pull_groups:
  description: Registry to C({images, throttle}) - the host's images by registry and the most hosts that pull from it
    at once (0 - no bound).
  returned: O(part=settings)
  type: dict
daemon_changed:
  description: Whether C(/etc/docker/daemon.json) changed (the Docker daemon reloads its mirrors).
  returned: O(part=settings)
  type: bool
"""
