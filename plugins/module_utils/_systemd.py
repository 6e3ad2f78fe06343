# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decide what to do to a host's units; parse what systemd reports.

Pure Python, no Ansible import. The module ``systemd_units`` feeds it the
desired unit files, the files on disk and one ``systemctl show`` call's
output, and runs the few batched ``systemctl`` calls it returns.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import signal

SHOW_PROPERTIES = ("Id", "LoadState", "ActiveState", "SubState", "UnitFileState", "NRestarts", "ExecMainPID")
# What tells a unit's process after a start or restart from the one before it: systemd gives every
# start of a unit a new InvocationID (systemd.exec(5), "$INVOCATION_ID"); MainPID for a systemd that
# reports none. See ``restart_baseline`` and ``runs_new_invocation``.
RESTART_PROPERTIES = ("Id", "ActiveState", "InvocationID", "MainPID")
# What the health gate reads to tell a crash (see CrashWatch).
WATCH_PROPERTIES = SHOW_PROPERTIES + ("Result", "ExecMainCode", "ExecMainStatus", "SyslogIdentifier")


def diff_files(desired, existing, prefix):
    """Compare desired unit files with those on disk.

    :param desired: dict unit name -> content (str).
    :param existing: dict unit name -> content for every file on disk whose
        name starts with ``prefix`` (the collection's own units).
    :returns: dict with sorted lists ``write`` (new or different),
        ``remove`` (ours on disk, no longer desired), ``same``.
    """
    write = sorted(n for n, c in desired.items() if existing.get(n) != c)
    remove = sorted(n for n in existing if n.startswith(prefix) and n not in desired)
    same = sorted(n for n in desired if n not in write)
    return {"write": write, "remove": remove, "same": same}


def dropin_verdicts(found, allowed):
    """Sort the drop-ins found on the host's units into kept and removed.

    ``systemctl edit UNIT`` writes ``/etc/systemd/system/UNIT.d/override.conf``
    (``--runtime``: under ``/run/systemd/system``); systemd applies every
    ``*.conf`` there on top of the unit file (systemd.unit(5), "drop-in").
    Such an edit survives a deploy that rewrites only the unit file, so it is
    drift: removed unless the operator allowed it.

    :param found: list of drop-in paths (``<dir>/<unit>.d/<name>.conf``).
    :param allowed: list of ``<unit>.d/<name>.conf`` (or ``<unit>.d/*``, or
        a full path) the operator keeps.
    :returns: dict with sorted lists ``keep`` and ``remove`` (paths) and
        ``units`` (dict unit -> list of its removed paths).
    """
    keep, remove, units = [], [], {}
    allow = set(allowed or [])
    for path in sorted(found):
        parts = path.rstrip("/").split("/")
        short = "/".join(parts[-2:])
        unit = parts[-2][:-2] if parts[-2].endswith(".d") else parts[-2]
        if path in allow or short in allow or ("%s/*" % parts[-2]) in allow:
            keep.append(path)
        else:
            remove.append(path)
            units.setdefault(unit, []).append(path)
    return {"keep": keep, "remove": remove, "units": units}


_ENDPOINT = re.compile(r"(?<![A-Za-z0-9_.:-])(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_][A-Za-z0-9_.-]*):([0-9]{1,5})(?![0-9])")


def endpoints_in(text):
    """Every ``address:port`` a unit file's text names (peer URLs included), as a set of str."""
    return set("%s:%s" % (m.group(1), m.group(2)) for m in _ENDPOINT.finditer(text or ""))


def foreign_peer_changes(old, new, foreign):
    """The peers outside this run that a rewritten unit would newly point at.

    A ``--limit`` run rewrites only its hosts' units. When the plan moves a
    peer that runs outside the limit (a new port or address), a unit inside
    the limit would point at an endpoint that the peer, still running its old
    unit, does not serve.

    :param old: the unit file on the host (str, ``""`` when new).
    :param new: the unit file the run would write.
    :param foreign: dict address -> host name of the planned instances
        outside this run.
    :returns: sorted list of ``(address:port, host)`` named by ``new`` but
        not by ``old``, whose address is a host outside the run. Empty for a
        new unit (nothing pointed anywhere before).
    """
    if not old:
        return []
    out = []
    for ep in endpoints_in(new) - endpoints_in(old):
        address = ep.rsplit(":", 1)[0].strip("[]")
        if address in foreign:
            out.append((ep, foreign[address]))
    return sorted(out)


def parse_show(text):
    """Parse ``systemctl show -p P1,P2 u1 u2 ...`` output.

    systemd prints one ``Key=Value`` block per unit, blocks separated by an
    empty line, in the order the units were named (systemctl(1), "show").
    :returns: dict unit Id -> dict of properties (str values).
    """
    units = {}
    for block in text.strip().split("\n\n"):
        props = {}
        for line in block.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                props[key] = value
        if props.get("Id"):
            units[props["Id"]] = props
    return units


