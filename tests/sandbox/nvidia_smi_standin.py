#!/usr/bin/env python
# -----------------------------------------------------------------------------
# TEST CODE -- NOT NVIDIA SOFTWARE.
#
# Stand-in `nvidia-smi` for the launchcard sandbox fleet (tests/sandbox). The
# fleet script installs it as /usr/bin/nvidia-smi inside sandbox hosts that
# simulate GPUs. It reads /etc/launchcard-sandbox/gpus.json (written by
# tests/sandbox/fleet.py) and mimics the real tool's output for:
#
#   nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits] [-i IDS]
#   nvidia-smi --query-compute-apps=FIELDS --format=csv[...]   (no processes)
#   nvidia-smi -q -x     (the XML elements the collection reads, in the real
#                         tool's nesting: memory, ECC, row remaps, retired
#                         pages, recovery action, PCIe link, HW slowdown,
#                         processes; each GPU's state from optional gpus.json
#                         keys: "memory.reserved", "memory.used",
#                         "ecc.uncorrectable.volatile", "remapped_rows.pending",
#                         "remapped_rows.failure", "retired_pages.pending",
#                         "gpu_recovery_action", "pcie.link.width.current",
#                         "pcie.link.width.max", "hw_slowdown", "processes":
#                         [{"pid", "name", "used_mib"}])
#   nvidia-smi -L
#   nvidia-smi --version
#   nvidia-smi            (a short summary table)
#
# Unknown query fields fail like the real tool: `Field "X" is not a valid
# field to query.` and exit status 2. Null values print as `[N/A]`.
# With the stand-in driver packages of tests/sandbox/pkgrepo installed, it reports the
# "loaded" driver version and fails with NVML's driver/library mismatch until a reboot.
# Python 3 standard library only.
# -----------------------------------------------------------------------------
"""TEST CODE: stand-in nvidia-smi for the launchcard sandbox (not NVIDIA software)."""

import json
import os
import sys

GPUS_JSON = os.environ.get("LAUNCHCARD_SANDBOX_GPUS_JSON", "/etc/launchcard-sandbox/gpus.json")

# query field (and aliases) -> (key in gpus.json, unit for the csv header)
FIELDS = {
    "index": ("index", None),
    "name": ("name", None),
    "gpu_name": ("name", None),
    "uuid": ("uuid", None),
    "gpu_uuid": ("uuid", None),
    "serial": ("serial", None),
    "gpu_serial": ("serial", None),
    "driver_version": ("driver_version", None),
    "vbios_version": ("vbios_version", None),
    "count": ("count", None),
    "pci.bus_id": ("pci.bus_id", None),
    "gpu_bus_id": ("pci.bus_id", None),
    "pci.domain": ("pci.domain", None),
    "pci.bus": ("pci.bus", None),
    "pci.device_id": ("pci.device_id", None),
    "memory.total": ("memory.total", "MiB"),
    "memory.used": ("memory.used", "MiB"),
    "memory.free": ("memory.free", "MiB"),
    "memory.reserved": ("memory.reserved", "MiB"),
    "persistence_mode": ("persistence_mode", None),
    "fabric.state": ("fabric.state", None),
    "fabric.status": ("fabric.status", None),
    "compute_cap": ("compute_cap", None),
    "compute_mode": ("compute_mode", None),
    "mig.mode.current": ("mig.mode.current", None),
    "temperature.gpu": ("temperature.gpu", None),
    "utilization.gpu": ("utilization.gpu", "%"),
    "utilization.memory": ("utilization.memory", "%"),
    "power.draw": ("power.draw", "W"),
    "power.limit": ("power.limit", "W"),
    "pstate": ("pstate", None),
    "timestamp": ("timestamp", None),
}

APP_FIELDS = ["timestamp", "gpu_name", "gpu_bus_id", "gpu_serial", "gpu_uuid", "pid", "process_name",
              "name", "used_gpu_memory", "used_memory"]


# Written by the stand-in driver packages of tests/sandbox/pkgrepo (when installed): the version of the
# "loaded kernel module" (under /run, so a reboot clears it) and of the installed NVML library.
LOADED_VERSION = "/run/launchcard-sandbox/nvidia/loaded_version"
LIBRARY_VERSION = "/usr/lib/launchcard-sandbox/nvidia/library_version"
# A slow fabric manager (the stand-in nv-fabricmanager of tests/sandbox/pkgrepo, when FABRIC_DELAY names its
# start-up time): until it writes FABRIC_UP (under /run, so every boot waits again), the GPUs whose fabric is
# "Completed" read "In Progress", as NVSwitch GPUs do before the real fabric manager has trained the NVLinks.
FABRIC_DELAY = "/etc/launchcard-sandbox/fabricmanager-delay"
FABRIC_UP = "/run/launchcard-sandbox/nvidia/fabric_up"


