# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Accelerator facts: vendor tool output in, one uniform description out.

Pure Python (standard library only, no Ansible import) so it unit-tests in
milliseconds. Modules are thin doors: :func:`collect` runs the
commands in :data:`COMMANDS` and reads the files in :data:`FILES` through
callables the caller passes in (``AnsibleModule.get_bin_path`` and
``run_command``), and hands the raw results to :func:`summarize`.

Every parser takes a tool's raw stdout (``str``) and returns plain dicts and
lists. Malformed output raises :class:`AcceleratorOutputError`;
:func:`summarize` turns that into an ``errors`` entry, never a crash.

Units: memory is MiB (2**20 bytes) everywhere. Each parser's docstring names
the tool, flag or file a fact comes from and the unit that tool reports.

Result of :func:`summarize` (``ansible_facts.launchcard_accelerators``)::

    {
      "vendor": "nvidia" | "amd" | "ascend" | "none",
      "count": int,                      # len(devices)
      "devices": [{
          "index": int,                  # the id the vendor tool and runtime use
          "model": str | None,           # marketing name as the tool prints it
          "model_id": str | None,        # normalize_model(model), e.g. "h100"
          "memory_mib": int | None,
          "uuid": str | None,
          "bus_id": str | None,          # PCI BDF, "0000:18:00.0", lower case
          "driver_version": str | None,
          "persistence_mode": bool | None,   # NVIDIA only
          "fabric_state": str | None,        # NVIDIA only, see parse_nvidia_fabric
          "health": str | None,              # Ascend only: "ok", "warning", ...
      }, ...],                           # sorted by index
      "models": [str],                   # sorted unique model_id values
      "driver": {
          "installed_version": str | None,
          "loaded_version": str | None,
          "reboot_required": bool | None,    # None: cannot tell
          "fabric_manager_required": bool,
          "imex_required": bool,
          "nvlink5_required": bool,          # nvlsm + NSCQ beside fabric manager (HGX B200/B300)
          "kernel_module": "open" | "proprietary" | None,   # NVIDIA only
          "message": str | None,             # e.g. why vendor is "none"
      },
      "pci": {                           # from sysfs, driver or not (parse_pci_devices)
          "vendor": "nvidia" | "amd" | "ascend" | None,
          "count": int,
          "devices": [{"bus_id": str, "vendor": str, "device_id": str | None}, ...],
      },
      "errors": [str],                   # tool failures, unparsable output
    }

Where the driver facts come from:

* ``installed_version``: NVIDIA ``modinfo -F version nvidia`` (the module
  file the next load gets), else the NVML library version of a
  "Driver/library version mismatch" message, else nvidia-smi's
  ``driver_version`` (NVML refuses to run unless user space matches the
  loaded module, so that is the user-space version). AMD ``modinfo -F
  version amdgpu``. Ascend ``/usr/local/Ascend/driver/version.info``, else
  the ``npu-smi info`` header.
* ``loaded_version``: NVIDIA ``/proc/driver/nvidia/version``, AMD
  ``/sys/module/amdgpu/version``; Ascend the ``Version:`` of the ``npu-smi
  info`` header (npu-smi asks the running driver through DCMI, so after a
  driver ``.run`` upgrade it reports the old driver until the host reboots).
* ``reboot_required``: ``True`` on an NVML version mismatch or when the two
  versions differ (a dotted prefix counts as equal: ``570.124`` ~
  ``570.124.06``); ``None`` when either is unknown.
"""

from __future__ import annotations

import json
import math
import os
import re

VENDORS = ("nvidia", "amd", "ascend")
"""Vendors in the order ``vendor: auto`` tries them."""

VENDOR_TOOLS = {
    "nvidia": ("nvidia-smi",),
    "amd": ("amd-smi", "rocm-smi"),
    "ascend": ("npu-smi",),
}
"""Which executables reveal each vendor. Any one of them is enough."""

NVIDIA_QUERY_FIELDS = (
    "index",
    "name",
    "memory.total",
    "uuid",
    "driver_version",
    "pci.bus_id",
    "persistence_mode",
)

COMMANDS = {
    "nvidia": (
        ("nvidia_smi", ["nvidia-smi", "--query-gpu=" + ",".join(NVIDIA_QUERY_FIELDS), "--format=csv,noheader,nounits"]),
        ("nvidia_fabric", ["nvidia-smi", "--query-gpu=index,fabric.state,fabric.status", "--format=csv,noheader"]),
        ("nvidia_modinfo", ["modinfo", "-F", "version", "nvidia"]),
    ),
    "amd": (
        ("amd_smi_list", ["amd-smi", "list", "--json"]),
        ("amd_smi_static", ["amd-smi", "static", "--asic", "--vram", "--driver", "--json"]),
        ("rocm_smi", ["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--showbus", "--json"]),
        ("amdgpu_modinfo", ["modinfo", "-F", "version", "amdgpu"]),
    ),
    "ascend": (
        ("npu_smi_list", ["npu-smi", "info", "-l"]),
        ("npu_smi_info", ["npu-smi", "info"]),
    ),
}
"""Per vendor, ``(source key, argv)`` pairs. ``argv[0]`` is looked up on the
host; a missing executable leaves that source out. Results go to
:func:`summarize` as ``(rc, stdout, stderr)`` tuples under the source key."""

COMMAND_REQUIRES = {"nvidia_fabric": "nvidia_smi"}
"""Source key -> source key that must have exited 0 first (no point asking a
driver that did not answer the first query a second time)."""

EXTRA_TOOL_DIRS = ("/opt/rocm/bin", "/usr/local/Ascend/driver/tools", "/usr/local/bin")
"""Where vendor installers put their tools when they are not on PATH;
searched after the host's own lookup (see :func:`find_tool`)."""

