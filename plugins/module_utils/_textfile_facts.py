# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's facts per instance for node_exporter's textfile collector: ``launchcard.prom``.

Written by ``systemd_units`` (the per-host converge of a deploy and of an upgrade's switch) into the textfile
directory the controller passes (``plugin_utils/_textfile.py``, ``TEXTFILE_DIR``). Per unit: what it runs
(``launchcard_instance_info``), when a deploy or an upgrade last changed or restarted it, and whether its health
gate passed. A unit this call did not touch keeps its timestamps (and its gate result when the gate did not run)
from the file before, so a run that changes nothing writes the same bytes. Unit state and restarts are node
exporter's own systemd collector's (``node_systemd_unit_state``, ``node_systemd_service_restart_total``).

Pure Python, no Ansible import beyond module_utils.
"""

from __future__ import annotations

import os
import re

FILE_NAME = "launchcard.prom"
#: The labels of ``launchcard_instance_info``, besides ``unit``; values come from the plan, never a secret.
INFO_LABELS = ("card", "recipe", "revision", "role", "engine")
INFO = "launchcard_instance_info"
DEPLOY = "launchcard_last_deploy_timestamp_seconds"
UPGRADE = "launchcard_last_upgrade_timestamp_seconds"
GATE = "launchcard_gate_passed"
#: name -> help; every name is declared in monitoring/contracts/launchcard.yml (tests/unit/test_metric_contract*)
HELP = {
    INFO: "What the unit runs, from the plan (always 1).",
    DEPLOY: "Unix time a deploy last changed or restarted the unit.",
    UPGRADE: "Unix time an upgrade last changed or restarted the unit.",
    GATE: "1 when the unit passed its last health gate, 0 when it did not.",
}
EVENTS = {"deploy": DEPLOY, "upgrade": UPGRADE}
_KEPT = (DEPLOY, UPGRADE, GATE)
# exposition_formats.md (prometheus/docs, "Text format details"): label values escape \ " and line feed
_SERIES = re.compile(r'^(launchcard_[a-z_]+)\{unit="((?:[^"\\]|\\.)*)"\} (\S+)$')


def _escape(value):
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _unescape(value):
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def parse(text):
    """``{unit: {metric: value}}`` of the kept metrics (timestamps, gate) in a file this module wrote."""
    out = {}
    for line in (text or "").splitlines():
        m = _SERIES.match(line)
        if m and m.group(1) in _KEPT:
            try:
                out.setdefault(_unescape(m.group(2)), {})[m.group(1)] = int(float(m.group(3)))
            except ValueError:  # a hand-edited value: dropped, the next run sets it again
                continue
    return out


def check(instances):
    """The first problem of a ``textfile.instances`` value, naming its key, or None."""
    for unit in sorted(instances):
        labels = instances[unit]
        if not isinstance(labels, dict):
            return "textfile.instances[%s]: expected a dict of %s, found %s" % (
                unit, ", ".join(INFO_LABELS), type(labels).__name__)
        for key in INFO_LABELS:
            if not isinstance(labels.get(key, ""), str):
                return "textfile.instances[%s].%s: expected a string, found %s" % (unit, key, type(labels[key]).__name__)
    return None


def render(instances, previous, touched, event, now, gate=None):
    """The file's text.

    :param instances: ``{unit: {card, recipe, revision, role, engine}}``, the units of this host's card.
    :param previous: the file's text before this run (None when absent).
    :param touched: units whose files this run changed or that it started or restarted.
    :param event: ``deploy`` or ``upgrade``: which timestamp a touched unit gets.
    :param now: Unix time of this run.
    :param gate: ``{unit: healthy}`` of the units the health gate judged in this call.
    :returns: the text, or None when there is no instance (the file is removed).
    """
    if event not in EVENTS:
        raise ValueError("event: expected one of %s, found %r" % (", ".join(sorted(EVENTS)), event))
    if not instances:
        return None
    kept = parse(previous)
    values = dict((name, {}) for name in HELP)
    for unit in sorted(instances):
        labels = instances[unit] or {}
        old = kept.get(unit, {})
        values[INFO][unit] = ",".join(['unit="%s"' % _escape(unit)] + [
            '%s="%s"' % (k, _escape(labels.get(k, ""))) for k in INFO_LABELS])
        for name in (DEPLOY, UPGRADE):
            value = int(now) if unit in touched and name == EVENTS[event] else old.get(name)
            if value is not None:
                values[name][unit] = value
        passed = (gate or {}).get(unit)
        value = (1 if passed else 0) if passed is not None else old.get(GATE)
        if value is not None:
            values[GATE][unit] = value
    lines = []
    for name in (INFO, DEPLOY, UPGRADE, GATE):
        if not values[name]:
            continue
        lines += ["# HELP %s %s" % (name, HELP[name]), "# TYPE %s gauge" % name]
        for unit in sorted(values[name]):
            if name == INFO:
                lines.append("%s{%s} 1" % (name, values[name][unit]))
            else:
                lines.append('%s{unit="%s"} %d' % (name, _escape(unit), values[name][unit]))
    return "\n".join(lines) + "\n"


def gate_results(health):
    """``{unit: healthy}`` of the endpoints a gate result (``_gate.run_gate``) judged."""
    out = {}
    for ep in (health or {}).get("endpoints") or []:
        unit = ep.get("unit") or ep.get("name")
        if unit:
            # a unit with several endpoints passed only when every one of them did
            out[unit] = out.get(unit, True) and bool(ep.get("healthy"))
    return out


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except (IOError, OSError):
        return None


def write(path, text):
    """Write beside ``path`` and rename into place (mode 0644: node_exporter runs as its own user), or remove it
    when ``text`` is None; the collector reads the old file or the new one, never half of one."""
    if text is None:
        if os.path.exists(path):
            os.unlink(path)
        return
    tmp = "%s.%d.tmp" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)  # the umask may have narrowed it
    os.rename(tmp, path)


def converge(params, touched, gate, now, check_mode):
    """Apply the ``textfile`` option: ``(changed, result, diff)``.

    :param params: ``{directory, event, instances}``.
    :returns: whether the file changed (or would), the module's ``textfile`` return, a diff entry or None.
    """
    directory = params["directory"]
    path = os.path.join(directory, FILE_NAME)
    result = {"path": path, "changed": False, "skipped": None}
    if not os.path.isdir(directory):
        result["skipped"] = "%s does not exist (node exporter not installed): no textfile facts written" % directory
        return False, result, None
    before = read(path)
    after = render(params.get("instances") or {}, before, touched, params["event"], now, gate)
    if after == before:
        return False, result, None
    result["changed"] = True
    if not check_mode:
        write(path, after)
    diff = {"before_header": path if before is not None else "(absent)",
            "after_header": path if after is not None else "(removed)",
            "before": before or "", "after": after or ""}
    return True, result, diff
