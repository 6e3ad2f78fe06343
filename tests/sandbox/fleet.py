#!/usr/bin/env python
"""Sandbox fleet for launchcard.inference: real Debian 12 hosts on this machine.

TEST INFRASTRUCTURE. Every host of an Ansible inventory is booted as a
systemd-nspawn container with systemd as PID 1 and a real sshd, on a private
bridge, reachable by Ansible over real SSH. GPUs (a stand-in nvidia-smi), the
weights disk (a sparse ext4 image) and the engines (tests/sandbox/standin_engine)
are simulated; see tests/sandbox/README.md.

    fleet.py up -i INVENTORY [--state-dir DIR]
    fleet.py down [--state-dir DIR] [--purge]
    fleet.py status [--state-dir DIR]

Needs root, systemd-nspawn, debootstrap, mkfs.ext4, ip, ssh, ssh-keygen and
``ansible-inventory`` on PATH. Standard library only.
"""

import argparse
import contextlib
import fcntl
import hashlib
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
DEFAULT_STATE_DIR = REPO_ROOT / ".sandbox"
STANDIN_SRC = HERE / "standin_engine"
NVIDIA_SMI_SRC = HERE / "nvidia_smi_standin.py"

CACHE_DIR = Path(os.environ.get("LAUNCHCARD_SANDBOX_CACHE", "/var/cache/launchcard-sandbox"))
SUITE = "bookworm"
ROOTFS_VERSION = 3  # bump when the rootfs preparation changes: a new rootfs is built beside the old one
ROOTFS = CACHE_DIR / f"rootfs-{SUITE}-v{ROOTFS_VERSION}"
# python3-packaging: ansible.builtin.pip; python3-apt: ansible.builtin.apt
PACKAGES = "systemd,systemd-sysv,openssh-server,python3,python3-venv,python3-packaging,python3-apt,dbus,iproute2,ca-certificates"

GUEST_WHEELHOUSE = "/srv/launchcard-wheels"
WHEELHOUSE_PACKAGES = ["sglang-router"]

DEFAULTS = {
    "sandbox_gpus": 0,
    "sandbox_gpu_model": "NVIDIA H100 80GB HBM3",
    "sandbox_gpu_memory_mib": 81559,
    "sandbox_driver_version": "580.95.05",
    "sandbox_disk_gib": 500,
    "launchcard_weights_dir": "/var/lib/launchcard/models",
    "sandbox_default_route": False,
    # "": Completed on SXM/HBM parts, [N/A] otherwise; e.g. "In Progress" (fabric manager down)
    "sandbox_fabric_state": "",
    # > 0: a service that is not launchcard's listens on this TCP port from boot
    "sandbox_busy_port": 0,
    # > 0: a bare Ascend host: this many NPUs on a simulated PCI bus (SANDBOX_PCI_DIR), no driver
    # installed; the stand-in npu-smi the stand-in driver installer brings reports them as
    # sandbox_npu_model with sandbox_npu_hbm_mib of HBM each (tests/sandbox/pkgrepo/ascend_runs.py)
    "sandbox_bare_npus": 0,
    "sandbox_npu_model": "910B3",
    "sandbox_npu_hbm_mib": 65536,
}
# where fleet.py writes the simulated PCI bus of a bare host (its inventory sets launchcard_pci_devices_dir)
SANDBOX_PCI_DIR = "var/lib/launchcard-sandbox/pci/devices"
SQUATTER_UNIT = "sandbox-squatter.service"
# PCI bus ids of the eight GPUs on an HGX H100 baseboard
PCI_BUS_IDS = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]
CUDA_FOR_DRIVER = {"580": "13.0", "575": "12.9", "570": "12.8", "565": "12.7", "560": "12.6",
                   "555": "12.5", "550": "12.4", "545": "12.3", "535": "12.2", "530": "12.1", "525": "12.0"}
UUID_NS = uuid.UUID("5f0c6a3e-7d52-4c1e-9b7e-6c61756e6368")

INOTIFY_KEY = "fs.inotify.max_user_instances"
INOTIFY_PATH = Path("/proc/sys/fs/inotify/max_user_instances")
BOOT_TIMEOUT_S = float(os.environ.get("LAUNCHCARD_SANDBOX_BOOT_TIMEOUT_S", "240"))
STOP_TIMEOUT_S = 30.0
EXIT_REBOOT = 133


class FleetError(Exception):
    pass


def log(msg: str) -> None:
    print(f"fleet: {msg}", file=sys.stderr, flush=True)


def run(cmd, check=True, capture=False, timeout=None, **kw):
    res = subprocess.run(cmd, check=False, timeout=timeout, text=True,
                         stdout=subprocess.PIPE if capture else None,
                         stderr=subprocess.PIPE if capture else None, **kw)
    if check and res.returncode != 0:
        detail = (res.stderr or "").strip() if capture else ""
        raise FleetError(f"command failed ({res.returncode}): {' '.join(map(str, cmd))}"
                         + (f"\n{detail}" if detail else ""))
    return res


@contextlib.contextmanager
def locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def write_file(path: Path, content, mode=0o644) -> None:
    """Write atomically (temp file + rename) unless the content is unchanged."""
    data = content.encode() if isinstance(content, str) else content
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() and not path.is_symlink():
        with contextlib.suppress(OSError):
            if path.read_bytes() == data:
                os.chmod(path, mode)
                return
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def read_json(path: Path, default=None):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return default


# ---------------------------------------------------------------------------
# processes


def proc_starttime(pid: int):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] == "Z":
        return None
    return fields[19]


def write_pidfile(path: Path, pid: int) -> None:
    write_file(path, f"{pid} {proc_starttime(pid)}\n")


def read_pidfile(path: Path):
    """PID from a pid file if that very process (same start time) still runs."""
    try:
        pid_s, start = path.read_text().split()
        pid = int(pid_s)
    except (OSError, ValueError):
        return None
    return pid if proc_starttime(pid) == start else None


def wait_gone(pids, timeout: float) -> set:
    deadline = time.time() + timeout
    alive = {p for p in pids if p}
    while alive and time.time() < deadline:
        alive = {p for p in alive if proc_starttime(p) is not None}
        if alive:
            time.sleep(0.1)
    return alive


# ---------------------------------------------------------------------------
# mounts


