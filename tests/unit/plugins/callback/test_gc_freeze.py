# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gc_freeze callback: it collects then freezes at a task's start, does nothing with gc off, and a real
ansible-playbook that enables it forks its workers from a frozen heap."""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import weakref

import pytest

from ansible_collections.launchcard.inference.plugins.callback import gc_freeze

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
BIN = os.path.dirname(os.path.abspath(sys.executable))

# a filter templated in the worker (TaskExecutor) reports the heap the worker inherited
FILTER = '''
import gc
import sys

from ansible_collections.launchcard.inference.plugins.plugin_utils._inventory_check import known_variables


class FilterModule:
    def filters(self):
        return {"freeze_count": lambda dummy: gc.get_freeze_count(),
                "tests_loaded": lambda dummy: any(m.startswith("ansible.plugins.test.core") for m in sys.modules)
                and known_variables.cache_info().currsize == 1}
'''
# the worker reports, before any test of its own, whether ansible.builtin's tests came loaded from the controller,
# and the collection's variable names read
PLAYBOOK = '''
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.debug:
        msg: "frozen={{ 0 | freeze_count }} tests={{ 0 | tests_loaded }}"
'''


class Node:
    def __init__(self):
        self.other = self


@pytest.fixture(autouse=True)
def unfrozen():
    gc.unfreeze()
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


def garbage_cycle():
    node = Node()
    return weakref.ref(node)  # the cycle holds it: only a collection frees it


def test_a_task_start_collects_then_freezes_what_survives():
    kept = Node()
    dead = garbage_cycle()
    assert dead() is not None and gc.get_freeze_count() == 0
    gc_freeze.CallbackModule().v2_playbook_on_task_start(None, False)
    assert dead() is None  # collected, not frozen
    assert gc.get_freeze_count() > 0
    assert not any(obj is kept for obj in gc.get_objects())  # in the permanent generation: no collection walks it
    del kept


def test_a_handler_start_freezes_too():
    gc_freeze.CallbackModule().v2_playbook_on_handler_task_start(None)
    assert gc.get_freeze_count() > 0


def test_with_gc_disabled_it_does_nothing():
    gc.disable()
    dead = garbage_cycle()
    assert gc_freeze.freeze() is False
    gc_freeze.CallbackModule().v2_playbook_on_task_start(None, False)
    assert gc.get_freeze_count() == 0
    assert dead() is not None  # no collection ran either
    gc.enable()
    gc.collect()


def run_playbook(tmp_path, enabled):
    (tmp_path / "filter_plugins").mkdir(exist_ok=True)
    (tmp_path / "filter_plugins" / "freeze_count.py").write_text(FILTER)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    config = os.path.join(ROOT, "ansible.cfg")
    if not enabled:
        config = str(tmp_path / "ansible.cfg")
        (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_CONFIG=config, ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"),
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local", "play.yml"],
                         cwd=str(tmp_path), env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "unable to load" not in res.stdout + res.stderr
    found = re.search(r"frozen=(\d+) tests=(\w+)", res.stdout)
    return int(found.group(1)), found.group(2) == "True"


def test_the_repository_config_enables_it_and_workers_fork_from_a_frozen_heap(tmp_path):
    frozen, tests = run_playbook(tmp_path, enabled=True)
    assert frozen > 10000 and tests  # the controller's heap, all of it, with the tests and the names loaded
    # without it only what the interpreter itself froze (none on Python 3.11, 375 seen on 3.12 with ansible-core 2.20)
    frozen_without, tests_without = run_playbook(tmp_path, enabled=False)
    assert frozen_without < frozen // 10 and not tests_without
