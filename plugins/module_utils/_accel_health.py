# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU health, memory as an engine sees it, and the processes on each GPU: ``nvidia-smi -q -x`` in, one dict
per GPU out (read by ``_accel_nvidia.summarize_nvidia`` into each device's ``health``, ``health_issues``,
``memory_reserved_mib``, ``memory_free_mib`` and ``processes``).

Pure Python, no Ansible import. One ``-q -x`` call gives every fact here for every GPU (the element names are those
of nvidia-smi's XML, DTD ``nvsmi_device_v13.dtd`` on driver 580; the meaning of each is in nvidia-smi(1), section
"GPU ATTRIBUTES"). Memory in MiB.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import (
    AcceleratorOutputError,
    excerpt,
    na,
    normalize_bdf,
)

# What to do about each state: NVIDIA's "GPU Memory Error Management" (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt):
# a pending row remap or page retirement takes effect at the next GPU reset; a remapping failure is an RMA criterion.
ACTION_RESET = "drain the host and reset the GPU (nvidia-smi -r -i INDEX, or reboot)"
ACTION_RMA = "drain the host and run NVIDIA's field diagnostic; a failure is an RMA"
ACTION_BUS = "drain the host and reboot it; if the GPU stays off the bus (Xid 79), reseat it or RMA it"
ACTION_PCIE = "check the riser or slot and the BIOS PCIe settings: the GPU's bandwidth to the host is reduced"
ACTION_SLOWDOWN = "check cooling and power: the GPU runs at reduced clocks (HW slowdown)"

# nvidia-smi(1) "GPU Recovery Action" (R550+): None, Reset, Reboot, Drain P2P, Drain and Reset.
_RECOVERY_OK = ("none", "")
# Lines nvidia-smi prints for a GPU it cannot reach (NVIDIA/dcgm-exporter#604, NVIDIA/open-gpu-kernel-modules#387).
_LOST = re.compile(r"Unable to determine the device handle for GPU\s*([0-9A-Fa-f:.]+)", re.I)


def _text(node, path):
    found = node.find(path)
    return na(found.text) if found is not None and found.text is not None else None


def _mib(node, path):
    value = _text(node, path)
    match = re.match(r"^\s*(\d+)\s*MiB\s*$", value or "")
    return int(match.group(1)) if match else None


def _yes(node, path):
    value = (_text(node, path) or "").lower()
    return True if value == "yes" else False if value == "no" else None


def _int(text):
    return int(text) if text is not None and str(text).strip().isdigit() else None


def _first(node, paths, read):
    """The first of ``paths`` that reads a value (the element names differ between driver branches)."""
    for path in paths:
        value = read(node, path)
        if value is not None:
            return value
    return None


def _uncorrectable_volatile(gpu):
    """Sum of the volatile uncorrectable ECC counters (nvidia-smi(1) "ECC Errors": volatile counts since the driver
    loaded; R520+ names them ``sram_uncorrectable*`` / ``dram_uncorrectable``, older ``double_bit/total``)."""
    volatile = gpu.find("ecc_errors/volatile")
    if volatile is None:
        return None
    counts = [_int(na(child.text)) for child in volatile if "uncorrectable" in child.tag]
    double = volatile.find("double_bit/total")
    if double is not None:
        counts.append(_int(na(double.text)))
    known = [c for c in counts if c is not None]
    return sum(known) if known else None


def _processes(gpu):
    """``[{"pid", "name", "used_mib", "type"}]``: the ``processes/process_info`` of one GPU (nvidia-smi(1) "Processes")."""
    out = []
    for proc in gpu.findall("processes/process_info"):
        pid = _int(_text(proc, "pid"))
        if pid is None:
            continue
        out.append({"pid": pid, "name": _text(proc, "process_name"), "used_mib": _mib(proc, "used_memory"),
                    "type": _text(proc, "type")})
    return out


def _issues(facts):
    """The health issues of one GPU's facts: ``[{"severity", "what", "action"}]``."""
    out = []

    def add(severity, what, action):
        out.append({"severity": severity, "what": what, "action": action})

    if facts["ecc_uncorrectable_volatile"]:
        add("error", "%d uncorrectable ECC error(s) since the driver loaded" % facts["ecc_uncorrectable_volatile"],
            ACTION_RESET)
    if facts["remapped_rows_failure"]:
        add("error", "a row remapping failed", ACTION_RMA)
    if facts["remapped_rows_pending"]:
        add("error", "a row remap is pending", ACTION_RESET)
    if facts["retired_pages_pending"]:
        add("error", "a page retirement is pending", ACTION_RESET)
    if facts["recovery_action"] and facts["recovery_action"].lower() not in _RECOVERY_OK:
        add("error", "the driver asks for recovery: %s" % facts["recovery_action"], ACTION_RESET)
    if facts["reset_required"]:
        add("error", "the GPU requires a reset", ACTION_RESET)
    link = facts["pcie"]
    if link["width"] is not None and link["max_width"] is not None and link["width"] < link["max_width"]:
        add("warning", "PCIe link x%d, below its maximum x%d" % (link["width"], link["max_width"]), ACTION_PCIE)
    elif link["gen"] is not None and link["max_gen"] is not None and link["gen"] < link["max_gen"] and facts["busy"]:
        # an idle GPU trains its link down to save power (nvidia-smi(1) "PCIe Generation"): judged only under load
        add("warning", "PCIe link gen %d under load, below its maximum gen %d" % (link["gen"], link["max_gen"]),
            ACTION_PCIE)
    if facts["hw_slowdown"]:
        add("warning", "hardware slowdown active", ACTION_SLOWDOWN)
    return out


