"""``fleet.py cache``: build every cached part of the sandbox at once, the independent ones side by side.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection. A fresh machine (CI) builds the cache cold: three
debootstraps, two pinned engine environments, the wheels, the tiny checkpoints and the real vLLM's image, each waiting
mostly on the package mirror and the disk. ``make test`` starts this in the background beside its other stages;
each part still builds under its own lock, so a fleet booted meanwhile waits for the part it
needs and never builds it twice.
"""

import time
from concurrent.futures import ThreadPoolExecutor

from . import sglang_env
from .base import FleetError, log
from .debrepo import ensure_debrepo
from .realvllm import ensure_tiny_models, ensure_vllm_env
from .registry import ensure_vllm_image
from .rootfs import PYTHONS, VARIANTS, ensure_rootfs
from .wheelhouse import third_party_wheels


def _vllm() -> None:
    env = ensure_vllm_env()
    ensure_tiny_models(env)
    ensure_vllm_image(ensure_rootfs("base"), env)


def parts() -> dict:
    """``{name: build}``: every cached part the sandbox's fleets and tests use."""
    out = {f"rootfs {v}": (lambda v=v: ensure_rootfs(v)) for v in sorted(VARIANTS)}
    out.update({f"wheels py{p}": (lambda p=p: third_party_wheels(p)) for p in sorted(set(PYTHONS.values()))})
    out["sglang parser"] = sglang_env.ensure_env
    out["monitoring packages"] = ensure_debrepo
    out["real vLLM"] = _vllm
    return out


def warm(workers: int = 4) -> int:
    """Build the missing parts (``workers`` at a time); 1 when any failed, naming it."""
    started = time.time()
    todo = parts()
    failed = {}

    def one(name):
        t0 = time.time()
        try:
            todo[name]()
        except FleetError as exc:
            failed[name] = str(exc)
            return
        log(f"cache: {name} ready ({time.time() - t0:.0f}s)")

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, sorted(todo, key=lambda n: n != "real vLLM")))  # the longest chain first
    for name, err in sorted(failed.items()):
        log(f"cache: {name} failed: {err}")
    log(f"cache: {len(todo) - len(failed)} of {len(todo)} parts ready in {time.time() - started:.0f}s")
    return 1 if failed else 0
