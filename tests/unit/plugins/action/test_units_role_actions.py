# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The units role's converge, gate stages and summary, decided in its action plugins from the host's variables
(systemd_units' from_plan, http_health's stage, units_summary), as its Jinja role variables decided them."""

from __future__ import annotations

import hashlib
import os
from unittest.mock import MagicMock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext

from ansible_collections.launchcard.inference.plugins.action.http_health import ActionModule as HttpHealth
from ansible_collections.launchcard.inference.plugins.action.systemd_units import ActionModule as SystemdUnits
from ansible_collections.launchcard.inference.plugins.action.units_summary import ActionModule as UnitsSummary
from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
from ansible_collections.launchcard.inference.plugins.plugin_utils import _report as report
from ansible_collections.launchcard.inference.plugins.plugin_utils import _textfile as textfile
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as unit_options
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_times as unit_times
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units_gate as units_gate
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.plugin_utils._runtime_host import RuntimeHost
from ansible_collections.launchcard.inference.plugins.plugin_utils._units_host import UnitsHost

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
RECIPES = ("vllm-aggregated", "sglang-encoder", "sglang-language", "sglang-aggregated", "sglang-prefill", "sglang-decode")
UNIT = "launchcard-glm-5.3-flash-sglang-%s-0.service"


@pytest.fixture(scope="module")
def fleet():
    """The example card on 7 hosts, its serving recipes in turn, and a router: gpu-004 runs the prefill engine,
    gpu-005 the decode engine (the router's peers), gpu-001 the encoder (the language server's on gpu-002)."""
    path = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
    with open(path) as f:
        card = load_card(f.read(), path)
    hosts = [("gpu-%03d" % i, {"address": "10.1.0.%d" % i, "recipes": [RECIPES[i % 6]]}) for i in range(7)]
    return plan(card, normalize_placement(hosts + [("router-0", {"address": "10.2.0.1", "recipes": ["sglang-router"]})]))


class Hostvars(dict):
    """``hostvars``: counts the hosts whose variables were read (each read costs Ansible a full merge)."""

    read = ()

    def __getitem__(self, host):
        self.read.append(host)
        return dict.__getitem__(self, host)


def task_vars(p, host, own=None, others=None, **role):
    """A task's variables on ``host``: the plan, the units role's defaults (or ``role``), its registered results."""
    hostvars = Hostvars(dict((h, dict((others or {}).get(h) or {})) for h in p["hosts"]))
    hostvars[host] = dict(dict.get(hostvars, host) or {}, **(own or {}))
    hostvars.read = []
    out = dict(inventory_hostname=host, hostvars=hostvars, launchcard_plan=p, units_state="started",
               units_health_timeout_s=None, units_health_interval_s=2, units_hf_token_remove=False, units_record=None)
    out.update(own or {})
    out.update(role)
    return out


def action(cls, args, check_mode=False, result=None):
    task = MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = check_mode
    context = PlayContext()
    context.check_mode = check_mode
    connection = MagicMock()
    connection._shell.tmpdir = None
    plugin = cls(task, connection, context, DataLoader(), None, None)
    plugin._execute_module = MagicMock(return_value=dict(result or {"changed": False}))
    return plugin


def sent(plugin):
    return plugin._execute_module.call_args.kwargs["module_args"]


def first_health(p, host, healthy=True):
    eps = [{"name": e["name"], "healthy": healthy, "detail": "x"} for e in report.gate_table(p, [host])[host] if not e["peers"]]
    return {"endpoints": eps, "unhealthy": [] if healthy else [e["name"] for e in eps], "then_gated": False,
            "msg": "" if healthy else "%s: engine exited" % host}


# systemd_units: from_plan

def test_from_plan_sends_the_units_secrets_gate_and_textfile_facts_the_role_variables_built(fleet):
    tv = task_vars(fleet, "router-0", own={"launchcard_hf_token": "hf_x"}, units_record={"card": {}, "instances": []})
    plugin = action(SystemdUnits, {"from_plan": True, "state": "started", "allow_removal": False})
    plugin.run(task_vars=tv)
    args, hp = sent(plugin), fleet["hosts"]["router-0"]
    opts = unit_options.host_options({"launchcard_hf_token": "hf_x"})
    assert "from_plan" not in args and args["allow_removal"] is False
    assert args["units"] == units.host_units(hp, opts)
    assert args["secrets"] == {"HF_TOKEN": "hf_x"} and args["remove_secrets"] is False
    assert args["secrets_file"] == unit_options.SECRETS_ENV_FILE
    assert args["textfile"] == {"instances": textfile.instances(fleet, "router-0"), "directory": textfile.TEXTFILE_DIR}
    gates = report.gate_table(fleet)
    assert args["health"] == {"endpoints": report.gate_endpoints(None, "router-0", "first", table=gates),
                              "then": report.gate_endpoints(None, "router-0", "then", table=gates),
                              "timeout": unit_times.gate_timeout(hp, opts), "interval": 2.0,
                              # with the runtime the runtime role applied (the play gives none)
                              "record": {"card": {}, "instances": [], "runtime": RuntimeHost(None, tv).record()}}
    assert args["health"]["record"]["runtime"]["kind"] == "docker"
    assert [e["name"] for e in args["health"]["then"]] == [UNIT % "router"] and args["health"]["endpoints"] == []
    # only this host's variables were merged (the fleet's gate table given, no other host is read)
    assert tv["hostvars"].read == ["router-0"]


def test_from_plan_reads_the_fleet_gate_table_and_the_role_s_timeout_and_token_removal(fleet):
    gates = {"gpu-000": [dict(name="x.service", url="http://a/health", probe="health", model=None, unit="x.service", peers=[])]}
    tv = task_vars(fleet, "gpu-000", launchcard_gates=gates, units_health_timeout_s="30", units_hf_token_remove="yes")
    plugin = action(SystemdUnits, {"from_plan": True})
    plugin.run(task_vars=tv)
    args = sent(plugin)
    assert [e["name"] for e in args["health"]["endpoints"]] == ["x.service"] and args["health"]["timeout"] == 30
    assert args["secrets"] == {} and args["remove_secrets"] is True


def test_from_plan_gates_nothing_when_stopping_or_on_a_host_the_plan_gives_nothing(fleet):
    for tv in (task_vars(fleet, "gpu-000"), dict(task_vars(fleet, "gpu-000"), inventory_hostname="lc-monitor")):
        plugin = action(SystemdUnits, {"from_plan": True, "state": "stopped" if tv["inventory_hostname"] == "gpu-000"
                                       else "started"})
        plugin.run(task_vars=tv)
        assert "health" not in sent(plugin)
    assert sent(plugin)["units"] == [] and sent(plugin)["textfile"]["instances"] == {}


def test_a_settled_host_builds_nothing_and_reads_no_host_s_variables(fleet):
    tv = task_vars(fleet, "gpu-000")
    plugin = action(SystemdUnits, {"from_plan": True, "settled": {"settled": True, "changed": False, "units": []}})
    out = plugin.run(task_vars=tv)
    assert out["settled"] is True and not plugin._execute_module.called and tv["hostvars"].read == []


def test_from_plan_refuses_the_options_it_builds_and_a_bad_variable_names_it(fleet):
    plugin = action(SystemdUnits, {"from_plan": True, "units": []})
    out = plugin.run(task_vars=task_vars(fleet, "gpu-000"))
    assert out["failed"] and out["msg"] == "from_plan builds units: give them or from_plan, not both"
    plugin = action(SystemdUnits, {"from_plan": True})
    out = plugin.run(task_vars=task_vars(fleet, "gpu-000", own={"launchcard_runtime": "dockr"}))
    assert out["failed"] and "launchcard_runtime" in out["msg"] and out["msg"].endswith("nothing was changed")
    plugin = action(SystemdUnits, {"from_plan": True})
    out = plugin.run(task_vars=task_vars(fleet, "gpu-000", units_health_timeout_s="soon"))
    assert out["failed"] and "units_health_timeout_s: the gate timeout must be a whole number" in out["msg"]
    assert not plugin._execute_module.called


# http_health: stage

def test_the_first_stage_gates_the_engines_that_name_no_peer_and_skips_a_host_without_one(fleet):
    for host, skipped in (("gpu-000", False), ("router-0", True), ("lc-monitor", True)):
        plugin = action(HttpHealth, {"stage": "first"})
        out = plugin.run(task_vars=dict(task_vars(fleet, "gpu-000"), inventory_hostname=host))
        assert bool(out.get("skipped")) == skipped and plugin._execute_module.called != skipped, host
    out = action(HttpHealth, {"stage": "first"}).run(task_vars=task_vars(fleet, "gpu-000", units_state="stopped"))
    assert out["skipped"] and out["skip_reason"] == "units_state is stopped"
    plugin = action(HttpHealth, {"stage": "first"})
    plugin.run(task_vars=task_vars(fleet, "gpu-000", units_health_interval_s=1))
    args, hp = sent(plugin), fleet["hosts"]["gpu-000"]
    assert [e["name"] for e in args["endpoints"]] == [i["unit"] for i in hp["instances"]]
    assert args["timeout"] == unit_times.gate_timeout(hp, unit_options.host_options({})) and args["interval"] == 1
    assert "record" not in args and "stage" not in args


def test_a_stage_with_endpoints_or_an_unknown_stage_fails_whatever_failed_when_says(fleet):
    for args in ({"stage": "first", "endpoints": []}, {"stage": "second"}):
        with pytest.raises(AnsibleActionFail, match="stage: expected one of first, then without endpoints"):
            action(HttpHealth, args).run(task_vars=task_vars(fleet, "gpu-000"))


def test_without_stage_the_endpoints_given_are_gated():
    plugin = action(HttpHealth, {"endpoints": [{"url": "http://a/health"}], "timeout": 5})
    plugin.run(task_vars={})
    assert sent(plugin) == {"endpoints": [{"url": "http://a/health"}], "timeout": 5}


def converged(p, host, **kw):
    """A host's registered converge result: its first stage healthy unless told, nothing queued unless told."""
    health = first_health(p, host, kw.pop("healthy", True))
    health["then_gated"] = kw.pop("then_gated", False)
    return dict({"changed": False, "actions": {"start": [], "restart": []}, "queued": {}, "health": health}, **kw)