FILES = {
    "nvidia": (("nvidia_proc_version", "/proc/driver/nvidia/version"),),
    "amd": (("amdgpu_sys_version", "/sys/module/amdgpu/version"),),
    "ascend": (("ascend_version_info", "/usr/local/Ascend/driver/version.info"),),
}
"""Per vendor, ``(source key, path)`` pairs: the file's text goes to
:func:`summarize` under the source key, ``None`` when it does not exist."""

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


NVSWITCH_HGX_MODELS = frozenset(("a100", "a800", "h100", "h800", "h200", "h20", "b100", "b200", "b300"))
"""Models sold on 8-GPU HGX baseboards whose GPUs talk through NVSwitch and so
need ``nvidia-fabricmanager`` at the driver's exact version (CUDA error 802
without it). See :func:`fabric_manager_required` for the full rule."""

NVLINK5_MODELS = frozenset(("b200", "b300"))
"""Blackwell HGX parts whose NVSwitch fabric (NVLink5) also needs the NVLink subnet manager
(``nvlsm``) and NSCQ beside fabric manager."""

IMEX_MODELS = frozenset(("gb200", "gb300"))
"""Grace-Blackwell superchip parts: NVLink domains span trays, managed by the
IMEX daemon instead of a local fabric manager (4 GPUs per node)."""

FABRIC_ACTIVE_STATES = frozenset(("not_started", "in_progress", "completed", "failed"))
"""``fabric_state`` values reported only by GPUs that sit on an NVLink fabric."""

# AMD PCI device ids (as rocm-smi "Card Model" / amd-smi asic.device_id print
# them) whose marketing name is certain, from the pci.ids database. amd-smi
# sometimes reports the ASIC code name ("Aqua Vanjaram") as market_name, so
# the id is the better key.
_AMD_DEVICE_IDS = {
    "0x738c": "mi100",
    "0x738e": "mi100",
    "0x740c": "mi250x",
    "0x740f": "mi210",
    "0x74a0": "mi300a",
    "0x74a1": "mi300x",
    "0x74a2": "mi308x",
    "0x74a5": "mi325x",
    "0x74a9": "mi300x",
    "0x74b5": "mi300x",
    "0x74b9": "mi325x",
    "0x74bd": "mi300x",
}

# Ordered: the first match wins, so longer names come before their prefixes
# (gh200 before h200, l40s before l40, a10g before a10).
_MODEL_PATTERNS = tuple(
    (re.compile(pattern), model_id)
    for pattern, model_id in (
        (r"\bgb300\b", "gb300"),
        (r"\bgb200\b", "gb200"),
        (r"\bgh200\b", "gh200"),
        (r"\bb300\b", "b300"),
        (r"\bb200\b", "b200"),
        (r"\bb100\b", "b100"),
        (r"\bh200\b", "h200"),
        (r"\bh100\b", "h100"),
        (r"\bh800\b", "h800"),
        (r"\bh20\b", "h20"),
        (r"\ba100\b", "a100"),
        (r"\ba800\b", "a800"),
        (r"\bl40s\b", "l40s"),
        (r"\bl40\b", "l40"),
        (r"\bl20\b", "l20"),
        (r"\bl4\b", "l4"),
        (r"\ba40\b", "a40"),
        (r"\ba30\b", "a30"),
        (r"\ba10g\b", "a10g"),
        (r"\ba10\b", "a10"),
        (r"\bv100\b", "v100"),
        (r"\bt4\b", "t4"),
        (r"\brtx pro 6000\b", "rtx_pro_6000"),
        # Ascend: npu-smi prints "910B3", "Ascend910B", "Ascend950PR", "310P3"...
        (r"950\s*pr\b", "ascend_950pr"),
        (r"950\s*dt\b", "ascend_950dt"),
        (r"910\s*b\d*\b", "ascend_910b"),
        (r"910\s*c\b|910_93", "ascend_910c"),
        (r"\bascend\s*910\b|\b910(?:a|proa|prob|premiuma)?\b", "ascend_910"),
        (r"310\s*p\d*\b", "ascend_310p"),
        (r"310\s*b\d*\b", "ascend_310b"),
    )
)
_AMD_MI = re.compile(r"\bmi(\d{3}[a-z]?)\b")
_VENDOR_WORDS = re.compile(r"\b(?:nvidia|amd|instinct|tesla|huawei)\b")

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


# --------------------------------------------------------------------------
# small helpers


