# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet-wide lookups made once per run (issue 28, item 1): the health gate's peers found in one pass over the plan,
and the second gate stage of every host from one task, with the results the per-host filters give."""

from __future__ import annotations

import os

from ansible_collections.launchcard.inference.plugins.filter import plan as filters
from ansible_collections.launchcard.inference.plugins.module_utils import _preflight as preflight
from ansible_collections.launchcard.inference.plugins.plugin_utils import _preflight_steps as preflight_steps
from ansible_collections.launchcard.inference.plugins.plugin_utils import _report as report
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units_gate as units_gate
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
EXAMPLE = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
RECIPES = ("vllm-aggregated", "sglang-encoder", "sglang-language", "sglang-aggregated", "sglang-prefill",
           "sglang-decode")
UNIT = "launchcard-glm-5.3-flash-sglang-%s-0.service"


def _fleet(n):
    """The example card on n hosts: its serving recipes round-robin and one router (bench/render_and_plan.py)."""
    with open(EXAMPLE) as f:
        card = load_card(f.read(), EXAMPLE)
    hosts = [("gpu-%03d" % i, {"address": "10.1.%d.%d" % (i // 256, i % 256), "recipes": [RECIPES[i % 6]]})
             for i in range(n - 1)]
    hosts.append(("router-0", {"address": "10.2.0.1", "recipes": ["sglang-router"]}))
    return plan(card, normalize_placement(hosts))


def _names_peer(words, inst, peer):
    """The per-host test the one-pass index replaces: whether ``inst``'s argv names ``peer``'s endpoint."""
    if peer is inst or not peer.get("port") or not peer.get("health_url"):
        return False
    addrs = [str(peer.get("address"))] + (["127.0.0.1", "localhost", "[::1]"] if peer.get("host") == inst.get("host")
                                          else [])
    wanted = set("//%s:%s" % (a if ":" not in a or a.startswith("[") else "[%s]" % a, peer["port"]) for a in addrs)
    return any(("//%s" % w.split("//", 1)[1].split("/", 1)[0]) in wanted for w in words if "//" in w)


def _scan(p, host):
    everyone = [i for hp in p["hosts"].values() for i in hp.get("instances", [])]
    return [(i["unit"], [(x["host"], x["unit"]) for x in everyone if _names_peer([str(w) for w in i.get("argv") or []], i, x)])
            for i in p["hosts"][host].get("instances", []) if i.get("health_url")]


def test_gate_table_finds_each_hosts_peers_as_a_scan_of_the_whole_plan_does():
    p = _fleet(48)
    table = report.gate_table(p)
    assert sorted(table) == sorted(p["hosts"])
    for host in p["hosts"]:
        assert [(e["name"], [(x["host"], x["unit"]) for x in e["peers"]]) for e in table[host]] == _scan(p, host)
    # the router lists every prefill and decode, each language server every encoder
    (router,) = table["router-0"]
    assert len(router["peers"]) == 15 and {x["unit"].split("-")[-2] for x in router["peers"]} == {"prefill", "decode"}
    language = [e for h in p["hosts"] for e in table[h] if "-sglang-language-" in e["name"]]
    assert len(language) == 8 and all(len(e["peers"]) == 8 for e in language)


def test_gate_table_matches_loopback_urls_only_for_a_peer_on_the_same_host():
    inst = {"host": "a", "unit": "r.service", "address": "10.0.0.1", "port": 30000, "health_url": "http://x/health",
            "probe": "health", "argv": ["--worker", "http://127.0.0.1:8000", "--other", "http://[fd00::2]:8001/v1"]}
    same = {"host": "a", "unit": "w.service", "address": "10.0.0.1", "port": 8000, "health_url": "h", "probe": "health"}
    other = {"host": "b", "unit": "w.service", "address": "10.0.0.2", "port": 8000, "health_url": "h", "probe": "health"}
    six = {"host": "c", "unit": "v6.service", "address": "fd00::2", "port": 8001, "health_url": "h", "probe": "health"}
    p = {"hosts": {"a": {"instances": [inst, same]}, "b": {"instances": [other]}, "c": {"instances": [six]}}}
    table = report.gate_table(p)
    assert [(x["host"], x["unit"]) for x in table["a"][0]["peers"]] == [("a", "w.service"), ("c", "v6.service")]
    assert table["a"][0]["peers"] == [{"host": h, "unit": u} for h, u in _scan(p, "a")[0][1]]
    only_b = {"b": [dict(name="w.service", url="h", probe="health", model=None, unit="w.service", peers=[])]}
    assert report.gate_table(p, ["b"]) == only_b


class CountingHostvars(dict):
    """``hostvars`` that counts reads of a host's variables (each costs Ansible a full variable merge)."""

    reads = 0

    def __getitem__(self, host):
        CountingHostvars.reads += 1
        return dict.__getitem__(self, host)


