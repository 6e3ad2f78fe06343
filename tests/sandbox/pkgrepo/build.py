#!/usr/bin/env python
"""TEST CODE: a local apt repository of stand-in NVIDIA packages for the launchcard sandbox.

NOT NVIDIA SOFTWARE. The packages carry the real package names and version
strings of NVIDIA's Ubuntu "-server" driver packaging (the naming of the CUDA
network repository for Ubuntu and of Ubuntu's own archive), so the
``nvidia_driver`` role can be tested for real (apt, holds, upgrades, services,
reboot) on sandbox hosts, without NVIDIA's servers or GPUs. Their contents are
small scripts that simulate the observable behaviour:

* ``nvidia-kernel-common-580-server`` (Provides ``nvidia-kernel-common-580-server-<V>``):
  the "kernel module" ``/usr/lib/launchcard-sandbox/nvidia/module_version``, and a
  boot unit that "loads" it: writes ``/run/launchcard-sandbox/nvidia/loaded_version``
  when nothing is loaded yet (first install, or after a reboot: /run is a tmpfs).
  An upgrade therefore leaves the old version loaded until the host reboots.
* ``nvidia-utils-580-server``: ``/usr/lib/launchcard-sandbox/nvidia/library_version``
  (the NVML library). The stand-in ``nvidia-smi`` that ``fleet.py`` installs on GPU
  hosts reads both files: it reports the loaded version, and fails with NVML's
  "Driver/library version mismatch" while they differ -- which is exactly what
  ``accelerator_facts`` turns into ``driver.reboot_required``.
* ``nvidia-compute-utils-580-server``: ``nvidia-persistenced`` + its unit.
* ``nvidia-headless-580-server``: metapackage on the two above at the exact version.
* ``nvidia-fabricmanager-580``: ``nv-fabricmanager`` + ``nvidia-fabricmanager.service``;
  depends on ``nvidia-kernel-common-580-server-<V>`` (same version, as the real one)
  and, like the real daemon, refuses to run when the loaded driver differs from its own version.
* ``nvidia-container-toolkit``: the stand-in ``nvidia-ctk`` (``standin_nvidia_ctk.py``).
* ``linux-headers-<running kernel>``: the guests share this machine's kernel.

AMD (``amd_packages``, for ``roles/rocm``; NOT AMD SOFTWARE either), real names and
version strings of AMD's ROCm 7.0.x packaging, two ROCm versions (ROCM_VERSIONS):

* ``amdgpu-install`` ``<V>.<code>-1`` (all): the repository package. Installs
  ``/etc/apt/sources.list.d/rocm.list`` naming this repository (its URL is baked in at
  build time: ``--bind``/``--port``) signed-by ``/etc/apt/keyrings/rocm.gpg`` (the
  throwaway key, binary), as the real package names repo.radeon.com.
* ``amdgpu-dkms``: the "kernel module" ``/usr/lib/launchcard-sandbox/amdgpu/module_version``
  (one amdgpu driver version, AMDGPU_DKMS_VERSION); depends on ``linux-headers`` like the
  real DKMS package needs them. No module is loaded in a container, so ``modinfo`` finds
  nothing and ``accelerator_facts`` reports ``reboot_required`` as unknown.
* ``rocm`` ``<V>.<code>-1~launchcard1`` (meta): depends on ``rocm-core`` and ``amd-smi-lib``
  at exactly its version. ``amd-smi-lib`` installs the stand-in ``/opt/rocm/bin/amd-smi``
  (+ ``/usr/bin`` link) printing ``amd-smi list --json`` and ``amd-smi static --json`` in the
  shapes ``accelerators.py`` parses: ``AMD_SMI_GPUS`` (default 8) MI300X (0x74a1, 196592 MB).

Huawei Ascend (``ascend_runs.py``, for ``roles/ascend``; NOT HUAWEI SOFTWARE): the
driver, firmware and CANN ``.run`` installers of two HDK releases, under ``<URI>/ascend/``
with a ``SHA256SUMS`` file (not part of the apt index).

Every driver package exists in VERSIONS (two driver versions of one branch), so a
version bump can be tested. The repository is flat (``deb URI /``, as NVIDIA's CUDA
repository) and signed with a throwaway GPG key generated here (``<dir>/gnupg``,
never used for anything else); the public key is served as ``<URI>/launchcard-sandbox-repo.asc``.

    build.py build --dir DIR                      # build (only what changed) into DIR/repo
    build.py serve --dir DIR --bind ADDR --port P # build, then serve DIR/repo over HTTP (detached)
    build.py stop --dir DIR                       # stop the server started by `serve`

Needs dpkg-deb, dpkg-scanpackages (Debian package dpkg-dev, installed if missing)
and gpg (gnupg, installed if missing). Standard library only.
"""

