"""Shared basics of the sandbox fleet: paths, errors, logging, commands, files, locks.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection. Standard library only.
"""

import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

SANDBOX_DIR = Path(__file__).resolve().parents[1]  # tests/sandbox
REPO_ROOT = SANDBOX_DIR.parents[1]
ENTRY = SANDBOX_DIR / "fleet.py"  # the command line callers use; also how a host's supervisor is started
DEFAULT_STATE_DIR = REPO_ROOT / ".sandbox"
CACHE_DIR = Path(os.environ.get("LAUNCHCARD_SANDBOX_CACHE", "/var/cache/launchcard-sandbox"))


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


def find_tool(name: str) -> str:
    path = shutil.which(name)
    if path:
        return path
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    raise FleetError(f"{name} not found on PATH (put the project virtualenv's bin/ on PATH)")


def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
