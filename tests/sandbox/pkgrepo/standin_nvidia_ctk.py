#!/usr/bin/env python
# -----------------------------------------------------------------------------
# TEST CODE -- NOT NVIDIA SOFTWARE.
#
# Stand-in `nvidia-ctk` shipped in the stand-in `nvidia-container-toolkit`
# package that tests/sandbox/pkgrepo/build.py builds for the launchcard sandbox.
# It implements, with the real tool's observable effects:
#
#   nvidia-ctk runtime configure --runtime=docker [--config=PATH] [--set-as-default]
#       merges {"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}}
#       into /etc/docker/daemon.json, keeping every other key (creates the file if missing)
#   nvidia-ctk cdi generate --output=PATH
#       writes a CDI spec (cdiVersion, kind nvidia.com/gpu, one device per GPU plus "all")
#       for the simulated GPUs (/etc/launchcard-sandbox/gpus.json) and the loaded driver;
#       fails like the real tool when NVML cannot be initialised (driver/library mismatch)
#   nvidia-ctk system create-dev-char-symlinks --create-all
#       links /dev/char/MAJOR:MINOR to every NVIDIA character device present (none in a sandbox host) and
#       records the call in /run/launchcard-sandbox/nvidia/dev_char_symlinks (one line per run)
#   nvidia-ctk --version
# -----------------------------------------------------------------------------
"""TEST CODE: stand-in nvidia-ctk for the launchcard sandbox (not NVIDIA software)."""

import json
import os
import subprocess
import sys

VERSION = "@CTK_VERSION@"
GPUS_JSON = "/etc/launchcard-sandbox/gpus.json"


def opt(args, name, default=None):
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def runtime_configure(args):
    runtime = opt(args, "--runtime", "docker")
    if runtime != "docker":
        print(f"launchcard sandbox stand-in: runtime {runtime!r} not simulated", file=sys.stderr)
        return 1
    path = opt(args, "--config", "/etc/docker/daemon.json")
    config = {}
    if os.path.exists(path):
        with open(path) as fh:
            text = fh.read()
        if text.strip():
            try:
                config = json.loads(text)
            except ValueError as exc:
                print(f'level=error msg="unable to load config: {exc}"', file=sys.stderr)
                return 1
    config.setdefault("runtimes", {})["nvidia"] = {"args": [], "path": "nvidia-container-runtime"}
    if "--set-as-default" in args:
        config["default-runtime"] = "nvidia"
    write(path, json.dumps(config, indent=4) + "\n")
    print(f'level=info msg="Wrote updated config to {path}"')
    print('level=info msg="It is recommended that docker daemon be restarted."')
    return 0


def cdi_generate(args):
    output = opt(args, "--output")
    smi = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, check=False)
    if smi.returncode != 0:
        print('level=error msg="failed to generate CDI spec: failed to initialize NVML: '
              + (smi.stdout + smi.stderr).strip().splitlines()[0] + '"', file=sys.stderr)
        return 1
    rows = [[c.strip() for c in line.split(",")] for line in smi.stdout.splitlines() if line.strip()]
    text = spec_text([r[:2] for r in rows], rows[0][2] if rows else "unknown")
    if not output:
        sys.stdout.write(text)
        return 0
    write(output, text)
    os.chmod(output, 0o644)
    print('level=info msg="Generated CDI spec with version 0.5.0"')
    return 0


def dev_char_symlinks(args):
    if "--create-all" not in args:
        print("launchcard sandbox stand-in nvidia-ctk: only create-dev-char-symlinks --create-all", file=sys.stderr)
        return 2
    made = []
    for name in sorted(os.listdir("/dev")):
        path = os.path.join("/dev", name)
        if name.startswith("nvidia") and os.path.exists(path) and os.stat(path).st_mode & 0o170000 == 0o020000:
            rdev = os.stat(path).st_rdev
            link = "/dev/char/%d:%d" % (os.major(rdev), os.minor(rdev))
            if not os.path.lexists(link):
                os.symlink(path, link)
                made.append(link)
    os.makedirs("/run/launchcard-sandbox/nvidia", exist_ok=True)
    with open("/run/launchcard-sandbox/nvidia/dev_char_symlinks", "a") as fh:
        fh.write("create-all %d\n" % len(made))
    print('level=info msg="Created %d /dev/char symlinks"' % len(made))
    return 0


def spec_text(rows, driver):
    """The CDI spec for GPUs ``rows`` (``[index, uuid]`` each) and driver version ``driver``: device names
    (index, UUID, ``all``), then the common edits mounting the driver's libraries by their version, as the
    real tool writes them. tests/sandbox/sandbox_fleet/hostfiles.py (sandbox_cdi_spec) uses it too."""
    lines = ["---", "# TEST DATA: written by the launchcard sandbox stand-in nvidia-ctk (not NVIDIA software)",
             'cdiVersion: 0.5.0', "kind: nvidia.com/gpu", "devices:"]
    for index, uuid in rows:
        for name in (index, uuid):
            lines += [f"  - name: \"{name}\"", "    containerEdits:", "      deviceNodes:",
                      f"        - path: /dev/nvidia{index}"]
    lines += ['  - name: all', "    containerEdits:", "      deviceNodes:"]
    lines += [f"        - path: /dev/nvidia{r[0]}" for r in rows]
    lines += ["containerEdits:", "  env:", "    - NVIDIA_VISIBLE_DEVICES=void", "  deviceNodes:",
              "    - path: /dev/nvidiactl", "    - path: /dev/nvidia-uvm", "  mounts:"]
    for lib in ("libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so"):
        lines += [f"    - hostPath: /usr/lib/x86_64-linux-gnu/{lib}.{driver}",
                  f"      containerPath: /usr/lib/x86_64-linux-gnu/{lib}.{driver}",
                  "      options: [ro, nosuid, nodev, bind]"]
    return "\n".join(lines) + "\n"


def main(argv):
    if argv[:1] in (["--version"], ["-v"]):
        print(f"NVIDIA Container Toolkit CLI version {VERSION} (launchcard sandbox stand-in)")
        return 0
    if argv[:2] == ["runtime", "configure"]:
        return runtime_configure(argv[2:])
    if argv[:2] == ["cdi", "generate"]:
        return cdi_generate(argv[2:])
    if argv[:2] == ["system", "create-dev-char-symlinks"]:
        return dev_char_symlinks(argv[2:])
    print(f"launchcard sandbox stand-in nvidia-ctk: not simulated: {' '.join(argv)}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
