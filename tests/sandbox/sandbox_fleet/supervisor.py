"""The detached per-host supervisor: runs systemd-nspawn and boots the guest again when it reboots.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection.
"""

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .base import ENTRY, read_json
from .procs import cgroup_dirs, cgroup_pids, write_pidfile
from .debrepo import GUEST_DEBREPO
from .wheelhouse import GUEST_WHEELHOUSE

STOP_TIMEOUT_S = 30.0
EXIT_REBOOT = 133


def nspawn_argv(cfg: dict) -> list:
    return [
        "systemd-nspawn", "--quiet", "-b", "--register=no", "--keep-unit", "--console=passive",
        "-D", cfg["merged"], "-M", cfg["name"], f"--network-bridge={cfg['bridge']}",
        "--resolv-conf=off", "--timezone=off", "--link-journal=no",
        f"--bind-ro={cfg['wheelhouse']}:{GUEST_WHEELHOUSE}",
    ] + ([f"--bind-ro={cfg['debrepo']}:{GUEST_DEBREPO}"] if cfg.get("debrepo") else []) + [
        f"--bind={cfg['weights_mount']}:{cfg['weights_dir']}",
    ] + ([f"--bind={cfg['containers_storage']}:/var/lib/containers"] if cfg.get("containers_storage") else [])


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


def start_supervisor(state: Path, name: str) -> None:
    """Start the host's supervisor detached (``fleet.py _supervise``); its PID goes to supervisor.pid."""
    hdir = state / "hosts" / name
    logf = open(hdir / "console.log", "ab")
    proc = subprocess.Popen(
        [sys.executable, str(ENTRY), "_supervise", "--state-dir", str(state), "--host", name],
        stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True,
        close_fds=True, cwd="/")
    logf.close()
    write_pidfile(hdir / "supervisor.pid", proc.pid)
