# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real tool outputs the facts once got wrong, each with the right facts.

The files in tests/unit/fixtures/real-inputs/ are outputs people posted in public bug
reports (see its README.md). Each test feeds one through the parser and, where the
fault showed in preflight, through the preflight checks too.
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils import _accel_pci as pci
from ansible_collections.launchcard.inference.plugins.module_utils._accelerators import summarize
from ansible_collections.launchcard.inference.plugins.module_utils._preflight import evaluate, failed

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
REAL = os.path.join(FIXTURES, "real-inputs")


def text(name, folder=REAL):
    with open(os.path.join(folder, name)) as handle:
        return handle.read()


def ok(name):
    return (0, text(name), "")


PCI_IDS = text("pci.ids-excerpt", FIXTURES)
HOST_PCI_IDS = pci.read_pci_ids()[0]


def by_check(results):
    return dict((r["check"], r) for r in results)


# --- rocm-smi on an MI250X: the series names the family, the device id the part ------------

def test_mi250x_card_series_names_the_family_the_device_id_the_part():
    summary = summarize("amd", {"rocm_smi": ok("rocm-smi-mi250x-card-series.json"), "pci_ids": PCI_IDS})
    assert summary["errors"] == []
    assert summary["models"] == ["mi250x"]
    device = summary["devices"][0]
    assert device["model"] == "AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2"
    assert device["model_id"] == "mi250x"


def test_mi250x_without_a_pci_id_database_says_what_is_missing():
    summary = summarize("amd", {"rocm_smi": ok("rocm-smi-mi250x-card-series.json")})
    # the family is reported as it is, never as a part, and the error says what to install
    assert summary["devices"][0]["model_id"] == "mi200"
    assert len(summary["errors"]) == 1
    error = summary["errors"][0]
    assert error.startswith("AMD GPU 0: the tools name only the family (AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2)")
    assert "device id 0x7408 needs the PCI id database" in error and "pci.ids" in error and "hwdata" in error


@pytest.mark.skipif(HOST_PCI_IDS is None, reason="no PCI id database on this machine (Debian package pci.ids)")
def test_mi250x_against_this_machines_pci_id_database():
    summary = summarize("amd", {"rocm_smi": ok("rocm-smi-mi250x-card-series.json"),
                                "pci_ids": pci.read_pci_ids()[1]})
    assert summary["models"] == ["mi250x"] and summary["errors"] == []


def test_pci_id_database_format():
    names = pci.pci_device_names(PCI_IDS, "0x1002")
    assert names["0x7408"] == "Aldebaran/MI200 [Instinct MI250X]"
    # subsystem lines and other vendors' devices with the same id are not AMD device names
    assert names["0x740c"] == "Aldebaran/MI200 [Instinct MI250X/MI250]"
    assert "0x1480" not in names and "0x2330" not in names
    assert pci.pci_device_name(names, "7408") == pci.pci_device_name(names, "0x7408")
    assert pci.pci_device_name(names, "0x1900") is None
    assert pci.pci_device_names(None, "0x1002") == {}


def test_read_pci_ids_takes_the_first_database_found(tmp_path):
    second = tmp_path / "hwdata.ids"
    second.write_text(PCI_IDS)
    assert pci.read_pci_ids([str(tmp_path / "absent"), str(second)]) == (str(second), PCI_IDS)
    assert pci.read_pci_ids([str(tmp_path / "absent")]) == (None, None)


# --- rocm-smi 6.2: Device Name / Device ID keys -------------------------------------------

def test_rocm_smi_62_device_name_keys_give_the_model():
    summary = summarize("amd", {"rocm_smi": ok("rocm-smi-device-name-keys.json"), "pci_ids": PCI_IDS})
    assert summary["errors"] == []
    device = summary["devices"][0]
    assert (device["model"], device["model_id"], device["bus_id"]) == ("Phoenix3", "phoenix3", "0000:c4:00.0")


