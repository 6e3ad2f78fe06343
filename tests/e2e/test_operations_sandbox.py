# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""End to end: the faults an operator meets on a running fleet (issue 9), on the sandbox fleet.

Fleet: inventories/operations/gpus.ini (lc-ops-*, 198.18.13.0/24, state dir .sandbox-operations/): four of the
sandbox fleet's hosts (context parallel, the PD pair and its router) on a fleet of its own, beside test_deploy_sandbox.py;
every engine is the stand-in. Each test starts from the deployed example card and leaves the fleet deployed and
healthy again. Every assertion reads the hosts' real state over SSH (unit files, ``systemctl show``, ``ps``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.request

import pytest

from playbook_output import SUMMARY_TASK, recap, report_table
from sandbox_cli import BIN, ENV, ROOT, Fleet, run
from sandbox_registry import CONTAINER_SANDBOX

INVENTORY = "inventories/operations/gpus.ini"
STATE = ".sandbox-operations"
FLEET = Fleet(INVENTORY, STATE)
ssh = FLEET.ssh
pytestmark = CONTAINER_SANDBOX

SUMMARY_COLUMNS = ("host", "recipe", "engine", "role", "port", "state")
TOKEN_A = "hf_launchcardOPSrotationAAAA0123456789"
TOKEN_B = "hf_launchcardOPSrotationBBBB9876543210"
# No SSH connection sharing: a master connection to a host that powered off would hang on its
# dead TCP session instead of failing (ansible.cfg keeps masters 120 s).
NO_MUX = dict(ENV, ANSIBLE_SSH_ARGS="-o ControlMaster=no -o ControlPath=none -o PreferredAuthentications=publickey")


def playbook_no_mux(*extra):
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), "playbooks/deploy.yml", "-i", INVENTORY] + list(extra),
                          cwd=ROOT, env=NO_MUX, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)


def playbook(*extra):
    return FLEET.playbook("deploy", *extra)


@pytest.fixture(scope="module")
def fleet():
    """Boot the operations fleet on fresh hosts; ``{host: address}``."""
    with FLEET.booted(fresh=True) as addresses:
        yield addresses


@pytest.fixture(scope="module")
def plan():
    """The operations inventory's plan, from the same planner call the demo uses."""
    return FLEET.plan()


@pytest.fixture(scope="module")
def deployed(fleet):
    res = playbook()
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    return res


def instance(plan, role, engine="sglang"):
    return next(i for hp in plan["hosts"].values() for i in hp["instances"] if i["role"] == role and i["engine"] == engine)


def card_with(tmp_path, name, change):
    with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as f:
        card = json.load(f)
    change(card)
    path = tmp_path / name
    path.write_text(json.dumps(card))
    return str(path)


def md5(address, unit):
    return ssh(address, "md5sum /etc/systemd/system/%s" % unit).stdout


def show(address, units, props):
    out = ssh(address, "systemctl show -p %s %s" % (",".join(props), " ".join(units))).stdout
    blocks = [dict(line.split("=", 1) for line in b.splitlines() if "=" in line) for b in out.strip().split("\n\n")]
    return dict(zip(units, blocks))


def invocations(fleet, plan):
    out = {}
    for host, hp in plan["hosts"].items():
        units = [i["unit"] for i in hp["instances"]]
        for unit, props in show(fleet[host], units, ["InvocationID"]).items():
            out[unit] = props["InvocationID"]
    return out