def test_the_second_stage_reads_only_its_peers_and_blocks_an_endpoint_whose_peer_is_unhealthy(fleet):
    others = dict((h, {"units_converge": converged(fleet, h, healthy=(h != "gpu-005"))}) for h in fleet["hosts"])
    tv = task_vars(fleet, "router-0", own={"units_converge": converged(fleet, "router-0")}, others=others,
                   units_record={"card": {"repo": "r"}})
    plugin = action(HttpHealth, {"stage": "then"})
    plugin.run(task_vars=tv)
    (ep,) = sent(plugin)["endpoints"]
    assert ep["name"] == UNIT % "router" and ep["blocked"].startswith(
        "not probed: its peer is not healthy: %s on gpu-005 (x)" % (UNIT % "decode"))
    # the prefill and decode hosts, and its own for its unit options (the gate's timeout), no other
    assert sorted(tv["hostvars"].read) == ["gpu-004", "gpu-005", "router-0"]
    # its results go into launchcard.prom (launchcard_gate_passed) as the converge's first stage's do
    assert sent(plugin)["textfile"] == {"directory": textfile.TEXTFILE_DIR}
    # the converge did not record (its second stage was not gated): this call carries the record
    assert sent(plugin)["record"] == {"card": {"repo": "r"}, "runtime": RuntimeHost(None, tv).record()}


