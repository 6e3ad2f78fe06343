"""Sandbox fleet for launchcard.inference: real Debian 12 hosts on this machine.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection. The command line of
``tests/sandbox/fleet.py``:

    fleet.py up -i INVENTORY [--state-dir DIR]
    fleet.py down [--state-dir DIR] [--purge]
    fleet.py status [--state-dir DIR]
    fleet.py cache                    (build every cached part now: root filesystems, engines, wheels, images)
    fleet.py _supervise --state-dir DIR --host NAME   (internal: started by `up`, one per host)
"""

import argparse
from pathlib import Path

from .base import DEFAULT_STATE_DIR, FleetError, log
from .lifecycle import Fleet
from .supervisor import supervise
from .warm import warm


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="fleet.py", description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_up = sub.add_parser("up", help="boot every host of the inventory (idempotent)")
    p_up.add_argument("-i", "--inventory", required=True)
    p_up.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR))
    p_down = sub.add_parser("down", help="stop every host this fleet started and undo the machine changes")
    p_down.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR))
    p_down.add_argument("--purge", action="store_true",
                        help="also delete the hosts' overlays and disk images (next `up` starts fresh hosts)")
    p_status = sub.add_parser("status", help="show the fleet's hosts")
    p_status.add_argument("--state-dir", default=str(DEFAULT_STATE_DIR))
    sub.add_parser("cache", help="build every cached part of the sandbox (once per machine; parts side by side)")
    p_sup = sub.add_parser("_supervise")  # internal: the detached per-host supervisor
    p_sup.add_argument("--state-dir", required=True)
    p_sup.add_argument("--host", required=True)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "cache":
            return warm()
        if args.cmd == "_supervise":
            return supervise(Path(args.state_dir), args.host)
        fleet = Fleet(args.state_dir)
        if args.cmd == "up":
            return fleet.up(args.inventory)
        if args.cmd == "down":
            return fleet.down(purge=args.purge)
        return fleet.status()
    except FleetError as exc:
        log(f"error: {exc}")
        return 1
