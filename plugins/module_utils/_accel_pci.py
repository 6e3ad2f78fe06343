# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PCI bus: accelerators listed in sysfs whether a driver is installed or not, and the
PCI id database (``pci.ids``) that names a device id.

Pure Python, no Ansible import.
"""

from __future__ import annotations

import os

from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import (
    normalize_bdf,
    read_text,
)
from ansible_collections.launchcard.inference.plugins.module_utils._accel_tables import PCI_DEVICE_NAMES, VENDORS

PCI_VENDORS = {"0x10de": "nvidia", "0x1002": "amd", "0x19e5": "ascend"}
"""PCI vendor ids (``/sys/bus/pci/devices/*/vendor``) of the accelerator vendors."""


PCI_CLASSES = {
    "nvidia": ("0x0300", "0x0302"),
    "amd": ("0x0300", "0x0380", "0x1200"),
    "ascend": ("0x1200",),
}
"""PCI base class and subclass (the first 6 characters of ``/sys/bus/pci/devices/*/class``)
that count as an accelerator per vendor: VGA ``0x0300``, 3D controller ``0x0302`` (NVIDIA
data-center GPUs), display controller ``0x0380`` (AMD Instinct), processing accelerator
``0x1200`` (AMD MI300 series, Huawei Ascend). NVSwitch (``0x0680``), audio and network
functions of the same vendors are not accelerators."""


PCI_DEVICES_DIR = "/sys/bus/pci/devices"
"""Where the kernel lists PCI functions, one directory per bus address."""


def parse_pci_devices(entries, pci_ids=None):
    """Accelerators on the PCI bus, driver or not.

    Source: ``/sys/bus/pci/devices/<bus id>/{vendor,device,class}`` (what
    ``lspci -n`` prints), readable before any vendor driver is installed. That
    is how a bare host shows which vendor's stack it needs.

    :param entries: ``[{"bus_id": str, "vendor": "0x10de", "device": "0x2330",
        "class": "0x030200"}, ...]`` (:func:`read_pci_devices` output), or ``None``
        when the bus could not be read.
    :returns: ``{"vendor": "nvidia" | "amd" | "ascend" | None, "count": int,
        "devices": [{"bus_id", "vendor", "device_id"}, ...]}``: *vendor* is the
        vendor with the most accelerators (ties in :data:`VENDORS` order) and
        *count* how many it has; *devices* lists every accelerator found, by bus id.
    :param pci_ids: the PCI id database's text (:func:`read_pci_ids`), or ``None``: each device's ``name`` is
        its name there, else in :data:`PCI_DEVICE_NAMES`, else ``None``.
    """
    names = dict((vendor_id, known_device_names(pci_ids, vendor_id)) for vendor_id in PCI_VENDORS)
    devices = []
    for entry in entries or ():
        vendor = PCI_VENDORS.get(str(entry.get("vendor") or "").strip().lower())
        klass = str(entry.get("class") or "").strip().lower()[:6]
        if vendor and klass in PCI_CLASSES[vendor]:
            device_id = str(entry.get("device") or "").strip().lower() or None
            vendor_id = str(entry.get("vendor")).strip().lower()
            devices.append({"bus_id": normalize_bdf(entry.get("bus_id")), "vendor": vendor, "device_id": device_id,
                            "name": pci_device_name(names[vendor_id], device_id)})
    devices.sort(key=lambda d: d["bus_id"] or "")
    counts = dict((v, sum(1 for d in devices if d["vendor"] == v)) for v in VENDORS)
    best = max(VENDORS, key=lambda v: (counts[v], -VENDORS.index(v)))
    vendor = best if counts[best] else None
    return {"vendor": vendor, "count": counts[best] if vendor else 0, "devices": devices}


def read_pci_devices(root=None, read=None, listdir=os.listdir):
    """The entries :func:`parse_pci_devices` takes, read from sysfs.

    :param root: the devices directory (``/sys/bus/pci/devices``; another path
        when the host's sysfs is mounted elsewhere, e.g. ``/host/sys/...``).
    :returns: list of entry dicts, or ``None`` when *root* cannot be listed.
    """
    read = read or read_text
    root = PCI_DEVICES_DIR if root is None else root
    try:
        names = sorted(listdir(root))
    except OSError:
        return None
    entries = []
    for name in names:
        base = os.path.join(root, name)
        entries.append({"bus_id": name, "vendor": read(os.path.join(base, "vendor")),
                        "device": read(os.path.join(base, "device")), "class": read(os.path.join(base, "class"))})
    return entries


PCI_IDS_PATHS = ("/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids", "/usr/share/pci.ids")
"""Where distributions install the PCI id database (https://pci-ids.ucw.cz/): Debian and
Ubuntu's ``pci.ids`` package (``/usr/share/misc``), RHEL's ``hwdata`` (``/usr/share/hwdata``)."""


def read_pci_ids(paths=None, read=None):
    """The first PCI id database found.

    :param paths: candidate files; default :data:`PCI_IDS_PATHS`.
    :param read: ``read(path) -> str | None``; default ``read_text``.
    :returns: ``(path, text)``, or ``(None, None)`` when none exists.
    """
    read = read or read_text
    for path in PCI_IDS_PATHS if paths is None else paths:
        text = read(path)
        if text:
            return path, text
    return None, None


def pci_device_names(text, vendor_id):
    """Device names of one vendor in a PCI id database.

    The format (the header of ``pci.ids``): a vendor line ``vvvv  Vendor name`` at
    column 0, its devices below as ``<TAB>dddd  Device name``, subsystems as
    ``<TAB><TAB>ssss ssss  name``; ``#`` starts a comment. Ids are 4 hex digits.

    :param text: the database's text (``None`` or empty: no database).
    :param vendor_id: e.g. ``"0x1002"`` or ``"1002"``.
    :returns: ``{"0x7408": "Aldebaran/MI200 [Instinct MI250X]", ...}`` (ids lower case).
    """
    vendor = str(vendor_id or "").lower().replace("0x", "").zfill(4)
    names = {}
    inside = False
    for line in (text or "").splitlines():
        if not line or line.startswith("#"):
            continue
        if not line.startswith("\t"):
            if inside:
                break
            inside = line[:4].lower() == vendor and line[4:6] == "  "
            continue
        if inside and not line.startswith("\t\t"):
            device, sep, name = line[1:].partition("  ")
            if sep and len(device) == 4:
                names["0x" + device.lower()] = name.strip()
    return names


def pci_device_name(names, device_id):
    """The database's name of *device_id* (``"0x7408"``, ``"7408"``, any case) in
    :func:`pci_device_names` output; ``None`` when absent."""
    if not device_id:
        return None
    key = str(device_id).strip().lower()
    key = "0x" + key[2:].zfill(4) if key.startswith("0x") else "0x" + key.zfill(4)
    return names.get(key)


def known_device_names(text, vendor_id):
    """Device names of one vendor: the host's PCI id database (*text*, :func:`pci_device_names`) first, then
    :data:`PCI_DEVICE_NAMES` for the ids it lacks (a database older than the part).

    :returns: ``{"0x74a1": "Aqua Vanjaram [Instinct MI300X]", ...}``.
    """
    vendor = "0x" + str(vendor_id or "").lower().replace("0x", "").zfill(4)
    names = dict(PCI_DEVICE_NAMES.get(vendor, {}))
    names.update(pci_device_names(text, vendor))
    return names