def _excerpt(text, limit=200):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _na(value):
    """``None`` for the placeholders tools print instead of a value."""
    if value is None:
        return None
    value = str(value).strip()
    return None if value.lower() in _NA_VALUES else value


def _int(value):
    value = _na(value)
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
    bus_id = _na(bus_id)
    if bus_id is None:
        return None
    match = re.match(r"^(?:([0-9a-fA-F]+):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$", bus_id)
    if not match:
        return bus_id
    domain, bus, device, function = match.groups()
    return "%04x:%02x:%02x.%s" % (int(domain or "0", 16), int(bus, 16), int(device, 16), function)


def _to_mib(value, unit="MB"):
    """Convert a size to MiB. ``MB`` is read as MiB: see parse_amd_smi_static."""
    number = _na(value)
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


def _load_json(text, tool):
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
    raise AcceleratorOutputError(tool, "not JSON: %s" % _excerpt(text))


def _lower_keys(mapping):
    return dict((str(key).strip().lower(), value) for key, value in mapping.items())


def _same_version(first, second):
    """Equal, or one is a dotted prefix of the other (``570.124`` ~ ``570.124.06``)."""
    return first == second or first.startswith(second + ".") or second.startswith(first + ".")


# --------------------------------------------------------------------------
# model names


def normalize_model(name):
    """Map a marketing name to a short model id; never raises.

    ``"NVIDIA H100 80GB HBM3"`` -> ``"h100"``, ``"NVIDIA H200 NVL"`` -> ``"h200"``,
    ``"NVIDIA GB200"`` -> ``"gb200"``, ``"AMD Instinct MI355X"`` -> ``"mi355x"``,
    ``"0x74a1"`` (an AMD PCI device id) -> ``"mi300x"``, ``"910B3"`` ->
    ``"ascend_910b"``, ``"Ascend950PR"`` -> ``"ascend_950pr"``. Form factor is
    not part of the id (H100 SXM and PCIe are both ``h100``); see
    :func:`fabric_manager_required` for where it matters.

    :param name: the name as a tool prints it (``str``; anything else is
        converted with ``str()``).
    :returns: the model id (``str``); an unknown name becomes a lower-case
        slug of itself without vendor words (``"NVIDIA RTX A6000"`` ->
        ``"rtx_a6000"``); ``None`` when *name* is ``None`` or blank.
    """
    if name is None:
        return None
    text = _na(name)
    if text is None:
        return None
    lowered = text.lower()
    if lowered in _AMD_DEVICE_IDS:
        return _AMD_DEVICE_IDS[lowered]
    for pattern, model_id in _MODEL_PATTERNS:
        if pattern.search(lowered):
            return model_id
    match = _AMD_MI.search(lowered)
    if match:
        return "mi" + match.group(1)
    slug = re.sub(r"[^a-z0-9]+", "_", _VENDOR_WORDS.sub(" ", lowered)).strip("_")
    return slug or re.sub(r"[^a-z0-9]+", "_", lowered).strip("_") or "unknown"


def _is_pcie_card(name):
    """H100/H200 NVL and "PCIe" names are PCIe cards, not HGX SXM parts."""
    lowered = (name or "").lower()
    return "pcie" in lowered or bool(re.search(r"\bnvl\b", lowered))


def fabric_manager_required(devices):
    """Whether this host needs ``nvidia-fabricmanager``.

    Rule: some model in :data:`NVSWITCH_HGX_MODELS` (A100/A800/H100/H800/
    H200/H20/B100/B200/B300), counting only SXM parts (names without "PCIe" or
    "NVL"), has either at least 8 GPUs on the host (the HGX 8-GPU baseboard;
    the 4-GPU boards wire NVLink directly, without NVSwitch) or any GPU that
    reports a fabric state (``not_started``/``in_progress``/``completed``/
    ``failed``; only NVSwitch-attached GPUs do), which still catches an
    8-GPU board with a GPU fallen off the bus. GB200/GB300 use IMEX instead
    (:func:`imex_required`).

    :param devices: device dicts as in :func:`summarize` (``model``,
        ``model_id``, ``fabric_state`` are read).
    :returns: ``bool``.
    """
    by_model = {}
    for device in devices:
        model_id = device.get("model_id")
        if model_id in NVSWITCH_HGX_MODELS and not _is_pcie_card(device.get("model")):
            by_model.setdefault(model_id, []).append(device)
    for group in by_model.values():
        if len(group) >= 8 or any(d.get("fabric_state") in FABRIC_ACTIVE_STATES for d in group):
            return True
    return False


def imex_required(devices):
    """Whether this host needs the NVIDIA IMEX daemon: any GB200/GB300 GPU.

    :param devices: device dicts as in :func:`summarize` (``model_id`` is read).
    :returns: ``bool``.
    """
    return any(device.get("model_id") in IMEX_MODELS for device in devices)


def nvlink5_required(devices):
    """Whether this host needs the NVLink5 parts beside fabric manager (``nvlsm``, NSCQ):
    fabric manager is required (:func:`fabric_manager_required`) and a GPU is a B200/B300.

    :param devices: device dicts as in :func:`summarize`.
    :returns: ``bool``.
    """
    return fabric_manager_required(devices) and any(d.get("model_id") in NVLINK5_MODELS for d in devices)


