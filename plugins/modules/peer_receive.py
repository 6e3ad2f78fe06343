#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: peer_receive
short_description: Prepare a host to receive a peer copy of a model's weights through a confined rsync daemon
version_added: 1.0.0
description:
  - An action plugin (the C(weights) role's peer copies). Computes on the controller the settings of the rsync
    daemon that receives the copy - one module, the repository's folder in O(hf_home), chrooted, write only, as
    root with numeric ids - and the C(authorized_keys) options of the copy's key (the daemon alone, nothing else
    runs), makes the repository's folder (M(ansible.builtin.file)), then writes the settings to O(conf), root
    only, with M(ansible.builtin.copy) (check mode and diff as copy's).
  - A path the shell or sshd would read otherwise (O(hf_home), O(conf)) fails the task before anything changes,
    naming which.
options:
  hf_home:
    description: The host's Hugging Face home (C(launchcard_weights_dir)); the cache is its C(hub/) folder.
    type: str
    required: true
  repo:
    description: The card's repository (C(owner/name)).
    type: str
    required: true
  conf:
    description: Where the daemon's settings go (the role removes them after the copy).
    type: str
    required: true
  address:
    description: The host's address as its source reaches it (an IPv6 address is bracketed in RV(dest)).
    type: str
    required: true
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
- name: Write the settings of the rsync daemon that receives the copy
  launchcard.inference.peer_receive:
    hf_home: /var/lib/launchcard/models
    repo: org/model
    conf: /run/launchcard-weights-receive.conf
    address: 198.18.11.12
  register: weights_peer_receiving
"""

RETURN = r"""
repo_dir:
  description: The repository's folder the copy writes into.
  returned: success
  type: str
key_options:
  description: The C(authorized_keys) options of the copy's key (its forced command runs the daemon alone).
  returned: success
  type: str
dest:
  description: Where the source sends - the daemon's module as an C(rsync://) URL over the key's SSH connection.
  returned: success
  type: str
"""