import argparse
import gzip
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ascend_runs import build_runs

HERE = Path(__file__).resolve().parent
BRANCH = "580"
VERSIONS = ["580.95.05", "580.105.08"]
DEB_REVISION = "0ubuntu1"
CTK_VERSION = "1.17.8"
KEY_NAME = "launchcard-sandbox-repo.asc"
KEY_UID = "launchcard sandbox test repository (TEST ONLY, throwaway) <sandbox@launchcard.invalid>"
LIB = "/usr/lib/launchcard-sandbox/nvidia"
RUN = "/run/launchcard-sandbox/nvidia"
# optional start-up time of the stand-in fabric manager, in seconds (read by nvidia_smi_standin.py too)
FABRIC_DELAY = "/etc/launchcard-sandbox/fabricmanager-delay"
# AMD stand-ins (roles/rocm): ROCm releases and the amdgpu driver version their repositories carry.
ROCM_VERSIONS = ["7.0.1", "7.0.2"]
AMDGPU_DKMS_VERSION = "1:6.14.14.30100100-2212064.22.04"
AMD_LIB = "/usr/lib/launchcard-sandbox/amdgpu"
TEST_NOTE = "TEST CODE: launchcard sandbox stand-in (tests/sandbox/pkgrepo), not NVIDIA software."


def log(msg):
    print(f"pkgrepo: {msg}", file=sys.stderr, flush=True)


def ensure_tools():
    missing = [pkg for tool, pkg in (("dpkg-scanpackages", "dpkg-dev"), ("gpg", "gnupg"), ("dpkg-deb", "dpkg"))
               if not shutil.which(tool)]
    if missing:
        log(f"installing {' '.join(missing)}")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, env=env, stdout=subprocess.DEVNULL)


def unit(description, exec_start, kind="simple", extra_unit="", extra_service="", wanted_by="multi-user.target"):
    return (f"# {TEST_NOTE}\n[Unit]\nDescription={description}\n{extra_unit}\n[Service]\nType={kind}\n"
            f"ExecStart={exec_start}\n{extra_service}\n[Install]\nWantedBy={wanted_by}\n")


def daemon_script(name, version, check_loaded):
    check = ""
    if check_loaded:
        check = (f"loaded = open('{RUN}/loaded_version').read().strip() if os.path.exists('{RUN}/loaded_version') "
                 "else None\n"
                 f"if loaded != '{version}':\n"
                 f"    print('{name}: driver version mismatch: loaded %s, {name} {version}' % loaded, flush=True)\n"
                 "    sys.exit(1)\n")
    fabric = ""
    if name == "nv-fabricmanager":
        # the NVLink fabric is up FABRIC_DELAY s after the daemon started (0 without the file); the stand-in
        # nvidia-smi reads the fabric "In Progress" until then
        fabric = (f"delay = float(open('{FABRIC_DELAY}').read().strip() or 0) if os.path.exists('{FABRIC_DELAY}') "
                  "else 0\n"
                  "time.sleep(delay)\n"
                  f"os.makedirs('{RUN}', exist_ok=True)\n"
                  f"open('{RUN}/fabric_up', 'w').close()\n"
                  "print('fabric up after %s s' % delay, flush=True)\n")
    return (f"#!/usr/bin/python3\n# {TEST_NOTE}\n\"\"\"Stand-in {name} {version}: stays up, does nothing.\"\"\"\n"
            "import os, signal, sys, time\n" + check +
            f"print('{name} {version} (launchcard sandbox stand-in) running', flush=True)\n" + fabric +
            "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
            "while True:\n    time.sleep(3600)\n")


