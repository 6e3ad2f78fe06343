# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A --limit run that would move an instance whose consumers run outside it (issue 46): each consumer kind (a router
to its prefill and decode, a language server to its encoder, a data parallel group's other node to its head), a
host's new address, and what a run of every host, a first deploy or a limit that holds the consumers leave alone.

The hosts' records are those of a deploy of the plan before the change (``_state.record_instances``), as the run's
preflight call returns them."""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
from ansible_collections.launchcard.inference.plugins.plugin_utils import _deploy_fleet as deploy_fleet
from ansible_collections.launchcard.inference.plugins.plugin_utils import _limit_peers as lp
from ansible_collections.launchcard.inference.plugins.plugin_utils import _upgrade_fleet as upgrade_fleet
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import EX, _h, _plan, _variant
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_pd_wiring import _vllm_dp

UNIT = "launchcard-glm-5.3-flash-%s.service"
PD = [_h("pre", "10.7.0.1", ["sglang-prefill"]), _h("dec", "10.7.0.2", ["sglang-decode"]),
      _h("rtr", "10.7.0.3", ["sglang-router"])]
EPD = [_h("enc", "10.7.1.1", ["sglang-encoder"]), _h("lang", "10.7.1.2", ["sglang-language"])]


def _override(hosts, name, recipe, flags):
    """``hosts`` with ``launchcard_argv_overrides`` setting ``flags`` on ``recipe`` of host ``name``."""
    return [(h, dict(v, argv_overrides={recipe: {"set": flags}})) if h == name else (h, v) for h, v in hosts]


def _readdress(hosts, name, address):
    return [(h, dict(v, address=address)) if h == name else (h, v) for h, v in hosts]


def _check(card, before, after, limit):
    """What a --limit run of ``limit`` finds when the fleet runs the plan of ``before`` and the new plan is ``after``'s."""
    old, new = _plan(card, before), _plan(card, after)
    for hp in new["hosts"].values():
        hp["card"] = "c"  # what plan_fleet gives each host
    recorded = dict((h, state.record_instances({"instances": old["hosts"][h]["instances"]})) for h in limit)
    return lp.stranded_consumers(new, {"c": card}, recorded, limit)


def test_a_prefill_whose_bootstrap_port_moves_is_refused_while_its_router_runs_outside():
    after = _override(PD, "pre", "sglang-prefill", {"--disaggregation-bootstrap-port": "8999"})
    (entry,) = _check(EX, PD, after, ["pre"])
    # the decode outside the run is no consumer of it: the router hands it the bootstrap port with each request
    assert entry == {"host": "pre", "unit": UNIT % "sglang-prefill-0", "what": "bootstrap port",
                     "was": "10.7.0.1:8998", "now": "10.7.0.1:8999",
                     "consumers": [{"host": "rtr", "unit": UNIT % "sglang-router-0"}]}
    lines = lp.report([entry])
    assert lines[0].startswith("refusing this --limit run before any host changes: it would move 1 instance ")
    assert lines[1] == ("  %s on pre: its bootstrap port moves from 10.7.0.1:8998 to 10.7.0.1:8999; %s on rtr still "
                        "points at 10.7.0.1:8998" % (UNIT % "sglang-prefill-0", UNIT % "sglang-router-0"))
    assert lines[-1] == "Add rtr to --limit (their units then follow), or set launchcard_allow_moved_peers=true to run it anyway."
    # the router in the run follows; a run of every host; a fleet deployed from the new plan already
    assert _check(EX, PD, after, ["pre", "rtr"]) == []
    assert _check(EX, PD, after, ["pre", "dec", "rtr"]) == []
    assert _check(EX, after, after, ["pre"]) == []


def test_a_decode_whose_port_moves_is_refused_while_its_router_runs_outside():
    after = _override(PD, "dec", "sglang-decode", {"--port": "32100"})
    (entry,) = _check(EX, PD, after, ["dec", "pre"])
    assert (entry["unit"], entry["what"], entry["was"], entry["now"]) == (
        UNIT % "sglang-decode-0", "port", "10.7.0.2:32000", "10.7.0.2:32100")
    assert entry["consumers"] == [{"host": "rtr", "unit": UNIT % "sglang-router-0"}]


def test_an_encoder_whose_port_moves_is_refused_while_its_language_server_runs_outside():
    after = _override(EPD, "enc", "sglang-encoder", {"--port": "30101"})
    (entry,) = _check(EX, EPD, after, ["enc"])
    assert (entry["unit"], entry["what"], entry["was"], entry["now"]) == (
        UNIT % "sglang-encoder-0", "port", "10.7.1.1:30001", "10.7.1.1:30101")
    assert entry["consumers"] == [{"host": "lang", "unit": UNIT % "sglang-language-0"}]
    assert _check(EX, EPD, after, ["enc", "lang"]) == []


