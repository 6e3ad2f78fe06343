# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade_fleet action plugin (playbooks/upgrade.yml's fleet step, run once) and its logic,
plugin_utils/_upgrade_fleet.py: the rollout, its report and refusals, and each host's share, from each host's record.

The records are what a deploy of tests/e2e/cards/upgrade-v1.json leaves on two workers and a router; the new card
changes the model revision, as tests/e2e/test_upgrade_sandbox.py's upgrade does.
"""

from __future__ import annotations

import json
import os
from unittest.mock import MagicMock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible.template import Templar, trust_as_template

from ansible_collections.launchcard.inference.plugins.action.upgrade_fleet import ActionModule
from ansible_collections.launchcard.inference.plugins.plugin_utils import _upgrade_fleet as upgrade_fleet
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan_fleet
from ansible_collections.launchcard.inference.plugins.plugin_utils._rollout import card_sha256
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import host_units
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils import test_limit_peers as limit_cases
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import _card

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
V1 = os.path.join(ROOT, "tests", "e2e", "cards", "upgrade-v1.json")
HOSTS = [("w0", "10.0.0.1", ["sglang-aggregated"]), ("w1", "10.0.0.2", ["sglang-aggregated"]),
         ("rt", "10.0.0.3", ["sglang-router"])]
OPTS = {"runtime": "docker"}
NEW_REVISION = "2" * 40
HOST_LOCK = {"path": "/var/lib/launchcard/lock.json", "scope": "host", "acquired": True}


def _bump(doc):
    doc["hf"]["revision"] = NEW_REVISION


def _plan(card):
    plan = plan_fleet({"card": card}, {"card": normalize_placement([(h, {"address": a, "recipes": r}) for h, a, r in HOSTS])})
    return plan


def fleet_vars(gpus=8, staged=True):
    """The run-once host's task variables: the new plan and cards, and every host's record read and preflight."""
    old_card, new_card = _card(V1), _card(V1, _bump)
    old, new = _plan(old_card), _plan(new_card)
    hostvars = {}
    for host, hp in old["hosts"].items():
        record = {"card": {"sha256": card_sha256(old_card), "repo": old_card["model"]["repo"],
                           "revision": old_card["model"]["revision"]},
                  "instances": hp["instances"],
                  "units": {u["name"]: {"text": u["content"]} for u in host_units(hp, OPTS)}}
        hostvars[host] = {"upgrade_current": {"record": record}, "launchcard_gpus": gpus,
                          "preflight_result": {"weights_staged": staged, "lock": {"locks": [HOST_LOCK]}}}
    return {"hostvars": hostvars, "ansible_play_hosts_all": [h for h, a, r in HOSTS], "launchcard_plan": new,
            "launchcard_cards": {"card": new_card}, "ansible_run_tags": ["all"], "ansible_skip_tags": []}


def plugin(args, check_mode=False):
    task = MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = check_mode
    task.action = "launchcard.inference.upgrade_fleet"
    connection = MagicMock()
    connection._shell.tmpdir = None
    action = ActionModule(task, connection, PlayContext(), DataLoader(), None, None)
    action._execute_module = MagicMock()
    return action, connection


def test_the_step_returns_the_rollout_its_report_the_routers_and_each_hosts_share():
    task_vars = fleet_vars()
    action, connection = plugin({"options": OPTS, "serial": 1, "gate_timeout": "20"})
    out = action.run(task_vars=task_vars)
    assert out["changed"] is False and not out.get("failed")
    assert not action._execute_module.called and not connection.exec_command.called
    assert [b["hosts"] for b in out["rollout"]["batches"]] == [["w0"], ["w1"]] and out["rollout"]["unchanged"] == ["rt"]
    assert "hosts" not in out["rollout"]  # each host's change is in its own share
    assert out["report"][0] == "rollout: 2 batch(es), serial 1 (hosts per recipe per batch)"
    assert "batch 1 (server): w0" in out["report"] and "batch 2 (server): w1" in out["report"]
    assert [(r["host"], r["api"]) for r in out["routers"]] == [("rt", "http://127.0.0.1:30080")]
    assert out["stranded"] == [] and out["stranded_refused"] is False and out["outage_refusal"] == ""
    assert sorted(out["hosts"]) == ["rt", "w0", "w1"]
    w0, rt = out["hosts"]["w0"], out["hosts"]["rt"]
    new_card = task_vars["launchcard_cards"]["card"]
    summary = {"sha256": card_sha256(new_card), "repo": new_card["model"]["repo"], "revision": NEW_REVISION}
    assert w0["card"] == rt["card"] == summary
    # the batch's gates wait the operator's budget; its switch writes its instances' labels
    assert w0["gate_timeout"] == w0["twin_gate_timeout"] == 20
    (unit,) = [i["unit"] for i in task_vars["launchcard_plan"]["hosts"]["w0"]["instances"]]
    assert list(w0["textfile_instances"]) == [unit] and w0["textfile_instances"][unit]["revision"] == NEW_REVISION
    # its rollback: the record's unit files; its record releases the host lock its preflight call took
    record = task_vars["hostvars"]["w0"]["upgrade_current"]["record"]
    assert w0["record_units"] == [{"name": n, "content": u["text"]} for n, u in sorted(record["units"].items())]
    assert w0["release_paths"] == rt["release_paths"] == [HOST_LOCK]
    assert w0["change"]["action"] and w0["runs"].startswith("revision %s" % record["card"]["revision"][:12])
    # the router's unit file stays: nothing of its batch, and it runs the new card already
    assert rt["change"] is not None and "gate_timeout" not in rt and rt["runs"] == rt["change"]["runs_after"]
    assert out["hosts"]["w1"]["setup_parts"] == [] and out["hosts"]["w1"]["setup_parts_runtime"] == ["runtime"]


def test_without_a_gate_timeout_each_host_waits_what_its_engines_need_to_load():
    out = plugin({"options": OPTS})[0].run(task_vars=fleet_vars())
    assert out["hosts"]["w0"]["gate_timeout"] > 20


def test_check_mode_reports_the_router_unchanged_as_before_its_batch():
    out = plugin({"options": OPTS}, check_mode=True)[0].run(task_vars=fleet_vars())
    assert out["hosts"]["rt"]["runs"] == out["hosts"]["rt"]["change"]["runs_before"]


# the fail task's message as upgrade.yml wrote it before the fleet step (a YAML block scalar, Ansible's trim_blocks)
OLD_REFUSAL = (
    "upgrade refused: it would drop requests on {{ upgrade_rollout.outages | length }} instance(s), so nothing was "
    "installed, staged or restarted:\n{% for outage in upgrade_rollout.outages %}\n  {{ outage.line }}\n{% endfor %}\n"
    "Set launchcard_upgrade_allow_outage: true in the inventory to accept these outages, or change what causes them "
    "(docs/upgrades.md, Outages).")


def test_an_outage_is_refused_in_a_real_run_with_the_message_the_play_gave():
    # both workers in one batch, no GPU free for a twin: neither serves meanwhile
    task_vars = fleet_vars(gpus=1)
    out = plugin({"options": OPTS, "serial": 2})[0].run(task_vars=task_vars)
    assert len(out["rollout"]["outages"]) == 2
    said = Templar(DataLoader(), variables={"upgrade_rollout": out["rollout"]}).template(trust_as_template(OLD_REFUSAL))
    assert out["outage_refusal"] == said
    assert said.startswith("upgrade refused: it would drop requests on 2 instance(s)") and "\n  w0: " in said
    assert "the real run refuses this upgrade" in out["report"][-1]
    # accepted, or check mode: listed, not refused
    allowed = plugin({"options": OPTS, "serial": 2, "allow_outage": True})[0].run(task_vars=task_vars)
    assert allowed["outage_refusal"] == "" and "accepted (launchcard_upgrade_allow_outage: true)" in allowed["report"][-1]
    assert plugin({"options": OPTS, "serial": 2}, check_mode=True)[0].run(task_vars=task_vars)["outage_refusal"] == ""


def test_a_bad_serial_fails_naming_the_variable():
    with pytest.raises(AnsibleActionFail, match="launchcard_upgrade_serial"):
        plugin({"options": OPTS, "serial": "none"})[0].run(task_vars=fleet_vars())


def test_the_setup_parts_follow_preflight_and_the_tags():
    task_vars = fleet_vars(staged=False)
    hosts = plugin({"options": OPTS})[0].run(task_vars=task_vars)["hosts"]
    assert (hosts["w0"]["setup_parts"], hosts["w0"]["setup_parts_runtime"]) == (["weights"], ["weights", "runtime"])
    # a router loads no weights
    assert (hosts["rt"]["setup_parts"], hosts["rt"]["setup_parts_runtime"]) == ([], ["runtime"])
    task_vars["ansible_skip_tags"] = ["weights", "runtime"]
    hosts = plugin({"options": OPTS})[0].run(task_vars=task_vars)["hosts"]
    assert hosts["w0"]["setup_parts"] == hosts["w0"]["setup_parts_runtime"] == []


def test_a_limited_run_that_moves_an_instance_its_consumers_name_is_refused_unless_allowed():
    after = limit_cases._override(limit_cases.PD, "pre", "sglang-prefill", {"--disaggregation-bootstrap-port": "8999"})
    old, new = limit_cases._plan(limit_cases.EX, limit_cases.PD), limit_cases._plan(limit_cases.EX, after)
    for hp in new["hosts"].values():
        hp["card"] = "c"
    hostvars = {"pre": {"upgrade_current": {"record": {"instances": old["hosts"]["pre"]["instances"]}}}}
    lines = upgrade_fleet.stranded(new, {"c": limit_cases.EX}, hostvars, ["pre"], False)
    assert lines[0].startswith("refusing this --limit run before any host changes")
    assert "bootstrap port moves from 10.7.0.1:8998 to 10.7.0.1:8999" in lines[1]
    assert upgrade_fleet.stranded(new, {"c": limit_cases.EX}, hostvars, ["pre"], True)[0].startswith("WARNING: ")
    # a full run reads no host
    assert upgrade_fleet.stranded(new, {"c": limit_cases.EX}, {}, list(new["hosts"]), False) == []


def test_the_locks_step_returns_what_no_record_released():
    task_vars = fleet_vars()
    hv = task_vars["hostvars"]
    hv["w0"]["upgrade_record_batch"] = {"lock": {"released": [HOST_LOCK["path"]]}}
    hv["rt"]["upgrade_record_untouched"] = {"lock": {"released": [HOST_LOCK["path"]]}}
    task_vars["preflight_fleet_lock"] = {"locks": [{"path": "/var/lib/launchcard/fleet-lock.json", "scope": "fleet",
                                                    "acquired": True}]}
    task_vars["launchcard_run"] = {"id": "r1", "anchor": "rt"}
    out = plugin({"step": "locks"})[0].run(task_vars=task_vars)
    assert out["changed"] is False and "rollout" not in out
    assert out["locks"] == [{"host": "w1", "paths": [{"path": HOST_LOCK["path"], "scope": "host"}]},
                            {"host": "rt", "paths": [{"path": "/var/lib/launchcard/fleet-lock.json", "scope": "fleet"}]}]
    # before the plan set launchcard_run, nothing was taken
    del task_vars["launchcard_run"]
    assert plugin({"step": "locks"})[0].run(task_vars=task_vars)["locks"] == []


def test_the_result_is_json():
    json.dumps(plugin({"options": OPTS, "serial": 2})[0].run(task_vars=fleet_vars(gpus=1)))


class CountingHostvars(dict):
    """``hostvars`` that counts how often each host's variables are read (each read is a merge in ansible-core)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.reads = {}

    def __getitem__(self, host):
        self.reads[host] = self.reads.get(host, 0) + 1
        return super().__getitem__(host)


def test_each_hosts_variables_are_read_once():
    task_vars = fleet_vars(gpus=1)
    task_vars["hostvars"] = CountingHostvars(task_vars["hostvars"])
    out = plugin({"options": dict(OPTS, runtime="podman"), "serial": 2})[0].run(task_vars=task_vars)
    assert out["rollout"]["outages"] and task_vars["hostvars"].reads == {"w0": 1, "w1": 1, "rt": 1}