def _width(text):
    match = re.match(r"^\s*(\d+)x\s*$", text or "")
    return int(match.group(1)) if match else None


def parse_nvidia_smi_xml(text):
    """Parse ``nvidia-smi -q -x``.

    :param text: the tool's stdout.
    :returns: ``{bus_id: facts}`` (bus id normalised, see ``normalize_bdf``), ``facts`` =
        ``{"memory": {"total_mib", "reserved_mib", "used_mib", "free_mib"}, "ecc_uncorrectable_volatile",
        "remapped_rows_pending", "remapped_rows_failure", "retired_pages_pending", "recovery_action",
        "reset_required", "pcie": {"gen", "max_gen", "width", "max_width"}, "hw_slowdown", "busy",
        "processes", "issues"}``; a value the tool reports as ``N/A`` is None.
    :raises AcceleratorOutputError: not nvidia-smi's XML.
    """
    try:
        root = ET.fromstring((text or "").strip())
    except ET.ParseError as exc:
        raise AcceleratorOutputError("nvidia-smi -q -x", "not XML (%s): %s" % (exc, excerpt(text or "")))
    if root.tag != "nvidia_smi_log":
        raise AcceleratorOutputError("nvidia-smi -q -x", "no nvidia_smi_log element")
    out = {}
    for gpu in root.findall("gpu"):
        bus = normalize_bdf(gpu.get("id") or _text(gpu, "pci/pci_bus_id"))
        slowdown = _first(gpu, ("clocks_event_reasons/clocks_event_reason_hw_slowdown",
                                "clocks_throttle_reasons/clocks_throttle_reason_hw_slowdown"), _text)
        processes = _processes(gpu)
        facts = {
            "memory": {key: _mib(gpu, "fb_memory_usage/" + key) for key in ("total", "reserved", "used", "free")},
            "ecc_uncorrectable_volatile": _uncorrectable_volatile(gpu),
            "remapped_rows_pending": _yes(gpu, "remapped_rows/remapped_row_pending"),
            "remapped_rows_failure": _yes(gpu, "remapped_rows/remapped_row_failure"),
            "retired_pages_pending": _first(gpu, ("retired_pages/pending_retirement",
                                                  "retired_pages/pending_blacklist"), _yes),
            "recovery_action": _text(gpu, "gpu_recovery_action"),
            # R535 and before: "GPU Reset Status / Reset Required" (NVIDIA/DCGM#152 shows it)
            "reset_required": _yes(gpu, "gpu_reset_status/reset_required"),
            "pcie": {
                "gen": _int(_text(gpu, "pci/pci_gpu_link_info/pcie_gen/current_link_gen")),
                "max_gen": _int(_text(gpu, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")),
                "width": _width(_text(gpu, "pci/pci_gpu_link_info/link_widths/current_link_width")),
                "max_width": _width(_text(gpu, "pci/pci_gpu_link_info/link_widths/max_link_width")),
            },
            "hw_slowdown": (slowdown or "").lower() == "active",
            "busy": bool(processes),
            "processes": processes,
        }
        facts["memory"] = dict((k + "_mib", v) for k, v in facts["memory"].items())
        facts["issues"] = _issues(facts)
        out[bus] = facts
    return out


def lost_gpus(errors):
    """Bus ids of the GPUs nvidia-smi could not reach (``Unable to determine the device handle for GPU<bdf>``),
    from the ``errors`` the main query's parser collected."""
    out = []
    for line in errors or ():
        match = _LOST.search(line)
        if match:
            out.append(normalize_bdf(match.group(1).rstrip(":")))
    return out


# nvml.h NVML_ERROR_RESET_REQUIRED, whose nvmlErrorString nvidia-smi prints in brackets in place of a value, as it
# prints "[Insufficient Permissions]" for NVML_ERROR_NO_PERMISSION (tests/unit/fixtures/real-inputs)
_RESET_REQUIRED = "[gpu requires reset]"


def reset_required_rows(text):
    """Indexes of the GPUs whose row of the main ``--query-gpu`` output reads ``[GPU requires reset]``."""
    out = []
    for line in (text or "").splitlines():
        first = line.split(",", 1)[0].strip()
        if first.isdigit() and _RESET_REQUIRED in line.lower():
            out.append(int(first))
    return out


def health_word(issues):
    """``ok``, ``warning`` or ``error``: the worst of a device's issues."""
    severities = {i["severity"] for i in issues or ()}
    return "error" if "error" in severities else "warning" if "warning" in severities else "ok"
