# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""End to end: upgrade.yml moves four SGLang replicas behind a real sglang-router (regular mode)
to a new card while a load generator sends completions through the router.

Fleet: inventories/upgrade/gpus.ini (lc-up-*, 198.18.9.0/24, state dir .sandbox-upgrade/).
The last case bumps the NVIDIA driver of two replicas under the same load (stack reboots drain first).
Cards: tests/e2e/cards/upgrade-v1.json (deployed first), upgrade-v2.json (a new flag,
--max-running-requests 32, and a new hf revision), upgrade-v3-bad.json (another revision whose
engine never turns healthy: LAUNCHCARD_STANDIN_FAIL_HEALTH=1 in its env).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from sandbox_cli import BIN, ENV, ROOT, Fleet
from playbook_output import host_failures, recap
from router_load import Load, healthy_workers, http

INVENTORY = "inventories/upgrade/gpus.ini"
STATE = ".sandbox-upgrade"
FLEET = Fleet(INVENTORY, STATE)
playbook, ssh, down = FLEET.playbook, FLEET.ssh, FLEET.down
CARDS = os.path.join(ROOT, "tests", "e2e", "cards")
WORKERS = {"lc-up-w1": "198.18.9.11", "lc-up-w2": "198.18.9.12", "lc-up-w3": "198.18.9.13", "lc-up-w4": "198.18.9.14"}
ROUTER = "198.18.9.20"
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"
ROUTER_URL = "http://%s:30080" % ROUTER
WORKER_URLS = {"http://%s:30000" % a for a in WORKERS.values()}
MODEL = "launchcard-test/Upgrade-Tiny"
REV1, REV2, REV3 = "1" * 40, "2" * 40, "3" * 40
SNAPSHOTS = "/var/lib/launchcard/models/hub/models--launchcard-test--Upgrade-Tiny/snapshots"
SERIAL = 1
# Fast gates for the test: a drain bounded at 2 s (engine_drain: the stand-in answers in milliseconds) and a gate
# that gives up on the bad revision after 20 s.
FAST = ["-e", "launchcard_upgrade_drain_s=2", "-e", "launchcard_upgrade_gate_timeout_s=20"]

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("systemd-nspawn"),
                                reason="the sandbox fleet needs root and systemd-nspawn")


def host_facts(address):
    """(ExecStart, revision recorded in state.json, unit active state) of the replica on ``address``."""
    unit = "launchcard-upgrade-tiny-sglang-aggregated-*[0-9].service"  # not its liveness probe, a oneshot loaded while it runs
    out = ssh(address, "systemctl show -p ExecStart --value %s; echo ===; systemctl is-active %s; echo ===; "
                       "cat /var/lib/launchcard/state.json" % (unit, unit))
    execstart, active, state = out.stdout.split("===\n")
    return execstart, json.loads(state)["card"]["revision"], active.strip()


def served_snapshot(address):
    """The snapshot directory the replica's engine resolved its model to at start (the stand-in reports it in
    /v1/models as ``launchcard_standin.snapshot``; it resolves the model as vLLM and SGLang do offline)."""
    status, body = http("GET", "http://%s:30000/v1/models" % address, timeout=3)
    if status != 200:
        return None
    return json.loads(body)["data"][0]["launchcard_standin"]["snapshot"]


WATCH = {}  # the SnapshotWatch of the upgrade to v2 (fixture `upgraded`)


class SnapshotWatch(object):
    """Every replica's served snapshot, polled while an upgrade runs: ``seen[host]`` lists ``(time, revision)``
    each time what it serves changes (an engine that does not answer is skipped)."""

    def __init__(self):
        self.seen = dict((host, []) for host in WORKERS)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        deadline = time.time() + 900
        while not self.stop.is_set() and time.time() < deadline:
            for host, address in WORKERS.items():
                try:
                    snap = served_snapshot(address)
                except OSError:
                    continue
                rev = os.path.basename(snap) if snap else None
                if rev and (not self.seen[host] or self.seen[host][-1][1] != rev):
                    self.seen[host].append((time.time(), rev))
            self.stop.wait(0.3)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)


def router_pid():
    return ssh(ROUTER, "systemctl show -p MainPID --value launchcard-upgrade-tiny-sglang-router-0.service").stdout.strip()


