#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark load: a steady stream of 1-token completions through a router, counting failures.

    python bench/upgrade_load.py URL MODEL [THREADS]

Sends ``POST URL/v1/completions`` from THREADS (default 2) threads, 50 ms apart per thread, until
it gets SIGTERM or SIGINT, then prints one line ``ok=N failed=M`` (and up to 5 failures on stderr).
A request fails on a connection error, a timeout (30 s), a status other than 200 or an answer
without ``choices``. Used by bench/upgrade_per_host.sh (a router) and bench/upgrade_topologies.py (the router, or
the engine itself where a topology has none), against sandbox fleets only.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
import urllib.error
import urllib.request


def main(argv):
    if len(argv) not in (3, 4):
        sys.stderr.write(__doc__)
        return 2
    url, model = argv[1].rstrip("/") + "/v1/completions", argv[2]
    threads = int(argv[3]) if len(argv) == 4 else 2
    stop = threading.Event()
    lock = threading.Lock()
    counts = {"ok": 0, "failed": 0}
    errors = []
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    body = json.dumps({"model": model, "prompt": "hi", "max_tokens": 1}).encode()

    def send():
        while not stop.is_set():
            req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
            try:
                with opener.open(req, timeout=30) as resp:
                    good = resp.status == 200 and "choices" in json.loads(resp.read().decode())
                    why = "" if good else "status %d" % resp.status
            except (OSError, ValueError) as exc:
                good, why = False, repr(exc)
            with lock:
                counts["ok" if good else "failed"] += 1
                if not good and len(errors) < 5:
                    errors.append(why)
            time.sleep(0.05)

    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    workers = [threading.Thread(target=send, daemon=True) for dummy in range(threads)]
    for t in workers:
        t.start()
    while not stop.is_set():
        stop.wait(0.2)
    for t in workers:
        t.join(timeout=35)
    for why in errors:
        sys.stderr.write("failed: %s\n" % why)
    print("ok=%d failed=%d" % (counts["ok"], counts["failed"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
