#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one fork of a Python process costs as its heap grows, and what a full garbage collection in the child adds,
with the parent's heap frozen (``gc.freeze()``) or not: the mechanism behind plugins/callback/gc_freeze.py (Ansible
forks the controller once per host and task). Prints one line per case; docs/speed.md cites its figures.

    python bench/fork_gc.py [MB ...]        # default 60 200; FORKS=N forks per case (default 20)
"""

from __future__ import annotations

import gc
import os
import resource
import sys


def fork_cost(mb, frozen, child_gc, forks):
    heap = [{"k%d" % i: [i, str(i)]} for i in range(mb * 1024 * 1024 // 400)]  # about mb MB of small objects
    if frozen:
        gc.freeze()
    parent0, child0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    for dummy in range(forks):
        pid = os.fork()
        if pid == 0:
            if child_gc:
                gc.collect()
            os._exit(0)  # as a multiprocessing child ends: no interpreter teardown
        os.waitpid(pid, 0)
    parent1, child1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    gc.unfreeze()
    del heap
    gc.collect()
    return ("parent RSS %4d MB, heap %s, child %-13s: parent system time %5.1f ms, child CPU %6.1f ms, "
            "child minor faults %6d per fork" % (
                parent1.ru_maxrss // 1024, "frozen" if frozen else "as is ", "full gc, exit" if child_gc else "exit",
                (parent1.ru_stime - parent0.ru_stime) * 1000 / forks,
                (child1.ru_utime + child1.ru_stime - child0.ru_utime - child0.ru_stime) * 1000 / forks,
                (child1.ru_minflt - child0.ru_minflt) // forks))


def main():
    forks = int(os.environ.get("FORKS", "20"))
    for mb in [int(a) for a in sys.argv[1:]] or [60, 200]:
        for frozen in (False, True):
            for child_gc in (False, True):
                print(fork_cost(mb, frozen, child_gc, forks))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