def test_engines_run_their_pinned_container_and_ready_means_answering(fleet, plan, deployed):
    """Issue 9 item 7 on the container runtime: the unit runs the container of the digest the host
    recorded, systemd accepts the unit on the host, its weights mount is required, and 'active' came
    after the readiness check. (The native runtime's hardening is checked on its own fleet,
    tests/e2e/test_upgrade_sandbox.py.)"""
    decode = instance(plan, "decode")
    addr = fleet[decode["host"]]
    wanted = ["ActiveState", "RequiresMountsFor", "ExecStartPost"]
    props = show(addr, [decode["unit"]], wanted)[decode["unit"]]
    assert props["ActiveState"] == "active", props
    assert "/var/lib/launchcard/models" in props["RequiresMountsFor"], props
    # the readiness check ran and succeeded before the unit became active
    assert "wait-ready.py" in props["ExecStartPost"] and re.search(r"code=exited ; status=0\b", props["ExecStartPost"]), props
    refs = json.loads(ssh(addr, "cat /var/lib/launchcard/state.json").stdout)["runtime"]["image_refs"]
    running = ssh(addr, "podman ps --format '{{.Names}} {{.Image}}'").stdout.split()
    assert running == [decode["id"], refs["lmsysorg/sglang:latest"]], (running, refs)
    verify = ssh(addr, "systemd-analyze verify /etc/systemd/system/%s" % decode["unit"])
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_hosts_outside_the_limit_read_not_in_this_run(fleet, plan, deployed):
    """Issue 9 item 9: the summary prints as plain lines, and hosts outside --limit say so."""
    router = instance(plan, "router")
    res = playbook("--limit", router["host"])
    assert res.returncode == 0, res.stdout[-4000:]
    assert "msg: |-" in res.stdout  # the table is one multi-line block, not JSON-quoted strings
    table = report_table(res.stdout, SUMMARY_TASK, SUMMARY_COLUMNS)
    states = {r["host"]: r["state"] for r in table}
    assert states.pop(router["host"]) == "healthy"
    assert set(states.values()) == {"not in this run"}, states


def test_a_limit_that_would_point_the_router_at_a_moved_peer_refuses(fleet, plan, deployed, tmp_path):
    """Issue 9 item 2: the decode port moves (32000 -> 32001) and the run is limited to the router:
    the router must not be rewritten to a port that the decode host, outside the limit, does not
    serve; the run names the host to include and changes nothing."""
    router, decode = instance(plan, "router"), instance(plan, "decode")

    def move(card):
        argv = card["envs"][decode["recipe_index"]]["argv"]
        argv[argv.index("--port") + 1] = str(decode["port"] + 1)
    moved = card_with(tmp_path, "moved-decode.json", move)
    before = md5(fleet[router["host"]], router["unit"])
    res = playbook("-e", "launchcard_card_src=%s" % moved, "--limit", router["host"])
    out = " ".join((res.stdout + res.stderr).split())
    assert res.returncode != 0, out[-3000:]
    assert "would point at %s:%d (%s)" % (decode["address"], decode["port"] + 1, decode["host"]) in out, out[-3000:]
    assert "Include %s in --limit" % decode["host"] in out
    assert md5(fleet[router["host"]], router["unit"]) == before
    assert all(c["changed"] == 0 for c in recap(res.stdout).values()), recap(res.stdout)


def test_crash_loop_fails_fast_with_exit_status_and_journal(fleet, plan, deployed, tmp_path):
    """Issue 9 item 5: an engine that exits at start is reported in seconds, with its exit status and
    last journal lines; systemd stops restarting it after StartLimitBurst tries; a deploy of the
    good card brings it back (its start counter is reset)."""
    decode = instance(plan, "decode")
    # A Hub setting mistyped in the card (allowed: it is the engine's own): huggingface_hub/constants.py (2.4.0)
    # reads HF_HUB_ETAG_TIMEOUT with int() when imported, so the engine (SGLang, and the stand-in as it resolves
    # --model-path) dies at start with a ValueError, before its port opens.
    bad = card_with(tmp_path, "crash.json",
                    lambda c: c["envs"][decode["recipe_index"]]["env"].update({"HF_HUB_ETAG_TIMEOUT": "ten"}))
    started = time.monotonic()
    res = playbook("-e", "launchcard_card_src=%s" % bad)
    took = time.monotonic() - started
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-4000:]
    m = re.search(r"%s \((engine exited, systemd restarts it|engine exited while starting|engine restarted by systemd|unit failed) "
                  r"\(Result=\S+, exit status (\d+), NRestarts=\d+\); journal: ([^\n]*?), after ([\d.]+)s of \d+s\)"
                  % re.escape(decode["unit"]), " ".join(out.split()))
    assert m, out[-4000:]
    assert m.group(2) != "0" and "ValueError: invalid literal for int() with base 10" in m.group(3), m.group(0)
    assert float(m.group(4)) < 120 and took < 400, (m.group(4), took)  # far below the gate's budget (the units' start budget, 1,800 s here)
    assert recap(res.stdout)[decode["host"]]["failed"] == 1
    # bounded restarts: 10 starts in 600 s, 30 s apart (_units.py START_LIMIT_*, RESTART_SEC), then failed
    deadline = time.monotonic() + 420
    while time.monotonic() < deadline:
        props = show(fleet[decode["host"]], [decode["unit"]], ["ActiveState", "Result", "NRestarts"])[decode["unit"]]
        if props["ActiveState"] == "failed":
            break
        time.sleep(5)
    # systemd keeps the first failure's Result (exit-code) when an automatic restart hits the limit
    assert props["ActiveState"] == "failed" and props["Result"] == "exit-code", props
    assert int(props["NRestarts"]) <= 11, props  # StartLimitBurst=10 starts, the first one manual
    limit = ssh(fleet[decode["host"]], "journalctl -u %s -o cat --no-pager | tail -n 20" % decode["unit"]).stdout
    assert "Start request repeated too quickly" in limit, limit
    time.sleep(35)  # longer than RestartSec=30: no further start
    assert show(fleet[decode["host"]], [decode["unit"]], ["ActiveState", "Result", "NRestarts"])[decode["unit"]] == props
    res = playbook()
    assert res.returncode == 0, res.stdout[-5000:]
    assert show(fleet[decode["host"]], [decode["unit"]], ["ActiveState"])[decode["unit"]]["ActiveState"] == "active"


