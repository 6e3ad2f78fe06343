# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Huawei Ascend software stack: what is installed, what to run, in which order.

Pure Python (standard library only, no Ansible import). The ``ascend_state``
module reads the version files and ``npu-smi`` on the host and hands them to
:func:`install_plan`; ``roles/ascend`` runs the returned steps in order.

Huawei ships the stack as self-extracting ``.run`` installers, five of them
(the "components", in :data:`COMPONENTS` order):

* ``driver`` (``Ascend-hdk-<soc>-npu-driver_<V>_linux-<arch>.run``): kernel
  modules, ``npu-smi``, DCMI. Records ``Version=<V>`` in
  ``/usr/local/Ascend/driver/version.info``.
* ``firmware`` (``Ascend-hdk-<soc>-npu-firmware_<V>.run``): flashed to the NPUs
  through the running driver; active after the next reboot. Records its
  version in ``/usr/local/Ascend/firmware/version.info``.
* ``toolkit``, ``kernels``, ``nnal`` (CANN: ``Ascend-cann-toolkit_<V>_...``,
  ``Ascend-cann-kernels-<soc>_<V>_...``, ``Ascend-cann-nnal_<V>_...``): user
  space. The operator kernels and NNAL need the toolkit of the same release.

Order (Huawei's installation and upgrade guides for Atlas servers; the field
notes, section 4):

* first install (no driver yet): driver, then firmware;
* upgrade (a driver is installed): firmware, then driver -- the firmware is
  flashed through the driver that is running, which must still be the one
  the firmware was released with;
* then toolkit, kernels, nnal.

