# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the uniform accelerator summary (summarize), collect() with host access injected, and the PCI
bus of bare hosts.

The parsers of each tool: test_accelerators.py.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.launchcard.inference.plugins.module_utils import _accelerators as acc
from ansible_collections.launchcard.inference.plugins.module_utils import _accel_pci as pci
from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import read_text
from ansible_collections.launchcard.inference.plugins.module_utils._accel_tables import PCI_DEVICE_NAMES, is_known_model, normalize_model
from ansible_collections.launchcard.inference.plugins.module_utils._accelerators import summarize

from ansible_collections.launchcard.inference.tests.unit.plugins.module_utils.accel_fixtures import (
    PCI_IDS,
    assert_shape,
    fixture,
    ok,
    with_fabric,
)


# ---------------------------------------------------------------- summarize: NVIDIA


def test_summary_nvidia_h100x8_hgx():
    summary = summarize(
        "nvidia",
        {
            "nvidia_smi": ok("nvidia-smi-h100x8.csv"),
            "nvidia_fabric": ok("nvidia-fabric-completed.csv"),
            "nvidia_modinfo": (0, "580.95.05\n", ""),
            "nvidia_proc_version": fixture("proc-driver-nvidia-version-open.txt"),
        },
    )
    assert_shape(summary)
    assert summary["vendor"] == "nvidia"
    assert summary["count"] == 8
    assert summary["models"] == ["h100"]
    assert summary["errors"] == []
    first = summary["devices"][0]
    assert first["model"] == "NVIDIA H100 80GB HBM3"
    assert first["memory_mib"] == 81559
    assert first["fabric_state"] == "completed"
    assert first["persistence_mode"] is True
    assert first["health"] is None
    assert summary["driver"] == {
        "installed_version": "580.95.05",
        "loaded_version": "580.95.05",
        "reboot_required": False,
        "fabric_manager_required": True,
        "imex_required": False,
        "nvlink5_required": False,
        "fabric_manager_active": None,
        "runtime_version": None,
        "kernel_module": "open",
        "message": None,
        "lost_gpus": [],
    }


def test_summary_nvidia_installed_newer_than_loaded_needs_reboot():
    summary = summarize(
        "nvidia",
        {
            "nvidia_smi": ok("nvidia-smi-h200x8.csv"),
            "nvidia_modinfo": (0, "580.95.05\n", ""),
            "nvidia_proc_version": fixture("proc-driver-nvidia-version-proprietary.txt"),
        },
    )
    assert summary["count"] == 8
    assert summary["models"] == ["h200"]
    assert {d["memory_mib"] for d in summary["devices"]} == {143771}
    assert summary["driver"]["installed_version"] == "580.95.05"
    assert summary["driver"]["loaded_version"] == "550.54.15"
    assert summary["driver"]["reboot_required"] is True
    assert summary["driver"]["fabric_manager_required"] is True
    assert summary["devices"][0]["fabric_state"] is None


def test_summary_nvidia_mixed_pcie_host():
    summary = summarize("nvidia", {"nvidia_smi": ok("nvidia-smi-mixed-h100-a100.csv")})
    assert_shape(summary)
    assert summary["count"] == 4
    assert summary["models"] == ["a100", "h100"]
    assert [d["model_id"] for d in summary["devices"]] == ["h100", "h100", "a100", "a100"]
    # Without modinfo or /proc, the installed version is nvidia-smi's; nothing to compare.
    assert summary["driver"]["installed_version"] == "550.54.15"
    assert summary["driver"]["loaded_version"] is None
    assert summary["driver"]["reboot_required"] is None
    assert summary["driver"]["fabric_manager_required"] is False


def test_summary_nvidia_b200_needs_fabric_manager():
    summary = summarize(
        "nvidia",
        {"nvidia_smi": ok("nvidia-smi-b200x8.csv"), "nvidia_fabric": ok("nvidia-fabric-completed.csv")},
    )
    assert summary["count"] == 8
    assert summary["models"] == ["b200"]
    assert {d["memory_mib"] for d in summary["devices"]} == {183359}
    assert summary["driver"]["fabric_manager_required"] is True
    assert summary["driver"]["imex_required"] is False


