# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that expose the planner's results to roles; logic in module_utils."""

from __future__ import annotations

import base64

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.launchcard.inference.plugins.module_utils import _drain as drain
from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
from ansible_collections.launchcard.inference.plugins.plugin_utils import _report as report
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as unit_options
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units_gate as units_gate
from ansible_collections.launchcard.inference.plugins.module_utils import _versions as versions


def host_units(host_plan, options=None):
    """Unit files (name, content) for one host of the plan."""
    try:
        return units.host_units(host_plan or {}, options)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.host_units: %s" % to_text(exc))


def drain_endpoints(host_plan):
    """The engines of one host (its plan entry or record, ``{"instances": [...]}``) for ``engine_drain``."""
    try:
        return drain.endpoints_of((host_plan or {}).get("instances") or [])
    except (ValueError, KeyError) as exc:
        raise AnsibleFilterError("launchcard.inference.drain_endpoints: %s" % to_text(exc))


def unit_settings(host_vars):
    """The unit options and secrets of one host, from its variables (``hostvars[inventory_hostname]``)."""
    try:
        return unit_options.host_settings(host_vars if host_vars is not None else {})
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.unit_settings: %s" % to_text(exc))


def failure_budget(percent=None):
    """launchcard_max_fail_percentage, checked: an int from 0 to 100 (see plugin_utils._report)."""
    try:
        return report.failure_budget(percent)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.failure_budget: %s" % to_text(exc))


def recorded_image_refs(record, images=None):
    """The pinned images a host's record names (see module_utils._state.recorded_image_refs).

    :param record: the record's text, or ``ansible.builtin.slurp``'s result of it (``content``, base64), or
        None or a failed or skipped slurp (no record): ``{}``.
    :param images: when given, only these images (as the card names them).
    """
    refs = _recorded(record)
    return refs if images is None else dict((k, v) for k, v in refs.items() if k in images)


def _recorded(record):
    if hasattr(record, "get"):
        if record.get("failed") or not record.get("content"):
            return {}
        try:
            record = base64.b64decode(record["content"]).decode("utf-8")
        except (ValueError, TypeError, UnicodeDecodeError):
            return {}
    return state.recorded_image_refs(record if isinstance(record, str) else None)


FIRST_STAGE_RESULTS = units_gate.FIRST_STAGE_RESULTS
first_stage_result = units_gate.first_stage_result


def health_endpoints(host_plan, converge=None, stage=None, plan=None, host=None, hostvars=None,
                     result_var=FIRST_STAGE_RESULTS, check_mode=False, gates=None):
    """Health-gate endpoints for one host of the plan (headless ranks left out).

    ``converge`` (optional): the ``systemd_units`` result of the run; the
    units whose start or restart it queued get ``previous`` (what they ran
    before), so the gate counts only their new process.

    With ``stage`` (``first`` or ``then``), ``plan`` and ``host``: one stage of
    the two-stage gate (see plugin_utils._report.gate_endpoints); for ``then``
    the first stage's results are read from ``hostvars[*][result_var]``, and in ``check_mode`` the units each
    host's converge (``hostvars[*].units_converge``) would start or restart, whose dependent endpoints are left out.
    ``gates``: the plan's ``gate_table``, computed once for the fleet (the peers are then not searched again).
    """
    if stage is None:
        out = [{"name": i["unit"], "url": i["health_url"], "probe": i["probe"], "model": i["served_model"],
                "unit": i["unit"]} for i in (host_plan or {}).get("instances", []) if i.get("health_url")]
    else:
        prior, pending = {}, {}
        # as planned (no hostvars: units_then_planned, _units_gate.gate_first) reads no other host
        for name in ((plan or {}).get("hosts") or {}) if hostvars is not None else ():
            if name in hostvars:
                prior[name] = first_stage_result(hostvars[name], result_var)
                if check_mode and stage == "then":
                    pending[name] = report.pending_units(hostvars[name].get("units_converge"), True)
        try:
            out = report.gate_endpoints(plan, host, stage, prior, pending, gates)
        except ValueError as exc:
            raise AnsibleFilterError("launchcard.inference.health_endpoints: %s" % to_text(exc))
    return _previous(out, converge)


_previous = units_gate.with_previous


class FilterModule(object):
    """launchcard.inference filters."""

    def filters(self):
        return {
            "host_units": host_units,
            "drain_endpoints": drain_endpoints,
            "unit_settings": unit_settings,
            "failure_budget": failure_budget,
            "health_endpoints": health_endpoints,
            "recorded_image_refs": recorded_image_refs,
            "version_drift": versions.drift,
        }
