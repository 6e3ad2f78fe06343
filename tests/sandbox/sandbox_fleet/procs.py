"""Processes of the sandbox fleet: pid files that survive pid reuse, and the hosts' cgroups.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection.
"""

import contextlib
import os
import signal
import time
from pathlib import Path

from .base import write_file


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


def stop_pidfile(pidfile: Path) -> None:
    """Stop the process a pid file names (SIGTERM, SIGKILL after 5 s), if it is still that process; remove the file."""
    pid = read_pidfile(pidfile)
    if pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        if wait_gone([pid], 5):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(FileNotFoundError):
        pidfile.unlink()


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


def fleet_pids(cg_name: str) -> set:
    """Every process left in a fleet's cgroup, whichever host it belongs to."""
    return procs_under([Path("/sys/fs/cgroup/systemd") / cg_name, Path("/sys/fs/cgroup/unified") / cg_name])