def test_summary_nvidia_gb200_needs_imex_not_fabric_manager():
    summary = summarize(
        "nvidia",
        {
            "nvidia_smi": ok("nvidia-smi-gb200x4.csv"),
            "nvidia_fabric": (0, "".join("%d, Completed, Success\n" % i for i in range(4)), ""),
        },
    )
    assert summary["count"] == 4
    assert summary["models"] == ["gb200"]
    assert {d["memory_mib"] for d in summary["devices"]} == {189471}
    assert summary["devices"][2]["bus_id"] == "0018:01:00.0"
    assert summary["driver"]["imex_required"] is True
    assert summary["driver"]["fabric_manager_required"] is False


def test_summary_nvidia_old_driver_fabric_query_rejected():
    summary = summarize(
        "nvidia",
        {"nvidia_smi": ok("nvidia-smi-h100x8.csv"), "nvidia_fabric": (2, fixture("nvidia-fabric-old-driver.txt"), "")},
    )
    assert summary["errors"] == []
    assert {d["fabric_state"] for d in summary["devices"]} == {None}
    assert summary["driver"]["fabric_manager_required"] is True


def test_summary_nvidia_driver_failure():
    summary = summarize("nvidia", {"nvidia_smi": (9, fixture("nvidia-smi-driver-failure.txt"), "")})
    assert_shape(summary)
    assert summary["vendor"] == "nvidia"
    assert summary["count"] == 0
    assert summary["models"] == []
    assert len(summary["errors"]) == 1
    assert summary["errors"][0].startswith("nvidia-smi exited 9: NVIDIA-SMI has failed because it couldn't communicate")
    assert summary["driver"]["loaded_version"] is None
    assert summary["driver"]["installed_version"] is None
    assert summary["driver"]["reboot_required"] is None
    assert "not loaded" in summary["driver"]["message"]


def test_summary_nvidia_version_mismatch_means_reboot():
    summary = summarize(
        "nvidia",
        {
            "nvidia_smi": (18, fixture("nvidia-smi-version-mismatch.txt"), ""),
            "nvidia_proc_version": fixture("proc-driver-nvidia-version-proprietary.txt"),
        },
    )
    assert summary["count"] == 0
    assert "Driver/library version mismatch" in summary["errors"][0]
    assert summary["driver"]["installed_version"] == "580.95"
    assert summary["driver"]["loaded_version"] == "550.54.15"
    assert summary["driver"]["reboot_required"] is True
    assert summary["driver"]["message"] is None


def test_summary_nvidia_lost_gpu_keeps_the_rest():
    summary = summarize("nvidia", {"nvidia_smi": ok("nvidia-smi-lost-gpu.csv")})
    assert summary["count"] == 7
    assert len(summary["errors"]) == 1 and "Unable to determine the device handle" in summary["errors"][0]
    assert summary["driver"]["fabric_manager_required"] is False


def test_summary_nvidia_empty_output():
    summary = summarize("nvidia", {"nvidia_smi": (0, "", "")})
    assert summary["count"] == 0
    assert summary["errors"] == ["nvidia-smi listed no GPUs"]


def test_summary_nvidia_tool_missing():
    summary = summarize("nvidia", {})
    assert summary["count"] == 0
    assert summary["errors"] == ["nvidia-smi not found"]


def test_summary_nvidia_bad_proc_file_is_an_error_not_a_crash():
    summary = summarize("nvidia", {"nvidia_smi": ok("nvidia-smi-h100x8.csv"), "nvidia_proc_version": "garbage"})
    assert summary["count"] == 8
    assert summary["errors"] and summary["errors"][0].startswith("/proc/driver/nvidia/version:")


def test_summary_nvidia_prefix_versions_match():
    summary = summarize(
        "nvidia",
        {
            "nvidia_smi": ok("nvidia-smi-h100x8.csv"),
            "nvidia_modinfo": (0, "580.95\n", ""),
            "nvidia_proc_version": fixture("proc-driver-nvidia-version-open.txt"),
        },
    )
    assert summary["driver"]["reboot_required"] is False


