# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory mistakes (docs/untrusted-input.md, "Inventory mistakes"): each is named at planning, on the
controller, before any host is contacted; none is ignored or silently changed.

The launch_card action runs in-process on the sandbox inventory written out as hostvars
(tests/unit/plugins/action/test_launch_card_action.py), its connection a mock that proves no host was contacted.
"""

from __future__ import annotations

from ansible_collections.launchcard.inference.tests.unit.plugins.action.test_launch_card_action import (
    action,
    assert_no_host_contacted,
    failure,
    task_vars,
)


def plan(tv, args=None):
    plugin, connection = action(args)
    result = plugin.run(task_vars=tv)
    assert_no_host_contacted(connection)
    return result


# --- an explicit port that collides --------------------------------------------------------------------------------
def test_an_overridden_port_that_collides_is_an_error_naming_the_override():
    tv = task_vars()
    tv["hostvars"]["lc-vllm"]["launchcard_recipes"] = ["vllm-aggregated", "sglang-aggregated"]
    tv["hostvars"]["lc-cp"]["launchcard_recipes"] = []
    vllm_port = plan(tv)["ansible_facts"]["launchcard_plan"]["hosts"]["lc-vllm"]["instances"][0]["port"]
    tv["hostvars"]["lc-vllm"]["launchcard_argv_overrides"] = {"sglang-aggregated": {"set": {"--port": vllm_port}}}
    message = failure(plan(tv))
    assert "lc-vllm: launchcard_argv_overrides['sglang-aggregated'].set['--port']: --port %d is taken on this host " \
           "by glm-5.3-flash-vllm-aggregated-0; an overridden port is not moved" % vllm_port in message


def test_a_card_port_that_collides_is_still_moved():
    tv = task_vars()
    tv["hostvars"]["lc-vllm"]["launchcard_recipes"] = ["sglang-aggregated", "sglang-aggregated"]
    tv["hostvars"]["lc-cp"]["launchcard_recipes"] = []
    first, second = plan(tv)["ansible_facts"]["launchcard_plan"]["hosts"]["lc-vllm"]["instances"]
    assert second["port"] == first["port"] + 1