def _results(p, unhealthy=(), restarted=(), check_mode=False):
    out = CountingHostvars()
    for host, hp in p["hosts"].items():
        first = [{"name": i["unit"], "healthy": i["unit"] not in unhealthy or host != unhealthy[0], "detail": "x"}
                 for i in hp["instances"] if i.get("health_url")]
        queued = dict((u, {"invocation_id": "old", "main_pid": 7}) for u in restarted if host == "router-0")
        bad = [e["name"] for e in first if not e["healthy"]]
        out[host] = {"units_converge": {"actions": {"start": [], "restart": list(queued)}, "queued": queued,
                                        "health": {"endpoints": first, "unhealthy": bad, "then_gated": True}}}
    return out


def test_the_second_stage_of_every_host_is_one_pass_with_the_per_host_filters_results():
    p = _fleet(48)
    gates = report.gate_table(p)
    for case in ({}, {"unhealthy": ("gpu-005", UNIT % "decode")}, {"restarted": (UNIT % "router",)},
                 {"restarted": (UNIT % "router",), "check_mode": True}):
        hostvars = _results(p, **case)
        check = case.get("check_mode", False)
        CountingHostvars.reads = 0
        second = units_gate.second_stage(gates, hostvars, list(p["hosts"]), check)
        then_hosts = [h for h in p["hosts"] if any(e["peers"] for e in gates[h])]
        # each host's variables read once for the whole fleet, and only those of the hosts with a second stage and
        # their peers (per host, each host would read every host's)
        touched = set(then_hosts) | set(peer["host"] for h in then_hosts for e in gates[h] for peer in e["peers"])
        assert CountingHostvars.reads == len(touched) < len(p["hosts"])
        assert sorted(second) == sorted(then_hosts) and len(then_hosts) == 9  # 8 language servers, the router
        for host in then_hosts:
            conv = hostvars[host]["units_converge"]
            endpoints = [e for e in filters.health_endpoints(p["hosts"][host], conv, stage="then", plan=p, host=host,
                                                             hostvars=hostvars, check_mode=check)
                         if e["name"] not in report.pending_units(conv, check)]
            converges = dict((h, hostvars[h]["units_converge"]) for h in p["hosts"]
                             if h in hostvars and hostvars[h].get("units_converge")
                             and not hostvars[h]["units_converge"].get("skipped"))
            assert second[host] == {"endpoints": endpoints, "peers_settled": report.peers_settled(p, host, converges)}
    # a restarted router carries what it ran before; in check mode it would restart, so it is not gated
    assert units_gate.second_stage(gates, _results(p, restarted=(UNIT % "router",)), ["router-0"])[
        "router-0"]["endpoints"][0]["previous"] == {"invocation_id": "old", "main_pid": 7}
    assert units_gate.second_stage(gates, _results(p, restarted=(UNIT % "router",)), ["router-0"], True)[
        "router-0"]["endpoints"] == []


def test_a_crashed_decode_blocks_the_router_and_unsettles_its_peers():
    p = _fleet(48)
    second = units_gate.second_stage(report.gate_table(p), _results(p, unhealthy=("gpu-005", UNIT % "decode")),
                                     list(p["hosts"]))
    (router,) = second["router-0"]["endpoints"]
    assert router["blocked"].startswith("not probed: its peer is not healthy: %s on gpu-005" % (UNIT % "decode"))
    assert all("blocked" not in e for h, s in second.items() if h != "router-0" for e in s["endpoints"])
    assert not second["router-0"]["peers_settled"]
    assert all(s["peers_settled"] for h, s in second.items() if h != "router-0")


def test_the_per_host_filters_read_the_table_when_given():
    p = _fleet(24)
    gates = report.gate_table(p)
    for host, hp in p["hosts"].items():
        assert units_gate.gate_first(hp, p, host, 600, 2, gates=gates) == units_gate.gate_first(hp, p, host, 600, 2)
        # the table alone answers: the plan is not read again
        alone = units_gate.gate_first(hp, None, host, 600, 2, gates=gates)
        assert alone == units_gate.gate_first(hp, p, host, 600, 2)


