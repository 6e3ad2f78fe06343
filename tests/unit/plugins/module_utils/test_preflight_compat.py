# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's compatibility checks: NVIDIA driver branch against GPU generation, ROCm
release against Instinct model, CANN against the Ascend NPU driver."""

from __future__ import annotations

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils._preflight import CHECKS, REGISTRY, evaluate

NEEDS = {"gpus": 8, "disk_bytes": None}


def _facts(vendor, models, installed=None, runtime=None):
    devices = [{"index": i, "model_id": m, "memory_mib": 100000, "fabric_state": None} for i, m in enumerate(models)]
    return {"os": {"id": "debian", "version_id": "12"}, "listening": {},
            "accelerators": {"vendor": vendor, "devices": devices, "errors": [],
                             "driver": {"installed_version": installed, "runtime_version": runtime}}}


def _check(name, facts, options=None):
    found = [r for r in evaluate(facts, NEEDS, options) if r["check"] == name]
    return found[0] if found else None


@pytest.mark.parametrize("models, installed, ok", [
    (["b200"] * 8, "570.133.20", True),
    (["b200"] * 8, "565.57.01", False),
    (["gb300"] * 4, "575.51.03", False),
    (["gb300"] * 4, "580.95.05", True),
    (["h100"] * 8, "525.60.13", True),
    (["h100"] * 8, "520.61.05", False),
    (["a100"] * 8, "470.57.02", True),
])
def test_driver_branch_against_gpu_generation(models, installed, ok):
    r = _check("driver_branch", _facts("nvidia", models, installed))
    assert (r["ok"], r["severity"]) == (ok, "ok" if ok else "error")
    assert r["found"] == "%s (installed)" % installed
    if not ok:
        assert "does not support %s" % models[0] in r["message"]
        assert "nvidia_driver_version" in r["message"]


def test_driver_branch_names_each_generation_needed():
    r = _check("driver_branch", _facts("nvidia", ["h100", "b200"], "580.95.05"))
    assert r["need"] == "b200 (blackwell): R570 or later; h100 (hopper): R525 or later"


def test_driver_branch_judges_the_pinned_version_when_the_stack_is_installed_next():
    facts = _facts("nvidia", ["b200"] * 8, "550.54.15")
    pinned = {"install_driver": True, "stack_versions": {"nvidia_driver": "580.95.05"}}
    r = _check("driver_branch", facts, pinned)
    assert (r["ok"], r["found"]) == (True, "580.95.05 (nvidia_driver, installed next)")
    # without the install the installed driver is what runs
    assert _check("driver_branch", facts, {"stack_versions": {"nvidia_driver": "580.95.05"}})["ok"] is False
    too_old = dict(pinned, stack_versions={"nvidia_driver": "565.57.01"})
    assert _check("driver_branch", facts, too_old)["ok"] is False


def test_driver_branch_skips_unknown_models_and_versions():
    assert _check("driver_branch", _facts("nvidia", ["rtx_a6000"], "535.1")) is None
    assert _check("driver_branch", _facts("nvidia", ["b200"], None)) is None
    assert _check("driver_branch", _facts("amd", ["mi300x"], "6.8.5")) is None


@pytest.mark.parametrize("models, runtime, ok", [
    (["mi355x"] * 8, "7.0.2", True),
    (["mi355x"] * 8, "6.4.3", False),
    (["mi300x"] * 8, "6.2.0", True),
    (["mi300x"] * 8, "6.1.2", False),
])
def test_rocm_release_against_instinct_model(models, runtime, ok):
    r = _check("rocm_release", _facts("amd", models, runtime=runtime))
    assert r["ok"] is ok and r["found"] == "ROCm %s (installed)" % runtime
    if not ok:
        assert "rocm_version" in r["message"] and models[0] in r["message"]


def test_rocm_release_pinned_and_unlisted_models():
    facts = _facts("amd", ["mi355x"] * 8, runtime="6.4.3")
    r = _check("rocm_release", facts, {"install_driver": True, "stack_versions": {"rocm": "7.0.2"}})
    assert (r["ok"], r["found"]) == (True, "ROCm 7.0.2 (rocm, installed next)")
    assert r["need"] == "mi355x: ROCm 7.0 or later"
    assert _check("rocm_release", _facts("amd", ["mi250x"], runtime="6.4.3")) is None


@pytest.mark.parametrize("cann, driver, ok", [
    ("8.2.RC1", "25.2.0", True),
    ("8.2.RC1", "24.1.0", False),
    ("8.0.0", "24.1.rc3", True),
    ("8.3.RC1", "25.2.0", False),
])
def test_cann_against_the_npu_driver(cann, driver, ok):
    r = _check("cann_driver", _facts("ascend", ["ascend_910b"] * 8, driver, runtime=cann))
    assert r["ok"] is ok
    assert r["found"] == "driver %s (installed), CANN %s (installed)" % (driver, cann)
    if not ok:
        assert "ascend_driver_version" in r["message"]


def test_cann_pinned_versions_and_unknown_releases():
    facts = _facts("ascend", ["ascend_910b"] * 8, None, runtime=None)
    pinned = {"install_driver": True, "stack_versions": {"cann": "8.2.RC1", "ascend_driver": "25.2.0"}}
    r = _check("cann_driver", facts, pinned)
    assert (r["ok"], r["need"]) == (True, "CANN 8.2.RC1: NPU driver 25.2 or later")
    assert _check("cann_driver", facts) is None  # nothing installed, nothing pinned
    assert _check("cann_driver", _facts("ascend", ["ascend_910b"], "25.2.0", runtime="9.0.0")) is None


def test_the_registry_runs_each_check_once_and_each_can_be_switched_off():
    assert len(set(CHECKS)) == len(CHECKS) == len(REGISTRY)
    facts = _facts("nvidia", ["b200"] * 8, "565.57.01")
    assert _check("driver_branch", facts, {"checks": {"driver_branch": False}}) is None
    names = [r["check"] for r in evaluate(facts, NEEDS)]
    assert names == [name for name in CHECKS if name in names]  # report order is registry order