def _read_version(path):
    try:
        with open(path) as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def load():
    try:
        with open(GPUS_JSON) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
              "Make sure that the latest NVIDIA driver is installed and running.")
        print(f"(launchcard sandbox stand-in: cannot read {GPUS_JSON})")
        sys.exit(9)
    loaded, library = _read_version(LOADED_VERSION), _read_version(LIBRARY_VERSION)
    if loaded and library and loaded != library:
        # what the real tool prints after a driver upgrade without a reboot
        print("Failed to initialize NVML: Driver/library version mismatch")
        print("NVML library version: " + ".".join(library.split(".")[:2]))
        sys.exit(18)
    if loaded:
        data["driver_version"] = loaded
    if os.path.exists(FABRIC_DELAY) and not os.path.exists(FABRIC_UP):
        for gpu in data.get("gpus", []):
            if gpu.get("fabric.state") == "Completed":
                gpu["fabric.state"], gpu["fabric.status"] = "In Progress", None
    return data


def value(data, gpu, key, units):
    if key == "count":
        v = len(data["gpus"])
    elif key == "driver_version":
        v = data.get("driver_version")
    elif key == "timestamp":
        import time
        v = time.strftime("%Y/%m/%d %H:%M:%S.000")
    else:
        v = gpu.get(key)
    if v is None:
        return "[N/A]"
    unit = FIELDS.get(key, (None, None))[1]
    if isinstance(v, float):
        v = f"{v:.2f}"
    return f"{v} {unit}" if (unit and units) else str(v)


def select(data, ids):
    gpus = data.get("gpus", [])
    if ids is None:
        return gpus
    chosen = []
    for ident in ids.split(","):
        ident = ident.strip()
        match = [g for g in gpus if str(g["index"]) == ident or g.get("uuid") == ident or g.get("pci.bus_id") == ident]
        if not match:
            print("No devices were found")
            sys.exit(6)
        chosen += match
    return chosen


def parse_format(fmt):
    if fmt is None:
        print('"--format=" switch is missing. Please check the help for usage.', file=sys.stderr)
        sys.exit(2)
    opts = [o.strip() for o in fmt.split(",")]
    if "csv" not in opts:
        print(f'Invalid format "{fmt}". Please check the help for usage.')
        sys.exit(2)
    return "noheader" not in opts, "nounits" not in opts


def query_gpu(data, fields, fmt, ids):
    header, units = parse_format(fmt)
    names = [f.strip() for f in fields.split(",") if f.strip()]
    for name in names:
        if name not in FIELDS:
            print(f'Field "{name}" is not a valid field to query.')
            print()
            return 2
    gpus = select(data, ids)
    if header:
        print(", ".join(f"{FIELDS[n][0]} [{FIELDS[n][1]}]" if FIELDS[n][1] else FIELDS[n][0] for n in names))
    for gpu in gpus:
        print(", ".join(value(data, gpu, FIELDS[n][0], units) for n in names))
    return 0


def query_apps(fields, fmt):
    header = parse_format(fmt)[0]
    names = [f.strip() for f in fields.split(",") if f.strip()]
    for name in names:
        if name not in APP_FIELDS:
            print(f'Field "{name}" is not a valid field to query.')
            print()
            return 2
    if header:
        print(", ".join(names))
    return 0


def version(data):
    drv = data.get("driver_version") or "[N/A]"
    print(f"NVIDIA-SMI version  : {drv}")
    print(f"NVML version        : {'.'.join(drv.split('.')[:2])}")
    print(f"DRIVER version      : {drv}")
    print(f"CUDA Version        : {data.get('cuda_version') or '[N/A]'}")
    print("STAND-IN            : launchcard sandbox test double (TEST CODE, not NVIDIA software)")
    return 0


def list_gpus(data, ids):
    for gpu in select(data, ids):
        print(f"GPU {gpu['index']}: {gpu['name']} (UUID: {gpu['uuid']})")
    return 0


def table(data, ids):
    drv = data.get("driver_version") or "[N/A]"
    cuda = data.get("cuda_version") or "[N/A]"
    line = "+" + "-" * 89 + "+"
    print("Launchcard sandbox stand-in nvidia-smi (TEST CODE, not NVIDIA software)")
    print(line)
    print(f"| NVIDIA-SMI {drv:<20} Driver Version: {drv:<17} CUDA Version: {cuda:<8}|")
    print(line)
    print("| GPU  Name                        Persistence-M | Bus-Id          |        Memory-Usage      |")
    print(line)
    for gpu in select(data, ids):
        pm = "On" if gpu.get("persistence_mode") == "Enabled" else "Off"
        mem = f"{gpu.get('memory.used') or 0}MiB / {gpu.get('memory.total') or 0}MiB"
        print(f"| {gpu['index']:>3}  {gpu['name'][:27]:<27} {pm:>14} | {str(gpu.get('pci.bus_id'))[:16]:<16}|"
              f" {mem:>24} |")
    print(line)
    print()
    print(line)
    print("| Processes:" + " " * 78 + "|")
    print("|  No running processes found" + " " * 61 + "|")
    print(line)
    return 0


