# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health gate as a module runs it: HTTP probes, systemd watches and the host record, in one call.

Shared by the ``http_health`` module (the gate on its own) and the ``systemd_units`` module (its ``health``
option: converge, then gate the units it converged, in the same round trip). Pure Python (stdlib
``urllib``), no Ansible import: the module passes its ``run_command``, ``get_bin_path`` and ``atomic_move``.

The policy (what "healthy" means, the crash and restart watches) is ``_health.wait_all``; the systemd
readings are ``_systemd``; the record and the run locks are ``_state`` and ``_lock``.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

from ansible_collections.launchcard.inference.plugins.module_utils import _lock
from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
from ansible_collections.launchcard.inference.plugins.module_utils._health import wait_all
from ansible_collections.launchcard.inference.plugins.module_utils._systemd import (
    RESTART_PROPERTIES,
    SHOW_PROPERTIES,
    WATCH_PROPERTIES,
    CrashWatch,
    find_dropins,
    parse_show,
    read_unit_files,
    runs_new_invocation,
    unit_of,
    unsettled,
)

# The gate's options, as an Ansible argument spec (plain dicts). The http_health module takes them at its
# top level (documented there); systemd_units takes them under its ``health`` option and validates them with
# this same spec.
ENDPOINT_OPTIONS = dict(
    name=dict(type="str"),
    url=dict(type="str", required=True),
    probe=dict(type="str", choices=["health", "completion"], default="health"),
    model=dict(type="str"),
    unit=dict(type="str"),
    previous=dict(type="dict", options=dict(
        invocation_id=dict(type="str", default=""),
        main_pid=dict(type="int", default=0),
    )),
    blocked=dict(type="str"),
)
RECORD_OPTIONS = dict(
    card=dict(type="dict", default={}),
    instances=dict(type="list", elements="dict", default=[]),
    runtime=dict(type="dict", default={}),
    release_lock=dict(type="dict"),
    path=dict(type="path", default=state.RECORD_PATH),
    directory=dict(type="path", default="/etc/systemd/system"),
    prefix=dict(type="str", default="launchcard-"),
)
ARGUMENT_SPEC = dict(
    endpoints=dict(type="list", elements="dict", required=True, options=ENDPOINT_OPTIONS),
    journal_lines=dict(type="int", default=10),
    timeout=dict(type="int", default=600),
    interval=dict(type="float", default=2.0),
    record=dict(type="dict", options=RECORD_OPTIONS),
)
# systemd_units' ``health`` option: the gate's options, and ``then``: the host's endpoints that answer through
# their peers (a router, a language server), probed once in the same call when nothing on the host was started
# or restarted and every endpoint of the first stage is healthy (see run_gate).
CONVERGE_SPEC = dict(ARGUMENT_SPEC, then=dict(type="list", elements="dict", default=[], options=ENDPOINT_OPTIONS))


class GateError(Exception):
    """A gate that cannot run or cannot record; the message names the option or the file."""


