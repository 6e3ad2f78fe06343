# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The accelerator_facts module end to end, against fake vendor tools.

Small executable shell scripts named like the real tools (nvidia-smi,
amd-smi, npu-smi, modinfo) print the fixtures from
tests/unit/fixtures/accelerators/ and exit with the code the real tool would.
Most tests run the module's main() in-process (ansible.module_utils.testing);
one runs it through the real ``ansible`` command line.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.module_utils import _accelerators as accelerators
from ansible_collections.launchcard.inference.plugins.modules import accelerator_facts
from ansible_collections.launchcard.inference.tests.unit.plugins.module_utils.accel_fixtures import with_fabric

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "accelerators"))
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
PCI_IDS_EXCERPT = os.path.abspath(os.path.join(FIXTURES, "..", "pci.ids-excerpt"))
CAT = shutil.which("cat") or "/bin/cat"  # the fake tools run with PATH = their own dir only


def fake_tool(bin_dir, name, cases, default):
    """Write bin_dir/name: prints a fixture chosen by a substring of its args.

    :param cases: list of (substring of "$*", fixture name, exit code).
    :param default: (fixture name, exit code) when no case matches.
    """
    lines = ["#!/bin/sh", 'case "$*" in']
    for needle, fixture_name, rc in cases:
        lines.append('  *"%s"*) %s "%s"; exit %d;;' % (needle, CAT, os.path.join(FIXTURES, fixture_name), rc))
    lines.append('  *) %s "%s"; exit %d;;' % (CAT, os.path.join(FIXTURES, default[0]), default[1]))
    lines.append("esac")
    path = os.path.join(bin_dir, name)
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def answer_file(bin_dir, gpus, fabric):
    """A file answering the module's GPU query: each row of fixture *gpus* with fixture *fabric*'s state and status."""
    with open(os.path.join(FIXTURES, gpus)) as g, open(os.path.join(FIXTURES, fabric)) as f:
        answer = with_fabric(g.read(), f.read())
    path = os.path.join(bin_dir, "answer-" + gpus)
    with open(path, "w") as handle:
        handle.write(answer)
    return path


def provide_file(host, vendor, key, fixture_name):
    files = tuple(
        (k, os.path.join(FIXTURES, fixture_name) if k == key else path) for k, path in accelerators.FILES[vendor]
    )
    host["monkeypatch"].setitem(accelerators.FILES, vendor, files)