def test_the_second_stage_is_skipped_where_the_converge_s_probe_stands_for_it(fleet):
    others = dict((h, {"units_converge": converged(fleet, h)}) for h in fleet["hosts"])
    own = {"units_converge": converged(fleet, "router-0", then_gated=True)}
    out = action(HttpHealth, {"stage": "then"}).run(task_vars=task_vars(fleet, "router-0", own=own, others=others))
    assert out["skipped"] and "peers stayed as they were" in out["skip_reason"]
    # a peer restarted in this run: the router's one probe may have answered before, so it is gated again, and
    # the converge wrote the record already (then_gated), so this call carries none
    others["gpu-004"]["units_converge"]["actions"]["restart"] = [UNIT % "prefill"]
    plugin = action(HttpHealth, {"stage": "then"})
    plugin.run(task_vars=task_vars(fleet, "router-0", own=own, others=others, units_record={"card": {}}))
    assert [e["name"] for e in sent(plugin)["endpoints"]] == [UNIT % "router"] and "record" not in sent(plugin)
    # a converge that found no endpoint of this stage (null), a host with none planned
    own = {"units_converge": converged(fleet, "router-0", then_gated=None)}
    for host, tv in (("router-0", task_vars(fleet, "router-0", own=own)), ("gpu-000", task_vars(fleet, "gpu-000"))):
        out = action(HttpHealth, {"stage": "then"}).run(task_vars=tv)
        assert out["skipped"], host


