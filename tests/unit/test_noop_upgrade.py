# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A no-op upgrade.yml skips the runtime and weights roles as a no-op deploy.yml does (issue 27).

Whether the runtime role has anything to do is its decision in Python (plugin_utils/_runtime_host.py), over the role's
defaults and what each playbook passes it of the preflight call, both rendered by Ansible's own templar; upgrade.yml's
``upgrade_setup_parts``, the one list its setup loop includes, is rendered here (Jinja's native types) from the fleet
step's lists (plugin_utils/_upgrade_fleet.py) and that decision, as host_state's action returns it.
The e2e case: tests/e2e/test_upgrade_sandbox.py ``test_rerun_changes_nothing``.
"""

from __future__ import annotations

import os

import pytest
import yaml
from jinja2 import pass_context
from jinja2.nativetypes import NativeEnvironment

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.launchcard.inference.plugins.lookup import host_entry
from ansible_collections.launchcard.inference.plugins.plugin_utils._runtime_host import RuntimeHost
from ansible_collections.launchcard.inference.plugins.plugin_utils._upgrade_fleet import host_data

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINE_HOST = {"instances": [{"role": "aggregated", "unit": "launchcard-x.service", "engine": "vllm",
                              "image": "docker.io/vllm/vllm-openai:v0.32.0"}]}
# the preflight call's read of a host that runs what this run would apply (its digest and stamp: _noop below)
NOOP = {"stack_vendor": "none", "weights_staged": True}

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


def _trusted(value):
    """A value as Ansible loads it from the collection's YAML: its strings are templates it may render."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return dict((k, _trusted(v)) for k, v in value.items())
    return [_trusted(v) for v in value] if isinstance(value, list) else value


def _runtime(playbook, kind, preflight):
    """The runtime role's decisions on one host, its defaults under ``playbook``'s play variables (which outrank
    them), rendered by Ansible's templar as the action plugins render them."""
    variables = _trusted(_load("roles/runtime/defaults/main.yml"))
    variables.update(_trusted(_play_vars(playbook)))
    plan = {"hosts": {"h": ENGINE_HOST}}
    variables.update(launchcard_plan=plan, inventory_hostname="h", preflight_result=preflight, runtime_kind=kind,
                     hostvars={"h": {"launchcard_plan": plan, "preflight_result": preflight}},
                     # the pinned images (tasks/pin-images.yml): the host's one image by digest
                     runtime_host_images=["docker.io/vllm/vllm-openai@sha256:" + "a" * 64])
    return RuntimeHost(Templar(loader=DataLoader(), variables=variables), variables)


def _noop(kind):
    """NOOP with the digest and stamp this run applies, as a host that runs it has them in its record and venv."""
    here = _runtime("playbooks/deploy.yml", kind, {})
    return dict(NOOP, recorded_runtime_setup=here.setup_digest(), native_stamps=[".launchcard-" + here.native_stamp()])


@pytest.mark.parametrize("playbook", ["playbooks/deploy.yml", "playbooks/upgrade.yml"])
@pytest.mark.parametrize("kind", ["docker", "podman", "native"])
def test_a_host_that_runs_this_runs_setup_needs_no_runtime_step(playbook, kind):
    assert _runtime(playbook, kind, _noop(kind)).needed() is False


@pytest.mark.parametrize("playbook", ["playbooks/deploy.yml", "playbooks/upgrade.yml"])
@pytest.mark.parametrize("kind, differs", [
    ("docker", {"recorded_runtime_setup": "0" * 40}),  # a new image digest, mirror, engine package...
    ("podman", {"recorded_runtime_setup": None}),  # no record, or an image it names gone from the store
    ("native", {"native_stamps": []}),  # other requirements
    ("docker", None),  # preflight did not run
])
def test_a_host_whose_runtime_differs_runs_it(playbook, kind, differs):
    preflight = {} if differs is None else dict(_noop(kind), **differs)
    assert _runtime(playbook, kind, preflight).needed() is True


@pytest.mark.parametrize("differs, expected", [
    ({}, []),
    ({"weights_staged": False}, ["weights"]),  # a new revision: staged before any engine stops
    ({"recorded_runtime_setup": "0" * 40}, ["runtime"]),
    (None, ["weights", "runtime"]),
])
def test_a_no_op_upgrade_includes_neither_the_runtime_nor_the_weights(differs, expected):
    preflight = {} if differs is None else dict(_noop("docker"), **differs)
    play = _play_vars("playbooks/upgrade.yml")
    # what the read of each host's record returns (host_state's action, runtime_role: true)
    variables = {"upgrade_current": {"runtime_needed": _runtime("playbooks/upgrade.yml", "docker", preflight).needed()},
                 "inventory_hostname": "h"}
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