# ---------------------------------------------------------------- summarize: AMD


def test_summary_amd_mi355x_all_tools():
    summary = summarize(
        "amd",
        {
            "amd_smi_list": ok("amd-smi-list.json"),
            "amd_smi_static": ok("amd-smi-static-vram.json"),
            "amdgpu_modinfo": (0, "6.14.14\n", ""),
            "amdgpu_sys_version": "6.14.14\n",
        },
    )
    assert_shape(summary)
    assert summary["vendor"] == "amd"
    assert summary["count"] == 8
    assert summary["models"] == ["mi355x"]
    assert summary["errors"] == []
    first = summary["devices"][0]
    assert first["model"] == "AMD Instinct MI355X"
    assert first["memory_mib"] == 294896
    assert first["bus_id"] == "0000:05:00.0"
    assert first["driver_version"] == "6.14.14"
    assert first["persistence_mode"] is None and first["fabric_state"] is None
    assert summary["driver"]["reboot_required"] is False
    assert summary["driver"]["fabric_manager_required"] is False


def test_summary_amd_codename_falls_back_to_device_id_and_rocm_name():
    summary = summarize(
        "amd",
        {
            "amd_smi_list": ok("amd-smi-list-wrapped.json"),
            "amd_smi_static": ok("amd-smi-static-vram-legacy.json"),
            "pci_ids": PCI_IDS,
        },
    )
    assert summary["count"] == 2
    assert summary["models"] == ["mi300x"]
    assert summary["errors"] == []
    assert summary["devices"][0]["model"] == "Aqua Vanjaram"
    assert summary["devices"][0]["memory_mib"] == 196592


def test_summary_amd_codename_without_a_pci_id_database_is_named_by_the_cited_table():
    summary = summarize("amd", {"amd_smi_list": ok("amd-smi-list-wrapped.json"),
                                "amd_smi_static": ok("amd-smi-static-vram-legacy.json")})
    # device id 0x74a1 (the part, where amd-smi prints the code name) from the table of current parts
    assert summary["models"] == ["mi300x"] and summary["errors"] == []
    # an id neither the database nor the table knows stays the code name's slug: no guess
    static = ok("amd-smi-static-vram-legacy.json")
    other = (static[0], static[1].replace("0x74a1", "0x74ff"), static[2])
    summary = summarize("amd", {"amd_smi_list": ok("amd-smi-list-wrapped.json"), "amd_smi_static": other})
    assert summary["models"] == ["aqua_vanjaram"]


def test_summary_amd_rocm_matched_by_bus_not_position():
    listed = '[{"gpu": 0, "bdf": "0000:15:00.0", "uuid": "a"}, {"gpu": 1, "bdf": "0000:05:00.0", "uuid": "b"}]'
    rocm = (
        '{"card0": {"Card Series": "AMD Instinct MI300X", "PCI Bus": "0000:05:00.0"},'
        ' "card1": {"Card Series": "AMD Instinct MI325X", "PCI Bus": "0000:15:00.0"}}'
    )
    summary = summarize("amd", {"amd_smi_list": (0, listed, ""), "rocm_smi": (0, rocm, "")})
    assert [(d["index"], d["model_id"]) for d in summary["devices"]] == [(0, "mi325x"), (1, "mi300x")]


def test_summary_amd_rocm_smi_only():
    summary = summarize("amd", {"rocm_smi": ok("rocm-smi-productname.json")})
    assert summary["count"] == 8
    assert summary["models"] == ["mi300x"]
    assert summary["devices"][3]["memory_mib"] == 196592
    assert summary["devices"][3]["bus_id"] == "0000:75:00.0"


def test_summary_amd_rocm_smi_lowercase_keys():
    summary = summarize("amd", {"rocm_smi": ok("rocm-smi-productname-lowercase.json")})
    assert summary["count"] == 2
    assert summary["models"] == ["mi210"]


