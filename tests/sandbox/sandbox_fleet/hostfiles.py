"""What is written into each sandbox host: overlay, weights disk, networkd, hosts, ssh keys, stand-ins.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection: the GPUs, NPUs and the
disk described here are simulated (see tests/sandbox/README.md).
"""

import hashlib
import importlib.util
import json
import os
import shutil
import uuid
from pathlib import Path

from .base import SANDBOX_DIR, log, run, write_file
from .debrepo import GUEST_SOURCES
from .inventory import PCI_BUS_IDS, Host
from .mounts import is_mounted, umount
from .procs import read_pidfile

NVIDIA_SMI_SRC = SANDBOX_DIR / "nvidia_smi_standin.py"
NVIDIA_CTK_SRC = SANDBOX_DIR / "pkgrepo" / "standin_nvidia_ctk.py"
CDI_SPEC = "etc/cdi/nvidia.yaml"
# where fleet.py writes the simulated PCI bus of a bare host (its inventory sets launchcard_pci_devices_dir)
SANDBOX_PCI_DIR = "var/lib/launchcard-sandbox/pci/devices"
SQUATTER_UNIT = "sandbox-squatter.service"
CUDA_FOR_DRIVER = {"580": "13.0", "575": "12.9", "570": "12.8", "565": "12.7", "560": "12.6",
                   "555": "12.5", "550": "12.4", "545": "12.3", "535": "12.2", "530": "12.1", "525": "12.0"}
UUID_NS = uuid.UUID("5f0c6a3e-7d52-4c1e-9b7e-6c61756e6368")


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
    if gpus and host.gpu0_state:
        gpus[0].update(host.gpu0_state)
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
    # the guests' only apt source: the cached repository of Debian's real packages, bound in read-only
    write_file(etc / "apt/sources.list", GUEST_SOURCES)
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
    # sandbox_cdi_spec: the CDI spec the stand-in nvidia-ctk would write for this host's GPUs and that driver
    if host.cdi_spec:
        write_file(merged / CDI_SPEC, _standin_ctk().spec_text(
            [(str(g["index"]), g["uuid"]) for g in gpus_json(host)["gpus"]], host.cdi_spec), 0o644)
    elif (merged / CDI_SPEC).exists():
        (merged / CDI_SPEC).unlink()
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


def _standin_ctk():
    """The stand-in nvidia-ctk (tests/sandbox/pkgrepo), loaded as a module for its CDI spec writer."""
    spec = importlib.util.spec_from_file_location("standin_nvidia_ctk", NVIDIA_CTK_SRC)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------
# the host's disks: its overlay on the shared rootfs, and its weights disk


def prepare_overlay(hdir: Path, name: str, rootfs: Path) -> Path:
    """Mount the host's overlay (upper/work private to the host, the rootfs shared and never written); return it."""
    upper, work, merged = hdir / "upper", hdir / "work", hdir / "merged"
    for d in (upper, work, merged):
        d.mkdir(parents=True, exist_ok=True)
    lower_file = hdir / "lower"
    if lower_file.exists() and lower_file.read_text().strip() != str(rootfs) and not read_pidfile(
            hdir / "supervisor.pid"):
        log(f"{name}: base rootfs changed, starting from a fresh overlay")
        umount(merged)
        shutil.rmtree(upper)
        shutil.rmtree(work)
        upper.mkdir()
        work.mkdir()
    write_file(lower_file, f"{rootfs}\n")
    if not is_mounted(merged):
        run(["mount", "-t", "overlay", f"lc-sandbox-{name}", "-o",
             f"lowerdir={rootfs},upperdir={upper},workdir={work}", str(merged)])
    return merged


def prepare_weights_disk(hdir: Path, host) -> Path:
    """The weights disk: a sparse ext4 image of sandbox_disk_gib GiB, loop-mounted at hdir/weights.

    The supervisor bind-mounts that directory into the guest at launchcard_weights_dir.
    """
    wmnt = hdir / "weights"
    wmnt.mkdir(parents=True, exist_ok=True)
    img = hdir / "weights.img"
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
    return wmnt


# ---------------------------------------------------------------------------
# ssh: the fleet key (root's authorized key in every guest), each guest's host keys, the client files


def ensure_fleet_key(key: Path) -> None:
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(key.parent, 0o700)
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "launchcard-sandbox-fleet", "-f", str(key)])
    os.chmod(key, 0o600)


def host_keys(key: Path, name: str) -> Path:
    """The host's ssh host keys, kept beside the fleet key (stable across `down --purge`)."""
    keys = key.parent / "host_keys" / name
    if not (keys / "etc/ssh/ssh_host_ed25519_key.pub").exists():
        (keys / "etc/ssh").mkdir(parents=True, exist_ok=True)
        run(["ssh-keygen", "-A", "-f", str(keys)], capture=True)
    return keys


def write_ssh_client_files(key: Path, hosts) -> None:
    """.sandbox/ssh/known_hosts and an ssh_config: `ssh -F .sandbox/ssh/config <host>` checks host keys."""
    known, config = [], ["# written by tests/sandbox/fleet.py: ssh -F <this file> <host name or address>", ""]
    for h in hosts:
        for pub in sorted((host_keys(key, h.name) / "etc/ssh").glob("ssh_host_*.pub")):
            ktype, pubkey = pub.read_text().split()[:2]
            known.append(f"{h.name},{h.address} {ktype} {pubkey}")
        config += [f"Host {h.name}", f"    HostName {h.address}", ""]
    config += ["Host " + " ".join([h.name for h in hosts] + [str(h.address) for h in hosts]),
               "    User root", f"    IdentityFile {key}", "    IdentitiesOnly yes",
               f"    UserKnownHostsFile {key.parent / 'known_hosts'}", "    StrictHostKeyChecking yes",
               "    LogLevel ERROR", ""]
    write_file(key.parent / "known_hosts", "\n".join(known) + "\n")
    write_file(key.parent / "config", "\n".join(config))
