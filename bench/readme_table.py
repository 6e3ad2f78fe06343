#!/usr/bin/env python
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Print the README's speed table from bench/results/noop_vs_ping.tsv (written by bench/noop_vs_ping.sh).

    python bench/readme_table.py [--all] [results.tsv]

One row per fleet size: its latest result (every result with --all), with the date, the ping and
no-op deploy medians, the ratio, the forks, and what the machine was doing (its cores, the
1-minute load average before and after the timed runs, other sandbox guests running beside it).
"""

from __future__ import annotations

import csv
import os
import sys

DEFAULT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "noop_vs_ping.tsv")


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def machine(row):
    others = int(row["other_guests"])
    busy = "idle otherwise" if others == 0 and float(row["load_before"]) < float(row["cores"]) else (
        "beside %d other sandbox guest%s" % (others, "" if others == 1 else "s") if others else "beside other work")
    return "%s cores, load %s -> %s, %s" % (row["cores"], row["load_before"], row["load_after"], busy)


def table(results, everything=False):
    if not everything:
        latest = {}
        for row in results:
            latest[int(row["hosts"])] = row  # the file is in time order
        results = [latest[h] for h in sorted(latest)]
    out = ["| date (UTC) | hosts | ping | no-op deploy | ratio | forks | the machine |",
           "|---|---|---|---|---|---|---|"]
    for r in results:
        out.append("| %s | %s | %.2f s | %.2f s | %.2fx | %s | %s |" % (
            r["date"][:16].replace("T", " "), r["hosts"], float(r["ping_s"]), float(r["noop_deploy_s"]),
            float(r["ratio"]), r["forks"], machine(r)))
    return "\n".join(out)


def main(argv):
    everything = "--all" in argv
    paths = [a for a in argv if a != "--all"]
    print(table(rows(paths[0] if paths else DEFAULT), everything))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