@pytest.fixture(scope="module")
def fleet():
    up = FLEET.up()
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        # node exporter's textfile directory, as its package ships it (monitoring.yml is not this fleet's subject)
        for address in list(WORKERS.values()) + [ROUTER]:
            assert ssh(address, "mkdir -p %s" % TEXTFILE_DIR).returncode == 0, address
        res = playbook("deploy")
        assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
        yield
    finally:
        if not os.environ.get("LAUNCHCARD_KEEP_FLEET"):
            # purged: the lock cases leave a killed run's locks on the hosts, which the next boot must not find
            down()


@pytest.fixture(scope="module")
def upgraded(fleet):
    pid = router_pid()
    with Load(ROUTER_URL, MODEL, WORKER_URLS) as load, SnapshotWatch() as watch:
        time.sleep(2)
        res = playbook("upgrade", "-e", "launchcard_card_src=%s/upgrade-v2.json" % CARDS, *FAST)
        time.sleep(2)
    WATCH["upgrade"] = watch
    return res, load, pid


def test_native_engines_run_hardened_as_the_launchcard_user(fleet):
    """Issue 9 item 7 on the native runtime (this fleet's): the engine runs as the launchcard user under
    the hardened unit, which systemd accepts on the host; systemd-analyze security rates each unit type
    (docs/hardening.md reports the scores)."""
    address = WORKERS["lc-up-w1"]
    # the engine's own unit (its liveness timer is listed beside it)
    unit = [u for u in ssh(address, "systemctl list-units --plain --no-legend 'launchcard-*' | cut -d' ' -f1").stdout.split()
            if not u.endswith(("-liveness.timer", "-liveness.service"))]
    assert len(unit) == 1, unit
    shown = ssh(address, "systemctl show -p MainPID -p ActiveState -p User -p NoNewPrivileges -p ProtectSystem %s" % unit[0])
    props = dict(line.split("=", 1) for line in shown.stdout.split())
    assert props["ActiveState"] == "active" and props["User"] == "launchcard", props
    assert props["NoNewPrivileges"] == "yes" and props["ProtectSystem"] == "strict", props
    owner = ssh(address, "stat -c %%U /proc/%s /var/lib/launchcard/models" % props["MainPID"]).stdout.split()
    assert owner == ["launchcard", "launchcard"], owner
    verify = ssh(address, "systemd-analyze verify /etc/systemd/system/%s" % unit[0])
    assert verify.returncode == 0, verify.stdout + verify.stderr
    scores = {}
    for host_address, name in ((address, unit[0]), (ROUTER, "launchcard-upgrade-tiny-sglang-router-0.service")):
        sec = ssh(host_address, "systemd-analyze security --no-pager %s | tail -1" % name).stdout
        scores[name] = float(re.search(r"level for \S+: (\d+\.\d)", sec).group(1))
    print("systemd-analyze security on the sandbox:", scores)
    assert all(score <= 3.0 for score in scores.values()), scores


def test_the_router_gated_through_its_workers_records_its_gate_result(fleet):
    """The units role's second gate stage (an endpoint that answers through its peers: the router) writes its result
    into node exporter's textfile facts, as the converge call's first stage does for the workers."""
    gate = r'^launchcard_gate_passed\{unit="%s"\} 1$'
    facts = ssh(ROUTER, "cat %s/launchcard.prom" % TEXTFILE_DIR).stdout
    assert re.search(gate % r"launchcard-upgrade-tiny-sglang-router-0\.service", facts, re.M), facts
    for host, address in WORKERS.items():
        facts = ssh(address, "cat %s/launchcard.prom" % TEXTFILE_DIR).stdout
        assert re.search(gate % r"launchcard-upgrade-tiny-sglang-aggregated-\d+\.service", facts, re.M), (host, facts)


def test_upgrade_under_load_loses_no_request(upgraded):
    res, load, dummy = upgraded
    assert res.returncode == 0, res.stdout[-8000:] + res.stderr[-2000:]
    assert load.failed == 0, load.errors[:5]
    assert load.ok >= 50, load.ok
    # capacity never below N - batch: the router always had at least 3 of 4 replicas healthy
    assert len(load.capacity) >= 10 and min(load.capacity) >= len(WORKERS) - SERIAL, load.capacity
    assert min(load.capacity) < len(WORKERS), "no replica ever left the router: nothing was drained"
    # one replica per batch, the router untouched
    for n, host in enumerate(sorted(WORKERS), 1):
        assert "batch %d (server): %s" % (n, host) in res.stdout
    # the batches ran in the rollout's order
    switched = [res.stdout.find("TASK [Upgrade | Switch the units (batch %d)]" % n) for n in range(1, len(WORKERS) + 1)]
    assert -1 not in switched and switched == sorted(switched), switched
    assert "unchanged (not touched): lc-up-router" in res.stdout


