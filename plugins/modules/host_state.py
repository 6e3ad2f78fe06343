#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_state
short_description: Read or write the host's record of what it runs, for upgrades and rollback
version_added: 1.0.0
description:
  - The record (a JSON file, default C(/var/lib/launchcard/state.json)) names the card (sha256 of the loaded
    card, Hugging Face repo and revision; not where the controller read it), the plan instances, every launchcard unit file (text and
    sha256, read from the host itself), the runtime, and the record it replaced (C(previous)).
  - O(state=read) returns the record. A host deployed before records existed has none; then the record is
    made up from its unit files (C(source=unit-files)), so an upgrade can still roll it back.
  - O(state=present) writes the record for what the host runs now (its unit files as they are on disk),
    keeping the replaced record as C(previous). Nothing is written when the running state is the same
    (idempotent).
  - Unit files hold no secret (the Hugging Face token lives in a separate environment file), so the record
    is safe to print.
options:
  state:
    description: C(read) the record, or write it (C(present)).
    type: str
    choices: [read, present]
    default: read
  path:
    description: The record file.
    type: path
    default: /var/lib/launchcard/state.json
  directory:
    description: Where the unit files are.
    type: path
    default: /etc/systemd/system
  quadlet_directory:
    description: Where the Quadlet C(.container) files are (podman >= 4.4), recorded beside the unit files.
    type: path
    default: /etc/containers/systemd
  prefix:
    description: Name prefix of the collection's unit files.
    type: str
    default: launchcard-
  card:
    description:
      - "O(state=present) - the card the host serves, C({sha256, repo, revision}) (the planning step's
        C(launchcard_record_cards), see M(launchcard.inference.launch_card))."
    type: dict
    default: {}
  instances:
    description:
      - O(state=present) - the plan instances of this host (C(launchcard_plan.hosts[inventory_hostname].instances)).
    type: list
    elements: dict
    default: []
  runtime:
    description:
      - "O(state=present) - what runs the engines, for example C({kind: native, packages: [...], image_refs: {}})."
    type: dict
    default: {}
  runtime_role:
    description:
      - Handled on the controller by the action plugin of the same name, never sent to the host. True - the runtime
        role's decisions for the host (M(launchcard.inference.runtime_settings)), read from the play's variables
        (the role's defaults, which C(playbooks/deploy.yml) and C(upgrade.yml) import) - with O(state=present) and
        O(runtime) unset, O(runtime) is the runtime the role applies (its kind, native packages, pinned images and
        container setup digest); with O(state=read), RV(runtime_needed) says whether the role has anything to do.
    type: bool
    default: false
  release_lock:
    description:
      - "Release this run's run locks in the same call, after the record is written: C({run_id, paths: [{path,
        scope}]}) (see M(launchcard.inference.run_lock)). A lock held by another run is left in place and
        reported in RV(lock). Unset: no lock is touched."
      - The playbooks pass it on the call that records a host at the end of its run, so releasing costs no round trip.
    type: dict
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes
attributes:
  diff_mode:
    support: full
    details: With O(state=present), the record when it changes (or would), without its C(previous).
"""

EXAMPLES = r"""
- name: Read what the host runs
  launchcard.inference.host_state:
  register: state

- name: Record what the host runs now
  launchcard.inference.host_state:
    state: present
    card: {sha256: 0f1e..., repo: org/model, revision: 46a050bec13002ad29ee795c16e61cf4fa3c4a9c}
    instances: "{{ launchcard_plan.hosts[inventory_hostname].instances }}"
    runtime: {kind: native}
"""

RETURN = r"""
record:
  description:
    - The record (after the write with O(state=present)); C(null) when the host has neither a record nor a unit file.
    - Keys C(version), C(card), C(instances), C(units) (name -> C({sha256, text})), C(runtime), C(previous);
      C(source=unit-files) when it was made up from the unit files.
  returned: always
  type: dict
drift:
  description: Unit files whose text on disk differs from the record (or that the record does not name), with O(state=read).
  returned: always
  type: list
  elements: str
runtime_needed:
  description: With O(runtime_role) and O(state=read) - whether the runtime role has anything to do on the host.
  returned: with O(runtime_role) and O(state=read)
  type: bool
lock:
  description:
    - With O(release_lock) - C(released) (the paths this run held and released), C(held_by) (C(<path> held by
      <holder>) for each lock another run holds, left in place). Null without O(release_lock).
  returned: always
  type: dict
  sample: {released: [/var/lib/launchcard/lock.json], held_by: []}
"""

import json

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.launchcard.inference.plugins.module_utils import _lock
from ansible_collections.launchcard.inference.plugins.module_utils import _state as state


def _release(module, spec):
    """Release this run's locks (``release_lock``); the lock files are bookkeeping, not a change of the host."""
    try:
        return _lock.release_all(spec, check_mode=module.check_mode)
    except (ValueError, _lock.LockError) as exc:
        module.fail_json(msg="release_lock: %s" % exc)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["read", "present"], default="read"),
            path=dict(type="path", default=state.RECORD_PATH),
            directory=dict(type="path", default="/etc/systemd/system"),
            quadlet_directory=dict(type="path", default="/etc/containers/systemd"),
            prefix=dict(type="str", default="launchcard-"),
            card=dict(type="dict", default={}),
            instances=dict(type="list", elements="dict", default=[]),
            runtime=dict(type="dict", default={}),
            release_lock=dict(type="dict"),
            # the action plugin's (never reaches the host): documented with the module
            runtime_role=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["state"] == "read":
        units = state.unit_files(p["directory"], p["prefix"], p["quadlet_directory"])
        existing, problem = state.read(p["path"])
        if problem:
            module.warn("%s; reading the unit files instead" % problem)
        record = existing or (state.from_unit_files(units) if units else None)
        recorded = (record or {}).get("units") or {}
        drift = sorted(n for n in set(units) | set(recorded)
                       if (recorded.get(n) or {}).get("text") != units.get(n))
        module.exit_json(changed=False, record=record, drift=drift, lock=_release(module, p["release_lock"]))
    try:
        changed, record, problem = state.write_present(p["path"], p["directory"], p["prefix"], p["card"], p["instances"],
                                                       p["runtime"], module.check_mode, module.atomic_move,
                                                       p["quadlet_directory"])
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot write %s: %s" % (p["path"], exc))
    if problem:
        module.warn("%s; replaced" % problem)
    more = {"diff": state.record_diff(record, p["path"])} if changed and module._diff else {}
    module.exit_json(changed=changed, record=json.loads(json.dumps(record)), drift=[],
                     lock=_release(module, p["release_lock"]), **more)


if __name__ == "__main__":
    main()
