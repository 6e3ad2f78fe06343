# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight role's action plugins (issue 45): the per-host call's options computed from the task's variables,
the fleet step before and after the argv checks, and the argv check's registry settings built on the controller."""

from __future__ import annotations

import json
import os
from unittest.mock import MagicMock

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext

from ansible_collections.launchcard.inference.plugins.action import engine_argv as engine_argv_action
from ansible_collections.launchcard.inference.plugins.action import preflight as preflight_action
from ansible_collections.launchcard.inference.plugins.action import preflight_fleet as fleet_action
from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
from ansible_collections.launchcard.inference.plugins.module_utils._state import recorded_card
from ansible_collections.launchcard.inference.plugins.plugin_utils import _preflight_steps as steps
from ansible_collections.launchcard.inference.plugins.plugin_utils import _report as report
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan_fleet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
CARD = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
RUN = {"id": "run-1", "anchor": "d", "cards": {CARD: "glm-5.3-flash"}, "user": "ops", "controller": "ctl",
       "playbook": "deploy.yml"}
OK = {"check": "os", "ok": True, "severity": "ok", "need": "-", "found": "Debian 13", "message": "supported"}
BAD = {"check": "disk", "ok": False, "severity": "error", "need": "417 GiB", "found": "10 GiB", "message": "too small"}


@pytest.fixture(scope="module")
def fleet():
    with open(CARD) as f:
        card = load_card(f.read(), CARD)
    the_plan = plan_fleet({CARD: card}, {CARD: normalize_placement([
        ("p", {"address": "10.0.0.1", "recipes": ["sglang-prefill"]}),
        ("d", {"address": "10.0.0.2", "recipes": ["sglang-decode"]}),
        ("r", {"address": "10.0.0.3", "recipes": ["sglang-router"]})])})
    return {CARD: card}, the_plan


def _task(action_cls, args, name, check_mode=False):
    task = MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = check_mode
    task.action = name
    connection = MagicMock()
    connection._shell.tmpdir = None
    action = action_cls(task, connection, PlayContext(), DataLoader(), None, None)
    action._execute_module = MagicMock(return_value={"changed": False, "checks": []})
    return action


def _host_vars(cards, the_plan, host, **extra):
    found = {"inventory_hostname": host, "launchcard_plan": the_plan, "launchcard_cards": cards, "launchcard_run": RUN,
             "launchcard_gates": report.gate_table(the_plan)}
    found.update(extra)
    return found


def _vars(cards, the_plan, host, hosts=("p", "d", "r"), **extra):
    task_vars = _host_vars(cards, the_plan, host, **extra)
    task_vars["hostvars"] = dict((h, _host_vars(cards, the_plan, h, **extra)) for h in hosts)
    return task_vars


def _sent(action):
    kw = action._execute_module.call_args.kwargs
    return kw["module_name"], kw["module_args"]


def test_the_call_gets_the_needs_placement_and_revision_of_the_hosts_share_of_the_plan(fleet):
    cards, the_plan = fleet
    action = _task(preflight_action.ActionModule, {"weights_dir": "/w", "runtime": "podman"}, "launchcard.inference.preflight")
    action.run(task_vars=_vars(cards, the_plan, "d"))
    module, args = _sent(action)
    assert module == "launchcard.inference.preflight"
    assert args["needs"] == steps.host_needs(cards[CARD], the_plan["hosts"]["d"], the_plan)
    assert [p["port"] for p in args["needs"]["peers"]] == [8998]  # the prefill's bootstrap port, on another host
    assert args["placed"] is True and args["repo"] == cards[CARD]["model"]["repo"]
    assert args["revision"] == cards[CARD]["model"]["revision"] and args["misspelt"] == []
    # nothing asked for: no lock, no units reads, and no option of the action's own reaches the module
    assert "lock" not in args and "units_reads" not in args and args["weights_dir"] == "/w"
    assert not set(args) & {"take_lock", "read_units", "recheck", "image_vendors", "lock_dir", "break_lock"}


