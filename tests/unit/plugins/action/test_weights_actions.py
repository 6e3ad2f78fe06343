# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The weights role's actions: the run's plan of downloads and copies (once), and a host's receiving daemon."""

from __future__ import annotations

from unittest.mock import MagicMock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible_collections.launchcard.inference.plugins.action.peer_receive import ActionModule as PeerReceive
from ansible_collections.launchcard.inference.plugins.action.weights_plan import ActionModule as WeightsPlan
from ansible_collections.launchcard.inference.plugins.plugin_utils import _weights as weights
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_weights import ALL, PLAN

CARDS = {"tiny": {"model": {"repo": "org/tiny", "revision": "1" * 40}}, "big": {"model": {"repo": "org/big"}}}


def action(cls, **args):
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = False
    connection = MagicMock()
    connection._shell.tmpdir = None
    templar = MagicMock()
    templar.template.side_effect = lambda value: value
    return cls(task, connection, PlayContext(), DataLoader(), templar, None)


def plan(task_vars, **args):
    return action(WeightsPlan, **args).run(task_vars=task_vars)


def test_the_plan_reads_each_hosts_preflight_result_and_the_plays_plan_and_cards_and_names_who_copies():
    hostvars = {h: {"found": {"weights_staged": h == "b2"}} for h in ALL}
    hostvars["w2"] = {}  # preflight did not run (--tags weights): not staged
    task_vars = {"ansible_play_hosts": ALL, "hostvars": hostvars, "launchcard_plan": PLAN, "launchcard_cards": CARDS}
    result = plan(task_vars, result_var="found", fanout="0")
    wanted = weights.peer_plan(PLAN, {"b2": True}, ALL)
    assert dict((k, result[k]) for k in wanted) == wanted
    assert result["report"] == ["big: b2 already holds it, no download; b1 copies it from b2",
                                "org/tiny@111111111111: w1 downloads it from the Hub; w2, w3, w4 copy it from w1"]
    # a --limit run spreads among its own hosts; an empty result_var: no host holds the revision before the run
    limited = plan(dict(task_vars, ansible_play_hosts=["w3", "w4"]), result_var="")
    assert limited["hosts"]["w3"]["seed"] == "w3" and "w1" not in limited["hosts"]


def test_the_hub_source_plans_rounds_only_with_a_bound_and_says_nothing():
    task_vars = {"ansible_play_hosts": ALL, "hostvars": {}, "launchcard_plan": PLAN, "launchcard_cards": CARDS}
    bounded = plan(task_vars, source="hub", hub_concurrency=2)
    assert bounded == dict(weights.peer_plan(PLAN, {}, ALL, 0, "hub", 2), report=[], changed=False)
    assert bounded["download_rounds"] > 1
    for args in ({"source": "hub"}, {"source": "path", "fanout": "many"}):
        assert plan(task_vars, **args) == {"cards": {}, "hosts": {}, "waves": 0, "download_rounds": 0, "report": [],
                                           "changed": False}


def test_a_bad_fanout_fails_naming_the_variable():
    with pytest.raises(AnsibleActionFail, match="launchcard_weights_fanout"):
        plan({"ansible_play_hosts": ALL, "hostvars": {}, "launchcard_plan": PLAN}, fanout="many")
    with pytest.raises(AnsibleActionFail, match="launchcard_weights_source"):
        plan({}, source="nfs")


def receive(files=None, fail=None, **args):
    calls = []
    peer = action(PeerReceive, **args)

    def module(module_name, module_args, task_vars=None, **kwargs):
        calls.append(("file", dict(module_args)))
        return {"failed": True, "msg": "permission denied"} if fail == "file" else {"changed": True, "diff": {"x": 1}}

    def copy_action(name, task, **kwargs):
        run = MagicMock()
        run.run.side_effect = lambda task_vars=None: (
            calls.append(("copy", dict(task.args))) or
            ({"failed": True, "msg": "read-only"} if fail == "copy" else {"changed": False, "dest": task.args["dest"]}))
        return run
    peer._execute_module = module
    peer._shared_loader_obj = MagicMock()
    peer._shared_loader_obj.action_loader.get.side_effect = copy_action
    peer._task.copy.side_effect = lambda: MagicMock(args={})
    return peer.run(task_vars={}), calls


def test_the_receiving_host_gets_its_folder_then_the_daemons_settings_and_the_tasks_after_get_the_key_options():
    args = dict(hf_home="/var/lib/launchcard/models", repo="org/tiny", conf="/run/recv.conf", address="fd00::12")
    result, calls = receive(**args)
    wanted = weights.peer_receive(args["hf_home"], args["repo"], args["conf"], args["address"])
    assert calls == [("file", {"path": wanted["repo_dir"], "state": "directory", "mode": "0755"}),
                     ("copy", {"dest": "/run/recv.conf", "content": wanted["config"], "mode": "0600"})]
    assert (result["repo_dir"], result["key_options"], result["dest"]) == (
        wanted["repo_dir"], wanted["key_options"], "rsync://[fd00::12]/launchcard-weights/")
    assert result["changed"] is True and result["diff"] == [{"x": 1}]


@pytest.mark.parametrize("fail, done", [("file", ["file"]), ("copy", ["file", "copy"])])
def test_a_failed_step_fails_the_task_with_its_message(fail, done):
    result, calls = receive(fail=fail, hf_home="/w", repo="org/tiny", conf="/run/recv.conf", address="h")
    assert result["failed"] and [c[0] for c in calls] == done and "key_options" not in result


def test_a_settings_path_sshd_would_read_otherwise_fails_before_anything_changes():
    with pytest.raises(AnsibleActionFail, match="weights_peer_receive_conf"):
        receive(hf_home="/w", repo="org/tiny", conf="/run/recv conf,x", address="h")
