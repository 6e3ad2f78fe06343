# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Accelerator facts: vendor tool output in, one uniform description out.

This file collects (runs the tools, reads the files) and summarises; the parsers
live one file per vendor (``_accel_nvidia``, ``_accel_amd``, ``_accel_ascend``), the
PCI bus and the PCI id database in ``_accel_pci``, model names and the model sets
in ``_accel_tables``, shared helpers in ``_accel_common``.

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
          "model_id": str | None,        # e.g. "h100"; AMD: by PCI device id (pci.ids)
          "memory_mib": int | None,
          "uuid": str | None,
          "bus_id": str | None,          # PCI BDF, "0000:18:00.0", lower case
          "driver_version": str | None,
          "persistence_mode": bool | None,   # NVIDIA only
          "fabric_state": str | None,        # NVIDIA only, see parse_nvidia_fabric
          "health": str | None,              # NVIDIA: "ok", "warning", "error" (nvidia-smi -q -x); Ascend: npu-smi's
          "health_issues": [{"severity", "what", "action"}],  # NVIDIA, AMD (ECC): why health is not ok
          "memory_reserved_mib": int | None, # NVIDIA: reserved by driver and firmware; Ascend: used by no process
          "memory_free_mib": int | None,     # NVIDIA, Ascend
          "processes": [{"pid", "name", "used_mib", "type"}],  # NVIDIA, Ascend: what holds the device now
      }, ...],                           # sorted by index
      "models": [str],                   # sorted unique model_id values
      "driver": {
          "installed_version": str | None,
          "loaded_version": str | None,
          "reboot_required": bool | None,    # None: cannot tell
          "fabric_manager_required": bool,
          "fabric_manager_active": bool | None,   # NVIDIA: systemctl is-active nvidia-fabricmanager
          "runtime_version": str | None,     # AMD: ROCm release, Ascend: CANN toolkit release
          "imex_required": bool,
          "nvlink5_required": bool,          # nvlsm + NSCQ beside fabric manager (HGX B200/B300)
          "kernel_module": "open" | "proprietary" | None,   # NVIDIA only
          "message": str | None,             # e.g. why vendor is "none"
          "lost_gpus": [str],                # NVIDIA: bus ids nvidia-smi cannot reach ("Unable to determine ...")
      },
      "pci": {                           # from sysfs, driver or not (parse_pci_devices)
          "vendor": "nvidia" | "amd" | "ascend" | None,
          "count": int,
          "devices": [{"bus_id": str, "vendor": str, "device_id": str | None, "name": str | None}, ...],
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
* ``fabric_manager_active``: NVIDIA ``systemctl is-active
  nvidia-fabricmanager.service`` (``None`` without systemctl).
* ``runtime_version``: AMD ``/opt/rocm/.info/version`` (the ROCm release,
  build suffix dropped: ``6.2.0-66`` -> ``6.2.0``); Ascend the ``version=`` of
  CANN's ``ascend_toolkit_install.info`` (x86_64 or aarch64).
* ``reboot_required``: ``True`` on an NVML version mismatch or when the two
  versions differ (a dotted prefix counts as equal: ``570.124`` ~
  ``570.124.06``); ``None`` when either is unknown.
"""

from __future__ import annotations

import os

from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import empty_driver, read_text
from ansible_collections.launchcard.inference.plugins.module_utils._accel_nvidia import (
    NVIDIA_FABRIC_FIELDS,
    NVIDIA_QUERY_FIELDS,
    fabric_manager_required,
    gpu_query,
    imex_required,
    nvlink5_required,
    split_fabric_columns,
    summarize_nvidia,
)
from ansible_collections.launchcard.inference.plugins.module_utils._accel_pci import (
    PCI_DEVICES_DIR,
    PCI_IDS_PATHS,
    parse_pci_devices,
    read_pci_devices,
    read_pci_ids,
)
from ansible_collections.launchcard.inference.plugins.module_utils._accel_tables import VENDOR_TOOLS, VENDORS

COMMANDS = {
    "nvidia": (
        # the GPU list and the NVLink fabric columns in one call; split into nvidia_smi and nvidia_fabric (SPLITS)
        ("nvidia_smi", ["nvidia-smi"] + gpu_query(NVIDIA_QUERY_FIELDS + NVIDIA_FABRIC_FIELDS)),
        # health, reserved and free memory and the processes of every GPU in one call (_accel_health)
        ("nvidia_smi_q", ["nvidia-smi", "-q", "-x"]),
        ("nvidia_modinfo", ["modinfo", "-F", "version", "nvidia"]),
        ("nvidia_fabricmanager_service", ["systemctl", "is-active", "nvidia-fabricmanager.service"]),
    ),
    "amd": (
        ("amd_smi_list", ["amd-smi", "list", "--json"]),
        ("amd_smi_static", ["amd-smi", "static", "--asic", "--vram", "--driver", "--json"]),
        ("rocm_smi", ["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--showbus", "--json"]),
        ("amdgpu_modinfo", ["modinfo", "-F", "version", "amdgpu"]),
        # uncorrectable and deferred ECC counts per GPU (_accel_amd.parse_amd_smi_ecc)
        ("amd_smi_ecc", ["amd-smi", "metric", "--ecc", "--json"]),
    ),
    "ascend": (
        ("npu_smi_list", ["npu-smi", "info", "-l"]),
        ("npu_smi_info", ["npu-smi", "info"]),
    ),
}
"""Per vendor, ``(source key, argv)`` pairs. ``argv[0]`` is looked up on the
host; a missing executable leaves that source out. Results go to
:func:`summarize` as ``(rc, stdout, stderr)`` tuples under the source key."""

SPLITS = {"nvidia_smi": split_fabric_columns}
"""Source key -> ``split(result, rerun)``: a command whose one answer becomes several sources (``rerun(argv tail)``
runs the same tool again)."""

COMMAND_REQUIRES = {"nvidia_smi_q": "nvidia_smi", "amd_smi_ecc": "amd_smi_list"}
"""Source key -> source key that must have exited 0 first (no point asking a
driver that did not answer the first query a second time)."""

EXTRA_TOOL_DIRS = ("/opt/rocm/bin", "/usr/local/Ascend/driver/tools", "/usr/local/bin")
"""Where vendor installers put their tools when they are not on PATH;
searched after the host's own lookup (see :func:`find_tool`)."""

FILES = {
    "nvidia": (("nvidia_proc_version", "/proc/driver/nvidia/version"),),
    "amd": (
        ("amdgpu_sys_version", "/sys/module/amdgpu/version"),
        ("rocm_version_info", "/opt/rocm/.info/version"),
    ),
    "ascend": (
        ("ascend_version_info", "/usr/local/Ascend/driver/version.info"),
        ("cann_info_x86_64", "/usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/ascend_toolkit_install.info"),
        ("cann_info_aarch64", "/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info"),
    ),
}
"""Per vendor, ``(source key, path)`` pairs: the file's text goes to
:func:`summarize` under the source key, ``None`` when it does not exist."""


def _summarizer(vendor):
    """The vendor's summarizer: AMD's and Ascend's parsers are imported only on a host of theirs (the preflight call
    compiles every module it imports on each run)."""
    if vendor == "amd":
        from ansible_collections.launchcard.inference.plugins.module_utils._accel_amd import summarize_amd
        return summarize_amd
    if vendor == "ascend":
        from ansible_collections.launchcard.inference.plugins.module_utils._accel_ascend import summarize_ascend
        return summarize_ascend
    return summarize_nvidia


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
    pci = parse_pci_devices(sources.get("pci"), sources.get("pci_ids"))
    if vendor == "none":
        devices, driver = [], empty_driver()
        driver["message"] = "no accelerator tool found (looked for %s)" % ", ".join(
            tool for vendor_name in VENDORS for tool in VENDOR_TOOLS[vendor_name]
        )
        if pci["vendor"]:
            driver["message"] += "; the PCI bus shows %d %s accelerator(s): no driver installed" % (
                pci["count"], pci["vendor"])
    elif vendor in VENDORS:
        devices, driver = _summarizer(vendor)(sources, errors)
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
        tool = tools[argv[0]]
        if tool and key in SPLITS:
            sources.update(SPLITS[key](run([tool] + list(argv[1:])), lambda tail, tool=tool: run([tool] + list(tail))))
        elif tool:
            sources[key] = run([tool] + list(argv[1:]))
    for key, path in FILES[vendor]:
        text = read(path)
        if text is not None:
            sources[key] = text
    if vendor == "amd":
        # AMD parts are named by PCI device id: the host's PCI id database.
        sources["pci_ids"] = read_pci_ids(PCI_IDS_PATHS, read)[1]
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
    # the bus's accelerators are named from the host's PCI id database (read once, only when there are any)
    pci_ids = read_pci_ids(PCI_IDS_PATHS, read)[1] if parse_pci_devices(pci)["devices"] else None
    summary = None
    for vendor_name in vendors:
        sources = collect_sources(vendor_name, which, run, read, tools)
        sources["pci"] = pci
        if pci_ids is not None:
            sources["pci_ids"] = pci_ids
        attempt = summarize(vendor_name, sources)
        if summary is None:
            summary = attempt
        if attempt["count"] > 0:
            return attempt
    return summary if summary is not None else summarize("none", {"pci": pci, "pci_ids": pci_ids})
