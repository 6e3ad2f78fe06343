#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: runtime_settings
short_description: What the runtime role installs and applies on a host, and whether it has anything to do
version_added: 1.0.0
description:
  - An action plugin, the first task of the C(launchcard.inference.runtime) role; takes no option. Decides on the
    controller, from the role's variables and the host's, what the role's steps do on the host, and returns it.
  - C(native) - what goes into the virtualenv - the role's C(runtime_native_packages) (with
    C(runtime_native_pip_extra_args)) where the play sets them, else C(launchcard_runtime_native_packages) (with
    C(launchcard_runtime_native_pip_extra_args)), else a hash-pinned lock (C(launchcard_runtime_native_lock), or the
    collection's lock for the host's accelerator vendor and what its plan runs) installed with C(--require-hashes)
    from the lock's one index or C(launchcard_runtime_native_index_url); and the requirements stamp, named after all
    of it, that records the install.
  - C(docker)/C(podman) - a digest of everything the container steps apply (the engine and its package, the registry
    mirrors, the keyring and configuration folder, the pinned images, and with registry credentials their salted
    PBKDF2 digest and the auth file's path, never the password), which the host's record keeps.
  - The steps have something to do (RV(needed)) where the plan gives the host something and the stamp is not among
    those the preflight call listed (C(runtime_native_stamps_found)), or the digest is not the one the host's record
    names (C(runtime_setup_recorded)); when neither was read, they run.
  - Contacts no host.
options: {}
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes.controller
  - launchcard.inference.attributes.action
  - launchcard.inference.attributes.read_only
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
seealso:
  - module: launchcard.inference.host_state
  - module: launchcard.inference.settle_or_lock
"""

EXAMPLES = r"""
- name: Decide what the runtime steps do on this host
  launchcard.inference.runtime_settings:
  register: runtime_settings

- name: Install the engines into the native virtualenv
  ansible.builtin.pip:
    name: "{{ runtime_settings.native.packages }}"
    virtualenv: /opt/launchcard/venv
    extra_args: "{{ runtime_settings.native.pip_args or omit }}"
  when: runtime_settings.needed and runtime_settings.native is defined
"""

RETURN = r"""
kind:
  description: How the host's engines run - C(docker), C(podman) or C(native).
  returned: success
  type: str
needed:
  description: Whether the role's steps have anything to do on the host.
  returned: success
  type: bool
native:
  description:
    - On a native host - C(packages) (what pip installs, the lock's pins with a lock), C(pip_args), C(lock)
      (C({name, text, sha256}), null for the operator's own list), C(stamp) (the requirements stamp, file
      C(.launchcard-<stamp>) in the virtualenv) and C(installed) (whether the preflight call listed the stamp; null
      when it listed none).
  returned: on a native host
  type: dict
setup:
  description: The container steps' digest (40 hex digits); null on a native host.
  returned: success
  type: str
record:
  description: The runtime the host's record names - C(kind), C(packages), C(image_refs), C(setup).
  returned: success
  type: dict
"""