Each step is ``{"component", "action", "installed", "wanted"}`` where action
is ``"install"`` (nothing installed) or ``"upgrade"`` (another version is;
also a downgrade). The installer flags per component and action are the
role's business (``ascend_run_flags``).
"""

from __future__ import annotations

import re

from ansible_collections.launchcard.inference.plugins.module_utils import _versions as versions

COMPONENTS = ("driver", "firmware", "toolkit", "kernels", "nnal")
"""Every component, in the order a first install runs them."""

DRIVER_STACK = ("driver", "firmware")
"""Components whose change needs a reboot to take effect."""

HEALTHY = frozenset(("ok",))
"""``npu-smi info`` Health values (lower-cased) that count as healthy. Huawei
prints OK, Warning, Alarm, Critical: anything but OK blocks an upgrade."""

_VERSION_LINE = re.compile(r"^\s*version\s*[=:]\s*(\S.*?)\s*$", re.IGNORECASE)


class AscendPlanError(ValueError):
    """A request :func:`install_plan` cannot turn into steps (bad component
    name or version). The message names the offending key."""


def parse_version_file(text):
    """The version a ``.run`` installer recorded.

    Sources: ``/usr/local/Ascend/driver/version.info`` and
    ``/usr/local/Ascend/firmware/version.info`` (``Version=24.1.0``), CANN's
    ``ascend_toolkit_install.info`` (``version=8.2.RC1``) and the
    ``version.info`` files of the operator kernels and NNAL. The first line
    whose key is ``version`` (any case; ``=`` or ``:``) wins; other keys
    (``package_name=``, ``ascendhal_version=``, ``Innerversion=``) are ignored.

    :param text: the file's text, or ``None`` when the file does not exist.
    :returns: the version (``str``), or ``None`` when the file is absent or
        names no version.
    """
    for line in (text or "").splitlines():
        match = _VERSION_LINE.match(line)
        if match:
            return match.group(1).strip("\"'")
    return None


def unhealthy_chips(devices):
    """Chips whose ``npu-smi info`` health is known and not OK.

    :param devices: ``launchcard_accelerators.devices`` of an Ascend host
        (dicts with ``index`` and ``health``).
    :returns: ``[(index, health), ...]`` in device order; a ``None`` health
        (not reported) is not counted.
    """
    return [(d.get("index"), d.get("health")) for d in devices or ()
            if d.get("health") is not None and d.get("health") not in HEALTHY]


def install_plan(installed, wanted, devices=(), force=False):
    """Steps that bring the host from *installed* to *wanted*, and why not.

    :param installed: ``{component: version | None}`` as read on the host
        (:func:`parse_version_file`); a missing key means not installed.
    :param wanted: ``{component: version}`` for the components the role
        manages; a component left out, or ``None``/``""``, is left alone.
    :param devices: the host's Ascend devices (for their health), possibly
        empty (no driver yet, or npu-smi failed).
    :param force: upgrade even while a chip is unhealthy.
    :returns: ``{"steps": [...], "drift": [str], "unhealthy": [[index,
        health]], "refused": str | None, "reboot_expected": bool}``.
        *drift* has one line per managed component whose installed version
        differs from the wanted one. *refused* is set (and *steps* empty)
        when an upgrade is due while a chip is unhealthy and *force* is off.
        *reboot_expected*: a driver or firmware step is among the steps.
    :raises AscendPlanError: an unknown component, or a wanted version that is
        not a single word.
    """
    for key in list(wanted or {}) + list(installed or {}):
        if key not in COMPONENTS:
            raise AscendPlanError("unknown Ascend component %r (expected one of %s)" % (key, ", ".join(COMPONENTS)))
    managed = {}
    for key, version in (wanted or {}).items():
        if version in (None, ""):
            continue
        version = str(version)
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$", version):
            raise AscendPlanError("wanted[%s]: %r is not a version (letters, digits, '.', '_', '+', '-')" % (key, version))
        managed[key] = version
    have = dict((key, (installed or {}).get(key)) for key in COMPONENTS)

    def step(key):
        return {"component": key, "action": "install" if have[key] is None else "upgrade",
                "installed": have[key], "wanted": managed[key]}

    due = [key for key in COMPONENTS
           if key in managed and (have[key] is None or not versions.matches(have[key], managed[key]))]
    drift = ["%s: installed %s, wanted %s" % (key, version, managed[key])
             for key, version in versions.drift(have, dict((key, managed[key]) for key in due))]
    stack = [key for key in DRIVER_STACK if key in due]
    if have["driver"] is not None and "firmware" in stack:
        stack = ["firmware"] + [key for key in stack if key != "firmware"]
    steps = [step(key) for key in stack] + [step(key) for key in COMPONENTS if key in due and key not in DRIVER_STACK]

    bad = unhealthy_chips(devices)
    upgrades = [s for s in steps if s["action"] == "upgrade"]
    refused = None
    if upgrades and bad and not force:
        refused = "npu-smi reports %s; refusing to upgrade %s while a chip is unhealthy (fix the chip, or force it)" % (
            ", ".join("chip %s %s" % (index, health) for index, health in bad),
            ", ".join("%s %s -> %s" % (s["component"], s["installed"], s["wanted"]) for s in upgrades),
        )
        steps = []
    return {
        "steps": steps,
        "drift": drift,
        "unhealthy": [[index, health] for index, health in bad],
        "refused": refused,
        "reboot_expected": any(s["component"] in DRIVER_STACK for s in steps),
    }


def installer_sources(steps, urls=None, base_url="", files=None, checksums=None):
    """Where each step's installer comes from, and the checksum it must match.

    :param steps: :func:`install_plan` steps.
    :param urls: ``{component: URL or absolute path on the host}``; wins over *base_url*.
    :param base_url: a URL (or absolute path) of a directory holding the installers
        under the names in *files*; empty for none.
    :param files: ``{component: file name}`` (Huawei's names).
    :param checksums: ``{component: "sha256:<hex>" or "sha256:<URL of a SHA256SUMS>"}``
        (``ansible.builtin.get_url``'s checksum).
    :returns: the steps, each with ``url`` (an absolute path becomes ``file://``),
        ``file`` (the installer's file name) and ``checksum`` added.
    :raises AscendPlanError: naming every step's component that has no source or
        no checksum; nothing may run unchecked.
    """
    urls, files, checksums = urls or {}, files or {}, checksums or {}
    out, missing = [], []
    for step in steps:
        key = step["component"]
        url = urls.get(key) or ("%s/%s" % (base_url.rstrip("/"), files[key]) if base_url and files.get(key) else "")
        if not url or not checksums.get(key):
            missing.append(key)
            continue
        url = "file://" + url if url.startswith("/") else url
        out.append(dict(step, url=url, file=url.rstrip("/").rsplit("/", 1)[-1], checksum=checksums[key]))
    if missing:
        raise AscendPlanError(
            "%s: each installer to run needs a source (package_urls[<component>] or package_base_url) and a "
            "checksum (checksums[<component>] = sha256:...); nothing was installed" % ", ".join(missing))
    return out
