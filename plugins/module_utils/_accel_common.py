# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared pieces of the accelerator parsers: the error type, placeholder and number
handling, JSON with leading warnings, the device and driver dict shapes, tool results.

Pure Python, no Ansible import. A tool result is the ``(rc, stdout, stderr)`` tuple
``AnsibleModule.run_command`` returns.
"""

from __future__ import annotations

import json
import math
import re

_NA_VALUES = frozenset(("", "n/a", "[n/a]", "na", "-", "not supported", "[not supported]", "[unknown error]", "unknown"))


class AcceleratorOutputError(ValueError):
    """A tool's output does not have the documented shape.

    :ivar tool: the tool or file whose output was not understood
        (``"nvidia-smi"``, ``"/proc/driver/nvidia/version"``...).
    :ivar detail: what was wrong, with a short excerpt of the output.

    ``str()`` reads ``"<tool>: <detail>"``, ready for an ``errors`` entry.
    """

    def __init__(self, tool, detail):
        self.tool = tool
        self.detail = detail
        super().__init__("%s: %s" % (tool, detail))


def excerpt(text, limit=200):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def na(value):
    """``None`` for the placeholders tools print instead of a value."""
    if value is None:
        return None
    value = str(value).strip()
    return None if value.lower() in _NA_VALUES else value


def to_int(value):
    value = na(value)
    if value is None:
        return None
    try:
        return int(value, 0) if value.lower().startswith("0x") else int(float(value))
    except (ValueError, OverflowError):
        return None


def normalize_bdf(bus_id):
    """Normalise a PCI address to ``dddd:bb:dd.f`` in lower case.

    nvidia-smi prints an 8-digit domain (``00000000:18:00.0``), rocm-smi upper
    case hex (``0000:C1:00.0``), npu-smi and amd-smi the usual form. Returns
    ``None`` for placeholders and the input unchanged (stripped) when it is not
    a PCI address at all.
    """
    bus_id = na(bus_id)
    if bus_id is None:
        return None
    match = re.match(r"^(?:([0-9a-fA-F]+):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$", bus_id)
    if not match:
        return bus_id
    domain, bus, device, function = match.groups()
    return "%04x:%02x:%02x.%s" % (int(domain or "0", 16), int(bus, 16), int(device, 16), function)


def to_mib(value, unit="MB"):
    """Convert a size to MiB. ``MB`` is read as MiB: see parse_amd_smi_static."""
    number = na(value)
    if number is None:
        return None
    try:
        number = float(number)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    unit = str(unit or "MB").strip().lower()
    scale = {
        "b": 1.0 / (1 << 20),
        "bytes": 1.0 / (1 << 20),
        "kb": 1.0 / 1024,
        "kib": 1.0 / 1024,
        "mb": 1.0,
        "mib": 1.0,
        "gb": 1024.0,
        "gib": 1024.0,
    }.get(unit)
    if scale is None:
        return None
    return int(round(number * scale))


def load_json(text, tool):
    """Parse JSON that may be preceded by warning lines (rocm-smi does that)."""
    if text is None or not text.strip():
        raise AcceleratorOutputError(tool, "empty output, expected JSON")
    try:
        return json.loads(text)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    offset = 0
    for line in text.splitlines(True):
        if line.lstrip().startswith(("{", "[")):
            start = offset + len(line) - len(line.lstrip())
            try:
                return decoder.raw_decode(text, start)[0]
            except ValueError:
                pass
        offset += len(line)
    raise AcceleratorOutputError(tool, "not JSON: %s" % excerpt(text))


def lower_keys(mapping):
    return dict((str(key).strip().lower(), value) for key, value in mapping.items())


def same_version(first, second):
    """Equal, or one is a dotted prefix of the other (``570.124`` ~ ``570.124.06``)."""
    return first == second or first.startswith(second + ".") or second.startswith(first + ".")


def make_device(index, model=None, memory_mib=None, uuid=None, bus_id=None, driver_version=None,
                persistence_mode=None, fabric_state=None, health=None, model_id=None):
    """One device dict in the shape ``summarize`` documents (``model_id`` as given:
    the vendor parser decides it)."""
    return {
        "index": index,
        "model": model,
        "model_id": model_id,
        "memory_mib": memory_mib,
        "uuid": uuid,
        "bus_id": bus_id,
        "driver_version": driver_version,
        "persistence_mode": persistence_mode,
        "fabric_state": fabric_state,
        "health": health,
        # NVIDIA: nvidia-smi -q -x (_accel_health); empty or None elsewhere
        "health_issues": [],
        "memory_reserved_mib": None,
        "memory_free_mib": None,
        "processes": None,
    }


def tool_text(result):
    out, err = result[1], result[2]
    return "\n".join(part.strip() for part in (out or "", err or "") if part and part.strip())


def tool_failed(tool, result):
    rc = result[0]
    message = excerpt(tool_text(result), 300) or "no output"
    return "%s exited %s: %s" % (tool, rc, message)


def empty_driver():
    return {
        "installed_version": None,
        "loaded_version": None,
        "reboot_required": None,
        "fabric_manager_required": False,
        "imex_required": False,
        "nvlink5_required": False,
        "fabric_manager_active": None,
        "runtime_version": None,
        "kernel_module": None,
        "message": None,
        "lost_gpus": [],
    }


def tool_ok(sources, key):
    result = sources.get(key)
    return result is not None and result[0] == 0


def parse_if_ok(sources, key, parser, errors):
    """``parser`` of the output of tool ``key`` when it ran and exited 0; None otherwise (a tool that is absent or
    failed says nothing here), or when the parser rejected the output (an ``errors`` entry)."""
    if not tool_ok(sources, key):
        return None
    try:
        return parser(sources[key][1])
    except AcceleratorOutputError as exc:
        errors.append(str(exc))
        return None


def parse_tools(sources, errors, table):
    """Parse each available tool result with its parser.

    :param table: ``(source key, tool name for messages, parser)`` triples.
    :returns: one parsed value per triple, None where the tool was absent,
        failed (an ``errors`` entry quoting it) or printed something the
        parser rejected (an ``errors`` entry).
    """
    out = []
    for key, tool, parser in table:
        result = sources.get(key)
        if result is not None and result[0] != 0:
            errors.append(tool_failed(tool, result))
        out.append(parse_if_ok(sources, key, parser, errors))
    return out


def read_text(path):
    """Text of the file at *path*; ``None`` when it is missing or unreadable."""
    try:
        with open(path, "r") as handle:
            return handle.read()
    except (IOError, OSError, UnicodeDecodeError):
        return None


def parse_modinfo_version(text):
    """Parse ``modinfo -F version <module>``: the version of the kernel module
    file installed for the running kernel (what the next load or boot gets).

    :returns: the version (``str``), or ``None`` when the output is blank or
        not a version (modules built into the distribution kernel often carry
        no version field).
    """
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line if re.match(r"^\d+(?:\.\d+)+", line) else None
    return None


def bare_host(accelerators, install_driver):
    """Whether a host is bare: no device answers through a vendor tool, but the PCI bus
    (``accelerators.pci``) shows accelerators, and the play installs their stack next.

    Such a host is judged on its PCI count now and checked again after the install.

    :param accelerators: the ``accelerator_facts`` summary.
    :param install_driver: the play installs the accelerator stack after preflight.
    """
    acc = accelerators or {}
    return bool(install_driver) and not acc.get("devices") and bool((acc.get("pci") or {}).get("count"))


def stack_vendor(accelerators):
    """Whose driver stack the host needs: the vendor whose tools answered, else the vendor
    whose accelerators the PCI bus shows, else ``"none"``.

    :param accelerators: the ``accelerator_facts`` summary.
    :returns: ``"nvidia"``, ``"amd"``, ``"ascend"`` or ``"none"``.
    """
    acc = accelerators or {}
    vendor = acc.get("vendor") or "none"
    if vendor != "none":
        return vendor
    return (acc.get("pci") or {}).get("vendor") or "none"
