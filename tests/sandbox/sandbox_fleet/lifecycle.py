"""up / down / status of a sandbox fleet (one state dir).

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection.
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .base import FleetError, locked, log, port_open, read_json, run, write_file
from .hostfiles import (ensure_fleet_key, host_keys, prepare_overlay, prepare_weights_disk, write_host_files,
                        write_ssh_client_files)
from .hubproc import ensure_hub, stop_hub
from .realvllm import ensure_tiny_models, ensure_vllm_env
from .debrepo import ensure_debrepo
from .registry import VLLM_IMAGE_REPOSITORY, ensure_image, ensure_registry, ensure_vllm_image, stop_registry
from .inventory import read_inventory
from .mounts import is_mounted, umount
from .network import bridge_name, ensure_bridge, link_alias, link_exists, network_for
from .procs import cgroup_pids, read_pidfile, remove_cgroups, wait_gone
from .rootfs import ensure_rootfs, is_podman, python_of
from .supervisor import STOP_TIMEOUT_S, start_supervisor
from .wheelhouse import ensure_wheelhouse

INOTIFY_KEY = "fs.inotify.max_user_instances"
INOTIFY_PATH = Path("/proc/sys/fs/inotify/max_user_instances")
BOOT_TIMEOUT_S = float(os.environ.get("LAUNCHCARD_SANDBOX_BOOT_TIMEOUT_S", "240"))


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
            ensure_fleet_key(self.key)
            # (the real vLLM's image takes its files from the base root filesystem: libnuma1)
            rootfs = {v: ensure_rootfs(v) for v in sorted({"base"} | {h.rootfs for h in hosts})}
            # the real vLLM (sandbox_real_vllm): its environment and the tiny real checkpoint, built once per machine
            vllm_env = ensure_vllm_env() if hosts[0].real_vllm else None
            wheelhouse = ensure_wheelhouse(self.state, {python_of(h.rootfs) for h in hosts}, vllm_env=vllm_env)
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
            data["hub"] = ensure_hub(self.state, str(gateway),  # HF_ENDPOINT of the hosts (tests/sandbox/hub)
                                     real_models=ensure_tiny_models(vllm_env) if vllm_env else None)
            if any(is_podman(h.rootfs) for h in hosts):
                # the card's registry, mirrored on the bridge (launchcard_registry_mirrors of the inventory)
                # (with basic auth where the inventory sets sandbox_registry_auth: its launchcard_registry_credentials)
                # (and the real vLLM image under the cards' vLLM image names where the fleet runs it)
                images = {VLLM_IMAGE_REPOSITORY: ensure_vllm_image(rootfs["base"], vllm_env)} if vllm_env else {}
                data["registry"] = ensure_registry(self.state, str(gateway), ensure_image(rootfs["base"], wheelhouse),
                                                   auth=hosts[0].registry_auth, images=images)
            else:
                stop_registry(self.state)
                data.pop("registry", None)
            self.raise_inotify(data, len(hosts))
            if any(h.default_route for h in hosts) and Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() != "0":
                log("warning: sandbox_default_route is set and this machine forwards IPv4 (net.ipv4.ip_forward=1): "
                    "guests may reach beyond the bridge")
            self.save(data)
            pubkey = self.key.with_suffix(".pub").read_text()
            write_ssh_client_files(self.key, hosts)
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
                start_supervisor(self.state, name)
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
        cfg = {
            "name": host.name, "host": host.config(), "merged": str(hdir / "merged"), "bridge": br,
            "wheelhouse": str(wheelhouse), "weights_mount": str(hdir / "weights"), "weights_dir": host.weights_dir,
            "cgroup": data["cgroup"], "rootfs": str(rootfs[host.rootfs]), "debrepo": str(ensure_debrepo()),
        }
        if is_podman(host.rootfs):
            # podman's overlay storage needs an upper directory that is not itself on overlayfs
            cfg["containers_storage"] = str(hdir / "containers")
        return cfg

    def prepare_host(self, host, hosts, rootfs, net, pubkey) -> None:
        """Mounts and per-host files (for a running host: only files are rewritten)."""
        hdir = self.hosts_dir / host.name
        merged = prepare_overlay(hdir, host.name, rootfs[host.rootfs])
        if is_podman(host.rootfs):
            (hdir / "containers").mkdir(mode=0o700, exist_ok=True)
        prepare_weights_disk(hdir, host)
        write_host_files(host, hosts, merged, pubkey, net, net.network_address + 1, host_keys(self.key, host.name))

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
            stop_hub(self.state)
            stop_registry(self.state)
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