def test_the_peer_table_of_the_plan_step_is_used_where_it_ran(fleet):
    cards, the_plan = fleet
    action = _task(preflight_action.ActionModule, {"weights_dir": "/w"}, "launchcard.inference.preflight")
    action.run(task_vars=_vars(cards, the_plan, "p", launchcard_peer_ports={"p": [{"host": "x", "port": 1}]}))
    assert _sent(action)[1]["needs"]["peers"] == [{"host": "x", "port": 1}]


def test_a_host_the_plan_gives_nothing_is_not_placed_and_takes_no_lock(fleet):
    cards, the_plan = fleet
    action = _task(preflight_action.ActionModule, {"weights_dir": "/w", "take_lock": True, "record": "/s.json",
                                                   "allow_removal": "false"}, "launchcard.inference.preflight")
    action.run(task_vars=_vars(cards, the_plan, "gone", hosts=("p", "d", "r", "gone")))
    args = _sent(action)[1]
    assert args["placed"] is False and args["needs"] == {} and "repo" not in args and "lock" not in args
    assert args["allow_removal"] is False and args["record"] == "/s.json"


def test_the_lock_is_this_runs_on_the_host_and_the_anchor_adds_the_fleet_lock(fleet):
    cards, the_plan = fleet
    for host, paths in (("p", ["/l/lock.json"]), ("d", ["/l/lock.json", "/l/fleet-lock.json"])):
        action = _task(preflight_action.ActionModule, {"weights_dir": "/w", "take_lock": True, "lock_dir": "/l",
                                                       "lock_defer": True}, "launchcard.inference.preflight")
        action.run(task_vars=_vars(cards, the_plan, host))
        lock = _sent(action)[1]["lock"]
        assert [p["path"] for p in lock["paths"]] == paths and all(p["defer"] for p in lock["paths"])
        assert lock["holder"]["run_id"] == "run-1" and lock["holder"]["card"] == "glm-5.3-flash"
        assert lock["break_stale"] is False


def test_read_units_adds_the_setup_reads_and_the_converges_reads_except_on_the_recheck(fleet):
    cards, the_plan = fleet
    task_vars = _vars(cards, the_plan, "r", launchcard_hf_token="hf_a", units_hf_token_remove="true")
    action = _task(preflight_action.ActionModule, {"weights_dir": "/w", "read_units": True, "inspect": ["/etc/x"]},
                   "launchcard.inference.preflight")
    action.run(task_vars=task_vars)
    args = _sent(action)[1]
    assert args["inspect"][0] == "/etc/x" and len(args["inspect"]) == 3 and args["users"] == []
    reads = args["units_reads"]
    # the router's endpoint answers through its peers: the second stage; a token held: the file is not removed
    then = report.gate_endpoints(the_plan, "r", "then", {}, {}, None)
    assert reads["endpoints"] == [] and then and reads["then"] == then
    assert len(reads["secrets_sha256"]) == 64 and reads["remove_secrets"] is False
    # an engine that names no peer: the first stage; no token and the units role's remove_secrets: the file goes
    action = _task(preflight_action.ActionModule, {"weights_dir": "/w", "read_units": True}, "launchcard.inference.preflight")
    action.run(task_vars=_vars(cards, the_plan, "p", units_hf_token_remove=True))
    reads = _sent(action)[1]["units_reads"]
    assert reads["endpoints"] and reads["endpoints"] == report.gate_endpoints(the_plan, "p", "first", {}, {}, None)
    assert reads["secrets_sha256"] == "" and reads["remove_secrets"] is True
    action = _task(preflight_action.ActionModule, {"weights_dir": "/w", "read_units": True, "recheck": True,
                                                   "install_driver": True}, "launchcard.inference.preflight")
    action.run(task_vars=task_vars)
    args = _sent(action)[1]
    assert "units_reads" not in args and args["install_driver"] is False and len(args["inspect"]) == 2


