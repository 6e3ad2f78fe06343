# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A playbook of the user's own that runs the preflight role after the plan, as the plan role's documentation says
(import playbooks/tasks/plan.yml: the plan role alone sets facts, which this repository's ansible.cfg,
inject_facts_as_vars off, keeps out of the host variables the other roles read, and ansible-lint keeps a role from
setting another prefix's variables). The preflight role checks this machine for real (check mode; it has no GPU,
so preflight stops it, naming the check). A fresh user's walkthrough found the plan role alone failing there.
"""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
CARD = os.path.join(ROOT, "cards", "glm-5.3-flash.json")


def test_a_playbook_of_ones_own_runs_preflight_after_the_plan_as_documented(tmp_path):
    play = tmp_path / "own.yml"
    play.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n"
                    "    - ansible.builtin.import_tasks: %s\n"
                    "    - ansible.builtin.import_role:\n        name: launchcard.inference.preflight\n"
                    % os.path.join(ROOT, "playbooks", "tasks", "plan.yml"))
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[vllm]\nlocalhost ansible_connection=local launchcard_recipes='[\"vllm-aggregated\"]'\n"
                         "[all:vars]\nlaunchcard_card_src=%s\n" % CARD)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_NOCOLOR="1", PATH=os.pathsep.join([BIN, os.environ.get("PATH", "")]))
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), str(play), "-i", str(inventory), "--check",
                          "-e", "ansible_python_interpreter=%s" % sys.executable],
                         cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600, check=False)
    out = res.stdout + res.stderr
    assert "is undefined" not in out, out[-3000:]
    # the preflight call ran against the plan's share of this host, and stopped it on what it found
    assert "TASK [launchcard.inference.preflight : Preflight | Report every host]" in out, out[-3000:]
    assert res.returncode == 2 and "gpu_count needs 8 GPUs" in out, out[-3000:]
