# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""End to end: one deploy brings a bare Ascend host from nothing to a healthy engine.

A sandbox fleet of one (inventories/bare/gpus.ini, 198.18.4.0/24, state dir
.sandbox-bare/) whose host has 8 Huawei NPUs on its (simulated) PCI bus and no
driver, CANN or npu-smi. The deploy must: find the vendor on the PCI bus and pass
preflight on that count with a driver warning; select roles/ascend; fetch the
stand-in .run installers over HTTP and check them against SHA256SUMS; run them in
Huawei's order; reboot once; run preflight again, now validating the NPU model
(Ascend950PR) against the card; start the card's vLLM recipe and gate on its
health. A second deploy changes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request

import pytest

from playbook_output import REPORT_TASK, SUMMARY_TASK, by_host, recap, report_table
from sandbox_cli import Fleet

INVENTORY = "inventories/bare/gpus.ini"
FLEET = Fleet(INVENTORY, ".sandbox-bare")
HOST = "bare-npu"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("systemd-nspawn"),
                                reason="the sandbox fleet needs root and systemd-nspawn")


pkgrepo = FLEET.pkgrepo


def ssh(command):
    return FLEET.ssh(HOST, command, timeout=60)


def deploy():
    res = FLEET.playbook("deploy")
    return res, res.stdout + res.stderr


@pytest.fixture(scope="module")
def fleet():
    FLEET.down()  # a bare host means a fresh one
    try:
        up = FLEET.up()
        assert up.returncode == 0, up.stdout + up.stderr
        served = pkgrepo("serve", "--bind", "198.18.4.1", "--port", "8716")
        assert served.returncode == 0, served.stdout + served.stderr
        yield
    finally:
        if not os.environ.get("LAUNCHCARD_KEEP_FLEET"):
            pkgrepo("stop")
            FLEET.down()


def test_one_deploy_installs_the_stack_it_finds_on_the_pci_bus(fleet):
    bare = ssh("command -v npu-smi; ls /usr/local/Ascend 2>&1; ls /var/lib/launchcard-sandbox/pci/devices | wc -l")
    assert bare.stdout.split("\n")[0].startswith("ls: cannot access"), bare.stdout  # no npu-smi, no /usr/local/Ascend
    assert bare.stdout.split()[-1] == "8"

    res, out = deploy()
    assert res.returncode == 0, out[-4000:]
    assert recap(res.stdout)[HOST]["failed"] == 0
    first, second = res.stdout.split(REPORT_TASK)[1:]
    before = by_host(report_table(REPORT_TASK + first))[HOST]
    assert (before["gpu_count"]["result"], before["gpu_count"]["found"]) == (
        "ok", "8 ascend GPU(s) on the PCI bus, no driver yet")
    assert before["driver"]["result"] == "WARN"
    assert "gpu_model" not in before and "memory_fit" not in before
    after = by_host(report_table(REPORT_TASK + second.split(SUMMARY_TASK)[0]))[HOST]
    assert (after["gpu_model"]["result"], after["gpu_model"]["found"]) == ("ok", "ascend_950pr")
    assert (after["driver"]["result"], after["driver"]["found"]) == ("ok", "25.2.0")
    assert after["memory_fit"]["result"] == "ok" and after["gpu_count"]["found"] == "8 ascend GPU(s)"
    summary = report_table(res.stdout, SUMMARY_TASK, ("host", "recipe", "engine", "role", "port", "state"))
    assert [(r["host"], r["recipe"], r["state"]) for r in summary] == [(HOST, "vllm-aggregated", "healthy")]

    # on the host: Huawei's order, one reboot, the driver running is the one installed
    state = ssh("sed -E 's/^\\[[^]]*\\] Ascend-(hdk-910b-npu-|cann-)?([a-z]+)[-_].* (--[a-z]+): .*/\\2 \\3/' "
                "/var/log/ascend_seclog/ascend_install.log; npu-smi info | sed -n 2p; "
                "systemctl is-active 'launchcard-*'")
    order = ["driver --full", "firmware --full", "toolkit --install", "kernels --install", "nnal --install"]
    assert state.stdout.split("\n")[:5] == order, state.stdout
    assert "Version: 25.2.0" in state.stdout and state.stdout.split()[-1] == "active"
    assert out.count("Stack reboot | Reboot the host, driver or firmware changed] ***\nchanged: [%s]" % HOST) == 1
    # and the engine answers from the controller, over the bridge
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with direct.open("http://198.18.4.11:8000/v1/models", timeout=10) as answer:
        assert json.load(answer)["data"][0]["id"] == "zai-org/GLM-5.3-Flash"


def test_a_second_deploy_changes_nothing(fleet):
    res, out = deploy()
    assert res.returncode == 0, out[-4000:]
    assert recap(res.stdout)[HOST]["changed"] == 0, out[-4000:]
    # the host is no longer bare: preflight checks it once, in full
    assert res.stdout.count(REPORT_TASK) == 1
