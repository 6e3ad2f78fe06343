"""Mount helpers of the sandbox fleet (overlays and loop-mounted weights disks).

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection.
"""

import re
import time
from pathlib import Path

from .base import log, run


def _unescape(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def mountpoints() -> set:
    points = set()
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            points.add(_unescape(line.split()[4]))
    return points


def is_mounted(path: Path) -> bool:
    return str(path) in mountpoints()


def umount(path: Path) -> None:
    for attempt in range(20):
        if not is_mounted(path):
            return
        res = run(["umount", str(path)], check=False, capture=True)
        if res.returncode == 0:
            continue
        time.sleep(0.25)
    if is_mounted(path):
        log(f"warning: {path} still busy, detaching it lazily (umount -l)")
        run(["umount", "-l", str(path)], check=False)
