# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the collection: what the preflight role computes on the controller, for one host (the preflight
call's options: plugins/action/preflight.py) and once for the fleet after every host's call (the report, the argv
checks, the locks to release, the failure budget: plugins/action/preflight_fleet.py). The run lock's own logic is
_run_locks.py, the units role's reads _units_gate.py."""

from __future__ import annotations

import json

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.launchcard.inference.plugins.module_utils import _lock as lock
from ansible_collections.launchcard.inference.plugins.module_utils import _preflight as preflight
from ansible_collections.launchcard.inference.plugins.plugin_utils import _argv_check as argv_check
from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as images
from ansible_collections.launchcard.inference.plugins.plugin_utils import _inventory_check as inventory_check
from ansible_collections.launchcard.inference.plugins.plugin_utils import _memory_budget as memory_budget
from ansible_collections.launchcard.inference.plugins.plugin_utils import _native_locks as native_locks
from ansible_collections.launchcard.inference.plugins.plugin_utils import _report as report
from ansible_collections.launchcard.inference.plugins.plugin_utils import _run_locks as run_locks
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as unit_options
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units
from ansible_collections.launchcard.inference.plugins.plugin_utils import _vendors as vendors

REPORT_COLUMNS = ["host", "check", "result", "need", "found", "message"]


def host_needs(card, host_plan, plan=None, image_vendors=None, native_packages=None, peers=None, native_lock=None):
    """What one host needs for its share of the plan (module_utils._preflight.host_needs), with each GPU instance's
    memory (from its argv and the model's config.json in the plan), ``image_vendors`` (the host's
    ``launchcard_image_vendors`` over the image's name, plugin_utils._vendors) and ``native_gaps`` (vendor -> what
    runs here with no lock in the collection, plugin_utils._native_locks; empty where ``native_packages`` or
    ``native_lock`` is set). ``peers``: the host's entry of the fleet's peer ports (the plan is then not scanned).

    :raises ValueError: a vendor setting that names no vendor.
    """
    needs = preflight.host_needs(card, host_plan or {}, plan, peers)
    model = ((plan or {}).get("model_configs") or {}).get((host_plan or {}).get("card")) or {}
    needs["memory"] = [dict(memory_budget.instance_needs(i, needs["weights_by_unit"].get(i.get("unit")),
                                                         model.get("config"), model.get("error")),
                            weights_spread_mib=needs["weights_spread_by_unit"].get(i.get("unit")))
                       for i in (host_plan or {}).get("instances", []) if i.get("gpus")]
    needs["image_vendors"] = vendors.image_vendor_needs(host_plan or {}, image_vendors or {})
    chosen = native_packages is not None or native_lock not in (None, "")
    needs["native_gaps"] = {} if chosen else native_locks.native_gaps(host_plan)
    return needs


def checked(result, needs, lock_spec=None):
    """The preflight call's result with its checks, made here where the module left them to the controller (it
    returns ``checks_options`` then: its call took no lock, whose taking waits on them): ``_preflight.evaluate`` of
    the facts it read, the record's units and runtime among them (dropped from the result once checked), with the
    ``needs`` it was sent; a host that failed a check takes no lock (``lock_spec``: the call's ``lock`` option)."""
    options = result.pop("checks_options", None)
    if options is None or result.get("checks") is not None or not isinstance(result.get("facts"), dict):
        return result
    facts = dict(result["facts"])
    recorded = dict((name, facts.pop(name, None)) for name in ("recorded_units", "recorded_runtime"))
    result["checks"] = preflight.evaluate(dict(facts, **recorded), needs or {}, options)
    result["failed_checks"] = [r["check"] for r in preflight.failed(result["checks"])]
    result["facts"] = facts
    if result["failed_checks"] and lock_spec and result.get("lock") is not None:
        result["lock"] = lock.not_taken(lock_spec, lock.FAILED_CHECK)
    return result


def misspelt(names, variables):
    """Among one host's variable ``names``, the unknown ``launchcard_*`` ones that look like each of ``variables`` (a
    misspelt name the planning step warned of), for the checks whose messages name them
    (plugin_utils._inventory_check): ``{variable: sorted names}``, every variable a key."""
    found = inventory_check.misspelt(list(names or ()), list(variables), inventory_check.known_variables())
    return dict((v, found.get(v, [])) for v in variables)


