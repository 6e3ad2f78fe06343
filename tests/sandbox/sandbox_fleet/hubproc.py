"""The sandbox hub endpoint (tests/sandbox/hub) as a process beside the fleet, on the bridge's address.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection. The hosts reach it through
HF_ENDPOINT (the inventories' ``launchcard_hf_endpoint``), as air-gapped fleets reach an internal
mirror. It serves every card of ``cards/`` and ``tests/e2e/cards/`` under its ``hf.repo`` at its ``hf.revision``.

On a fleet that runs the real vLLM (``sandbox_real_vllm``), the example card's repository is the tiny real checkpoint
(realvllm.py) instead, at the card's revision and at ``SECOND_REVISION`` (a newer ``main``), which differ in what
vLLM reports (``max_model_len`` in ``/v1/models``: ``realvllm.TINY_MODELS``).
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
EXAMPLE_CARD = REPO_ROOT / "cards" / "glm-5.3-flash.json"
# the tiny real checkpoint's second revision (the card names the first): sha1 of a fixed sentence
SECOND_REVISION = "ba5ca7dae8b2bc1f12fffa3ea9622ae98aece875"


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


def real_model_specs(models: dict, card: Path = EXAMPLE_CARD) -> list:
    """``repo@revision=folder`` of the example card's repository as the tiny real checkpoints ``models``
    (``{"card": folder, "second": folder}``, realvllm.ensure_tiny_models): the card's revision, then the second."""
    hf = read_json(card)["hf"]
    return [f"{hf['repo']}@{hf['revision']}={models['card']}", f"{hf['repo']}@{SECOND_REVISION}={models['second']}"]


def ensure_hub(state: Path, address: str, port: int = HUB_PORT, real_models=None) -> str:
    """Start the hub on ``address:port`` unless it already runs with the same repositories; returns its URL.

    :param real_models: the tiny real checkpoints (realvllm.ensure_tiny_models) to serve as the example card's
        repository; None: the generated one, as for every card.
    """
    specs = card_repos()
    if real_models:
        real = real_model_specs(real_models)
        repo = real[0].split("@", 1)[0]
        specs = [s for s in specs if s.split("@", 1)[0] != repo] + real
    want = {"address": address, "port": port, "repos": specs}
    if os.environ.get("SANDBOX_HUB_SHARD_BYTES"):  # a bench's shard size (hub/server.py): a changed one restarts it
        want["shard_bytes"] = os.environ["SANDBOX_HUB_SHARD_BYTES"]
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
    # a bench's big shards take the hub seconds to generate and hash before it listens
    deadline = time.time() + (120 if want.get("shard_bytes") else 20)
    while not port_open(address, port):
        if proc.poll() is not None or time.time() > deadline:
            raise FleetError(f"the sandbox hub did not start on {address}:{port}; see {state / 'hub.log'}")
        time.sleep(0.1)
    log(f"hub endpoint on http://{address}:{port} serving {', '.join(specs)}")
    return f"http://{address}:{port}"


def stop_hub(state: Path) -> None:
    stop_pidfile(state / "hub.pid")
