# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared fixture for the module tests: a fake host without any vendor tool or file."""

from __future__ import annotations

import os

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.launchcard.inference.plugins.module_utils import _accelerators as accelerators


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A fake host: an empty bin dir as the whole PATH, no vendor files."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(accelerators, "PCI_DEVICES_DIR", str(tmp_path / "no-pci-bus"))
    monkeypatch.setattr(accelerators, "EXTRA_TOOL_DIRS", ())
    for vendor in accelerators.VENDORS:
        monkeypatch.setitem(
            accelerators.FILES, vendor, tuple((key, str(tmp_path / "absent" / key)) for key, dummy in accelerators.FILES[vendor])
        )
    # get_bin_path also searches /sbin, /usr/sbin and /usr/local/sbin: keep
    # any real tool there (on a GPU or NPU build host) out of the tests.
    real_get_bin_path = AnsibleModule.get_bin_path

    def get_fake_bin_path(self, arg, required=False, opt_dirs=None):
        path = real_get_bin_path(self, arg, required=required, opt_dirs=opt_dirs)
        return path if path and os.path.dirname(path) == str(bin_dir) else None

    monkeypatch.setattr(AnsibleModule, "get_bin_path", get_fake_bin_path)
    return {"bin": str(bin_dir), "tmp": tmp_path, "monkeypatch": monkeypatch}


@pytest.fixture
def systemd(host):
    """A fake host's systemd (test_systemd_units.Systemd) for the systemd_units module tests."""
    from ansible_collections.launchcard.inference.tests.unit.plugins.modules.test_systemd_units import Systemd
    return Systemd(host)


@pytest.fixture
def servers():
    """Start health endpoints answering ``status``; each is shut down after the test."""
    from ansible_collections.launchcard.inference.tests.unit.plugins.modules.test_systemd_units import _server
    started = []

    def start(status=200):
        started.append(_server(status))
        return started[-1], "http://127.0.0.1:%d/health" % started[-1].server_address[1]

    yield start
    for server in started:
        server.shutdown()
        server.server_close()