# --------------------------------------------------------------------------
# NVIDIA


def parse_nvidia_smi_gpus(text, errors=None):
    """Parse the GPU list query.

    Source: ``nvidia-smi --query-gpu=index,name,memory.total,uuid,
    driver_version,pci.bus_id,persistence_mode --format=csv,noheader,nounits``
    (see :data:`COMMANDS`), one line per GPU::

        0, NVIDIA H100 80GB HBM3, 81559, GPU-1b0c..., 580.95.05, 00000000:18:00.0, Enabled

    ``memory.total`` is MiB with ``nounits`` (H100 80GB: 81559, H200: 143771).
    ``[N/A]``/``[Not Supported]`` become ``None``; extra spaces are ignored; a
    name containing commas is kept whole (it is the only free-text field).

    :param text: the tool's stdout; empty or blank means no GPUs.
    :param errors: a list to collect lines that are not GPU rows (e.g.
        ``Unable to determine the device handle for GPU0000:3B:00.0: Unknown
        Error``); those lines are then skipped. When ``None``, the first such
        line raises instead.
    :returns: list of dicts with ``index`` (int), ``name`` (str or None),
        ``memory_mib``, ``uuid``, ``driver_version``, ``bus_id`` (normalised,
        see :func:`normalize_bdf`), ``persistence_mode`` (bool or None).
    :raises AcceleratorOutputError: a malformed line while *errors* is None.
    """
    gpus = []
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        parts = [part.strip() for part in line.split(",")]
        index = _int(parts[0]) if len(parts) >= len(NVIDIA_QUERY_FIELDS) else None
        if index is None or not parts[0].strip().isdigit():
            problem = AcceleratorOutputError("nvidia-smi", "line not understood: %s" % _excerpt(line))
            if errors is None:
                raise problem
            errors.append(str(problem))
            continue
        tail = parts[-5:]
        persistence = _na(tail[4])
        gpus.append(
            {
                "index": index,
                "name": _na(", ".join(parts[1:-5])),
                "memory_mib": _int(tail[0]),
                "uuid": _na(tail[1]),
                "driver_version": _na(tail[2]),
                "bus_id": normalize_bdf(tail[3]),
                "persistence_mode": None if persistence is None else persistence.lower() == "enabled",
            }
        )
    return gpus


def parse_nvidia_fabric(text):
    """Parse the NVLink fabric registration state per GPU.

    Source: ``nvidia-smi --query-gpu=index,fabric.state,fabric.status
    --format=csv,noheader``, e.g. ``0, Completed, Success``. States map to
    ``"not_supported"``, ``"not_started"``, ``"in_progress"``,
    ``"completed"`` (status ``Success``) and ``"failed"`` (state Completed
    with any other status); ``[N/A]`` maps to ``None``. Drivers older than the
    field (R525 and before) reject the query (``Field "fabric.state" is not a
    valid field to query.``): that, or empty output, gives ``{}`` (unknown).

    :param text: the tool's stdout (or stdout + stderr).
    :returns: ``{index (int): state (str or None)}``.
    :raises AcceleratorOutputError: a line that is not ``index, state, status``.
    """
    text = text or ""
    if "not a valid field" in text.lower():
        return {}
    states = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 3 or not parts[0].isdigit():
            raise AcceleratorOutputError("nvidia-smi fabric query", "line not understood: %s" % _excerpt(line))
        state = (parts[1].strip("[]") or "").strip().lower()
        status = parts[2].strip("[]").strip().lower()
        if state in ("n/a", ""):
            value = None
        elif state == "completed":
            value = "completed" if status in ("success", "n/a", "") else "failed"
        else:
            value = re.sub(r"[^a-z0-9]+", "_", state).strip("_")
        states[int(parts[0])] = value
    return states


def parse_nvidia_proc_version(text):
    """Parse the loaded NVIDIA kernel module version.

    Source: the file ``/proc/driver/nvidia/version`` (exists only while the
    module is loaded). Its first line is either the open module::

        NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@...)  ...

    or the proprietary one::

        NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Wed Feb 28 ...

    :returns: ``{"version": "580.95.05", "kernel_module": "open" | "proprietary"}``.
    :raises AcceleratorOutputError: no ``NVRM version`` line with a version.
    """
    for line in (text or "").splitlines():
        if "NVRM version" not in line:
            continue
        match = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)", line)
        if match:
            return {
                "version": match.group(1),
                "kernel_module": "open" if "Open Kernel Module" in line else "proprietary",
            }
    raise AcceleratorOutputError("/proc/driver/nvidia/version", "no NVRM version line: %s" % _excerpt(text or ""))


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


def parse_nvml_mismatch(text):
    """Recognise the user-space/kernel mismatch that follows a driver upgrade
    without a reboot. nvidia-smi then exits non-zero with::

        Failed to initialize NVML: Driver/library version mismatch
        NVML library version: 570.124

    :returns: ``None`` when *text* is not that message; otherwise
        ``{"library_version": "570.124" | None}`` (the installed user-space
        version, major.minor only on recent drivers).
    """
    if not text or "driver/library version mismatch" not in text.lower():
        return None
    match = re.search(r"NVML library version:\s*(\d+(?:\.\d+)*)", text)
    return {"library_version": match.group(1) if match else None}


