"""The wheelhouse mounted read-only into every sandbox host: the stand-in engine, sglang-router, huggingface_hub.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection.
"""

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from .base import CACHE_DIR, SANDBOX_DIR, FleetError, locked, log, read_json, run, write_file

STANDIN_SRC = SANDBOX_DIR / "standin_engine"
GUEST_WHEELHOUSE = "/srv/launchcard-wheels"
# huggingface_hub: the weights role's virtualenv (roles/weights, weights_pip_packages), pinned alike.
WHEELHOUSE_PACKAGES = ["sglang-router", "huggingface_hub==2.4.0"]


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
