# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wait until an engine's health URL answers 200: the units' ``ExecStartPost=``.

Usage: wait-ready.py URL [SECONDS]
       wait-ready.py --accelerators VENDOR [SECONDS]
       wait-ready.py --liveness --unit UNIT (--completion-url URL --model NAME | --workers-url URL
                     --expect-workers N) --timeout S --failures K --lock PATH --state-dir DIR --textfile-dir DIR

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

With ``--liveness`` it is the service a unit's liveness timer fires (see
:func:`liveness`); it exits 0 whatever it finds, having logged it.
Installed by the launchcard.inference units role; stdlib only.
"""

import argparse
import json
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


LIVENESS_METRICS = (
    ("launchcard_liveness_restarts_total", "counter", "restarts",
     "Restarts of the unit by its liveness check after failed probes in a row."),
    ("launchcard_liveness_failures", "gauge", "failures", "Failed liveness probes of the unit in a row."),
)


def liveness_step(state, observed, failures):
    """The liveness decision, pure: ``(new state, action, why)``.

    :param state: ``{"invocation", "failures", "restarts"}`` as the last probe left it (``{}`` at first).
    :param observed: ``{"locked": str or None (who holds the run lock), "active": bool (the unit is active, so
        its readiness check passed), "invocation": the unit's InvocationID, "ok": bool or None (the probe's
        result; None: not probed), "why": what the probe saw}``.
    :param failures: failed probes in a row that restart the unit.
    :returns: action ``restart``, ``fail`` (counted), ``ok``, or ``aside`` (a run holds the lock, or the unit is
        not active: counted failures are dropped, since that run or systemd starts the engine anew).
    """
    new = {"invocation": observed.get("invocation") or "", "failures": int(state.get("failures") or 0),
           "restarts": int(state.get("restarts") or 0)}
    if new["invocation"] != (state.get("invocation") or ""):
        new["failures"] = 0  # a new process of the unit starts its count afresh
    if observed.get("locked"):
        return dict(new, failures=0), "aside", "the run lock is held by %s" % observed["locked"]
    if not observed.get("active"):
        return dict(new, failures=0), "aside", "the unit is not active"
    if observed.get("ok"):
        return dict(new, failures=0), "ok", observed.get("why") or "answered"
    new["failures"] += 1
    if new["failures"] >= failures:
        return dict(new, failures=0, restarts=new["restarts"] + 1), "restart", observed.get("why") or "no answer"
    return new, "fail", observed.get("why") or "no answer"


def probe_completion(opener, url, model, timeout):
    """(ok, why): one 1-token completion of ``model`` at ``url`` within ``timeout`` s."""
    body = json.dumps({"model": model, "prompt": "ping", "max_tokens": 1, "temperature": 0}).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with opener.open(req, timeout=timeout) as resp:
            answer = json.loads(resp.read().decode("utf-8", "replace") or "{}")
    except urllib.error.HTTPError as exc:
        return False, "completion answered %d" % exc.code
    except (OSError, ValueError) as exc:
        return False, "completion: no answer within %ss (%s)" % (timeout, getattr(exc, "reason", exc))
    if not answer.get("choices"):
        return False, "completion answered without choices"
    return True, "completion answered"


def probe_workers(opener, url, expect, timeout):
    """(ok, why): the router's ``GET /workers`` lists at least ``expect`` workers within ``timeout`` s."""
    try:
        with opener.open(url, timeout=timeout) as resp:
            listed = json.loads(resp.read().decode("utf-8", "replace") or "{}").get("workers") or []
    except urllib.error.HTTPError as exc:
        return False, "workers answered %d" % exc.code
    except (OSError, ValueError, AttributeError) as exc:
        return False, "workers: no answer within %ss (%s)" % (timeout, getattr(exc, "reason", exc))
    if len(listed) < expect:
        return False, "the router lists %d of its %d workers" % (len(listed), expect)
    return True, "the router lists %d workers" % len(listed)


def lock_holder(path):
    """Who holds the run lock at ``path`` (its file exists while a run holds it), or None."""
    try:
        with open(path) as f:
            holder = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return "an unreadable lock file (%s)" % exc
    if not isinstance(holder, dict):
        return "an unreadable lock file"
    return "%s, %s, run %s" % (holder.get("user", "?"), holder.get("playbook", "?"), holder.get("run_id", "?"))


def write_atomic(path, text):
    """Write ``text`` beside ``path`` and rename it into place: a reader sees the old file or the new one."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def textfile(unit, state):
    """The node_exporter textfile of one unit's liveness counters."""
    out = []
    for name, kind, key, doc in LIVENESS_METRICS:
        out += ["# HELP %s %s" % (name, doc), "# TYPE %s %s" % (name, kind), '%s{unit="%s"} %d' % (name, unit, state[key])]
    return "\n".join(out) + "\n"


def systemctl(*args):
    return subprocess.run(["systemctl"] + list(args), capture_output=True, text=True, timeout=60, check=False)


def liveness(argv, run=systemctl, log=sys.stderr):
    """Probe the unit once, unless a run holds the host's lock or the unit is not active; restart it after
    ``--failures`` failed probes in a row (``systemctl restart --no-block``: the engine's readiness check then
    runs inside the unit's start); keep the counts in ``--state-dir`` and the metrics in ``--textfile-dir``."""
    parser = argparse.ArgumentParser(prog="wait-ready.py --liveness")
    for flag in ("--unit", "--lock", "--state-dir", "--textfile-dir", "--completion-url", "--model", "--workers-url"):
        parser.add_argument(flag)
    for flag in ("--timeout", "--failures", "--expect-workers"):
        parser.add_argument(flag, type=int, default=1)
    args = parser.parse_args(argv)
    state_path = os.path.join(args.state_dir, args.unit + ".json")
    try:
        with open(state_path) as f:
            state = json.load(f)
    except (OSError, ValueError):
        state = {}
    observed = {"locked": lock_holder(args.lock)}
    if not observed["locked"]:
        show = run("show", "-p", "ActiveState,InvocationID", "--", args.unit).stdout
        props = dict(line.split("=", 1) for line in show.splitlines() if "=" in line)
        observed.update(active=props.get("ActiveState") == "active", invocation=props.get("InvocationID", ""))
        if observed["active"]:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the engine's own port
            if args.workers_url:
                observed["ok"], observed["why"] = probe_workers(opener, args.workers_url, args.expect_workers,
                                                                args.timeout)
            else:
                observed["ok"], observed["why"] = probe_completion(opener, args.completion_url, args.model,
                                                                   args.timeout)
    new, action, why = liveness_step(state, observed, args.failures)
    if action == "fail":
        log.write("%s: probe failed (%d of %d): %s\n" % (args.unit, new["failures"], args.failures, why))
    elif action == "restart":
        log.write("%s: restarting it after %d failed probes in a row: %s\n" % (args.unit, args.failures, why))
        done = run("restart", "--no-block", "--", args.unit)
        if done.returncode != 0:
            log.write("%s: systemctl restart failed: %s\n" % (args.unit, (done.stderr or done.stdout).strip()))
    elif action == "aside" and state.get("failures"):
        log.write("%s: %s; not probing\n" % (args.unit, why))
    write_atomic(state_path, json.dumps(new))
    if args.textfile_dir and os.path.isdir(args.textfile_dir):
        write_atomic(os.path.join(args.textfile_dir, "launchcard-liveness-%s.prom" % args.unit), textfile(args.unit, new))
    log.flush()
    return 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--liveness":
        return liveness(argv[2:])
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
