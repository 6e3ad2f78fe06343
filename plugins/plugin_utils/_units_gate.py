# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The units role's health gate and summary, decided on the controller (private to the collection).

The converge call gates the first stage (the engines that name no peer), the second stage's call the endpoints that
answer through their peers (routers, language servers), and the summary reads both, once for the fleet. The action
plugins ``systemd_units``, ``http_health`` and ``units_summary`` call these with a host's variables; the filters that
once did this glue in Jinja are thin wrappers over them.

Pure Python, no Ansible import: a host's variables are any mapping (Ansible's ``hostvars[host]`` or a dict).
"""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
from ansible_collections.launchcard.inference.plugins.module_utils import _systemd as systemd
from ansible_collections.launchcard.inference.plugins.plugin_utils import _report as report
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as unit_options

FIRST_STAGE_RESULTS = ("units_converge.health", "units_health_first")
"""Where a host's first-stage result is registered: the converge call's ``health``, or ``--tags health``'s own call."""
CONVERGE_RESULT = "units_converge"
SECOND_STAGE_RESULT = "units_health"


def first_stage_result(host_vars, result_var=FIRST_STAGE_RESULTS):
    """A host's first-stage gate result: the first of ``result_var`` (dotted paths into its variables) found, or {}."""
    for path in [result_var] if isinstance(result_var, str) else result_var:
        value = host_vars
        for key in path.split("."):
            value = value.get(key) if hasattr(value, "get") else None
            if value is None:
                break
        if value:
            return value
    return {}


def with_previous(endpoints, converge):
    """``endpoints`` with ``previous`` (what the unit ran before) on those whose start or restart ``converge`` queued."""
    queued = (converge or {}).get("queued") or {}
    for ep in endpoints:
        if ep["unit"] in queued:
            ep["previous"] = {"invocation_id": queued[ep["unit"]].get("invocation_id") or "",
                              "main_pid": queued[ep["unit"]].get("main_pid") or 0}
    return endpoints


def _ran(result):
    """A registered result of a task that ran (not skipped), else None."""
    return result if result and not result.get("skipped") else None


def gate_first(host_plan, plan, host, timeout, interval, record=None, gates=None):
    """The first gate stage, as ``systemd_units``' ``health`` option; None for a host the plan gives nothing.

    ``endpoints``: the host's engines that name no peer; ``then``: those that do (the second stage), which the call
    probes once when it changed nothing on the host (module_utils._gate.run_gate); ``record``, written only once both
    stages are gated (otherwise the second stage's call carries it). ``gates``: the plan's
    :func:`._report.gate_table` (at least this host's entry; default: found from ``plan``).
    """
    if host_plan is None:
        return None
    spec = {"endpoints": report.gate_endpoints(plan, host, "first", table=gates),
            "then": report.gate_endpoints(plan, host, "then", table=gates),
            "timeout": int(timeout), "interval": float(interval)}
    if record is not None:
        spec["record"] = record
    return spec


def reads(host_plan, plan, host, host_vars, remove_secrets=False, gates=None):
    """The preflight call's ``units_reads`` option for one host: what the units role's converge would compare (its
    unit files, states, drop-ins and secrets file, in systemd_units' default places) and the endpoints of both gate
    stages, probed once (none on a host the plan gives nothing: its converge only prunes).

    :param host_vars: the host's variables: its secrets and their file (:func:`._unit_options.host_secrets`).
    :param remove_secrets: the converge's ``remove_secrets``.
    :param gates: the plan's gate table, at least this host's entry.
    :raises ValueError: a secret the secrets file cannot hold (the converge would refuse it too), naming ``secrets``.
    """
    gate = gate_first(host_plan, plan, host, 0, 0, gates=gates) if host_plan is not None else {"endpoints": [], "then": []}
    settings = unit_options.host_secrets(host_vars if host_vars is not None else {})
    secrets = settings["secrets"]
    try:
        digest = state.sha256_text(systemd.render_env_file(secrets)) if secrets else ""
    except ValueError as exc:
        raise ValueError("secrets: %s" % exc)
    return {"secrets_file": settings["secrets_file"], "secrets_sha256": digest,
            "remove_secrets": bool(remove_secrets) and not secrets, "endpoints": gate["endpoints"], "then": gate["then"]}


def second_stage(gates, hostvars, hosts, check_mode=False, result_var=FIRST_STAGE_RESULTS, converge_var=CONVERGE_RESULT):
    """The second gate stage of every host of ``hosts`` that has one, from every host's results in ``hostvars``:
    ``{host: {"endpoints", "peers_settled"}}`` (:func:`host_second_stage`, each host's)."""
    gates, merged = gates or {}, {}

    def vars_of(name):
        # each host's variables read once for the fleet (Ansible's hostvars[name] merges them anew on every read)
        if name not in merged:
            merged[name] = hostvars[name] if name in hostvars else None
        return merged[name]

    return dict((host, host_second_stage(host, gates, vars_of, check_mode, result_var, converge_var))
                for host in hosts or [] if any(e.get("peers") for e in gates.get(host) or []))


