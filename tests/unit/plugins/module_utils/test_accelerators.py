# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the accelerator output parsers (one vendor's tools at a time) and the rules read from them.

The summary over all of a vendor's tools, collect() and the PCI bus: test_accelerator_summary.py.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.launchcard.inference.plugins.module_utils._accel_amd import parse_amd_smi_list, parse_amd_smi_static, parse_rocm_smi_product
from ansible_collections.launchcard.inference.plugins.module_utils._accel_ascend import parse_ascend_version_info, parse_npu_smi_info, parse_npu_smi_list
from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import AcceleratorOutputError, normalize_bdf
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
from ansible_collections.launchcard.inference.plugins.module_utils._accel_tables import normalize_model
from ansible_collections.launchcard.inference.plugins.module_utils._accelerators import candidate_vendors

from ansible_collections.launchcard.inference.tests.unit.plugins.module_utils.accel_fixtures import fixture


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
