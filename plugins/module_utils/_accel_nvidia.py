# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA: nvidia-smi, the NVLink fabric query, /proc/driver/nvidia/version and modinfo in;
GPU devices and the driver state out; which host services an NVIDIA host needs.

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
    parse_if_ok,
    parse_modinfo_version,
    parse_tools,
    same_version,
    to_int,
    tool_failed,
    tool_ok,
    tool_text,
)
from ansible_collections.launchcard.inference.plugins.module_utils._accel_health import (
    ACTION_RESET,
    health_word,
    lost_gpus,
    parse_nvidia_smi_xml,
    reset_required_rows,
)
from ansible_collections.launchcard.inference.plugins.module_utils._accel_tables import (
    normalize_model,
    FABRIC_ACTIVE_STATES,
    IMEX_MODELS,
    NVLINK5_MODELS,
    NVSWITCH_HGX_MODELS,
)

NVIDIA_QUERY_FIELDS = (
    "index",
    "name",
    "memory.total",
    "uuid",
    "driver_version",
    "pci.bus_id",
    "persistence_mode",
)

NVIDIA_FABRIC_FIELDS = ("fabric.state", "fabric.status")
"""Asked in the same ``--query-gpu`` call as :data:`NVIDIA_QUERY_FIELDS` (each ``nvidia-smi`` run initialises NVML
on every GPU); :func:`split_fabric_columns` hands them to :func:`parse_nvidia_fabric`."""

# what nvidia-smi prints for a field its driver does not know: Field "fabric.state" is not a valid field to query.
_NOT_A_FIELD = "not a valid field"


