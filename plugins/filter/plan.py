# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that expose the planner's results to roles; logic in module_utils."""

from __future__ import annotations

import base64

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.launchcard.inference.plugins.module_utils import _drain as drain
from ansible_collections.launchcard.inference.plugins.module_utils import _preflight as preflight
from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
from ansible_collections.launchcard.inference.plugins.module_utils import _systemd as systemd
from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as images
from ansible_collections.launchcard.inference.plugins.plugin_utils import _planfile as planfile
from ansible_collections.launchcard.inference.plugins.plugin_utils import _preflight_steps as preflight_steps
from ansible_collections.launchcard.inference.plugins.plugin_utils import _report as report
from ansible_collections.launchcard.inference.plugins.plugin_utils import _role_vars as role_vars
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as unit_options
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_times as unit_times
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units_gate as units_gate
from ansible_collections.launchcard.inference.plugins.plugin_utils import _weights as weights
from ansible_collections.launchcard.inference.plugins.module_utils import _versions as versions


def host_units(host_plan, options=None):
    """Unit files (name, content) for one host of the plan."""
    try:
        return units.host_units(host_plan or {}, options)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.host_units: %s" % to_text(exc))


def gate_timeout(host_plan, options=None, override=None):
    """The health gate's timeout for one host: ``override`` when set, else what its engines need to load."""
    try:
        return unit_times.gate_timeout(host_plan or {}, options, override)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.gate_timeout: %s" % to_text(exc))


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


def native_install(host_vars):
    """What the runtime role installs into a host's native virtualenv (see plugin_utils._unit_options.native_install)."""
    try:
        return unit_options.native_install(host_vars if host_vars is not None else {})
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.native_install: %s" % to_text(exc))


def failure_budget(percent=None):
    """launchcard_max_fail_percentage, checked: an int from 0 to 100 (see plugin_utils._report)."""
    try:
        return report.failure_budget(percent)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.failure_budget: %s" % to_text(exc))


def failure_budget_spent(lost, hosts, percent=None):
    """Whether the lost hosts (failed or unreachable) exceed the failure budget (see plugin_utils._report)."""
    try:
        return report.failure_budget_spent(lost, hosts, percent)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.failure_budget_spent: %s" % to_text(exc))


def role_vars_by_host(hostvars, hosts, argument_spec):
    """The variables of a role argument spec each host sets (inventory, extra vars), hosts grouped by equal values
    (see plugin_utils._role_vars.by_host)."""
    return role_vars.by_host(hostvars, hosts, list(argument_spec or {}))


def units_setup_reads(host_vars):
    """Paths and users the preflight call reads for the units role's setup (see plugin_utils._unit_options)."""
    try:
        return unit_options.setup_reads(host_vars if host_vars is not None else {})
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.units_setup_reads: %s" % to_text(exc))


def units_setup_needed(found, options, helper_sha1):
    """Whether the units role's setup steps have anything to do (see plugin_utils._unit_options)."""
    return unit_options.setup_needed(found, options, helper_sha1)


def setup_parts(preflight, host_plan, stack_roles, run_tags=("all",), skip_tags=(), install_stack=True,
                runtime=False, units_prepare=False):
    """The roles deploy includes on a host before its units (see plugin_utils._unit_options.setup_parts)."""
    return unit_options.setup_parts(preflight, host_plan, stack_roles or {}, run_tags or ("all",), skip_tags or (),
                                    install_stack, bool(runtime), bool(units_prepare))


def held_images(hostvars, hosts, result_var="preflight_result"):
    """``{image: name@sha256:...}`` the hosts' records agree they run (see plugin_utils._images.held_refs).

    Reads ``hostvars[host][result_var].recorded_image_refs`` (the preflight call's read of each record).
    """
    recorded = {}
    for host in hosts or []:
        if host in hostvars:
            recorded[host] = (hostvars[host].get(result_var) or {}).get("recorded_image_refs") or {}
    return images.held_refs(recorded)[0]


