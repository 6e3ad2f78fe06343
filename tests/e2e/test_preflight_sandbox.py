# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""End to end: preflight catches every known deploy-killer before anything changes.

A second sandbox fleet (inventories/preflight/gpus.ini, 198.18.3.0/24, hosts
pf-*, state dir .sandbox-preflight/, so it runs beside the main sandbox) holds
two hosts that must pass and seven that must each fail exactly one check:
too few GPUs, a too small weights disk, NVSwitch fabric not ready, the planned
port held by another service, a GPU model outside the recipe's
validated_hardware, a GPU another process holds, a GPU with uncorrectable ECC
errors and a pending row remap. Everything the checks read is real (statvfs of a real
ext4, /proc/net/tcp, cgroups, os-release) except the GPUs, which the stand-in
nvidia-smi reports from the inventory's ``sandbox_*`` variables.

"Nothing changed" is read from the hosts over SSH, before and after each
run: a checksum of every path and size and mtime under /etc/systemd/system,
/etc/launchcard, /opt and /var/lib/launchcard, and the launchcard-* units
systemd knows.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
import urllib.request

import pytest

from playbook_output import SUMMARY_TASK, by_host, recap, report_table
from sandbox_cli import Fleet

INVENTORY = "inventories/preflight/gpus.ini"
FLEET = Fleet(INVENTORY, ".sandbox-preflight")

GOOD = ("pf-good-vllm", "pf-good-sglang")
VALIDATED = "one of ascend_950pr_8x, b200, gb200, h100, mi355x"
# bad host -> (the one check that fails, need, found); found may be a regex
BAD = {
    "pf-small-gpus": ("gpu_count", "8 GPUs", "4 nvidia GPU(s)"),
    # a 400 GiB ext4 shows a little less free (metadata); the card needs 417 GiB
    "pf-small-disk": ("disk", "417.0 GiB free on /var/lib/launchcard/models", re.compile(r"39\d\.\d GiB free")),
    "pf-fabric-down": ("fabric", "fabric state Completed on every GPU", "in_progress on 8 of 8 GPUs"),
    # the process holding the port by name and PID, and its unit
    "pf-port-busy": ("ports", "30000 free", re.compile(r"30000 \(held by python3, pid \d+, in sandbox-squatter\.service\)")),
    "pf-unvalidated": ("gpu_model", VALIDATED, "h200"),
    # the process that holds GPU 0 by PID and name (the stand-in nvidia-smi -q -x: 60 GiB used of 81559 MiB, the
    # share vLLM wants 0.92 of it)
    "pf-gpu-held": ("gpu_in_use", "the engine's share free on each placed GPU",
                    "GPU 0: %d MiB free, vllm-aggregated needs 75035 MiB, held by pid 4242 python3 (61440 MiB)" % (
                        81559 - 61440 - 526)),
    "pf-gpu-remap": ("gpu_health", "no GPU health error (ECC, row remap, page retirement, recovery action, bus)",
                     "8 GPU(s) checked"),
}
ALL = GOOD + tuple(BAD)
GPU_CHECKS = {"os", "disk", "gpu_count", "memory_fit", "memory_budget", "gpu_in_use", "gpu_health", "driver",
              "driver_branch", "fabric", "ports"}
# Files with size and mtime, directories by name only: the run lock (plugins/module_utils/_lock.py), taken and
# released by a run that stops at preflight, changes /var/lib/launchcard's mtime, and its empty .guard files
# (flock only) stay.
SNAPSHOT = ("find /etc/systemd/system /etc/launchcard /opt /var/lib/launchcard -xdev ! -name '*.guard' "
            "\\( -type d -printf '%p/\\n' -o -printf '%p %s %T@\\n' \\) "
            "2>/dev/null | sort | md5sum; systemctl list-units --all --no-legend --plain 'launchcard-*'; "
            "systemctl list-unit-files --no-legend --plain 'launchcard-*'; true")

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("systemd-nspawn"),
                                reason="the sandbox fleet needs root and systemd-nspawn")


playbook = FLEET.playbook


def ssh(host, command):
    return FLEET.ssh(host, command, timeout=60)


def snapshot(hosts=ALL):
    """What a deploy would change on each host (see the module docstring)."""
    def one(host):
        res = ssh(host, SNAPSHOT)
        assert res.returncode == 0 and " -\n" in res.stdout, (host, res.stdout, res.stderr)
        return res.stdout
    with concurrent.futures.ThreadPoolExecutor(len(hosts)) as pool:
        return dict(zip(hosts, pool.map(one, hosts)))


def flat(text):
    return " ".join(text.split())


def matches(expected, text):
    return expected.fullmatch(text) is not None if hasattr(expected, "fullmatch") else expected == text


@pytest.fixture(scope="module")
def fleet():
    FLEET.down()  # fresh hosts: a kept fleet may hold units of an earlier run
    up = FLEET.up()
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        addresses = FLEET.addresses()
        assert sorted(addresses) == sorted(ALL)
        yield addresses
    finally:
        if not os.environ.get("LAUNCHCARD_KEEP_FLEET"):
            FLEET.down()


@pytest.fixture(scope="module")
def pristine(fleet):
    """Every host before any playbook ran: no launchcard unit, no venv."""
    snap = snapshot()
    for host, text in snap.items():
        assert ".service" not in text, (host, text)
    return snap