def _unescape(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def mountpoints() -> set:
    points = set()
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            points.add(_unescape(line.split()[4]))
    return points


def is_mounted(path: Path) -> bool:
    return str(path) in mountpoints()


def umount(path: Path) -> None:
    for attempt in range(20):
        if not is_mounted(path):
            return
        res = run(["umount", str(path)], check=False, capture=True)
        if res.returncode == 0:
            continue
        time.sleep(0.25)
    if is_mounted(path):
        log(f"warning: {path} still busy, detaching it lazily (umount -l)")
        run(["umount", "-l", str(path)], check=False)


# ---------------------------------------------------------------------------
# inventory


class Host:
    def __init__(self, name: str, hv: dict):
        self.name = name
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]{0,62}", name):
            raise FleetError(f"host {name!r}: name must be a valid host name (letters, digits, '-')")
        addr = hv.get("ansible_host")
        try:
            self.address = ipaddress.IPv4Address(str(addr))
        except ValueError:
            raise FleetError(f"host {name}: ansible_host must be an IPv4 address, got {addr!r}")

        def get(key, conv):
            val = hv.get(key, DEFAULTS[key])
            if isinstance(val, str) and "{{" in val:
                raise FleetError(f"host {name}: {key} is a template ({val!r}); fleet.py needs a literal value")
            try:
                return conv(val)
            except (TypeError, ValueError):
                raise FleetError(f"host {name}: {key}={val!r} is not valid")

        self.gpus = get("sandbox_gpus", int)
        self.gpu_model = get("sandbox_gpu_model", str)
        self.gpu_memory_mib = get("sandbox_gpu_memory_mib", int)
        self.driver_version = get("sandbox_driver_version", str)
        self.disk_gib = get("sandbox_disk_gib", int)
        self.weights_dir = get("launchcard_weights_dir", str)
        self.default_route = get("sandbox_default_route", _bool)
        self.fabric_state = get("sandbox_fabric_state", str)
        self.busy_port = get("sandbox_busy_port", int)
        self.bare_npus = get("sandbox_bare_npus", int)
        self.npu_model = get("sandbox_npu_model", str)
        self.npu_hbm_mib = get("sandbox_npu_hbm_mib", int)
        if not 0 <= self.bare_npus <= 16 or (self.bare_npus and self.gpus):
            raise FleetError(f"host {name}: sandbox_bare_npus={self.bare_npus} must be 0-16, on a host without sandbox_gpus")
        if self.gpus < 0 or self.gpus > len(PCI_BUS_IDS) * 4:
            raise FleetError(f"host {name}: sandbox_gpus={self.gpus} out of range")
        if self.disk_gib < 1:
            raise FleetError(f"host {name}: sandbox_disk_gib must be >= 1")
        if not 0 <= self.busy_port <= 65535 or self.busy_port == 22:
            raise FleetError(f"host {name}: sandbox_busy_port={self.busy_port} must be a TCP port (not 22), or 0")
        if not self.weights_dir.startswith("/") or ".." in self.weights_dir.split("/") or ":" in self.weights_dir:
            raise FleetError(f"host {name}: launchcard_weights_dir must be an absolute path: {self.weights_dir!r}")

    def config(self) -> dict:
        cfg = {"name": self.name, "address": str(self.address), "gpus": self.gpus, "gpu_model": self.gpu_model,
               "gpu_memory_mib": self.gpu_memory_mib, "driver_version": self.driver_version,
               "disk_gib": self.disk_gib, "weights_dir": self.weights_dir, "default_route": self.default_route}
        # only when set, so that hosts booted before these settings existed are not restarted by `up`
        if self.fabric_state:
            cfg["fabric_state"] = self.fabric_state
        if self.busy_port:
            cfg["busy_port"] = self.busy_port
        if self.bare_npus:
            cfg["bare_npus"] = {"count": self.bare_npus, "model": self.npu_model, "hbm_mib": self.npu_hbm_mib}
        return cfg