def test_in_check_mode_the_second_stage_leaves_out_what_the_converge_would_restart(fleet):
    own = converged(fleet, "router-0", actions={"start": [], "restart": [UNIT % "router"]},
                    queued={UNIT % "router": {"invocation_id": "old", "main_pid": 7}})
    plugin = action(HttpHealth, {"stage": "then"}, check_mode=True)
    plugin.run(task_vars=task_vars(fleet, "router-0", own={"units_converge": own}))
    assert sent(plugin)["endpoints"] == []
    plugin = action(HttpHealth, {"stage": "then"})
    plugin.run(task_vars=task_vars(fleet, "router-0", own={"units_converge": own}))
    assert sent(plugin)["endpoints"][0]["previous"] == {"invocation_id": "old", "main_pid": 7}


# units_summary

def test_the_summary_prints_the_table_and_names_the_hosts_whose_gate_failed(fleet):
    others = dict((h, {"units_converge": dict(converged(fleet, h, healthy=(h != "gpu-005")),
                                              units=[{"name": i["unit"], "active_state": "active"}
                                                     for i in fleet["hosts"][h]["instances"]])})
                  for h in fleet["hosts"] if h != "gpu-000")
    others["router-0"]["units_health"] = {"endpoints": [{"name": UNIT % "router", "healthy": False, "detail": "blocked"}],
                                          "unhealthy": [UNIT % "router"], "msg": "router: not probed"}
    tv = task_vars(fleet, "gpu-001", others=others)
    plugin = action(UnitsSummary, {"notes": ["a note"]})
    out = plugin.run(task_vars=tv)
    lines = out["msg"].split("\n")
    assert lines[0].split() == ["host", "recipe", "engine", "role", "port", "state"] and lines[-1] == "a note"
    states = dict((line.split()[0], line.split(None, 5)[5]) for line in lines[2:] if line and line[0] != " "
                  and len(line.split()) > 5)
    assert states["gpu-000"] == "not in this run" and states["gpu-001"] == "healthy"
    assert states["gpu-005"].startswith("unhealthy: x") and states["router-0"] == "unhealthy: blocked"
    # (the language server, gated in no stage here, reads as its unit's state)
    assert states["gpu-002"] == "active"
    assert lines[-3] == "" and lines[-2] == "8 instances on 8 hosts: 2 unhealthy, 1 active, 1 not in this run, 4 healthy"
    assert out["failures"] == {"gpu-005": "gpu-005: engine exited", "router-0": "router: not probed"}
    assert out["_ansible_verbose_always"] is True and out["changed"] is False and not plugin._execute_module.called
    # each planned host's variables merged once
    assert sorted(tv["hostvars"].read) == sorted(fleet["hosts"])


