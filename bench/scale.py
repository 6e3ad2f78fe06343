#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the controller's cost per host of a no-op ``playbooks/deploy.yml`` at 24, 256 and 1,000 hosts.

What it runs: the real ``playbooks/deploy.yml``, unchanged, on a generated inventory of N hosts (the sandbox
bench fleet's layout, scaled the way bench/render_and_plan.py scales it: the example card's six serving recipes
round-robin and one router; native runtime, as inventories/bench24), with one substitution: the one module call a
no-op deploy makes per host, ``launchcard.inference.preflight``, is answered on the controller by
bench/scale_preflight.py with what that call reads on a host that already runs the plan (its unit files, states,
record, stamps, healthy endpoints). Everything after it is the deploy's own: the plan, the fleet-wide checks, the
per-host decisions (setup parts, settled or not), the converge task (whose action plugin returns a settled host's
result on the controller: on a real fleet too, a no-op deploy makes no converge round trip), the second gate
stage's decision, the summary and the lock release. No host is contacted (the inventory's addresses are never
reached: a task that tried would fail the run, and the bench checks that every host made exactly one preflight
call, changed nothing and ended healthy).

Why that path is the per-host controller cost: on a no-op deploy the hosts do one module call each, and the rest
of the run is the controller templating per-host expressions, making per-host decisions and running the fleet-wide
tasks. What a real host adds is the module's own run there and its transfer, which do not depend on the fleet's
size. An expression that scans every host's variables or the whole plan for each host makes this cost grow with
the fleet: seconds per host at 1,000 hosts then exceed those at 24.

``controller_s_per_host`` is CPU seconds (ansible-playbook and its forked workers, user + system) per added host:
(CPU at N - CPU at --base hosts) / (N - base), so the fixed cost of a run (interpreter start, collection loading)
is not spread over the hosts; CPU time rather than wall time because the machine is shared (the load average is
recorded), and wall time per host is printed too. ``peak_rss_mb`` is the largest resident size of the run's
processes (the ansible-playbook process, which its workers are forked from), ``mem_gib`` the machine's memory.
The run uses the repository's ``ansible.cfg`` as it is (its forks, its enabled callbacks:
``launchcard.inference.gc_freeze``). Each line is appended to ``bench/results/scale.tsv``.

    python bench/scale.py                          # 24 256 1000, base 8, one run each
    python bench/scale.py --hosts 24 256 --runs 3 --note "before the change"
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(os.path.abspath(sys.executable))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import render_and_plan  # noqa: E402  (the fleet layout and addresses of the render bench)

RESULTS = os.path.join(ROOT, "bench", "results", "scale.tsv")
HEADER = ("date", "hosts", "base_hosts", "cpu_s", "wall_s", "controller_s_per_host", "wall_s_per_host", "runs",
          "forks", "cores", "load_before", "load_after", "commit", "note", "peak_rss_mb",
          "mem_gib")
# what inventories/bench24 sets for its hosts, less the sandbox's connection
FLEET_VARS = {
    "launchcard_runtime": "native",
    "launchcard_runtime_native_packages": ["launchcard-standin-engine", "sglang-router"],
    "launchcard_runtime_native_pip_extra_args": "--no-index --find-links /srv/launchcard-wheels",
    "launchcard_weights_dir": "/var/lib/launchcard/models",
    "launchcard_install_accelerator_stack": False,
    "launchcard_hf_endpoint": "http://198.18.24.1:8470",
    # never reached; a task that tried would fail fast
    "ansible_ssh_common_args": "-o ConnectTimeout=2",
}


def write_inventory(path, n):
    render_and_plan.write_inventory(path, n)
    with open(path) as f:
        inv = json.load(f)
    inv["all"]["vars"].update(FLEET_VARS)
    with open(path, "w") as f:
        json.dump(inv, f, indent=1)


def shadow_collection(workdir):
    """A copy of the collection made of links to this tree, with bench/scale_preflight.py as the preflight action."""
    coll = os.path.join(workdir, "ansible_collections", "launchcard", "inference")
    os.makedirs(os.path.join(coll, "plugins", "action"))
    for name in os.listdir(ROOT):
        if not name.startswith(".") and name != "plugins":
            os.symlink(os.path.join(ROOT, name), os.path.join(coll, name))
    for name in os.listdir(os.path.join(ROOT, "plugins")):
        if name != "action":
            os.symlink(os.path.join(ROOT, "plugins", name), os.path.join(coll, "plugins", name))
    for name in os.listdir(os.path.join(ROOT, "plugins", "action")):
        if name == "preflight.py":
            continue  # a link here would make the copy below overwrite the tree's own file
        os.symlink(os.path.join(ROOT, "plugins", "action", name), os.path.join(coll, "plugins", "action", name))
    shutil.copy(os.path.join(ROOT, "bench", "scale_preflight.py"), os.path.join(coll, "plugins", "action", "preflight.py"))
    return workdir