def test_summary_amd_rocm_smi_card_model_fallback():
    summary = summarize("amd", {"rocm_smi": ok("rocm-smi-productname-model-only.json"), "pci_ids": PCI_IDS})
    assert summary["models"] == ["mi300x"]
    assert summary["devices"][0]["model"] == "Aqua Vanjaram [Instinct MI300X]"
    assert summary["errors"] == []
    # without the database the collection's table of current parts names the id
    bare = summarize("amd", {"rocm_smi": ok("rocm-smi-productname-model-only.json")})
    assert (bare["devices"][0]["model_id"], bare["errors"]) == ("mi300x", [])
    # an id the table lacks names nothing: an error says so, the model is null
    rocm = ok("rocm-smi-productname-model-only.json")
    unknown = summarize("amd", {"rocm_smi": (rocm[0], rocm[1].replace("0x74a1", "0x74ff").replace("0x74A1", "0x74FF"), rocm[2])})
    assert unknown["devices"][0]["model_id"] is None
    assert unknown["errors"] == ["AMD GPU 0: no product name found (rocm-smi Card Series/Card Model/Device Name, "
                                 "amd-smi asic.market_name) and device id 0x74ff is unknown without a PCI id database"]


def test_summary_amd_failures_are_errors():
    summary = summarize(
        "amd",
        {
            "amd_smi_list": (1, "", "AMDSMI_STATUS_DRIVER_NOT_LOADED - Driver not loaded"),
            "amd_smi_static": (0, "not json", ""),
        },
    )
    assert summary["count"] == 0
    assert summary["errors"][0] == "amd-smi list exited 1: AMDSMI_STATUS_DRIVER_NOT_LOADED - Driver not loaded"
    assert summary["errors"][1].startswith("amd-smi static: not JSON")


def test_summary_amd_tools_missing():
    assert summarize("amd", {})["errors"] == ["neither amd-smi nor rocm-smi found"]


# ---------------------------------------------------------------- summarize: Ascend


def test_summary_ascend_910b3x8():
    summary = summarize(
        "ascend",
        {
            "npu_smi_list": ok("npu-smi-info-l.txt"),
            "npu_smi_info": ok("npu-smi-info-910b3x8.txt"),
            "ascend_version_info": fixture("ascend-version.info"),
        },
    )
    assert_shape(summary)
    assert summary["vendor"] == "ascend"
    assert summary["count"] == 8
    assert summary["models"] == ["ascend_910b"]
    assert summary["errors"] == []
    assert [d["index"] for d in summary["devices"]] == list(range(8))
    assert {d["memory_mib"] for d in summary["devices"]} == {65536}
    assert summary["devices"][5]["health"] == "warning"
    assert [d["health"] for d in summary["devices"]].count("ok") == 7
    assert summary["devices"][0]["driver_version"] == "24.1.rc3"
    assert summary["driver"]["installed_version"] == "24.1.rc3"
    assert summary["driver"]["loaded_version"] == "24.1.rc3"
    assert summary["driver"]["reboot_required"] is False


def test_summary_ascend_upgraded_driver_not_loaded_yet():
    # version.info names the installed .run; the npu-smi header the driver still running
    summary = summarize("ascend", {"npu_smi_info": ok("npu-smi-info-910b3x8.txt"),
                                   "ascend_version_info": "Version=25.2.0\nascendhal_version=7.35.23\n"})
    assert (summary["driver"]["installed_version"], summary["driver"]["loaded_version"]) == ("25.2.0", "24.1.rc3")
    assert summary["driver"]["reboot_required"] is True
    # no npu-smi answer (driver not loaded): cannot tell
    summary = summarize("ascend", {"ascend_version_info": "Version=25.2.0\n"})
    assert summary["driver"]["loaded_version"] is None and summary["driver"]["reboot_required"] is None


def test_summary_ascend_a3_dual_die_is_910c():
    summary = summarize("ascend", {"npu_smi_info": ok("npu-smi-info-a3.txt")})
    assert summary["count"] == 4
    assert [d["index"] for d in summary["devices"]] == [0, 1, 2, 3]
    assert summary["models"] == ["ascend_910c"]
    assert summary["driver"]["installed_version"] == "25.3.rc1"