def test_in_check_mode_the_summary_says_what_would_start_and_a_healthy_fleet_has_no_failures(fleet):
    others = dict((h, {"units_converge": converged(fleet, h)}) for h in fleet["hosts"])
    others["gpu-000"]["units_converge"]["actions"]["start"] = [i["unit"] for i in fleet["hosts"]["gpu-000"]["instances"]]
    others["gpu-000"]["units_converge"]["health"]["endpoints"] = []
    out = action(UnitsSummary, {}, check_mode=True).run(task_vars=task_vars(fleet, "gpu-001", others=others))
    assert "failures" not in out and "would start (check mode)" in out["msg"]
    # (the router and the language server report no unit here)
    assert out["msg"].endswith("2 not in this run, 1 would start (check mode), 5 healthy")


# what other steps read of the units role, from the same reading of the host's variables

def test_the_preflight_reads_and_the_setup_decisions_match_the_role_variables(fleet):
    helper = os.path.join(ROOT, "roles", "units", "files", "wait-ready.py")
    with open(helper) as f:
        sha1 = hashlib.sha1(f.read().encode("utf-8")).hexdigest()
    installed = {"exists": True, "type": "file", "owner": "root", "group": "root", "mode": "0644", "checksum": sha1}
    in_place = {"inspected": {unit_options.READY_HELPER: installed}, "users": {}}
    tv = task_vars(fleet, "gpu-000", own={"launchcard_hf_token": "hf_x"}, units_ready_helper_src=helper,
                   units_setup_found=in_place, ansible_play_hosts_all=list(fleet["hosts"]), units_allow_moved_peers=False)
    here = UnitsHost(None, tv)
    # the host's own variables (its token) and its gate as planned, not another host's
    assert here.reads() == units_gate.reads(fleet["hosts"]["gpu-000"], fleet, "gpu-000", {"launchcard_hf_token": "hf_x"},
                                            False, {"gpu-000": report.gate_table(fleet)["gpu-000"]})
    opts = unit_options.host_options({"launchcard_hf_token": "hf_x"})
    assert here.setup_needed() is unit_options.setup_needed(in_place, opts, sha1) is False
    assert here.foreign_peers() == {} and here.prepare_needed() is False
    # a --limit run that leaves out the router's peers: the prepare step checks them
    limited = UnitsHost(None, dict(tv, inventory_hostname="router-0", ansible_play_hosts_all=["router-0"]))
    assert limited.foreign_peers() == report.foreign_peers(fleet, ["router-0"]) != {} and limited.prepare_needed() is True
    assert UnitsHost(None, dict(tv, inventory_hostname="router-0", launchcard_foreign_peers={})).prepare_needed() is False
    # the helper changed (or nothing read): the setup runs; a host the plan gives nothing prepares nothing
    assert UnitsHost(None, dict(tv, units_ready_helper_src=__file__)).setup_needed() is True
    assert UnitsHost(None, dict(tv, units_setup_found=None)).prepare_needed() is True
    assert UnitsHost(None, dict(tv, inventory_hostname="lc-monitor", units_setup_found=None)).prepare_needed() is False