def _scan_peers(card, hp, p):
    """The per-host search the one index replaces: each of this host's instances against every planned instance."""
    recipes = {r["name"]: r for r in card["recipes"]}
    everyone = [i for h, x in sorted(p["hosts"].items()) for i in x.get("instances", [])]
    out = []

    def add(inst, peer, key, what):
        if peer.get(key):
            for seen in out:
                if (seen["address"], seen["port"]) == (peer["address"], int(peer[key])):
                    why = "%s -> %s %s" % (inst["recipe"], peer["recipe"], what)
                    seen["why"] += "" if why in seen["why"].split("; ") else "; " + why
                    return
            out.append({"address": peer["address"], "port": int(peer[key]),
                        "why": "%s -> %s %s" % (inst["recipe"], peer["recipe"], what)})

    wants = {"router": ("prefill", "decode", "aggregated"), "decode": ("prefill",), "language": ("encoder",)}
    for inst in hp.get("instances", []):
        r = dict(recipes[inst["recipe"]], **(inst.get("recipe_facts") or {}))
        for role in wants.get(inst["role"], ()):
            if inst["role"] == "router" and not (r.get("pd_disaggregation") if role != "aggregated" else
                                                 r.get("worker_urls") and not r.get("pd_disaggregation")):
                continue
            if inst["role"] == "language" and not r.get("encoder_urls"):
                continue
            for peer in everyone:
                if peer["role"] == role and peer.get("node_rank", 0) == 0 and peer["host"] != inst["host"] \
                        and peer.get("address"):
                    if role == "prefill" and inst["role"] == "router":
                        add(inst, peer, "port", "port")
                    add(inst, peer, "bootstrap_port" if role == "prefill" else "port",
                        "bootstrap port" if role == "prefill" else "port")
        for peer in everyone if inst.get("node_rank") else ():
            if (peer["recipe"], peer.get("replica"), peer.get("node_rank")) == (inst["recipe"], inst.get("replica"), 0) \
                    and peer["host"] != inst["host"] and peer.get("address"):
                add(inst, peer, "dist_init_port", "init port")
    return out


def test_the_peer_table_gives_each_host_the_peers_a_search_of_the_whole_plan_finds():
    p = _fleet(48)
    with open(EXAMPLE) as f:
        card = load_card(f.read(), EXAMPLE)
    for hp in p["hosts"].values():
        hp["card"] = "glm"  # what plan_fleet gives each host
    table = preflight.peer_table({"glm": card}, p)
    assert sorted(table) == sorted(p["hosts"])
    for host, hp in p["hosts"].items():
        assert table[host] == _scan_peers(card, hp, p), host
        # the table's entry is what the filter puts in the needs; the plan is then not read
        assert preflight_steps.host_needs(card, hp, None, peers=table[host]) == preflight_steps.host_needs(card, hp, p)
    # the router reaches every prefill's two ports and every decode's; a decode every prefill's bootstrap port
    assert len(table["router-0"]) == 8 * 2 + 7 and len(table["gpu-005"]) == 8
    assert table["gpu-000"] == []


def test_the_peer_table_finds_a_multi_node_rank_its_first_ranks_init_port():
    from ansible_collections.launchcard.inference.tests.unit.plugins.module_utils import test_preflight_multinode as mn
    p = mn._two_groups_sharing_a_head()
    for hp in p["hosts"].values():
        hp["card"] = "r1"
    table = preflight.peer_table({"r1": mn.SGL}, p)
    assert table == dict((h, _scan_peers(mn.SGL, hp, p)) for h, hp in p["hosts"].items())
    assert [x["port"] for x in table["b"]] == [5000] and [x["port"] for x in table["c"]] == [5007]
    assert table["a"] == []


def test_the_peers_outside_a_limited_play_are_found_once():
    p = _fleet(24)
    assert report.foreign_peers(p, list(p["hosts"])) == {}  # a full run: nothing to check
    out = report.foreign_peers(p, [h for h in p["hosts"] if h not in ("gpu-004", "router-0")])
    assert out == {"10.1.0.4": "gpu-004", "10.2.0.1": "router-0"}
    # what roles/units/vars/main.yml computed per host before (dict2items | rejectattr | items2dict)
    limited = ["gpu-%03d" % i for i in range(10)]
    assert report.foreign_peers(p, limited) == dict(
        (i["address"], i["host"]) for h, hp in p["hosts"].items() if h not in limited for i in hp["instances"])


def test_the_failure_budget_block_reads_two_lengths():
    # playbooks/deploy.yml's block: the count of lost hosts, the same answer as the set of their names
    hosts = ["h%d" % i for i in range(40)]
    for pct in (0, 5, 10):
        for lost in range(6):
            assert report.failure_budget_spent(lost, hosts, pct) == report.failure_budget_spent(hosts[:lost], hosts, pct)