def restart_baseline(props):
    """What a unit runs before this run queues its start or restart.

    :param props: the unit's properties (:func:`parse_show`) read before
        the job was queued (``RESTART_PROPERTIES`` among them).
    :returns: dict ``{"invocation_id": str ("" when none), "main_pid":
        int (0 when none)}``, for :func:`runs_new_invocation`.
    """
    pid = props.get("MainPID") or "0"
    return {"invocation_id": props.get("InvocationID") or "",
            "main_pid": int(pid) if pid.isdigit() else 0}


def runs_new_invocation(props, previous):
    """Whether a unit whose start or restart was queued now runs the new process, ready.

    ``systemctl --no-block`` returns before the job runs, so for a while the
    process that is about to be stopped still answers its port: a health
    probe then tells nothing about the new one. The new process is there
    when systemd reports an ``InvocationID`` other than ``previous``'s (a
    systemd that reports none: a ``MainPID`` other than ``previous``'s and
    not 0), and it is ready when the unit is ``active``: the units' readiness
    check (``ExecStartPost=``) keeps them ``activating`` until the engine
    answers.

    :param props: the unit's properties now (:func:`parse_show`).
    :param previous: :func:`restart_baseline` of the unit before the job.
    :returns: bool.
    """
    if props.get("ActiveState") != "active":
        return False
    invocation, before = props.get("InvocationID") or "", (previous or {}).get("invocation_id") or ""
    if invocation or before:
        return invocation != before
    pid = props.get("MainPID") or "0"
    return pid not in ("", "0") and pid != str((previous or {}).get("main_pid") or 0)


# A timer fires the service of its own name (systemd.timer(5), Unit=): the liveness units (plugin_utils/_liveness.py).
TIMER_SUFFIX = ".timer"


def triggered(names):
    """The ``.service`` units of ``names`` that a ``.timer`` of ``names`` fires: only their timer is enabled and
    started; the converge never enables, starts or restarts them (a oneshot that ran is inactive, not stopped)."""
    names = set(names)
    return set(n[:-len(TIMER_SUFFIX)] + ".service" for n in names if n.endswith(TIMER_SUFFIX)) & names


def actions(names, states, written, state, generated=()):
    """Return the batched systemctl actions that bring units to ``state``.

    :param names: desired unit names.
    :param states: output of :func:`parse_show` (before any action).
    :param written: names whose file changed in this run.
    :param state: ``started`` (enabled and running; changed files restart)
        or ``stopped`` (disabled and stopped).
    :param generated: names of units a generator makes (Quadlet ``.container`` files): their file's
        ``[Install]`` section enables them, and ``systemctl enable``/``disable`` refuse them
        (podman-systemd.unit(5)), so they are never in ``enable`` or ``disable``. A service its timer fires
        (:func:`triggered`) is only ever stopped.
    :returns: dict of sorted lists ``enable``, ``disable``, ``start``,
        ``restart``, ``stop``.
    """
    out = {"enable": [], "disable": [], "start": [], "restart": [], "stop": []}
    fired = triggered(names)
    for n in sorted(names):
        st = states.get(n, {})
        if n in fired and state == "started":
            continue
        active = st.get("ActiveState") in ("active", "activating", "reloading")
        enabled = n in generated or st.get("UnitFileState") in ("enabled", "enabled-runtime")
        if state == "started":
            if not enabled:
                out["enable"].append(n)
            if not active:
                out["start"].append(n)
            elif n in written:
                out["restart"].append(n)
        else:
            if enabled and n not in generated:
                out["disable"].append(n)
            if active:
                out["stop"].append(n)
    return out


_SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_VALUE = re.compile(r"^[^\x00-\x20\x7f\"'\\]*$")


def render_env_file(values):
    """Render a secrets environment file, one ``NAME=value`` per line.

    The same file serves systemd's ``EnvironmentFile=`` (systemd.exec(5)) and
    ``docker run --env-file``, which takes values literally (no quote
    processing), so values are written unquoted and must not need quoting.
    :raises ValueError: a name that is not an identifier, or a value with
        whitespace, a quote, a backslash or a control character. The message
        names the variable, never the value.
    """
    lines = []
    for name in sorted(values):
        value = str(values[name])
        if not _SECRET_NAME.match(name):
            raise ValueError("secret name %r is not an identifier" % name)
        if not _SECRET_VALUE.match(value):
            raise ValueError("secret %s holds whitespace, a quote, a backslash or a control character" % name)
        lines.append("%s=%s" % (name, value))
    return "\n".join(lines) + "\n"


