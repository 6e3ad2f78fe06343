"""The shared, read-only Debian root filesystems of the sandbox hosts (Debian 12; Debian 13 for podman 5).

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection.
"""

import contextlib
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from .base import CACHE_DIR, FleetError, locked, log, run, write_file

SUITE = "bookworm"
ROOTFS_VERSION = 5  # bump when the rootfs preparation changes: a new rootfs is built beside the old one
ROOTFS = CACHE_DIR / f"rootfs-{SUITE}-v{ROOTFS_VERSION}"
# python3-packaging: ansible.builtin.pip; python3-apt: ansible.builtin.apt; rsync: the weights role's peer copies
# (ansible.posix.synchronize runs it on the seed and on the host it copies to)
PACKAGES = "systemd,systemd-sysv,openssh-server,python3,python3-venv,python3-packaging,python3-apt,dbus,iproute2,ca-certificates,rsync"
# Variants: a host's `sandbox_rootfs` picks one; each is its own read-only base with these packages on top.
# podman: Debian 12's podman 4.3 with crun (containers run with --cgroups=disabled in the hosts, whose
# cgroup v1 controllers are read-only) and fuse-overlayfs; the hosts reach no Debian mirror, so it is
# installed here, once, rather than by the runtime role.
# podman-trixie: Debian 13's podman 5 (Quadlet: the units are .container files, podman-systemd.unit(5)),
# crun and netavark, run the same way (--cgroups=disabled, no session keyring).
# base: with libnuma1, which the real vLLM's compiled ops link (realvllm.py: the native hosts that run it, and its image's
# files), as vLLM's CPU install guide has it installed; in the base rather than a variant of its own, one debootstrap less.
VARIANTS = {
    "base": "libnuma1",
    "podman": "podman,crun,conmon,catatonit,fuse-overlayfs,golang-github-containers-common,containernetworking-plugins",
    "podman-trixie": "podman,crun,conmon,catatonit,golang-github-containers-common,netavark",
}
# the Debian suite of each variant (the same mirror serves both), and its Python (the wheelhouse's wheels)
SUITES = {"podman-trixie": "trixie"}
PYTHONS = {"bookworm": "3.11", "trixie": "3.13"}


def is_podman(variant: str) -> bool:
    """Whether hosts on this root filesystem run containers (registry, container storage off the overlay)."""
    return variant.startswith("podman")


def suite_of(variant: str) -> str:
    return SUITES.get(variant, SUITE)


def python_of(variant: str) -> str:
    return PYTHONS[suite_of(variant)]


def rootfs_path(variant: str = "base") -> Path:
    if variant not in VARIANTS:
        raise FleetError(f"sandbox_rootfs={variant!r}: must be one of {', '.join(sorted(VARIANTS))}")
    if variant == "base":
        return ROOTFS
    return CACHE_DIR / f"rootfs-{suite_of(variant)}-{variant.replace('-' + suite_of(variant), '')}-v{ROOTFS_VERSION}"


def debian_mirror() -> str:
    """The Debian main archive URI named by this machine's own apt sources."""
    override = os.environ.get("LAUNCHCARD_SANDBOX_MIRROR")
    if override:
        return override
    candidates = []  # (priority, uri)
    for path in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        with contextlib.suppress(OSError):
            for stanza in re.split(r"\n\s*\n", path.read_text()):
                fields = {}
                key = None
                for line in stanza.splitlines():
                    if line.startswith("#") or not line.strip():
                        continue
                    if line[0] in " \t" and key:
                        fields[key] += " " + line.strip()
                        continue
                    key, _sep, val = line.partition(":")
                    key = key.strip().lower()
                    fields[key] = val.strip()
                if fields.get("enabled", "yes").lower() == "no":
                    continue
                if "deb" not in fields.get("types", "").split():
                    continue
                for uri in fields.get("uris", "").split():
                    for suite in fields.get("suites", "").split():
                        candidates.append((_mirror_rank(uri, suite, fields.get("components", "")), uri))
    sources_list = Path("/etc/apt/sources.list")
    files = [sources_list] if sources_list.exists() else []
    files += sorted(Path("/etc/apt/sources.list.d").glob("*.list"))
    for path in files:
        with contextlib.suppress(OSError):
            for line in path.read_text().splitlines():
                line = line.split("#", 1)[0].strip()
                parts = line.split()
                if not parts or parts[0] != "deb":
                    continue
                parts = parts[1:]
                if parts and parts[0].startswith("["):
                    while parts and not parts[0].endswith("]"):
                        parts.pop(0)
                    parts = parts[1:]
                if len(parts) >= 3:
                    candidates.append((_mirror_rank(parts[0], parts[1], " ".join(parts[2:])), parts[0]))
    candidates = [c for c in candidates if c[0] > 0]
    if not candidates:
        raise FleetError("no Debian main archive found in /etc/apt/sources.list{,.d/} "
                         "(set LAUNCHCARD_SANDBOX_MIRROR=URI to name one)")
    return max(candidates)[1]


