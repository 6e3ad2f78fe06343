# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Huawei Ascend: npu-smi and /usr/local/Ascend/driver/version.info in; NPU chips and the
driver state out.

Pure Python, no Ansible import. Memory in MiB.
"""

from __future__ import annotations

import re

from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import (
    AcceleratorOutputError,
    excerpt,
    make_device,
    empty_driver,
    na,
    normalize_bdf,
    parse_tools,
    same_version,
    to_int,
)
from ansible_collections.launchcard.inference.plugins.module_utils._accel_tables import normalize_model


def parse_npu_smi_list(text):
    """Parse the NPU list.

    Source: ``npu-smi info -l``::

        Total Count                    : 8

        NPU ID                         : 0
        Chip Count                     : 1
        ...

    (some boards add ``Product Name``/``Serial Number`` lines per NPU; dual-die
    Atlas A3 parts report ``Chip Count : 2``).

    :returns: ``{"total": int | None, "npus": [{"npu_id": int, "chip_count":
        int | None}, ...]}``.
    :raises AcceleratorOutputError: non-blank output with neither a
        ``Total Count`` nor any ``NPU ID``.
    """
    total = None
    npus = []
    for raw in (text or "").splitlines():
        if ":" not in raw:
            continue
        key, value = raw.split(":", 1)
        key = " ".join(key.split()).lower()
        if key == "total count":
            total = to_int(value)
        elif key == "npu id":
            npu_id = to_int(value)
            if npu_id is not None:
                npus.append({"npu_id": npu_id, "chip_count": None})
        elif key == "chip count" and npus:
            npus[-1]["chip_count"] = to_int(value)
    if total is None and not npus and (text or "").strip():
        raise AcceleratorOutputError("npu-smi info -l", "no \"Total Count\" or \"NPU ID\": %s" % excerpt(text))
    return {"total": total, "npus": npus}


def _usage_pairs(cell):
    return [(int(used), int(total)) for used, total in re.findall(r"(\d+)\s*/\s*(\d+)", cell)]


def parse_npu_smi_info(text):
    """Parse the ``npu-smi info`` box table.

    Source: ``npu-smi info``. A header line ``npu-smi 24.1.rc3  Version:
    24.1.rc3`` (the driver version), then two rows per chip::

        | NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
        | Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
        +===========================+===============+====================================================+
        | 0     910B3               | OK            | 95.7        35                0    / 0             |
        | 0     0                   | 0000:C1:00.0  | 0           0    / 0          3373 / 65536         |

    The second header line may be ``Chip`` alone (no ``Phy-ID`` column). A
    dual-die NPU (Atlas A3) has two such row pairs with the same NPU id. The
    process table after the device table is ignored. Memory is the HBM total
    (``HBM-Usage(MB)``, MB as MiB) when the table has that column and it is
    non-zero, else the ``Memory-Usage(MB)`` total (310P cards, DDR).
    Health is lower-cased (``ok``, ``warning``, ``alarm``, ``critical``...).

    :returns: ``{"version": str | None, "chips": [{"npu_id": int, "name":
        str, "health": str | None, "chip_id": int | None, "phy_id": int | None,
        "bus_id": str | None, "memory_mib": int | None, "memory_used_mib": int
        | None}, ...]}`` in table order.
    :raises AcceleratorOutputError: non-blank output without any device row.
    """
    version = None
    chips = []
    has_hbm = False
    pending = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        match = re.search(r"npu-smi\s+\S+\s+Version:\s*(\S+)", line)
        if match:
            version = match.group(1)
            continue
        if "Process id" in line or "Process name" in line:
            break
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if "HBM-Usage" in line:
            has_hbm = True
        if len(cells) < 3:
            continue
        first = cells[0].split()
        if not first or not first[0].isdigit():
            continue
        if len(first) >= 2 and not first[1].isdigit():
            pending = {
                "npu_id": int(first[0]),
                "name": " ".join(first[1:]),
                "health": na(cells[1]).lower() if na(cells[1]) else None,
            }
            continue
        if pending is None:
            continue
        pairs = _usage_pairs(cells[2])
        usage = None
        if has_hbm and len(pairs) >= 2 and pairs[-1][1] > 0:
            usage = pairs[-1]
        elif pairs:
            usage = pairs[0]
        chip = dict(pending)
        chip.update(
            {
                "chip_id": int(first[0]),
                "phy_id": int(first[1]) if len(first) >= 2 else None,
                "bus_id": normalize_bdf(cells[1]),
                "memory_mib": usage[1] if usage else None,
                "memory_used_mib": usage[0] if usage else None,
            }
        )
        chips.append(chip)
        pending = None
    if not chips and (text or "").strip():
        raise AcceleratorOutputError("npu-smi info", "no device rows in table: %s" % excerpt(text))
    return {"version": version, "chips": chips}


def parse_npu_smi_processes(text):
    """Parse the process table ``npu-smi info`` prints after its device table::

        | NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
        | 0       0                 | 2759218       | VLLMWorker_DP            | 56293                   |

    (the name may be blank; newer releases add ``Process id in container``; an NPU without any prints ``No running
    processes found in NPU N``).

    :returns: ``{(npu_id, chip_id): [{"pid", "name", "used_mib", "type"}]}`` (MB as MiB, ``type`` None).
    """
    out, inside = {}, False
    for raw in (text or "").splitlines():
        line = raw.strip()
        if "Process id" in line:
            inside = True
            continue
        if not inside or not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        ids = cells[0].split()
        if len(cells) < 4 or len(ids) != 2 or not all(i.isdigit() for i in ids) or not cells[1].isdigit():
            continue
        used = cells[3].split()[0] if cells[3].split() else ""
        out.setdefault((int(ids[0]), int(ids[1])), []).append(
            {"pid": int(cells[1]), "name": cells[2] or None, "used_mib": int(used) if used.isdigit() else None,
             "type": None})
    return out


def parse_ascend_version_info(text):
    """Parse the installed Ascend driver version.

    Source: the file ``/usr/local/Ascend/driver/version.info``, lines like
    ``Version=24.1.rc3`` (also ``ascendhal_version=...``, ignored).

    :returns: the version (``str``) or ``None`` when absent.
    """
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() == "version" and value.strip():
            return value.strip()
    return None


def summarize_ascend(sources, errors):
    driver = empty_driver()
    listing, table = parse_tools(sources, errors, (
        ("npu_smi_list", "npu-smi info -l", parse_npu_smi_list),
        ("npu_smi_info", "npu-smi info", parse_npu_smi_info),
    ))
    if sources.get("npu_smi_list") is None and sources.get("npu_smi_info") is None:
        errors.append("npu-smi not found")

    devices = []
    processes = parse_npu_smi_processes(sources["npu_smi_info"][1]) if table is not None else {}
    if table is not None:
        chips_per_npu = {}
        for chip in table["chips"]:
            chips_per_npu[chip["npu_id"]] = chips_per_npu.get(chip["npu_id"], 0) + 1
        for chip in table["chips"]:
            model_id = normalize_model(chip["name"])
            if model_id == "ascend_910" and chips_per_npu[chip["npu_id"]] > 1:
                # Atlas A3 boards print a bare "Ascend910" per die of a
                # dual-die 910C; the original 910 has one die per NPU.
                model_id = "ascend_910c"
            devices.append(
                make_device(
                    chip["phy_id"] if chip["phy_id"] is not None else chip["npu_id"],
                    model=chip["name"],
                    model_id=model_id,
                    memory_mib=chip["memory_mib"],
                    bus_id=chip["bus_id"],
                    driver_version=table["version"],
                    health=chip["health"],
                )
            )
            if chip["memory_mib"] is not None and chip["memory_used_mib"] is not None:
                # what npu-smi shows free (its HBM-Usage), and who holds it: preflight's gpu_in_use. What no process
                # holds is the driver's (an idle 910B shows about 3 GB used): counted as reserved, as nvidia-smi's is
                held = processes.get((chip["npu_id"], chip["chip_id"]), [])
                devices[-1]["memory_free_mib"] = chip["memory_mib"] - chip["memory_used_mib"]
                devices[-1]["memory_reserved_mib"] = max(0, chip["memory_used_mib"] - sum(
                    p["used_mib"] or 0 for p in held))
                devices[-1]["processes"] = held
    elif listing is not None:
        for npu in listing["npus"]:
            devices.append(make_device(npu["npu_id"]))
    if listing is not None and table is not None and listing["total"] is not None:
        npus_in_table = len(set(chip["npu_id"] for chip in table["chips"]))
        if npus_in_table != listing["total"]:
            errors.append(
                "npu-smi info -l counts %d NPUs but the npu-smi info table shows %d" % (listing["total"], npus_in_table)
            )
    if not devices and (listing is not None or table is not None):
        errors.append("npu-smi listed no NPUs")

    version_info = sources.get("ascend_version_info")
    driver["installed_version"] = parse_ascend_version_info(version_info) if version_info else None
    driver["loaded_version"] = table["version"] if table is not None else None
    if driver["installed_version"] and driver["loaded_version"]:
        driver["reboot_required"] = not same_version(driver["installed_version"], driver["loaded_version"])
    elif driver["installed_version"] is None and table is not None:
        driver["installed_version"] = table["version"]
    driver["runtime_version"] = (parse_ascend_version_info(sources.get("cann_info_x86_64"))
                                 or parse_ascend_version_info(sources.get("cann_info_aarch64")))
    return devices, driver
