"""TEST CODE: stand-in Huawei Ascend ``.run`` installers for the launchcard sandbox.

NOT HUAWEI SOFTWARE. The files carry the real installer names of Huawei's HDK
(driver, firmware) and CANN (toolkit, operator kernels, NNAL) packages for two
HDK releases, so ``roles/ascend`` can be tested for real (download with checksum,
order, upgrade, reboot, ``npu-smi``) on sandbox hosts. Each is a short shell
script that behaves like the real installer where the role depends on it:

* every installer takes ``--quiet`` and refuses unknown options, and must run as root;
* driver ``--full --install-for-all`` (first install) refuses when a driver is
  installed, ``--upgrade`` refuses when none is; both need the ``HwHiAiUser``
  user and group. It writes ``/usr/local/Ascend/driver/version.info``
  (``Version=<V>``) and ``/etc/ascend_install.info``, installs the stand-in
  ``npu-smi`` (``standin_npu_smi.py``) and a boot unit that "loads" the
  installed driver (``/run/launchcard-sandbox/ascend/loaded_version``). A first
  install loads it at once; an upgrade only at the next boot (``/run`` is a tmpfs).
* firmware ``--full`` / ``--upgrade`` is flashed "through the running driver":
  it refuses when no driver runs, or when the running driver is not the
  installed one (the driver was upgraded first: wrong order, or no reboot yet).
  Writes ``/usr/local/Ascend/firmware/version.info``.
* CANN toolkit ``--install`` writes ``ascend-toolkit/<V>/<arch>-linux/ascend_toolkit_install.info``
  (``version=<V>``), ``ascend-toolkit/latest`` and ``set_env.sh``; kernels and
  NNAL refuse unless the toolkit of the same version is the latest one.

``build_runs(out)`` writes them and ``SHA256SUMS`` into *out* (only when changed).
"""

import hashlib
import platform
from pathlib import Path

HERE = Path(__file__).resolve().parent
HDK = [("24.1.0", "7.5.0.3.220"), ("25.2.0", "7.7.0.6.236")]  # (driver, firmware) per HDK release
CANN = "8.2.RC1"
SOC = "910b"
NOTE = "TEST CODE: launchcard sandbox stand-in (tests/sandbox/pkgrepo/ascend_runs.py), not Huawei software."

COMMON = r"""#!/bin/bash
# @NOTE@
set -euo pipefail
NAME=@NAME@
VERSION=@VERSION@
mode=""
for arg in "$@"; do
  case "$arg" in
    --quiet|--install-for-all|--nox11) ;;
    --full|--install|--upgrade|--check) mode="$arg" ;;
    *) echo "[ERROR] $NAME: unknown option $arg" >&2; exit 1 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "[ERROR] $NAME: run as root" >&2; exit 1; }
[ -n "$mode" ] || { echo "[ERROR] $NAME: one of --full, --install, --upgrade, --check is required" >&2; exit 1; }
[ "$mode" = --check ] && { echo "$NAME $VERSION: package is complete"; exit 0; }
mkdir -p /var/log/ascend_seclog
log() { echo "[$(date '+%F %T')] $NAME $VERSION $mode: $*" >> /var/log/ascend_seclog/ascend_install.log; }
version_of() { if [ -f "$1" ]; then sed -n 's/^[Vv]ersion=//p' "$1" | head -n1; fi; }
RUN=/run/launchcard-sandbox/ascend
"""