def test_summary_ascend_950pr():
    summary = summarize("ascend", {"npu_smi_list": ok("npu-smi-info-l.txt"), "npu_smi_info": ok("npu-smi-info-950pr.txt")})
    assert summary["count"] == 8
    assert summary["models"] == ["ascend_950pr"]
    assert summary["errors"] == []


def test_summary_ascend_count_mismatch_is_reported():
    summary = summarize("ascend", {"npu_smi_list": ok("npu-smi-info-l.txt"), "npu_smi_info": ok("npu-smi-info-a3.txt")})
    assert summary["errors"] == ["npu-smi info -l counts 8 NPUs but the npu-smi info table shows 2"]


def test_summary_ascend_table_failed_uses_list():
    summary = summarize(
        "ascend",
        {"npu_smi_list": ok("npu-smi-info-l.txt"), "npu_smi_info": (255, "dcmi module initialize failed. ret is -8005\n", "")},
    )
    assert summary["count"] == 8
    assert summary["models"] == []
    assert summary["errors"] == ["npu-smi info exited 255: dcmi module initialize failed. ret is -8005"]


# ---------------------------------------------------------------- summarize: none


def test_summary_none():
    summary = summarize("none")
    assert_shape(summary)
    assert summary["vendor"] == "none"
    assert summary["count"] == 0
    assert summary["errors"] == []
    assert "nvidia-smi" in summary["driver"]["message"] and "npu-smi" in summary["driver"]["message"]
    assert summary["driver"]["fabric_manager_required"] is False


def test_summary_unknown_vendor_is_a_programming_error():
    with pytest.raises(ValueError):
        summarize("intel")


@given(st.text(), st.text(), st.integers(min_value=0, max_value=255))
def test_summary_never_raises_on_arbitrary_output(stdout, other, rc):
    for vendor, sources in (
        ("nvidia", {"nvidia_smi": (rc, stdout, ""), "nvidia_fabric": (0, other, ""), "nvidia_proc_version": other}),
        ("amd", {"amd_smi_list": (rc, stdout, ""), "amd_smi_static": (0, other, ""), "rocm_smi": (0, other, "")}),
        ("ascend", {"npu_smi_list": (rc, stdout, ""), "npu_smi_info": (0, other, "")}),
    ):
        summary = summarize(vendor, sources)
        assert_shape(summary)


# ---------------------------------------------------------------- collect (host access injected)


@pytest.fixture(autouse=True)
def no_extra_tool_dirs(monkeypatch):
    """Keep real tools in /opt/rocm/bin etc. on a build host out of collect()."""
    monkeypatch.setattr(acc, "EXTRA_TOOL_DIRS", ())


class FakeHost:
    """which/run/read callables over a dict of tools and files."""

    def __init__(self, tools=None, files=None):
        self.tools = tools or {}  # name -> {argv tail tuple: (rc, stdout, stderr)} or callable
        self.files = files or {}
        self.calls = []

    def which(self, name):
        return "/usr/bin/" + name if name in self.tools else None

    def run(self, argv):
        self.calls.append(list(argv))
        assert isinstance(argv, list) and argv[0].startswith("/usr/bin/")
        answers = self.tools[os.path.basename(argv[0])]
        return answers.get(tuple(argv[1:]), (127, "", "unexpected arguments %s" % argv[1:]))

    def read(self, path):
        return self.files.get(path)


NVIDIA_MAIN = tuple(acc.COMMANDS["nvidia"][0][1][1:])
# what a driver without the fabric fields is asked again (split_fabric_columns)
NVIDIA_LIST = ("--query-gpu=index,name,memory.total,uuid,driver_version,pci.bus_id,persistence_mode",
               "--format=csv,noheader,nounits")


def test_collect_auto_without_tools_is_none():
    host = FakeHost()
    summary = acc.collect("auto", host.which, host.run, host.read)
    assert summary["vendor"] == "none" and summary["count"] == 0
    assert host.calls == []


