# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch_card action plugin in-process: ActionModule.run with fake task_vars.

The inventory is the sandbox one (inventories/sandbox/gpus.ini) written out
as hostvars and groups, the card the example card. The connection is a mock
that records every use, so a test can prove that no host was contacted.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
from unittest.mock import MagicMock

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible_collections.launchcard.inference.plugins.action.launch_card import ActionModule
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._rollout import card_sha256

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
CARD = os.path.join(REPO_ROOT, "cards", "glm-5.3-flash.json")
MALFORMED = os.path.join(REPO_ROOT, "tests", "unit", "cards", "malformed")

# inventories/sandbox/gpus.ini: host -> (address, recipes)
FLEET = {
    "lc-vllm": ("198.18.0.11", ["vllm-aggregated"]),
    "lc-encoder": ("198.18.0.12", ["sglang-encoder"]),
    "lc-language": ("198.18.0.13", ["sglang-language"]),
    "lc-cp": ("198.18.0.14", ["sglang-aggregated"]),
    "lc-prefill": ("198.18.0.15", ["sglang-prefill"]),
    "lc-decode": ("198.18.0.16", ["sglang-decode"]),
    "lc-router": ("198.18.0.17", ["sglang-router"]),
}


def task_vars(card=CARD, play_hosts=None, **extra):
    """task_vars as the strategy hands them to an action: hostvars of the whole inventory."""
    hostvars = {}
    for name, (address, recipes) in FLEET.items():
        hostvars[name] = {"inventory_hostname": name, "ansible_host": address, "launchcard_recipes": recipes,
                          "launchcard_card_src": card}
        hostvars[name].update(extra)
    play_hosts = play_hosts or sorted(FLEET)
    return {"hostvars": hostvars, "groups": {"all": sorted(FLEET), "ungrouped": []},
            "ansible_play_hosts": play_hosts, "ansible_play_batch": play_hosts, "inventory_hostname": play_hosts[0]}


def action(args=None, search_path=None, check_mode=False):
    task = MagicMock()
    task.args = dict(args or {})
    task.async_val = 0
    task.check_mode = check_mode
    task.action = "launchcard.inference.launch_card"
    task.get_search_path.return_value = [search_path or REPO_ROOT]
    connection = MagicMock()
    connection._shell.tmpdir = None
    plugin = ActionModule(task, connection, PlayContext(), DataLoader(), None, None)
    return plugin, connection


def assert_no_host_contacted(connection):
    for method in ("exec_command", "put_file", "fetch_file", "_connect", "reset", "close"):
        assert not getattr(connection, method).called, method
    assert [c for c in connection.mock_calls if c[0] and not c[0].startswith("_shell")] == []


def instances(plan):
    return dict((inst["id"], inst) for h in plan["hosts"].values() for inst in h["instances"])


def failure(result):
    """The message of a run that failed: returned as the task's result, not raised (see ActionModule.run)."""
    assert result["failed"] is True and result["changed"] is False and "ansible_facts" not in result, result
    return result["msg"]


def test_plans_the_card_path_for_the_whole_inventory():
    plugin, connection = action()
    result = plugin.run(task_vars=task_vars())
    assert result["changed"] is False
    assert "failed" not in result
    plan = result["ansible_facts"]["launchcard_plan"]
    cards = result["ansible_facts"]["launchcard_cards"]
    assert sorted(plan["hosts"]) == sorted(FLEET)
    assert list(cards) == [CARD]
    assert cards[CARD]["model"]["repo"] == "zai-org/GLM-5.3-Flash"
    for name, (address, recipes) in FLEET.items():
        host = plan["hosts"][name]
        assert host["address"] == address
        assert [i["recipe"] for i in host["instances"]] == recipes
    router = plan["hosts"]["lc-router"]["instances"][0]
    argv = router["argv"]
    assert argv[argv.index("--prefill") + 1:argv.index("--prefill") + 3] == ["http://198.18.0.15:31000", "8998"]
    assert argv[argv.index("--decode") + 1] == "http://198.18.0.16:32000"
    assert result["msg"].startswith("zai-org/GLM-5.3-Flash@")
    assert result["msg"].endswith(": 7 recipe(s), 7 instance(s) on 7 host(s)")
    assert_no_host_contacted(connection)


def test_a_relative_src_is_found_next_to_the_playbook(tmp_path):
    os.mkdir(str(tmp_path / "files"))
    shutil.copy(CARD, str(tmp_path / "files" / "my-card.json"))
    plugin, connection = action({"src": "my-card.json"}, search_path=str(tmp_path))
    result = plugin.run(task_vars=task_vars(card=None))
    assert list(result["ansible_facts"]["launchcard_cards"]) == ["my-card.json"]
    assert sorted(result["ansible_facts"]["launchcard_plan"]["hosts"]) == sorted(FLEET)
    assert_no_host_contacted(connection)