DRIVER = r"""
id HwHiAiUser >/dev/null 2>&1 && getent group HwHiAiUser >/dev/null \
  || { echo "[ERROR] $NAME: user and group HwHiAiUser do not exist; create them before installing the driver" >&2; exit 1; }
have="$(version_of /usr/local/Ascend/driver/version.info)"
case "$mode" in
  --full) [ -z "$have" ] || { echo "[ERROR] $NAME: driver $have is installed; use --upgrade" >&2; exit 1; } ;;
  --upgrade) [ -n "$have" ] || { echo "[ERROR] $NAME: no driver installed; use --full" >&2; exit 1; } ;;
  *) echo "[ERROR] $NAME: the driver takes --full or --upgrade" >&2; exit 1 ;;
esac
mkdir -p /usr/local/Ascend/driver/lib64 /usr/local/Ascend/driver/tools /usr/local/sbin /usr/local/dcmi
printf 'Version=%s\nascendhal_version=7.35.23\n' "$VERSION" > /usr/local/Ascend/driver/version.info
printf 'UserName=HwHiAiUser\nUserGroup=HwHiAiUser\nDriver_Install_Type=full\nDriver_Install_Path_Param=/usr/local/Ascend\n' > /etc/ascend_install.info
cat > /usr/local/sbin/npu-smi <<'LAUNCHCARD_NPU_SMI'
@NPU_SMI@
LAUNCHCARD_NPU_SMI
chmod 0755 /usr/local/sbin/npu-smi
cat > /etc/systemd/system/launchcard-standin-ascend-driver.service <<'LAUNCHCARD_UNIT'
# @NOTE@
[Unit]
Description=Load the stand-in Ascend driver (launchcard sandbox, TEST ONLY)
[Service]
Type=oneshot
ExecStartPre=/bin/mkdir -p /run/launchcard-sandbox/ascend
ExecStart=/bin/sh -c 'sed -n "s/^Version=//p" /usr/local/Ascend/driver/version.info > /run/launchcard-sandbox/ascend/loaded_version'
[Install]
WantedBy=multi-user.target
LAUNCHCARD_UNIT
mkdir -p /etc/systemd/system/multi-user.target.wants
ln -sf ../launchcard-standin-ascend-driver.service /etc/systemd/system/multi-user.target.wants/
mkdir -p "$RUN"
if [ ! -s "$RUN/loaded_version" ]; then
  echo "$VERSION" > "$RUN/loaded_version"   # first install: the modules load now
  log "installed and loaded"
else
  log "installed; reboot to load it"
  echo "$NAME: driver $VERSION installed; reboot the system for it to take effect"
fi
"""

FIRMWARE = r"""
installed="$(version_of /usr/local/Ascend/driver/version.info)"
loaded="$(cat "$RUN/loaded_version" 2>/dev/null || true)"
[ -n "$loaded" ] || { echo "[ERROR] $NAME: no Ascend driver is running; install the driver first" >&2; exit 1; }
[ "$loaded" = "$installed" ] || {
  echo "[ERROR] $NAME: the running driver ($loaded) is not the installed one ($installed):" \
       "upgrade the firmware before the driver, or reboot first" >&2; exit 1; }
have="$(version_of /usr/local/Ascend/firmware/version.info)"
case "$mode" in
  --full) [ -z "$have" ] || { echo "[ERROR] $NAME: firmware $have is installed; use --upgrade" >&2; exit 1; } ;;
  --upgrade) [ -n "$have" ] || { echo "[ERROR] $NAME: no firmware installed; use --full" >&2; exit 1; } ;;
  *) echo "[ERROR] $NAME: the firmware takes --full or --upgrade" >&2; exit 1 ;;
esac
mkdir -p /usr/local/Ascend/firmware
printf 'Version=%s\n' "$VERSION" > /usr/local/Ascend/firmware/version.info
log "flashed; active after the next reboot"
echo "$NAME: firmware $VERSION upgraded; reboot the system for it to take effect"
"""

TOOLKIT = r"""
[ "$mode" = --install ] || [ "$mode" = --upgrade ] || { echo "[ERROR] $NAME: the toolkit takes --install or --upgrade" >&2; exit 1; }
base=/usr/local/Ascend/ascend-toolkit
mkdir -p "$base/$VERSION/$(uname -m)-linux"
printf 'package_name=Ascend-cann-toolkit\nversion=%s\n' "$VERSION" > "$base/$VERSION/$(uname -m)-linux/ascend_toolkit_install.info"
ln -sfn "$VERSION" "$base/latest"
printf '# %s\nexport ASCEND_TOOLKIT_HOME=%s/latest\nexport ASCEND_HOME_PATH=%s/latest\n' "@NOTE@" "$base" "$base" > "$base/set_env.sh"
log "installed"
"""

