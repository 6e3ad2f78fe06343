# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/tasks/upgrade-batch.yml (and the upgrade-batch-hosts.yml it includes) run by ansible-playbook on a
local host: the surge's steps, in order.

TEST CODE: the example card's single-host PD layout behind the regular PD router (prefill, decode and router on
one 8-GPU host), the decode's env changed; the rollout is the collection's own (``_rollout.rollout``). The batch
file runs unchanged against a throwaway copy of the collection whose host-touching modules (``systemd_units``,
``router_workers``, ``http_health``, ``engine_drain``, ``host_state``, ``run_lock``) only log their arguments;
its filters, module_utils and plugin_utils, and the upgrade_fleet action, are the collection's own (symlinks); the
fleet step's share of the host (``upgrade_fleet.hosts``) is its own ``host_data``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.launchcard.inference.plugins.plugin_utils._units import host_units  # noqa: E402
from ansible_collections.launchcard.inference.plugins.plugin_utils._upgrade_fleet import host_data  # noqa: E402
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_outages import (  # noqa: E402
    EXAMPLE,
    OPTS,
    PD_ONE_HOST,
    REGULAR_PD,
    _decode_env,
    _upgrade,
)

# one stand-in module: logs its name and arguments, fails where LAUNCHCARD_TEST_FAIL names it and a unit it gates
MODULE = r'''#!/usr/bin/python
import json, os, sys
from ansible.module_utils.basic import AnsibleModule, _load_params

def main():
    params = _load_params()
    module = AnsibleModule(argument_spec=dict((k, dict(type="raw")) for k in params), supports_check_mode=True)
    with open(os.environ["LAUNCHCARD_TEST_LOG"], "a") as log:
        log.write(json.dumps({"module": %(name)r, "args": module.params}) + "\n")
    fail = os.environ.get("LAUNCHCARD_TEST_FAIL", "")
    if %(name)r == "http_health" and fail and any(fail == e.get("name") for e in module.params.get("endpoints") or []):
        module.fail_json(msg="%%s told to fail" %% fail, unhealthy=[fail])
    module.exit_json(changed=True, queued={}, unhealthy=[], removed=[], added=[], workers=[])

main()
'''
MODULES = ("systemd_units", "router_workers", "http_health", "engine_drain", "host_state", "run_lock")
DECODE = "launchcard-glm-5.3-flash-sglang-decode-0.service"
TWIN = "launchcard-glm-5.3-flash-sglang-decode-0-surge.service"


@pytest.fixture
def project(tmp_path):

    placement = [(h, r, dict(v, argv_overrides=REGULAR_PD)) for h, r, v in PD_ONE_HOST]
    # the twins' unit files as the upgrade_fleet action builds them: with the unit builder of the hosts' own
    rollout, plan = _upgrade(EXAMPLE, placement, _decode_env, twin_units=lambda host, twins: host_units(twins, OPTS))
    assert [s["unit"] for s in rollout["surges"]] == [DECODE]
    coll = tmp_path / "collections" / "ansible_collections" / "launchcard" / "inference"
    (coll / "plugins" / "modules").mkdir(parents=True)
    (coll / "galaxy.yml").write_text("namespace: launchcard\nname: inference\nversion: 1.0.0\n")
    for part in ("filter", "module_utils", "plugin_utils"):
        os.symlink(os.path.join(ROOT, "plugins", part), str(coll / "plugins" / part))
    for name in MODULES:
        (coll / "plugins" / "modules" / (name + ".py")).write_text(MODULE % {"name": name})
    # the batch's lock step (run when a batch failed) resolves at load
    (coll / "plugins" / "action").mkdir()
    for part in ("modules", "action"):
        os.symlink(os.path.join(ROOT, "plugins", part, "upgrade_fleet.py"), str(coll / "plugins" / part / "upgrade_fleet.py"))
    hp = plan["hosts"]["gpu-1"]
    records = {"card": {"revision": "1" * 40}, "instances": hp["instances"],
               "units": {u["name"]: {"text": u["content"]} for u in host_units(hp, OPTS)}}
    # what the fleet step (upgrade.yml's "Plan the rollout", run once) registers for this host
    cards = {hp["card"]: {"model": {"repo": "r", "revision": "2" * 40}}}
    hostvars = {"gpu-1": {"upgrade_current": {"record": records}, "preflight_result": {"lock": {"locks": []}}}}
    step = host_data(plan, cards, hostvars, "gpu-1", rollout, 5, False)
    play_vars = {
        "upgrade_batch": rollout["batches"][0], "upgrade_fleet": {"rollout": {}, "hosts": {"gpu-1": step}},
        "launchcard_plan": plan, "launchcard_host_plan": hp,
        "upgrade_current": {"record": records}, "upgrade_units_options": OPTS,
        "units_settings": {"secrets": {}, "secrets_file": "/nonexistent/secrets.env"},
        "units_health_interval_s": 1, "upgrade_router_timeout_s": 5,
        "upgrade_drain_s": 5, "launchcard_runtime_record": {}, "preflight_result": {"lock": {"locks": []}},
        "launchcard_run": {"id": "test", "anchor": None}, "upgrade_failure": "", "upgrade_runs": "?",
        "upgrade_batch_failed": False}
    (tmp_path / "vars.json").write_text(json.dumps(play_vars))
    (tmp_path / "inventory.ini").write_text(
        "gpu-1 ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
    (tmp_path / "play.yml").write_text('''
- hosts: all
  gather_facts: false
  # play vars, not -e: the batch's rescue sets upgrade_failure, which an extra var would outrank
  vars_files: [vars.json]
  tasks:
    - name: One batch
      ansible.builtin.include_tasks: %s
''' % os.path.join(ROOT, "playbooks", "tasks", "upgrade-batch.yml"))
    return tmp_path


def _run(project, fail=""):
    log = project / "calls.jsonl"
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), LAUNCHCARD_TEST_LOG=str(log),
               LAUNCHCARD_TEST_FAIL=fail, ANSIBLE_COLLECTIONS_PATH=str(project / "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0")
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(project / "inventory.ini"),
                          str(project / "play.yml")],
                         cwd=str(project), env=env, capture_output=True, text=True, timeout=600, check=False)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return res, calls


