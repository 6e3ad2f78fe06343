# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ascend_state module end to end: version files on disk, npu-smi answering.

``npu-smi`` here is the sandbox's stand-in (tests/sandbox/pkgrepo/standin_npu_smi.py,
the one the molecule scenario installs with the stand-in driver), pointed at files
in a temporary directory, so the table the module parses is the one the sandbox
hosts print.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.modules import ascend_state


REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
STANDIN = os.path.join(REPO_ROOT, "tests", "sandbox", "pkgrepo", "standin_npu_smi.py")
WANTED = {"driver": "25.2.0", "firmware": "7.7.0.6.236", "toolkit": "8.2.RC1", "kernels": "8.2.RC1", "nnal": "8.2.RC1"}


@pytest.fixture
def npu_host(host, tmp_path):
    """A host whose npu-smi is the stand-in; returns a helper writing its state."""
    smi = os.path.join(host["bin"], "npu-smi")
    with open(smi, "w") as handle:
        handle.write('#!/bin/sh\nexec "%s" "%s" "$@"\n' % (sys.executable, STANDIN))
    os.chmod(smi, 0o755)
    loaded, config = tmp_path / "loaded_version", tmp_path / "ascend.json"
    host["monkeypatch"].setenv("LAUNCHCARD_SANDBOX_ASCEND_LOADED", str(loaded))
    host["monkeypatch"].setenv("LAUNCHCARD_SANDBOX_ASCEND_JSON", str(config))
    files = dict((key, str(tmp_path / ("%s.version" % key))) for key in WANTED)

    def state(versions, running=None, health=None):
        for key, version in versions.items():
            with open(files[key], "w") as handle:
                handle.write("package_name=x\nVersion=%s\n" % version)
        if running:
            loaded.write_text(running + "\n")
        config.write_text(json.dumps({"count": 8, "health": health or {}}))
        return files

    return state


# where the installers come from: a directory of Huawei-named files, one checksum file
SOURCES = {"package_base_url": "/srv/ascend", "package_files": dict((k, "%s.run" % k) for k in WANTED),
           "checksums": dict.fromkeys(WANTED, "sha256:https://mirror.example/ascend/SHA256SUMS")}


def run(capsys, **args):
    args = dict(SOURCES, **args)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            ascend_state.main()
    return info.value.code, json.loads(capsys.readouterr().out)


def test_bare_host_installs_everything_driver_first(npu_host, capsys):
    rc, out = run(capsys, wanted=WANTED, version_files=npu_host({}))
    assert rc == 0 and out["changed"] is False
    assert [(s["component"], s["action"]) for s in out["steps"]] == [
        ("driver", "install"), ("firmware", "install"), ("toolkit", "install"), ("kernels", "install"), ("nnal", "install")]
    assert out["installed"] == dict.fromkeys(WANTED)
    assert (out["steps"][0]["url"], out["steps"][0]["file"]) == ("file:///srv/ascend/driver.run", "driver.run")
    assert out["steps"][0]["checksum"] == "sha256:https://mirror.example/ascend/SHA256SUMS"
    assert out["accelerators"]["count"] == 0  # the stand-in fails like npu-smi without a driver
    assert out["reboot_expected"] is True


def test_upgrade_reads_the_stand_in_and_orders_firmware_first(npu_host, capsys):
    old = dict(WANTED, driver="24.1.0", firmware="7.5.0.3.220")
    rc, out = run(capsys, wanted=WANTED, version_files=npu_host(old, running="24.1.0"), _ansible_check_mode=True)
    assert rc == 0
    assert [s["component"] for s in out["steps"]] == ["firmware", "driver"]
    assert out["drift"] == ["driver: installed 24.1.0, wanted 25.2.0", "firmware: installed 7.5.0.3.220, wanted 7.7.0.6.236"]
    acc = out["accelerators"]
    assert (acc["count"], acc["models"], acc["errors"]) == (8, ["ascend_910b"], [])
    assert acc["driver"]["loaded_version"] == "24.1.0" and acc["driver"]["reboot_required"] is False


def test_unhealthy_chip_fails_the_module_unless_forced(npu_host, capsys):
    old = dict(WANTED, driver="24.1.0")
    files = npu_host(old, running="24.1.0", health={"3": "Alarm"})
    rc, out = run(capsys, wanted=WANTED, version_files=files)
    assert rc == 1
    assert out["msg"].startswith("npu-smi reports chip 3 alarm; refusing to upgrade driver 24.1.0 -> 25.2.0")
    assert out["steps"] == [] and out["unhealthy"] == [[3, "alarm"]]
    rc, out = run(capsys, wanted=WANTED, version_files=files, force=True)
    assert rc == 0 and [s["component"] for s in out["steps"]] == ["driver"]


def test_installed_but_not_running_driver_and_bad_input(npu_host, capsys):
    files = npu_host(WANTED, running="24.1.0")
    rc, out = run(capsys, wanted=WANTED, version_files=files)
    assert rc == 0 and out["steps"] == []
    assert out["accelerators"]["driver"]["reboot_required"] is True
    rc, out = run(capsys, wanted={"ops": "1"}, version_files=files)
    assert rc == 1 and "'ops'" in out["msg"]
    rc, out = run(capsys, wanted=WANTED, version_files={"opp": "/x"})
    assert rc == 1 and out["msg"].startswith("version_files: unknown component(s) opp")


def test_an_installer_without_source_or_checksum_fails_the_module(npu_host, capsys):
    files = npu_host({})
    rc, out = run(capsys, wanted=WANTED, version_files=files, checksums={"driver": "sha256:0"})
    assert rc == 1 and out["msg"].startswith("firmware, toolkit, kernels, nnal: each installer to run needs a source")
    rc, out = run(capsys, wanted=WANTED, version_files=files, package_base_url="")
    assert rc == 1 and out["msg"].startswith("driver, firmware, toolkit, kernels, nnal: each installer")
    # nothing to run: nothing to fetch, nothing asked for
    rc, out = run(capsys, wanted=WANTED, version_files=npu_host(WANTED, running="25.2.0"), checksums={})
    assert rc == 0 and out["steps"] == []