def test_an_unreachable_host_under_budget_0_changes_nothing(fleet, plan, deployed, tmp_path):
    """Issue 9 item 1: lc-cp (nobody's peer) is powered off; a card that changes only the decode
    recipe must not reach the decode host: the budget counts the unreachable host."""
    cp = instance(plan, "aggregated", "sglang")
    decode = instance(plan, "decode")
    changed = card_with(tmp_path, "decode-env.json",
                        lambda c: c["envs"][decode["recipe_index"]]["env"].update({"LAUNCHCARD_E2E_MARK": "1"}))
    before = {h: ssh(fleet[h], "md5sum /etc/systemd/system/launchcard-*.service").stdout
              for h in plan["hosts"] if h != cp["host"]}
    pid = show(fleet[decode["host"]], [decode["unit"]], ["MainPID"])[decode["unit"]]["MainPID"]
    # close this machine's SSH master connection to the host before it goes
    run(["ssh", "-O", "exit", "-o", "ControlPath=%s" % os.path.expanduser("~/.ansible/cp/%C"), "-l", "root",
         fleet[cp["host"]]])
    ssh(fleet[cp["host"]], "systemctl poweroff")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and ssh(fleet[cp["host"]], "true").returncode == 0:
            time.sleep(2)
        res = playbook_no_mux("-e", "launchcard_card_src=%s" % changed)
        out = res.stdout + res.stderr
        assert res.returncode != 0, out[-4000:]
        assert "could not be checked" in out and "over the failure budget of 0 %" in " ".join(out.split()), out[-4000:]
        counts = recap(res.stdout)
        assert counts[cp["host"]]["unreachable"] == 1, counts
        assert all(c["changed"] == 0 for c in counts.values()), counts
        assert "TASK [launchcard.inference.units" not in res.stdout
        for h, text in before.items():
            assert ssh(fleet[h], "md5sum /etc/systemd/system/launchcard-*.service").stdout == text, h
        assert show(fleet[decode["host"]], [decode["unit"]], ["MainPID"])[decode["unit"]]["MainPID"] == pid
    finally:
        up = FLEET.up()
        assert up.returncode == 0, up.stdout + up.stderr
    res = playbook_no_mux()
    assert res.returncode == 0, res.stdout[-5000:]
    assert show(fleet[cp["host"]], [cp["unit"]], ["ActiveState"])[cp["unit"]]["ActiveState"] == "active"


