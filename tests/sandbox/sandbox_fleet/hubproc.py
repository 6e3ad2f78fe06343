"""The sandbox hub endpoint (tests/sandbox/hub) as a process beside the fleet, on the bridge's address.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection. The hosts reach it through
HF_ENDPOINT (the inventories' ``launchcard_hf_endpoint``), as air-gapped fleets reach an internal
mirror. It serves every card of ``cards/`` and ``tests/e2e/cards/`` under its ``hf.repo`` at its ``hf.revision``.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .base import REPO_ROOT, SANDBOX_DIR, FleetError, log, port_open, read_json, write_file
from .procs import read_pidfile, stop_pidfile, write_pidfile

HUB_PORT = 8470


CARD_DIRS = (REPO_ROOT / "cards", REPO_ROOT / "tests" / "e2e" / "cards")


def card_repos(cards_dirs=CARD_DIRS) -> list:
    """``owner/name@revision`` of every card in ``cards_dirs`` (the example cards and the e2e test cards)."""
    if isinstance(cards_dirs, Path):
        cards_dirs = (cards_dirs,)
    specs = set()
    for path in sorted(p for d in cards_dirs for p in d.glob("*.json")):
        hf = (read_json(path, {}) or {}).get("hf") or {}
        if hf.get("repo") and hf.get("revision"):
            specs.add(f"{hf['repo']}@{hf['revision']}")
    return sorted(specs)


def ensure_hub(state: Path, address: str, port: int = HUB_PORT) -> str:
    """Start the hub on ``address:port`` unless it already runs with the same repositories; returns its URL."""
    specs = card_repos()
    want = {"address": address, "port": port, "repos": specs}
    pidfile, cfgfile = state / "hub.pid", state / "hub.json"
    pid = read_pidfile(pidfile)
    if pid and read_json(cfgfile, {}) == want and port_open(address, port):
        return f"http://{address}:{port}"
    stop_hub(state)
    args = [sys.executable, "-m", "hub.server", "--bind", address, "--port", str(port)]
    for spec in specs:
        args += ["--repo", spec]
    with open(state / "hub.log", "ab") as logf:
        proc = subprocess.Popen(args, cwd=SANDBOX_DIR, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                                start_new_session=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    write_pidfile(pidfile, proc.pid)
    write_file(cfgfile, json.dumps(want, indent=1) + "\n")
    deadline = time.time() + 20
    while not port_open(address, port):
        if proc.poll() is not None or time.time() > deadline:
            raise FleetError(f"the sandbox hub did not start on {address}:{port}; see {state / 'hub.log'}")
        time.sleep(0.1)
    log(f"hub endpoint on http://{address}:{port} serving {', '.join(specs)}")
    return f"http://{address}:{port}"


def stop_hub(state: Path) -> None:
    stop_pidfile(state / "hub.pid")