NEEDS_TOOLKIT = r"""
[ "$mode" = --install ] || [ "$mode" = --upgrade ] || { echo "[ERROR] $NAME: takes --install or --upgrade" >&2; exit 1; }
toolkit="$(version_of "/usr/local/Ascend/ascend-toolkit/latest/$(uname -m)-linux/ascend_toolkit_install.info")"
[ "$toolkit" = "$VERSION" ] || { echo "[ERROR] $NAME: needs CANN toolkit $VERSION installed first (found: ${toolkit:-none})" >&2; exit 1; }
"""

KERNELS = NEEDS_TOOLKIT + r"""
mkdir -p "/usr/local/Ascend/ascend-toolkit/$VERSION/opp_kernel"
printf 'Version=%s\n' "$VERSION" > "/usr/local/Ascend/ascend-toolkit/$VERSION/opp_kernel/version.info"
log "installed"
"""

NNAL = NEEDS_TOOLKIT + r"""
mkdir -p "/usr/local/Ascend/nnal/atb/$VERSION"
printf 'Version=%s\n' "$VERSION" > "/usr/local/Ascend/nnal/atb/$VERSION/version.info"
ln -sfn "$VERSION" /usr/local/Ascend/nnal/atb/latest
printf '# %s\nexport ATB_HOME_PATH=/usr/local/Ascend/nnal/atb/latest\n' "@NOTE@" > /usr/local/Ascend/nnal/atb/set_env.sh
log "installed"
"""


def file_names(arch=None):
    """``[(component, version, file name), ...]`` of every stand-in installer, Huawei's naming."""
    arch = arch or platform.machine()
    hdk_arch = "x86-64" if arch == "x86_64" else arch
    names = []
    for driver, firmware in HDK:
        names.append(("driver", driver, f"Ascend-hdk-{SOC}-npu-driver_{driver}_linux-{hdk_arch}.run"))
        names.append(("firmware", firmware, f"Ascend-hdk-{SOC}-npu-firmware_{firmware}.run"))
    names.append(("toolkit", CANN, f"Ascend-cann-toolkit_{CANN}_linux-{arch}.run"))
    names.append(("kernels", CANN, f"Ascend-cann-kernels-{SOC}_{CANN}_linux-{arch}.run"))
    names.append(("nnal", CANN, f"Ascend-cann-nnal_{CANN}_linux-{arch}.run"))
    return names


def script(component, version, name):
    body = {"driver": DRIVER, "firmware": FIRMWARE, "toolkit": TOOLKIT, "kernels": KERNELS, "nnal": NNAL}[component]
    text = (COMMON + body).replace("@NAME@", name).replace("@VERSION@", version).replace("@NOTE@", NOTE)
    npu_smi = (HERE / "standin_npu_smi.py").read_text().rstrip("\n")
    # the guests have python3 only (no `python`)
    return text.replace("@NPU_SMI@", npu_smi.replace("#!/usr/bin/env python\n", "#!/usr/bin/python3\n", 1))


def build_runs(out):
    """Write the stand-in installers and SHA256SUMS into *out*; return True if anything changed."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    changed = False
    sums = []
    for component, version, name in file_names():
        data = script(component, version, name).encode()
        path = out / name
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
            path.chmod(0o644)  # served, not run here: the role makes its copy executable
            changed = True
        sums.append(f"{hashlib.sha256(data).hexdigest()}  {name}\n")
    text = "".join(sums)
    if not (out / "SHA256SUMS").exists() or (out / "SHA256SUMS").read_text() != text:
        (out / "SHA256SUMS").write_text(text)
        changed = True
    return changed
