# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's facts per instance for node_exporter's textfile collector: ``launchcard.prom`` and
``launchcard-drains.prom``.

Written by ``systemd_units`` (the per-host converge of a deploy and of an upgrade's switch) into the textfile
directory the controller passes (``plugin_utils/_textfile.py``, ``TEXTFILE_DIR``). Per unit: what it runs
(``launchcard_instance_info``), when a deploy or an upgrade last changed or restarted it, and whether its health
gate passed. A unit this call did not touch keeps its timestamps (and its gate result when the gate did not run)
from the file before, so a run that changes nothing writes the same bytes. Unit state and restarts are node
exporter's own systemd collector's (``node_systemd_unit_state``, ``node_systemd_service_restart_total``).

An ``http_health`` call given the directory (an upgrade's gates) rewrites only the gate results of
``launchcard.prom`` (:func:`converge_gate`). ``engine_drain`` counts its drains in ``launchcard-drains.prom``
(:func:`converge_drains`); the converge lists there every unit of the card at 0 before its first drain.

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
# a file of its own, so that a drain (engine_drain) never rewrites launchcard.prom
DRAINS_FILE = "launchcard-drains.prom"
DRAINS = "launchcard_drains_total"
DRAIN_TIMEOUTS = "launchcard_drain_timeouts_total"
LAST_DRAIN = "launchcard_last_drain_timestamp_seconds"
#: name -> (type, help) of the drain file's series, declared in monitoring/contracts/launchcard.yml too
DRAIN_HELP = {
    DRAINS: ("counter", "Drains of the unit (engine_drain) before an upgrade stopped it."),
    DRAIN_TIMEOUTS: ("counter", "Drains of the unit whose wait ran out with requests still in flight."),
    LAST_DRAIN: ("gauge", "Unix time the last drain of the unit ended."),
}
_INFO = re.compile(r'^%s\{(.*)\} 1$' % INFO)
_LABEL = re.compile(r'([a-z_]+)="((?:[^"\\]|\\.)*)"')
# exposition_formats.md (prometheus/docs, "Text format details"): label values escape \ " and line feed
_SERIES = re.compile(r'^(launchcard_[a-z_]+)\{unit="((?:[^"\\]|\\.)*)"\} (\S+)$')


def _escape(value):
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _unescape(value):
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def parse(text, names=_KEPT):
    """``{unit: {metric: value}}`` of the metrics ``names`` (default: timestamps, gate) in a file this module wrote."""
    out = {}
    for line in (text or "").splitlines():
        m = _SERIES.match(line)
        if m and m.group(1) in names:
            try:
                out.setdefault(_unescape(m.group(2)), {})[m.group(1)] = int(float(m.group(3)))
            except ValueError:  # a hand-edited value: dropped, the next run sets it again
                continue
    return out


def parse_info(text):
    """``{unit: {card, recipe, revision, role, engine}}`` of the ``launchcard_instance_info`` lines of a file this
    module wrote."""
    out = {}
    for line in (text or "").splitlines():
        m = _INFO.match(line)
        if m:
            labels = dict((k, _unescape(v)) for k, v in _LABEL.findall(m.group(1)))
            unit = labels.pop("unit", None)
            if unit:
                out[unit] = labels
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


def render_drains(units, previous, drained, now):
    """The drain file's text.

    :param units: the units to list (a converge: the card's units on this host, each at 0 before its first drain);
        None keeps the file's units and adds the drained ones (a drain).
    :param previous: the file's text before this run (None when absent).
    :param drained: ``{unit: busy}`` of the units this call drained, ``busy`` when the wait ran out first.
    :param now: Unix time of this run.
    :returns: the text, or None when there is no unit (the file is removed).
    """
    kept = parse(previous, tuple(DRAIN_HELP))
    names = set(kept) | set(drained) if units is None else set(units)
    if not names:
        return None
    values = dict((name, {}) for name in DRAIN_HELP)
    for unit in sorted(names):
        old = kept.get(unit, {})
        values[DRAINS][unit] = old.get(DRAINS, 0) + (unit in drained)
        values[DRAIN_TIMEOUTS][unit] = old.get(DRAIN_TIMEOUTS, 0) + bool(drained.get(unit))
        last = int(now) if unit in drained else old.get(LAST_DRAIN)
        if last is not None:
            values[LAST_DRAIN][unit] = last
    lines = []
    for name in (DRAINS, DRAIN_TIMEOUTS, LAST_DRAIN):
        if values[name]:
            lines += ["# HELP %s %s" % (name, DRAIN_HELP[name][1]), "# TYPE %s %s" % (name, DRAIN_HELP[name][0])]
            lines += ['%s{unit="%s"} %d' % (name, _escape(unit), values[name][unit]) for unit in sorted(values[name])]
    return "\n".join(lines) + "\n"


def _apply(path, before, after, check_mode):
    """Write ``after`` over ``before`` (not in check mode): ``(changed, diff or None)``."""
    if after == before:
        return False, None
    if not check_mode:
        write(path, after)
    return True, {"before_header": path if before is not None else "(absent)",
                  "after_header": path if after is not None else "(removed)",
                  "before": before or "", "after": after or ""}


def _missing(directory, path):
    """The module's ``textfile`` return before any write, and whether the directory is missing."""
    result = {"path": path, "changed": False, "skipped": None}
    if not os.path.isdir(directory):
        result["skipped"] = "%s does not exist (node exporter not installed): no textfile facts written" % directory
        return result, True
    return result, False


def converge(params, touched, gate, now, check_mode):
    """Apply systemd_units' ``textfile`` option: ``(changed, result, diffs)``.

    :param params: ``{directory, event, instances}``.
    :returns: whether a file changed (or would), the module's ``textfile`` return, the diff entries (a list).
    """
    directory = params["directory"]
    path = os.path.join(directory, FILE_NAME)
    result, missing = _missing(directory, path)
    if missing:
        return False, result, []
    instances = params.get("instances") or {}
    before = read(path)
    changed, diff = _apply(path, before, render(instances, before, touched, params["event"], now, gate), check_mode)
    drains = os.path.join(directory, DRAINS_FILE)
    before = read(drains)
    seeded, drains_diff = _apply(drains, before, render_drains(instances, before, {}, now), check_mode)
    result["changed"] = changed or seeded
    return result["changed"], result, [d for d in (diff, drains_diff) if d]


def converge_gate(directory, gate, now, check_mode):
    """Write the gate results of a gate on its own (``http_health``) into ``launchcard.prom``, the one file that
    holds ``launchcard_gate_passed``: ``(changed, result, diff or None)``.

    Only the units the file lists (the converge's instances) are written; everything else stays as it was. Without
    the file (no converge wrote it yet) nothing is written.
    """
    path = os.path.join(directory, FILE_NAME)
    result, missing = _missing(directory, path)
    if missing:
        return False, result, None
    before = read(path)
    instances = parse_info(before)
    if not instances:
        result["skipped"] = "%s lists no unit (no deploy wrote it yet): no gate result written" % path
        return False, result, None
    gate = dict((unit, passed) for unit, passed in gate.items() if unit in instances)
    result["changed"], diff = _apply(path, before, render(instances, before, set(), "deploy", now, gate), check_mode)
    return result["changed"], result, diff


def drain_results(endpoints):
    """``{unit: busy}`` of the endpoints a drain (``_drain.run_drain``) read."""
    return dict((ep["name"], not ep.get("drained")) for ep in endpoints or [] if ep.get("name"))


def converge_drains(directory, drained, now, check_mode):
    """Count a drain (``engine_drain``) in ``launchcard-drains.prom``: ``(changed, result, diff or None)``."""
    path = os.path.join(directory, DRAINS_FILE)
    result, missing = _missing(directory, path)
    if missing or not drained:
        return False, result, None
    before = read(path)
    result["changed"], diff = _apply(path, before, render_drains(None, before, drained, now), check_mode)
    return result["changed"], result, diff