def test_secrets_rotation_restarts_exactly_the_units_that_read_it(fleet, plan, deployed, tmp_path):
    """Issue 9 item 6: a new token restarts the units that read the secrets file, a run without
    the token changes nothing and keeps the file, and the file goes only when asked. Only an engine that may
    download reads it (#42): the PD pair's recipes say so in the card (HF_HUB_OFFLINE=0), the context-parallel
    engine and the router keep the default (launchcard_hf_offline), name no secrets file and never restart for
    it. The token never shows in the run's verbose output, a unit file, ``systemctl show`` or the journal: only
    in the 0600 file."""
    online = {instance(plan, "prefill")["recipe_index"], instance(plan, "decode")["recipe_index"]}
    card = card_with(tmp_path, "pd-online.json",
                     lambda c: [c["envs"][i]["env"].update({"HF_HUB_OFFLINE": "0"}) for i in online])
    src = "launchcard_card_src=%s" % card
    res = playbook("-e", src, "-e", "launchcard_hf_token=%s" % TOKEN_A, "-v")
    assert res.returncode == 0, res.stdout[-4000:]
    assert TOKEN_A not in res.stdout and TOKEN_A not in res.stderr
    for host, hp in plan["hosts"].items():
        probe = ssh(fleet[host], "cat /etc/systemd/system/launchcard-*.service; systemctl show %s; "
                                 "journalctl --no-pager -q -n 500; stat -c %%a /etc/launchcard/secrets.env; "
                                 "cat /etc/launchcard/secrets.env" % " ".join(i["unit"] for i in hp["instances"]))
        head, dummy, tail = probe.stdout.rpartition("\n600\n")
        assert head, "secrets.env is not mode 0600 on %s: %s" % (host, probe.stdout[-300:])
        assert TOKEN_A not in head, "token leaked on %s" % host
        assert TOKEN_A in tail  # an engine that may download can still read it from the 0600 file
    first = invocations(fleet, plan)
    readers = {u for h, hp in plan["hosts"].items() for u in
               ssh(fleet[h], "grep -l '^EnvironmentFile=-/etc/launchcard/secrets.env$' "
                             "/etc/systemd/system/launchcard-*.service").stdout.split()}
    readers = {os.path.basename(p) for p in readers}
    # the units of the recipes that may download name the file, the offline ones do not, token or not
    assert readers == {i["unit"] for hp in plan["hosts"].values() for i in hp["instances"]
                       if i["recipe_index"] in online}, readers
    assert set(first) - readers, first  # the offline units are there to not restart

    res = playbook("-e", src, "-e", "launchcard_hf_token=%s" % TOKEN_B)
    assert res.returncode == 0, res.stdout[-4000:]
    assert TOKEN_B not in res.stdout + res.stderr
    second = invocations(fleet, plan)
    assert {u for u in first if first[u] != second[u]} == readers
    for h in plan["hosts"]:
        assert ssh(fleet[h], "cat /etc/launchcard/secrets.env").stdout == "HF_TOKEN=%s\n" % TOKEN_B

    res = playbook("-e", src)  # the vault not loaded: nothing changes, nothing restarts
    assert res.returncode == 0, res.stdout[-4000:]
    assert all(c["changed"] == 0 for c in recap(res.stdout).values()), recap(res.stdout)
    assert invocations(fleet, plan) == second
    h0 = sorted(plan["hosts"])[0]
    assert ssh(fleet[h0], "cat /etc/launchcard/secrets.env").stdout == "HF_TOKEN=%s\n" % TOKEN_B

    res = playbook("-e", src, "-e", "launchcard_hf_token_remove=true")
    assert res.returncode == 0, res.stdout[-4000:]
    for h in plan["hosts"]:
        assert ssh(fleet[h], "test -e /etc/launchcard/secrets.env").returncode == 1, h
    third = invocations(fleet, plan)
    assert {u for u in second if second[u] != third[u]} == readers

    res = playbook()  # back to the example card: every engine offline again
    assert res.returncode == 0, res.stdout[-4000:]
    for h in plan["hosts"]:
        # (a liveness probe's unit names the file only to make it inaccessible: InaccessiblePaths=)
        assert ssh(fleet[h], "grep -l '^EnvironmentFile=.*secrets.env' /etc/systemd/system/launchcard-*.service").stdout == "", h


