# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operating systems the collection supports: one table for the stack roles and preflight.

Pure Python (no Ansible imports): preflight's ``os`` check reads it on the host, and the
``launchcard.inference.os_support`` filter hands it to the stack roles (nvidia, rocm, ascend) on
the controller.

A system is named either way it is known: by its os-release ``ID`` and ``VERSION_ID``
(os-release(5), what preflight reads from ``/etc/os-release``: ``debian``/``12``,
``ubuntu``/``24.04``, ``rocky``/``9.6``) or by Ansible's ``distribution`` and
``distribution_version`` facts (``Debian``/``12.7``, ``Ubuntu``/``24.04``, ``Rocky``/``9.6``,
``RedHat``/``9.4``, ``AlmaLinux``/``9.5``).

Why these: the vendors' driver repositories and installers publish packages for them (NVIDIA's
CUDA repository for debian12, ubuntu2204, ubuntu2404 and rhel9; AMD's amdgpu-install for Ubuntu
jammy/noble, which AMD's Debian 12 instructions use, and rhel/9.x; Huawei's Ascend HDK and CANN
for Ubuntu, openEuler and the RHEL 9 family).
"""

from __future__ import annotations

# One row per system: os-release ID, Ansible distribution fact, supported versions, and whether a
# version matches on its major number (point releases of Debian and the RHEL 9 family) or exactly
# (Ubuntu's YY.MM releases: 22.10 is not 22.04). ``docker``: the OS package that provides Docker, or None
# where the OS repositories have none (RHEL 9 and its rebuilds ship podman; Docker's own repository,
# https://docs.docker.com/engine/install/rhel/, provides docker-ce). ``podman``: the podman version the OS
# repositories ship, per supported version, where one release line holds for all its point releases (Debian 12:
# 4.3, Debian 13: 5.4, Ubuntu 22.04: 3.4, Ubuntu 24.04: 4.9, the distributions' package pages); the RHEL 9 family
# moved from 4.0 to 5.x across its minor releases, so there only the installed podman tells.
SUPPORTED_OS = (
    {"id": "debian", "distribution": "Debian", "label": "Debian", "versions": ("12", "13"), "match": "major",
     "docker": "docker.io", "podman": {"12": "4.3", "13": "5.4"}},
    {"id": "ubuntu", "distribution": "Ubuntu", "label": "Ubuntu", "versions": ("22.04", "24.04"), "match": "exact",
     "docker": "docker.io", "podman": {"22.04": "3.4", "24.04": "4.9"}},
    {"id": "rhel", "distribution": "RedHat", "label": "RHEL", "versions": ("9",), "match": "major", "docker": None,
     "podman": {}},
    {"id": "rocky", "distribution": "Rocky", "label": "Rocky", "versions": ("9",), "match": "major", "docker": None,
     "podman": {}},
    {"id": "almalinux", "distribution": "AlmaLinux", "label": "Alma", "versions": ("9",), "match": "major",
     "docker": None, "podman": {}},
)

SUMMARY = "Debian 12/13, Ubuntu 22.04/24.04, RHEL/Rocky/Alma 9"


def _row(name):
    key = (name or "").strip().lower()
    for row in SUPPORTED_OS:
        if key in (row["id"], row["distribution"].lower()):
            return row
    return None


def version_matches(row, version):
    """Whether ``version`` (a string such as ``12.7`` or ``24.04``) is one of ``row``'s versions."""
    version = (version or "").strip()
    if not version:
        return False
    if row["match"] == "major":
        return version.split(".")[0] in row["versions"]
    return version in row["versions"]


def is_supported(name, version):
    """Whether the system ``name`` (os-release ID or Ansible distribution) at ``version`` is supported.

    :param name: ``debian``, ``ubuntu``, ``rhel``, ``rocky``, ``almalinux`` or ``Debian``, ``Ubuntu``,
        ``RedHat``, ``Rocky``, ``AlmaLinux`` (case does not matter); anything else is unsupported.
    :param version: ``VERSION_ID`` or ``distribution_version`` (``12``, ``12.7``, ``22.04``, ``9.6``).
    :returns: bool. Never raises: a missing name or version is unsupported.
    """
    row = _row(name)
    return bool(row) and version_matches(row, version)


def support(name, version):
    """``{"supported": bool, "summary": SUMMARY, "found": "<name> <version>"}`` for messages and reports."""
    return {"supported": is_supported(name, version), "summary": SUMMARY,
            "found": ("%s %s" % (name or "unknown", version or "")).strip()}


def engine_package(name, runtime):
    """The OS package that provides the container engine ``runtime`` on the system ``name``.

    :param name: os-release ID or Ansible distribution (as :func:`is_supported`).
    :param runtime: ``docker`` or ``podman`` (anything else: None).
    :returns: ``podman`` for podman; for docker, the package of the OS repositories (``docker.io`` on Debian
        and Ubuntu), or None where they have none (the RHEL 9 family) or the system is not supported.
    """
    if runtime == "podman":
        return "podman"
    if runtime != "docker":
        return None
    row = _row(name)
    return row["docker"] if row else None


def os_podman_version(name, version):
    """The podman version (``major.minor``) the OS repositories of a supported system ship, or None.

    :param name: os-release ID or Ansible distribution (as :func:`is_supported`).
    :param version: ``VERSION_ID`` or ``distribution_version``.
    :returns: e.g. ``"5.4"`` for Debian 13; None where the system is not supported or its release line does not
        name one version (the RHEL 9 family).
    """
    row = _row(name)
    if not row or not version_matches(row, version):
        return None
    version = (version or "").strip()
    key = version.split(".")[0] if row["match"] == "major" else version
    return row["podman"].get(key)
