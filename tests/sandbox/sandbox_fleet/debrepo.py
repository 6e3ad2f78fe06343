"""A local apt repository of Debian's real ``prometheus`` and ``prometheus-node-exporter`` for the sandbox.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection. The guests have no route out, so the real .deb files
(and every dependency the guests' base rootfs lacks) are downloaded once from this machine's Debian mirror into the
sandbox cache, indexed as a flat repository (``dpkg-scanpackages``) and served on the bridge by the fleet; each guest's
apt sources name it (hostfiles.py), and the roles install the packages with apt, as on a real host.

The closure is what ``apt-get install --download-only`` picks against the base rootfs's own dpkg status: the
podman rootfs is a superset of it, so the repository serves both.
"""

import shutil
import tempfile
import time
from pathlib import Path

from .base import CACHE_DIR, FleetError, locked, log, run, write_file
from .rootfs import SUITE, debian_mirror, ensure_rootfs

#: Debian's packages the sandbox's monitoring roles install (roles/node_exporter, roles/prometheus).
PACKAGES = ("prometheus", "prometheus-node-exporter")
DEBREPO_VERSION = 1
DEBREPO = CACHE_DIR / f"debrepo-{SUITE}-v{DEBREPO_VERSION}"
MARKER = "launchcard-sandbox-debrepo"
#: where each guest sees it (read-only), and its apt sources naming it: the guests' only source (no route out)
GUEST_DEBREPO = "/srv/launchcard-debrepo"
GUEST_SOURCES = ("# written by tests/sandbox/fleet.py: Debian's real packages, cached on the machine "
                 "(tests/sandbox/sandbox_fleet/debrepo.py)\n"
                 f"deb [trusted=yes] file:{GUEST_DEBREPO} ./\n")


def ensure_debrepo() -> Path:
    """The flat repository's folder (``Packages.gz`` and the .deb files), built once under a lock."""
    if (DEBREPO / MARKER).exists():
        return DEBREPO
    base = ensure_rootfs("base")
    with locked(CACHE_DIR / f".{DEBREPO.name}.lock"):
        if (DEBREPO / MARKER).exists():
            return DEBREPO
        started = time.time()
        mirror = debian_mirror()
        log(f"building the monitoring apt repository ({', '.join(PACKAGES)} from {mirror}); once")
        work = Path(tempfile.mkdtemp(prefix=f".{DEBREPO.name}.tmp", dir=CACHE_DIR))
        try:
            _download(base, mirror, work)
            if DEBREPO.exists():
                shutil.rmtree(DEBREPO)
            (work / "repo").rename(DEBREPO)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        log(f"monitoring apt repository ready in {time.time() - started:.0f}s: {DEBREPO}")
    return DEBREPO


def _download(base: Path, mirror: str, work: Path) -> None:
    for d in ("lists/partial", "cache/archives/partial", "repo"):
        (work / d).mkdir(parents=True, exist_ok=True)
    write_file(work / "sources.list", f"deb {mirror} {SUITE} main\n")
    # apt.conf(5): the guests' dpkg status decides what is missing; lists and cache stay in the work folder
    opts = ["-o", f"Dir::State::status={base / 'var/lib/dpkg/status'}",
            "-o", f"Dir::State::Lists={work / 'lists'}", "-o", f"Dir::Cache={work / 'cache'}",
            "-o", f"Dir::Etc::SourceList={work / 'sources.list'}", "-o", "Dir::Etc::SourceParts=/nonexistent",
            "-o", "APT::Architecture=amd64", "-o", "APT::Install-Recommends=false", "-o", "Debug::NoLocking=true"]
    run(["apt-get", "-q"] + opts + ["update"], capture=True)
    run(["apt-get", "-q", "-y", "--download-only"] + opts + ["install"] + list(PACKAGES), capture=True)
    debs = sorted((work / "cache/archives").glob("*.deb"))
    names = {p.name.split("_", 1)[0] for p in debs}
    missing = [p for p in PACKAGES if p not in names]
    if missing:
        raise FleetError(f"apt downloaded no {', '.join(missing)}")
    repo = work / "repo"
    for deb in debs:
        shutil.copy2(deb, repo / deb.name)
    # dpkg-scanpackages(1): a flat repository's index, read by apt as `deb [trusted=yes] URI ./`
    index = run(["dpkg-scanpackages", "--multiversion", "."], capture=True, cwd=repo).stdout
    write_file(repo / "Packages", index)
    run(["gzip", "-k9n", "Packages"], cwd=repo, capture=True)
    write_file(repo / MARKER, f"TEST REPOSITORY of Debian's real packages for the launchcard sandbox\n"
               f"suite={SUITE}\nmirror={mirror}\npackages={' '.join(sorted(names))}\n")


if __name__ == "__main__":
    print(ensure_debrepo())