def test_rocm_smi_without_any_product_key_is_an_error_not_a_silent_null():
    out = '{"card0": {"PCI Bus": "0000:C4:00.0"}}'
    summary = summarize("amd", {"rocm_smi": (0, out, ""), "pci_ids": PCI_IDS})
    assert summary["devices"][0]["model_id"] is None
    assert summary["errors"] == ["AMD GPU 0: no product name found (rocm-smi Card Series/Card Model/Device Name, "
                                 "amd-smi asic.market_name) and device id unknown is not in the PCI id database"]


# --- HGX A100: Ampere reports no fabric state; fabric manager is checked instead -----------

def _a100_hgx(service):
    sources = {"nvidia_smi": ok("nvidia-smi-a100-hgx-x8.csv"), "nvidia_fabric": ok("nvidia-smi-fabric-a100-hgx-na.csv")}
    if service is not None:
        sources["nvidia_fabricmanager_service"] = service
    return summarize("nvidia", sources)


NEEDS = {"gpus": 8, "validated_models": ["a100"], "weights_per_gpu_mib": 20000, "disk_bytes": None}


def _facts(acc):
    return {"os": {"id": "ubuntu", "version_id": "22.04"}, "accelerators": acc, "listening": {}}


def test_a100_hgx_facts():
    acc = _a100_hgx((0, "active\n", ""))
    assert acc["errors"] == [] and acc["count"] == 8 and acc["models"] == ["a100"]
    assert [d["fabric_state"] for d in acc["devices"]] == [None] * 8
    assert acc["driver"]["fabric_manager_required"] is True
    assert acc["driver"]["fabric_manager_active"] is True


def test_a100_hgx_with_fabric_manager_running_passes_preflight():
    results = by_check(evaluate(_facts(_a100_hgx((0, "active\n", ""))), NEEDS))
    fabric = results["fabric"]
    assert (fabric["ok"], fabric["severity"]) == (True, "ok")
    assert fabric["found"] == "nvidia-fabricmanager active"
    assert failed(list(results.values())) == []


def test_a100_hgx_with_fabric_manager_stopped_fails_on_the_service():
    fabric = by_check(evaluate(_facts(_a100_hgx((3, "inactive\n", ""))), NEEDS))["fabric"]
    assert (fabric["ok"], fabric["severity"]) == (False, "error")
    assert fabric["found"] == "nvidia-fabricmanager not active"
    assert "start nvidia-fabricmanager" in fabric["message"]


def test_a100_hgx_without_systemctl_is_a_warning_not_an_error():
    fabric = by_check(evaluate(_facts(_a100_hgx(None)), NEEDS))["fabric"]
    assert (fabric["ok"], fabric["severity"]) == (False, "warning")


# --- memory the tool cannot report: unknown, never 0 MiB -----------------------------------

@pytest.mark.parametrize("name, model_id", [
    ("nvidia-smi-gb10-memory-na.csv", "gb10"),
    ("nvidia-smi-a100-mig-memory-permissions.csv", "a100"),
])
def test_unreported_memory_is_unknown_with_what_to_do(name, model_id):
    acc = summarize("nvidia", {"nvidia_smi": ok(name)})
    assert acc["errors"] == [] and acc["models"] == [model_id]
    assert acc["devices"][0]["memory_mib"] is None
    needs = {"gpus": 1, "validated_models": [model_id], "weights_per_gpu_mib": 20000, "disk_bytes": None}
    fit = by_check(evaluate(_facts(acc), needs))["memory_fit"]
    assert (fit["ok"], fit["severity"]) == (False, "warning")
    assert fit["found"] == "unknown: the nvidia tool does not report the memory of GPU(s) 0"
    assert "0 MiB" not in fit["found"] and "do not fit" not in fit["message"]
    assert "preflight_gpu_memory_mib" in fit["message"]
    # stated by the operator, the memory is checked
    stated = by_check(evaluate(_facts(acc), needs, {"gpu_memory_mib": 120000}))["memory_fit"]
    assert (stated["ok"], stated["found"]) == (True, "120000 MiB (stated: the tool does not report it)")
    short = by_check(evaluate(_facts(acc), needs, {"gpu_memory_mib": 16000}))["memory_fit"]
    assert (short["ok"], short["severity"]) == (False, "error")