def test_a_systemctl_edit_dropin_is_reported_and_removed_unless_allowed(fleet, plan, deployed):
    """Issue 9 item 4: `systemctl edit` (Restart=no) on the decode unit is drift: the deploy says so,
    removes it and the unit gets its self-healing back; an allowed drop-in stays."""
    decode = instance(plan, "decode")
    addr = fleet[decode["host"]]
    dropin = "/etc/systemd/system/%s.d/override.conf" % decode["unit"]
    edit = ("mkdir -p /etc/systemd/system/%s.d && printf '[Service]\nRestart=no\n' > %s && systemctl daemon-reload"
            % (decode["unit"], dropin))
    assert ssh(addr, edit).returncode == 0
    assert show(addr, [decode["unit"]], ["Restart"])[decode["unit"]]["Restart"] == "no"
    res = playbook()
    assert res.returncode == 0, res.stdout[-4000:]
    # the warning, however the terminal width wrapped it
    assert "drift:drop-in%soverrides" % dropin in "".join((res.stdout + res.stderr).split()), res.stderr[-2000:]
    assert recap(res.stdout)[decode["host"]]["changed"] >= 1
    assert ssh(addr, "test -e %s" % dropin).returncode == 1
    assert show(addr, [decode["unit"]], ["Restart", "ActiveState"])[decode["unit"]] == {
        "Restart": "on-failure", "ActiveState": "active"}
    # allowed: kept, and a second deploy changes nothing
    assert ssh(addr, edit).returncode == 0
    allowed = json.dumps({"launchcard_allowed_dropins": ["%s.d/override.conf" % decode["unit"]]})
    res = playbook("-e", allowed)
    assert res.returncode == 0, res.stdout[-4000:]
    assert recap(res.stdout)[decode["host"]]["changed"] == 0, recap(res.stdout)
    assert show(addr, [decode["unit"]], ["Restart"])[decode["unit"]]["Restart"] == "no"
    assert ssh(addr, "rm -r /etc/systemd/system/%s.d && systemctl daemon-reload" % decode["unit"]).returncode == 0


def test_undeploy_removes_the_units_and_a_redeploy_restores_them(fleet, plan, deployed):
    """Issue 9 item 9: undeploy stops, disables and deletes the card's units; weights and the
    images stay; a deploy brings every engine back healthy."""
    undeploy = [os.path.join(BIN, "ansible-playbook"), "playbooks/undeploy.yml", "-i", INVENTORY]
    # check mode with every removal asked: says what would go, removes nothing
    res = run(undeploy + ["--check", "-e", "launchcard_undeploy_remove_weights=true",
                          "-e", "launchcard_undeploy_remove_images=true"])
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    images_task = res.stdout.split("TASK [Undeploy | Delete the card's images (podman)]", 1)[-1].split("\nTASK [", 1)[0]
    assert re.search(r"^changed: \[lc-\S+\] => \(item=docker\.io/\S+@sha256:", images_task, re.M), res.stdout[-4000:]
    assert all(c["changed"] >= 1 for c in recap(res.stdout).values()), recap(res.stdout)
    res = playbook()  # still deployed: a deploy changes nothing
    assert res.returncode == 0 and all(c["changed"] == 0 for c in recap(res.stdout).values()), res.stdout[-3000:]
    res = run(undeploy)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    for host in plan["hosts"]:
        left = ssh(fleet[host], "ls /etc/systemd/system/ | grep '^launchcard-'; "
                                "systemctl list-units --all --no-legend --plain 'launchcard-*' | grep -v not-found; "
                                "test -n \"$(podman images -q)\" && test -d /var/lib/launchcard/models && echo kept")
        assert left.stdout.strip() == "kept", (host, left.stdout)
    res = playbook()
    assert res.returncode == 0, res.stdout[-5000:]
    table = report_table(res.stdout, SUMMARY_TASK, SUMMARY_COLUMNS)
    assert {r["state"] for r in table} == {"healthy"}, table
    assert len(table) == sum(len(hp["instances"]) for hp in plan["hosts"].values()), table


def pd_generation_2(plan, tmp_path):
    """The example card with a new env on its prefill and decode recipes: an upgrade of the PD pair."""
    prefill, decode = instance(plan, "prefill"), instance(plan, "decode")

    def mark(card):
        for idx in (prefill["recipe_index"], decode["recipe_index"]):
            card["envs"][idx].setdefault("env", {})["LAUNCHCARD_E2E_GENERATION"] = "2"
    return card_with(tmp_path, "pd-generation-2.json", mark)