# --------------------------------------------------------------------------
# AMD


def _amd_entries(data, tool):
    if isinstance(data, dict) and isinstance(data.get("gpu_data"), list):
        data = data["gpu_data"]
    elif isinstance(data, dict) and "gpu" in data:
        data = [data]
    if not isinstance(data, list) or not all(isinstance(entry, dict) for entry in data):
        raise AcceleratorOutputError(tool, "expected a list of GPU objects or {\"gpu_data\": [...]}, got %s" % _excerpt(json.dumps(data)))
    return data


def _amd_index(entry, position, tool):
    index = _int(entry.get("gpu", position))
    if index is None:
        raise AcceleratorOutputError(tool, "GPU entry without a usable \"gpu\" index: %s" % _excerpt(json.dumps(entry)))
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
    entries = _amd_entries(_load_json(text, "amd-smi list"), "amd-smi list")
    return [
        {
            "index": _amd_index(entry, position, "amd-smi list"),
            "bus_id": normalize_bdf(entry.get("bdf")),
            "uuid": _na(entry.get("uuid")),
        }
        for position, entry in enumerate(entries)
    ]


def _amd_vram_mib(vram):
    if not isinstance(vram, dict):
        return None
    vram = _lower_keys(vram)
    size = vram.get("size", vram.get("vram_size", vram.get("vram_size_mb")))
    if isinstance(size, dict):
        size = _lower_keys(size)
        return _to_mib(size.get("value"), size.get("unit") or "MB")
    if isinstance(size, str):
        match = re.match(r"^\s*([\d.]+)\s*([A-Za-z]*)\s*$", size)
        return _to_mib(match.group(1), match.group(2) or "MB") if match else None
    return _to_mib(size, "MB")


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
    entries = _amd_entries(_load_json(text, "amd-smi static"), "amd-smi static")
    result = {}
    for position, entry in enumerate(entries):
        asic = _lower_keys(entry.get("asic")) if isinstance(entry.get("asic"), dict) else {}
        driver = _lower_keys(entry.get("driver")) if isinstance(entry.get("driver"), dict) else {}
        device_id = _na(asic.get("device_id"))
        result[_amd_index(entry, position, "amd-smi static")] = {
            "memory_mib": _amd_vram_mib(entry.get("vram")),
            "market_name": _na(asic.get("market_name")),
            "device_id": device_id.lower() if device_id else None,
            "driver_version": _na(driver.get("version", driver.get("driver_version"))),
        }
    return result


def parse_rocm_smi_product(text):
    """Parse rocm-smi's per-card product facts.

    Source: ``rocm-smi --showproductname [--showmeminfo vram] [--showbus]
    --json``: ``{"card0": {...}, "card1": {...}, "system": {...}}``, possibly
    after warning lines. Keys vary in case across releases
    (``"Card Series"``/``"Card series"``, ``"Card Model"``/``"Card model"``):
    they are matched case-insensitively. The name is ``Card Series``, else
    ``Card Model`` (often a PCI id like ``0x74a1``, which
    :func:`normalize_model` still understands). ``VRAM Total Memory (B)`` is
    bytes (converted to MiB); ``PCI Bus`` is the BDF. Keys other than
    ``cardN`` are ignored.

    :returns: ``{index (N of cardN): {"name": str | None, "memory_mib": int |
        None, "bus_id": str | None}}``.
    :raises AcceleratorOutputError: not JSON or not an object of objects.
    """
    data = _load_json(text, "rocm-smi")
    if not isinstance(data, dict):
        raise AcceleratorOutputError("rocm-smi", "expected {\"cardN\": {...}}, got %s" % _excerpt(json.dumps(data)))
    cards = {}
    for key, value in data.items():
        match = re.match(r"^card(\d+)$", str(key).strip(), re.IGNORECASE)
        if not match:
            continue
        if not isinstance(value, dict):
            raise AcceleratorOutputError("rocm-smi", "%s is not an object" % key)
        fields = _lower_keys(value)
        cards[int(match.group(1))] = {
            "name": _na(fields.get("card series")) or _na(fields.get("card model")),
            "memory_mib": _to_mib(fields.get("vram total memory (b)"), "B"),
            "bus_id": normalize_bdf(fields.get("pci bus")),
        }
    return cards


# --------------------------------------------------------------------------
# Ascend


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
            total = _int(value)
        elif key == "npu id":
            npu_id = _int(value)
            if npu_id is not None:
                npus.append({"npu_id": npu_id, "chip_count": None})
        elif key == "chip count" and npus:
            npus[-1]["chip_count"] = _int(value)
    if total is None and not npus and (text or "").strip():
        raise AcceleratorOutputError("npu-smi info -l", "no \"Total Count\" or \"NPU ID\": %s" % _excerpt(text))
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
                "health": _na(cells[1]).lower() if _na(cells[1]) else None,
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
        raise AcceleratorOutputError("npu-smi info", "no device rows in table: %s" % _excerpt(text))
    return {"version": version, "chips": chips}


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