def test_the_settled_reading_is_the_converge_s_own_comparison_of_the_unit_files_and_the_record(fleet):
    """settle_or_lock's reading of a host (UnitsHost.settled): the unit files the converge would write from the plan
    and the host's variables, compared with what the preflight call read, and the record the gate would write."""
    host = "gpu-000"
    files = units.host_units(fleet["hosts"][host], unit_options.host_options({}))
    record = {"card": {"sha256": "c" * 64}, "instances": fleet["hosts"][host]["instances"], "runtime": {"kind": "native"}}
    on_host = state.build(dict((u["name"], u["content"]) for u in files), record["card"], record["instances"],
                          record["runtime"])
    reading = {"files": dict((u["name"], state.sha256_text(u["content"])) for u in files),
               "states": dict((u["name"], {"Id": u["name"], "ActiveState": "active", "SubState": "running",
                                           "UnitFileState": "enabled"}) for u in files),
               "dropins": [], "secrets_in_place": True, "endpoints": [], "then": [],
               "record_sha256": state.state_sha256(on_host)}
    tv = task_vars(fleet, host, units_found=reading, units_record=record, units_allowed_dropins=[])
    out = UnitsHost(None, tv).settled()
    assert out["settled"] is True and out["changed"] is False
    assert len(out["units"]) == len(files) and out["written"] == [] and out["health"]["recorded"] is False
    # a unit file that differs, a record of another card, nothing read, or a role told to stop the units: it acts
    other = dict(reading, files=dict(reading["files"], **{files[0]["name"]: "0" * 64}))
    assert UnitsHost(None, dict(tv, units_found=other)).settled() is None
    assert UnitsHost(None, dict(tv, units_record=dict(record, card={"sha256": "d" * 64}))).settled() is None
    assert UnitsHost(None, dict(tv, units_found=None)).settled() is None
    assert UnitsHost(None, dict(tv, units_state="stopped")).settled() is None
    # a host variable the unit options refuse: the step fails naming it
    bad = task_vars(fleet, host, own={"launchcard_runtime": "podmn"}, units_found=reading, units_record=record)
    with pytest.raises(ValueError, match="launchcard_runtime"):
        UnitsHost(None, bad).settled()


# systemd_units: prepare (the units role's tasks/prepare.yml)

def test_prepare_decides_the_setup_on_the_controller_and_checks_moved_peers_only_on_a_limited_run(fleet):
    helper = os.path.join(ROOT, "roles", "units", "files", "wait-ready.py")
    tv = task_vars(fleet, "router-0", units_ready_helper_src=helper, units_setup_found=None,
                   ansible_play_hosts_all=list(fleet["hosts"]), units_allow_moved_peers=False)
    plugin = action(SystemdUnits, {"prepare": True}, check_mode=True)
    out = plugin.run(task_vars=tv)
    # a full run: nothing to check, the host is not contacted; nothing found in place: the setup runs
    assert not plugin._execute_module.called and out["moved_peers"] == {} and not out.get("failed")
    settings = unit_options.host_settings({})
    assert out["setup"] == {"needed": True, "native": settings["options"]["runtime"] == "native",
                            "weights_dir": settings["options"]["weights_dir"],
                            "ready_helper_dir": os.path.dirname(settings["ready_helper"])}
    # a --limit run that leaves out the router's peers: its units are checked against them on the host
    limited = dict(tv, ansible_play_hosts_all=["router-0"])
    plugin = action(SystemdUnits, {"prepare": True}, check_mode=True)
    out = plugin.run(task_vars=limited)
    args = sent(plugin)
    assert args["foreign_peers"] == report.foreign_peers(fleet, ["router-0"]) == out["moved_peers"] != {}
    assert [u["name"] for u in args["units"]] == [u["name"] for u in units.host_units(fleet["hosts"]["router-0"], settings["options"])]
    assert args["verify"] is False and args["prune"] is False
    # allowed, or a host the plan gives nothing: no check; another option beside prepare is refused
    for tv2 in (dict(limited, units_allow_moved_peers=True), dict(limited, inventory_hostname="lc-monitor")):
        plugin = action(SystemdUnits, {"prepare": True}, check_mode=True)
        out = plugin.run(task_vars=tv2)
        assert not plugin._execute_module.called and out["moved_peers"] == {}
    assert out["setup"]["needed"] is False  # the monitoring host: nothing planned, nothing to set up
    out = action(SystemdUnits, {"prepare": True, "state": "started"}).run(task_vars=tv)
    assert out["failed"] and out["msg"] == "prepare takes no other option, found state"