# The preflight call's options that come from the role's variables with from_role (roles/preflight/tasks/call.yml):
# (option, variable, how it is read); "bool" as Jinja's bool filter reads it, "image_sizes" the resolved images' sizes.
ROLE_OPTIONS = (
    ("weights_dir", "preflight_weights_dir", None),
    ("checks", "preflight_checks", None),
    ("allow_unvalidated_hardware", "preflight_allow_unvalidated_hardware", None),
    ("headroom_mib", "preflight_headroom_mib", None),
    ("vendor", "preflight_vendor", None),
    ("connect_timeout", "preflight_connect_timeout", None),
    ("host_ipc", "preflight_host_ipc", None),
    ("shm_min_gib", "preflight_shm_min_gib", None),
    ("runtime", "preflight_runtime", None),
    ("image_allowance_gib", "preflight_image_allowance_gib", None),
    ("image_sizes", "preflight_images", "image_sizes"),
    ("image_unpack_factor", "preflight_image_unpack_factor", None),
    ("image_vendors", "preflight_image_vendors", None),
    ("native_packages", "preflight_native_packages", None),
    ("native_lock", "preflight_native_lock", None),
    ("container_vendor", "preflight_container_vendor", None),
    ("container_toolkit", "preflight_container_toolkit", "bool"),
    ("amd_render_gid", "preflight_amd_render_gid", None),
    ("ascend_devices", "preflight_ascend_devices", None),
    ("install_driver", "preflight_install_driver", None),
    ("pci_devices_dir", "preflight_pci_devices_dir", None),
    ("gpu_memory_mib", "preflight_gpu_memory_mib", None),
    ("stack_versions", "preflight_stack_versions", None),
    ("native_venv", "preflight_native_venv", None),
    ("inspect", "preflight_inspect", None),
    ("users", "preflight_users", None),
    ("read_units", "preflight_units", "bool"),
    ("record", "preflight_record", None),
    ("allow_removal", "preflight_allow_removal", None),
    ("allow_runtime_change", "preflight_allow_runtime_change", None),
    ("recheck", "preflight_recheck", None),
    ("take_lock", "preflight_lock", "bool"),
    ("lock_defer", "preflight_lock_defer", "bool"),
    ("lock_dir", "preflight_lock_dir", None),
    ("break_lock", "preflight_lock_break", "bool"),
    ("host_step", "preflight_host_step", None),
)


def role_args(read):
    """The preflight call's options from the role's variables (:data:`ROLE_OPTIONS`): ``read(name)`` is a variable
    rendered, or raises ``KeyError`` where it is undefined (the option is then left to its default)."""
    out = {}
    for option, name, how in ROLE_OPTIONS:
        try:
            value = read(name)
        except KeyError:
            continue
        if how == "bool":
            value = boolean(value, strict=False)
        elif how == "image_sizes":
            value = (value or {}).get("image_sizes", {}) if hasattr(value, "get") else {}
        out[option] = value
    return out


def _dropped(value):
    return value is None or value == ""


def optional_args(args):
    """The preflight call's options whose empty value means "not set" (an inventory's ``''``, a null default)
    left out, ``ascend_devices`` given as JSON text (an INI ``[group:vars]`` list) parsed, and
    ``allow_removal``/``allow_runtime_change`` (null: not checked) as booleans where set."""
    out = dict(args)
    for name in ("amd_render_gid", "ascend_devices", "native_venv", "record"):
        if name in out and _dropped(out[name]):
            del out[name]
    for name in ("allow_removal", "allow_runtime_change"):
        if name in out and out[name] is None:
            del out[name]
    # gpu_memory_mib: 0 or null is "unknown", as the role's default(omit, true) gave it
    if "gpu_memory_mib" in out and not out["gpu_memory_mib"]:
        del out["gpu_memory_mib"]
    if isinstance(out.get("ascend_devices"), str):
        try:
            out["ascend_devices"] = json.loads(out["ascend_devices"])
        except ValueError as exc:
            raise ValueError("ascend_devices: expected a JSON list of device numbers, found %r (%s)" % (out["ascend_devices"], exc))
    for name in ("allow_removal", "allow_runtime_change"):
        if name in out:
            out[name] = boolean(out[name], strict=False)
    return out


def lost_hosts(play_hosts_all, play_hosts, results):
    """The hosts this run has lost at the fleet step: those already out of the play (failed or unreachable), then
    those whose preflight failed a check (the per-host failure stops them next), in play order."""
    out = [h for h in play_hosts_all if h not in play_hosts]
    out += [h for h in play_hosts if (results.get(h) or {}).get("failed_checks")]
    return out


def report_lines(results, hosts):
    """The preflight table's lines for ``hosts``, from each host's preflight result (a skipped one left out)."""
    by_host = {}
    for host in hosts:
        res = results.get(host) or {}
        if not res.get("skipped"):
            by_host[host] = res.get("checks")
    return report.table(REPORT_COLUMNS, preflight.report_rows(by_host))


def fleet_warnings(plan, cards, results, hosts):
    """What no single host shows (module_utils._preflight.fleet_gpu_shortfalls), from each host's preflight result."""
    found = dict((h, results[h]) for h in hosts if results.get(h) and not results[h].get("skipped"))
    return preflight.fleet_gpu_shortfalls(plan, cards, found)


