# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The supported-OS table, by os-release ID (preflight) and by Ansible fact (the stack roles)."""

from __future__ import annotations

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils import _platforms as platforms
from ansible_collections.launchcard.inference.plugins.filter.platforms import os_support


@pytest.mark.parametrize("name, version", [
    ("debian", "12"), ("Debian", "12.7"), ("debian", "13"), ("Debian", "13.1"), ("ubuntu", "22.04"), ("Ubuntu", "24.04"),
    ("rhel", "9.4"), ("RedHat", "9.4"), ("rocky", "9.6"), ("Rocky", "9"), ("almalinux", "9.5"), ("AlmaLinux", "9.5"),
])
def test_supported(name, version):
    assert platforms.is_supported(name, version)


@pytest.mark.parametrize("name, version", [
    ("debian", "11"), ("Debian", "14"), ("ubuntu", "22.10"), ("Ubuntu", "20.04"), ("ubuntu", "24"),
    ("rhel", "8.10"), ("rocky", "10.0"), ("CentOS", "9"), ("centos", "9"), ("fedora", "40"),
    ("debian", ""), ("debian", None), (None, "12"), ("", ""),
])
def test_unsupported(name, version):
    assert not platforms.is_supported(name, version)


def test_the_filter_reads_ansible_facts_and_says_what_it_found():
    assert os_support({"distribution": "Rocky", "distribution_version": "9.6", "os_family": "RedHat"}) == {
        "supported": True, "summary": "Debian 12/13, Ubuntu 22.04/24.04, RHEL/Rocky/Alma 9", "found": "Rocky 9.6"}
    got = os_support({"distribution": "CentOS", "distribution_version": "7.9"})
    assert (got["supported"], got["found"]) == (False, "CentOS 7.9")
    assert os_support(None)["supported"] is False


def test_the_summary_names_every_row():
    for row in platforms.SUPPORTED_OS:
        assert row["label"] in platforms.SUMMARY
        for version in row["versions"]:
            assert version in platforms.SUMMARY


@pytest.mark.parametrize("name, runtime, package", [
    ("debian", "docker", "docker.io"), ("Ubuntu", "docker", "docker.io"), ("rhel", "docker", None),
    ("RedHat", "docker", None), ("rocky", "docker", None), ("almalinux", "docker", None),
    ("rhel", "podman", "podman"), ("debian", "podman", "podman"), ("debian", "native", None), ("arch", "docker", None),
])
def test_the_engine_package_is_the_one_the_os_repositories_have(name, runtime, package):
    assert platforms.engine_package(name, runtime) == package


@pytest.mark.parametrize("name, version, podman", [
    ("debian", "12", "4.3"), ("Debian", "13.1", "5.4"), ("ubuntu", "24.04", "4.9"), ("Ubuntu", "22.04", "3.4"),
    ("rocky", "9.6", None), ("debian", "11", None), ("fedora", "40", None), (None, None, None),
])
def test_the_podman_the_os_repositories_ship(name, version, podman):
    # what decides Quadlet units on a host that has no podman yet (plugin_utils/_unit_options.py)
    assert platforms.os_podman_version(name, version) == podman