def parse_pci_devices(entries):
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
    """
    devices = []
    for entry in entries or ():
        vendor = PCI_VENDORS.get(str(entry.get("vendor") or "").strip().lower())
        klass = str(entry.get("class") or "").strip().lower()[:6]
        if vendor and klass in PCI_CLASSES[vendor]:
            devices.append({"bus_id": normalize_bdf(entry.get("bus_id")), "vendor": vendor,
                            "device_id": str(entry.get("device") or "").strip().lower() or None})
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


# --------------------------------------------------------------------------
# summary


def _device(index, model=None, memory_mib=None, uuid=None, bus_id=None, driver_version=None,
            persistence_mode=None, fabric_state=None, health=None, model_id=None):
    return {
        "index": index,
        "model": model,
        "model_id": model_id if model_id is not None else normalize_model(model),
        "memory_mib": memory_mib,
        "uuid": uuid,
        "bus_id": bus_id,
        "driver_version": driver_version,
        "persistence_mode": persistence_mode,
        "fabric_state": fabric_state,
        "health": health,
    }


def _tool_text(result):
    out, err = result[1], result[2]
    return "\n".join(part.strip() for part in (out or "", err or "") if part and part.strip())


def _tool_failed(tool, result):
    rc = result[0]
    message = _excerpt(_tool_text(result), 300) or "no output"
    return "%s exited %s: %s" % (tool, rc, message)


def _empty_driver():
    return {
        "installed_version": None,
        "loaded_version": None,
        "reboot_required": None,
        "fabric_manager_required": False,
        "imex_required": False,
        "nvlink5_required": False,
        "kernel_module": None,
        "message": None,
    }


def _ok(sources, key):
    result = sources.get(key)
    return result is not None and result[0] == 0


def _summarize_nvidia(sources, errors):
    driver = _empty_driver()
    devices = []
    mismatch = None
    main = sources.get("nvidia_smi")
    if main is None:
        errors.append("nvidia-smi not found")
    elif main[0] != 0:
        errors.append(_tool_failed("nvidia-smi", main))
        mismatch = parse_nvml_mismatch(_tool_text(main))
    else:
        gpus = parse_nvidia_smi_gpus(main[1], errors)
        if not gpus:
            errors.append("nvidia-smi listed no GPUs")
        fabric = {}
        if _ok(sources, "nvidia_fabric"):
            try:
                fabric = parse_nvidia_fabric(sources["nvidia_fabric"][1])
            except AcceleratorOutputError as exc:
                errors.append(str(exc))
        for gpu in gpus:
            devices.append(
                _device(
                    gpu["index"],
                    model=gpu["name"],
                    memory_mib=gpu["memory_mib"],
                    uuid=gpu["uuid"],
                    bus_id=gpu["bus_id"],
                    driver_version=gpu["driver_version"],
                    persistence_mode=gpu["persistence_mode"],
                    fabric_state=fabric.get(gpu["index"]),
                )
            )

    proc = sources.get("nvidia_proc_version")
    if proc is not None:
        try:
            loaded = parse_nvidia_proc_version(proc)
            driver["loaded_version"] = loaded["version"]
            driver["kernel_module"] = loaded["kernel_module"]
        except AcceleratorOutputError as exc:
            errors.append(str(exc))

    installed = parse_modinfo_version(sources["nvidia_modinfo"][1]) if _ok(sources, "nvidia_modinfo") else None
    if installed is None and mismatch:
        installed = mismatch["library_version"]
    if installed is None:
        installed = next((d["driver_version"] for d in devices if d["driver_version"]), None)
    driver["installed_version"] = installed

    if mismatch is not None:
        driver["reboot_required"] = True
    elif driver["installed_version"] and driver["loaded_version"]:
        driver["reboot_required"] = not _same_version(driver["installed_version"], driver["loaded_version"])
    if main is not None and main[0] != 0 and proc is None:
        driver["message"] = "the NVIDIA kernel module is not loaded (no /proc/driver/nvidia/version)"
    return devices, driver


def _parse_tools(sources, errors, table):
    """Parse each available tool result with its parser.

    :param table: ``(source key, tool name for messages, parser)`` triples.
    :returns: one parsed value per triple, None where the tool was absent,
        failed (an ``errors`` entry quoting it) or printed something the
        parser rejected (an ``errors`` entry).
    """
    out = []
    for key, tool, parser in table:
        result = sources.get(key)
        parsed = None
        if result is not None and result[0] != 0:
            errors.append(_tool_failed(tool, result))
        elif result is not None:
            try:
                parsed = parser(result[1])
            except AcceleratorOutputError as exc:
                errors.append(str(exc))
        out.append(parsed)
    return out


def _summarize_amd(sources, errors):
    driver = _empty_driver()
    listed, static, rocm = _parse_tools(sources, errors, (
        ("amd_smi_list", "amd-smi list", parse_amd_smi_list),
        ("amd_smi_static", "amd-smi static", parse_amd_smi_static),
        ("rocm_smi", "rocm-smi", parse_rocm_smi_product),
    ))
    if sources.get("amd_smi_list") is None and sources.get("rocm_smi") is None:
        errors.append("neither amd-smi nor rocm-smi found")

    static = static or {}
    rocm = rocm or {}
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
        # Best human name first; the first name (or PCI device id) that maps
        # to a known model decides model_id ("Aqua Vanjaram" + 0x74a1 -> mi300x).
        names = [name for name in (card.get("name"), facts.get("market_name")) if name]
        model = names[0] if names else facts.get("device_id")
        known = [normalize_model(name) for name in names + [facts.get("device_id")] if name]
        model_id = next((candidate for candidate in known if _is_known_model(candidate)), normalize_model(model))
        devices.append(
            _device(
                gpu["index"],
                model=model,
                model_id=model_id,
                memory_mib=facts.get("memory_mib") or card.get("memory_mib"),
                uuid=gpu["uuid"],
                bus_id=gpu["bus_id"],
                driver_version=facts.get("driver_version"),
            )
        )

    sys_version = sources.get("amdgpu_sys_version")
    driver["loaded_version"] = parse_modinfo_version(sys_version) if sys_version else None
    driver["installed_version"] = (
        parse_modinfo_version(sources["amdgpu_modinfo"][1]) if _ok(sources, "amdgpu_modinfo") else None
    )
    if driver["installed_version"] and driver["loaded_version"]:
        driver["reboot_required"] = not _same_version(driver["installed_version"], driver["loaded_version"])
    return devices, driver


_KNOWN_MODEL_IDS = frozenset([pair[1] for pair in _MODEL_PATTERNS] + list(_AMD_DEVICE_IDS.values()))


def _is_known_model(model_id):
    return model_id in _KNOWN_MODEL_IDS or bool(re.match(r"^mi\d{3}[a-z]?$", model_id or ""))


def _summarize_ascend(sources, errors):
    driver = _empty_driver()
    listing, table = _parse_tools(sources, errors, (
        ("npu_smi_list", "npu-smi info -l", parse_npu_smi_list),
        ("npu_smi_info", "npu-smi info", parse_npu_smi_info),
    ))
    if sources.get("npu_smi_list") is None and sources.get("npu_smi_info") is None:
        errors.append("npu-smi not found")

    devices = []
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
                _device(
                    chip["phy_id"] if chip["phy_id"] is not None else chip["npu_id"],
                    model=chip["name"],
                    model_id=model_id,
                    memory_mib=chip["memory_mib"],
                    bus_id=chip["bus_id"],
                    driver_version=table["version"],
                    health=chip["health"],
                )
            )
    elif listing is not None:
        for npu in listing["npus"]:
            devices.append(_device(npu["npu_id"]))
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
        driver["reboot_required"] = not _same_version(driver["installed_version"], driver["loaded_version"])
    elif driver["installed_version"] is None and table is not None:
        driver["installed_version"] = table["version"]
    return devices, driver


_SUMMARIZERS = {"nvidia": _summarize_nvidia, "amd": _summarize_amd, "ascend": _summarize_ascend}


def candidate_vendors(found_tools):
    """Vendors whose tools are present, in :data:`VENDORS` order.

    :param found_tools: names of executables found on the host (any
        iterable of ``str``, e.g. ``{"nvidia-smi"}``).
    :returns: list of vendor names; empty when no tool is present.
    """
    found = set(found_tools)
    return [vendor for vendor in VENDORS if any(tool in found for tool in VENDOR_TOOLS[vendor])]


def summarize(vendor, sources=None):
    """Build the uniform accelerator facts for one vendor.

    :param vendor: ``"nvidia"``, ``"amd"``, ``"ascend"`` or ``"none"``.
    :param sources: raw inputs keyed by the source keys of :data:`COMMANDS`
        and :data:`FILES` for that vendor. A command result is the
        ``(rc, stdout, stderr)`` tuple ``run_command`` returns; a file is its
        text. A key that is absent or ``None`` means "tool not found" / "file
        does not exist". Example::

            {"nvidia_smi": (0, "0, NVIDIA H100 80GB HBM3, 81559, ...", ""),
             "nvidia_fabric": (0, "0, Completed, Success", ""),
             "nvidia_proc_version": "NVRM version: ..."}

    :returns: the dict described in this module's docstring. Never raises for
        bad tool output: a tool that exits non-zero or prints something
        unparsable becomes an ``errors`` entry (quoting the tool), and the
        devices that could be read are still returned.
    :raises ValueError: *vendor* is not one of the four names (a programming
        error, not a host problem).
    """
    sources = dict(sources or {})
    errors = []
    pci = parse_pci_devices(sources.get("pci"))
    if vendor == "none":
        devices, driver = [], _empty_driver()
        driver["message"] = "no accelerator tool found (looked for %s)" % ", ".join(
            tool for vendor_name in VENDORS for tool in VENDOR_TOOLS[vendor_name]
        )
        if pci["vendor"]:
            driver["message"] += "; the PCI bus shows %d %s accelerator(s): no driver installed" % (
                pci["count"], pci["vendor"])
    elif vendor in _SUMMARIZERS:
        devices, driver = _SUMMARIZERS[vendor](sources, errors)
    else:
        raise ValueError("unknown vendor %r (expected one of %s or none)" % (vendor, ", ".join(VENDORS)))
    devices.sort(key=lambda device: device["index"])
    driver["fabric_manager_required"] = fabric_manager_required(devices)
    driver["imex_required"] = imex_required(devices)
    driver["nvlink5_required"] = nvlink5_required(devices)
    return {
        "vendor": vendor,
        "count": len(devices),
        "devices": devices,
        "models": sorted(set(d["model_id"] for d in devices if d["model_id"])),
        "driver": driver,
        "pci": pci,
        "errors": errors,
    }


# --------------------------------------------------------------------------
# collection (the host side, with the host access injected)


def read_text(path):
    """Text of the file at *path*; ``None`` when it is missing or unreadable."""
    try:
        with open(path, "r") as handle:
            return handle.read()
    except (IOError, OSError, UnicodeDecodeError):
        return None


def find_tool(name, which, extra_dirs=None):
    """Locate executable *name*.

    :param which: ``which(name) -> path | None``, the host's own lookup
        (``AnsibleModule.get_bin_path`` searches PATH and the sbin dirs).
    :param extra_dirs: directories tried afterwards; default
        :data:`EXTRA_TOOL_DIRS`.
    :returns: the path (``str``) or ``None``.
    """
    path = which(name)
    if path:
        return path
    for directory in EXTRA_TOOL_DIRS if extra_dirs is None else extra_dirs:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def collect_sources(vendor, which, run, read=None, tools=None):
    """Run one vendor's :data:`COMMANDS` and read its :data:`FILES`.

    :param vendor: ``"nvidia"``, ``"amd"`` or ``"ascend"``.
    :param which: as in :func:`find_tool`.
    :param run: ``run(argv list) -> (rc, stdout, stderr)``; called with an
        absolute ``argv[0]`` and never through a shell
        (``AnsibleModule.run_command`` fits).
    :param read: ``read(path) -> str | None``; default :func:`read_text`.
    :param tools: optional ``{name: path | None}`` already looked up.
    :returns: the *sources* mapping :func:`summarize` takes. A command whose
        executable is missing, or whose prerequisite in
        :data:`COMMAND_REQUIRES` did not exit 0, is left out.
    """
    read = read or read_text
    tools = dict(tools or {})
    sources = {}
    for key, argv in COMMANDS[vendor]:
        required = COMMAND_REQUIRES.get(key)
        if required and (sources.get(required) is None or sources[required][0] != 0):
            continue
        if argv[0] not in tools:
            tools[argv[0]] = find_tool(argv[0], which)
        if tools[argv[0]]:
            rc, out, err = run([tools[argv[0]]] + list(argv[1:]))
            sources[key] = (rc, out, err)
    for key, path in FILES[vendor]:
        text = read(path)
        if text is not None:
            sources[key] = text
    return sources


def collect(vendor, which, run, read=None, pci_dir=None):
    """Gather and summarise accelerator facts on this host.

    :param vendor: ``"auto"`` or one of :data:`VENDORS`. With ``"auto"``
        the vendors whose tools are present (:func:`candidate_vendors`) are
        tried in order; the first that lists at least one device wins, else
        the first one tried is reported (with its errors); with no tool at
        all the result is ``summarize("none")``. A named vendor is reported
        even when its tools are missing (``count`` 0, an ``errors`` entry).
    :param which: ``which(name) -> path | None`` (``AnsibleModule.get_bin_path``).
    :param run: ``run(argv) -> (rc, stdout, stderr)`` (``AnsibleModule.run_command``).
    :param read: ``read(path) -> str | None``; default :func:`read_text`.
    :param pci_dir: the PCI devices directory (:func:`read_pci_devices`);
        ``None`` for :data:`PCI_DEVICES_DIR`, ``""`` to skip the PCI bus.
    :returns: the :func:`summarize` result.
    :raises ValueError: *vendor* is not ``"auto"`` or a known vendor.
    """
    if vendor != "auto" and vendor not in VENDORS:
        raise ValueError("unknown vendor %r (expected auto or one of %s)" % (vendor, ", ".join(VENDORS)))
    tools = {}
    for vendor_name in VENDORS:
        for name in VENDOR_TOOLS[vendor_name]:
            tools[name] = find_tool(name, which)
    vendors = candidate_vendors(name for name, path in tools.items() if path) if vendor == "auto" else [vendor]
    pci_dir = PCI_DEVICES_DIR if pci_dir is None else pci_dir
    pci = read_pci_devices(pci_dir, read) if pci_dir else None
    summary = None
    for vendor_name in vendors:
        sources = collect_sources(vendor_name, which, run, read, tools)
        sources["pci"] = pci
        attempt = summarize(vendor_name, sources)
        if summary is None:
            summary = attempt
        if attempt["count"] > 0:
            return attempt
    return summary if summary is not None else summarize("none", {"pci": pci})