def test_unset_values_are_left_out_and_an_ini_list_is_read_as_json(fleet):
    cards, the_plan = fleet
    action = _task(preflight_action.ActionModule, {"weights_dir": "/w", "amd_render_gid": "", "gpu_memory_mib": 0,
                                                   "native_venv": "", "record": "", "allow_runtime_change": None,
                                                   "ascend_devices": "[0, 1]"}, "launchcard.inference.preflight")
    action.run(task_vars=_vars(cards, the_plan, "p"))
    args = _sent(action)[1]
    assert not set(args) & {"amd_render_gid", "gpu_memory_mib", "native_venv", "record", "allow_runtime_change"}
    assert args["ascend_devices"] == [0, 1]
    action = _task(preflight_action.ActionModule, {"weights_dir": "/w", "ascend_devices": "0,1"}, "launchcard.inference.preflight")
    out = action.run(task_vars=_vars(cards, the_plan, "p"))
    assert out["failed"] and "ascend_devices: expected a JSON list" in out["msg"] and not action._execute_module.called


def test_needs_given_in_the_task_are_sent_as_they_are():
    action = _task(preflight_action.ActionModule, {"weights_dir": "/w", "needs": {"gpus": 2}}, "launchcard.inference.preflight")
    action.run(task_vars={"inventory_hostname": "h", "hostvars": {"h": {"launchcard_runtmie": "podman"}}})
    args = _sent(action)[1]
    assert args["needs"] == {"gpus": 2} and "placed" not in args
    assert args["misspelt"] == ["launchcard_runtmie"]  # near launchcard_runtime: the runtime_change check names it


def test_a_bad_action_option_fails_naming_it():
    action = _task(preflight_action.ActionModule, {"weights_dir": "/w", "take_lock": "sometimes"}, "launchcard.inference.preflight")
    out = action.run(task_vars={"inventory_hostname": "h"})
    assert out["failed"] and "take_lock" in out["msg"] and not action._execute_module.called


def _results(hosts, checks=None, **fields):
    return dict((h, dict({"checks": [OK] + (checks or {}).get(h, []), "failed_checks": [c["check"] for c in (checks or {}).get(h, [])]},
                         **fields)) for h in hosts)


def _fleet_vars(cards, the_plan, results, argv=None, hosts_all=("p", "d", "r"), hosts=("p", "d", "r"), **extra):
    task_vars = {"ansible_play_hosts_all": list(hosts_all), "ansible_play_hosts": list(hosts), "launchcard_plan": the_plan,
                 "launchcard_cards": cards, "launchcard_run": RUN}
    task_vars.update(extra)
    task_vars["hostvars"] = dict((h, {"preflight_result": results.get(h), "preflight_argv": (argv or {}).get(h),
                                      "launchcard_runtime": "podman"}) for h in hosts_all)
    return task_vars


def test_the_report_step_prints_the_table_and_goes_on_when_every_host_passed(fleet):
    cards, the_plan = fleet
    results = _results(("p", "d", "r"))
    action = _task(fleet_action.ActionModule, {"step": "report", "lock": True}, "launchcard.inference.preflight_fleet")
    out = action.run(task_vars=_fleet_vars(cards, the_plan, results))
    assert out["msg"].split("\n") == steps.report_lines(results, ["p", "d", "r"])
    assert out["_ansible_verbose_always"] is True and out["changed"] is False
    assert out["then"] == {"release": [], "refusal": "", "argv_refusals": [], "remove": [], "lost": [], "budget_spent": False}


