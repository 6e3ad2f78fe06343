# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ascend install order, drift and the unhealthy-chip refusal."""

from __future__ import annotations

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils._ascend_installers import (
    AscendPlanError,
    install_plan,
    installer_sources,
    parse_version_file,
    unhealthy_chips,
)

OLD = {"driver": "24.1.0", "firmware": "7.5.0.3.220", "toolkit": "8.2.RC1", "kernels": "8.2.RC1", "nnal": "8.2.RC1"}
NEW = dict(OLD, driver="25.2.0", firmware="7.7.0.6.236")


def order(result):
    return [(s["component"], s["action"]) for s in result["steps"]]


@pytest.mark.parametrize("text, version", [
    ("Version=24.1.0\nascendhal_version=7.35.19\n", "24.1.0"),
    ("package_name=Ascend-cann-toolkit\nversion=8.2.RC1\ninnerversion=V100R001C22\n", "8.2.RC1"),
    ("Innerversion=V100R001C22\nVersion: 7.7.0.6.236\n", "7.7.0.6.236"),
    ('version="8.0.0"\n', "8.0.0"),
    ("ascendhal_version=7.35.19\n", None),
    ("", None),
    (None, None),
])
def test_parse_version_file(text, version):
    assert parse_version_file(text) == version


def test_first_install_runs_driver_before_firmware_then_cann():
    result = install_plan({}, OLD)
    assert order(result) == [("driver", "install"), ("firmware", "install"), ("toolkit", "install"),
                             ("kernels", "install"), ("nnal", "install")]
    assert result["drift"] == [] and result["refused"] is None and result["reboot_expected"] is True


def test_upgrade_runs_firmware_before_driver_and_reports_drift():
    result = install_plan(OLD, NEW)
    assert order(result) == [("firmware", "upgrade"), ("driver", "upgrade")]
    pairs = [(s["installed"], s["wanted"]) for s in result["steps"]]
    assert pairs == [("7.5.0.3.220", "7.7.0.6.236"), ("24.1.0", "25.2.0")]
    assert result["drift"] == ["driver: installed 24.1.0, wanted 25.2.0",
                               "firmware: installed 7.5.0.3.220, wanted 7.7.0.6.236"]
    assert result["reboot_expected"] is True


def test_firmware_added_to_an_installed_driver_and_cann_only_changes():
    assert order(install_plan(dict(OLD, firmware=None), OLD)) == [("firmware", "install")]
    cann = install_plan(OLD, dict(OLD, toolkit="8.3.RC1", kernels="8.3.RC1"))
    assert order(cann) == [("toolkit", "upgrade"), ("kernels", "upgrade")]
    assert cann["reboot_expected"] is False


def test_nothing_to_do_and_unmanaged_components_are_left_alone():
    assert install_plan(OLD, OLD) == {"steps": [], "drift": [], "unhealthy": [], "refused": None,
                                      "reboot_expected": False}
    # nnal not managed (None): its other version is neither drift nor a step
    result = install_plan(dict(OLD, nnal="8.0.0"), dict(OLD, nnal=None))
    assert result["steps"] == [] and result["drift"] == []


def test_unhealthy_chip_refuses_upgrades_unless_forced():
    devices = [{"index": 0, "health": "ok"}, {"index": 3, "health": "alarm"}, {"index": 5, "health": "warning"},
               {"index": 6, "health": None}]
    assert unhealthy_chips(devices) == [(3, "alarm"), (5, "warning")]
    refused = install_plan(OLD, NEW, devices)
    assert refused["steps"] == [] and refused["reboot_expected"] is False
    assert refused["refused"].startswith("npu-smi reports chip 3 alarm, chip 5 warning; refusing to upgrade "
                                         "firmware 7.5.0.3.220 -> 7.7.0.6.236, driver 24.1.0 -> 25.2.0")
    assert refused["unhealthy"] == [[3, "alarm"], [5, "warning"]]
    assert refused["drift"]  # still reported
    forced = install_plan(OLD, NEW, devices, force=True)
    assert order(forced) == [("firmware", "upgrade"), ("driver", "upgrade")] and forced["refused"] is None
    # a first install is never refused (nothing to break), nor is a host with nothing to do
    assert install_plan({}, OLD, devices)["refused"] is None
    assert install_plan(OLD, OLD, devices)["refused"] is None


def test_bad_requests_name_the_key():
    with pytest.raises(AscendPlanError, match="'ops'"):
        install_plan({}, {"ops": "1"})
    with pytest.raises(AscendPlanError, match=r"wanted\[driver\]"):
        install_plan({}, {"driver": "25.2.0; reboot"})


def test_installer_sources_url_file_and_checksum():
    steps = install_plan(OLD, NEW)["steps"]  # firmware, driver
    files = {"driver": "Ascend-hdk-910b-npu-driver_25.2.0_linux-aarch64.run", "firmware": "fw.run"}
    sums = {"driver": "sha256:" + "a" * 64, "firmware": "sha256:" + "b" * 64}
    out = installer_sources(steps, {"firmware": "/srv/fw/fw-7.7.run"}, "https://mirror.example/ascend/", files, sums)
    assert [(s["component"], s["url"], s["file"], s["checksum"]) for s in out] == [
        ("firmware", "file:///srv/fw/fw-7.7.run", "fw-7.7.run", sums["firmware"]),
        ("driver", "https://mirror.example/ascend/" + files["driver"], files["driver"], sums["driver"])]
    assert out[0]["action"] == "upgrade"  # the step itself is kept


def test_installer_sources_refuses_what_cannot_be_checked():
    steps = install_plan({}, OLD)["steps"]
    with pytest.raises(AscendPlanError, match=r"^driver, kernels: each installer to run needs a source"):
        installer_sources(steps, {}, "https://m/a", dict.fromkeys(OLD, "x.run"),
                          dict.fromkeys(["firmware", "toolkit", "nnal"], "sha256:" + "0" * 64))
    with pytest.raises(AscendPlanError, match=r"^driver, firmware"):
        installer_sources(steps[:2], {}, "", {}, dict.fromkeys(OLD, "sha256:x"))
    assert installer_sources([], None, "", None, None) == []