def test_collect_nvidia_runs_queries_and_reads_proc():
    host = FakeHost(
        tools={
            "nvidia-smi": {NVIDIA_MAIN: (0, with_fabric(fixture("nvidia-smi-h100x8.csv"), fixture("nvidia-fabric-completed.csv")), "")},
            "modinfo": {("-F", "version", "nvidia"): (0, "580.95.05\n", "")},
        },
        files={"/proc/driver/nvidia/version": fixture("proc-driver-nvidia-version-open.txt")},
    )
    summary = acc.collect("auto", host.which, host.run, host.read)
    assert summary["vendor"] == "nvidia"
    assert summary["count"] == 8
    assert summary["driver"]["loaded_version"] == "580.95.05"
    assert summary["driver"]["reboot_required"] is False
    # the list and the fabric columns in one nvidia-smi call, then the XML query
    assert [call[1:] for call in host.calls] == [list(NVIDIA_MAIN), ["-q", "-x"], ["-F", "version", "nvidia"]]
    # the same facts as the two queries answered apart
    apart = summarize("nvidia", {"nvidia_smi": ok("nvidia-smi-h100x8.csv"), "nvidia_fabric": ok("nvidia-fabric-completed.csv"),
                                 "nvidia_modinfo": (0, "580.95.05\n", ""),
                                 "nvidia_proc_version": fixture("proc-driver-nvidia-version-open.txt")})
    assert summary["devices"] == apart["devices"] and summary["driver"] == apart["driver"]
    assert {d["fabric_state"] for d in summary["devices"]} == {"completed"}


def test_collect_nvidia_fabric_columns_of_a_name_with_commas():
    host = FakeHost(tools={"nvidia-smi": {NVIDIA_MAIN: (
        0, "0, NVIDIA H100, PCIe, special, 81559, GPU-x, 580.95.05, 00000000:18:00.0, Enabled, In Progress, N/A\n", "")}})
    device, = acc.collect("nvidia", host.which, host.run, host.read)["devices"]
    assert (device["model"], device["memory_mib"], device["fabric_state"]) == ("NVIDIA H100, PCIe, special", 81559, "in_progress")


def test_collect_nvidia_driver_without_fabric_fields_asks_for_the_list_alone():
    host = FakeHost(tools={"nvidia-smi": {NVIDIA_MAIN: (2, fixture("nvidia-fabric-old-driver.txt"), ""),
                                          NVIDIA_LIST: ok("nvidia-smi-h100x8.csv")}})
    summary = acc.collect("nvidia", host.which, host.run, host.read)
    # no error from the refusal (this fake host answers no XML query)
    assert summary["count"] == 8 and [e for e in summary["errors"] if "-q -x" not in e] == []
    assert {d["fabric_state"] for d in summary["devices"]} == {None}
    assert [call[1:] for call in host.calls] == [list(NVIDIA_MAIN), list(NVIDIA_LIST), ["-q", "-x"]]


def test_collect_skips_fabric_query_when_nvidia_smi_failed():
    host = FakeHost(tools={"nvidia-smi": {NVIDIA_MAIN: (9, fixture("nvidia-smi-driver-failure.txt"), "")}})
    summary = acc.collect("nvidia", host.which, host.run, host.read)
    assert summary["count"] == 0
    assert len(host.calls) == 1
    assert summary["driver"]["loaded_version"] is None


def test_collect_auto_prefers_a_vendor_with_devices():
    host = FakeHost(
        tools={
            "nvidia-smi": {NVIDIA_MAIN: (9, fixture("nvidia-smi-driver-failure.txt"), "")},
            "npu-smi": {("info", "-l"): ok("npu-smi-info-l.txt"), ("info",): ok("npu-smi-info-910b3x8.txt")},
        },
        files={"/usr/local/Ascend/driver/version.info": fixture("ascend-version.info")},
    )
    summary = acc.collect("auto", host.which, host.run, host.read)
    assert summary["vendor"] == "ascend"
    assert summary["count"] == 8
    assert summary["driver"]["installed_version"] == "24.1.rc3"