def test_another_runs_lock_releases_what_this_run_took_and_refuses(fleet):
    cards, the_plan = fleet
    results = _results(("p", "d", "r"))
    results["p"]["lock"] = {"locks": [{"path": "/l/lock.json", "scope": "host", "acquired": True}]}
    results["d"]["lock"] = {"locks": [{"path": "/l/lock.json", "scope": "host", "held_by": {"run_id": "other"}}]}
    action = _task(fleet_action.ActionModule, {"step": "report", "lock": True}, "launchcard.inference.preflight_fleet")
    then = action.run(task_vars=_fleet_vars(cards, the_plan, results))["then"]
    assert then["release"] == [{"host": "p", "paths": [{"path": "/l/lock.json", "scope": "host"}]}]
    assert then["refusal"].startswith("another run holds the lock of this fleet") and "d:/l/lock.json" in then["refusal"]
    # check mode takes no lock: nothing to release, the run goes on (the preflight call warned of the held lock)
    action = _task(fleet_action.ActionModule, {"step": "report", "lock": True}, "launchcard.inference.preflight_fleet")
    then = action.run(task_vars=_fleet_vars(cards, the_plan, results, ansible_check_mode=True))["then"]
    assert then["release"] == []


def test_a_failed_host_and_an_unreachable_one_spend_a_budget_of_zero_and_the_locks_go(fleet):
    cards, the_plan = fleet
    results = _results(("p", "d"), checks={"d": [BAD]})
    results["p"]["lock"] = {"locks": [{"path": "/l/lock.json", "scope": "host", "acquired": True}]}
    action = _task(fleet_action.ActionModule, {"step": "report", "lock": True}, "launchcard.inference.preflight_fleet")
    out = action.run(task_vars=_fleet_vars(cards, the_plan, results, hosts=("p", "d")))
    assert out["then"]["lost"] == ["d", "r"] and out["then"]["budget_spent"] is True
    assert out["then"]["release"] == [{"host": "p", "paths": [{"path": "/l/lock.json", "scope": "host"}]}]
    # within a budget of 70 % the run goes on, holding its locks
    action = _task(fleet_action.ActionModule, {"step": "report", "lock": True}, "launchcard.inference.preflight_fleet")
    out = action.run(task_vars=_fleet_vars(cards, the_plan, results, hosts=("p", "d"), launchcard_max_fail_percentage="70"))
    assert out["then"]["budget_spent"] is False and out["then"]["release"] == []
    action = _task(fleet_action.ActionModule, {"step": "report"}, "launchcard.inference.preflight_fleet")
    out = action.run(task_vars=_fleet_vars(cards, the_plan, results, launchcard_max_fail_percentage="lots"))
    assert out["failed"] and out["msg"].startswith("launchcard.inference.preflight_fleet: ")


def test_a_moved_tag_and_a_check_that_could_not_run_are_fleet_warnings_below_the_table(fleet):
    cards, the_plan = fleet
    old, new = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    image = next(i["image"] for h in the_plan["hosts"].values() for i in h["instances"] if i.get("image"))
    results = _results(("p", "d", "r"), recorded_image_refs={image: image.split(":")[0] + "@" + old})
    checks = [{"key": "k1", "host": "p", "runtime": "podman", "image": image, "recipes": ["sglang-prefill"],
               "engine_label": "SGLang"}]
    argv = {"p": {"results": [{"key": "k1", "status": "unavailable", "message": "no image"}]}}
    args = {"step": "report", "hold_moved": True, "image_refs": {image: image.split(":")[0] + "@" + new}, "checks": checks}
    out = _task(fleet_action.ActionModule, args, "launchcard.inference.preflight_fleet").run(
        task_vars=_fleet_vars(cards, the_plan, results, argv))
    lines = out["msg"].split("\n")
    table = steps.report_lines(results, ["p", "d", "r"])
    assert lines[:len(table)] == table and lines[len(table)] == ""
    warnings = lines[len(table) + 1:]
    assert len(warnings) == 2 and all(w.startswith("WARNING (fleet): ") for w in warnings)
    assert old in warnings[0] and new in warnings[0]
    # the re-check after the stack's install gives the table alone
    out = _task(fleet_action.ActionModule, dict(args, recheck=True), "launchcard.inference.preflight_fleet").run(
        task_vars=_fleet_vars(cards, the_plan, results, argv))
    assert out["msg"].split("\n") == table


