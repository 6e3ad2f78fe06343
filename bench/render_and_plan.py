#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: playbooks/render.yml on generated N-host inventories, and the planner at 1,000 and 10,000 hosts.

Contacts no host and boots nothing (the inventories' addresses are never reached).

- render: ``ansible-playbook playbooks/render.yml`` on an N-host inventory (the sandbox layout of the
  example card, scaled: the hosts spread over its six serving recipes, one router listing every
  prefill and decode worker), wall time and the CPU time of ansible-playbook and its children,
  median of ``--runs`` runs. Goal: 256 hosts under 10 s.
- plan: the card read and planned the way the ``launch_card`` action does (``load_card``,
  ``normalize_placement``, ``plan_fleet``) in this process, CPU time (``time.process_time``),
  median of ``--runs`` runs, for three layouts: ``aggregated`` (every host serves a whole model),
  ``pd`` (prefill and decode hosts behind one router) and ``mixed`` (the render layout; every
  language server lists every encoder, so its output grows with the square of the fleet).
  Goal: 1,000 hosts under 1 s, 10,000 under 10 s.

Results are printed as tables and written to ``bench/results/render-plan.json``.

    python bench/render_and_plan.py                      # render 8 64 256, plan 1000 10000
    python bench/render_and_plan.py --render 8 --plan 1000 --runs 1
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARD = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
BIN = os.path.dirname(os.path.abspath(sys.executable))
SERVING = ("vllm-aggregated", "sglang-encoder", "sglang-language", "sglang-aggregated", "sglang-prefill",
           "sglang-decode")
LAYOUTS = {
    "aggregated": (("vllm-aggregated", "sglang-aggregated"), False),
    "pd": (("sglang-prefill", "sglang-decode"), True),
    "mixed": (SERVING, True),
}
RENDER_GOAL_S = {256: 10.0}
PLAN_GOAL_S = {1000: 1.0, 10000: 10.0}


def address(i):
    return "10.%d.%d.%d" % (64 + i // 65536, i // 256 % 256, i % 256)


def placement(n, recipes, router):
    """``[(host, {"address", "recipes"})]``: n hosts, recipes round-robin, the last one a router."""
    serving = n - 1 if router else n
    hosts = [("gpu-%05d" % i, {"address": address(i), "recipes": [recipes[i % len(recipes)]]}) for i in range(serving)]
    if router:
        hosts.append(("router-0", {"address": address(n), "recipes": ["sglang-router"]}))
    return hosts


def write_inventory(path, n):
    """A YAML inventory of n hosts in the mixed layout, one group per recipe."""
    groups = {}
    for host, spec in placement(n, SERVING, True):
        groups.setdefault(spec["recipes"][0], {})[host] = {"ansible_host": spec["address"]}
    children = dict((name.replace("-", "_"), {"hosts": hosts, "vars": {"launchcard_recipes": [name]}})
                    for name, hosts in groups.items())
    inv = {"all": {"vars": {"launchcard_card_src": CARD, "launchcard_runtime": "native"}, "children": children}}
    with open(path, "w") as f:
        json.dump(inv, f, indent=1)  # JSON is YAML


def time_render(n, runs, workdir):
    inventory = os.path.join(workdir, "hosts-%d.yml" % n)
    write_inventory(inventory, n)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    walls, cpus = [], []
    for run in range(runs):
        out = os.path.join(workdir, "render-%d-%d" % (n, run))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "playbooks/render.yml", "-i", inventory,
                              "-e", "launchcard_render_dir=%s" % out], cwd=ROOT, env=env,
                             capture_output=True, text=True, check=False)
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if res.returncode != 0:
            sys.exit("render.yml failed at %d hosts:\n%s%s" % (n, res.stdout[-3000:], res.stderr[-2000:]))
        written = len(os.listdir(out))
        if written != n:
            sys.exit("render.yml wrote %d host folders for %d hosts" % (written, n))
        shutil.rmtree(out)
        walls.append(wall)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return {"hosts": n, "wall_s": round(statistics.median(walls), 2), "cpu_s": round(statistics.median(cpus), 2),
            "runs": runs, "goal_s": RENDER_GOAL_S.get(n)}


def time_plan(n, layout, runs):
    sys.path.insert(0, os.path.join(ROOT, ".collections"))
    from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
    from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import (
        normalize_placement,
        plan_fleet,
    )
    with open(CARD, "rb") as f:
        raw = f.read()
    recipes, router = LAYOUTS[layout]
    hosts = placement(n, recipes, router)
    cpus = []
    for dummy in range(runs):
        start = time.process_time()
        card = load_card(raw, source=CARD)
        the_plan = plan_fleet({CARD: card}, {CARD: normalize_placement(hosts)})
        cpus.append(time.process_time() - start)
        assert len(the_plan["hosts"]) == n
    return {"hosts": n, "layout": layout, "cpu_s": round(statistics.median(cpus), 3), "runs": runs,
            "goal_s": PLAN_GOAL_S.get(n)}


def verdict(seconds, goal):
    if goal is None:
        return ""
    return "ok (goal < %g s)" % goal if seconds < goal else "OVER the goal of %g s" % goal


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--render", type=int, nargs="*", default=[8, 64, 256], help="fleet sizes for render.yml")
    parser.add_argument("--plan", type=int, nargs="*", default=[1000, 10000], help="fleet sizes for the planner")
    parser.add_argument("--layouts", nargs="*", default=sorted(LAYOUTS), choices=sorted(LAYOUTS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "render-plan.json"))
    args = parser.parse_args()

    results = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpus": os.cpu_count(),
               "load_1min": round(os.getloadavg()[0], 2), "render": [], "plan": []}
    workdir = tempfile.mkdtemp(prefix="launchcard-bench-render-")
    try:
        print("render.yml (wall and CPU seconds, median of %d)" % args.runs)
        print("%6s  %8s  %8s  %s" % ("hosts", "wall_s", "cpu_s", "verdict"))
        for n in args.render:
            r = time_render(n, args.runs, workdir)
            results["render"].append(r)
            print("%6d  %8.2f  %8.2f  %s" % (n, r["wall_s"], r["cpu_s"], verdict(r["wall_s"], r["goal_s"])))
    finally:
        shutil.rmtree(workdir, True)
    print("\nplanner: load_card + plan_fleet, CPU seconds (median of %d)" % args.runs)
    print("%-11s  %6s  %8s  %s" % ("layout", "hosts", "cpu_s", "verdict"))
    for layout in args.layouts:
        for n in args.plan:
            r = time_plan(n, layout, args.runs)
            results["plan"].append(r)
            print("%-11s  %6d  %8.3f  %s" % (layout, n, r["cpu_s"], verdict(r["cpu_s"], r["goal_s"])))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    where = os.path.relpath(args.out, ROOT)
    print("\nload average %.2f on %d CPUs; written to %s" % (results["load_1min"], results["cpus"], where))


if __name__ == "__main__":
    main()
