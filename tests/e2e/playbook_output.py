# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read what ansible-playbook printed (ansible.cfg: the default callback, results as YAML)."""

from __future__ import annotations

import re

RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
# a failed result: the header line, then its YAML indented under it
FAILED = re.compile(r"^fatal: \[([^\]]+)\]: FAILED! =>[^\n]*\n((?:[ \t]+[^\n]*\n?)*)", re.M)


def recap(out):
    """The PLAY RECAP: ``{host: {"ok", "changed", "unreachable", "failed"}}`` (counts)."""
    return {m.group(1): {"ok": int(m.group(2)), "changed": int(m.group(3)), "unreachable": int(m.group(4)),
                         "failed": int(m.group(5))} for m in RECAP.finditer(out)}


def host_failures(out):
    """Every failed result: ``{host: [result text, ...]}``, each result's YAML folded onto one line."""
    found = {}
    for m in FAILED.finditer(out):
        found.setdefault(m.group(1), []).append(" ".join(m.group(2).split()))
    return found
