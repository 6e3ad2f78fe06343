#!/usr/bin/env python
"""Benchmark: the card's revision staged on the 24-host fleet from empty, copied from one seed against fanned out.

    python bench/weights_fanout.py [--modes peer:0,peer:2] [--shard-mib 64] [--bwlimit-kib 5120] [--runs 1] [--keep]

Boots inventories/fanout24 (21 engine hosts of one card, 3 routers, 198.18.26.0/24, state dir .sandbox-fanout) with
the sandbox hub serving revisions of two shards of ``--shard-mib`` MiB each (SANDBOX_HUB_SHARD_BYTES,
tests/sandbox/hub/server.py), runs ``deploy.yml --tags weights`` once to install the weights virtualenv (not timed),
then per run and mode: deletes the repository's folder on every host, reads the hub's byte counter
(``/_sandbox/stats``), times ``deploy.yml --tags weights`` with the mode, reads the counter again. Modes:
``peer:F`` (the peer source with launchcard_weights_fanout=F; ``peer:0`` is one seed copying to every other host
at once, the behaviour before the fan-out) and ``hub`` (every host downloads). ``--bwlimit-kib`` is
launchcard_weights_peer_bwlimit_kib: what one source sends in a wave, in all, as a link would carry it (the hosts
share this machine's bridge, which has no such limit). The default, 128 MiB at 5 MiB/s, is about 25 s a copy: the
ratio of issue #28's 306 GiB over a 100 Gb/s link (about 26 s). Each result is appended to
bench/results/weights_fanout.tsv with the machine's load and the other sandbox guests running beside it; the
fleet is purged at the end (``--keep`` leaves it up).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INVENTORY = "inventories/fanout24/gpus.ini"
STATE = ".sandbox-fanout"
HUB = "http://198.18.26.1:8470"
RESULTS = ROOT / "bench" / "results" / "weights_fanout.tsv"
HEADER = ("date", "hosts", "engine_hosts", "mode", "fanout", "bwlimit_kib", "revision_bytes", "hub_bytes",
          "hub_copies", "waves", "wall_s", "cores", "load_before", "load_after", "other_guests")


def env():
    return dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
                PATH="%s:%s" % (ROOT / ".venv" / "bin", os.environ.get("PATH", "")))


def run(args, **kw):
    return subprocess.run(args, cwd=ROOT, env=kw.pop("env", env()), text=True, capture_output=True, check=False, **kw)


def must(res, what):
    if res.returncode != 0:
        sys.exit("bench: %s failed (rc %d):\n%s\n%s" % (what, res.returncode, res.stdout[-4000:], res.stderr[-2000:]))
    return res


def hub_stats():
    with urllib.request.urlopen(HUB + "/_sandbox/stats", timeout=10) as resp:
        return json.load(resp)


def revision_bytes(card):
    hf = json.loads((ROOT / card).read_text())["hf"]
    url = "%s/api/models/%s/tree/%s" % (HUB, hf["repo"], hf["revision"])
    with urllib.request.urlopen(url, timeout=10) as resp:
        return hf, sum(e["size"] for e in json.load(resp))


def guests():
    res = subprocess.run(["pgrep", "-c", "-x", "systemd-nspawn"], capture_output=True, text=True, check=False)
    return int(res.stdout.strip() or 0)


def load1():
    return Path("/proc/loadavg").read_text().split()[0]


def hosts_of(inventory):
    res = must(run(["ansible-inventory", "-i", inventory, "--list"]), "ansible-inventory")
    hostvars = json.loads(res.stdout)["_meta"]["hostvars"]
    engines = [h for h, v in hostvars.items() if "sglang-router" not in str(v.get("launchcard_recipes"))]
    return sorted(hostvars), sorted(engines)


def mode_vars(mode, bwlimit):
    if mode == "hub":
        return ["-e", "launchcard_weights_source=hub"], None
    source, dummy, fanout = mode.partition(":")
    if source != "peer" or not fanout.isdigit():
        sys.exit("bench: mode %r: want peer:F or hub" % mode)
    return ["-e", "launchcard_weights_fanout=%s" % fanout, "-e", "launchcard_weights_peer_bwlimit_kib=%d" % bwlimit], \
        int(fanout)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--modes", default="peer:0,peer:2")
    ap.add_argument("--shard-mib", type=int, default=64)
    ap.add_argument("--bwlimit-kib", type=int, default=5120)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="leave the fleet up")
    ap.add_argument("--no-warm-up", action="store_true", help="the fleet's weights virtualenv is in place already")
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    boot_env = dict(env(), SANDBOX_HUB_SHARD_BYTES=str(args.shard_mib << 20))
    must(run([sys.executable, "tests/sandbox/fleet.py", "up", "-i", INVENTORY, "--state-dir", STATE], env=boot_env),
         "fleet up")
    try:
        hosts, engines = hosts_of(INVENTORY)
        hf, size = revision_bytes("cards/glm-5.3-flash.json")
        folder = "/var/lib/launchcard/models/hub/models--%s" % hf["repo"].replace("/", "--")
        # the weights virtualenv, once (pip on every host is not what this measures)
        if not args.no_warm_up:
            must(run(["ansible-playbook", "playbooks/deploy.yml", "-i", INVENTORY, "--tags", "weights"]), "warm-up deploy")
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        if not RESULTS.exists() or not RESULTS.read_text().strip():
            RESULTS.write_text("\t".join(HEADER) + "\n")
        walls = {}
        for dummy in range(args.runs):
            for mode in modes:
                extra, fanout = mode_vars(mode, args.bwlimit_kib)
                must(run(["ansible", "all", "-i", INVENTORY, "-m", "ansible.builtin.file",
                          "-a", "path=%s state=absent" % folder]), "emptying the caches")
                others = max(guests() - len(hosts), 0)
                before, load_before = hub_stats()["bytes_served"], load1()
                t0 = time.monotonic()
                res = must(run(["ansible-playbook", "playbooks/deploy.yml", "-i", INVENTORY, "--tags", "weights"]
                               + extra), "deploy --tags weights (%s)" % mode)
                wall = time.monotonic() - t0
                served = hub_stats()["bytes_served"] - before
                waves = max([int(n) for n in re.findall(r"wave (\d+):", res.stdout)] or [1 if mode != "hub" else 0])
                row = (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), len(hosts),
                       len(engines), mode, "" if fanout is None else fanout,
                       args.bwlimit_kib if fanout is not None else "", size, served, "%.2f" % (served / size),
                       waves, "%.1f" % wall, os.cpu_count(), load_before, load1(), others)
                with RESULTS.open("a") as f:
                    f.write("\t".join(str(x) for x in row) + "\n")
                walls.setdefault(mode, []).append(wall)
                print("mode=%s hosts=%d engine_hosts=%d waves=%d hub_bytes=%d (%.2f revisions of %d bytes) wall=%.1fs "
                      "load %s -> %s, %d other guests" % (mode, len(hosts), len(engines), waves, served, served / size,
                                                          size, wall, load_before, load1(), others), flush=True)
        for mode in modes:
            print("%s: median wall %.1fs of %d" % (mode, statistics.median(walls[mode]), len(walls[mode])))
    finally:
        if not args.keep:
            run([sys.executable, "tests/sandbox/fleet.py", "down", "--purge", "--state-dir", STATE])
    return 0


if __name__ == "__main__":
    sys.exit(main())
