# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the accelerator output parsers and the uniform summary.

Fixtures under tests/unit/fixtures/accelerators/ are written from the
documented output shapes (the tools' documentation, upstream tool sources and
public bug reports); serial numbers and UUIDs in them are made up.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.launchcard.inference.plugins.module_utils import _accelerators as acc
from ansible_collections.launchcard.inference.plugins.module_utils import _accel_pci as pci
from ansible_collections.launchcard.inference.plugins.module_utils._accel_amd import parse_amd_smi_list, parse_amd_smi_static, parse_rocm_smi_product
from ansible_collections.launchcard.inference.plugins.module_utils._accel_ascend import parse_ascend_version_info, parse_npu_smi_info, parse_npu_smi_list
from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import AcceleratorOutputError, normalize_bdf, read_text
from ansible_collections.launchcard.inference.plugins.module_utils._accel_nvidia import (
    fabric_manager_required,
    imex_required,
    nvlink5_required,
    parse_modinfo_version,
    parse_nvidia_fabric,
    parse_nvidia_proc_version,
    parse_nvidia_smi_gpus,
    parse_nvml_mismatch,
)
from ansible_collections.launchcard.inference.plugins.module_utils._accel_tables import PCI_DEVICE_NAMES, is_known_model, normalize_model
from ansible_collections.launchcard.inference.plugins.module_utils._accelerators import candidate_vendors, summarize

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "accelerators")


PCI_IDS_EXCERPT = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "pci.ids-excerpt")
with open(PCI_IDS_EXCERPT) as _handle:
    PCI_IDS = _handle.read()


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def ok(name):
    """A successful run_command result printing the fixture."""
    return (0, fixture(name), "")


DEVICE_KEYS = {
    "index", "model", "model_id", "memory_mib", "uuid", "bus_id", "driver_version",
    "persistence_mode", "fabric_state", "health",
}
DRIVER_KEYS = {
    "installed_version", "loaded_version", "reboot_required", "fabric_manager_required",
    "imex_required", "nvlink5_required", "fabric_manager_active", "runtime_version", "kernel_module", "message",
}


def assert_shape(summary):
    assert set(summary) == {"vendor", "count", "devices", "models", "driver", "pci", "errors"}
    assert set(summary["pci"]) == {"vendor", "count", "devices"}
    assert summary["count"] == len(summary["devices"])
    assert set(summary["driver"]) == DRIVER_KEYS
    for device in summary["devices"]:
        assert set(device) == DEVICE_KEYS
    assert [d["index"] for d in summary["devices"]] == sorted(d["index"] for d in summary["devices"])
    assert summary["models"] == sorted(set(d["model_id"] for d in summary["devices"] if d["model_id"]))
    assert all(isinstance(error, str) for error in summary["errors"])


# ---------------------------------------------------------------- model names