LOCKS = "cat /var/lib/launchcard/lock.json /var/lib/launchcard/fleet-lock.json 2>/dev/null; true"


def test_an_upgrade_that_drops_requests_is_listed_by_check_mode_and_refused_without_the_variable(
        fleet, plan, deployed, tmp_path):
    """Issue 26 item 4: the example card's PD router runs --mini-lb (no worker API), so an upgrade of its pair
    drops requests. Check mode lists both sides, each with its host and why; the real run refuses before it
    installs, stages or restarts anything, naming both instances and launchcard_upgrade_allow_outage, and leaves
    every unit, process and lock as it was."""
    prefill, decode, router = instance(plan, "prefill"), instance(plan, "decode"), instance(plan, "router")
    new = pd_generation_2(plan, tmp_path)
    units = "md5sum /etc/systemd/system/launchcard-*.service"
    files = {a: ssh(a, units).stdout for a in fleet.values()}
    before = invocations(fleet, plan)
    upgrade = [os.path.join(BIN, "ansible-playbook"), "playbooks/upgrade.yml", "-i", INVENTORY,
               "-e", "launchcard_card_src=%s" % new]

    check = run(upgrade + ["--check"])
    assert check.returncode == 0, check.stdout[-6000:] + check.stderr[-2000:]
    said = " ".join(check.stdout.split())
    mini_lb = ("its router %s (%s) runs --mini-lb, the debug balancer of SGLang: no worker API, so it cannot be "
               "drained" % (router["host"], router["unit"]))
    for inst in (decode, prefill):
        line = re.search(r"outage: %s: %s \(batch \d+\): ([^']*)" % (re.escape(inst["host"]), re.escape(inst["unit"])),
                         said)
        assert line, said[-6000:]
        assert mini_lb in line.group(1), line.group(1)
        assert "no other %s instance behind router %s" % (inst["role"], router["host"]) in line.group(1), line.group(1)
    assert "outages: 2 instance(s) would drop requests" in said, said[-6000:]
    assert invocations(fleet, plan) == before

    res = run(upgrade)
    assert res.returncode != 0, res.stdout[-6000:]
    said = " ".join((res.stdout + res.stderr).split())
    assert "upgrade refused: it would drop requests on 2 instance(s), so nothing was installed, staged or " \
           "restarted:" in said, said[-6000:]
    assert "%s: %s (batch" % (decode["host"], decode["unit"]) in said
    assert "%s: %s (batch" % (prefill["host"], prefill["unit"]) in said
    assert "Set launchcard_upgrade_allow_outage: true in the inventory" in said
    assert "Upgrade | Switch the units" not in res.stdout and "Upgrade | Batches" not in res.stdout
    assert invocations(fleet, plan) == before
    assert {a: ssh(a, units).stdout for a in fleet.values()} == files
    assert {a: ssh(a, LOCKS).stdout for a in fleet.values()} == {a: "" for a in fleet.values()}