# ExecMainCode is a waitid(2) si_code: CLD_EXITED (1) carries an exit status,
# CLD_KILLED (2) and CLD_DUMPED (3) a signal number (systemd.exec(5), "$SERVICE_RESULT").
_CLD_EXITED = "1"


def exit_status(props):
    """Describe how a unit's main process last ended, from ``systemctl show``.

    :param props: one unit's properties (:func:`parse_show`).
    :returns: e.g. ``"exit status 1"``, ``"signal SIGKILL"``, or ``""`` when
        the process has not ended (``ExecMainCode=0``) or is unknown.
    """
    code, status = props.get("ExecMainCode") or "0", props.get("ExecMainStatus") or "0"
    if code == "0" or not status.isdigit():
        return ""
    if code == _CLD_EXITED:
        return "exit status %s" % status
    try:
        return "signal %s" % signal.Signals(int(status)).name
    except ValueError:
        return "signal %s" % status


def unsettled(states):
    """The units not ``active`` yet, whose health answer the gate must not trust.

    After ``systemctl --no-block restart`` the old process keeps answering
    while it stops (``deactivating``), and a new one answers before its
    readiness check (``ExecStartPost=``) has ended (``activating``,
    ``start-post``); the units role's readiness check makes ``active`` mean
    "the new process answered" (systemd.service(5), ``ExecStartPost=``).

    :param states: dict unit name -> properties (:func:`parse_show`).
    :returns: dict unit name -> ``"ActiveState/SubState"`` for every unit
        whose ``ActiveState`` is not ``active``.
    """
    return dict((name, "%s/%s" % (p.get("ActiveState") or "?", p.get("SubState") or "?"))
                for name, p in states.items() if p.get("ActiveState") != "active")


class CrashWatch(object):
    """Tell, from successive ``systemctl show`` readings, which units crashed.

    A health gate waits for engines that load for minutes; an engine that
    exits at start is restarted by systemd (``Restart=on-failure``) and would
    otherwise only be reported when the gate times out. A unit counts as
    crashed, and the wait for it can end at once, when:

    - ``ActiveState=failed`` (it exhausted its start limit, or has no
      ``Restart=``),
    - ``SubState=auto-restart`` (its process exited and systemd waits
      ``RestartSec`` before starting it again),
    - ``SubState=start-post`` with ``ExecMainCode`` set (the process exited
      while the readiness check, ``ExecStartPost=``, still runs: systemd acts
      on the exit only once that check ends),
    - ``NRestarts`` is higher than the lowest value seen (systemd restarted
      it between two readings; a manual start resets the count to 0, so the
      lowest value is the baseline),
    - ``ActiveState=inactive`` on two readings in a row (stopped by someone,
      or exited with nothing to restart it).

    ``activating``, ``deactivating`` and ``reloading`` are transitions (a
    restart job that the converge queued), never a crash by themselves.
    """

    def __init__(self):
        self.min_restarts = {}
        self.inactive = {}

    def observe(self, states):
        """Feed one reading.

        :param states: dict unit name -> properties (:func:`parse_show`).
        :returns: dict unit name -> reason (str) for the units that crashed;
            the reason gives the state, ``Result``, how the main process
            ended and the restart count.
        """
        out = {}
        for name, props in states.items():
            active, sub = props.get("ActiveState"), props.get("SubState")
            try:
                restarts = int(props.get("NRestarts") or 0)
            except ValueError:
                restarts = 0
            baseline = min(self.min_restarts.get(name, restarts), restarts)
            self.min_restarts[name] = baseline
            self.inactive[name] = self.inactive.get(name, 0) + 1 if active == "inactive" else 0
            if props.get("LoadState") == "not-found":
                what = "unit not found"
            elif active == "failed":
                what = "unit failed"
            elif sub == "auto-restart":
                what = "engine exited, systemd restarts it"
            elif sub == "start-post" and (props.get("ExecMainCode") or "0") != "0":
                # systemd lets the readiness check (ExecStartPost=) finish before it acts on the exit
                what = "engine exited while starting"
            elif restarts > baseline:
                what = "engine restarted by systemd"
            elif self.inactive[name] >= 2:
                what = "unit not running (inactive)"
            else:
                continue
            facts = ["Result=%s" % (props.get("Result") or "?")]
            status = exit_status(props)
            if status:
                facts.append(status)
            facts.append("NRestarts=%d" % restarts)
            out[name] = "%s (%s)" % (what, ", ".join(facts))
        return out


# A Quadlet file (podman-systemd.unit(5)): podman's systemd generator makes ``NAME.service`` of ``NAME.container``.
QUADLET_SUFFIX = ".container"


def unit_of(name):
    """The systemd unit a file gives: itself, or ``NAME.service`` for a Quadlet ``NAME.container``."""
    return name[:-len(QUADLET_SUFFIX)] + ".service" if name.endswith(QUADLET_SUFFIX) else name