def held_images(results, hosts):
    """``{image: name@sha256:...}`` the hosts' records agree they run (plugin_utils._images.held_refs)."""
    recorded = dict((h, (results.get(h) or {}).get("recorded_image_refs") or {}) for h in hosts)
    return images.held_refs(recorded)[0]


def drift_warnings(image_refs, held):
    """One sentence per tag that moved in the registry since the hosts recorded its digest (deploy keeps theirs)."""
    drift = images.hold(image_refs or {}, held or {})[1]
    return [images.drift_warning(m) for m in drift]


def _at(repo, revision, other_repo=None):
    """``revision`` shortened to 12 hex, after its repo unless that is ``other_repo``."""
    short = str(revision)[:12]
    return short if repo == other_repo else "%s at %s" % (repo, short)


def revision_warnings(plan, cards, results, hosts):
    """One sentence per move from the revision the hosts' records name to another the plan gives them (an inventory
    still naming the card an upgrade replaced moves the fleet back, every engine at once: docs/upgrades.md), hosts
    grouped and sorted; a host without a record naming a card, or skipped, or unreachable, is not judged."""
    moves = {}
    placed = (plan or {}).get("hosts") or {}
    for host in hosts:
        res = results.get(host) or {}
        rec = res.get("recorded_card") or {}
        key = (placed.get(host) or {}).get("card")
        if res.get("skipped") or res.get("unreachable") or not rec or key not in (cards or {}):
            continue
        instances = (placed.get(host) or {}).get("instances") or []
        if instances and all(i.get("role") == "router" for i in instances):
            continue  # a router loads no weights: its units name no revision, the move restarts nothing there
        old = (rec.get("repo"), rec.get("revision"))
        new = (cards[key]["model"]["repo"], cards[key]["model"]["revision"])
        if old != new:
            back = new == (rec.get("repo"), rec.get("previous_revision"))
            moves.setdefault((old, new, back), []).append(host)
    out = []
    for (old, new, back), names in sorted(moves.items()):
        one = len(names) == 1
        they, their = ("it", "its") if one else ("they", "their")
        out.append("%s serve%s %s (%s record%s); this deploy moves %s to %s%s, restarting every engine at once "
                   "(upgrade.yml moves a serving fleet batch by batch: docs/upgrades.md)%s" % (
                       ", ".join(sorted(names)), "s" if one else "", _at(*old), their, "" if one else "s",
                       "it" if one else "them", _at(new[0], new[1], old[0]),
                       ", the revision %s served before %s last upgrade" % (they, their) if back else "",
                       "; is launchcard_card_src still the card upgrade.yml replaced?" if back else ""))
    return out


def argv_checks(plan, image_refs, host_vars, results, hosts, native_python, pull=False):
    """The plan's distinct argv checks this run needs on ``hosts``, of the argv each host's units run (its unit options: e.g.
    vLLM's ``--shutdown-timeout``), each on one host that holds its image or, with ``pull``, that pulls it
    (plugin_utils._argv_check); an argv and image every host's record names already is not checked.

    :param host_vars: ``{host: its variables}`` (``hostvars``); ``results``: ``{host: its preflight result}``.
    :raises ValueError: a unit option :func:`_unit_options.host_options` refuses.
    """
    runtimes, in_place, options, engines, recorded, run_args, containers_conf = {}, {}, {}, {}, {}, {}, {}
    for host in hosts:
        hv = host_vars[host] if host in host_vars else {}
        runtimes[host] = hv.get("launchcard_runtime") or "docker"
        res = results.get(host) or {}
        facts = res.get("facts") or {}
        in_place[host] = list((facts.get("image_disk") or {}).get("in_place") or [])
        options[host] = unit_options.host_options(hv)
        # preflight's facts: the docker client's path, podman's version (null when absent); a host that failed a
        # check is not changed, so it pulls nothing
        engines[host] = None if res.get("failed_checks") else (facts.get("engines") or {}).get(
            "podman_version" if runtimes[host] == "podman" else "docker")
        recorded[host] = {"argv": res.get("recorded_argv") or {}, "image_refs": res.get("recorded_image_refs") or {}}
        # the check's container runs as the host's units do (podman --cgroups), under the runtime role's
        # containers.conf setting (keyring), which a first deploy has not written yet
        run_args[host] = units.podman_cgroups_args(options[host])
        containers_conf[host] = images.podman_containers_conf(
            boolean(hv.get("launchcard_podman_keyring", True), strict=False)) if runtimes[host] == "podman" else None
    # a native host's virtualenv is there once the runtime role stamped an install in it (preflight's native_stamps)
    pythons = dict((h, native_python) for h in hosts if runtimes[h] == "native"
                   and (results.get(h) or {}).get("native_stamps") != [])
    # only this run's hosts: one outside a --limit run is not changed by it, and this run read nothing of it
    ours = dict((h, hp) for h, hp in ((plan or {}).get("hosts") or {}).items() if h in hosts)
    return argv_check.argv_checks(dict(plan or {}, hosts=ours), image_refs or {}, runtimes, pythons, in_place, options,
                                  engines, recorded, bool(pull), run_args, containers_conf)


