#!/usr/bin/env python
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The benchmark tables of docs/speed.md and README's envelope, made from bench/results (the only home of the figures).

    python bench/docs_tables.py [--all]     print the tables
    python bench/docs_tables.py --write     rewrite them in docs/speed.md and README.md (make bench, make bench-upgrade)
    python bench/docs_tables.py --check     exit 1 when either page does not hold them as they are now

noop_vs_ping: from bench/results/noop_vs_ping.tsv (written by bench/noop_vs_ping.sh), one row per fleet size,
its latest result (every result with --all): the date, the ping and no-op deploy medians, the ratio, the forks,
and what the machine was doing (its cores, the 1-minute load average before and after the timed runs, other
sandbox guests running beside it).
upgrade_per_host: from bench/results/upgrade_per_host.tsv (written by bench/upgrade_per_host.sh, no header), one
row per fleet size and target card, its latest result (every result with --all).
upgrade_topologies: from bench/results/upgrade_topologies.tsv (written by bench/upgrade_topologies.py, no header), one
row per topology of the example card, its latest result (every result with --all), then the outages check mode named.
scale: from bench/results/scale.tsv (written by bench/scale.py), one row per fleet size, its latest result (every
result with --all), each size's CPU seconds per host against the smallest size's, then the envelope: the largest
fleet measured and the controller it ran on.
scale_envelope (README.md): the same results in one sentence: each size's wall time and CPU seconds per host, the
largest fleet measured and its controller.
"""

from __future__ import annotations

import csv
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
PAGE = os.path.join(ROOT, "docs", "speed.md")
README = os.path.join(ROOT, "README.md")
UPGRADE_COLUMNS = ["date", "replicas", "card", "upgrade_s", "per_host_s", "ok", "failed", "load_before"]
# bench/upgrade_topologies.py COLUMNS (that file boots fleets when run, so it is not imported here)
TOPOLOGY_COLUMNS = ["date", "commit", "case", "hosts", "ok", "failed", "min_capacity", "s_per_host", "outage_allowed",
                    "load_before", "outages"]


def rows(path, fieldnames=None):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, fieldnames=fieldnames, delimiter="\t"))


def latest(results, key):
    last = {}
    for row in results:
        last[key(row)] = row  # the files are in time order
    return [last[k] for k in sorted(last)]


def machine(row):
    others = int(row["other_guests"])
    busy = "idle otherwise" if others == 0 and float(row["load_before"]) < float(row["cores"]) else (
        "beside %d other sandbox guest%s" % (others, "" if others == 1 else "s") if others else "beside other work")
    return "%s cores, load %s -> %s, %s" % (row["cores"], row["load_before"], row["load_after"], busy)


def noop_table(results, everything=False):
    if not everything:
        results = latest(results, lambda r: int(r["hosts"]))
    out = ["| date (UTC) | hosts | ping | no-op deploy | ratio | forks | the machine |",
           "|---|---|---|---|---|---|---|"]
    for r in results:
        out.append("| %s | %s | %.2f s | %.2f s | %.2fx | %s | %s |" % (
            r["date"][:16].replace("T", " "), r["hosts"], float(r["ping_s"]), float(r["noop_deploy_s"]),
            float(r["ratio"]), r["forks"], machine(r)))
    return "\n".join(out)


def upgrade_table(results, everything=False):
    if not everything:
        results = sorted(latest(results, lambda r: (int(r["replicas"]), r["card"])), key=lambda r: r["date"])
    out = ["| date (UTC) | replicas | to | upgrade | per host | requests ok | failed | load before |",
           "|---|---|---|---|---|---|---|---|"]
    for r in results:
        out.append("| %s | %s | %s | %.1f s | %.1f s | %s | %s | %s |" % (
            r["date"][:16].replace("T", " "), r["replicas"], r["card"].replace("upgrade-", ""), float(r["upgrade_s"]),
            float(r["per_host_s"]), r["ok"], r["failed"], r["load_before"]))
    return "\n".join(out)


def topology_table(results, everything=False):
    if not everything:
        results = sorted(latest(results, lambda r: r["case"]), key=lambda r: r["date"])
    out = ["| date (UTC) | commit | topology | hosts moved | requests ok | failed | min. capacity | per host "
           "| outage allowed | load before |", "|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for r in results:
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s s | %s | %s |" % (
            r["date"][:16].replace("T", " "), r["commit"], r["case"], r["hosts"], r["ok"], r["failed"],
            r["min_capacity"], r["s_per_host"], r["outage_allowed"], r["load_before"]))
        if r["outages"] != "none":
            notes.append("- %s: %s" % (r["case"], r["outages"]))
    return "\n".join(out + ([""] + notes if notes else []))


def scale_table(results, everything=False):
    if not everything:
        results = latest(results, lambda r: int(r["hosts"]))
    smallest = float(results[0]["controller_s_per_host"])
    out = ["| date (UTC) | commit | hosts | CPU | wall | CPU per host | x the %s-host figure | peak RSS | load |"
           % results[0]["hosts"], "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        out.append("| %s | %s | %s | %.0f s | %.0f s | %.2f s | %.2fx | %s | %s -> %s |" % (
            r["date"][:16].replace("T", " "), r["commit"], r["hosts"], float(r["cpu_s"]), float(r["wall_s"]),
            float(r["controller_s_per_host"]), float(r["controller_s_per_host"]) / smallest,
            "%s MB" % r["peak_rss_mb"] if r.get("peak_rss_mb") else "-", r["load_before"], r["load_after"]))
    largest = max(results, key=lambda r: int(r["hosts"]))
    out += ["", "Largest fleet measured: %s hosts, on a controller of %s cores%s." % (
        largest["hosts"], largest["cores"], " and %s GiB of memory" % largest["mem_gib"] if largest.get("mem_gib") else "")]
    return "\n".join(out)


def scale_envelope(results):
    """README's envelope: each size's latest wall time and CPU per host, the largest fleet and its controller."""
    results = latest(results, lambda r: int(r["hosts"]))
    smallest = float(results[0]["controller_s_per_host"])
    sizes = ", ".join("%s hosts %.0f s (%.2f CPU-s per host, %.2fx)" % (
        "{:,}".format(int(r["hosts"])), float(r["wall_s"]), float(r["controller_s_per_host"]),
        float(r["controller_s_per_host"]) / smallest) for r in results)
    largest = max(results, key=lambda r: int(r["hosts"]))
    memory = " and %s GiB" % largest["mem_gib"] if largest.get("mem_gib") else ""
    return ("A deploy that changes nothing, wall time on the controller (CPU seconds per host beyond an 8-host run, "
            "against 24 hosts): %s; largest fleet measured %s hosts, on a controller of %s cores%s (%s, load average "
            "%s to %s)." % (sizes, "{:,}".format(int(largest["hosts"])), largest["cores"], memory,
                            largest["date"][:10], largest["load_before"], largest["load_after"]))


def tables(everything=False):
    return {
        "noop_vs_ping": noop_table(rows(os.path.join(RESULTS, "noop_vs_ping.tsv")), everything),
        "upgrade_per_host": upgrade_table(rows(os.path.join(RESULTS, "upgrade_per_host.tsv"), UPGRADE_COLUMNS),
                                          everything),
        "upgrade_topologies": topology_table(rows(os.path.join(RESULTS, "upgrade_topologies.tsv"), TOPOLOGY_COLUMNS),
                                             everything),
        "scale": scale_table(rows(os.path.join(RESULTS, "scale.tsv")), everything),
    }


def readme_tables():
    return {"scale_envelope": scale_envelope(rows(os.path.join(RESULTS, "scale.tsv")))}


def marked(name):
    """The page's generated block for one table: its markers and what lies between them."""
    return re.compile(r"(<!-- generated: bench/docs_tables\.py %s -->\n).*?(\n<!-- end %s -->)" % (name, name), re.S)


def page_with(text, made, page="docs/speed.md"):
    for name, table in made.items():
        text, found = marked(name).subn(lambda m, t=table: m.group(1) + t + m.group(2), text)
        if found != 1:
            raise ValueError("%s: %d blocks marked for %s, expected 1" % (page, found, name))
    return text


def main(argv):
    everything = "--all" in argv
    if "--write" in argv or "--check" in argv:
        stale = 0
        for page, made in ((PAGE, tables()), (README, readme_tables())):
            name = os.path.relpath(page, ROOT)
            with open(page) as f:
                text = f.read()
            new = page_with(text, made, name)
            if new != text and "--check" in argv:
                print("%s: its benchmark figures differ from bench/results; run python bench/docs_tables.py --write" % name)
                stale = 1
            elif new != text:
                with open(page, "w") as f:
                    f.write(new)
        return stale
    for table in tables(everything).values():
        print(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