def run_module(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            accelerator_facts.main()
    output = json.loads(capsys.readouterr().out)
    assert info.value.code == 0, output
    return output


def test_nvidia_h100x8(host, capsys):
    fake_tool(host["bin"], "nvidia-smi", [
        ("fabric.state", answer_file(host["bin"], "nvidia-smi-h100x8.csv", "nvidia-fabric-completed.csv"), 0),
        ("-q -x", "nvidia-smi-q-h100x8.xml", 0)], ("nvidia-smi-h100x8.csv", 0))
    modinfo = os.path.join(host["bin"], "modinfo")
    with open(modinfo, "w") as handle:
        handle.write('#!/bin/sh\n[ "$3" = nvidia ] && echo 580.95.05 && exit 0\nexit 1\n')
    os.chmod(modinfo, 0o755)
    provide_file(host, "nvidia", "nvidia_proc_version", "proc-driver-nvidia-version-open.txt")

    result = run_module(capsys)

    assert result["changed"] is False
    facts = result["ansible_facts"]["launchcard_accelerators"]
    assert facts["vendor"] == "nvidia"
    assert facts["count"] == 8
    assert facts["models"] == ["h100"]
    assert facts["errors"] == []
    assert {d["memory_mib"] for d in facts["devices"]} == {81559}
    assert {d["fabric_state"] for d in facts["devices"]} == {"completed"}
    assert facts["driver"]["installed_version"] == "580.95.05"
    assert facts["driver"]["loaded_version"] == "580.95.05"
    assert facts["driver"]["reboot_required"] is False
    assert facts["driver"]["fabric_manager_required"] is True
    assert facts["driver"]["kernel_module"] == "open"
    # nvidia-smi -q -x, in the same module call: each GPU's health, reserved and free memory, processes
    assert [(d["health"], d["memory_reserved_mib"], d["memory_free_mib"], d["processes"]) for d in facts["devices"]] \
        == [("ok", 559, 81000, [])] * 8


def test_check_mode_reports_the_same_facts(host, capsys):
    fake_tool(host["bin"], "nvidia-smi", [("fabric.state", "nvidia-fabric-old-driver.txt", 2),
                                          ("-q -x", "nvidia-smi-q-gb200x4.xml", 0)], ("nvidia-smi-gb200x4.csv", 0))
    result = run_module(capsys, _ansible_check_mode=True)
    facts = result["ansible_facts"]["launchcard_accelerators"]
    assert result["changed"] is False
    assert facts["count"] == 4
    assert facts["models"] == ["gb200"]
    assert facts["driver"]["imex_required"] is True
    assert facts["errors"] == []


def test_nvidia_driver_failure_is_not_a_module_failure(host, capsys):
    fake_tool(host["bin"], "nvidia-smi", [], ("nvidia-smi-driver-failure.txt", 9))
    result = run_module(capsys)
    facts = result["ansible_facts"]["launchcard_accelerators"]
    assert "failed" not in result
    assert facts["vendor"] == "nvidia"
    assert facts["count"] == 0
    assert facts["driver"]["loaded_version"] is None
    assert len(facts["errors"]) == 1
    assert "couldn't communicate with the NVIDIA driver" in facts["errors"][0]


@pytest.mark.usefixtures("host")
def test_no_tool_is_vendor_none(capsys):
    facts = run_module(capsys)["ansible_facts"]["launchcard_accelerators"]
    assert facts["vendor"] == "none"
    assert facts["count"] == 0
    assert facts["devices"] == [] and facts["models"] == []
    assert facts["errors"] == []
    assert "no accelerator tool found" in facts["driver"]["message"]


@pytest.mark.usefixtures("host")
def test_requested_vendor_without_tool(capsys):
    facts = run_module(capsys, vendor="nvidia")["ansible_facts"]["launchcard_accelerators"]
    assert facts["vendor"] == "nvidia"
    assert facts["count"] == 0
    assert facts["errors"] == ["nvidia-smi not found"]


def test_amd_with_amd_smi(host, capsys):
    fake_tool(
        host["bin"],
        "amd-smi",
        [("list", "amd-smi-list.json", 0), ("static", "amd-smi-static-vram.json", 0)],
        ("nvidia-smi-driver-failure.txt", 2),
    )
    facts = run_module(capsys)["ansible_facts"]["launchcard_accelerators"]
    assert facts["vendor"] == "amd"
    assert facts["count"] == 8
    assert facts["models"] == ["mi355x"]
    assert facts["devices"][7]["memory_mib"] == 294896
    assert facts["errors"] == []


def test_ascend(host, capsys):
    fake_tool(host["bin"], "npu-smi", [("info -l", "npu-smi-info-l.txt", 0)], ("npu-smi-info-910b3x8.txt", 0))
    provide_file(host, "ascend", "ascend_version_info", "ascend-version.info")
    facts = run_module(capsys, vendor="auto")["ansible_facts"]["launchcard_accelerators"]
    assert facts["vendor"] == "ascend"
    assert facts["count"] == 8
    assert facts["models"] == ["ascend_910b"]
    assert facts["devices"][5]["health"] == "warning"
    assert facts["driver"]["installed_version"] == "24.1.rc3"


def test_auto_prefers_the_vendor_that_lists_devices(host, capsys):
    # A stray nvidia-smi that finds nothing must not hide the host's NPUs.
    fake_tool(host["bin"], "nvidia-smi", [], ("nvidia-smi-driver-failure.txt", 9))
    fake_tool(host["bin"], "npu-smi", [("info -l", "npu-smi-info-l.txt", 0)], ("npu-smi-info-910b3x8.txt", 0))
    facts = run_module(capsys)["ansible_facts"]["launchcard_accelerators"]
    assert facts["vendor"] == "ascend"
    assert facts["count"] == 8


def test_amd_part_from_the_pci_id_database(host, capsys):
    # rocm-smi on an MI250X names the MI200 family; the device id names the part
    fake_tool(host["bin"], "rocm-smi", [], (os.path.join("..", "real-inputs", "rocm-smi-mi250x-card-series.json"), 0))
    host["monkeypatch"].setattr(accelerators, "PCI_IDS_PATHS", (str(host["tmp"] / "absent"), PCI_IDS_EXCERPT))
    facts = run_module(capsys)["ansible_facts"]["launchcard_accelerators"]
    assert (facts["vendor"], facts["models"], facts["errors"]) == ("amd", ["mi250x"], [])
    host["monkeypatch"].setattr(accelerators, "PCI_IDS_PATHS", (str(host["tmp"] / "absent"),))
    facts = run_module(capsys)["ansible_facts"]["launchcard_accelerators"]
    assert facts["models"] == ["mi200"] and "needs the PCI id database" in facts["errors"][0]


def test_nvidia_services_follow_the_facts_unless_forced(host, capsys):
    fake_tool(host["bin"], "nvidia-smi", [
        ("fabric.state", answer_file(host["bin"], "nvidia-smi-h100x8.csv", "nvidia-fabric-completed.csv"), 0)],
        ("nvidia-smi-h100x8.csv", 0))
    result = run_module(capsys)
    assert result["nvidia_services"] == {"fabric_manager": True, "nvlink5": False, "imex": False}
    forced = run_module(capsys, fabric_manager=False, nvlink5="auto", imex="yes")
    assert forced["nvidia_services"] == {"fabric_manager": False, "nvlink5": False, "imex": True}


@pytest.mark.usefixtures("host")
def test_bad_service_setting_fails_naming_it(capsys):
    with patch_module_args({"imex": "sometimes"}):
        with pytest.raises(SystemExit) as info:
            accelerator_facts.main()
    output = json.loads(capsys.readouterr().out)
    assert info.value.code == 1
    assert output["msg"] == "imex must be auto, true or false, got 'sometimes'"


@pytest.mark.usefixtures("host")
def test_bad_vendor_option_fails(capsys):
    with patch_module_args({"vendor": "intel"}):
        with pytest.raises(SystemExit) as info:
            accelerator_facts.main()
    output = json.loads(capsys.readouterr().out)
    assert info.value.code == 1
    assert output["failed"] is True
    assert "vendor" in output["msg"]


@pytest.mark.skipif(shutil.which("ansible", path=os.path.dirname(sys.executable)) is None, reason="ansible CLI not installed")
def test_through_the_ansible_cli(tmp_path):
    """The module as Ansible ships it: collection lookup, AnsiballZ, local connection."""
    collections = tmp_path / "collections"
    namespace = collections / "ansible_collections" / "launchcard"
    namespace.mkdir(parents=True)
    os.symlink(REPO_ROOT, str(namespace / "inference"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_tool(str(bin_dir), "nvidia-smi", [
        ("fabric.state", answer_file(str(bin_dir), "nvidia-smi-b200x8.csv", "nvidia-fabric-completed.csv"), 0)],
        ("nvidia-smi-b200x8.csv", 0))
    env = dict(
        os.environ,
        PATH=os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), "/usr/bin", "/bin"]),
        ANSIBLE_COLLECTIONS_PATH=str(collections),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
        ANSIBLE_HOME=str(tmp_path / "home"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_DEPRECATION_WARNINGS="0",
        ANSIBLE_CALLBACK_RESULT_FORMAT="json",  # ansible.cfg prints YAML for people; parse JSON here
    )
    completed = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "ansible"),
            "localhost",
            "-c", "local",
            "-i", "localhost,",
            "-e", "ansible_python_interpreter=%s" % sys.executable,
            "-m", "launchcard.inference.accelerator_facts",
        ],
        env=env,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    result = json.loads(completed.stdout.split("=>", 1)[1])
    facts = result["ansible_facts"]["launchcard_accelerators"]
    assert result["changed"] is False
    assert facts["vendor"] == "nvidia"
    assert facts["count"] == 8
    assert facts["models"] == ["b200"]
    assert {d["memory_mib"] for d in facts["devices"]} == {183359}
    assert facts["driver"]["fabric_manager_required"] is True