def request(url, payload=None, timeout=10.0):
    """HTTP for the health policy (``_health``'s contract): ``(status, body)``; HTTP errors are returned.

    Proxies are off: the endpoints are the engines' own ports. A connection failure raises ``OSError``
    (``urllib.error.URLError``), which the policy reads as "no answer yet".
    """
    data = None if payload is None else json.dumps(payload).encode("utf-8")
    req = urllib.request.Request(url, data=data, method="GET" if data is None else "POST",
                                 headers={"Content-Type": "application/json"} if data else {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=timeout) as resp:
            return resp.getcode(), resp.read(65536).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(4096).decode("utf-8", "replace")


def unit_watch(run, systemctl, journalctl, journal_lines):
    """The gate's ``watch``: one ``systemctl show`` for the pending endpoints' units.

    :param run: ``run(argv) -> (rc, stdout, stderr)`` (``AnsibleModule.run_command``).
    :param journalctl: its path, or None (then no journal lines are quoted).
    :returns: ``watch(pending) -> (crashed, unsettled)``, dicts endpoint
        name -> reason (ending with the unit's last journal lines) and
        endpoint name -> unit state (the units not ``active`` yet).
    """
    crashes = CrashWatch()

    def watch(pending):
        units = sorted(set(ep["unit"] for ep in pending if ep.get("unit")))
        if not units:
            return {}, {}
        rc, out, dummy = run([systemctl, "show", "-p", ",".join(WATCH_PROPERTIES), "--"] + units)
        if rc != 0:
            return {}, {}
        states = parse_show(out)
        verdicts = crashes.observe(states)
        for unit in list(verdicts):
            if journalctl and journal_lines > 0:
                # the engine's own lines (its SyslogIdentifier=), not systemd's about the unit
                ident = states[unit].get("SyslogIdentifier")
                args = [journalctl, "-u", unit] + (["-t", ident] if ident else [])
                rc, log, dummy = run(args + ["-n", str(journal_lines), "-o", "cat", "--no-pager", "-q"])
                lines = [line for line in log.splitlines() if line.strip()] if rc == 0 else []
                verdicts[unit] += "; journal: %s" % (" | ".join(lines) if lines else "(empty)")
        busy = unsettled(states)
        return (dict((ep["name"], verdicts[ep["unit"]]) for ep in pending if ep.get("unit") in verdicts),
                dict((ep["name"], busy[ep["unit"]]) for ep in pending if ep.get("unit") in busy))
    return watch


def restart_watch(run, systemctl):
    """The gate's ``fresh``: one ``systemctl show`` for the units whose start or restart was queued.

    :returns: ``fresh(held) -> set of endpoint names`` whose unit runs a new
        process and is ``active`` (see ``_systemd.runs_new_invocation``).
    """
    def fresh(held):
        units = sorted(set(ep["unit"] for ep in held if ep.get("unit")))
        if not units:
            return set()
        rc, out, dummy = run([systemctl, "show", "-p", ",".join(RESTART_PROPERTIES), "--"] + units)
        if rc != 0:
            return set()
        states = parse_show(out)
        return set(ep["name"] for ep in held
                   if ep.get("unit") in states and runs_new_invocation(states[ep["unit"]], ep["previous"]))
    return fresh


def run_gate(params, check_mode, run, bin_path, move, probe=request, settled=False, diff=False):
    """Gate on ``params["endpoints"]`` (validated against ``ARGUMENT_SPEC``), then record when all are healthy.

    With ``params["then"]`` (``CONVERGE_SPEC``; the endpoints of the gate's second stage), the record waits for
    them too: when ``settled`` (the converge started or restarted nothing on this host), the record would stay
    as it is (no new card or units: a deploy that changes nothing here), outside check mode and once the first
    stage is healthy, each is probed once, without waiting; all healthy, they join ``endpoints``,
    ``then_gated`` is True, the record is written (unchanged) and the host's lock released. Otherwise
    ``then_gated`` is False and nothing is recorded: the second stage's own call (``http_health``) waits for
    them and carries the record.

    :param run: ``run(argv) -> (rc, stdout, stderr)``.
    :param bin_path: ``bin_path(name) -> path or None`` (``AnsibleModule.get_bin_path``).
    :param move: ``move(tmp, path)``, an atomic rename (``AnsibleModule.atomic_move``).
    :param diff: with a record that changed (or would), add ``diff``: ``_state.record_diff`` (``--diff``).
    :returns: dict ``{endpoints, unhealthy, crashed, recorded, lock, msg, warnings}``: ``endpoints`` as
        ``_health.wait_all`` returns them; ``unhealthy``/``crashed`` their names; ``recorded`` whether the
        record changed (None without ``record``, or when an endpoint was not healthy outside check mode);
        ``lock`` the released locks (``_lock.release_all``); ``msg`` empty when every endpoint is healthy;
        ``then_gated`` (see above; None without ``then``).
        In check mode every endpoint is probed once and the record is predicted whatever they answer.
    :raises GateError: ``endpoints[N].previous`` without its unit; the record cannot be written or its
        locks released.
    """
    endpoints = [dict(ep, name=ep.get("name") or ep["url"]) for ep in params["endpoints"]]
    for i, ep in enumerate(endpoints):
        if ep.get("previous") is not None and not ep.get("unit"):
            raise GateError("endpoints[%d].previous needs endpoints[%d].unit (the unit whose restart was queued)"
                            % (i, i))
    timeout = 0 if check_mode else params["timeout"]
    watch = fresh = None
    systemctl = None if check_mode else bin_path("systemctl")
    if systemctl and any(ep.get("unit") and not ep.get("blocked") for ep in endpoints):
        watch = unit_watch(run, systemctl, bin_path("journalctl"), params["journal_lines"])
    if systemctl and any(ep.get("previous") is not None for ep in endpoints):
        fresh = restart_watch(run, systemctl)
    results = wait_all(endpoints, timeout, probe, params["interval"], watch=watch, fresh=fresh)
    out = dict(endpoints=results, unhealthy=[r["name"] for r in results if not r["healthy"]],
               crashed=[r["name"] for r in results if r.get("crashed")], recorded=None, lock=None, msg="",
               warnings=[], then_gated=None)
    if out["unhealthy"] and not check_mode:
        out["msg"] = "not healthy: %s" % "; ".join(
            "%s (%s, after %ss of %ds)" % (r["name"], r["detail"], r["elapsed_s"], params["timeout"])
            for r in results if not r["healthy"])
        return out
    spec = params.get("record")
    then = [dict(ep, name=ep.get("name") or ep["url"]) for ep in params.get("then") or []]
    if then:
        out["then_gated"] = False
        if check_mode or not settled:
            return out
        if spec:
            # a record that would change (a new card, new units) is this run's change on the host: the second
            # stage's call, after every peer's first stage, writes it and releases the host's lock
            try:
                moved = state.write_present(spec["path"], spec["directory"], spec["prefix"], spec["card"],
                                            spec["instances"], spec["runtime"], True, move)[0]
            except (IOError, OSError) as exc:
                raise GateError("cannot read the record %s: %s" % (spec["path"], exc)) from exc
            if moved:
                return out
        then_results = wait_all(then, 0, probe, params["interval"])
        if not all(r["healthy"] for r in then_results):
            return out
        out["endpoints"] = results + then_results
        out["then_gated"] = True
    if spec:
        try:
            out["recorded"], written, problem = state.write_present(
                spec["path"], spec["directory"], spec["prefix"], spec["card"], spec["instances"], spec["runtime"],
                check_mode, move)
        except (IOError, OSError) as exc:
            raise GateError("cannot write the record %s: %s" % (spec["path"], exc)) from exc
        try:
            out["lock"] = _lock.release_all(spec["release_lock"], check_mode=check_mode)
        except (ValueError, _lock.LockError) as exc:
            raise GateError("record.release_lock: %s" % exc) from exc
        if problem:
            out["warnings"].append("%s; replaced" % problem)
        if diff and out["recorded"]:
            out["diff"] = state.record_diff(written, spec["path"])
    return out


# What a converge would compare (the preflight module's ``units_reads`` option); the defaults are systemd_units'.
READS_SPEC = dict(
    prefix=dict(type="str", default="launchcard-"),
    directory=dict(type="path", default="/etc/systemd/system"),
    quadlet_directory=dict(type="path", default="/etc/containers/systemd"),
    dropin_directories=dict(type="list", elements="path", default=["/etc/systemd/system", "/run/systemd/system"]),
    secrets_file=dict(type="path", default="/etc/launchcard/secrets.env"),
    secrets_sha256=dict(type="str", default="", no_log=True),
    remove_secrets=dict(type="bool", default=False),
    # as units_gate_first gives them (the controller's filter): name, url, probe, model, unit
    endpoints=dict(type="list", elements="dict", default=[]),
    then=dict(type="list", elements="dict", default=[]),
)


def secrets_in_place(path, sha256="", remove=False):
    """Whether the secrets file is as a converge would leave it (``systemd_units``' ``secrets``,
    ``remove_secrets``): with ``sha256`` (of the file the converge would write) the file has that digest and mode
    0600; with ``remove`` there is no file; otherwise (kept as it is) it is absent or has mode 0600."""
    try:
        mode = os.stat(path).st_mode & 0o777
    except OSError:
        return not sha256
    if sha256:
        try:
            with open(path) as f:
                text = f.read()
        except (IOError, OSError):
            return False
        return mode == 0o600 and state.sha256_text(text) == sha256
    return not remove and mode == 0o600


def converge_reads(spec, run, bin_path, record=None, probe=request):
    """Read what a converge call would compare on this host, and probe its endpoints once (no wait).

    :param spec: validated against :data:`READS_SPEC`.
    :param run: ``run(argv) -> (rc, stdout, stderr)``; one ``systemctl show`` of the units the files give.
    :param record: the host's record (``_state.parse``), or None.
    :returns: ``{"files": {file name: sha256}, "states": {unit: properties}, "dropins": [paths],
        "secrets_in_place": bool, "endpoints": [results], "then": [results], "record_sha256": str or None,
        "record_instances": [...]}``, as ``_systemd.settled_converge`` reads it (``record_instances``:
        ``_state.record_instances``, for a ``--limit`` run's check of the consumers it leaves out); the endpoints'
        results are ``_health.wait_all``'s. No digest of the secrets file is returned.
    """
    files = read_unit_files(spec["directory"], spec["quadlet_directory"], spec["prefix"])
    names = sorted(set(unit_of(n) for n in files))
    states = {}
    systemctl = bin_path("systemctl") if names else None
    if systemctl:
        rc, out, dummy = run([systemctl, "show", "-p", ",".join(SHOW_PROPERTIES), "--"] + names)
        states = parse_show(out) if rc == 0 else {}
    dropins = find_dropins(names, spec["dropin_directories"])
    first = [dict(ep, name=ep.get("name") or ep["url"]) for ep in spec["endpoints"]]
    then = [dict(ep, name=ep.get("name") or ep["url"]) for ep in spec["then"]]
    results = wait_all(first + then, 0, probe, 0) if first or then else []
    return {"files": dict((n, state.sha256_text(t)) for n, t in sorted(files.items())), "states": states,
            "dropins": sorted(dropins),
            "secrets_in_place": secrets_in_place(spec["secrets_file"], spec["secrets_sha256"], spec["remove_secrets"]),
            "endpoints": results[:len(first)], "then": results[len(first):], "record_sha256": state.state_sha256(record),
            "record_instances": state.record_instances(record)}