def _bool(value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(value)


def find_tool(name: str) -> str:
    path = shutil.which(name)
    if path:
        return path
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    raise FleetError(f"{name} not found on PATH (put the project virtualenv's bin/ on PATH)")


def read_inventory(inventory: str):
    res = run([find_tool("ansible-inventory"), "-i", inventory, "--list"], capture=True)
    data = json.loads(res.stdout)
    hostvars = data.get("_meta", {}).get("hostvars", {})
    names = set(hostvars)
    for group, body in data.items():
        if group != "_meta" and isinstance(body, dict):
            names.update(body.get("hosts", []))
    if not names:
        raise FleetError(f"inventory {inventory} has no hosts")
    hosts = [Host(n, hostvars.get(n, {})) for n in sorted(names, key=lambda n: (str(hostvars.get(n, {}).get("ansible_host")), n))]
    seen = {}
    for h in hosts:
        if h.address in seen:
            raise FleetError(f"hosts {seen[h.address]} and {h.name} share the address {h.address}")
        seen[h.address] = h.name
    return hosts


def network_for(hosts):
    nets = {ipaddress.ip_network(f"{h.address}/24", strict=False) for h in hosts}
    if len(nets) != 1:
        raise FleetError("all fleet hosts must be in one /24 subnet, found: " + ", ".join(sorted(map(str, nets))))
    net = nets.pop()
    gateway = net.network_address + 1
    for h in hosts:
        if h.address in (net.network_address, net.broadcast_address, gateway):
            raise FleetError(f"host {h.name}: {h.address} is reserved ({gateway} is the machine's bridge address)")
    return net, gateway


def bridge_name(net) -> str:
    a, b, c = net.network_address.packed[:3]
    return f"lcbr{a:02x}{b:02x}{c:02x}"  # 10 characters: fits IFNAMSIZ; distinct per /24


# ---------------------------------------------------------------------------
# rootfs


def debian_mirror() -> str:
    """The Debian main archive URI named by this machine's own apt sources."""
    override = os.environ.get("LAUNCHCARD_SANDBOX_MIRROR")
    if override:
        return override
    candidates = []  # (priority, uri)
    for path in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        with contextlib.suppress(OSError):
            for stanza in re.split(r"\n\s*\n", path.read_text()):
                fields = {}
                key = None
                for line in stanza.splitlines():
                    if line.startswith("#") or not line.strip():
                        continue
                    if line[0] in " \t" and key:
                        fields[key] += " " + line.strip()
                        continue
                    key, _sep, val = line.partition(":")
                    key = key.strip().lower()
                    fields[key] = val.strip()
                if fields.get("enabled", "yes").lower() == "no":
                    continue
                if "deb" not in fields.get("types", "").split():
                    continue
                for uri in fields.get("uris", "").split():
                    for suite in fields.get("suites", "").split():
                        candidates.append((_mirror_rank(uri, suite, fields.get("components", "")), uri))
    sources_list = Path("/etc/apt/sources.list")
    files = [sources_list] if sources_list.exists() else []
    files += sorted(Path("/etc/apt/sources.list.d").glob("*.list"))
    for path in files:
        with contextlib.suppress(OSError):
            for line in path.read_text().splitlines():
                line = line.split("#", 1)[0].strip()
                parts = line.split()
                if not parts or parts[0] != "deb":
                    continue
                parts = parts[1:]
                if parts and parts[0].startswith("["):
                    while parts and not parts[0].endswith("]"):
                        parts.pop(0)
                    parts = parts[1:]
                if len(parts) >= 3:
                    candidates.append((_mirror_rank(parts[0], parts[1], " ".join(parts[2:])), parts[0]))
    candidates = [c for c in candidates if c[0] > 0]
    if not candidates:
        raise FleetError("no Debian main archive found in /etc/apt/sources.list{,.d/} "
                         "(set LAUNCHCARD_SANDBOX_MIRROR=URI to name one)")
    return max(candidates)[1]


def _mirror_rank(uri: str, suite: str, components: str) -> int:
    if not re.match(r"https?://", uri) or "main" not in components.split():
        return 0
    path = uri.rstrip("/").rsplit("/", 1)[-1]
    if "security" in uri or "-" in suite or path in ("debian-security", "debian-ports"):
        return 0
    rank = 1
    if path == "debian":
        rank += 2
    if suite == SUITE:
        rank += 4
    return rank


def ensure_rootfs() -> Path:
    if (ROOTFS / "etc/launchcard-sandbox-rootfs").exists():
        return ROOTFS
    with locked(CACHE_DIR / ".lock"):
        if (ROOTFS / "etc/launchcard-sandbox-rootfs").exists():
            return ROOTFS
        for stale in CACHE_DIR.glob(f".{ROOTFS.name}.tmp*"):
            log(f"removing interrupted rootfs build {stale}")
            shutil.rmtree(stale, ignore_errors=True)
        if ROOTFS.exists():  # a directory without the marker: never finished
            shutil.rmtree(ROOTFS)
        mirror = debian_mirror()
        tmp = Path(tempfile.mkdtemp(prefix=f".{ROOTFS.name}.tmp", dir=CACHE_DIR))
        os.chmod(tmp, 0o755)
        log(f"building the base rootfs (debootstrap {SUITE} from {mirror}); this takes a few minutes, once")
        started = time.time()
        res = run(["debootstrap", "--variant=minbase", f"--include={PACKAGES}", SUITE, str(tmp), mirror],
                  check=False, capture=True)
        if res.returncode != 0:
            tail = "\n".join((res.stdout or "").splitlines()[-15:] + (res.stderr or "").splitlines()[-15:])
            shutil.rmtree(tmp, ignore_errors=True)
            raise FleetError(f"debootstrap failed ({res.returncode}):\n{tail}")
        prepare_rootfs(tmp, mirror)
        os.rename(tmp, ROOTFS)
        log(f"base rootfs ready in {time.time() - started:.0f}s: {ROOTFS}")
    return ROOTFS


def prepare_rootfs(root: Path, mirror: str) -> None:
    """One-time edits to the shared, read-only base of every host."""
    if not (root / "usr/bin/python3").exists():
        raise FleetError("debootstrap produced no /usr/bin/python3")
    write_file(root / "etc/ssh/sshd_config.d/10-launchcard-sandbox.conf",
               "# launchcard sandbox (tests/sandbox/fleet.py): root logs in with the fleet key only\n"
               "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
               "KbdInteractiveAuthentication no\nUseDNS no\n")
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()  # every host gets its own host keys in its overlay
    with contextlib.suppress(FileNotFoundError):
        (root / "root/.ssh/authorized_keys").unlink()
    run(["systemctl", f"--root={root}", "enable", "systemd-networkd.service"], capture=True)
    run(["systemctl", f"--root={root}", "mask",
         "console-getty.service", "container-getty@.service", "getty@.service", "serial-getty@.service",
         "systemd-firstboot.service", "apt-daily.timer", "apt-daily-upgrade.timer"], capture=True)
    write_file(root / "etc/machine-id", "")
    dbus_id = root / "var/lib/dbus/machine-id"
    if dbus_id.exists() or dbus_id.is_symlink():
        dbus_id.unlink()
        dbus_id.symlink_to("/etc/machine-id")
    write_file(root / "etc/resolv.conf",
               "# launchcard sandbox: no DNS and no route out; every fleet host is in /etc/hosts\n")
    with contextlib.suppress(FileNotFoundError):
        (root / "etc/hostname").unlink()
    write_file(root / "etc/launchcard-sandbox-rootfs",
               f"TEST ROOTFS for the launchcard sandbox (tests/sandbox/fleet.py)\nversion={ROOTFS_VERSION}\n"
               f"suite={SUITE}\npackages={PACKAGES}\nmirror={mirror}\nbuilt={time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")


# ---------------------------------------------------------------------------
# wheelhouse


def _pip_cmd():
    for py in (sys.executable, shutil.which("python3")):
        if py and run([py, "-m", "pip", "--version"], check=False, capture=True).returncode == 0:
            return [py, "-m", "pip"]
    raise FleetError("no pip found for python3 (needed to build the wheelhouse)")


def ensure_wheelhouse(state: Path) -> Path:
    wh = state / "wheelhouse"
    wh.mkdir(parents=True, exist_ok=True)
    pip = None
    target = []
    if sys.version_info[:2] != (3, 11):  # the guests run Debian 12's Python 3.11
        target = ["--python-version", "3.11", "--only-binary=:all:"]
    # third-party wheels: downloaded once per machine into the cache dir, copied into each wheelhouse
    want = sorted(WHEELHOUSE_PACKAGES)
    cache = CACHE_DIR / "wheels-py3.11"
    marker = cache / ".downloaded.json"
    with locked(CACHE_DIR / ".lock"):
        done = read_json(marker, {}) or {}
        if done.get("packages") != want or not all((cache / f).exists() for f in done.get("files", [])):
            pip = pip or _pip_cmd()
            cache.mkdir(parents=True, exist_ok=True)
            log(f"downloading {' '.join(want)} and its dependencies into {cache}")
            res = run(pip + ["download", "--disable-pip-version-check", "-q", "-d", str(cache)] + target + want,
                      check=False, capture=True)
            if res.returncode != 0:
                raise FleetError(f"pip download failed ({res.returncode}):\n{(res.stdout + res.stderr)[-3000:]}")
            files = sorted(p.name for p in cache.iterdir() if not p.name.startswith("."))
            write_file(marker, json.dumps({"packages": want, "files": files}, indent=1))
            done = read_json(marker)
    for name in done["files"]:
        if not (wh / name).exists():
            shutil.copy2(cache / name, wh / f".{name}.part")
            os.replace(wh / f".{name}.part", wh / name)
    digest = hashlib.sha256()
    for path in sorted(STANDIN_SRC.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and ".egg-info" not in str(path) \
                and "build" not in path.relative_to(STANDIN_SRC).parts:
            digest.update(str(path.relative_to(STANDIN_SRC)).encode() + b"\0" + path.read_bytes())
    stamp = wh / ".standin.sha256"
    wheels = list(wh.glob("launchcard_standin_engine-*.whl"))
    if not wheels or not stamp.exists() or stamp.read_text().strip() != digest.hexdigest():
        pip = pip or _pip_cmd()
        for old in wheels:
            old.unlink()
        with tempfile.TemporaryDirectory(prefix="lc-standin-build-") as tmp:
            src = Path(tmp) / "src"
            shutil.copytree(STANDIN_SRC, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
            log("building the stand-in engine wheel")
            res = run(pip + ["wheel", "--disable-pip-version-check", "-q", "--no-deps", "-w", str(wh), str(src)],
                      check=False, capture=True)
            if res.returncode != 0:
                raise FleetError(f"pip wheel failed ({res.returncode}):\n{(res.stdout + res.stderr)[-3000:]}")
        write_file(stamp, digest.hexdigest() + "\n")
    return wh


# ---------------------------------------------------------------------------
# per-host content


def cuda_version(driver: str):
    return CUDA_FOR_DRIVER.get(driver.split(".")[0])


def gpus_json(host: Host) -> dict:
    model = host.gpu_model
    cap = None
    for pattern, value in (("H100", "9.0"), ("H200", "9.0"), ("H20", "9.0"), ("GH200", "9.0"), ("B200", "10.0"),
                           ("B300", "10.3"), ("GB200", "10.0"), ("A100", "8.0"), ("L40", "8.9"), ("L4", "8.9")):
        if pattern in model:
            cap = value
            break
    sxm = any(k in model for k in ("HBM", "SXM", "H200", "B200", "B300"))
    fabric_state = host.fabric_state or ("Completed" if sxm else None)
    gpus = []
    for i in range(host.gpus):
        bus = PCI_BUS_IDS[i % len(PCI_BUS_IDS)]
        domain = i // len(PCI_BUS_IDS)
        gpus.append({
            "index": i,
            "name": model,
            "uuid": "GPU-" + str(uuid.uuid5(UUID_NS, f"{host.name}/{i}")),
            "serial": str(1650000000000 + int(hashlib.sha256(f"{host.name}/{i}".encode()).hexdigest()[:8], 16) % 10**9),
            "pci.bus_id": f"{domain:08X}:{bus}:00.0",
            "pci.domain": f"0x{domain:04X}",
            "pci.bus": f"0x{bus}",
            "pci.device_id": "0x233010DE" if "H100" in model else None,
            "memory.total": host.gpu_memory_mib,
            "memory.used": 0,
            "memory.free": host.gpu_memory_mib,
            "memory.reserved": None,
            "persistence_mode": "Enabled",
            "fabric.state": fabric_state,
            "fabric.status": "Success" if fabric_state == "Completed" else None,
            "compute_cap": cap,
            "compute_mode": "Default",
            "mig.mode.current": "Disabled",
            "vbios_version": None,
            "temperature.gpu": 31,
            "utilization.gpu": 0,
            "utilization.memory": 0,
            "power.draw": 70.0,
            "power.limit": 700.0,
            "pstate": "P0",
        })
    return {
        "_comment": f"TEST DATA: the simulated GPUs of launchcard sandbox host {host.name}, written by "
                    "tests/sandbox/fleet.py and read by the stand-in /usr/bin/nvidia-smi. No real GPU exists.",
        "standin": True,
        "host": host.name,
        "driver_version": host.driver_version if host.gpus else None,
        "cuda_version": cuda_version(host.driver_version) if host.gpus else None,
        "gpus": gpus,
    }


def write_host_files(host: Host, hosts, merged: Path, pubkey: str, net, gateway, host_keys: Path) -> None:
    etc = merged / "etc"
    write_file(etc / "hostname", host.name + "\n")
    lines = ["# written by tests/sandbox/fleet.py (launchcard sandbox)", "127.0.0.1\tlocalhost",
             "::1\tlocalhost ip6-localhost ip6-loopback", "ff02::1\tip6-allnodes", "ff02::2\tip6-allrouters", ""]
    lines += [f"{h.address}\t{h.name}" for h in hosts]
    write_file(etc / "hosts", "\n".join(lines) + "\n")
    # No gateway: nothing leaves the bridge. sandbox_default_route=true adds one via the machine's
    # bridge address (which does not forward) so that facts like ansible_default_ipv4 are filled in.
    write_file(etc / "systemd/network/10-launchcard-sandbox.network",
               "# written by tests/sandbox/fleet.py: static address on the sandbox bridge\n"
               "[Match]\nName=host0\n\n[Network]\n"
               f"Address={host.address}/{net.prefixlen}\n"
               + (f"Gateway={gateway}\n" if host.default_route else "")
               + "LinkLocalAddressing=no\nIPv6AcceptRA=no\n")
    if not (etc / "default/locale").exists():
        write_file(etc / "default/locale", "LANG=C.UTF-8\n")
    ssh_dir = merged / "root/.ssh"
    ssh_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(ssh_dir, 0o700)
    write_file(ssh_dir / "authorized_keys", pubkey.strip() + "\n", 0o600)
    write_file(etc / "machine-id", uuid.uuid5(UUID_NS, f"machine-id/{host.name}").hex + "\n", 0o444)
    # ssh host keys live in the state dir (stable across `down --purge`), copied into the guest
    for key in sorted((host_keys / "etc/ssh").glob("ssh_host_*")):
        write_file(etc / "ssh" / key.name, key.read_bytes(), 0o644 if key.suffix == ".pub" else 0o600)
    sandbox = etc / "launchcard-sandbox"
    write_file(sandbox / "gpus.json", json.dumps(gpus_json(host), indent=1) + "\n")
    # sandbox_busy_port: a service that is not launchcard's holds a port from boot (preflight's ports check)
    squatter = etc / "systemd/system" / SQUATTER_UNIT
    squatter_link = etc / "systemd/system/multi-user.target.wants" / SQUATTER_UNIT
    if host.busy_port:
        write_file(squatter, "# TEST: written by tests/sandbox/fleet.py (sandbox_busy_port): not a launchcard unit\n"
                             "[Unit]\nDescription=Sandbox squatter holding TCP port %d\n\n[Service]\n"
                             "ExecStart=/usr/bin/python3 -m http.server --bind 0.0.0.0 --directory /srv %d\n\n"
                             "[Install]\nWantedBy=multi-user.target\n" % (host.busy_port, host.busy_port))
        squatter_link.parent.mkdir(parents=True, exist_ok=True)
        if not squatter_link.is_symlink():
            squatter_link.symlink_to("../" + SQUATTER_UNIT)
    else:
        for path in (squatter_link, squatter):
            if path.exists() or path.is_symlink():
                path.unlink()
    # sandbox_bare_npus: Huawei NPUs (vendor 0x19e5, class 0x1200 processing accelerator) on a
    # simulated PCI bus, and the chips the stand-in npu-smi reports once a driver is installed
    pci = merged / SANDBOX_PCI_DIR
    if pci.exists():
        shutil.rmtree(pci)
    if host.bare_npus:
        for i in range(host.bare_npus):
            for name, value in (("vendor", "0x19e5"), ("device", "0xd806"), ("class", "0x120000")):
                write_file(pci / ("0000:%02x:00.0" % (0xc1 + i)) / name, value + "\n")
        write_file(sandbox / "ascend.json", json.dumps({"count": host.bare_npus, "name": host.npu_model,
                                                        "hbm_mib": host.npu_hbm_mib}) + "\n")
    elif (sandbox / "ascend.json").exists():
        (sandbox / "ascend.json").unlink()
    smi = merged / "usr/bin/nvidia-smi"
    if host.gpus > 0:
        write_file(sandbox / "driver_version", host.driver_version + "\n")
        # the guest has python3 but no `python`: point the stand-in's shebang at it
        body = NVIDIA_SMI_SRC.read_text().split("\n", 1)[1]
        write_file(smi, "#!/usr/bin/python3\n" + body, 0o755)
    else:
        for path in (sandbox / "driver_version", smi):
            if path.exists() or path.is_symlink():
                path.unlink()


# ---------------------------------------------------------------------------
# machine-side network, cgroups, sysctl


def link_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


def link_alias(name: str) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/sys/class/net/{name}/ifalias").read_text().strip()
    return ""


def fleet_pids(cg_name: str) -> set:
    """Every process left in a fleet's cgroup, whichever host it belongs to."""
    return procs_under([Path("/sys/fs/cgroup/systemd") / cg_name, Path("/sys/fs/cgroup/unified") / cg_name])


def stale_owner(alias: str, name: str) -> bool:
    """True when the bridge was made by another sandbox fleet that no longer runs anything.

    A fleet killed before `down` (a cancelled CI job, a removed checkout) leaves its bridge
    behind. It is ours to reclaim only when the alias says a launchcard sandbox made it, no
    supervisor recorded in that state dir is alive, and the fleet's cgroup holds no process.
    """
    prefix = "launchcard-sandbox:"
    if not alias.startswith(prefix):
        return False
    hosts = Path(alias[len(prefix):]) / "hosts"
    if hosts.is_dir() and any(read_pidfile(h / "supervisor.pid") for h in hosts.iterdir() if h.is_dir()):
        return False
    return not fleet_pids(f"launchcard-sandbox-{name}")


def ensure_bridge(name: str, gateway, net, owner: str) -> bool:
    """Create the bridge if needed; return True if this fleet owns it."""
    if link_exists(name) and link_alias(name) != owner and stale_owner(link_alias(name), name):
        log(f"bridge {name} was left behind by a fleet that no longer runs ({link_alias(name)}); reclaiming it")
        run(["ip", "link", "del", name])
    if link_exists(name):
        alias = link_alias(name)
        if alias != owner:
            raise FleetError(f"bridge {name} already exists and belongs to {alias or 'someone else'}, "
                             f"which still runs hosts; stop it first: tests/sandbox/fleet.py down "
                             f"--state-dir {alias.split(':', 1)[-1]}")
    else:
        run(["ip", "link", "add", name, "type", "bridge"])
        run(["ip", "link", "set", "dev", name, "alias", owner])
    addr = f"{gateway}/{net.prefixlen}"
    have = run(["ip", "-o", "-4", "addr", "show", "dev", name], capture=True).stdout
    if f" {addr} " not in have:
        run(["ip", "addr", "add", addr, "dev", name])
    run(["ip", "link", "set", "dev", name, "up"])
    return True


def cgroup_dirs(cg_name: str, host: str):
    return [Path("/sys/fs/cgroup/systemd") / cg_name / host, Path("/sys/fs/cgroup/unified") / cg_name / host]


def procs_under(bases) -> set:
    """PIDs in every cgroup.procs below the given cgroup directories."""
    pids = set()
    for base in bases:
        if base.exists():
            for procs in base.rglob("cgroup.procs"):
                with contextlib.suppress(OSError, ValueError):
                    pids.update(int(p) for p in procs.read_text().split())
    return pids


def cgroup_pids(cg_name: str, host: str) -> set:
    return procs_under(cgroup_dirs(cg_name, host))


def remove_cgroups(cg_name: str, host: str) -> None:
    for base in cgroup_dirs(cg_name, host):
        if not base.exists():
            continue
        for d in sorted((p for p in base.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                d.rmdir()
        with contextlib.suppress(OSError):
            base.rmdir()
        with contextlib.suppress(OSError):
            base.parent.rmdir()  # only succeeds once no host of this fleet is left


# ---------------------------------------------------------------------------
# the per-host supervisor (runs detached; restarts the guest when it reboots)


def nspawn_argv(cfg: dict) -> list:
    return [
        "systemd-nspawn", "--quiet", "-b", "--register=no", "--keep-unit", "--console=passive",
        "-D", cfg["merged"], "-M", cfg["name"], f"--network-bridge={cfg['bridge']}",
        "--resolv-conf=off", "--timezone=off", "--link-journal=no",
        f"--bind-ro={cfg['wheelhouse']}:{GUEST_WHEELHOUSE}",
        f"--bind={cfg['weights_mount']}:{cfg['weights_dir']}",
    ]


def supervise(state: Path, name: str) -> int:
    hdir = state / "hosts" / name
    cfg = read_json(hdir / "boot.json")
    stop = threading.Event()
    child = {"proc": None}

    def on_term(_sig, _frame):
        stop.set()
        proc = child["proc"]
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # nspawn turns this into an orderly guest poweroff

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    for d in cgroup_dirs(cfg["cgroup"], name):
        d.mkdir(parents=True, exist_ok=True)

    def enter_cgroup():  # runs in the child, before exec: nspawn starts inside its own cgroup
        pid = str(os.getpid())
        for d in cgroup_dirs(cfg["cgroup"], name):
            with open(d / "cgroup.procs", "w") as fh:
                fh.write(pid)

    boots = 0
    while not stop.is_set():
        boots += 1
        print(f"--- fleet supervisor: boot #{boots} of {name} at {time.strftime('%H:%M:%S')}", flush=True)
        proc = subprocess.Popen(nspawn_argv(cfg), stdin=subprocess.DEVNULL, preexec_fn=enter_cgroup)
        child["proc"] = proc
        write_pidfile(hdir / "nspawn.pid", proc.pid)
        if stop.is_set():
            proc.send_signal(signal.SIGTERM)
        while True:
            try:
                rc = proc.wait(timeout=STOP_TIMEOUT_S if stop.is_set() else None)
                break
            except subprocess.TimeoutExpired:
                print(f"--- fleet supervisor: {name} did not power off in {STOP_TIMEOUT_S:g}s, killing it",
                      flush=True)
                proc.kill()
        print(f"--- fleet supervisor: systemd-nspawn for {name} exited with {rc}", flush=True)
        if rc != EXIT_REBOOT:
            break
        if not stop.is_set():
            print(f"--- fleet supervisor: {name} asked for a reboot; starting it again", flush=True)
    leftovers = cgroup_pids(cfg["cgroup"], name)
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(FileNotFoundError):
        (hdir / "nspawn.pid").unlink()
    return 0


# ---------------------------------------------------------------------------
# up / down / status


class Fleet:
    def __init__(self, state_dir):
        self.state = Path(state_dir).resolve()
        self.hosts_dir = self.state / "hosts"
        self.file = self.state / "fleet.json"
        self.key = self.state / "ssh" / "id_ed25519"

    def load(self) -> dict:
        return read_json(self.file, {}) or {}

    def save(self, data: dict) -> None:
        write_file(self.file, json.dumps(data, indent=1, sort_keys=True) + "\n")

    def owner(self) -> str:
        return f"launchcard-sandbox:{self.state}"

    # --- up ------------------------------------------------------------------
    def up(self, inventory: str) -> int:
        started = time.time()
        if os.geteuid() != 0:
            raise FleetError("fleet.py must run as root")
        for tool in ("systemd-nspawn", "debootstrap", "mkfs.ext4", "ip", "ssh", "ssh-keygen", "mount"):
            if not shutil.which(tool):
                raise FleetError(f"{tool} not found")
        for d in ("/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"):
            if not Path(d, "cgroup.procs").exists():
                raise FleetError(f"{d} is not a mounted cgroup hierarchy (this script expects the hybrid layout)")
        hosts = read_inventory(inventory)
        net, gateway = network_for(hosts)
        br = bridge_name(net)
        self.state.mkdir(parents=True, exist_ok=True)
        with locked(self.state / ".lock"):
            data = self.load()
            if data.get("bridge") and data["bridge"]["name"] != br and self._running_hosts(data):
                raise FleetError(f"this state dir runs a fleet on {data['bridge']['name']}; run `down` first")
            old_br = (data.get("bridge") or {}).get("name")
            if not self._running_hosts(data):
                data["cgroup"] = f"launchcard-sandbox-{br}"
                if old_br and old_br != br and link_exists(old_br) and link_alias(old_br) == self.owner():
                    run(["ip", "link", "del", old_br], check=False)
            data["inventory"] = str(Path(inventory).resolve())
            self.ensure_key()
            rootfs = ensure_rootfs()
            wheelhouse = ensure_wheelhouse(self.state)
            # stop hosts this state dir runs that are no longer in the inventory
            stale = set(data.get("hosts", {})) - {h.name for h in hosts}
            for name in sorted(stale):
                log(f"{name} is no longer in the inventory: stopping it")
                self.stop_hosts(data, [name])
                self.unmount_host(name)
                data["hosts"].pop(name, None)
            data["bridge"] = {"name": br, "address": f"{gateway}/{net.prefixlen}"}
            self.save(data)
            ensure_bridge(br, gateway, net, self.owner())
            self.raise_inotify(data, len(hosts))
            if any(h.default_route for h in hosts) and Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() != "0":
                log("warning: sandbox_default_route is set and this machine forwards IPv4 (net.ipv4.ip_forward=1): "
                    "guests may reach beyond the bridge")
            self.save(data)
            pubkey = self.key.with_suffix(".pub").read_text()
            self.write_ssh_client_files(hosts)
            booted, changed, cfgs = [], [], {}
            data.setdefault("hosts", {})
            for host in hosts:
                data["hosts"][host.name] = {"address": str(host.address)}
                cfgs[host.name] = self.boot_config(host, rootfs, wheelhouse, br, data)
                hdir = self.hosts_dir / host.name
                if not read_pidfile(hdir / "supervisor.pid"):
                    booted.append(host.name)
                elif read_json(hdir / "boot.json", {}) != cfgs[host.name]:
                    log(f"{host.name}: configuration changed, restarting it")
                    changed.append(host.name)
            self.save(data)
            self.stop_hosts(data, changed)
            for host in hosts:
                self.prepare_host(host, hosts, rootfs, net, pubkey)
            for name in [h.name for h in hosts if h.name in booted or h.name in changed]:
                write_file(self.hosts_dir / name / "boot.json", json.dumps(cfgs[name], indent=1, sort_keys=True) + "\n")
                self.start_supervisor(name)
            booted += changed
            self.save(data)
            states = self.wait_ready(hosts)
        self.print_summary(hosts, states, br, f"{gateway}/{net.prefixlen}", booted, time.time() - started)
        bad = [h.name for h in hosts if states.get(h.name, ("",))[0] not in ("running", "degraded")]
        if bad:
            for name in bad:
                log(f"{name}: not ready ({states.get(name)}); console log: {self.hosts_dir / name / 'console.log'}")
                with contextlib.suppress(OSError):
                    tail = (self.hosts_dir / name / "console.log").read_text(errors="replace").splitlines()[-20:]
                    sys.stderr.write("\n".join("    " + t for t in tail) + "\n")
            return 1
        return 0

    def ensure_key(self) -> None:
        if not self.key.exists():
            self.key.parent.mkdir(parents=True, exist_ok=True)
            os.chmod(self.key.parent, 0o700)
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "launchcard-sandbox-fleet", "-f", str(self.key)])
        os.chmod(self.key, 0o600)

    def host_keys(self, name: str) -> Path:
        keys = self.key.parent / "host_keys" / name
        if not (keys / "etc/ssh/ssh_host_ed25519_key.pub").exists():
            (keys / "etc/ssh").mkdir(parents=True, exist_ok=True)
            run(["ssh-keygen", "-A", "-f", str(keys)], capture=True)
        return keys

    def write_ssh_client_files(self, hosts) -> None:
        """.sandbox/ssh/known_hosts and an ssh_config: `ssh -F .sandbox/ssh/config <host>` checks host keys."""
        known, config = [], ["# written by tests/sandbox/fleet.py: ssh -F <this file> <host name or address>", ""]
        for h in hosts:
            for pub in sorted((self.host_keys(h.name) / "etc/ssh").glob("ssh_host_*.pub")):
                ktype, key = pub.read_text().split()[:2]
                known.append(f"{h.name},{h.address} {ktype} {key}")
            config += [f"Host {h.name}", f"    HostName {h.address}", ""]
        config += ["Host " + " ".join([h.name for h in hosts] + [str(h.address) for h in hosts]),
                   "    User root", f"    IdentityFile {self.key}", "    IdentitiesOnly yes",
                   f"    UserKnownHostsFile {self.key.parent / 'known_hosts'}", "    StrictHostKeyChecking yes",
                   "    LogLevel ERROR", ""]
        write_file(self.key.parent / "known_hosts", "\n".join(known) + "\n")
        write_file(self.key.parent / "config", "\n".join(config))

    def raise_inotify(self, data: dict, n_hosts: int) -> None:
        if n_hosts <= 15:
            return
        current = int(INOTIFY_PATH.read_text())
        want = 128 + 64 * n_hosts
        if current >= want:
            return
        data.setdefault("sysctl", {}).setdefault(INOTIFY_KEY, current)
        log(f"raising {INOTIFY_KEY} {current} -> {want} for {n_hosts} hosts (restored by `down`)")
        INOTIFY_PATH.write_text(f"{want}\n")

    def boot_config(self, host, rootfs, wheelhouse, br, data) -> dict:
        hdir = self.hosts_dir / host.name
        return {
            "name": host.name, "host": host.config(), "merged": str(hdir / "merged"), "bridge": br,
            "wheelhouse": str(wheelhouse), "weights_mount": str(hdir / "weights"), "weights_dir": host.weights_dir,
            "cgroup": data["cgroup"], "rootfs": str(rootfs),
        }

    def prepare_host(self, host, hosts, rootfs, net, pubkey) -> None:
        """Mounts and per-host files (for a running host: only files are rewritten)."""
        hdir = self.hosts_dir / host.name
        upper, work, merged, wmnt = hdir / "upper", hdir / "work", hdir / "merged", hdir / "weights"
        img = hdir / "weights.img"
        for d in (upper, work, merged, wmnt):
            d.mkdir(parents=True, exist_ok=True)
        # the overlay: upper/work are private to the host, the rootfs is shared and never written
        lower_file = hdir / "lower"
        if lower_file.exists() and lower_file.read_text().strip() != str(rootfs) and not read_pidfile(
                hdir / "supervisor.pid"):
            log(f"{host.name}: base rootfs changed, starting from a fresh overlay")
            umount(merged)
            shutil.rmtree(upper)
            shutil.rmtree(work)
            upper.mkdir()
            work.mkdir()
        write_file(lower_file, f"{rootfs}\n")
        if not is_mounted(merged):
            run(["mount", "-t", "overlay", f"lc-sandbox-{host.name}", "-o",
                 f"lowerdir={rootfs},upperdir={upper},workdir={work}", str(merged)])
        # the weights disk: a sparse ext4 image, loop-mounted here and bind-mounted into the guest
        size = host.disk_gib * 1024 ** 3
        if img.exists() and img.stat().st_size != size and not read_pidfile(hdir / "supervisor.pid"):
            log(f"{host.name}: weights disk size changed, recreating it ({host.disk_gib} GiB)")
            umount(wmnt)
            img.unlink()
        if not img.exists():
            tmp = img.with_suffix(".tmp")
            with open(tmp, "wb") as fh:
                fh.truncate(size)
            run(["mkfs.ext4", "-F", "-q", "-m", "0", "-T", "largefile4",
                 "-E", "lazy_itable_init=1,lazy_journal_init=1", "-L", "lc-weights", str(tmp)], capture=True)
            os.rename(tmp, img)
        if not is_mounted(wmnt):
            run(["mount", "-o", "loop,noatime", str(img), str(wmnt)])
        write_host_files(host, hosts, merged, pubkey, net, net.network_address + 1, self.host_keys(host.name))

    def start_supervisor(self, name: str) -> None:
        hdir = self.hosts_dir / name
        logf = open(hdir / "console.log", "ab")
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "_supervise", "--state-dir", str(self.state),
             "--host", name],
            stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True,
            close_fds=True, cwd="/")
        logf.close()
        write_pidfile(hdir / "supervisor.pid", proc.pid)

    def wait_ready(self, hosts) -> dict:
        states = {}

        def one(host):
            deadline = time.time() + BOOT_TIMEOUT_S
            hdir = self.hosts_dir / host.name
            last = "not started"
            while time.time() < deadline:
                if not read_pidfile(hdir / "supervisor.pid"):
                    states[host.name] = ("failed", "the host's supervisor exited (systemd-nspawn stopped)")
                    return
                if not port_open(str(host.address), 22):
                    last = "ssh port closed"
                    time.sleep(0.3)
                    continue
                try:
                    res = subprocess.run(self.ssh_argv(host.address) + ["systemctl is-system-running --wait"],
                                         capture_output=True, text=True, check=False,
                                         timeout=max(5, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    last = "timed out waiting for systemctl is-system-running"
                    continue
                out = res.stdout.strip().splitlines()
                state = out[-1] if out else ""
                if res.returncode == 255 or not state:
                    last = f"ssh: {res.stderr.strip()[-200:]}"
                    time.sleep(0.5)
                    continue
                if state in ("initializing", "starting"):
                    continue
                detail = ""
                if state != "running":
                    failed = subprocess.run(self.ssh_argv(host.address) +
                                            ["systemctl --failed --no-legend --plain | cut -d' ' -f1"],
                                            capture_output=True, text=True, timeout=20, check=False).stdout.split()
                    detail = "failed units: " + (" ".join(failed) or "none")
                states[host.name] = (state, detail)
                return
            states[host.name] = ("timeout", last)

        threads = [threading.Thread(target=one, args=(h,), daemon=True) for h in hosts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return states

    def ssh_argv(self, address) -> list:
        return ["ssh", "-i", str(self.key), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=5",
                f"root@{address}"]

    def print_summary(self, hosts, states, br, br_addr, booted, elapsed) -> None:
        print(f"sandbox fleet: {len(hosts)} hosts on bridge {br} ({br_addr}); state dir {self.state}")
        print(f"{'HOST':<16}{'ADDRESS':<16}{'GPUS':>4}  {'DISK':>8}  {'STATE':<10} NOTE")
        for h in hosts:
            state, detail = states.get(h.name, ("?", ""))
            note = ("booted" if h.name in booted else "already up") + (f"; {detail}" if detail else "")
            print(f"{h.name:<16}{str(h.address):<16}{h.gpus:>4}  {str(h.disk_gib) + 'GiB':>8}  {state:<10} {note}")
        print(f"ssh: ssh -F {self.key.parent / 'config'} <host>   ({elapsed:.1f}s)")

    # --- down ----------------------------------------------------------------
    def _running_hosts(self, data) -> list:
        names = set(data.get("hosts", {}))
        if self.hosts_dir.exists():
            names.update(p.name for p in self.hosts_dir.iterdir() if p.is_dir())
        return [n for n in sorted(names) if read_pidfile(self.hosts_dir / n / "supervisor.pid")]

    def stop_hosts(self, data: dict, names) -> None:
        cg = data.get("cgroup")
        sups = {}
        for name in names:
            pid = read_pidfile(self.hosts_dir / name / "supervisor.pid")
            if pid:
                sups[name] = pid
                os.kill(pid, signal.SIGTERM)
        alive = wait_gone(sups.values(), STOP_TIMEOUT_S + 10)
        for name in names:
            hdir = self.hosts_dir / name
            if sups.get(name) in alive:
                log(f"{name}: supervisor did not exit, killing it and its container")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(sups[name], signal.SIGKILL)
            nspawn = read_pidfile(hdir / "nspawn.pid")
            if nspawn:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(nspawn, signal.SIGKILL)
            if cg:
                for _attempt in range(50):
                    pids = cgroup_pids(cg, name)
                    if not pids:
                        break
                    for pid in pids:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                    time.sleep(0.1)
                remove_cgroups(cg, name)
            for f in ("supervisor.pid", "nspawn.pid"):
                with contextlib.suppress(FileNotFoundError):
                    (hdir / f).unlink()

    def unmount_host(self, name: str) -> None:
        hdir = self.hosts_dir / name
        umount(hdir / "merged")
        umount(hdir / "weights")
        img = hdir / "weights.img"
        if img.exists():
            res = run(["losetup", "-j", str(img)], check=False, capture=True)
            for line in res.stdout.splitlines():
                dev = line.split(":", 1)[0]
                if dev.startswith("/dev/loop"):
                    run(["losetup", "-d", dev], check=False)

    def down(self, purge: bool = False) -> int:
        if not self.state.exists():
            print("sandbox fleet: nothing to stop (no state dir)")
            return 0
        with locked(self.state / ".lock"):
            data = self.load()
            names = set(data.get("hosts", {}))
            if self.hosts_dir.exists():
                names.update(p.name for p in self.hosts_dir.iterdir() if p.is_dir())
            names = sorted(names)
            running = self._running_hosts(data)
            if running:
                log(f"stopping {len(running)} host(s): {' '.join(running)}")
            self.stop_hosts(data, names)
            for name in names:
                self.unmount_host(name)
            br = (data.get("bridge") or {}).get("name")
            if br and link_exists(br):
                if link_alias(br) == self.owner():
                    run(["ip", "link", "del", br], check=False)
                else:
                    log(f"bridge {br} is not this fleet's ({link_alias(br)!r}); left alone")
            for key, old in (data.get("sysctl") or {}).items():
                if key == INOTIFY_KEY:
                    log(f"restoring {key} = {old}")
                    INOTIFY_PATH.write_text(f"{old}\n")
            data.pop("sysctl", None)
            data["hosts"] = {}
            if purge and self.hosts_dir.exists():
                for name in names:
                    if not is_mounted(self.hosts_dir / name / "merged") and not is_mounted(
                            self.hosts_dir / name / "weights"):
                        shutil.rmtree(self.hosts_dir / name)
                log("purged host overlays and disk images")
            self.save(data)
        print(f"sandbox fleet: down ({len(running)} host(s) stopped)")
        return 0

    # --- status --------------------------------------------------------------
    def status(self) -> int:
        data = self.load()
        br = data.get("bridge") or {}
        names = set(data.get("hosts", {}))
        if self.hosts_dir.exists():
            names.update(p.name for p in self.hosts_dir.iterdir() if p.is_dir())
        print(f"state dir: {self.state}")
        print(f"bridge:    {br.get('name', '-')} {br.get('address', '')} "
              f"({'present' if br.get('name') and link_exists(br['name']) else 'absent'})")
        if INOTIFY_KEY in (data.get("sysctl") or {}):
            print(f"sysctl:    {INOTIFY_KEY} raised (was {data['sysctl'][INOTIFY_KEY]})")
        print(f"{'HOST':<16}{'ADDRESS':<16}{'STATE':<10}{'SSH':<6}{'SUPERVISOR':>11}{'NSPAWN':>9}")
        up = 0
        for name in sorted(names):
            hdir = self.hosts_dir / name
            cfg = read_json(hdir / "boot.json", {}) or {}
            addr = (cfg.get("host") or {}).get("address") or (data.get("hosts", {}).get(name) or {}).get("address", "?")
            sup = read_pidfile(hdir / "supervisor.pid")
            nsp = read_pidfile(hdir / "nspawn.pid")
            ssh_ok = bool(sup) and addr != "?" and port_open(addr, 22)
            up += bool(sup)
            print(f"{name:<16}{addr:<16}{'up' if sup else 'down':<10}{'open' if ssh_ok else '-':<6}"
                  f"{sup or '-':>11}{nsp or '-':>9}")
        print(f"{up} of {len(names)} host(s) up")
        return 0


def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="fleet.py", description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_up = sub.add_parser("up", help="boot every host of the inventory (idempotent)")
    p_up.add_argument("-i", "--inventory", required=True)
    p_up.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR))
    p_down = sub.add_parser("down", help="stop every host this fleet started and undo the machine changes")
    p_down.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR))
    p_down.add_argument("--purge", action="store_true",
                        help="also delete the hosts' overlays and disk images (next `up` starts fresh hosts)")
    p_status = sub.add_parser("status", help="show the fleet's hosts")
    p_status.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR))
    p_sup = sub.add_parser("_supervise")  # internal: the detached per-host supervisor
    p_sup.add_argument("--state-dir", required=True)
    p_sup.add_argument("--host", required=True)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "_supervise":
            return supervise(Path(args.state_dir), args.host)
        fleet = Fleet(args.state_dir)
        if args.cmd == "up":
            return fleet.up(args.inventory)
        if args.cmd == "down":
            return fleet.down(purge=args.purge)
        return fleet.status()
    except FleetError as exc:
        log(f"error: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