NEXT = "ba5ca7dae8b2bc1f12fffa3ea9622ae98aece875"


def _recorded(card, revision, before=None, repo=None):
    """A host's preflight ``recorded_card``, from a record built as host_state builds it (``before``: the revision of
    the record it replaced)."""
    repo = repo or card["model"]["repo"]
    previous = state.build({}, {"sha256": "0" * 64, "repo": repo, "revision": before}, [], {}) if before else None
    return recorded_card(json.dumps(state.build({}, {"sha256": "1" * 64, "repo": repo, "revision": revision}, [], {},
                                                previous=previous)))


def test_a_deploy_back_to_the_revision_before_an_upgrade_warns_naming_the_hosts(fleet):
    cards, the_plan = fleet
    card = cards[CARD]
    old = card["model"]["revision"]
    # upgrade.yml moved the fleet to NEXT; the inventory still names the card it replaced. The router (r) is not
    # named: its units name no revision, so the move restarts nothing there
    assert [i["role"] for i in the_plan["hosts"]["r"]["instances"]] == ["router"]
    results = _results(("p", "d", "r"), recorded_card=_recorded(card, NEXT, before=old))
    args = {"step": "report", "hold_moved": True}
    out = _task(fleet_action.ActionModule, args, "launchcard.inference.preflight_fleet").run(
        task_vars=_fleet_vars(cards, the_plan, results))
    expected = ("d, p serve zai-org/GLM-5.3-Flash at ba5ca7dae8b2 (their records); this deploy moves them to "
                "46a050bec130, the revision they served before their last upgrade, restarting every engine at once "
                "(upgrade.yml moves a serving fleet batch by batch: docs/upgrades.md); is launchcard_card_src still "
                "the card upgrade.yml replaced?")
    assert out["warnings"] == [expected]
    assert out["msg"].split("\n")[-1] == "WARNING (fleet): " + expected
    # upgrade.yml (hold_moved false) moves revisions on purpose; the re-check after the stack's install gives the table
    for extra in ({"hold_moved": False}, {"recheck": True}):
        out = _task(fleet_action.ActionModule, dict(args, **extra), "launchcard.inference.preflight_fleet").run(
            task_vars=_fleet_vars(cards, the_plan, results))
        assert "warnings" not in out and "WARNING" not in out["msg"], extra


def test_no_revision_warning_where_the_records_name_the_planned_revision_or_nothing(fleet):
    cards, the_plan = fleet
    card = cards[CARD]
    results = _results(("p", "d", "r"), recorded_card=_recorded(card, card["model"]["revision"], before=NEXT))
    results["r"]["recorded_card"] = None  # a first deploy: no record
    out = steps.report_step(the_plan, cards, results, {}, ["p", "d", "r"], ["p", "d", "r"], hold=True)
    assert out["warnings"] == [] and "WARNING" not in out["msg"]
    assert steps.revision_warnings(the_plan, cards, results, ["p", "d", "r"]) == []


def test_revision_moves_are_grouped_by_move_and_name_another_repo():
    card = {"model": {"repo": "org/m", "revision": "a" * 40}}
    other = {"model": {"repo": "org/n", "revision": "b" * 40}}
    plan = {"hosts": dict((h, {"card": "m.json"}) for h in ("h1", "h2", "h3", "h4", "h5"))}
    plan["hosts"]["h5"]["card"] = "gone.json"  # a card this run did not load: not judged
    results = {"h1": {"recorded_card": _recorded(card, "c" * 40)}, "h2": {"recorded_card": _recorded(other, "b" * 40)},
               "h3": {"skipped": True, "recorded_card": _recorded(card, "c" * 40)},
               "h4": {"unreachable": True, "recorded_card": _recorded(card, "c" * 40)},
               "h5": {"recorded_card": _recorded(card, "c" * 40)}}
    assert steps.revision_warnings(plan, {"m.json": card}, results, ["h5", "h4", "h3", "h2", "h1"]) == [
        "h1 serves org/m at cccccccccccc (its record); this deploy moves it to aaaaaaaaaaaa, restarting every engine "
        "at once (upgrade.yml moves a serving fleet batch by batch: docs/upgrades.md)",
        "h2 serves org/n at bbbbbbbbbbbb (its record); this deploy moves it to org/m at aaaaaaaaaaaa, restarting every "
        "engine at once (upgrade.yml moves a serving fleet batch by batch: docs/upgrades.md)"]


