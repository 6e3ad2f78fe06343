#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_lock
short_description: Take or release the run lock of a fleet on one host
version_added: 1.0.0
description:
  - The run lock keeps two runs of C(deploy.yml), C(upgrade.yml) or C(undeploy.yml) from changing one fleet at
    the same time. Each lock is a JSON file naming its holder (run id, user, controller host, playbook, card
    checksum, since when in UTC); see C(plugins/module_utils/_lock.py) for the format.
  - Every host a run changes holds a host lock (C(/var/lib/launchcard/lock.json)); the fleet's anchor host (the
    first host of the plan in sorted order) also holds the fleet lock (C(/var/lib/launchcard/fleet-lock.json)),
    so two runs on disjoint C(--limit) subsets of one fleet conflict too.
  - C(upgrade.yml) takes the locks in the M(launchcard.inference.preflight) call; C(deploy.yml) checks them there
    and takes them with this module after preflight, only where it changes a host (the host lock there, the fleet
    lock on the anchor when any host changes). Each host releases them in the call that records what it runs;
    this module also takes and releases them where no such call runs (the anchor outside C(--limit),
    C(undeploy.yml), a run that stops early).
  - O(state=present) takes each lock in O(paths) for O(holder); the same run taking it again changes nothing.
    A lock held by another run is refused (the module fails naming the holder), unless O(break_stale) is set;
    then it is replaced and the broken holder reported.
  - O(state=absent) releases each lock in O(paths) that the run C(holder.run_id) holds; a lock held by another
    run is left in place and reported.
  - The lock files are the run's own bookkeeping, taken and released within one run, so the module reports
    C(changed=false) (a no-op run stays C(changed=0)).
options:
  state:
    description: C(present) takes the locks, C(absent) releases this run's.
    type: str
    choices: [present, absent]
    default: present
  paths:
    description:
      - The lock files, each C({path, scope}); C(scope) is C(host) or C(fleet) (recorded in the lock).
      - Required without O(run), which finds them.
    type: list
    elements: dict
  holder:
    description:
      - "This run: C({run_id, user, controller, playbook, card}). O(state=absent) needs only C(run_id)."
      - Required without O(run), which finds it.
    type: dict
  run:
    description:
      - C(launchcard_run) (the plan role sets it). Given, the lock files and the holder are found on the
        controller instead of O(paths) and O(holder) - the host lock C(O(lock_dir)/lock.json) of this host (and
        the fleet lock C(O(lock_dir)/fleet-lock.json) where it is the run's anchor, the plan's first host in sorted
        order), or, with O(scope=fleet), the fleet lock alone; the holder names the run and the host's card
        (every card of the run for the fleet lock).
      - Read by the action plugin on the controller; the host is sent the paths and the holder, never the plan.
    type: dict
    version_added: 1.0.0
  plan:
    description:
      - With O(run) - C(launchcard_plan), for the host's card in the holder; default the play's C(launchcard_plan).
    type: dict
    version_added: 1.0.0
  scope:
    description: With O(run) - C(host) (this host's locks) or C(fleet) (the fleet lock alone).
    type: str
    choices: [host, fleet]
    default: host
    version_added: 1.0.0
  lock_dir:
    description: With O(run) - the directory of the lock files (C(launchcard_lock_dir)).
    type: str
    default: /var/lib/launchcard
    version_added: 1.0.0
  break_stale:
    description:
      - Replace a lock held by another run (a stale one, left by a killed run). Only on request
        (C(-e launchcard_lock_break=true)); the broken holder is returned and warned about.
    type: bool
    default: false
  fail_msg:
    description:
      - Fail with this message after the locks are taken or released (a playbook that stops its run here releases
        first, then says why).
    type: str
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes
attributes:
  check_mode:
    support: full
    details: Nothing is written; a lock held by another run is reported as a warning, not a failure.
  diff_mode:
    support: N/A
    details: The lock files are the run's bookkeeping, taken and released within one run; nothing to diff.
"""

EXAMPLES = r"""
- name: Take the fleet lock on the anchor host
  launchcard.inference.run_lock:
    paths: [{path: /var/lib/launchcard/fleet-lock.json, scope: fleet}]
    holder:
      run_id: "{{ launchcard_run.id }}"
      user: "{{ launchcard_run.user }}"
      controller: "{{ launchcard_run.controller }}"
      playbook: "{{ launchcard_run.playbook }}"
      card: "{{ launchcard_run.cards.values() | join(',') }}"
  delegate_to: "{{ launchcard_run.anchor }}"
  run_once: true

- name: Take this host's locks, found from the run and the plan
  launchcard.inference.run_lock:
    run: "{{ launchcard_run }}"
    break_stale: "{{ launchcard_lock_break | default(false) | bool }}"

- name: Release this run's host lock
  launchcard.inference.run_lock:
    state: absent
    paths: [{path: /var/lib/launchcard/lock.json, scope: host}]
    holder: {run_id: "{{ launchcard_run.id }}"}
"""

RETURN = r"""
locks:
  description:
    - One result per lock in O(paths), C({path, acquired, reentrant, broken, held_by, holder}) with
      O(state=present), C({path, released, held_by}) with O(state=absent). C(held_by) and C(broken) are holders
      (dicts) of another run, or null.
  returned: always
  type: list
  elements: dict
held_by:
  description: C(<path> held by <holder>) for each lock another run holds (a refusal with O(state=present)).
  returned: always
  type: list
  elements: str
  sample: ["/var/lib/launchcard/lock.json held by alice@ops-1, upgrade.yml, run 20261130T130055Z-1a2b3c4d, card
    sha256:0f1e2d3c4b5a, since 2026-11-30 13:00:56 UTC"]
broken:
  description: C(<path> held by <holder>) for each stale lock broken on request.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.launchcard.inference.plugins.module_utils import _lock as lock


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["present", "absent"], default="present"),
            paths=dict(type="list", elements="dict"),
            holder=dict(type="dict"),
            break_stale=dict(type="bool", default=False),
            fail_msg=dict(type="str"),
            # read by the action plugin (plugins/action/run_lock.py), which sends paths and holder instead
            run=dict(type="dict"),
            plan=dict(type="dict"),
            scope=dict(type="str", choices=["host", "fleet"], default="host"),
            lock_dir=dict(type="str", default="/var/lib/launchcard"),
        ),
        required_one_of=[("run", "paths")],
        required_together=[("paths", "holder")],
        mutually_exclusive=[("run", "paths"), ("run", "holder")],
        supports_check_mode=True,
    )
    p = module.params
    if p["paths"] is None:
        module.fail_json(msg="run: the locks of a run are found on the controller, by the action plugin of this module")
    try:
        results, held, broken, dummy = lock.apply_all(p["state"], p["paths"], p["holder"], p["break_stale"], module.check_mode)
    except (ValueError, lock.LockError) as exc:
        module.fail_json(msg="run lock: %s" % exc)
    for line in broken:
        module.warn("run lock broken on request: %s" % line)
    # The locks are the run's own bookkeeping, taken and released within the run: not a change of the host.
    out = dict(changed=False, locks=results, held_by=held, broken=broken)
    if p["state"] == "present" and held and not module.check_mode:
        module.fail_json(msg=lock.refusal([(None, r["path"], r["held_by"]) for r in results if r["held_by"]]), **out)
    if p["state"] == "present" and held:
        for line in held:
            module.warn("run lock: %s (check mode: nothing is changed, a real run would be refused)" % line)
    if p["fail_msg"]:
        module.fail_json(msg=p["fail_msg"], **out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