def gpu_query(fields):
    """``nvidia-smi``'s arguments for *fields* of every GPU, one CSV line each, no header, no units."""
    return ["--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]


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
        index = to_int(parts[0]) if len(parts) >= len(NVIDIA_QUERY_FIELDS) else None
        if index is None or not parts[0].strip().isdigit():
            problem = AcceleratorOutputError("nvidia-smi", "line not understood: %s" % excerpt(line))
            if errors is None:
                raise problem
            errors.append(str(problem))
            continue
        tail = parts[-5:]
        persistence = na(tail[4])
        gpus.append(
            {
                "index": index,
                "name": na(", ".join(parts[1:-5])),
                "memory_mib": to_int(tail[0]),
                "uuid": na(tail[1]),
                "driver_version": na(tail[2]),
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
    if _NOT_A_FIELD in text.lower():
        return {}
    states = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 3 or not parts[0].isdigit():
            raise AcceleratorOutputError("nvidia-smi fabric query", "line not understood: %s" % excerpt(line))
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


def fabric_fields_rejected(result):
    """Whether *result* (``(rc, stdout, stderr)``) is a driver's refusal of the fabric fields.

    Drivers older than the fields (R525 and before) reject the whole query: ``Field "fabric.state" is not a valid
    field to query.`` (the wording :func:`parse_nvidia_fabric` reads), and exit non-zero.
    """
    text = tool_text(result)
    return result[0] != 0 and _NOT_A_FIELD in text.lower() and "fabric." in text


def split_fabric_columns(result, rerun):
    """Split one GPU query that also asked :data:`NVIDIA_FABRIC_FIELDS` into the GPU list and the fabric query.

    :param result: ``(rc, stdout, stderr)`` of ``nvidia-smi --query-gpu=<NVIDIA_QUERY_FIELDS>,fabric.state,
        fabric.status --format=csv,noheader,nounits``.
    :param rerun: ``rerun(argv tail) -> (rc, stdout, stderr)``: runs ``nvidia-smi`` again, only on a driver that
        rejected the fabric fields (:func:`fabric_fields_rejected`), for the GPU list alone.
    :returns: ``{"nvidia_smi": result}`` with the two last columns of every GPU row cut off, and
        ``"nvidia_fabric"``: ``index, state, status`` per GPU row (:func:`parse_nvidia_fabric`); a failed query
        gives ``nvidia_smi`` alone, as it is; on a driver without the fields ``nvidia_fabric`` is its refusal
        (unknown fabric) and ``nvidia_smi`` the list query's own answer.
    """
    if fabric_fields_rejected(result):
        return {"nvidia_smi": rerun(gpu_query(NVIDIA_QUERY_FIELDS)), "nvidia_fabric": result}
    rc, out, err = result
    if rc != 0:
        return {"nvidia_smi": result}
    rows, fabric = [], []
    for line in (out or "").splitlines():
        first = line.split(",", 1)[0].strip()
        # the name may hold commas, the two fabric columns never do: cut them from the right
        if first.isdigit() and line.count(",") >= len(NVIDIA_QUERY_FIELDS) + len(NVIDIA_FABRIC_FIELDS) - 1:
            head, state, status = line.rsplit(",", 2)
            rows.append(head)
            fabric.append("%s,%s,%s" % (first, state, status))
        else:
            rows.append(line)
    return {"nvidia_smi": (rc, "".join(row + "\n" for row in rows), err),
            "nvidia_fabric": (rc, "".join(row + "\n" for row in fabric), err)}


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
    raise AcceleratorOutputError("/proc/driver/nvidia/version", "no NVRM version line: %s" % excerpt(text or ""))


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


def add_health(device, facts):
    """Fill a device's ``health`` (``ok``/``warning``/``error``), ``health_issues``, ``memory_reserved_mib``,
    ``memory_free_mib`` and ``processes`` from its ``nvidia-smi -q -x`` facts (``_accel_health``); without them
    (a driver that did not answer the query) ``health`` stays None."""
    if not facts:
        return
    device["health_issues"] = facts["issues"]
    device["health"] = health_word(facts["issues"])
    device["memory_reserved_mib"] = facts["memory"]["reserved_mib"]
    device["memory_free_mib"] = facts["memory"]["free_mib"]
    device["processes"] = facts["processes"]


def summarize_nvidia(sources, errors):
    driver = empty_driver()
    devices = []
    mismatch = None
    main = sources.get("nvidia_smi")
    if main is None:
        errors.append("nvidia-smi not found")
    elif main[0] != 0:
        errors.append(tool_failed("nvidia-smi", main))
        mismatch = parse_nvml_mismatch(tool_text(main))
    else:
        gpus = parse_nvidia_smi_gpus(main[1], errors)
        if not gpus:
            errors.append("nvidia-smi listed no GPUs")
        fabric = parse_if_ok(sources, "nvidia_fabric", parse_nvidia_fabric, errors) or {}
        health, = parse_tools(sources, errors, (("nvidia_smi_q", "nvidia-smi -q -x", parse_nvidia_smi_xml),))
        health = health or {}
        for gpu in gpus:
            devices.append(
                make_device(
                    gpu["index"],
                    model=gpu["name"],
                    model_id=normalize_model(gpu["name"]),
                    memory_mib=gpu["memory_mib"],
                    uuid=gpu["uuid"],
                    bus_id=gpu["bus_id"],
                    driver_version=gpu["driver_version"],
                    persistence_mode=gpu["persistence_mode"],
                    fabric_state=fabric.get(gpu["index"]),
                )
            )
            add_health(devices[-1], health.get(gpu["bus_id"]))
        for index in reset_required_rows(main[1]):
            for device in devices:
                if device["index"] == index:
                    device["health_issues"] = list(device["health_issues"]) + [{
                        "severity": "error", "what": "nvidia-smi reports [GPU requires reset]", "action": ACTION_RESET}]
                    device["health"] = "error"

    # GPUs the tool lists no row for (NVIDIA/dcgm-exporter#604): named by bus id, for preflight's gpu_health
    driver["lost_gpus"] = lost_gpus(errors)
    proc = sources.get("nvidia_proc_version")
    if proc is not None:
        try:
            loaded = parse_nvidia_proc_version(proc)
            driver["loaded_version"] = loaded["version"]
            driver["kernel_module"] = loaded["kernel_module"]
        except AcceleratorOutputError as exc:
            errors.append(str(exc))

    installed = parse_modinfo_version(sources["nvidia_modinfo"][1]) if tool_ok(sources, "nvidia_modinfo") else None
    if installed is None and mismatch:
        installed = mismatch["library_version"]
    if installed is None:
        installed = next((d["driver_version"] for d in devices if d["driver_version"]), None)
    driver["installed_version"] = installed

    if mismatch is not None:
        driver["reboot_required"] = True
    elif driver["installed_version"] and driver["loaded_version"]:
        driver["reboot_required"] = not same_version(driver["installed_version"], driver["loaded_version"])
    service = sources.get("nvidia_fabricmanager_service")
    if service is not None:
        driver["fabric_manager_active"] = service[0] == 0 and (service[1] or "").strip().splitlines()[:1] == ["active"]
    if main is not None and main[0] != 0 and proc is None:
        driver["message"] = "the NVIDIA kernel module is not loaded (no /proc/driver/nvidia/version)"
    return devices, driver


_TRUE = ("true", "yes", "on", "1", "y", "t")
_FALSE = ("false", "no", "off", "0", "n", "f")


def tri_state(value, name):
    """Read an ``auto``/true/false setting (a bool, or a string Ansible would read as one).

    :returns: ``None`` for ``auto`` (decide from the facts), else the bool.
    :raises ValueError: anything else, naming the setting.
    """
    if isinstance(value, bool):
        return value
    text = str(value if value is not None else "auto").strip().lower()
    if text == "auto":
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError("%s must be auto, true or false, got %r" % (name, value))


def services_wanted(driver, fabric_manager="auto", nvlink5="auto", imex="auto"):
    """Which NVIDIA host services the stack installs and starts.

    Each setting is ``auto`` (the facts decide: ``driver.fabric_manager_required``,
    ``driver.nvlink5_required``, ``driver.imex_required``, see
    :func:`fabric_manager_required`, :func:`nvlink5_required`, :func:`imex_required`)
    or a bool that overrides them (``roles/nvidia``'s ``nvidia_fabric_manager``,
    ``nvidia_nvlink5``, ``nvidia_imex``).

    :param driver: the summary's ``driver`` dict.
    :returns: ``{"fabric_manager": bool, "nvlink5": bool, "imex": bool}``.
    :raises ValueError: a setting that is not auto/true/false.
    """
    driver = driver or {}
    out = {}
    for key, value, fact in (("fabric_manager", fabric_manager, "fabric_manager_required"),
                             ("nvlink5", nvlink5, "nvlink5_required"), ("imex", imex, "imex_required")):
        forced = tri_state(value, key)
        out[key] = bool(driver.get(fact)) if forced is None else forced
    return out