def test_a_rejected_argv_stops_the_run_and_the_images_pulled_for_accepted_checks_go(fleet):
    cards, the_plan = fleet
    results = _results(("p", "d", "r"))
    checks = [{"key": "k1", "host": "p", "runtime": "podman", "image": "img@sha256:1", "pull": True,
               "recipes": ["sglang-prefill"], "engine_label": "SGLang"},
              {"key": "k2", "host": "d", "runtime": "podman", "image": "img@sha256:2", "pull": True,
               "recipes": ["sglang-decode"], "engine_label": "SGLang"}]
    argv = {"p": {"results": [{"key": "k1", "status": "rejected", "message": "unrecognized", "flag": "--x", "near": [],
                               "pulled": True}]},
            "d": {"results": [{"key": "k2", "status": "ok", "pulled": True}]}}
    out = _task(fleet_action.ActionModule, {"step": "report", "checks": checks, "lock": True},
                "launchcard.inference.preflight_fleet").run(task_vars=_fleet_vars(cards, the_plan, results, argv))
    then = out["then"]
    assert len(then["argv_refusals"]) == 1 and "sglang-prefill" in then["argv_refusals"][0]
    assert then["remove"] == [{"host": "d", "runtime": "podman", "image": "img@sha256:2"}]
    assert then["release"] == [{"host": "p", "paths": []}]  # nothing held: one entry, for the refusal's turn


def test_the_argv_step_pulls_only_on_a_run_that_goes_on(fleet, monkeypatch):
    cards, the_plan = fleet
    seen = []
    monkeypatch.setattr(steps, "argv_checks", lambda *a: seen.append(a[-1]) or [{"key": "k", "host": "p"}])
    results = _results(("p", "d", "r"))
    for extra, pull in (({}, True), ({"ansible_check_mode": True}, False), ({"hosts": ("p", "d")}, False)):
        action = _task(fleet_action.ActionModule, {"step": "argv"}, "launchcard.inference.preflight_fleet")
        out = action.run(task_vars=_fleet_vars(cards, the_plan, results, **extra))
        assert out["checks"] == [{"key": "k", "host": "p"}] and seen[-1] is pull, extra
    results["d"]["lock"] = {"locks": [{"path": "/l/lock.json", "held_by": {"run_id": "other"}}]}
    _task(fleet_action.ActionModule, {"step": "argv"}, "launchcard.inference.preflight_fleet").run(
        task_vars=_fleet_vars(cards, the_plan, results))
    assert seen[-1] is False


def test_the_argv_step_gives_each_check_to_a_host_that_holds_the_image(fleet):
    cards, the_plan = fleet
    image = the_plan["hosts"]["p"]["instances"][0]["image"]
    ref = image.split(":")[0] + "@sha256:" + "c" * 64
    results = _results(("p", "d", "r"), facts={"image_disk": {"in_place": [image]}, "engines": {"podman_version": "5.4"}})
    out = _task(fleet_action.ActionModule, {"step": "argv", "image_refs": {image: ref}},
                "launchcard.inference.preflight_fleet").run(task_vars=_fleet_vars(cards, the_plan, results))
    assert out["checks"] and all(c["host"] in ("p", "d") and not c["pull"] for c in out["checks"])