def test_collect_auto_reports_first_vendor_when_none_lists_devices():
    host = FakeHost(
        tools={
            "nvidia-smi": {NVIDIA_MAIN: (9, fixture("nvidia-smi-driver-failure.txt"), "")},
            "rocm-smi": {tuple(acc.COMMANDS["amd"][2][1][1:]): (0, "{}", "")},
        }
    )
    summary = acc.collect("auto", host.which, host.run, host.read)
    assert summary["vendor"] == "nvidia"
    assert "couldn't communicate" in summary["errors"][0]


def test_collect_amd_through_rocm_smi_only():
    host = FakeHost(tools={"rocm-smi": {tuple(acc.COMMANDS["amd"][2][1][1:]): ok("rocm-smi-productname.json")}})
    summary = acc.collect("auto", host.which, host.run, host.read)
    assert summary["vendor"] == "amd"
    assert summary["count"] == 8
    assert summary["models"] == ["mi300x"]


def test_collect_named_vendor_without_tool():
    summary = acc.collect("ascend", FakeHost().which, FakeHost().run, FakeHost().read)
    assert summary["vendor"] == "ascend"
    assert summary["errors"] == ["npu-smi not found"]


def test_collect_rejects_unknown_vendor():
    with pytest.raises(ValueError):
        acc.collect("intel", FakeHost().which, FakeHost().run)


def test_find_tool_falls_back_to_extra_dirs(tmp_path):
    tool = tmp_path / "rocm-smi"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    (tmp_path / "not-executable").write_text("")
    assert acc.find_tool("rocm-smi", lambda name: None, [str(tmp_path)]) == str(tool)
    assert acc.find_tool("not-executable", lambda name: None, [str(tmp_path)]) is None
    assert acc.find_tool("rocm-smi", lambda name: "/usr/bin/rocm-smi", [str(tmp_path)]) == "/usr/bin/rocm-smi"


def test_read_text(tmp_path):
    path = tmp_path / "version"
    path.write_text("6.14.14\n")
    assert read_text(str(path)) == "6.14.14\n"
    assert read_text(str(tmp_path / "missing")) is None


# ---------------------------------------------------------------- the PCI bus (bare hosts)


def pci_tree(root, functions):
    """Write a sysfs-like devices dir: {bus_id: (vendor, device, class)}."""
    for bus_id, (vendor, device, klass) in functions.items():
        base = root / bus_id
        base.mkdir(parents=True)
        for name, value in (("vendor", vendor), ("device", device), ("class", klass)):
            (base / name).write_text(value + "\n")
    return str(root)


HGX_BUS = {
    "0000:18:00.0": ("0x10de", "0x2330", "0x030200"),   # H100 SXM: 3D controller
    "0000:2a:00.0": ("0x10de", "0x2330", "0x030200"),
    "0000:05:00.0": ("0x10de", "0x22a3", "0x068000"),   # NVSwitch: a bridge, not a GPU
    "0000:03:00.0": ("0x1a03", "0x2000", "0x030000"),   # the BMC's VGA
    "0000:c1:00.0": ("0x15b3", "0x1021", "0x020000"),   # a NIC
}


def test_parse_pci_devices_counts_accelerators_only():
    entries = [{"bus_id": k, "vendor": v, "device": d, "class": c} for k, (v, d, c) in HGX_BUS.items()]
    bus = pci.parse_pci_devices(entries)
    assert (bus["vendor"], bus["count"]) == ("nvidia", 2)
    assert [d["bus_id"] for d in bus["devices"]] == ["0000:18:00.0", "0000:2a:00.0"]
    assert bus["devices"][0] == {"bus_id": "0000:18:00.0", "vendor": "nvidia", "device_id": "0x2330", "name": None}
    ascend = [{"bus_id": "0000:%02x:00.0" % (0xc1 + i), "vendor": "0x19e5", "device": "0xd802", "class": "0x120000"}
              for i in range(8)] + [{"bus_id": "0000:01:00.0", "vendor": "0x19e5", "device": "0x1822", "class": "0x020000"}]
    assert pci.parse_pci_devices(ascend)["vendor"] == "ascend" and pci.parse_pci_devices(ascend)["count"] == 8
    mi300 = [{"bus_id": "0000:0%d:00.0" % i, "vendor": "0x1002", "device": "0x74a1", "class": "0x120000"} for i in range(4)]
    assert (pci.parse_pci_devices(mi300)["vendor"], pci.parse_pci_devices(mi300)["count"]) == ("amd", 4)
    assert pci.parse_pci_devices(None) == {"vendor": None, "count": 0, "devices": []}
    assert pci.parse_pci_devices([{"bus_id": "x", "vendor": None, "device": None, "class": None}])["vendor"] is None


