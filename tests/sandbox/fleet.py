#!/usr/bin/env python
"""Sandbox fleet for launchcard.inference: real Debian 12 hosts on this machine.

TEST INFRASTRUCTURE. The command line of the sandbox package ``sandbox_fleet``
(beside this file; its modules are listed in its ``__init__``):

    fleet.py up -i INVENTORY [--state-dir DIR]
    fleet.py down [--state-dir DIR] [--purge]
    fleet.py status [--state-dir DIR]

Needs root, systemd-nspawn, debootstrap, mkfs.ext4, ip, ssh, ssh-keygen and
``ansible-inventory`` on PATH. Standard library only.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sandbox_fleet.cli import main  # noqa: E402  pylint: disable=wrong-import-position

if __name__ == "__main__":
    sys.exit(main())