def _units(call):
    return [u["name"] for u in call["args"]["units"]]


def test_the_twin_serves_while_the_decode_switches(project):
    res, calls = _run(project)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    steps = [(c["module"], c["args"]) for c in calls]
    names = [m for m, a in steps]
    assert names == ["systemd_units", "http_health", "router_workers", "router_workers", "engine_drain",
                     "systemd_units", "http_health", "router_workers", "http_health", "router_workers",
                     "engine_drain", "systemd_units", "host_state"], names
    start, twin_gate, twin_in, old_out, drain, switch, gate, back, router_gate, twin_out, twin_drain, stop, dummy = \
        steps
    # the twin alone first, the host's units left as they are
    assert [u["name"] for u in start[1]["units"]] == [TWIN] and start[1]["prune"] is False
    assert "--base-gpu-id 4" in start[1]["units"][0]["content"] and "--port 32001" in start[1]["units"][0]["content"]
    assert [e["name"] for e in twin_gate[1]["endpoints"]] == [TWIN]
    # each gate waits the fleet step's budget for this host (launchcard_upgrade_gate_timeout_s: 5)
    assert twin_gate[1]["timeout"] == gate[1]["timeout"] == router_gate[1]["timeout"] == 5
    assert (twin_in[1]["add"], twin_in[1]["worker_type"]) == (["http://127.0.0.1:32001"], "decode")
    assert old_out[1]["remove"] == ["http://127.0.0.1:32000"]
    # only the decode drains: the prefill keeps serving beside the twin
    assert [e["name"] for e in drain[1]["endpoints"]] == [DECODE]
    # the switch keeps the twin (listed, so not pruned)
    assert TWIN in [u["name"] for u in switch[1]["units"]] and DECODE in [u["name"] for u in switch[1]["units"]]
    assert DECODE in [e["name"] for e in gate[1]["endpoints"]]
    # the switch writes the upgraded instances' facts for node exporter (the twin is not an instance of the plan)
    assert switch[1]["textfile"]["event"] == "upgrade"
    assert switch[1]["textfile"]["instances"][DECODE]["role"] == "decode" and TWIN not in switch[1]["textfile"]["instances"]
    assert (back[1]["add"], back[1]["worker_type"]) == (["http://127.0.0.1:32000"], "decode")
    assert twin_out[1]["remove"] == ["http://127.0.0.1:32001"]
    assert [e["name"] for e in twin_drain[1]["endpoints"]] == [TWIN]
    # the host's own units: the twin is pruned
    assert TWIN not in [u["name"] for u in stop[1]["units"]] and stop[1].get("prune") is None


def test_a_failed_gate_rolls_back_beside_the_twin_then_removes_it(project):
    res, calls = _run(project, fail=DECODE)
    assert res.returncode != 0 and "upgrade stopped: gpu-1 failed (Upgrade | Gate on health" in res.stdout, \
        res.stdout[-3000:] + res.stderr[-2000:]
    names = [c["module"] for c in calls]
    assert names == ["systemd_units", "http_health", "router_workers", "router_workers", "engine_drain",
                     "systemd_units", "http_health", "systemd_units", "http_health", "router_workers", "http_health",
                     "router_workers", "engine_drain", "systemd_units"], names
    rollback = calls[7]["args"]
    # the twin passed its gate: it keeps serving through the rollback
    assert TWIN in [u["name"] for u in rollback["units"]]
    assert calls[9]["args"]["add"] == ["http://127.0.0.1:32000"] and calls[9]["args"]["worker_type"] == "decode"
    stop = calls[13]["args"]
    assert TWIN not in [u["name"] for u in stop["units"]]