def test_a_pulling_argv_check_gets_the_registries_conf_and_auth_built_on_the_controller():
    mirrors = {"docker.io": ["mirror.example:5000"]}
    credentials = {"docker.io": {"username": "u", "password": "p"}}
    args = {"checks": [{"key": "k", "pull": True}], "registry_mirrors": mirrors, "registry_credentials": credentials,
            "registry_plain_http": []}
    action = _task(engine_argv_action.ActionModule, args, "launchcard.inference.engine_argv")
    action.run(task_vars={})
    module, sent = _sent(action)
    assert module == "launchcard.inference.engine_argv" and not set(sent) & set(engine_argv_action.REGISTRY_OPTIONS)
    assert "mirror.example:5000" in sent["registries_conf"] and list(sent["auth"]["auths"]) == ["docker.io"]
    assert json.dumps(sent["auth"]).count("dTpw") == 1  # base64 of u:p, only in the auth option
    # no pull: neither is built (the credentials stay on the controller)
    action = _task(engine_argv_action.ActionModule, dict(args, checks=[{"key": "k", "pull": False}]), "launchcard.inference.engine_argv")
    action.run(task_vars={})
    assert not set(_sent(action)[1]) & {"registries_conf", "auth"}
    action = _task(engine_argv_action.ActionModule, dict(args, registry_mirrors=["x"]), "launchcard.inference.engine_argv")
    out = action.run(task_vars={})
    assert out["failed"] and "registry_mirrors must be a dict" in out["msg"] and not action._execute_module.called


STEP = {"image_refs": {"img:1": "img@sha256:" + "a" * 64}, "host_plan": {"card": "c", "instances": []},
        "stack_roles": {"nvidia": "nvidia"}, "install_stack": False}


def _stepping(fleet, monkeypatch, args=None, module_result=None, **extra):
    """The call with the deploy's host step asked for; units_host.host_step records what it was given."""
    from ansible.template import Templar, trust_as_template
    cards, the_plan = fleet
    seen = []

    def host_step(templar, variables, preflight, host_plan, stack_roles, install_stack=True):
        seen.append(dict(templar=templar, variables=variables, preflight=preflight, host_plan=host_plan,
                         stack_roles=stack_roles, install_stack=install_stack))
        if isinstance(variables.get("step_raises"), Exception):
            raise variables["step_raises"]
        return {"settled": {"settled": True}, "setup_parts": [], "lock": []}
    monkeypatch.setattr(preflight_action.units_host, "host_step", host_step)
    task_vars = _vars(cards, the_plan, "d", **extra)
    task_vars["found"] = trust_as_template("{{ preflight_result.units_found }}")
    options = dict({"weights_dir": "/w", "read_units": True, "host_step": STEP}, **(args or {}))
    action = _task(preflight_action.ActionModule, options, "launchcard.inference.preflight")
    action._templar = Templar(loader=DataLoader(), variables=task_vars)
    action._execute_module.return_value = module_result or {"changed": False, "checks": [OK], "units_found": {"u": 1}}
    monkeypatch.setattr(preflight_action.units_host.UnitsHost, "reads", lambda self: {})
    return action.run(task_vars=task_vars), seen


def test_the_host_step_is_made_as_the_next_task_sees_the_registered_result(fleet, monkeypatch):
    out, seen = _stepping(fleet, monkeypatch)
    assert out["host_step"] == {"settled": {"settled": True}, "setup_parts": []}
    (call,) = seen
    assert call["preflight"]["units_found"] == {"u": 1} and call["host_plan"] == STEP["host_plan"]
    assert call["stack_roles"] == STEP["stack_roles"] and call["install_stack"] is False
    # the result as registered: in the variables, in the host's hostvars entry and in the templar's variables
    assert call["variables"]["preflight_result"]["units_found"] == {"u": 1}
    assert call["variables"]["hostvars"]["d"]["preflight_result"]["units_found"] == {"u": 1}
    assert call["templar"].template(call["variables"]["found"]) == {"u": 1}
    # the images the fleet resolved stand for the ones the play pins after preflight
    assert call["variables"]["runtime_image_refs"] == STEP["image_refs"]
    assert call["variables"]["hostvars"]["d"]["runtime_image_refs"] == STEP["image_refs"]
    # the host's share as the task rendered it, not looked up again by the record's templates
    assert call["variables"]["launchcard_host_plan"] == STEP["host_plan"]