def check_noop(stdout, calls, n):
    """The run was a no-op deploy of n hosts: one preflight call each, nothing changed, every instance healthy."""
    if sorted(calls) != sorted(set(calls)) or len(calls) != n:
        return "%d preflight calls for %d hosts" % (len(calls), n)
    recap = re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", stdout, re.M)
    if len(recap) != n or any(r[1:] != ("0", "0", "0") for r in recap):
        return "not a no-op on every host: %s" % [r for r in recap if r[1:] != ("0", "0", "0")][:5]
    footer = re.search(r"(\d+) instances? on (\d+) hosts?: (.*)$", stdout, re.M)
    if not footer or footer.group(2) != str(n) or footer.group(3) != "%s healthy" % footer.group(1):
        return "summary: %s" % (footer.group(0) if footer else "none")
    return None


def time_deploy(n, runs, workdir, collections):
    inventory = os.path.join(workdir, "hosts-%d.json" % n)
    write_inventory(inventory, n)
    calls_log = os.path.join(workdir, "calls-%d" % n)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=collections,
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", LAUNCHCARD_BENCH_CALLS=calls_log,
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    walls, cpus, rss = [], [], []
    for dummy in range(runs):
        if os.path.exists(calls_log):
            os.unlink(calls_log)
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            start = time.monotonic()
            proc = subprocess.Popen([os.path.join(BIN, "ansible-playbook"), "playbooks/deploy.yml", "-i", inventory],
                                    cwd=ROOT, env=env, stdout=out, stderr=err, text=True)
            # wait4: this run's CPU (its reaped workers included) and its largest process's peak RSS (Linux: KiB)
            dummy, status, usage = os.wait4(proc.pid, 0)
            wall = time.monotonic() - start
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
        if proc.returncode != 0:
            sys.exit("deploy.yml failed at %d hosts:\n%s%s" % (n, stdout[-4000:], stderr[-2000:]))
        with open(calls_log) as f:
            calls = f.read().split()
        wrong = check_noop(stdout, calls, n)
        if wrong:
            sys.exit("deploy.yml at %d hosts was not the no-op path: %s\n%s" % (n, wrong, stdout[-3000:]))
        walls.append(wall)
        cpus.append(usage.ru_utime + usage.ru_stime)
        rss.append(usage.ru_maxrss / 1024.0)
    return statistics.median(cpus), statistics.median(walls), max(rss)


def forks():
    res = subprocess.run([os.path.join(BIN, "ansible-config"), "dump"], cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg")), check=False)
    found = re.search(r"^DEFAULT_FORKS\([^)]*\) = (\d+)", res.stdout, re.M)
    return found.group(1) if found else "?"


def commit():
    res = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True, check=False).stdout.strip()
    return (res.stdout.strip() or "?") + ("+changes" if dirty else "")


def append(path, line):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a") as f:
        if new:
            f.write("\t".join(HEADER) + "\n")
        f.write("\t".join(str(x) for x in line) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--hosts", type=int, nargs="*", default=[24, 256, 1000], help="fleet sizes")
    parser.add_argument("--base", type=int, default=8, help="fleet size whose cost is the run's fixed part")
    parser.add_argument("--runs", type=int, default=1, help="runs per size (the median is kept)")
    parser.add_argument("--note", default="", help="what the results file says of this run (e.g. the machine's load)")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="launchcard-bench-scale-")
    lines = []
    try:
        collections = shadow_collection(workdir)
        nfork, cores, sha = forks(), os.cpu_count(), commit()
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2.0 ** 30
        base_cpu, base_wall, dummy = time_deploy(args.base, args.runs, workdir, collections)
        print("base: hosts=%d cpu_s=%.2f wall_s=%.2f (the fixed part of a run)" % (args.base, base_cpu, base_wall))
        for n in args.hosts:
            load_before = os.getloadavg()[0]
            cpu, wall, peak_rss = time_deploy(n, args.runs, workdir, collections)
            load_after = os.getloadavg()[0]
            per_host = (cpu - base_cpu) / (n - args.base)
            wall_per_host = (wall - base_wall) / (n - args.base)
            print("hosts=%d controller_s_per_host=%.4f (CPU %.1f s, wall %.1f s, wall per host %.4f s, peak RSS %.0f "
                  "MB, load %.1f -> %.1f on %d cores)"
                  % (n, per_host, cpu, wall, wall_per_host, peak_rss, load_before, load_after, cores))
            sys.stdout.flush()
            line = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), n, args.base, "%.2f" % cpu, "%.2f" % wall,
                    "%.4f" % per_host, "%.4f" % wall_per_host, args.runs, nfork, cores, "%.2f" % load_before,
                    "%.2f" % load_after, sha, args.note, "%.0f" % peak_rss, "%.1f" % mem_gib)
            lines.append(line)
            append(args.out, line)  # each size as it is measured: a 1,000-host run takes a while
    finally:
        shutil.rmtree(workdir, True)
    if len(lines) > 1:
        first, last = float(lines[0][5]), float(lines[-1][5])
        print("per host at %d hosts / at %d hosts: %.2fx" % (lines[-1][1], lines[0][1], last / first if first else 0))


if __name__ == "__main__":
    main()