def test_upgrade_moves_the_prefill_decode_pair_as_one_batch_and_the_router_answers(fleet, plan, deployed, tmp_path):
    """Issue 12 item 8: the example card's prefill/decode pair, upgraded (a new env on both sides),
    moves as one batch, both sides run a new process, and a request routed through prefill and decode
    answers afterwards. Its --mini-lb router cannot drain them (the outage the test above is refused), so
    this run allows it (launchcard_upgrade_allow_outage). The fleet goes back to the example card at the end."""
    prefill, decode, router = instance(plan, "prefill"), instance(plan, "decode"), instance(plan, "router")
    new = pd_generation_2(plan, tmp_path)
    before = invocations(fleet, plan)
    upgrade = [os.path.join(BIN, "ansible-playbook"), "playbooks/upgrade.yml", "-i", INVENTORY,
               "-e", "launchcard_card_src=%s" % new, "-e", "launchcard_upgrade_allow_outage=true"]
    res = run(upgrade)
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    batches = re.findall(r"batch \d+ \([^)]*\): ([^\n\\]+)", res.stdout)
    pair = [b for b in batches if prefill["host"] in b]
    assert pair and decode["host"] in pair[0], batches  # partners in one batch
    after = invocations(fleet, plan)
    assert after[prefill["unit"]] != before[prefill["unit"]] and after[decode["unit"]] != before[decode["unit"]]
    untouched = [u for u in before if u not in (prefill["unit"], decode["unit"], router["unit"])]
    assert all(after[u] == before[u] for u in untouched), (before, after)
    for inst in (prefill, decode):
        assert "LAUNCHCARD_E2E_GENERATION=2" in ssh(fleet[inst["host"]], "cat /etc/systemd/system/%s" % inst["unit"]).stdout
    body = json.dumps({"model": router["served_model"], "prompt": "hi", "max_tokens": 4}).encode()
    req = urllib.request.Request(router["url"] + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        text = json.loads(resp.read())["choices"][0]["text"]
    assert "prefill=" in text and "decode=" in text, text
    res = playbook()  # back to the example card
    assert res.returncode == 0, res.stdout[-4000:]


def misspelt_inventory(tmp_path, group):
    """The operations inventory with ``group``'s recipes under a misspelt name (``launchcard_recipe``), beside the
    real group_vars, cards and fleet key (``{{ inventory_dir }}/../..`` reads them)."""
    inv = tmp_path / "inventories" / "operations"
    inv.mkdir(parents=True)
    for name in ("cards", STATE):
        os.symlink(os.path.join(ROOT, name), str(tmp_path / name))
    os.symlink(os.path.join(ROOT, "inventories", "operations", "group_vars"), str(inv / "group_vars"))
    with open(os.path.join(ROOT, INVENTORY)) as f:
        text = f.read()
    marker = "[%s:vars]\nlaunchcard_recipes=" % group
    assert marker in text
    (inv / "gpus.ini").write_text(text.replace(marker, "[%s:vars]\nlaunchcard_recipe=" % group))
    return str(inv / "gpus.ini")


def test_a_host_whose_recipes_vanish_keeps_serving_unless_removal_is_allowed(fleet, plan, deployed, tmp_path):
    """Issue 42 (inventory mistakes): a group's launchcard_recipes misspelt leaves its host out of the plan. The
    deploy names the variable, and, check mode or not, preflight refuses to stop the engine the host serves: the unit
    keeps running the same process. With launchcard_allow_removal=true it is removed; the example inventory then
    restores it."""
    host = "lc-ops-cp"
    (cp,) = plan["hosts"][host]["instances"]
    addr = fleet[host]
    inventory = misspelt_inventory(tmp_path, "sglang_cp")
    deploy = [os.path.join(BIN, "ansible-playbook"), "playbooks/deploy.yml", "-i", inventory]
    before = show(addr, [cp["unit"]], ["ActiveState", "InvocationID"])[cp["unit"]]
    assert before["ActiveState"] == "active", before
    for extra in (["--check"], []):
        res = run(deploy + extra)
        # one line per message: the warning and the YAML result are wrapped at the terminal's width
        out = " ".join((res.stdout + res.stderr).split())
        assert res.returncode != 0, out[-6000:]
        assert "launchcard_recipe (lc-ops-cp): not a variable of launchcard.inference, ignored; did you mean " \
               "launchcard_recipes?" in out, out[-6000:]
        # preflight refuses it (the host has a call for this check alone), before any host changes
        assert "preflight failed on %s: removal needs every recorded instance planned, found %s (this host serves %s, " \
               "which the plan no longer places here (launchcard_recipe is set on this host: did you mean " \
               "launchcard_recipes?)" % (host, cp["id"], cp["id"]) in out, out[-6000:]
        after = show(addr, [cp["unit"]], ["ActiveState", "InvocationID"])[cp["unit"]]
        assert after == before, (extra, before, after)
        assert ssh(addr, "test -f /etc/systemd/system/%s" % cp["unit"]).returncode == 0
    res = run(deploy + ["-e", "launchcard_allow_removal=true"])
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    assert ssh(addr, "test -e /etc/systemd/system/%s" % cp["unit"]).returncode != 0
    assert show(addr, [cp["unit"]], ["ActiveState"])[cp["unit"]]["ActiveState"] == "inactive"
    res = playbook()  # the example inventory places it again
    assert res.returncode == 0, res.stdout[-4000:]
    assert show(addr, [cp["unit"]], ["ActiveState"])[cp["unit"]]["ActiveState"] == "active"