def test_every_replica_runs_the_new_card_and_the_router_was_not_restarted(upgraded):
    res, dummy, pid = upgraded
    flat = " ".join(res.stdout.split())  # the result's YAML folds long lines
    for host, address in WORKERS.items():
        execstart, revision, active = host_facts(address)
        assert "--max-running-requests 32" in execstart, (host, execstart)
        assert revision == REV2, host
        assert active == "active", host
        assert "%s: revision %s, 1 unit(s) (upgraded: 1 unit file(s) written, 0 removed)" % (host, REV2[:12]) in flat, host
    assert router_pid() == pid
    # the untouched router's record now names the new revision, and the summary says what the record says
    state = ssh(ROUTER, "cat /var/lib/launchcard/state.json").stdout
    assert json.loads(state)["card"]["revision"] == REV2
    assert "lc-up-router: revision %s, 1 unit(s) (unchanged)" % REV2[:12] in flat, res.stdout[-3000:]
    # node exporter's textfile facts: each replica was drained once, idle in time, and passed the upgrade's gate
    unit = r'\{unit="launchcard-upgrade-tiny-sglang-aggregated-\d+\.service"\}'
    for host, address in WORKERS.items():
        drains = ssh(address, "cat %s/launchcard-drains.prom" % TEXTFILE_DIR).stdout
        assert re.search(r"^launchcard_drains_total%s 1$" % unit, drains, re.M), (host, drains)
        assert re.search(r"^launchcard_drain_timeouts_total%s 0$" % unit, drains, re.M), (host, drains)
        facts = ssh(address, "cat %s/launchcard.prom" % TEXTFILE_DIR).stdout
        assert re.search(r"^launchcard_gate_passed%s 1$" % unit, facts, re.M), (host, facts)
        assert re.search(r'^launchcard_instance_info\{.*revision="%s"' % REV2, facts, re.M), (host, facts)
    status, body = http("GET", ROUTER_URL + "/workers")
    assert {w["url"] for w in json.loads(body)["workers"] if w["is_healthy"]} == WORKER_URLS
    # pre-staged: the new revision next to the one served before, on every replica
    for address in WORKERS.values():
        snapshots = ssh(address, "ls %s" % SNAPSHOTS).stdout.split()
        assert set(snapshots) >= {REV1, REV2}, (address, snapshots)


def test_each_replica_loads_the_new_revision_in_its_batch(upgraded):
    """Bug-report case A: the engines load exactly the card's revision from the offline cache, and the upgrade
    moves each one to the new revision in its own batch (w1, then w2, ...), never two at once."""
    watch = WATCH["upgrade"]
    for host, address in WORKERS.items():
        assert [rev for dummy, rev in watch.seen[host]] == [REV1, REV2], (host, watch.seen[host])
        assert served_snapshot(address) == "%s/%s" % (SNAPSHOTS, REV2), host
    moved = [watch.seen[host][1][0] for host in sorted(WORKERS)]
    assert moved == sorted(moved), watch.seen
    execstart = host_facts(WORKERS["lc-up-w1"])[0]
    assert "--revision %s" % REV2 in execstart, execstart