def test_a_limit_still_plans_the_whole_inventory():
    whole, dummy = action()
    expected = whole.run(task_vars=task_vars())["ansible_facts"]["launchcard_plan"]
    # ansible-playbook --limit lc-router: the play's hosts shrink, the inventory does not
    limited, connection = action()
    result = limited.run(task_vars=task_vars(play_hosts=["lc-router"]))
    plan = result["ansible_facts"]["launchcard_plan"]
    assert sorted(plan["hosts"]) == sorted(FLEET)
    assert plan == expected
    # the router's peers are hosts outside the limit, at their planned ports
    router = plan["hosts"]["lc-router"]["instances"][0]
    assert "http://198.18.0.15:31000" in router["argv"] and "http://198.18.0.16:32000" in router["argv"]
    assert_no_host_contacted(connection)


def test_a_good_checksum_passes_and_a_bad_one_fails_before_planning():
    with open(CARD, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    plugin, dummy = action({"checksum": "sha256:" + digest.upper()})
    assert plugin.run(task_vars=task_vars())["ansible_facts"]["launchcard_plan"]["hosts"]

    bad = "0" * 64
    plugin, connection = action()
    message = failure(plugin.run(task_vars=task_vars(launchcard_card_checksum="sha256:" + bad)))
    assert message == "checksum: %s has sha256:%s, expected sha256:%s" % (CARD, digest, bad)
    assert_no_host_contacted(connection)

    plugin, dummy = action({"checksum": "md5:" + bad})
    message = failure(plugin.run(task_vars=task_vars()))
    assert message == "checksum: expected sha256:<hex>, found md5:" + bad


@pytest.mark.parametrize("name", ["13-argv-element-number.json", "14-argv-newline-injection.json",
                                  "06-revision-short.json", "01-not-json.json"])
def test_a_malformed_card_fails_naming_the_field(name):
    with open(os.path.join(MALFORMED, "expected.json")) as f:
        want = json.load(f)[name]
    path = os.path.join(MALFORMED, name)
    plugin, connection = action()
    message = failure(plugin.run(task_vars=task_vars(card=path)))
    assert want["path"] in message
    assert want["contains"] in message
    assert_no_host_contacted(connection)


def test_a_host_with_recipes_but_no_card_is_named():
    tv = task_vars()
    del tv["hostvars"]["lc-decode"]["launchcard_card_src"]
    plugin, dummy = action()
    message = failure(plugin.run(task_vars=tv))
    assert message == "lc-decode lists launchcard_recipes but has no launchcard_card_src"


def test_an_unknown_recipe_fails_naming_the_host():
    tv = task_vars()
    tv["hostvars"]["lc-cp"]["launchcard_recipes"] = ["sglang-nonexistent"]
    plugin, connection = action()
    message = failure(plugin.run(task_vars=tv))
    assert "lc-cp" in message and "sglang-nonexistent" in message
    assert_no_host_contacted(connection)


def test_every_failure_is_returned_not_raised(tmp_path):
    # ansible-core's own errors too: a relative card not found next to the playbook, a bad argument
    plugin, connection = action({"src": "no-such-card.json"}, search_path=str(tmp_path))
    assert "no-such-card.json" in failure(plugin.run(task_vars=task_vars(card=None)))
    assert_no_host_contacted(connection)
    plugin, dummy = action({"validate_certs": "maybe"})
    assert "validate_certs" in failure(plugin.run(task_vars=task_vars()))


def test_plain_http_is_refused_without_fetching(monkeypatch):
    from ansible_collections.launchcard.inference.plugins.action import launch_card

    fetched = []
    monkeypatch.setattr(launch_card, "open_url", lambda *a, **k: fetched.append(a))
    plugin, dummy = action()
    message = failure(plugin.run(task_vars=task_vars(card="http://cards.invalid/card.json")))
    assert message == "launchcard_card_src: only https:// URLs are fetched, found http://cards.invalid/card.json"
    assert fetched == []


def test_check_mode_plans_the_same():
    plugin, dummy = action()
    expected = copy.deepcopy(plugin.run(task_vars=task_vars()))
    plugin, dummy = action(check_mode=True)
    got = plugin.run(task_vars=task_vars())
    # every run has its own id (the run lock's); everything else is the same
    first, second = expected["ansible_facts"].pop("launchcard_run"), got["ansible_facts"].pop("launchcard_run")
    assert first["id"] != second["id"] and dict(first, id=None) == dict(second, id=None)
    assert got == expected


def test_the_run_is_named_once_for_the_lock():
    plugin, dummy = action()
    run = plugin.run(task_vars=task_vars())["ansible_facts"]["launchcard_run"]
    plan = plugin.run(task_vars=task_vars())["ansible_facts"]["launchcard_plan"]
    assert re.match(r"^\d{8}T\d{6}Z-[0-9a-f]{8}$", run["id"])
    assert run["user"] and run["controller"]
    assert run["anchor"] == sorted(plan["hosts"])[0]
    assert list(run["cards"].values()) == ["sha256:" + card_sha256(c) for c in
                                           plugin.run(task_vars=task_vars())["ansible_facts"]["launchcard_cards"].values()]


def test_a_mini_lb_router_is_a_warning_of_the_plan_and_the_override_silences_it():
    """Issue 26, item 2: the example card's PD router runs --mini-lb; the plan says what that costs and how to run
    the regular PD router, which the override then does."""
    plugin, connection = action()
    result = plugin.run(task_vars=task_vars())
    (note,) = [w for w in result.get("warnings", []) if "--mini-lb" in w]
    assert note.startswith("lc-router: launchcard-glm-5.3-flash-sglang-router-0.service runs --mini-lb")
    assert "every upgrade of them is an outage" in note
    assert "launchcard_argv_overrides: {sglang-router: {remove: ['--mini-lb']}}" in note
    plugin, connection = action()
    result = plugin.run(task_vars=task_vars(launchcard_argv_overrides={"sglang-router": {"remove": ["--mini-lb"]}}))
    assert not [w for w in result.get("warnings", []) if "--mini-lb" in w]
    router = result["ansible_facts"]["launchcard_plan"]["hosts"]["lc-router"]["instances"][0]
    assert "--mini-lb" not in router["argv"] and "--pd-disaggregation" in router["argv"]
    assert_no_host_contacted(connection)


def test_a_plan_error_shows_the_cards_unknown_keys_beside_it(tmp_path):
    """A misspelt env on the card leaves the inventory's override of one of its variables nothing to act on: the
    error names the override, and the card's note says why."""
    with open(CARD) as f:
        doc = json.load(f)
    i = next(n for n, e in enumerate(doc["envs"]) if e.get("env"))
    recipe = load_card(json.dumps(doc), "card.json")["recipes"][i]["name"]
    name = sorted(doc["envs"][i]["env"])[0]
    doc["envs"][i]["enviroment"] = doc["envs"][i].pop("env")
    card = tmp_path / "typo.json"
    card.write_text(json.dumps(doc))
    plugin, connection = action()
    result = plugin.run(task_vars=task_vars(card=str(card), launchcard_argv_overrides={recipe: {"env": {name: None}}}))
    text = failure(result)
    assert "(note) %s: envs[%d].enviroment: unknown key 'enviroment'" % (card, i) in text, text
    assert "did you mean 'env'?" in text
    assert_no_host_contacted(connection)


def test_a_cached_commits_config_json_is_read_without_the_hub_clients_download_code(tmp_path):
    """A pinned revision's config.json already in the controller's hub cache (a later run of the same card) is read
    from its snapshot (huggingface_hub's layout, the blob behind a link) without importing huggingface_hub's download
    code; a revision that is not a commit goes through the client (here: offline, so it is not found)."""
    import subprocess
    import sys
    rev = "46a050bec13002ad29ee795c16e61cf4fa3c4a9c"
    repo_dir = tmp_path / "models--zai-org--GLM-5.3-Flash"
    (repo_dir / "blobs").mkdir(parents=True)
    (repo_dir / "snapshots" / rev).mkdir(parents=True)
    (repo_dir / "blobs" / "abc").write_text('{"num_hidden_layers": 2}')
    os.symlink("../../blobs/abc", str(repo_dir / "snapshots" / rev / "config.json"))
    code = ("import json, sys\n"
            "from ansible_collections.launchcard.inference.plugins.action.launch_card import hub_config_fetch\n"
            "fetch = hub_config_fetch('', '')\n"
            "out = {'config': fetch('zai-org/GLM-5.3-Flash', sys.argv[1])}\n"
            "out['download_code'] = 'huggingface_hub.file_download' in sys.modules\n"
            "try:\n"
            "    fetch('zai-org/GLM-5.3-Flash', 'main')\n"
            "except Exception as exc:\n"
            "    out['main'] = type(exc).__name__\n"
            "out['download_code_after'] = 'huggingface_hub.file_download' in sys.modules\n"
            "print(json.dumps(out))\n")
    env = dict(os.environ, HF_HUB_CACHE=str(tmp_path), HF_HUB_OFFLINE="1", PYTHONPATH=os.pathsep.join(sys.path))
    res = subprocess.run([sys.executable, "-c", code, rev], capture_output=True, text=True, env=env, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    assert out["config"] == {"num_hidden_layers": 2} and out["download_code"] is False
    assert out["download_code_after"] is True and "main" in out
