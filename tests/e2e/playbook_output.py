# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read what ansible-playbook printed (ansible.cfg: the default callback, results as YAML)."""

from __future__ import annotations

import re
import textwrap

import yaml

REPORT_TASK = "TASK [launchcard.inference.preflight : Preflight | Report every host]"
SUMMARY_TASK = "Units | Summary of every planned instance]"
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


def report_table(out, task=REPORT_TASK, columns=("host", "check", "result", "need", "found", "message")):
    """The preflight table (or another run_once table) as the operator sees it, parsed back into rows.

    The debug task prints a YAML (or JSON) document after ``ok: [host] =>``,
    the table as one multi-line string (or a list of lines); loading it
    undoes the callback's quoting and line folding. Columns are cut at the
    rule line's dashes; the rows end at an empty line (the deploy summary's
    counts follow it).
    """
    assert out.count(task) == 1, "expected one %s, found %d" % (task, out.count(task))
    lines = out.split(task, 1)[1].splitlines()[1:]
    head = next(i for i, line in enumerate(lines) if line.startswith("ok: ["))
    block = [lines[head].split("=>", 1)[1]]
    for line in lines[head + 1:]:
        if line and not line.startswith(" "):
            if line == "}":  # the JSON result format closes the document at column 0
                block.append(line)
            break
        block.append(line)
    table = yaml.safe_load(textwrap.dedent("\n".join(block)))["msg"]
    if isinstance(table, str):  # the table joined into one string (a YAML block scalar)
        table = table.splitlines()
    header, rule = table[0].split(), table[1]
    assert header == list(columns), table[:2]
    spans = [m.span() for m in re.finditer(r"-+", rule)]
    rows = []
    for line in table[2:]:
        if not line.strip():
            break  # the deploy summary's counts follow an empty line
        cells = [line[s:(spans[i + 1][0] if i + 1 < len(spans) else None)].strip() for i, (s, _e) in enumerate(spans)]
        rows.append(dict(zip(header, cells)))
    return rows


def by_host(rows):
    out = {}
    for r in rows:
        out.setdefault(r["host"], {})[r["check"]] = r
    return out