def test_a_data_parallel_head_whose_rpc_port_moves_is_refused_while_its_other_node_runs_outside():
    card = _variant(_vllm_dp)
    hosts = [_h("d1", "10.7.2.1", ["vllm-aggregated"], 8), _h("d2", "10.7.2.2", ["vllm-aggregated"], 8)]
    # one group's ranks run one command line: the override is the group's
    after = _override(_override(hosts, "d1", "vllm-aggregated", {"--data-parallel-rpc-port": "13346"}),
                      "d2", "vllm-aggregated", {"--data-parallel-rpc-port": "13346"})
    (entry,) = _check(card, hosts, after, ["d1"])
    assert (entry["what"], entry["was"], entry["now"]) == ("init port", "10.7.2.1:13345", "10.7.2.1:13346")
    assert [c["host"] for c in entry["consumers"]] == ["d2"] and "-rank1" in entry["consumers"][0]["unit"]
    # the other node moves nothing its head names: a run of it alone is not this check's
    assert _check(card, hosts, after, ["d2"]) == []


def test_a_host_whose_address_changes_is_refused_for_every_endpoint_its_consumers_name():
    after = _readdress(PD, "pre", "10.7.0.9")
    entries = _check(EX, PD, after, ["pre"])
    assert [(e["what"], e["was"], e["now"]) for e in entries] == [
        ("bootstrap port", "10.7.0.1:8998", "10.7.0.9:8998"), ("port", "10.7.0.1:31000", "10.7.0.9:31000")]
    assert lp.report(entries)[-1].startswith("Add rtr to --limit")


def test_nothing_recorded_moves_nothing():
    after = _override(PD, "pre", "sglang-prefill", {"--disaggregation-bootstrap-port": "8999"})
    new = _plan(EX, after)
    for hp in new["hosts"].values():
        hp["card"] = "c"
    # a first deploy (no record), or a record made up from unit files (it names no instance)
    assert lp.stranded_consumers(new, {"c": EX}, {}, ["pre"]) == []
    assert lp.stranded_consumers(new, {"c": EX}, {"pre": state.record_instances(state.from_unit_files({}))}, ["pre"]) == []


def test_allowed_says_which_consumers_now_point_at_nothing():
    after = _override(PD, "pre", "sglang-prefill", {"--disaggregation-bootstrap-port": "8999"})
    units = (UNIT % "sglang-router-0", UNIT % "sglang-prefill-0")
    assert lp.report(_check(EX, PD, after, ["pre"]), allowed=True) == [
        "WARNING: %s on rtr (not in this run) points at 10.7.0.1:8998, where nothing serves now: %s on pre moved its "
        "bootstrap port to 10.7.0.1:8999 (launchcard_allow_moved_peers)" % units]
    assert lp.report([]) == lp.report([], allowed=True) == []


def test_the_fleet_steps_read_each_run_hosts_record_where_its_call_returned_it():
    after = _override(PD, "pre", "sglang-prefill", {"--disaggregation-bootstrap-port": "8999"})
    old, new = _plan(EX, PD), _plan(EX, after)
    for hp in new["hosts"].values():
        hp["card"] = "c"
    # deploy_fleet's read of preflight's units_found.record_instances, a run host's record
    recorded = {"pre": state.record_instances({"instances": old["hosts"]["pre"]["instances"]})}
    lines = deploy_fleet.stranded(new, {"c": EX}, recorded, ["pre"], False)
    assert len(lines) == 3 and "bootstrap port moves from 10.7.0.1:8998 to 10.7.0.1:8999" in lines[1]
    assert deploy_fleet.stranded(new, {"c": EX}, recorded, ["pre"], True)[0].startswith("WARNING: ")
    # upgrade.yml's read of the record (host_state): the whole record, its instances as the deploy wrote them
    upgraded = {"pre": {"upgrade_current": {"record": {"instances": old["hosts"]["pre"]["instances"]}}}, "rtr": {}}
    assert upgrade_fleet.stranded(new, {"c": EX}, upgraded, ["pre"], False) == lines
    # a full run reads no host; a host whose call returned nothing recorded nothing
    assert deploy_fleet.stranded(new, {"c": EX}, {}, list(new["hosts"]), False) == []
    assert upgrade_fleet.stranded(new, {"c": EX}, {}, list(new["hosts"]), False) == []
    assert deploy_fleet.stranded(new, {"c": EX}, {"pre": []}, ["pre"], False) == []
    assert upgrade_fleet.stranded(new, {"c": EX}, {"pre": {}}, ["pre"], False) == []


def test_the_record_gives_each_instance_its_unit_url_and_argv():
    rec = {"instances": [{"unit": "u.service", "url": "http://10.0.0.1:8000", "argv": ["vllm", "serve", 8]},
                         {"unit": "h.service", "url": None}, "junk", {"url": "http://x:1"}]}
    assert state.record_instances(rec) == [{"unit": "u.service", "url": "http://10.0.0.1:8000",
                                            "argv": ["vllm", "serve", "8"]},
                                           {"unit": "h.service", "url": None, "argv": []}]
    assert state.record_instances(None) == []