def packages(kernel):
    """(name, version, control fields, {path: (content, mode)}, postinst) for every stand-in package."""
    out = []
    for v in VERSIONS:
        dv = f"{v}-{DEB_REVISION}"
        common = f"nvidia-kernel-common-{BRANCH}-server"
        load = (f"#!/bin/sh\n# {TEST_NOTE}\n# 'load' the installed module unless one is loaded already (cleared at boot)\n"
                f"mkdir -p {RUN}\n[ -e {RUN}/loaded_version ] || cp {LIB}/module_version {RUN}/loaded_version\n")
        out.append((common, dv, {"Provides": f"{common}-{v}", "Description": "NVIDIA kernel module (stand-in)"}, {
            f"{LIB}/module_version": (v + "\n", 0o644),
            f"{LIB}/load-module": (load, 0o755),
            "/lib/systemd/system/launchcard-sandbox-nvidia-module.service": (unit(
                "Stand-in: load the NVIDIA kernel module (launchcard sandbox)", f"{LIB}/load-module", "oneshot",
                "DefaultDependencies=no\nBefore=sysinit.target nvidia-persistenced.service nvidia-fabricmanager.service\n",
                "RemainAfterExit=yes\n", "sysinit.target"), 0o644),
        }, "systemctl enable launchcard-sandbox-nvidia-module.service >/dev/null 2>&1 || true\n"
           "systemctl start launchcard-sandbox-nvidia-module.service || true\n"))
        out.append((f"nvidia-utils-{BRANCH}-server", dv, {"Description": "NVIDIA driver support binaries (stand-in)"},
                    {f"{LIB}/library_version": (v + "\n", 0o644)}, ""))
        out.append((f"nvidia-compute-utils-{BRANCH}-server", dv, {"Description": "NVIDIA compute utilities (stand-in)"}, {
            "/usr/bin/nvidia-persistenced": (daemon_script("nvidia-persistenced", v, False), 0o755),
            "/lib/systemd/system/nvidia-persistenced.service": (unit(
                "NVIDIA Persistence Daemon", "/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode"),
                0o644),
        }, ""))
        out.append((f"nvidia-headless-{BRANCH}-server", dv, {
            "Depends": f"{common} (= {dv}), nvidia-compute-utils-{BRANCH}-server (= {dv})",
            "Description": "NVIDIA headless metapackage (stand-in)"}, {}, ""))
        out.append((f"nvidia-fabricmanager-{BRANCH}", dv, {
            "Depends": f"{common}-{v}", "Description": "Fabric Manager for NVSwitch based systems (stand-in)"}, {
            "/usr/bin/nv-fabricmanager": (daemon_script("nv-fabricmanager", v, True), 0o755),
            "/lib/systemd/system/nvidia-fabricmanager.service": (unit(
                "NVIDIA fabric manager service", "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg",
                extra_unit="After=launchcard-sandbox-nvidia-module.service\n"), 0o644),
        }, ""))
    # The guest has python3 only; the source keeps the shebang ansible-test accepts.
    ctk = (HERE / "standin_nvidia_ctk.py").read_text().replace("@CTK_VERSION@", CTK_VERSION).replace(
        "#!/usr/bin/env python\n", "#!/usr/bin/python3\n", 1)
    out.append(("nvidia-container-toolkit", f"{CTK_VERSION}-1", {"Description": "NVIDIA Container toolkit (stand-in)"},
                {"/usr/bin/nvidia-ctk": (ctk, 0o755)}, ""))
    out.append((f"linux-headers-{kernel}", "1.0-launchcard1", {"Description": f"Header files for {kernel} (stand-in)"},
                {f"/usr/src/linux-headers-{kernel}/README.launchcard": (TEST_NOTE + "\n", 0o644)}, ""))
    return out


def rocm_code(version):
    """ROCm's numeric release code: 7.0.2 -> 70002 (the suffix of every package version of the release)."""
    major, minor, patch = (version.split(".") + ["0", "0"])[:3]
    return int(major) * 10000 + int(minor) * 100 + int(patch)


AMD_SMI = r"""#!/usr/bin/python3
# @NOTE@
# Stand-in amd-smi: `list --json` and `static [--asic --vram --driver] --json` for AMD_SMI_GPUS MI300X.
import json, os, sys
count = int(os.environ.get("AMD_SMI_GPUS", "8"))
driver = open("@LIB@/module_version").read().strip() if os.path.exists("@LIB@/module_version") else "N/A"
args = sys.argv[1:]
if "--json" not in args or not args or args[0] not in ("list", "static", "version"):
    print("amd-smi (launchcard sandbox stand-in): only list/static/version --json", file=sys.stderr)
    sys.exit(2)
bdf = lambda i: "0000:%02x:00.0" % (0x05 + 0x10 * i)
if args[0] == "list":
    out = [{"gpu": i, "bdf": bdf(i), "uuid": "6cff74a1-0000-1000-80%02x-launchcardsbx" % i, "kfd_id": 1000 + i,
            "node_id": 2 + i, "partition_id": 0} for i in range(count)]
elif args[0] == "version":
    out = [{"tool": "AMDSMI Tool", "version": "@ROCM@+launchcard", "rocm_version": "@ROCM@"}]
else:
    out = [{"gpu": i,
            "asic": {"market_name": "AMD Instinct MI300X", "vendor_id": "0x1002", "device_id": "0x74a1"},
            "vram": {"type": "HBM", "size": {"value": 196592, "unit": "MB"}},
            "driver": {"name": "amdgpu", "version": driver}} for i in range(count)]
print(json.dumps(out, indent=4))
"""