def hold_images(resolved, held):
    """The resolved images with a moved tag held at the digest the fleet runs (see plugin_utils._images.hold).

    :returns: ``{"image_refs": {image: name@sha256:...}, "drift": [{image, running, registry}], "warnings":
        [one sentence per moved tag]}``.
    """
    refs, drift = images.hold(resolved or {}, held or {})
    return {"image_refs": refs, "drift": drift, "warnings": [images.drift_warning(m) for m in drift],
            "held": dict((m["image"], refs[m["image"]]) for m in drift)}


def image_pull_groups(refs, concurrency=0):
    """A host's images by registry, each with its bound of hosts pulling at once (see plugin_utils._images.pull_groups)."""
    try:
        return images.pull_groups(refs, concurrency)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.image_pull_groups: %s" % to_text(exc))


def image_pullers(hostvars, hosts, plan, result_var="preflight_result"):
    """``{image: [host]}``: the hosts that run each image of ``plan`` and must pull it (see plugin_utils._images.pullers).

    Reads each host's ``hostvars[host][result_var]`` (``recorded_image_refs``, ``recorded_images_missing``).
    """
    found = dict((h, hostvars[h].get(result_var) or {}) for h in hosts or [] if h in hostvars)
    return images.pullers(plan or {}, found)


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


def docker_daemon_config(current, mirrors):
    """``daemon.json`` with the registry mirrors merged in (see plugin_utils._images.docker_daemon_config)."""
    try:
        return images.docker_daemon_config(current, mirrors)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.docker_daemon_config: %s" % to_text(exc))


def registry_auth(credentials, mirrors=None, plain_http=None):
    """The hosts' podman auth file for the registry credentials (see plugin_utils._images.registry_auth)."""
    try:
        return images.registry_auth(credentials, mirrors, plain_http)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.registry_auth: %s" % to_text(exc))


def podman_registries_conf(mirrors):
    """The podman hosts' registries.conf drop-in (see plugin_utils._images.podman_registries_conf)."""
    try:
        return images.podman_registries_conf(mirrors)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.podman_registries_conf: %s" % to_text(exc))


def podman_containers_conf(keyring):
    """The podman hosts' containers.conf drop-in (see plugin_utils._images.podman_containers_conf)."""
    return images.podman_containers_conf(bool(keyring))


def registry_credentials_digest(credentials, mirrors=None, salt=""):
    """A salted, slow digest of the registry credentials (see plugin_utils._images.registry_credentials_digest)."""
    try:
        return images.registry_credentials_digest(credentials, mirrors, salt)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.registry_credentials_digest: %s" % to_text(exc))


def weights_peers(plan, hostvars, hosts, result_var="preflight_result", fanout=0, source="peer", hub_concurrency=0):
    """Who downloads each card's revision and the waves of copies from it (see plugin_utils._weights.peer_plan).

    Reads ``hostvars[host][result_var].weights_staged`` (the preflight call's read of the completion stamp).
    """
    staged = {}
    for host in hosts or []:
        if host in hostvars:
            staged[host] = bool((hostvars[host].get(result_var) or {}).get("weights_staged"))
    try:
        fanout, hub_concurrency = int(fanout or 0), int(hub_concurrency or 0)
    except (TypeError, ValueError):
        raise AnsibleFilterError("launchcard.inference.weights_peers: fanout and hub_concurrency must be integers, "
                                 "got %r and %r" % (fanout, hub_concurrency))
    if source not in ("peer", "hub"):
        raise AnsibleFilterError("launchcard.inference.weights_peers: source must be peer or hub, got %r" % (source,))
    return weights.peer_plan(plan or {}, staged, hosts or [], fanout, source, hub_concurrency)


def weights_peer_receive(hf_home, repo, conf_path, address):
    """How a host receives a peer copy: rsync daemon settings, key options, destination (plugin_utils._weights)."""
    try:
        return weights.peer_receive(hf_home, repo, conf_path, address)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.weights_peer_receive: %s" % to_text(exc))


