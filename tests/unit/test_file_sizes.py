# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files by concern (issue 27 item 5): no tracked Python file is longer than a maintainer reads in one sitting."""

from __future__ import annotations

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_LINES = 800


def _tracked_python():
    out = subprocess.run(["git", "ls-files", "-z", "--", "*.py"], cwd=ROOT, check=True, capture_output=True).stdout
    return sorted(p for p in out.decode().split("\0") if p)


def _lines(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read().count(b"\n")


def test_no_tracked_python_file_exceeds_800_lines():
    sizes = dict((p, _lines(p)) for p in _tracked_python() if os.path.exists(os.path.join(ROOT, p)))
    assert len(sizes) > 100, "git ls-files found only %d Python files in %s" % (len(sizes), ROOT)
    too_long = ["%s: %d lines" % (p, n) for p, n in sorted(sizes.items()) if n > MAX_LINES]
    assert not too_long, "split by concern, at most %d lines each: %s" % (MAX_LINES, "; ".join(too_long))
