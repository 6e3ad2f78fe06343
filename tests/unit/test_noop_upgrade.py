# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A no-op upgrade.yml skips the runtime and weights roles as a no-op deploy.yml does (issue 27).

The playbooks' own expressions are rendered here (Jinja's native types, the collection's filters by name): the
runtime role's ``runtime_needed`` from what each playbook passes it of the preflight call, and upgrade.yml's
``upgrade_setup_parts``, the one list its setup loop includes, from the fleet step's lists
(plugin_utils/_upgrade_fleet.py). The e2e case: tests/e2e/test_upgrade_sandbox.py ``test_rerun_changes_nothing``.
"""

from __future__ import annotations

import os

import pytest
import yaml
from jinja2 import pass_context
from jinja2.nativetypes import NativeEnvironment

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.launchcard.inference.plugins.lookup import host_entry
from ansible_collections.launchcard.inference.plugins.plugin_utils._upgrade_fleet import host_data

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIGEST, STAMP = "3f786850e387550fdab836ed7e6dc881de23001b", "5f0c2d1e9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d"
ENGINE_HOST = {"instances": [{"role": "aggregated", "unit": "launchcard-x.service"}]}
# the preflight call's read of a host that runs what this run would apply
NOOP = {"stack_vendor": "none", "weights_staged": True, "recorded_runtime_setup": DIGEST,
        "native_stamps": [".launchcard-" + STAMP]}

ENV = NativeEnvironment()
ENV.filters["bool"] = lambda value: boolean(value, strict=False)


@pass_context
def _lookup(context, name, *terms, **options):
    """The one lookup these variables call, the collection's own, over the variables rendered so far."""
    assert name == "launchcard.inference.host_entry", name
    return host_entry.LookupModule().run(list(terms), dict(context.get_all()), **options)[0]


ENV.globals["lookup"] = _lookup


def _load(path):
    with open(os.path.join(ROOT, path)) as f:
        return yaml.safe_load(f)


def _play_vars(playbook):
    """The play's variables as Ansible ranks them: its vars, its vars files' (relative to the playbook), then the
    vars of the roles it lists (playbooks/roles/play_*)."""
    play = _load(playbook)[0]
    variables = dict(play.get("vars") or {})
    for path in play.get("vars_files", []):
        variables.update(_load(os.path.join(os.path.dirname(playbook), path)))
    for role in play.get("roles", []):
        variables.update(_load(os.path.join(os.path.dirname(playbook), "roles", role, "vars", "main.yml")))
    return variables


def _render(expr, variables):
    return ENV.from_string(expr).render(**variables) if isinstance(expr, str) else expr


def _tasks(tasks):
    for task in tasks or []:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key))


def _runtime_vars(playbook, kind, preflight):
    """The runtime role's defaults under ``playbook``'s play variables (which outrank them), rendered for one host."""
    defaults, play = _load("roles/runtime/defaults/main.yml"), _play_vars(playbook)
    variables = {"launchcard_plan": {"hosts": {"h": ENGINE_HOST}}, "inventory_hostname": "h",
                 "preflight_result": preflight,
                 "runtime_kind": kind, "runtime_native_stamp": STAMP, "runtime_setup_digest": DIGEST,
                 "ansible_run_tags": ["all"], "ansible_skip_tags": [],
                 # native.yml's stat, where no stamps were read: none there
                 "runtime_native_stamp_stat": {"stat": {"exists": False}}}
    variables["launchcard_host_plan"] = _render(play["launchcard_host_plan"], variables)
    for name in ("runtime_host_plan", "runtime_native_stamps_found", "runtime_setup_recorded", "runtime_native_installed", "runtime_needed"):
        variables[name] = _render(play.get(name, defaults[name]), variables)
    return variables, play


@pytest.mark.parametrize("playbook", ["playbooks/deploy.yml", "playbooks/upgrade.yml"])
@pytest.mark.parametrize("kind", ["docker", "podman", "native"])
def test_a_host_that_runs_this_runs_setup_needs_no_runtime_step(playbook, kind):
    variables, dummy = _runtime_vars(playbook, kind, NOOP)
    assert variables["runtime_needed"] is False


@pytest.mark.parametrize("playbook", ["playbooks/deploy.yml", "playbooks/upgrade.yml"])
@pytest.mark.parametrize("kind, preflight", [
    ("docker", dict(NOOP, recorded_runtime_setup="0" * 40)),  # a new image digest, mirror, engine package...
    ("podman", dict(NOOP, recorded_runtime_setup=None)),  # no record, or an image it names gone from the store
    ("native", dict(NOOP, native_stamps=[])),  # other requirements
    ("docker", {}),  # preflight did not run
])
def test_a_host_whose_runtime_differs_runs_it(playbook, kind, preflight):
    variables, dummy = _runtime_vars(playbook, kind, preflight)
    assert variables["runtime_needed"] is True


@pytest.mark.parametrize("preflight, expected", [
    (NOOP, []),
    (dict(NOOP, weights_staged=False), ["weights"]),  # a new revision: staged before any engine stops
    (dict(NOOP, recorded_runtime_setup="0" * 40), ["runtime"]),
    ({}, ["weights", "runtime"]),
])
def test_a_no_op_upgrade_includes_neither_the_runtime_nor_the_weights(preflight, expected):
    variables, play = _runtime_vars("playbooks/upgrade.yml", "docker", preflight)
    # the fleet step's share for this host (upgrade_fleet registered, run once), from its preflight call
    cards = {"c": {"model": {"repo": "org/model", "revision": "1" * 40}}}
    step = host_data({"hosts": {"h": dict(ENGINE_HOST, card="c")}}, cards, {"h": {"preflight_result": preflight}}, "h",
                     {"hosts": {}, "unchanged": []}, None, False)
    variables["upgrade_fleet"] = {"hosts": {"h": step}}
    assert _render(play["upgrade_setup_parts"], variables) == expected
    # and the upgrade reaches the two roles through that list only (the runtime's and the units' settings carry no task)
    roles = [(t.get("ansible.builtin.import_role") or t.get("ansible.builtin.include_role"), t.get("loop"))
             for t in _tasks(_load("playbooks/upgrade.yml")[0]["tasks"])
             if "ansible.builtin.import_role" in t or "ansible.builtin.include_role" in t]
    reached = [(r["name"], r.get("tasks_from"), loop) for r, loop in roles
               if r["name"] not in ("launchcard.inference.preflight",)]
    assert reached == [("launchcard.inference.runtime", "settings", None), ("launchcard.inference.units", "settings", None),
                       ("launchcard.inference.{{ upgrade_setup_part }}", None, "{{ upgrade_setup_parts }}")]
    for role in ("runtime", "units"):
        assert _load("roles/%s/tasks/settings.yml" % role) == []