def weights_peer_report(peers, cards=None):
    """Lines naming the host of each card that downloads and those that copy (see plugin_utils._weights)."""
    repo_of = {}
    for name, card in (cards or {}).items():
        model = (card or {}).get("model") or {}
        if model.get("repo") and model.get("revision"):
            repo_of[name] = "%s@%s" % (model["repo"], str(model["revision"])[:12])
    return weights.peer_report(peers or {}, repo_of)


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
        # as planned (no hostvars: units_then_planned, units_gate_first) reads no other host
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


def gate_table(plan, hosts=None):
    """Every host's health gate as planned (see plugin_utils._report.gate_table), once for the fleet."""
    return report.gate_table(plan or {}, hosts)


def units_second_stage(gates, hostvars, hosts, check_mode=False, result_var=FIRST_STAGE_RESULTS,
                       converge_var="units_converge"):
    """The units role's second gate stage of every host of ``hosts`` that has one (see plugin_utils._units_gate)."""
    return units_gate.second_stage(gates, hostvars, hosts, check_mode, result_var, converge_var)


def units_gate_first(host_plan, plan, host, timeout, interval, record=None, gates=None):
    """The units role's first gate stage, as ``systemd_units``' ``health`` option (see plugin_utils._units_gate)."""
    return units_gate.gate_first(host_plan, plan, host, timeout, interval, record, gates)


def units_reads(host_plan, plan, host, host_vars, remove_secrets=False, gates=None):
    """The preflight call's ``units_reads`` option for one host (see plugin_utils._units_gate.reads)."""
    try:
        return units_gate.reads(host_plan, plan, host, host_vars, remove_secrets, gates)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.units_reads: %s" % to_text(exc))


def units_settled(found, units, allowed_dropins=None, record=None):
    """The result the units role's converge call would return on a host where it would change nothing, or None
    (see module_utils._systemd.settled_converge): ``found`` is the preflight call's ``units_found``, ``units``
    the converge's ``units`` option, ``record`` its gate's record (``units_record``: card, instances, runtime)."""
    if not found:
        return None
    units = [{"name": u["name"], "content": u["content"]} for u in units or ()]
    digest = None
    if record is not None:
        desired = dict((u["name"], u["content"]) for u in units)
        digest = state.state_sha256(state.build(desired, record.get("card"), record.get("instances"),
                                                record.get("runtime")))
    return systemd.settled_converge(found, units, allowed_dropins or (), digest)


def deploy_summary(plan, hostvars, check_mode=False):
    """Deploy summary table lines (see plugin_utils._units_gate.summary)."""
    return units_gate.summary(plan, hostvars, check_mode)


def preflight_peers(plan, cards):
    """Every planned host's peer ports (the ``peers`` of its preflight needs), once for the fleet
    (see module_utils._preflight.peer_table)."""
    try:
        return preflight.peer_table(cards or {}, plan or {})
    except KeyError as exc:
        raise AnsibleFilterError("launchcard.inference.preflight_peers: a host's card is not in the cards: %s" % to_text(exc))


def foreign_peers(plan, hosts):
    """The instances of the planned hosts outside ``hosts``, by address (see plugin_utils._report.foreign_peers)."""
    return report.foreign_peers(plan or {}, hosts)


def preflight_needs(card, host_plan, plan=None, image_vendors=None, native_packages=None, peers=None, native_lock=None):
    """What one host needs for its share of the plan (see plugin_utils._preflight_steps.host_needs)."""
    try:
        return preflight_steps.host_needs(card, host_plan, plan, image_vendors, native_packages, peers, native_lock)
    except ValueError as exc:
        raise AnsibleFilterError(to_text(exc))


def misspelt_variables(host_vars, variable):
    """One host's unknown ``launchcard_*`` variables that look like ``variable`` (see plugin_utils._preflight_steps)."""
    return preflight_steps.misspelt(list(host_vars or {}), variable)