def test_a_restarted_engine_serves_the_new_revision_with_the_old_snapshot_and_the_hub_gone(upgraded):
    """Done-when of issue 24: the engines keep serving the new revision after a restart with the old snapshot
    deleted and the Hub stopped (offline: nothing but the staged snapshot is read)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
    from sandbox_fleet import hubproc

    address = WORKERS["lc-up-w4"]
    unit = "launchcard-upgrade-tiny-sglang-aggregated-*[0-9].service"  # not its liveness probe, a oneshot loaded while it runs
    state = Path(ROOT) / STATE
    before = ssh(address, "systemctl show -p MainPID --value %s" % unit).stdout.strip()
    hubproc.stop_hub(state)
    try:
        status = None
        try:
            status = http("GET", "http://198.18.9.1:8470/_sandbox/stats", timeout=3)[0]
        except OSError:
            pass
        assert status is None, "the hub still answers"
        assert ssh(address, "rm -rf %s/%s && systemctl restart %s" % (SNAPSHOTS, REV1, unit)).returncode == 0
        after = ssh(address, "systemctl show -p MainPID --value %s; systemctl is-active %s" % (unit, unit)).stdout.split()
        assert after[1] == "active" and after[0] != before, after
        assert served_snapshot(address) == "%s/%s" % (SNAPSHOTS, REV2)
        assert ssh(address, "ls %s" % SNAPSHOTS).stdout.split() == [REV2]
    finally:
        # the later cases stage and serve revisions again (the lock cases deploy v1 back)
        hubproc.ensure_hub(state, "198.18.9.1")


def test_rerun_changes_nothing(upgraded):
    res = playbook("upgrade", "-e", "launchcard_card_src=%s/upgrade-v2.json" % CARDS, *FAST)
    assert res.returncode == 0, res.stdout[-6000:]
    assert "rollout: 0 batch(es)" in res.stdout
    assert all(r["changed"] == 0 for r in recap(res.stdout).values()), recap(res.stdout)
    # as a no-op deploy: the runtime and the staged revision in place, neither role runs a task (issue 27)
    assert "TASK [launchcard.inference.runtime" not in res.stdout
    assert "TASK [launchcard.inference.weights" not in res.stdout


def test_check_mode_prints_the_rollout_and_touches_nothing(upgraded):
    # the engines' processes (a liveness probe, a oneshot its timer starts, gets a new process each time it runs)
    snap = ("md5sum /etc/systemd/system/launchcard-*.service /var/lib/launchcard/state.json; "
            "systemctl show -p MainPID 'launchcard-*[0-9].service'")
    before = {a: ssh(a, snap).stdout for a in list(WORKERS.values()) + [ROUTER]}
    res = playbook("upgrade", "-e", "launchcard_card_src=%s/upgrade-v3-bad.json" % CARDS, "--check", "--diff")
    assert res.returncode == 0, res.stdout[-6000:]
    assert "batch 1 (server): lc-up-w1" in res.stdout and "batch 4 (server): lc-up-w4" in res.stdout
    assert "model revision %s -> %s" % (REV2[:12], REV3[:12]) in res.stdout
    # the diff line, as the YAML (which folds a long line) or JSON result format prints it: the engine's environment
    # is on its command line, an assignment of env(1) before the engine, never an Environment= of the unit
    words = " ".join(res.stdout.split())
    assert re.search(r"\+ExecStart=/usr/bin/env (\S+=\S* )*LAUNCHCARD_STANDIN_FAIL_HEALTH=1 (\S+=\S* )*"
                     r"/opt/launchcard/venv/bin/sglang serve ", words), res.stdout[-4000:]
    assert "Environment=" not in words, res.stdout[-4000:]
    assert "out of router lc-up-router while it switches (http://198.18.9.11:30000)" in res.stdout
    assert "drains lc-up-w1, lc-up-w2, lc-up-w3, lc-up-w4 through its worker API" in res.stdout
    assert {a: ssh(a, snap).stdout for a in before} == before


def test_a_deploy_of_the_card_the_upgrade_replaced_warns_that_it_moves_the_fleet_back(upgraded):
    """The inventory still names the v1 card the upgrade replaced: a deploy of it would move every host back to
    revision 1, every engine at once; its preflight report says so, naming the hosts (check mode: nothing changes)."""
    snap = "md5sum /etc/systemd/system/launchcard-*.service /var/lib/launchcard/state.json"
    before = {a: ssh(a, snap).stdout for a in list(WORKERS.values()) + [ROUTER]}
    res = playbook("deploy", "--check")
    assert res.returncode == 0, res.stdout[-6000:]
    said = " ".join(res.stdout.split())
    # the router loads no weights: the move restarts nothing there, and the warning leaves it out
    moved = ("lc-up-w1, lc-up-w2, lc-up-w3, lc-up-w4 serve %s at %s (their records); this deploy moves them "
             "to %s, the revision they served before their last upgrade" % (MODEL, REV2[:12], REV1[:12]))
    assert "WARNING (fleet): " + moved in said, res.stdout[-6000:]
    # Ansible's own warning too (ansible-core prints warnings on stderr)
    assert "[WARNING]: " + moved in " ".join(res.stderr.split()), res.stderr[-3000:]
    assert {a: ssh(a, snap).stdout for a in before} == before


def test_every_replica_in_one_batch_is_listed_by_check_mode_and_refused_with_every_engine_untouched(upgraded):
    """Issue 26 item 4: with launchcard_upgrade_serial=4 the four replicas leave the router in one batch, so none
    serves meanwhile, and each host's one GPU leaves no room for a surge twin beside it. Check mode lists each
    (host, instance, why); the real run refuses before it installs or stages anything, naming them and
    launchcard_upgrade_allow_outage, and leaves every unit, process, record and lock as it was."""
    snap = ("md5sum /etc/systemd/system/launchcard-*.service /var/lib/launchcard/state.json; "
            "systemctl show -p MainPID 'launchcard-*[0-9].service'")  # the engines' (a liveness probe's changes)
    before = {a: ssh(a, snap).stdout for a in list(WORKERS.values()) + [ROUTER]}
    args = ["-e", "launchcard_card_src=%s/upgrade-v1.json" % CARDS, "-e", "launchcard_upgrade_serial=4"]
    check = playbook("upgrade", "--check", *args)
    assert check.returncode == 0, check.stdout[-6000:] + check.stderr[-2000:]
    said = " ".join(check.stdout.split())
    assert "batch 1 (server): lc-up-w1, lc-up-w2, lc-up-w3, lc-up-w4" in said, said[-6000:]
    for host in WORKERS:
        assert re.search(
            r"outage: %s: launchcard-upgrade-tiny-sglang-aggregated-\d\.service \(batch 1\): no other aggregated "
            r"instance behind router lc-up-router \(launchcard-upgrade-tiny-sglang-router-0\.service\) serves "
            r"meanwhile \(4 of 4 switch in batch 1\); no surge: no free GPUs for a twin beside it: %s has 1, the plan "
            r"uses 1, it needs 1" % (host, host), said), (host, said[-6000:])
    assert "outages: 4 instance(s) would drop requests" in said
    assert {a: ssh(a, snap).stdout for a in before} == before

    res = playbook("upgrade", *(args + FAST))
    assert res.returncode != 0, res.stdout[-6000:]
    said = " ".join((res.stdout + res.stderr).split())
    assert "upgrade refused: it would drop requests on 4 instance(s), so nothing was installed, staged or " \
           "restarted:" in said, said[-6000:]
    assert all("%s: launchcard-upgrade-tiny-sglang-aggregated-" % host in said for host in WORKERS)
    assert "Set launchcard_upgrade_allow_outage: true in the inventory" in said
    # refused before the runtime and weights roles and the batches: none of their tasks ran
    for task in ("Runtime | ", "Weights | ", "Upgrade | Take this host's instances out", "Upgrade | Switch the units"):
        assert task not in res.stdout, task
    assert {a: ssh(a, snap).stdout for a in before} == before
    assert all_locks() == dict((a, {}) for a in list(WORKERS.values()) + [ROUTER])
    status, body = http("GET", ROUTER_URL + "/workers")
    assert {w["url"] for w in json.loads(body)["workers"] if w["is_healthy"]} == WORKER_URLS


def test_a_revision_that_cannot_be_staged_stops_the_upgrade_with_every_engine_untouched(upgraded, tmp_path):
    # the hub serves the cards of tests/e2e/cards; this one names a revision it does not have
    with open(os.path.join(CARDS, "upgrade-v2.json")) as f:
        card = json.load(f)
    card["hf"]["revision"] = "4" * 40
    path = tmp_path / "upgrade-v4-unstaged.json"
    path.write_text(json.dumps(card))
    pids = "systemctl show -p MainPID,InvocationID 'launchcard-*[0-9].service'; md5sum /etc/systemd/system/launchcard-*.service"
    before = {a: ssh(a, pids).stdout for a in list(WORKERS.values()) + [ROUTER]}
    res = playbook("upgrade", "-e", "launchcard_card_src=%s" % path, *FAST)
    assert res.returncode != 0
    failures = host_failures(res.stdout)
    assert failures and set(failures) <= set(WORKERS), res.stdout[-6000:]
    assert all("revision %s of launchcard-test/Upgrade-Tiny does not exist" % ("4" * 40) in " ".join(texts)
               for texts in failures.values()), failures
    assert "Upgrade | Switch the units" not in res.stdout and "Take this host's instances out" not in res.stdout
    assert {a: ssh(a, pids).stdout for a in before} == before
    for address in WORKERS.values():
        assert host_facts(address)[1:] == (REV2, "active")


# The batch's gate counts only the restarted process (systemd_units' `queued`, http_health's
# `previous`): the process that a queued restart is about to replace cannot pass the bad revision.
def test_a_revision_that_fails_its_gate_is_rolled_back_and_the_upgrade_stops(upgraded):
    with Load(ROUTER_URL, MODEL, WORKER_URLS) as load:
        time.sleep(2)
        res = playbook("upgrade", "-e", "launchcard_card_src=%s/upgrade-v3-bad.json" % CARDS, *FAST)
        time.sleep(2)
    assert res.returncode != 0
    assert "upgrade stopped: lc-up-w1 failed" in res.stdout, res.stdout[-6000:]
    assert "health answered 503" in res.stdout  # why: the gate's reason
    assert "lc-up-w1: revision %s, 1 unit(s) (rolled back, healthy)" % REV2[:12] in " ".join(res.stdout.split())
    assert load.failed == 0, load.errors[:5]
    assert min(load.capacity) >= len(WORKERS) - SERIAL, load.capacity
    # lc-up-w1 runs what it ran before, on the revision it loaded before; the later batches never started
    for host, address in WORKERS.items():
        execstart, revision, active = host_facts(address)
        assert (revision, active) == (REV2, "active"), host
        assert "--revision %s" % REV2 in execstart, (host, execstart)
        assert served_snapshot(address) == "%s/%s" % (SNAPSHOTS, REV2), host
        env = ssh(address, "systemctl show -p ExecStart --value 'launchcard-*'").stdout
        assert "LAUNCHCARD_STANDIN_FAIL_HEALTH" not in env, host
    status, body = http("GET", ROUTER_URL + "/workers")
    assert {w["url"] for w in json.loads(body)["workers"] if w["is_healthy"]} == WORKER_URLS


# --- Run lock (docs/operations.md "Run lock"): concurrent runs are refused, a failed run releases, a stale lock is broken on request.

ANCHOR = ROUTER  # the fleet lock's host: the first host of the plan in sorted order (lc-up-router)
LOCK_FILES = "/var/lib/launchcard/lock.json /var/lib/launchcard/fleet-lock.json"


def locks_on(address):
    """The lock files on a host, ``{path: holder}``."""
    out = ssh(address, "for f in %s; do [ -f $f ] && echo \"$f $(tr -d '\\n' < $f)\"; done; true" % LOCK_FILES).stdout
    return dict((line.split(" ", 1)[0], json.loads(line.split(" ", 1)[1])) for line in out.splitlines() if line.strip())


def all_locks():
    return dict((a, locks_on(a)) for a in list(WORKERS.values()) + [ROUTER])


def background(name, *extra):
    """ansible-playbook in its own session (so it can be killed with its workers), output to a temp file."""
    log = open(os.path.join(ROOT, STATE, "lock-%s-%d.log" % (name, time.time())), "w+")
    proc = subprocess.Popen([os.path.join(BIN, "ansible-playbook"), "playbooks/%s.yml" % name, "-i", INVENTORY] + list(extra),
                            cwd=ROOT, env=ENV, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    return proc, log


def wait_for_lock(address, path, proc, timeout=240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        held = locks_on(address).get(path)
        if held:
            return held
        assert proc.poll() is None, "the first run ended before it took its lock"
        time.sleep(0.3)
    raise AssertionError("no lock %s on %s after %d s" % (path, address, timeout))


def kill_run(proc):
    """SIGKILL a run started by ``background`` and every process below it.

    Ansible's workers each start a session of their own (``os.setsid`` in ansible-core's
    ``executor/process/worker.py``), so killing the run's process group alone leaves a worker that is
    waiting in its task alive, re-parented to PID 1: they are listed before the kill.
    """
    below = psutil.Process(proc.pid).children(recursive=True)
    os.killpg(proc.pid, 9)
    for child in below:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass


def finish(proc, log, timeout=600):
    proc.wait(timeout=timeout)
    log.seek(0)
    out = log.read()
    log.close()
    return proc.returncode, out


def test_lock_a_second_deploy_is_refused_while_an_upgrade_runs_and_the_upgrade_ends_healthy(upgraded):
    assert all_locks() == dict((a, {}) for a in list(WORKERS.values()) + [ROUTER]), "a finished run left a lock"
    first, log = background("upgrade", "-e", "launchcard_card_src=%s/upgrade-v1.json" % CARDS, *FAST)
    try:
        holder = wait_for_lock(ANCHOR, "/var/lib/launchcard/fleet-lock.json", first)
        assert holder["playbook"] == "upgrade.yml" and holder["scope"] == "fleet" and holder["card"].startswith("sha256:")
        second = playbook("deploy", "-e", "launchcard_card_src=%s/upgrade-v2.json" % CARDS)
        said = " ".join(second.stdout.split())
        assert first.poll() is None, "the upgrade ended before the second run was refused: nothing was tested"
    finally:
        rc, out = finish(first, log)
    # the second run stops before changing anything and names the holder and since when
    assert second.returncode != 0
    assert "another run holds the lock of this fleet; nothing was changed" in said, second.stdout[-6000:]
    assert "fleet-lock.json held by %s@%s, upgrade.yml, run %s, card %s" % (
        holder["user"], holder["controller"], holder["run_id"], holder["card"][:19]) in said
    assert "since %s UTC" % holder["since"].replace("T", " ").rstrip("Z") in said
    assert "launchcard_lock_break=true" in said
    assert all(r["changed"] == 0 for r in recap(second.stdout).values()), recap(second.stdout)
    # the first one ends healthy, every replica on its card (revision 1111..., without v2's flag)
    assert rc == 0, out[-8000:]
    for host, address in WORKERS.items():
        execstart, revision, active = host_facts(address)
        assert revision == "1" * 40 and active == "active", (host, revision, active)
        assert "--max-running-requests" not in execstart, host
    # and both runs released what they took
    assert all_locks() == dict((a, {}) for a in list(WORKERS.values()) + [ROUTER])


def test_lock_a_failed_deploy_releases_its_locks(upgraded, tmp_path):
    with open(os.path.join(CARDS, "upgrade-v1.json")) as f:
        card = json.load(f)
    card["hf"]["revision"] = "4" * 40  # the sandbox hub does not serve it: the weights step fails on every replica
    bad = tmp_path / "upgrade-v1-unknown-revision.json"
    bad.write_text(json.dumps(card))
    snap = "md5sum /etc/systemd/system/launchcard-*.service; systemctl show -p MainPID 'launchcard-*[0-9].service'"
    before = {a: ssh(a, snap).stdout for a in list(WORKERS.values()) + [ROUTER]}
    res = playbook("deploy", "-e", "launchcard_card_src=%s" % bad)
    assert res.returncode != 0, res.stdout[-6000:]
    assert all(recap(res.stdout)[h]["failed"] == 1 for h in WORKERS), recap(res.stdout)
    assert "Deploy | Release the locks of the hosts that did not finish" in res.stdout
    assert all_locks() == dict((a, {}) for a in list(WORKERS.values()) + [ROUTER]), res.stdout[-6000:]
    assert {a: ssh(a, snap).stdout for a in before} == before


def test_lock_left_by_a_killed_run_refuses_until_broken_on_request(upgraded):
    # A run that still holds every lock when it is killed: one whose engines never answer health (v3-bad) waits
    # in its gate. (A no-op deploy converges, gates and releases each host's lock in one call, which can end
    # on some hosts before the last lock is seen.) The run that breaks the lock below deploys v1 again.
    killed, log = background("deploy", "-e", "launchcard_card_src=%s/upgrade-v3-bad.json" % CARDS)
    try:
        holder = wait_for_lock(ANCHOR, "/var/lib/launchcard/fleet-lock.json", killed)
        for address in WORKERS.values():
            wait_for_lock(address, "/var/lib/launchcard/lock.json", killed)
    finally:
        kill_run(killed)
        finish(killed, log)
    left = all_locks()
    assert all(held.get("/var/lib/launchcard/lock.json", {}).get("run_id") == holder["run_id"] for held in left.values()), left
    # check mode takes no lock and says a real run would be refused
    check = playbook("deploy", "--check")
    assert check.returncode == 0, check.stdout[-6000:]
    said = " ".join((check.stdout + check.stderr).split())  # Ansible prints a module's warnings on stderr
    assert "a real run would be refused" in said and holder["run_id"] in said
    assert all_locks() == left
    # a real run is refused, naming the killed run
    refused = playbook("deploy")
    assert refused.returncode != 0
    assert "held by %s@%s, deploy.yml, run %s" % (holder["user"], holder["controller"], holder["run_id"]) in " ".join(
        refused.stdout.split()), refused.stdout[-6000:]
    assert all_locks() == left
    # broken on request: the run goes on, reports the broken holder, and releases its own locks at the end
    broke = playbook("deploy", "-e", "launchcard_lock_break=true")
    assert broke.returncode == 0, broke.stdout[-6000:]
    said = " ".join((broke.stdout + broke.stderr).split())
    assert "run lock broken on request" in said and holder["run_id"] in said
    assert all_locks() == dict((a, {}) for a in list(WORKERS.values()) + [ROUTER])


# --- Stack reboots drain first (issue 26, item 3): a driver bump reboots two of the replicas, one at a time, while
# the load goes through the router. The NVIDIA stack comes from the stand-in repository (tests/sandbox/pkgrepo), on
# lc-up-w1 and lc-up-w2 only (a second inventory source: host variables outrank group_vars/all.yml).

PKGREPO = "http://198.18.9.1:8713/"
STACK_HOSTS = ("lc-up-w1", "lc-up-w2")
DRIVERS = ("580.95.05", "580.105.08")  # the two versions the stand-in repository carries
STACK_TASK = "TASK [launchcard.inference.stack_reboot : Stack reboot | "


pkgrepo = FLEET.pkgrepo


def stack_events(out):
    """``(task, host)`` of each stack reboot task that changed or answered a host, in the order the run printed them."""
    events = []
    for part in out.split(STACK_TASK)[1:]:
        task = part.split("]", 1)[0]
        for host in re.findall(r"^(?:ok|changed): \[([\w-]+)", part.split("\nTASK [")[0], re.M):
            events.append((task, host))
    return events


def test_a_driver_bump_reboots_the_replicas_one_at_a_time_out_of_the_router_and_fails_no_request(fleet, tmp_path):
    started = time.time()
    # YAML, not INI: an INI file's group variables are strings, and "false" is not a boolean
    inventory = tmp_path / "stack.yml"
    inventory.write_text(json.dumps({"nvidia_stack": {
        "hosts": dict((h, {"launchcard_install_accelerator_stack": True}) for h in STACK_HOSTS),
        "vars": {"nvidia_repo_url": PKGREPO, "nvidia_repo_key": PKGREPO + "launchcard-sandbox-repo.asc",
                 # not what this test is about: no container engine, no initramfs, one PCIe GPU per host
                 "nvidia_container_toolkit": False, "nvidia_blacklist_nouveau": False,
                 "nvidia_fabric_manager": False, "nvidia_nvlink5": False, "nvidia_imex": False}},
        # The router's retries off, so the load counts what the drain saves: sglang-router retries a failed request up
        # to 5 times by default (router_args.py, 0.3.2). Measured 2026-12-02 without the drain: retries on, 0 of 771
        # requests failed (only the capacity told); off, 4 of 1484 ("error sending request for url" to lc-up-w2).
        "router_without_retries": {"hosts": {"lc-up-router": {"launchcard_argv_overrides": {
            "sglang-router": {"set": {"--disable-retries": True}}}}}}}))
    served = pkgrepo("serve", "--bind", "198.18.9.1", "--port", "8713")
    assert served.returncode == 0, served.stdout + served.stderr
    try:
        for host in STACK_HOSTS:
            # the sandbox has no route out: keep only the local repository, as an air-gapped host would
            ssh(WORKERS[host], "[ ! -f /etc/apt/sources.list ] || mv /etc/apt/sources.list /etc/apt/sources.list.off")
        first = playbook("deploy", "-i", str(inventory), "-e", "nvidia_driver_version=%s" % DRIVERS[0])
        assert first.returncode == 0, first.stdout[-6000:] + first.stderr[-2000:]
        assert "Stack reboot | Reboot the host" not in first.stdout  # a first install loads at once
        installed = time.time()
        with Load(ROUTER_URL, MODEL, WORKER_URLS) as load:
            time.sleep(2)
            res = playbook("deploy", "-i", str(inventory), "-e", "nvidia_driver_version=%s" % DRIVERS[1],
                           "-e", "launchcard_stack_reboot_drain_s=5")
            time.sleep(2)
    finally:
        pkgrepo("stop")
    print("stack reboot test: install %.0f s, driver bump with two reboots %.0f s; requests ok %d, failed %d" % (
        installed - started, time.time() - installed, load.ok, load.failed))
    assert res.returncode == 0, res.stdout[-8000:] + res.stderr[-2000:]
    assert load.failed == 0, load.errors[:5]
    assert load.ok >= 50, load.ok
    # one replica out of the router at a time, and out it was
    assert len(load.capacity) >= 10 and min(load.capacity) == len(WORKERS) - 1, load.capacity
    # per host, in order: out of the router (on the router's host), reboot, back in, a completion through the router;
    # lc-up-w1's batch ends before lc-up-w2's begins
    steps = ["Take this host's instances out of the routers", "Let in-flight requests finish",
             "Reboot the host, loaded driver differs from the installed one",
             "Wait until the engines that served before answer again", "Put this host's instances back into the routers",
             "Gate on a 1-token completion through each router"]
    wanted = [(step, host) for host in STACK_HOSTS for step in steps]
    assert [e for e in stack_events(res.stdout) if e in wanted] == wanted, stack_events(res.stdout)
    for host in STACK_HOSTS:
        assert ssh(WORKERS[host], "nvidia-smi --query-gpu=driver_version --format=csv,noheader").stdout.strip() == DRIVERS[1]
    assert healthy_workers(ROUTER_URL) == WORKER_URLS