def test_collect_on_a_bare_host_reports_the_pci_vendor(tmp_path):
    root = pci_tree(tmp_path / "devices", HGX_BUS)
    summary = acc.collect("auto", FakeHost().which, FakeHost().run, read_text, pci_dir=root)
    assert_shape(summary)
    assert (summary["vendor"], summary["count"]) == ("none", 0)
    assert (summary["pci"]["vendor"], summary["pci"]["count"]) == ("nvidia", 2)
    assert summary["driver"]["message"].endswith("the PCI bus shows 2 nvidia accelerator(s): no driver installed")
    # an unreadable bus is no error, just nothing found; "" skips it
    assert acc.collect("auto", FakeHost().which, FakeHost().run, read_text,
                       pci_dir=str(tmp_path / "absent"))["pci"]["count"] == 0
    assert acc.collect("auto", FakeHost().which, FakeHost().run, read_text, pci_dir="")["pci"]["vendor"] is None


def test_pci_devices_are_named_by_the_database_then_the_cited_table():
    bus = [{"bus_id": "0000:0%d:00.0" % i, "vendor": v, "device": d, "class": "0x120000"}
           for i, (v, d) in enumerate((("0x1002", "0x74a1"), ("0x19e5", "0xd802"), ("0x19e5", "0xd803"), ("0x1002", "0x74ff")))]
    names = [(d["device_id"], d["name"]) for d in pci.parse_pci_devices(bus)["devices"]]
    assert names == [("0x74a1", "Aqua Vanjaram [Instinct MI300X]"), ("0xd802", "Ascend 910B"), ("0xd803", "Ascend 910_93"),
                     ("0x74ff", None)]
    # the host's database wins over the table where both know an id
    db = "1002  Advanced Micro Devices, Inc. [AMD/ATI]\n\t74a1  Instinct MI300X (host database)\n"
    assert pci.parse_pci_devices(bus, db)["devices"][0]["name"] == "Instinct MI300X (host database)"
    assert pci.known_device_names(db, "1002")["0x75a3"] == "Aqua Vanjaram [Instinct MI355X]"


def test_the_table_of_current_parts_names_the_models_the_vendor_tools_do():
    models = dict((device_id, normalize_model(name)) for table in PCI_DEVICE_NAMES.values() for device_id, name in table.items())
    assert (models["0x74a1"], models["0x74a5"], models["0x75a3"], models["0x74b5"]) == ("mi300x", "mi325x", "mi355x", "mi300x")
    assert (models["0xd801"], models["0xd802"], models["0xd803"]) == ("ascend_910", "ascend_910b", "ascend_910c")
    assert all(is_known_model(m) or m in ("mi308x", "mi350p", "ascend_950", "ascend_310p") for m in models.values()), models


def test_a_bare_host_names_its_accelerators_from_this_machines_pci_ids_then_the_table(tmp_path):
    bus = {"0000:0%d:00.0" % i: ("0x1002", "0x74a1", "0x120000") for i in range(2)}
    root = pci_tree(tmp_path / "devices", bus)
    summary = acc.collect("auto", FakeHost().which, FakeHost().run, read_text, pci_dir=root)
    assert summary["vendor"] == "none"
    # this machine's pci.ids (Debian, 2023) lacks the MI300X; the table names it
    assert [d["name"] for d in summary["pci"]["devices"]] == ["Aqua Vanjaram [Instinct MI300X]"] * 2