def _results(hostvars, hosts, result_var):
    return dict((h, (hostvars[h] if h in hostvars else {}).get(result_var) or {}) for h in hosts or [])


def preflight_report(hostvars, hosts, result_var="preflight_result"):
    """Preflight table lines for ``hosts`` from each host's registered result (see plugin_utils._preflight_steps)."""
    return preflight_steps.report_lines(_results(hostvars, hosts, result_var), hosts)


def preflight_fleet_warnings(plan, cards, hostvars, hosts, result_var="preflight_result"):
    """Fleet-wide preflight warnings from each host's result (see plugin_utils._preflight_steps.fleet_warnings)."""
    return preflight_steps.fleet_warnings(plan, cards, _results(hostvars, hosts, result_var), hosts)


def argv_checks(plan, image_refs, hostvars, hosts, native_python, result_var="preflight_result", pull=False):
    """The plan's distinct argv checks this run needs (see plugin_utils._preflight_steps.argv_checks)."""
    try:
        return preflight_steps.argv_checks(plan, image_refs, dict((h, hostvars[h]) for h in hosts if h in hostvars),
                                           _results(hostvars, hosts, result_var), hosts, native_python, pull)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.argv_checks: %s" % to_text(exc))


def argv_check_report(checks, hostvars, hosts, result_var="preflight_argv"):
    """``{refusals, warnings, kept}`` of the argv checks (see plugin_utils._preflight_steps.argv_report)."""
    cards = next(((hostvars[h] if h in hostvars else {}).get("launchcard_cards") for h in hosts), None)
    return preflight_steps.argv_report(checks, list(_results(hostvars, hosts, result_var).values()), cards)


def plan_file(planned, resolved=None):
    """The text of a plan file (see plugin_utils._planfile) from the plan role's result and the resolved images."""
    try:
        return planfile.text_of(planned, resolved)
    except planfile.PlanFileError as exc:
        raise AnsibleFilterError("launchcard.inference.plan_file: %s" % to_text(exc))


class FilterModule(object):
    """launchcard.inference filters."""

    def filters(self):
        return {
            "host_units": host_units,
            "gate_timeout": gate_timeout,
            "drain_endpoints": drain_endpoints,
            "unit_settings": unit_settings,
            "native_install": native_install,
            "units_setup_reads": units_setup_reads,
            "role_vars_by_host": role_vars_by_host,
            "failure_budget": failure_budget,
            "failure_budget_spent": failure_budget_spent,
            "units_setup_needed": units_setup_needed,
            "setup_parts": setup_parts,
            "health_endpoints": health_endpoints,
            "units_reads": units_reads,
            "units_settled": units_settled,
            "units_gate_first": units_gate_first,
            "units_second_stage": units_second_stage,
            "gate_table": gate_table,
            "foreign_peers": foreign_peers,
            "preflight_peers": preflight_peers,
            "held_images": held_images,
            "hold_images": hold_images,
            "recorded_image_refs": recorded_image_refs,
            "image_pullers": image_pullers,
            "image_pull_groups": image_pull_groups,
            "docker_daemon_config": docker_daemon_config,
            "registry_auth": registry_auth,
            "podman_registries_conf": podman_registries_conf,
            "podman_containers_conf": podman_containers_conf,
            "registry_credentials_digest": registry_credentials_digest,
            "deploy_summary": deploy_summary,
            "version_drift": versions.drift,
            "preflight_needs": preflight_needs,
            "preflight_report": preflight_report,
            "misspelt_variables": misspelt_variables,
            "argv_checks": argv_checks,
            "argv_check_report": argv_check_report,
            "preflight_fleet_warnings": preflight_fleet_warnings,
            "weights_peers": weights_peers,
            "weights_peer_report": weights_peer_report,
            "weights_peer_receive": weights_peer_receive,
            "plan_file": plan_file,
        }