@pytest.mark.parametrize(
    "name, model_id",
    [
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H100 PCIe", "h100"),
        ("NVIDIA H100 NVL", "h100"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA H200 NVL", "h200"),
        ("NVIDIA H20", "h20"),
        ("NVIDIA H800", "h800"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("NVIDIA A100 80GB PCIe", "a100"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA B300 SXM6 AC", "b300"),
        ("NVIDIA GB200", "gb200"),
        ("NVIDIA GB300", "gb300"),
        ("NVIDIA GH200 480GB", "gh200"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA L40", "l40"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA A10G", "a10g"),
        ("Tesla T4", "t4"),
        ("AMD Instinct MI300X", "mi300x"),
        ("AMD Instinct MI325X", "mi325x"),
        ("AMD Instinct MI350X", "mi350x"),
        ("AMD Instinct MI355X", "mi355x"),
        ("AMD INSTINCT MI300X (MCM) OAM AC MBA", "mi300x"),
        ("AMD Instinct MI250X/MI250", "mi250x"),
        ("Instinct MI210", "mi210"),
        ("Aldebaran/MI200 [Instinct MI250X]", "mi250x"),
        ("Aqua Vanjaram [Instinct MI300X]", "mi300x"),
        ("910B3", "ascend_910b"),
        ("910B1", "ascend_910b"),
        ("Ascend910B", "ascend_910b"),
        ("Ascend950PR", "ascend_950pr"),
        ("Ascend950DT", "ascend_950dt"),
        ("Ascend910", "ascend_910"),
        ("310P3", "ascend_310p"),
    ],
)
def test_normalize_model_known_names(name, model_id):
    assert normalize_model(name) == model_id


@pytest.mark.parametrize(
    "name, slug",
    [
        ("NVIDIA RTX A6000", "rtx_a6000"),
        ("Aqua Vanjaram", "aqua_vanjaram"),
        ("Radeon RX 7900 XTX", "radeon_rx_7900_xtx"),
        ("---", "unknown"),
    ],
)
def test_normalize_model_unknown_names_become_slugs(name, slug):
    assert normalize_model(name) == slug


@pytest.mark.parametrize("name", ["0x74a1", "0x74A5", "0x0c34"])
def test_normalize_model_bare_device_id_is_not_a_name(name):
    # a PCI device id is looked up in the PCI id database (summarize_amd), not guessed
    assert normalize_model(name) is None


@pytest.mark.parametrize("name", [None, "", "   ", "[N/A]"])
def test_normalize_model_without_a_name_is_none(name):
    assert normalize_model(name) is None


@given(st.one_of(st.text(), st.integers(), st.floats(allow_nan=True), st.binary()))
def test_normalize_model_never_raises(name):
    result = normalize_model(name)
    assert result is None or (isinstance(result, str) and result == result.lower() and result)


def test_normalize_bdf():
    assert normalize_bdf("00000000:18:00.0") == "0000:18:00.0"
    assert normalize_bdf("0000:C1:00.0") == "0000:c1:00.0"
    assert normalize_bdf("00000008:01:00.0") == "0008:01:00.0"
    assert normalize_bdf("3b:00.0") == "0000:3b:00.0"
    assert normalize_bdf("[N/A]") is None
    assert normalize_bdf("NA") is None
    assert normalize_bdf("weird") == "weird"


# ---------------------------------------------------------------- NVIDIA


def test_nvidia_h100x8():
    gpus = parse_nvidia_smi_gpus(fixture("nvidia-smi-h100x8.csv"))
    assert len(gpus) == 8
    assert [gpu["index"] for gpu in gpus] == list(range(8))
    assert {gpu["memory_mib"] for gpu in gpus} == {81559}
    assert {gpu["name"] for gpu in gpus} == {"NVIDIA H100 80GB HBM3"}
    assert {gpu["driver_version"] for gpu in gpus} == {"580.95.05"}
    assert gpus[0]["bus_id"] == "0000:18:00.0"
    assert gpus[7]["bus_id"] == "0000:db:00.0"
    assert gpus[0]["uuid"].startswith("GPU-") and len(gpus[0]["uuid"]) == 40
    assert all(gpu["persistence_mode"] is True for gpu in gpus)


def test_nvidia_h200_memory():
    gpus = parse_nvidia_smi_gpus(fixture("nvidia-smi-h200x8.csv"))
    assert len(gpus) == 8
    assert {gpu["memory_mib"] for gpu in gpus} == {143771}
    assert {gpu["driver_version"] for gpu in gpus} == {"570.172.08"}


def test_nvidia_mixed_models_and_extra_spaces():
    gpus = parse_nvidia_smi_gpus(fixture("nvidia-smi-mixed-h100-a100.csv"))
    assert [gpu["name"] for gpu in gpus] == ["NVIDIA H100 PCIe"] * 2 + ["NVIDIA A100 80GB PCIe"] * 2
    assert [gpu["memory_mib"] for gpu in gpus] == [81559, 81559, 81920, 81920]
    assert gpus[1]["bus_id"] == "0000:65:00.0"
    assert gpus[1]["driver_version"] == "550.54.15"
    assert [gpu["persistence_mode"] for gpu in gpus] == [False, False, True, True]


def test_nvidia_na_and_not_supported_fields():
    gpus = parse_nvidia_smi_gpus(fixture("nvidia-smi-na-fields.csv"))
    assert len(gpus) == 3
    assert gpus[0]["memory_mib"] == 46068
    assert gpus[0]["persistence_mode"] is None
    assert gpus[1]["memory_mib"] is None
    assert gpus[1]["persistence_mode"] is None
    assert gpus[2]["uuid"] is None
    assert gpus[2]["bus_id"] is None
    assert gpus[2]["persistence_mode"] is False


def test_nvidia_name_with_comma_is_kept_whole():
    line = "0, NVIDIA Custom, Rev 2, 1024, GPU-abc, 550.54.15, 00000000:01:00.0, Enabled\n"
    gpus = parse_nvidia_smi_gpus(line)
    assert gpus[0]["name"] == "NVIDIA Custom, Rev 2"
    assert gpus[0]["memory_mib"] == 1024


@pytest.mark.parametrize("text", ["", "\n", "   \n\n"])
def test_nvidia_empty_output_is_no_gpus(text):
    assert parse_nvidia_smi_gpus(text) == []


def test_nvidia_unparsable_line_raises_without_collector():
    with pytest.raises(AcceleratorOutputError) as info:
        parse_nvidia_smi_gpus(fixture("nvidia-smi-lost-gpu.csv"))
    assert info.value.tool == "nvidia-smi"
    assert "Unable to determine the device handle" in str(info.value)


def test_nvidia_unparsable_line_is_collected():
    errors = []
    gpus = parse_nvidia_smi_gpus(fixture("nvidia-smi-lost-gpu.csv"), errors)
    assert len(gpus) == 7
    assert len(errors) == 1 and "GPU0000:DB:00.0" in errors[0]


def test_nvidia_fabric_completed():
    assert parse_nvidia_fabric(fixture("nvidia-fabric-completed.csv")) == dict((i, "completed") for i in range(8))


def test_nvidia_fabric_states():
    assert parse_nvidia_fabric(fixture("nvidia-fabric-mixed.csv")) == {
        0: "completed",
        1: "in_progress",
        2: "not_started",
        3: "failed",
        4: "not_supported",
        5: None,
    }


def test_nvidia_fabric_old_driver_is_unknown():
    assert parse_nvidia_fabric(fixture("nvidia-fabric-old-driver.txt")) == {}
    assert parse_nvidia_fabric("") == {}


def test_nvidia_fabric_garbage_raises():
    with pytest.raises(AcceleratorOutputError):
        parse_nvidia_fabric("something else entirely\n")


def test_proc_version_open_module():
    assert parse_nvidia_proc_version(fixture("proc-driver-nvidia-version-open.txt")) == {
        "version": "580.95.05",
        "kernel_module": "open",
    }


def test_proc_version_proprietary_module():
    assert parse_nvidia_proc_version(fixture("proc-driver-nvidia-version-proprietary.txt")) == {
        "version": "550.54.15",
        "kernel_module": "proprietary",
    }


def test_proc_version_aarch64_proprietary():
    text = "NVRM version: NVIDIA UNIX aarch64 Kernel Module  570.86.15  Thu Jan 30 2025\n"
    assert parse_nvidia_proc_version(text)["version"] == "570.86.15"


@pytest.mark.parametrize("text", ["", "GCC version: 12\n", "NVRM version: garbled\n"])
def test_proc_version_malformed_raises(text):
    with pytest.raises(AcceleratorOutputError) as info:
        parse_nvidia_proc_version(text)
    assert info.value.tool == "/proc/driver/nvidia/version"


def test_modinfo_version():
    assert parse_modinfo_version("580.95.05\n") == "580.95.05"
    assert parse_modinfo_version("\n") is None
    assert parse_modinfo_version("modinfo: ERROR: Module nvidia not found.\n") is None


def test_nvml_mismatch():
    assert parse_nvml_mismatch(fixture("nvidia-smi-version-mismatch.txt")) == {"library_version": "580.95"}
    assert parse_nvml_mismatch("Failed to initialize NVML: Driver/library version mismatch") == {"library_version": None}
    assert parse_nvml_mismatch(fixture("nvidia-smi-driver-failure.txt")) is None


# ---------------------------------------------------------------- AMD


def test_amd_smi_list_plain():
    gpus = parse_amd_smi_list(fixture("amd-smi-list.json"))
    assert len(gpus) == 8
    assert gpus[0] == {"index": 0, "bus_id": "0000:05:00.0", "uuid": gpus[0]["uuid"]}
    assert gpus[0]["uuid"] and len(gpus[0]["uuid"]) == 36
    assert gpus[7]["bus_id"] == "0000:f5:00.0"


def test_amd_smi_list_wrapped():
    gpus = parse_amd_smi_list(fixture("amd-smi-list-wrapped.json"))
    assert [gpu["index"] for gpu in gpus] == [0, 1]
    assert gpus[1]["bus_id"] == "0000:15:00.0"


@pytest.mark.parametrize("text", ["", "not json", '{"foo": 1}', "[1, 2]", '[{"gpu": "x"}]'])
def test_amd_smi_list_malformed_raises(text):
    with pytest.raises(AcceleratorOutputError) as info:
        parse_amd_smi_list(text)
    assert info.value.tool == "amd-smi list"


def test_amd_smi_static_value_unit():
    static = parse_amd_smi_static(fixture("amd-smi-static-vram.json"))
    assert sorted(static) == list(range(8))
    assert static[0] == {
        "memory_mib": 294896,
        "market_name": "AMD Instinct MI355X",
        "device_id": "0x75a3",
        "driver_version": "6.14.14",
    }


def test_amd_smi_static_legacy_vram_size_mb():
    static = parse_amd_smi_static(fixture("amd-smi-static-vram-legacy.json"))
    assert static[1]["memory_mib"] == 196592
    assert static[1]["market_name"] == "Aqua Vanjaram"
    assert static[1]["device_id"] == "0x74a1"
    assert static[1]["driver_version"] is None


def test_amd_smi_static_string_sizes_and_na():
    static = parse_amd_smi_static(fixture("amd-smi-static-vram-strings.json"))
    assert static[0]["memory_mib"] == 192 * 1024
    assert static[1]["memory_mib"] is None


@pytest.mark.parametrize(
    "size, mib",
    [
        ({"value": 65536, "unit": "MB"}, 65536),
        ({"value": 64, "unit": "GB"}, 65536),
        ({"value": 67108864, "unit": "KB"}, 65536),
        ({"value": 68719476736, "unit": "B"}, 65536),
        ({"value": "N/A", "unit": "MB"}, None),
        ({"value": 1, "unit": "furlongs"}, None),
        (65536, 65536),
        ("65536 MB", 65536),
    ],
)
def test_amd_vram_units(size, mib):
    text = '[{"gpu": 0, "vram": {"size": %s}}]' % json.dumps(size)
    assert parse_amd_smi_static(text)[0]["memory_mib"] == mib


def test_rocm_smi_card_series_after_warning():
    cards = parse_rocm_smi_product(fixture("rocm-smi-productname.json"))
    assert sorted(cards) == list(range(8))
    assert cards[0] == {"name": "AMD Instinct MI300X", "device_id": "0x74a1", "memory_mib": 196592,
                        "bus_id": "0000:05:00.0"}


def test_rocm_smi_lowercase_keys_and_system_entry():
    cards = parse_rocm_smi_product(fixture("rocm-smi-productname-lowercase.json"))
    assert sorted(cards) == [0, 1]
    assert cards[1]["name"] == "Instinct MI210"
    assert cards[1]["memory_mib"] is None
    assert normalize_model(cards[1]["name"]) == "mi210"


def test_rocm_smi_card_model_fallback():
    cards = parse_rocm_smi_product(fixture("rocm-smi-productname-model-only.json"))
    # a Card Model that is a bare id is the device id, not a name
    assert cards == {0: {"name": None, "device_id": "0x74a1", "memory_mib": None, "bus_id": None}}


@pytest.mark.parametrize("text", ["", "WARNING: no GPUs\n", "[1]", '{"card0": "x"}'])
def test_rocm_smi_malformed_raises(text):
    with pytest.raises(AcceleratorOutputError) as info:
        parse_rocm_smi_product(text)
    assert info.value.tool == "rocm-smi"


# ---------------------------------------------------------------- Ascend


def test_npu_smi_list():
    listing = parse_npu_smi_list(fixture("npu-smi-info-l.txt"))
    assert listing["total"] == 8
    assert [npu["npu_id"] for npu in listing["npus"]] == list(range(8))
    assert {npu["chip_count"] for npu in listing["npus"]} == {1}


def test_npu_smi_list_with_product_lines():
    text = (
        "\tTotal Count                    : 1\n\n"
        "\tNPU ID                         : 8\n"
        "\tProduct Name                   : IT21PDDA01\n"
        "\tSerial Number                  : 033VNY10MB000071\n"
        "\tChip Count                     : 2\n"
    )
    assert parse_npu_smi_list(text) == {"total": 1, "npus": [{"npu_id": 8, "chip_count": 2}]}


def test_npu_smi_list_malformed_raises():
    with pytest.raises(AcceleratorOutputError):
        parse_npu_smi_list("dcmi model initialized failed, because the device is used. ret is -8020\n")
    assert parse_npu_smi_list("") == {"total": None, "npus": []}


def test_npu_smi_info_910b3x8_with_one_unhealthy():
    table = parse_npu_smi_info(fixture("npu-smi-info-910b3x8.txt"))
    assert table["version"] == "24.1.rc3"
    chips = table["chips"]
    assert len(chips) == 8
    assert [chip["npu_id"] for chip in chips] == list(range(8))
    assert {chip["name"] for chip in chips} == {"910B3"}
    assert {chip["memory_mib"] for chip in chips} == {65536}
    assert chips[0]["memory_used_mib"] == 3373
    assert chips[0]["bus_id"] == "0000:c1:00.0"
    assert chips[0]["phy_id"] is None and chips[0]["chip_id"] == 0
    assert [chip["health"] for chip in chips].count("ok") == 7
    assert chips[5]["health"] == "warning"


def test_npu_smi_info_a3_dual_die():
    chips = parse_npu_smi_info(fixture("npu-smi-info-a3.txt"))["chips"]
    assert [(chip["npu_id"], chip["chip_id"], chip["phy_id"]) for chip in chips] == [
        (0, 0, 0), (0, 1, 1), (1, 0, 2), (1, 1, 3),
    ]
    assert chips[3]["bus_id"] == "0000:9b:00.0"


def test_npu_smi_info_950pr():
    table = parse_npu_smi_info(fixture("npu-smi-info-950pr.txt"))
    assert len(table["chips"]) == 8
    assert {chip["memory_mib"] for chip in table["chips"]} == {131072}
    assert {normalize_model(chip["name"]) for chip in table["chips"]} == {"ascend_950pr"}


def test_npu_smi_info_310p_without_hbm():
    chips = parse_npu_smi_info(fixture("npu-smi-info-310p.txt"))["chips"]
    assert len(chips) == 1
    assert chips[0]["memory_mib"] == 21527
    assert chips[0]["memory_used_mib"] == 1452
    assert chips[0]["health"] == "alarm"


def test_npu_smi_info_malformed_raises():
    with pytest.raises(AcceleratorOutputError) as info:
        parse_npu_smi_info("+----+\n| nothing here |\n+----+\n")
    assert info.value.tool == "npu-smi info"


def test_ascend_version_info():
    assert parse_ascend_version_info(fixture("ascend-version.info")) == "24.1.rc3"
    assert parse_ascend_version_info("package_version=1\n") is None


# ---------------------------------------------------------------- rules


def devices_of(model, count, fabric_state=None, model_id=None):
    return [
        {"model": model, "model_id": model_id or normalize_model(model), "fabric_state": fabric_state}
        for dummy in range(count)
    ]


@pytest.mark.parametrize(
    "devices, required",
    [
        (devices_of("NVIDIA H100 80GB HBM3", 8), True),
        (devices_of("NVIDIA H200", 8), True),
        (devices_of("NVIDIA H800", 8), True),
        (devices_of("NVIDIA A100-SXM4-80GB", 8), True),
        (devices_of("NVIDIA B200", 8), True),
        (devices_of("NVIDIA B300 SXM6 AC", 8), True),
        (devices_of("NVIDIA H100 80GB HBM3", 4), False),
        (devices_of("NVIDIA H100 80GB HBM3", 7, fabric_state="not_started"), True),
        (devices_of("NVIDIA H100 80GB HBM3", 1, fabric_state="not_supported"), False),
        (devices_of("NVIDIA H100 PCIe", 8), False),
        (devices_of("NVIDIA H200 NVL", 8), False),
        (devices_of("NVIDIA GB200", 4, fabric_state="completed"), False),
        (devices_of("NVIDIA L40S", 8), False),
        (devices_of("AMD Instinct MI300X", 8), False),
        (devices_of("NVIDIA H100 80GB HBM3", 4) + devices_of("NVIDIA A100-SXM4-80GB", 4), False),
        ([], False),
    ],
)
def test_fabric_manager_rule(devices, required):
    assert fabric_manager_required(devices) is required


def test_imex_rule():
    assert imex_required(devices_of("NVIDIA GB200", 4)) is True
    assert imex_required(devices_of("NVIDIA GB300", 4)) is True
    assert imex_required(devices_of("NVIDIA B200", 8)) is False
    assert imex_required([]) is False


def test_nvlink5_rule():
    assert nvlink5_required(devices_of("NVIDIA B200", 8)) is True
    assert nvlink5_required(devices_of("NVIDIA H100 80GB HBM3", 8)) is False  # fabric manager alone
    assert nvlink5_required(devices_of("NVIDIA B200", 4)) is False  # no NVSwitch on a 4-GPU board
    assert nvlink5_required(devices_of("NVIDIA GB200", 4)) is False  # IMEX instead


def test_candidate_vendors():
    assert candidate_vendors([]) == []
    assert candidate_vendors(["npu-smi"]) == ["ascend"]
    assert candidate_vendors(["rocm-smi"]) == ["amd"]
    assert candidate_vendors(["npu-smi", "amd-smi", "nvidia-smi"]) == ["nvidia", "amd", "ascend"]


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


JSON_KEYS = st.sampled_from(
    ["gpu", "bdf", "uuid", "vram", "size", "value", "unit", "asic", "market_name", "device_id", "driver",
     "version", "gpu_data", "card0", "Card Series", "PCI Bus", "VRAM Total Memory (B)", "vram_size_mb"]
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
    | st.sampled_from(["gpu", "N/A", "0x74a1", "1e400", "nan", "192 GB", "card0"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(JSON_KEYS, children, max_size=5),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_amd_parsers_only_raise_their_own_error(value):
    text = json.dumps(value)
    for parser in (parse_amd_smi_list, parse_amd_smi_static, parse_rocm_smi_product):
        try:
            parser(text)
        except AcceleratorOutputError:
            pass


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
NVIDIA_FABRIC = tuple(acc.COMMANDS["nvidia"][1][1][1:])


def test_collect_auto_without_tools_is_none():
    host = FakeHost()
    summary = acc.collect("auto", host.which, host.run, host.read)
    assert summary["vendor"] == "none" and summary["count"] == 0
    assert host.calls == []


def test_collect_nvidia_runs_queries_and_reads_proc():
    host = FakeHost(
        tools={
            "nvidia-smi": {NVIDIA_MAIN: ok("nvidia-smi-h100x8.csv"), NVIDIA_FABRIC: ok("nvidia-fabric-completed.csv")},
            "modinfo": {("-F", "version", "nvidia"): (0, "580.95.05\n", "")},
        },
        files={"/proc/driver/nvidia/version": fixture("proc-driver-nvidia-version-open.txt")},
    )
    summary = acc.collect("auto", host.which, host.run, host.read)
    assert summary["vendor"] == "nvidia"
    assert summary["count"] == 8
    assert summary["driver"]["loaded_version"] == "580.95.05"
    assert summary["driver"]["reboot_required"] is False
    assert [call[1:] for call in host.calls] == [list(NVIDIA_MAIN), list(NVIDIA_FABRIC), ["-F", "version", "nvidia"]]


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
