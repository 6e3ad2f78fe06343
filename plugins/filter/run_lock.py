# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the run lock (docs/operations.md, "Run lock"); the lock itself is plugins/module_utils/_lock.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.launchcard.inference.plugins.plugin_utils import _run_locks as run_locks

HOST_LOCK = run_locks.HOST_LOCK
FLEET_LOCK = run_locks.FLEET_LOCK


def run_lock_spec(run, host, plan, lock_dir="/var/lib/launchcard", break_stale=False, scope="host", defer=False):
    """The ``lock`` option of one host's preflight call, or of the fleet lock alone (see
    plugin_utils._run_locks.lock_spec)."""
    try:
        return run_locks.lock_spec(run, host, plan, lock_dir, break_stale, scope, defer)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.run_lock_spec: %s" % exc)


def run_lock_taken(hostvars, hosts, fleet=None, anchor=None, released=None, result="preflight_result", keep_fleet=False):
    """The locks this run holds (see plugin_utils._run_locks.taken)."""
    return run_locks.taken(hostvars, hosts, fleet, anchor, released, result, keep_fleet)


class FilterModule(object):
    """launchcard.inference run lock filters."""

    def filters(self):
        return {
            "run_lock_spec": run_lock_spec,
            "run_lock_taken": run_lock_taken,
        }
