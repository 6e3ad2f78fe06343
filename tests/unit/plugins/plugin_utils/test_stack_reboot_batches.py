# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stack reboots in batches (issue 12, item 6): never every host at once."""

from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.launchcard.inference.plugins.plugin_utils._rollout import RolloutError, reboot_batches

HOSTS = ["g1", "g2", "g3", "g4", "g5"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def test_one_host_at_a_time_by_default_in_play_order():
    wanted = {"g1": True, "g2": False, "g3": True, "g5": True}
    assert reboot_batches(HOSTS, wanted) == [["g1"], ["g3"], ["g5"]]


@pytest.mark.parametrize("serial, batches", [
    (2, [["g1", "g2"], ["g3", "g4"], ["g5"]]),
    ("3", [["g1", "g2", "g3"], ["g4", "g5"]]),
    (5, [HOSTS]),
])
def test_batch_size(serial, batches):
    out = reboot_batches(HOSTS, dict.fromkeys(HOSTS, True), serial)
    assert out == batches
    assert sum(out, []) == HOSTS  # each host once


def test_nothing_to_reboot():
    assert reboot_batches(HOSTS, {}) == []


@pytest.mark.parametrize("serial", [0, -1, "two", "1.5", True, None, "25%"])
def test_a_bad_serial_names_the_variable(serial):
    with pytest.raises(RolloutError, match=r"^launchcard_stack_reboot_serial must be an integer >= 1, found"):
        reboot_batches(HOSTS, {"g1": True}, serial)


def test_the_role_reboots_only_through_the_batches():
    """The reboot task lives in the batch file, which only the batch's hosts run, one batch after another."""
    tasks = os.path.join(ROOT, "roles", "stack_reboot", "tasks")
    with open(os.path.join(tasks, "main.yml")) as f:
        main = yaml.safe_load(f)
    with open(os.path.join(tasks, "batch.yml")) as f:
        batch = yaml.safe_load(f)
    assert not any("ansible.builtin.reboot" in t for t in main)
    loop = [t for t in main if "ansible.builtin.include_tasks" in t]
    assert len(loop) == 1 and "stack_reboot_batches" in loop[0]["loop"] and "when" not in loop[0]
    block = batch[0]
    assert block["when"] == "inventory_hostname in stack_reboot_batch"
    assert [t for t in block["block"] if "ansible.builtin.reboot" in t]