def test_preflight_fails_each_bad_host_for_its_one_reason_and_changes_nothing(fleet, pristine):
    res = playbook("preflight")
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    table = by_host(report_table(res.stdout))
    # every host was checked, the failing ones included
    assert sorted(table) == sorted(ALL), sorted(table)
    for host in GOOD:
        assert {r["result"] for r in table[host].values()} == {"ok"}, table[host]
    assert set(table["pf-good-vllm"]) == GPU_CHECKS | {"gpu_model"}
    assert set(table["pf-good-sglang"]) == GPU_CHECKS  # the SGLang recipes list no validated hardware
    for host, (check, need, found) in BAD.items():
        not_ok = {c: r for c, r in table[host].items() if r["result"] != "ok"}
        assert list(not_ok) == [check], (host, not_ok)
        row = not_ok[check]
        assert row["result"] == "FAIL" and row["need"] == need and matches(found, row["found"]), row
        # the reason the host fails with names the host, the check, the need and the found
        reason = "preflight failed on %s: %s needs %s, found %s (%s)" % (host, check, need, row["found"],
                                                                         row["message"])
        assert reason in flat(out), reason
    # the failing GPU named, with what to do
    assert table["pf-gpu-remap"]["gpu_health"]["message"].startswith(
        "GPU 0 (0000:18:00.0): 2 uncorrectable ECC error(s) since the driver loaded: drain the host and reset the GPU")
    assert "GPU 0 (0000:18:00.0): a row remap is pending" in table["pf-gpu-remap"]["gpu_health"]["message"]
    assert float(table["pf-small-disk"]["disk"]["found"].split()[0]) < 417
    counts = recap(res.stdout)
    assert sorted(counts) == sorted(ALL)
    assert all(counts[h]["failed"] == 1 for h in BAD) and all(counts[h]["failed"] == 0 for h in GOOD), counts
    assert all(c["changed"] == 0 for c in counts.values()), counts
    assert snapshot() == pristine


def test_allow_unvalidated_hardware_turns_gpu_model_into_a_warning(fleet, pristine):
    res = playbook("preflight", "-e", "launchcard_allow_unvalidated_hardware=true")
    assert res.returncode != 0  # the other bad hosts still fail
    table = by_host(report_table(res.stdout))
    unvalidated = table["pf-unvalidated"]
    assert {c: r["result"] for c, r in unvalidated.items() if r["result"] != "ok"} == {"gpu_model": "WARN"}
    row = unvalidated["gpu_model"]
    assert (row["need"], row["found"]) == (VALIDATED, "h200")
    assert "allowed" in row["message"]
    assert "preflight failed on pf-unvalidated" not in flat(res.stdout + res.stderr)
    counts = recap(res.stdout)
    assert counts["pf-unvalidated"]["failed"] == 0
    assert all(counts[h]["failed"] == 1 for h in BAD if h != "pf-unvalidated"), counts
    assert snapshot() == pristine


def test_deploy_with_no_failure_budget_changes_no_host(fleet, pristine):
    """Default budget (launchcard_max_fail_percentage=0): the bad hosts fail
    preflight, the play stops everywhere, and the good hosts get nothing
    either: no venv, no unit file, no unit."""
    res = playbook("deploy")
    assert res.returncode != 0
    assert "TASK [launchcard.inference.runtime" not in res.stdout
    assert "TASK [launchcard.inference.units" not in res.stdout
    assert len(report_table(res.stdout)) > len(ALL)
    assert all(c["changed"] == 0 for c in recap(res.stdout).values())
    assert snapshot() == pristine


def test_deploy_with_a_failure_budget_serves_only_the_good_hosts(fleet, pristine):
    """With a budget the bad hosts fit in (7 of 9 hosts = 77 % <= 78 %), the
    good hosts carry on: each runs an aggregated recipe that depends on no
    other host (no PD pair, no router, no encoder), so a partial deploy is
    meaningful. The bad hosts, stopped at preflight, still hold nothing."""
    budget = 100 * len(BAD) // len(ALL) + 1
    res = playbook("deploy", "-e", "launchcard_max_fail_percentage=%d" % budget)
    assert res.returncode != 0  # the bad hosts failed
    counts = recap(res.stdout)
    for host in BAD:
        assert counts[host]["failed"] == 1 and counts[host]["changed"] == 0, (host, counts[host])
    for host in GOOD:
        assert counts[host]["failed"] == 0 and counts[host]["changed"] > 0, (host, res.stdout[-4000:])
    summary = report_table(res.stdout, SUMMARY_TASK, ("host", "recipe", "engine", "role", "port", "state"))
    assert {r["host"]: r["state"] for r in summary} == dict({h: "healthy" for h in GOOD}, **{h: "not in this run" for h in BAD})
    after = snapshot()
    assert {h: after[h] for h in BAD} == {h: pristine[h] for h in BAD}
    assert all(after[h] != pristine[h] for h in GOOD)  # the snapshot does see a deploy
    ports = {"pf-good-vllm": 8000, "pf-good-sglang": 30000}
    for host, port in ports.items():
        # the engine's unit (its liveness timer and probe beside it are not engines)
        active = ssh(host, "for u in $(systemctl list-units --plain --no-legend 'launchcard-*.service' | cut -d' ' -f1 "
                           "| grep -v -- '-liveness\\.service$'); do systemctl is-active $u; done")
        assert active.stdout.split() == ["active"], (host, active.stdout, active.stderr)
        with urllib.request.urlopen("http://%s:%d/health" % (fleet[host], port), timeout=10) as resp:
            assert resp.status == 200
