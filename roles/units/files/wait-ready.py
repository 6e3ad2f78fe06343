# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wait until an engine's health URL answers 200: the units' ``ExecStartPost=``.

Usage: wait-ready.py URL [SECONDS]
       wait-ready.py --accelerators VENDOR [SECONDS]

systemd keeps the unit "activating" while this runs, so "active" means the
engine answers, not only that its process started (vLLM and SGLang do not
speak sd_notify, so ``Type=notify`` cannot say so). systemd bounds the wait
with the unit's ``TimeoutStartSec=`` and stops it when the engine exits;
SECONDS (default 3600) bounds it here too. systemd waits for this check even
when the engine has exited, so the check ends as soon as the engine's process
($MAINPID, which systemd gives ExecStartPost=) is gone. Exit 0: healthy; 1:
not in time, or the engine exited.

With ``--accelerators nvidia`` it is an ``ExecStartPre=``: it waits until
``nvidia-smi`` lists the GPUs and every GPU's NVLink fabric is up
(``fabric.state`` ``Completed``, or ``[N/A]`` where there is no fabric), so an
engine started at boot waits for the fabric manager instead of failing with
CUDA error 802 and spending its start limit. A host without ``nvidia-smi``
is not waited for (nothing can tell). Exit 0: usable; 1: not in time.
Installed by the launchcard.inference units role; stdlib only.
"""

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


# nvidia-smi --query-gpu fields (nvidia-smi(1)); fabric.state reads "Completed" once the fabric manager has
# trained the GPU's NVLinks, "[N/A]" on GPUs without NVSwitch (field-notes: Ampere reports [N/A] too)
NVIDIA_QUERY = ["--query-gpu=index,fabric.state", "--format=csv,noheader"]
FABRIC_UP = ("Completed", "[N/A]", "N/A")


def nvidia_usable(run=subprocess.run, which=shutil.which):
    """(usable, why): True when there is no nvidia-smi to ask, or every GPU it lists has its fabric up."""
    smi = which("nvidia-smi")
    if not smi:
        return True, "no nvidia-smi"
    try:
        out = run([smi] + NVIDIA_QUERY, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, "nvidia-smi: %s" % exc
    if out.returncode != 0:
        return False, "nvidia-smi exit %d: %s" % (out.returncode, (out.stdout + out.stderr).strip()[:200])
    rows = [[cell.strip() for cell in line.split(",", 1)] for line in out.stdout.splitlines() if line.strip()]
    if not rows:
        return False, "nvidia-smi lists no GPU"
    down = ["GPU %s fabric %s" % (row[0], row[1] if len(row) > 1 else "?") for row in rows
            if len(row) < 2 or row[1] not in FABRIC_UP]
    return (not down), ", ".join(down) or "usable"


def wait_accelerators(vendor, seconds, check=None, sleep=time.sleep, clock=time.monotonic):
    """Poll until the vendor's accelerators are usable; 0 when they are, 1 after ``seconds``."""
    check = check or {"nvidia": nvidia_usable}.get(vendor)
    if check is None:
        return 0
    deadline, said = clock() + seconds, None
    while True:
        usable, why = check()
        if usable:
            return 0
        if why != said:
            sys.stderr.write("waiting for usable %s accelerators: %s\n" % (vendor, why))
            sys.stderr.flush()
            said = why
        left = deadline - clock()
        if left <= 0:
            sys.stderr.write("%s accelerators not usable in time: %s\n" % (vendor, why))
            return 1
        sleep(min(5.0, left))


def main(argv):
    if len(argv) in (3, 4) and argv[1] == "--accelerators":
        return wait_accelerators(argv[2], float(argv[3]) if len(argv) == 4 else 3600.0)
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: wait-ready.py URL [SECONDS]\n")
        return 2
    url, deadline = argv[1], time.monotonic() + (float(argv[2]) if len(argv) == 3 else 3600.0)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the engine's own port
    last = "no answer"
    main_pid = int(os.environ.get("MAINPID") or 0)
    while time.monotonic() < deadline:
        if main_pid and not alive(main_pid):
            sys.stderr.write("the engine (PID %d) exited before %s answered\n" % (main_pid, url))
            return 1
        try:
            with opener.open(url, timeout=5) as resp:
                if resp.status == 200:
                    return 0
                last = "answered %d" % resp.status
        except urllib.error.HTTPError as exc:
            last = "answered %d" % exc.code
        except (OSError, ValueError) as exc:
            last = "no answer (%s)" % getattr(exc, "reason", exc)
        time.sleep(2)
    sys.stderr.write("%s not ready in time: %s\n" % (url, last))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