def _mirror_rank(uri: str, suite: str, components: str) -> int:
    if not re.match(r"https?://", uri) or "main" not in components.split():
        return 0
    path = uri.rstrip("/").rsplit("/", 1)[-1]
    if "security" in uri or "-" in suite or path in ("debian-security", "debian-ports"):
        return 0
    rank = 1
    if path == "debian":
        rank += 2
    if suite == SUITE:
        rank += 4
    return rank


def ensure_rootfs(variant: str = "base") -> Path:
    rootfs = rootfs_path(variant)
    packages = ",".join(p for p in (PACKAGES, VARIANTS[variant]) if p)
    if (rootfs / "etc/launchcard-sandbox-rootfs").exists():
        return rootfs
    # one lock per variant: a cold cache (fleet.py cache) debootstraps the variants side by side
    with locked(CACHE_DIR / f".{rootfs.name}.lock"):
        if (rootfs / "etc/launchcard-sandbox-rootfs").exists():
            return rootfs
        for stale in CACHE_DIR.glob(f".{rootfs.name}.tmp*"):
            log(f"removing interrupted rootfs build {stale}")
            shutil.rmtree(stale, ignore_errors=True)
        if rootfs.exists():  # a directory without the marker: never finished
            shutil.rmtree(rootfs)
        mirror = debian_mirror()
        tmp = Path(tempfile.mkdtemp(prefix=f".{rootfs.name}.tmp", dir=CACHE_DIR))
        os.chmod(tmp, 0o755)
        suite = suite_of(variant)
        log(f"building the {variant} rootfs (debootstrap {suite} from {mirror}); this takes a few minutes, once")
        started = time.time()
        res = run(["debootstrap", "--variant=minbase", f"--include={packages}", suite, str(tmp), mirror],
                  check=False, capture=True)
        if res.returncode != 0:
            tail = "\n".join((res.stdout or "").splitlines()[-15:] + (res.stderr or "").splitlines()[-15:])
            shutil.rmtree(tmp, ignore_errors=True)
            raise FleetError(f"debootstrap failed ({res.returncode}):\n{tail}")
        prepare_rootfs(tmp, mirror, packages, suite)
        os.rename(tmp, rootfs)
        log(f"{variant} rootfs ready in {time.time() - started:.0f}s: {rootfs}")
    return rootfs


def prepare_rootfs(root: Path, mirror: str, packages: str = PACKAGES, suite: str = SUITE) -> None:
    """One-time edits to the shared, read-only base of every host."""
    if not (root / "usr/bin/python3").exists():
        raise FleetError("debootstrap produced no /usr/bin/python3")
    write_file(root / "etc/ssh/sshd_config.d/10-launchcard-sandbox.conf",
               "# launchcard sandbox (tests/sandbox/fleet.py): root logs in with the fleet key only\n"
               "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
               "KbdInteractiveAuthentication no\nUseDNS no\n")
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()  # every host gets its own host keys in its overlay
    with contextlib.suppress(FileNotFoundError):
        (root / "root/.ssh/authorized_keys").unlink()
    run(["systemctl", f"--root={root}", "enable", "systemd-networkd.service"], capture=True)
    run(["systemctl", f"--root={root}", "mask",
         "console-getty.service", "container-getty@.service", "getty@.service", "serial-getty@.service",
         "systemd-firstboot.service", "apt-daily.timer", "apt-daily-upgrade.timer"], capture=True)
    write_file(root / "etc/machine-id", "")
    dbus_id = root / "var/lib/dbus/machine-id"
    if dbus_id.exists() or dbus_id.is_symlink():
        dbus_id.unlink()
        dbus_id.symlink_to("/etc/machine-id")
    write_file(root / "etc/resolv.conf",
               "# launchcard sandbox: no DNS and no route out; every fleet host is in /etc/hosts\n")
    with contextlib.suppress(FileNotFoundError):
        (root / "etc/hostname").unlink()
    write_file(root / "etc/launchcard-sandbox-rootfs",
               f"TEST ROOTFS for the launchcard sandbox (tests/sandbox/fleet.py)\nversion={ROOTFS_VERSION}\n"
               f"suite={suite}\npackages={packages}\nmirror={mirror}\nbuilt={time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
