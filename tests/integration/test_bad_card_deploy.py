# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/deploy.yml with a malformed card, run for real with ansible-playbook: the plan role fails on
the controller, naming the card's field, before any host is contacted, and says it once per place
ansible-core shows a failed task (its error summary and the task's ``fatal:`` line), not once more as the
cause of a raised error."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
MALFORMED = os.path.join(ROOT, "tests", "unit", "cards", "malformed")
# hosts on addresses nothing answers on: the run must stop before it needs one
INVENTORY = os.path.join(ROOT, "tests", "integration", "render", "card-own.ini")


@pytest.mark.parametrize("name", ["13-argv-element-number.json", "14-argv-newline-injection.json"])
def test_a_bad_card_stops_the_deploy_at_the_plan_and_is_said_once_per_place(name):
    with open(os.path.join(MALFORMED, "expected.json")) as f:
        want = json.load(f)[name]
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "playbooks/deploy.yml", "-i", INVENTORY,
                          "-e", "launchcard_card_src=%s" % os.path.join(MALFORMED, name)],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    said = res.stdout + res.stderr
    assert res.returncode != 0, said[-3000:]
    assert "fatal: [r-pd -> localhost]: FAILED!" in said and want["path"] in said, said[-3000:]
    assert "TASK [launchcard.inference.preflight" not in said and "UNREACHABLE" not in said
    # once in the error summary and once in the fatal: line; a raised error added its message again as the cause
    assert "caused by" not in said, said[-3000:]
    assert said.count(want["contains"]) <= 2, said[-3000:]