def _el(parent, tag, text=None):
    import xml.etree.ElementTree as ET
    node = ET.SubElement(parent, tag)
    if text is not None:
        node.text = str(text)
    return node


def _yes(flag):
    return "Yes" if flag else "No"


def query_xml(data, ids):
    """`nvidia-smi -q -x`: the elements of the real tool's nvsmi_device_v13 log that the collection reads."""
    import xml.etree.ElementTree as ET
    root = ET.Element("nvidia_smi_log")
    _el(root, "driver_version", data.get("driver_version") or "N/A")
    gpus = select(data, ids)
    _el(root, "attached_gpus", len(gpus))
    for gpu in gpus:
        node = _el(root, "gpu")
        node.set("id", str(gpu.get("pci.bus_id")))
        _el(node, "product_name", gpu.get("name"))
        _el(node, "gpu_recovery_action", gpu.get("gpu_recovery_action") or "None")
        link = _el(_el(node, "pci"), "pci_gpu_link_info")
        widths = _el(link, "link_widths")
        _el(widths, "max_link_width", "%sx" % gpu.get("pcie.link.width.max", 16))
        _el(widths, "current_link_width", "%sx" % gpu.get("pcie.link.width.current", 16))
        reasons = _el(node, "clocks_event_reasons")
        _el(reasons, "clocks_event_reason_hw_slowdown", "Active" if gpu.get("hw_slowdown") else "Not Active")
        total = gpu.get("memory.total")
        reserved, used = gpu.get("memory.reserved") or 0, gpu.get("memory.used") or 0
        fb = _el(node, "fb_memory_usage")
        if total is None:
            for key in ("total", "reserved", "used", "free"):
                _el(fb, key, "N/A")
        else:
            for key, val in (("total", total), ("reserved", reserved), ("used", used),
                             ("free", total - reserved - used)):
                _el(fb, key, "%d MiB" % val)
        volatile = _el(_el(node, "ecc_errors"), "volatile")
        _el(volatile, "sram_uncorrectable_parity", 0)
        _el(volatile, "dram_uncorrectable", gpu.get("ecc.uncorrectable.volatile") or 0)
        pages = _el(node, "retired_pages")
        _el(pages, "pending_retirement", "N/A" if "retired_pages.pending" not in gpu else
            _yes(gpu["retired_pages.pending"]))
        rows = _el(node, "remapped_rows")
        _el(rows, "remapped_row_pending", _yes(gpu.get("remapped_rows.pending")))
        _el(rows, "remapped_row_failure", _yes(gpu.get("remapped_rows.failure")))
        procs = _el(node, "processes")
        for proc in gpu.get("processes") or []:
            info = _el(procs, "process_info")
            _el(info, "pid", proc["pid"])
            _el(info, "type", "C")
            _el(info, "process_name", proc.get("name"))
            _el(info, "used_memory", "%d MiB" % proc.get("used_mib", 0))
    print('<?xml version="1.0" ?>')
    print('<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">')
    print(ET.tostring(root, encoding="unicode"))
    return 0


def main(argv):
    opts = {}
    i = 0
    flags = set()
    while i < len(argv):
        arg = argv[i]
        name, eq, val = arg.partition("=")
        if name in ("--query-gpu", "--query-compute-apps", "--format", "-i", "--id"):
            if not eq:
                if i + 1 >= len(argv):
                    print(f'Option "{name}" requires a value.')
                    return 2
                val = argv[i + 1]
                i += 1
            opts[name] = val
        elif arg in ("-L", "--list-gpus", "--version", "-h", "--help", "-q", "--query", "-x", "--xml-format"):
            flags.add(arg)
        else:
            print(f'Invalid combination of input arguments. Please run \'nvidia-smi -h\' for help.'
                  f' (launchcard stand-in does not support "{arg}")')
            return 2
        i += 1
    if "-h" in flags or "--help" in flags:
        print(__doc__)
        print("Supported: --query-gpu=... --format=csv[,noheader][,nounits] [-i IDS], "
              "--query-compute-apps=..., -L, --version")
        return 0
    data = load()
    ids = opts.get("-i", opts.get("--id"))
    if "--version" in flags:
        return version(data)
    if "-L" in flags or "--list-gpus" in flags:
        return list_gpus(data, ids)
    if flags & {"-q", "--query"} and flags & {"-x", "--xml-format"}:
        return query_xml(data, ids)
    if "--query-gpu" in opts:
        return query_gpu(data, opts["--query-gpu"], opts.get("--format"), ids)
    if "--query-compute-apps" in opts:
        return query_apps(opts["--query-compute-apps"], opts.get("--format"))
    return table(data, ids)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
