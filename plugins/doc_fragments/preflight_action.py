# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    """The options of launchcard.inference.preflight that its action plugin reads on the controller (the module
    ignores them): plugins/action/preflight.py, whose CONTROLLER_SPEC they document."""

    DOCUMENTATION = r"""
options:
  image_vendors:
    description:
      - Read on the controller into O(needs) - the vendors of images whose name does not say it
        (C(launchcard_image_vendors), image -> vendor or list).
    type: dict
    default: {}
  native_packages:
    description:
      - Read on the controller into O(needs) - the native runtime's packages where the inventory sets them
        (C(launchcard_runtime_native_packages)); set, the C(native_install) check has no gap to report.
    type: raw
  native_lock:
    description:
      - Read on the controller into O(needs) - the native runtime's own lock where the inventory sets one
        (C(launchcard_runtime_native_lock)); set, the C(native_install) check has no gap to report.
    type: raw
  read_units:
    description:
      - On the controller - add to O(inspect) and O(users) what the units role's setup steps read (the weights
        directory, the readiness helper, under the native runtime the engines' user), and, unless O(recheck), fill
        O(units_reads) with what its converge would compare (C(playbooks/deploy.yml) sets it).
    type: bool
    default: false
  recheck:
    description:
      - On the controller - the check after the accelerator stack's install on a bare host (C(playbooks/deploy.yml));
        O(install_driver) is then V(false) and O(units_reads) is not filled.
    type: bool
    default: false
  take_lock:
    description:
      - On the controller - fill O(lock) with this host's run lock (and, on the fleet's anchor host, the fleet lock),
        held by this run (C(launchcard_run)); only on a host the plan places.
    type: bool
    default: false
  lock_defer:
    description: With O(take_lock) - the locks are only checked here, taken later where the run changes a host.
    type: bool
    default: false
  lock_dir:
    description: With O(take_lock) - the directory of the lock files on the hosts.
    type: path
    default: /var/lib/launchcard
  break_lock:
    description:
      - With O(take_lock) - replace a lock another run holds (a stale one; C(-e launchcard_lock_break=true)).
    type: bool
    default: false
  host_step:
    description:
      - With O(read_units), not O(recheck) - once the module returns on a host that passed every check, make on the
        controller the host step that M(launchcard.inference.settle_or_lock) makes, over the task's variables as the
        next task sees them (this result registered as C(preflight_result)), and return it as RV(host_step).
      - Keys C(image_refs) (the images resolved for the fleet, standing for C(runtime_image_refs) where the play has
        not pinned them yet), C(host_plan), C(stack_roles) and C(install_stack), as M(launchcard.inference.settle_or_lock)
        takes them (C(playbooks/deploy.yml) sets them).
    type: dict
  from_role:
    description:
      - On the controller - read every option the task does not give from the variables of the role
        C(launchcard.inference.preflight) (O(weights_dir) from C(preflight_weights_dir), O(read_units) from
        C(preflight_units), O(take_lock) from C(preflight_lock), O(break_lock) from C(preflight_lock_break),
        O(image_sizes) from C(preflight_images.image_sizes),
        the others from C(preflight_<option>)), each rendered once; the role's task sets it.
    type: bool
    default: false
"""
