# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's tarball as `make build` makes it, for the integration tests that install it."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def build(out_dir):
    """Build from a copy of the files git knows (tools/stage_tree.sh), as `make build` does: galaxy's manifest walk of
    the checkout itself fails when a sandbox guest beside it (.sandbox*/) removes a file under the walk. Returns the
    ``CompletedProcess`` of the build and the tarball's path (None when it failed)."""
    src = os.path.join(str(out_dir), "src")
    staged = subprocess.run([os.path.join(ROOT, "tools", "stage_tree.sh"), src], capture_output=True, text=True, check=False)
    if staged.returncode != 0:
        return staged, None
    res = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(out_dir), src],
                         cwd=ROOT, capture_output=True, text=True, check=False)
    found = glob.glob(os.path.join(str(out_dir), "launchcard-inference-*.tar.gz"))
    return res, (found[0] if res.returncode == 0 and len(found) == 1 else None)