def argv_report(checks, argv_results, cards):
    """``{refusals, warnings, kept}`` of the argv checks from each host's engine_argv result (``kept``: the images
    pulled for accepted checks, ``[{host, runtime, image}]``)."""
    results = []
    for res in argv_results:
        if not (res or {}).get("skipped"):
            results.extend((res or {}).get("results") or [])
    refusals, warnings = argv_check.argv_check_report(checks, results, cards)
    return {"refusals": refusals, "warnings": warnings, "kept": argv_check.argv_pulls_kept(checks, results)}


def lock_refusal(results, hosts):
    """Each lock another run holds in the hosts' preflight results, and how to break a stale one (_run_locks.refusal);
    ``""`` when none."""
    return run_locks.refusal(dict((h, {"preflight_result": results.get(h) or {}}) for h in hosts), hosts)


def argv_step(plan, image_refs, host_vars, results, hosts_all, hosts, native_python, check_mode=False, percent=None):
    """The argv checks of the fleet step before the hosts check them: :func:`argv_checks` over ``hosts``, where a
    host pulls an image no host holds unless the run stops anyway (check mode, another run's lock, a spent failure
    budget).

    :raises ValueError: a unit option refused, a failure budget that is not a percentage.
    """
    lost = lost_hosts(hosts_all, hosts, results)
    pull = not check_mode and not lock_refusal(results, hosts_all) and not report.failure_budget_spent(lost, hosts_all, percent)
    return argv_checks(plan, image_refs, host_vars, results, hosts, native_python, pull)


def report_step(plan, cards, results, argv_results, hosts_all, hosts, checks=None, image_refs=None, hold=False,
                lock_taken=False, check_mode=False, recheck=False, fleet=None, anchor=None, keep_fleet=False,
                percent=None):
    """The fleet step after every host's preflight call and argv check: the table and the fleet's warnings (``msg``),
    and what the tasks after it do with them.

    :param results: ``{host: preflight result}``; ``argv_results``: ``{host: engine_argv result}``.
    :param hold: whether a tag that moved since the hosts recorded its digest is held (a warning per tag), and the
        hosts warned of a move to another revision than their records name (a deploy's, :func:`revision_warnings`).
    :param lock_taken: whether the hosts took their run locks in their preflight calls.
    :returns: ``{"msg", "warnings" (the revision moves, which Ansible prints too), "then": {"release": [{host, paths}]
        (the locks to release when the run stops here, one entry with no paths to refuse on), "refusal" (another run's
        lock), "argv_refusals", "remove" (images pulled for accepted checks, removed when another check's refusal stops
        the run), "lost" (the hosts out of the run once the hosts that failed a check stop), "budget_spent"}}``.
    :raises ValueError: a failure budget that is not a percentage.
    """
    hosts_all, hosts = list(hosts_all), list(hosts)
    warnings = list(fleet_warnings(plan, cards, results, hosts_all))
    moved = []
    if hold and not recheck:
        warnings += drift_warnings(image_refs, held_images(results, hosts))
        # a deploy only (upgrade.yml moves revisions on purpose, batch by batch)
        moved = revision_warnings(plan, cards, results, hosts)
        warnings += moved
    argv = {"refusals": [], "warnings": [], "kept": []}
    if not recheck:
        argv = argv_report(checks or [], [argv_results.get(h) for h in hosts_all], cards)
    warnings += argv["warnings"]
    lines = report_lines(results, hosts_all) + ([""] + ["WARNING (fleet): %s" % w for w in warnings] if warnings else [])
    refusal = lock_refusal(results, hosts_all)
    lost = lost_hosts(hosts_all, hosts, results)
    spent = report.failure_budget_spent(lost, hosts_all, percent)
    release = []
    if lock_taken and not recheck and not check_mode and (refusal or spent or argv["refusals"]):
        held = dict((h, {"preflight_result": results.get(h) or {}}) for h in hosts_all)
        release = run_locks.taken(held, hosts_all, fleet, anchor, keep_fleet=keep_fleet) or [{"host": hosts[0], "paths": []}]
    return {"msg": "\n".join(lines), "warnings": moved,
            "then": {"release": release, "refusal": refusal, "argv_refusals": argv["refusals"],
                     "remove": argv["kept"] if argv["refusals"] else [],
                     "lost": [h for h in hosts_all if h in lost], "budget_spent": spent and not recheck}}
