# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AMD: amd-smi, rocm-smi, /sys/module/amdgpu/version and modinfo in; GPU devices and the
driver state out.

Pure Python, no Ansible import. Memory in MiB.
"""

from __future__ import annotations

import json
import re

from ansible_collections.launchcard.inference.plugins.module_utils._accel_health import health_word
from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import (
    AcceleratorOutputError,
    excerpt,
    make_device,
    empty_driver,
    load_json,
    lower_keys,
    na,
    normalize_bdf,
    parse_if_ok,
    parse_modinfo_version,
    parse_tools,
    same_version,
    to_int,
    to_mib,
    tool_ok,
)
from ansible_collections.launchcard.inference.plugins.module_utils._accel_pci import (
    parse_pci_devices,
    known_device_names,
    pci_device_name,
    pci_device_names,
)
from ansible_collections.launchcard.inference.plugins.module_utils._accel_tables import (
    AMD_FAMILY_IDS,
    is_known_model,
    normalize_model,
)

AMD_PCI_VENDOR = "0x1002"
# amd-smi(1) reset --gpureset: the GPU reset amd-smi offers; a reboot does the same for every GPU
AMD_ACTION_RESET = "drain the host and reset the GPU (amd-smi reset --gpureset -g INDEX) or reboot; errors that return: RMA"


def _amd_entries(data, tool):
    if isinstance(data, dict) and isinstance(data.get("gpu_data"), list):
        data = data["gpu_data"]
    elif isinstance(data, dict) and "gpu" in data:
        data = [data]
    if not isinstance(data, list) or not all(isinstance(entry, dict) for entry in data):
        raise AcceleratorOutputError(tool, "expected a list of GPU objects or {\"gpu_data\": [...]}, got %s" % excerpt(json.dumps(data)))
    return data


def _amd_index(entry, position, tool):
    index = to_int(entry.get("gpu", position))
    if index is None:
        raise AcceleratorOutputError(tool, "GPU entry without a usable \"gpu\" index: %s" % excerpt(json.dumps(entry)))
    return index


def parse_amd_smi_list(text):
    """Parse the AMD GPU list.

    Source: ``amd-smi list --json``. Either a list (ROCm 6.1+) or the list
    wrapped as ``{"gpu_data": [...]}`` (some releases)::

        [{"gpu": 0, "bdf": "0000:05:00.0", "uuid": "...", "kfd_id": 1, "node_id": 2, "partition_id": 0}, ...]

    Each entry is a logical GPU (a partitioned MI300X in CPX mode lists
    several per physical device).

    :returns: list of ``{"index": int, "bus_id": str | None, "uuid": str | None}``
        in the tool's order.
    :raises AcceleratorOutputError: not JSON, or not that shape.
    """
    entries = _amd_entries(load_json(text, "amd-smi list"), "amd-smi list")
    return [
        {
            "index": _amd_index(entry, position, "amd-smi list"),
            "bus_id": normalize_bdf(entry.get("bdf")),
            "uuid": na(entry.get("uuid")),
        }
        for position, entry in enumerate(entries)
    ]


def _amd_vram_mib(vram):
    if not isinstance(vram, dict):
        return None
    vram = lower_keys(vram)
    size = vram.get("size", vram.get("vram_size", vram.get("vram_size_mb")))
    if isinstance(size, dict):
        size = lower_keys(size)
        return to_mib(size.get("value"), size.get("unit") or "MB")
    if isinstance(size, str):
        match = re.match(r"^\s*([\d.]+)\s*([A-Za-z]*)\s*$", size)
        return to_mib(match.group(1), match.group(2) or "MB") if match else None
    return to_mib(size, "MB")


def parse_amd_smi_static(text):
    """Parse static per-GPU facts: VRAM size, marketing name, device id,
    driver version.

    Source: ``amd-smi static --asic --vram --driver --json`` (any subset of
    those flags; list or ``{"gpu_data": [...]}`` as in
    :func:`parse_amd_smi_list`). VRAM size comes in three shapes across
    releases, all handled:

    * ``"vram": {"size": {"value": 196592, "unit": "MB"}}`` (ROCm 6.2+),
    * ``"vram": {"size": "196592 MB"}`` (human-readable strings),
    * ``"vram": {"vram_size_mb": 196592}`` (early releases).

    Units: amd-smi's ``MB`` is really MiB -- the library computes
    ``vram_size = total_bytes / (1024 * 1024)`` (ROCm/amdsmi
    ``amdsmi_get_gpu_vram_info``) and the CLI labels it "MB" -- so ``MB`` is
    taken as MiB (MI300X: 196592 = 192 GiB); ``GB`` is multiplied by 1024,
    ``KB`` divided by 1024, bytes divided by 2**20.
    ``asic.market_name`` is sometimes the code name (``"Aqua Vanjaram"``);
    ``asic.device_id`` (``"0x74a1"``) is kept so :func:`normalize_model`
    can fall back to it. A value the tool could not read (``"N/A"``) becomes
    ``None``.

    :returns: ``{index: {"memory_mib": int | None, "market_name": str | None,
        "device_id": str | None, "driver_version": str | None}}``.
    :raises AcceleratorOutputError: not JSON, or not that shape.
    """
    entries = _amd_entries(load_json(text, "amd-smi static"), "amd-smi static")
    result = {}
    for position, entry in enumerate(entries):
        asic = lower_keys(entry.get("asic")) if isinstance(entry.get("asic"), dict) else {}
        driver = lower_keys(entry.get("driver")) if isinstance(entry.get("driver"), dict) else {}
        device_id = na(asic.get("device_id"))
        result[_amd_index(entry, position, "amd-smi static")] = {
            "memory_mib": _amd_vram_mib(entry.get("vram")),
            "market_name": na(asic.get("market_name")),
            "device_id": device_id.lower() if device_id else None,
            "driver_version": na(driver.get("version", driver.get("driver_version"))),
        }
    return result


def parse_rocm_smi_product(text):
    """Parse rocm-smi's per-card product facts.

    Source: ``rocm-smi --showproductname [--showmeminfo vram] [--showbus]
    --json``: ``{"card0": {...}, "card1": {...}, "system": {...}}``, possibly
    after warning lines. Keys vary across releases and are matched
    case-insensitively: ``Card Series`` / ``Card Model`` (``Card Model`` is
    often the PCI device id, ``0x74a1``), and from rocm-smi 6.2 on also
    ``Device Name`` / ``Device ID`` (``{"Device Name": "Phoenix3", "Device ID":
    "0x1900"}``). The name is ``Card Series``, else ``Device Name``, else a
    ``Card Model`` that is not a bare id; the device id is ``Device ID``, else a
    ``Card Model`` that is one. ``VRAM Total Memory (B)`` is bytes (converted
    to MiB); ``PCI Bus`` is the BDF. Keys other than ``cardN`` are ignored.

    :returns: ``{index (N of cardN): {"name": str | None, "device_id": str |
        None (lower case, "0x7408"), "memory_mib": int | None, "bus_id": str |
        None}}``.
    :raises AcceleratorOutputError: not JSON or not an object of objects.
    """
    data = load_json(text, "rocm-smi")
    if not isinstance(data, dict):
        raise AcceleratorOutputError("rocm-smi", "expected {\"cardN\": {...}}, got %s" % excerpt(json.dumps(data)))
    cards = {}
    for key, value in data.items():
        match = re.match(r"^card(\d+)$", str(key).strip(), re.IGNORECASE)
        if not match:
            continue
        if not isinstance(value, dict):
            raise AcceleratorOutputError("rocm-smi", "%s is not an object" % key)
        fields = lower_keys(value)
        model = na(fields.get("card model"))
        model_is_id = bool(model) and _is_device_id(model)
        device_id = na(fields.get("device id")) or (model if model_is_id else None)
        cards[int(match.group(1))] = {
            "name": na(fields.get("card series")) or na(fields.get("device name")) or (None if model_is_id else model),
            "device_id": device_id.lower() if device_id and _is_device_id(device_id) else None,
            "memory_mib": to_mib(fields.get("vram total memory (b)"), "B"),
            "bus_id": normalize_bdf(fields.get("pci bus")),
        }
    return cards


def _is_device_id(text):
    return bool(re.match(r"^0x[0-9a-fA-F]{4}$", str(text).strip()))


def amd_model(names, device_id, pci_ids, have_database=None):
    """Decide an AMD GPU's model from its names and PCI device id.

    The device id wins: its name in the PCI id database (``pci.ids``) names the
    exact part (``0x7408`` -> ``Aldebaran/MI200 [Instinct MI250X]`` ->
    ``mi250x``), where tools may print only the family (rocm-smi's ``Card
    Series`` ``AMD INSTINCT MI200 ...``) or a code name (amd-smi's
    ``market_name`` ``Aqua Vanjaram``). Without a database entry the first name
    that maps to a known part decides, else the first name's slug.

    :param names: names the tools printed, best first (``None`` entries skipped).
    :param device_id: ``"0x7408"`` or ``None``.
    :param pci_ids: ``{device id: name}`` for vendor 0x1002 (``_accel_pci.known_device_names``: the
        host's database, then the collection's table of current parts).
    :param have_database: whether the host has a PCI id database (the errors say what to install);
        default: *pci_ids* is not empty.
    :returns: ``(model, model_id, problem)``: the human name (a tool's name, else
        the database's), the id (``None`` when nothing names the part) and
        ``None`` or a sentence saying what is missing and what to do.
    """
    names = [name for name in names if name]
    have_database = bool(pci_ids) if have_database is None else have_database
    db_name = pci_device_name(pci_ids, device_id)
    model = names[0] if names else db_name
    candidates = ([normalize_model(db_name)] if db_name else []) + [normalize_model(name) for name in names]
    model_id = next((c for c in candidates if is_known_model(c)), None)
    if model_id is None:
        model_id = next((c for c in candidates if c), None)
    problem = None
    if model_id is None:
        problem = ("no product name found (rocm-smi Card Series/Card Model/Device Name, amd-smi "
                   "asic.market_name) and device id %s is %s" % (
                       device_id or "unknown",
                       "not in the PCI id database" if have_database else "unknown without a PCI id database"))
    elif model_id in AMD_FAMILY_IDS:
        problem = ("the tools name only the family (%s) and device id %s %s: install the PCI id database "
                   "(Debian/Ubuntu package pci.ids, RHEL hwdata) or update it" % (
                       model, device_id or "(not reported)",
                       "is not in the PCI id database" if have_database else "needs the PCI id database"))
    return model, model_id, problem


def summarize_amd(sources, errors):
    """Devices and driver state of an AMD host from its ``sources`` (see ``_accelerators.summarize``):
    ``amd_smi_list``, ``amd_smi_static``, ``rocm_smi``, ``amdgpu_modinfo`` results, the
    ``amdgpu_sys_version`` and ``pci_ids`` (the PCI id database) texts and the ``pci`` entries."""
    driver = empty_driver()
    listed, static, rocm = parse_tools(sources, errors, (
        ("amd_smi_list", "amd-smi list", parse_amd_smi_list),
        ("amd_smi_static", "amd-smi static", parse_amd_smi_static),
        ("rocm_smi", "rocm-smi", parse_rocm_smi_product),
    ))
    if sources.get("amd_smi_list") is None and sources.get("rocm_smi") is None:
        errors.append("neither amd-smi nor rocm-smi found")

    static = static or {}
    rocm = rocm or {}
    # an amd-smi without the flag exits non-zero: no ECC facts then, not an error
    ecc = parse_if_ok(sources, "amd_smi_ecc", parse_amd_smi_ecc, errors) or {}
    have_database = bool(pci_device_names(sources.get("pci_ids"), AMD_PCI_VENDOR))
    pci_ids = known_device_names(sources.get("pci_ids"), AMD_PCI_VENDOR)
    bus_ids = dict((d["bus_id"], d["device_id"]) for d in parse_pci_devices(sources.get("pci"))["devices"]
                   if d["vendor"] == "amd")
    rocm_by_bus = dict((card["bus_id"], card) for card in rocm.values() if card["bus_id"])
    if listed is None:
        # No amd-smi list: rocm-smi's cards are the device list.
        listed = [{"index": index, "bus_id": card["bus_id"], "uuid": None} for index, card in sorted(rocm.items())]
    if not listed and not errors:
        errors.append("no AMD GPUs listed")

    devices = []
    for gpu in listed:
        facts = static.get(gpu["index"], {})
        # Match rocm-smi by PCI address when both know it: rocm-smi's cardN
        # and amd-smi's gpu N need not be in the same order.
        card = rocm_by_bus.get(gpu["bus_id"]) if gpu["bus_id"] else None
        if card is None and not (gpu["bus_id"] and rocm_by_bus):
            card = rocm.get(gpu["index"])
        card = card or {}
        device_id = facts.get("device_id") or card.get("device_id") or bus_ids.get(gpu["bus_id"] or card.get("bus_id"))
        model, model_id, problem = amd_model((card.get("name"), facts.get("market_name")), device_id, pci_ids, have_database)
        if problem:
            errors.append("AMD GPU %s: %s" % (gpu["index"], problem))
        devices.append(
            make_device(
                gpu["index"],
                model=model,
                model_id=model_id,
                memory_mib=facts.get("memory_mib") or card.get("memory_mib"),
                uuid=gpu["uuid"],
                bus_id=gpu["bus_id"],
                driver_version=facts.get("driver_version"),
            )
        )
        if gpu["index"] in ecc:
            devices[-1]["health_issues"] = ecc[gpu["index"]]
            devices[-1]["health"] = health_word(ecc[gpu["index"]])

    sys_version = sources.get("amdgpu_sys_version")
    driver["loaded_version"] = parse_modinfo_version(sys_version) if sys_version else None
    driver["installed_version"] = (
        parse_modinfo_version(sources["amdgpu_modinfo"][1]) if tool_ok(sources, "amdgpu_modinfo") else None
    )
    if driver["installed_version"] and driver["loaded_version"]:
        driver["reboot_required"] = not same_version(driver["installed_version"], driver["loaded_version"])
    driver["runtime_version"] = parse_rocm_version_info(sources.get("rocm_version_info"))
    return devices, driver


def parse_amd_smi_ecc(text):
    """Parse ``amd-smi metric --ecc --json``: per GPU ``{"gpu": N, "ecc": {"total_correctable_count",
    "total_uncorrectable_count", "total_deferred_count", "cache_correctable_count", "cache_uncorrectable_count"}}``
    (amdsmi's CLI writes those keys; a count it cannot read is ``N/A``), list or ``{"gpu_data": [...]}``.

    :returns: ``{index: [issue, ...]}``, an issue as ``_accel_health``'s (an uncorrectable count is an error, a
        deferred one - an uncorrectable error the hardware deferred by poisoning the data - a warning).
    :raises AcceleratorOutputError: not that JSON.
    """
    out = {}
    for position, entry in enumerate(_amd_entries(load_json(text, "amd-smi metric --ecc"), "amd-smi metric --ecc")):
        ecc = entry.get("ecc") if isinstance(entry.get("ecc"), dict) else {}
        issues = []
        uncorrectable = sum(to_int(ecc.get(k)) or 0 for k in ("total_uncorrectable_count", "cache_uncorrectable_count"))
        if uncorrectable:
            issues.append({"severity": "error", "what": "%d uncorrectable ECC error(s)" % uncorrectable,
                           "action": AMD_ACTION_RESET})
        deferred = to_int(ecc.get("total_deferred_count"))
        if deferred:
            issues.append({"severity": "warning", "what": "%d deferred (poisoned) ECC error(s)" % deferred,
                           "action": AMD_ACTION_RESET})
        out[_amd_index(entry, position, "amd-smi metric --ecc")] = issues
    return out


def parse_rocm_version_info(text):
    """The ROCm release from ``/opt/rocm/.info/version`` (``6.2.0-66``: release and build).

    :returns: ``"6.2.0"``, or ``None`` when the file is absent or holds no version.
    """
    match = re.match(r"^\s*(\d+(?:\.\d+)+)", text or "")
    return match.group(1) if match else None