def amd_packages(kernel, base_url, key):
    """Stand-in AMD ROCm packages (TEST CODE, not AMD software); same tuples as packages()."""
    out = [("amdgpu-dkms", AMDGPU_DKMS_VERSION, {
        "Depends": f"linux-headers-{kernel} | linux-headers", "Description": "amdgpu driver in DKMS format (stand-in)"}, {
        f"{AMD_LIB}/module_version": (AMDGPU_DKMS_VERSION.split(":")[1].split("-")[0] + "\n", 0o644),
    }, "")]
    for rocm in ROCM_VERSIONS:
        code = rocm_code(rocm)
        full = f"{rocm}.{code}"
        out.append(("amdgpu-install", f"{full}-1", {
            "Architecture": "all", "Description": "AMDGPU driver repository and installer (stand-in)"}, {
            "/etc/apt/sources.list.d/rocm.list": (
                f"# {TEST_NOTE}\n# ROCm {rocm} (stand-in of repo.radeon.com/rocm/apt/{rocm} and amdgpu/{rocm})\n"
                f"deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] {base_url} ./\n", 0o644),
            "/etc/apt/keyrings/rocm.gpg": (key, 0o644),
        }, ""))
        out.append(("rocm-core", f"{full}-1~launchcard1", {"Description": "ROCm runtime core (stand-in)"}, {
            f"/opt/rocm-{rocm}/.info/version": (f"{rocm}-{code}\n", 0o644),
        }, f"ln -sfn /opt/rocm-{rocm} /opt/rocm.launchcard-tmp && mv -T /opt/rocm.launchcard-tmp /opt/rocm\n"))
        out.append(("amd-smi-lib", f"{full}-1~launchcard1", {
            "Depends": f"rocm-core (= {full}-1~launchcard1)", "Description": "AMD System Management Interface (stand-in)"}, {
            f"/opt/rocm-{rocm}/bin/amd-smi": (
                AMD_SMI.replace("@NOTE@", TEST_NOTE).replace("@LIB@", AMD_LIB).replace("@ROCM@", rocm), 0o755),
        }, f"ln -sfn /opt/rocm-{rocm}/bin/amd-smi /usr/bin/amd-smi\n"))
        out.append(("rocm", f"{full}-1~launchcard1", {
            "Depends": f"rocm-core (= {full}-1~launchcard1), amd-smi-lib (= {full}-1~launchcard1)",
            "Description": "ROCm meta package (stand-in)"}, {}, ""))
    return out


def build_deb(pool, name, version, fields, files, postinst):
    deb = pool / f"{name}_{version.split(':')[-1]}_{fields.get('Architecture', 'amd64')}.deb"
    digest = hashlib.sha256(repr((name, version, sorted(fields.items()), sorted(files.items()), postinst)).encode())
    stamp = pool / f".{deb.name}.sha256"
    if deb.exists() and stamp.exists() and stamp.read_text() == digest.hexdigest():
        return False
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "DEBIAN").mkdir()
        control = {"Package": name, "Version": version, "Architecture": "amd64",
                   "Maintainer": "launchcard sandbox <sandbox@launchcard.invalid>", "Section": "non-free/libs",
                   "Priority": "optional", **fields}
        control["Description"] += f"\n {TEST_NOTE}"
        (root / "DEBIAN/control").write_text("".join(f"{k}: {val}\n" for k, val in control.items()))
        if postinst:
            (root / "DEBIAN/postinst").write_text(f"#!/bin/sh\nset -e\n# {TEST_NOTE}\n{postinst}")
            os.chmod(root / "DEBIAN/postinst", 0o755)
        files = dict(files)
        files[f"/usr/share/doc/{name}/README.launchcard-sandbox"] = (TEST_NOTE + "\n", 0o644)
        for path, (content, mode) in files.items():
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
            os.chmod(target, mode)
        subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(deb)],
                       check=True, stdout=subprocess.DEVNULL)
    stamp.write_text(digest.hexdigest())
    return True