def host_second_stage(host, gates, vars_of, check_mode=False, result_var=FIRST_STAGE_RESULTS,
                      converge_var=CONVERGE_RESULT):
    """One host's second gate stage, read from its own results and its peers' alone (no other host's).

    :param gates: the plan's gate table, at least ``host``'s entry (:func:`._report.gate_table`).
    :param vars_of: ``vars_of(name)``: a host's variables (its registered results), None for a host not known.
    :returns: ``{"endpoints": [...], "peers_settled": bool}``: the endpoints of ``stage="then"``
        (:func:`._report.gate_endpoints`) with ``previous`` where the host's own converge queued their start or restart,
        less the units that converge would start or restart in check mode; ``peers_settled``:
        :func:`._report.peers_settled`.
    """
    prior, pending, converges = {}, {}, {}
    for name in set([host] + [p["host"] for e in gates.get(host) or [] for p in e.get("peers") or []]):
        hv = vars_of(name)
        if hv is None:
            continue
        prior[name] = first_stage_result(hv, result_var)
        conv = hv.get(converge_var)
        if check_mode:
            pending[name] = report.pending_units(conv, True)
        if _ran(conv):
            converges[name] = conv
    stage = report.second_stage(gates, [host], prior, pending, converges).get(host) or {"endpoints": [], "peers_settled": True}
    own, conv = report.pending_units(converges.get(host), check_mode), converges.get(host)
    stage["endpoints"] = [ep for ep in with_previous(stage["endpoints"], conv) if ep["name"] not in own]
    return stage


def record_now(record, converge):
    """The record the second stage's call carries: ``record`` when this run's converge ran and did not record it
    itself (its second-stage endpoints gated in its one probe, ``health.then_gated``); else None (``--tags health``
    records nothing)."""
    conv = _ran(converge)
    if record is None or conv is None or (conv.get("health") or {}).get("then_gated"):
        return None
    return record


def summary(plan, hostvars, check_mode=False, notes=()):
    """The deploy summary's lines: one row per planned instance (host, recipe, engine, role, port, state), grouped
    by state, the worst first, then an empty line and the counts (:func:`._report.deploy_table`), then ``notes``.

    Reads each planned host's registered ``units_converge``, first stage and ``units_health`` from ``hostvars``. In
    check mode, units the converge would start or restart read ``would start (check mode)``.
    """
    results = {}
    for host in (plan or {}).get("hosts", {}):
        hv = hostvars[host] if host in hostvars else {}
        conv, health = hv.get(CONVERGE_RESULT) or {}, hv.get(SECOND_STAGE_RESULT) or {}
        first = first_stage_result(hv)
        endpoints = (first.get("endpoints") or []) + (health.get("endpoints") or [])
        results[host] = {"units": conv.get("units"), "health": endpoints if (first or health) else None,
                         "pending": report.pending_units(conv, check_mode)}
    return report.deploy_table(report.deploy_rows(plan or {"hosts": {}}, results)) + list(notes or ())


def gate_failure(host_vars):
    """Why a host's gate failed: its stages' messages joined (``health gate failed`` without one), or None when every
    endpoint that a stage of this run gated on the host is healthy."""
    results = [r for r in (_ran((host_vars.get(CONVERGE_RESULT) or {}).get("health")),
                           _ran(host_vars.get("units_health_first")), _ran(host_vars.get(SECOND_STAGE_RESULT))) if r]
    if not any(r.get("unhealthy") for r in results):
        return None
    return "; ".join(r["msg"] for r in results if r.get("msg")) or "health gate failed"


def settled(found, units, allowed_dropins=None, record=None):
    """The result the units role's converge call would return on a host where it would change nothing, or None
    (see module_utils._systemd.settled_converge): ``found`` is the preflight call's ``units_found``, ``units`` the
    converge's unit files (``[{name, content}]``), ``record`` its gate's record (``units_record``: card, instances,
    runtime)."""
    if not found:
        return None
    units = [{"name": u["name"], "content": u["content"]} for u in units or ()]
    digest = None
    if record is not None:
        desired = dict((u["name"], u["content"]) for u in units)
        digest = state.state_sha256(state.build(desired, record.get("card"), record.get("instances"),
                                                record.get("runtime")))
    return systemd.settled_converge(found, units, allowed_dropins or (), digest)