def _files_in(directory, prefix):
    found = {}
    if not directory or not os.path.isdir(directory):
        return found
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if name.startswith(prefix) and os.path.isfile(path) and not os.path.islink(path):
            with open(path) as f:
                found[name] = f.read()
    return found


def read_unit_files(directory, quadlet_directory, prefix):
    """The collection's files a converge compares: ``{file name: text}``.

    Every regular file named ``<prefix>*`` in ``directory`` except Quadlet files (those count only in
    ``quadlet_directory``, where only ``<prefix>*.container`` counts); links are left out. The converge
    (``systemd_units``) prunes what it finds here and does not want; the preflight call reads the same set.
    """
    found = dict((n, c) for n, c in _files_in(directory, prefix).items() if not n.endswith(QUADLET_SUFFIX))
    found.update((n, c) for n, c in _files_in(quadlet_directory, prefix).items() if n.endswith(QUADLET_SUFFIX))
    return found


def find_dropins(names, directories):
    """Paths of the drop-ins (``<dir>/<unit>.d/*.conf``, files or links) of ``names`` in ``directories``."""
    found = []
    for name in names:
        for base in directories:
            found += [f for f in glob.glob(os.path.join(glob.escape(base), glob.escape(name + ".d"), "*.conf"))
                      if os.path.isfile(f) or os.path.islink(f)]
    return found


def unit_rows(names, states):
    """The ``units`` a converge returns: per unit of ``names`` (sorted), its states from :func:`parse_show`."""
    rows = []
    for name in sorted(names):
        st = states.get(name) or {}
        restarts = st.get("NRestarts") or "0"
        rows.append({"name": name, "active_state": st.get("ActiveState"), "sub_state": st.get("SubState"),
                     "unit_file_state": st.get("UnitFileState"),
                     "n_restarts": int(restarts) if restarts.isdigit() else 0})
    return rows


def settled_converge(found, units, allowed_dropins=(), record_sha256=None):
    """What a converge call (``systemd_units`` with ``state: started`` and a ``health`` gate) would return on a
    host where it would change nothing, from what the preflight call read there; None when it would act.

    The decision is the converge's own, on the same readings: :func:`diff_files` writes or removes nothing (the
    files' SHA-256 are equal, name for name), :func:`actions` enables, starts or restarts nothing, no drop-in is
    to be removed (:func:`dropin_verdicts`), the secrets file is as the converge would leave it, every endpoint of
    both gate stages answered one probe healthy, and the host's record (``record_sha256``, the digest
    ``_state.state_sha256`` gives of the record the gate would write; None: not compared) is the one on file.

    :param found: the preflight call's ``units_found``: ``{"files": {name: sha256}, "states": parse_show output,
        "dropins": [paths], "secrets_in_place": bool, "endpoints": [first stage results], "then": [second
        stage results], "record_sha256": str or None}``.
    :param units: the converge's ``units`` option (``[{"name", "content"}]``).
    :returns: the result a converge call would return (``written``/``removed`` empty, no action, ``health``
        with the probes' results, ``then_gated`` True when there is a second stage, ``recorded`` False, ``lock``
        None) plus ``settled: True``; or None.
    """
    if not found:
        return None
    desired = dict((u["name"], hashlib.sha256(u["content"].encode("utf-8")).hexdigest()) for u in units or ())
    if desired != dict(found.get("files") or {}):
        return None
    wanted = sorted(unit_of(n) for n in desired)
    generated = set(unit_of(n) for n in desired if n.endswith(QUADLET_SUFFIX))
    states = found.get("states") or {}
    todo = actions(wanted, states, set(), "started", generated)
    if any(todo.values()) or any((states.get(n) or {}).get("ActiveState") == "failed" for n in set(wanted) - triggered(wanted)):
        return None
    dropins = dropin_verdicts(found.get("dropins") or [], allowed_dropins)
    if dropins["remove"] or not found.get("secrets_in_place"):
        return None
    first, then = list(found.get("endpoints") or []), list(found.get("then") or [])
    if not all(r.get("healthy") for r in first + then):
        return None
    if record_sha256 is not None and found.get("record_sha256") != record_sha256:
        return None
    units_out = unit_rows(wanted, states)
    health = {"endpoints": first + then, "unhealthy": [], "crashed": [], "msg": "", "lock": None,
              "recorded": None if record_sha256 is None else False, "then_gated": True if then else None}
    return {"changed": False, "settled": True, "units": units_out, "written": [], "removed": [], "actions": todo,
            "daemon_reloaded": False, "secrets_changed": False, "secrets_restarted": [], "queued": {},
            "dropins": {"kept": dropins["keep"], "removed": []}, "health": health}