def gpg(home, *args, **kw):
    return subprocess.run(["gpg", "--homedir", str(home), "--batch", "--quiet", "--yes", *args],
                          check=True, **kw)


def build(directory, base_url):
    ensure_tools()
    repo = directory / "repo"
    repo.mkdir(parents=True, exist_ok=True)
    if build_runs(repo / "ascend"):
        log(f"built the stand-in Ascend installers in {repo / 'ascend'}")
    kernel = os.uname().release
    changed = False
    home = directory / "gnupg"
    if not (home / "pubring.kbx").exists():
        home.mkdir(mode=0o700, exist_ok=True)
        gpg(home, "--passphrase", "", "--quick-gen-key", KEY_UID, "ed25519", "sign", "never")
        changed = True
    key = gpg(home, "--export", capture_output=True).stdout
    every = packages(kernel) + amd_packages(kernel, base_url, key)
    for pkg in every:
        changed |= build_deb(repo, *pkg)
    if not changed and (repo / "InRelease").exists():
        return repo
    packages_text = subprocess.run(["dpkg-scanpackages", "-m", "."], cwd=repo, check=True,
                                   capture_output=True, text=True).stdout
    (repo / "Packages").write_text(packages_text)
    with gzip.GzipFile(repo / "Packages.gz", "wb", mtime=0) as fh:
        fh.write(packages_text.encode())
    release = ["Origin: launchcard-sandbox", "Label: launchcard sandbox stand-in NVIDIA and AMD packages (TEST ONLY)",
               "Architectures: amd64", time.strftime("Date: %a, %d %b %Y %H:%M:%S UTC", time.gmtime())]
    for field, algo in (("MD5Sum", hashlib.md5), ("SHA256", hashlib.sha256)):
        release.append(f"{field}:")
        for name in ("Packages", "Packages.gz"):
            data = (repo / name).read_bytes()
            release.append(f" {algo(data).hexdigest()} {len(data)} {name}")
    (repo / "Release").write_text("\n".join(release) + "\n")
    gpg(home, "--clearsign", "-o", str(repo / "InRelease"), str(repo / "Release"))
    gpg(home, "--armor", "--detach-sign", "-o", str(repo / "Release.gpg"), str(repo / "Release"))
    with open(repo / KEY_NAME, "wb") as fh:
        gpg(home, "--armor", "--export", stdout=fh)
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], check=False)
    log(f"built {repo} ({len(every)} packages, driver versions {', '.join(VERSIONS)}, ROCm {', '.join(ROCM_VERSIONS)})")
    return repo


def _pid(pidfile):
    try:
        pid, start = pidfile.read_text().split()
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(pid) if stat[stat.rindex(")") + 2:].split()[19] == start else None
    except (OSError, ValueError, IndexError):
        return None


def serve(directory, bind, port):
    repo = build(directory, f"http://{bind}:{port}/")
    pidfile = directory / "http.pid"
    if _pid(pidfile):
        log(f"already serving (pid {_pid(pidfile)})")
        return 0
    logf = open(directory / "http.log", "ab")
    proc = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", bind, "--directory", str(repo), str(port)],
                            stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
    stat = Path(f"/proc/{proc.pid}/stat").read_text()
    pidfile.write_text(f"{proc.pid} {stat[stat.rindex(')') + 2:].split()[19]}\n")
    for dummy in range(100):
        with socket.socket() as sock:
            sock.settimeout(0.2)
            if sock.connect_ex((bind, port)) == 0:
                log(f"serving {repo} at http://{bind}:{port}/ (pid {proc.pid})")
                return 0
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    log(f"server did not start, see {directory / 'http.log'}")
    return 1


def stop(directory):
    pidfile = directory / "http.pid"
    pid = _pid(pidfile)
    if pid:
        os.kill(pid, 15)
        log(f"stopped the repository server (pid {pid})")
    pidfile.unlink(missing_ok=True)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("action", choices=["build", "serve", "stop"])
    parser.add_argument("--dir", required=True, type=Path, help="where the repository and its key live")
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8711)
    args = parser.parse_args(argv)
    directory = args.dir.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    if args.action == "build":
        build(directory, f"http://{args.bind}:{args.port}/")
        return 0
    if args.action == "serve":
        return serve(directory, args.bind, args.port)
    return stop(directory)


if __name__ == "__main__":
    sys.exit(main())
