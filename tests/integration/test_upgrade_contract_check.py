# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An upgrade's check mode says when it moves an engine to a release whose metric contract differs (issue 43,
item 5), run by ansible-playbook --check on local hosts.

TEST CODE: the plan role plans the new card (SGLang v0.5.99, which has no contract) onto three local hosts; each
host's record is what a deploy of the old card (SGLang v0.5.23, the pinned release) leaves; then upgrade.yml's own
"Plan the rollout" and "The rollout" tasks, read from the playbook, run unchanged. The rest of upgrade.yml
(preflight, the registry, the hosts' records) needs GPUs, a registry and deployed hosts: the sandbox's upgrade
tests run it whole.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.launchcard.inference.plugins.module_utils import _state as state  # noqa: E402
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import (  # noqa: E402
    normalize_placement,
    plan_fleet,
)
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import host_units  # noqa: E402
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import _card  # noqa: E402

V1 = os.path.join(ROOT, "tests", "e2e", "cards", "upgrade-v1.json")
HOSTS = [("w0", "10.0.0.1", ["sglang-aggregated"]), ("w1", "10.0.0.2", ["sglang-aggregated"]),
         ("rt", "10.0.0.3", ["sglang-router"])]
OPTS = {"runtime": "docker"}
TASKS = ("Upgrade | Plan the rollout", "Upgrade | The rollout")


def _doc(image):
    with open(V1) as f:
        doc = json.load(f)
    for env in doc["envs"]:
        env["image"] = image
    return doc


def _upgrade_tasks():
    """The named tasks of playbooks/upgrade.yml, as the playbook writes them."""
    with open(os.path.join(ROOT, "playbooks", "upgrade.yml")) as f:
        play = yaml.safe_load(f)[0]
    found = {}

    def walk(tasks):
        for task in tasks:
            if task.get("name") in TASKS:
                found[task["name"]] = task
            walk(task.get("block") or [])
    walk(play["tasks"])
    return [found[name] for name in TASKS]


def test_check_mode_names_the_engine_its_releases_and_the_missing_contract(tmp_path):
    (tmp_path / "v2.json").write_text(json.dumps(_doc("lmsysorg/sglang:v0.5.99")))
    old_card = _card(V1, lambda d: d.update(_doc("lmsysorg/sglang:v0.5.23")))
    old = plan_fleet({"old": old_card}, {"old": normalize_placement(
        [(h, {"address": a, "recipes": r}) for h, a, r in HOSTS])})
    # as a deploy of the old card records them: its image pinned by digest (runtime.image_refs), no image per instance
    refs = {"lmsysorg/sglang:v0.5.23": "lmsysorg/sglang:v0.5.23@sha256:" + "a" * 64}
    records = {h: {"record": state.build({u["name"]: u["content"] for u in host_units(hp, dict(OPTS, image_refs=refs))},
                                         {"revision": old_card["model"]["revision"]}, hp["instances"],
                                         {"kind": "docker", "image_refs": refs})}
               for h, hp in old["hosts"].items()}
    (tmp_path / "inventory.ini").write_text("".join(
        "%s ansible_connection=local ansible_host=%s launchcard_recipes='%s'\n" % (h, a, json.dumps(r))
        for h, a, r in HOSTS) + "[all:vars]\nansible_python_interpreter=%s\nlaunchcard_card_src=%s\n" % (
            sys.executable, tmp_path / "v2.json"))
    (tmp_path / "records.json").write_text(json.dumps({"records": records}))
    plan_tasks = os.path.join(ROOT, "playbooks", "tasks", "plan.yml")
    tasks = [{"name": "Plan the cards", "ansible.builtin.import_tasks": plan_tasks},
             # what upgrade.yml's host_state read registers on each host: its record
             {"name": "Read what each host runs", "ansible.builtin.set_fact": {
                 "upgrade_current": "{{ records[inventory_hostname] }}"}}] + _upgrade_tasks()
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{
        "hosts": "all", "gather_facts": False, "vars_files": ["records.json"],
        "vars": {"upgrade_units_options": OPTS, "upgrade_serial": 1, "upgrade_allow_outage": False,
                 "upgrade_gate_timeout_s": None},
        "tasks": tasks}], sort_keys=False))
    # JSON results: one line per message, as the log shows it
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_CALLBACK_RESULT_FORMAT="json", PATH=os.pathsep.join([BIN, os.environ.get("PATH", "")]))
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), str(tmp_path / "play.yml"), "-i",
                          str(tmp_path / "inventory.ini"), "--check"],
                         cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600, check=False)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert ('"warning: metric contract: sglang of recipe sglang-aggregated on w0, w1: 0.5.23 (image tag v0.5.23) -> '
            '0.5.99 (image tag v0.5.99): no contract for sglang 0.5.99; the rules and dashboard are held to sglang '
            '0.5.23 (monitoring/contracts/sglang-0.5.23.yml)"') in out, out[-4000:]
    # the rollout goes on: both workers, then the router
    assert '"batch 1 (server): w0"' in out and '"batch 2 (server): w1"' in out, out[-4000:]
