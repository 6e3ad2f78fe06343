# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_play_vars.registered: a host's variables as its later tasks see them once a result is registered, in the task's
variables, in its hostvars entry and in the templar, the other hosts' left as they are."""

from __future__ import annotations

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.launchcard.inference.plugins.plugin_utils import _play_vars as play_vars


def test_a_registered_result_is_seen_by_templates_by_hostvars_and_by_the_variables():
    hostvars = {"a": {"x": 1}, "b": {"x": 2}}
    task_vars = {"inventory_hostname": "a", "hostvars": hostvars, "found": trust_as_template("{{ step_result.units | default('none') }}")}
    templar, variables = play_vars.registered(Templar(loader=DataLoader(), variables=task_vars), task_vars,
                                              {"step_result": {"units": "read"}})
    assert variables["step_result"] == {"units": "read"} and "step_result" not in task_vars
    assert play_vars.variable(templar, variables, "found") == "read"
    # before: the original templar does not see it
    assert play_vars.variable(Templar(loader=DataLoader(), variables=task_vars), task_vars, "found") == "none"
    seen = variables["hostvars"]
    assert seen["a"]["step_result"] == {"units": "read"} and seen["a"]["x"] == 1
    assert seen["b"] == {"x": 2} and "step_result" not in seen["b"]
    assert sorted(seen) == ["a", "b"] and len(seen) == 2 and "a" in seen and "c" not in seen
    assert "step_result" not in hostvars["a"]


def test_the_host_need_not_be_in_hostvars_yet():
    task_vars = {"inventory_hostname": "new", "hostvars": {}}
    dummy, variables = play_vars.registered(Templar(loader=DataLoader(), variables=task_vars), task_vars, {"r": 1})
    assert variables["hostvars"]["new"]["r"] == 1 and "new" in variables["hostvars"]


class _HostVars(dict):
    """Ansible's HostVars as far as results() uses it: raw_get gives a host's variables as stored; reading an item
    would template it (counted here)."""

    templated = 0

    def raw_get(self, host):
        return dict.__getitem__(self, host)

    def __getitem__(self, host):
        _HostVars.templated += 1
        return dict.__getitem__(self, host)


def test_results_are_read_as_stored_once_per_host_and_copied():
    store = {"a": {"preflight_result": {"lock": {"locks": [1]}}, "other": "{{ x }}"}, "b": {"unrelated": 1}}
    hostvars = _HostVars(store)
    found = play_vars.results(hostvars, ["a", "b", "gone"], ["preflight_result"])
    assert found == {"a": {"preflight_result": {"lock": {"locks": [1]}}}, "b": {}}
    assert _HostVars.templated == 0
    found["a"]["preflight_result"]["lock"]["locks"].append(2)
    assert store["a"]["preflight_result"]["lock"]["locks"] == [1]
    # a plain mapping (unit tests, other callers) is read by item
    assert play_vars.results(dict(store), ["a"], ["other"]) == {"a": {"other": "{{ x }}"}}