def test_images_the_play_already_pinned_are_not_replaced(fleet, monkeypatch):
    pinned = {"img:1": "img@sha256:" + "b" * 64}
    dummy, seen = _stepping(fleet, monkeypatch, runtime_image_refs=pinned)
    assert seen[0]["variables"]["runtime_image_refs"] == pinned


@pytest.mark.parametrize("args,result", [
    ({"host_step": None}, None),
    ({"read_units": False}, None),
    ({"recheck": True}, None),
    ({}, {"changed": False, "checks": [BAD], "failed_checks": ["disk"]}),
    ({}, {"failed": True, "msg": "no python"}),
])
def test_no_host_step_where_it_is_not_asked_for_or_the_host_failed(fleet, monkeypatch, args, result):
    out, seen = _stepping(fleet, monkeypatch, args, result)
    assert "host_step" not in out and seen == []


def test_a_host_step_that_cannot_be_made_here_leaves_no_reading(fleet, monkeypatch):
    out, seen = _stepping(fleet, monkeypatch, step_raises=ValueError("units_state: bad"))
    assert out["host_step"] == {} and len(seen) == 1 and "failed" not in out


def test_from_role_reads_each_option_from_the_roles_variable_rendered_once(fleet):
    """The role's task gives only from_role: the options come from its variables (their templates rendered), a
    task argument wins, and an undefined variable leaves its option to the module's default."""
    from ansible.template import Templar, trust_as_template
    cards, the_plan = fleet
    task_vars = _vars(cards, the_plan, "d", launchcard_weights_dir="/srv/w",
                      preflight_weights_dir=trust_as_template("{{ launchcard_weights_dir | default('/var/x') }}"),
                      preflight_runtime="podman", preflight_headroom_mib=trust_as_template("{{ 2048 * 2 }}"),
                      preflight_images={"image_sizes": {"img": 7}, "image_refs": {}},
                      preflight_container_toolkit="no", preflight_units="yes", preflight_lock=True,
                      preflight_lock_defer="true", preflight_lock_dir="/l", preflight_lock_break=False,
                      preflight_record="", preflight_inspect=["/i"])
    action = _task(preflight_action.ActionModule, {"from_role": True, "vendor": "nvidia"}, "launchcard.inference.preflight")
    action._templar = Templar(loader=DataLoader(), variables=task_vars)
    action.run(task_vars=task_vars)
    args = _sent(action)[1]
    assert args["weights_dir"] == "/srv/w" and args["runtime"] == "podman" and args["headroom_mib"] == 4096
    assert args["image_sizes"] == {"img": 7} and args["container_toolkit"] is False and args["vendor"] == "nvidia"
    # read_units, take_lock and lock_defer read as booleans: the units reads and the deferred lock are filled in
    assert "units_reads" in args and args["lock"]["paths"] and all(p.get("defer") for p in args["lock"]["paths"])
    assert args["inspect"][0] == "/i" and "record" not in args  # an empty record is "not set", as before
    assert "checks" not in args and "shm_min_gib" not in args and "from_role" not in args


def test_every_role_option_names_a_module_option_and_a_variable_of_the_role():
    import yaml
    from ansible_collections.launchcard.inference.plugins.modules import preflight as preflight_module
    options = set(yaml.safe_load(preflight_module.DOCUMENTATION)["options"])
    options |= set(preflight_action.CONTROLLER_SPEC)
    with open(os.path.join(ROOT, "roles", "preflight", "defaults", "main.yml")) as f:
        defaults = yaml.safe_load(f)
    listed = [option for option, dummy, dummy in steps.ROLE_OPTIONS]
    assert len(set(listed)) == len(listed)
    for option, name, dummy in steps.ROLE_OPTIONS:
        assert option in options, option
        assert name in defaults, name
