# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Summary tables."""

from __future__ import annotations

import os

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.plugin_utils._report import deploy_rows, pending_units, table

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
EXAMPLE = os.path.join(ROOT, "cards", "glm-5.3-flash.json")


def test_table_aligns_columns():
    lines = table(["host", "port", "state"], [["lc-router", 30000, "healthy"], ["b", None, "x"]])
    assert lines == [
        "host       port   state",
        "---------  -----  -------",
        "lc-router  30000  healthy",
        "b                 x",
    ]


def test_table_without_rows():
    assert table(["a", "bb"], []) == ["a  bb", "-  --"]


def test_deploy_rows():
    with open(EXAMPLE) as f:
        card = load_card(f.read(), EXAMPLE)
    p = plan(card, normalize_placement([
        ("b-pd", {"address": "10.0.0.2", "recipes": ["sglang-prefill", "sglang-decode", "sglang-router"]}),
        ("a-v", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"]}),
    ]))
    unit = "launchcard-glm-5.3-flash-sglang-%s-0.service"
    results = {
        "b-pd": {
            "units": [{"name": unit % "prefill", "active_state": "active"},
                      {"name": unit % "decode", "active_state": "failed"},
                      {"name": unit % "router", "active_state": "active"}],
            "health": [{"name": unit % "prefill", "healthy": True, "detail": "health 200"},
                       {"name": unit % "router", "healthy": False, "detail": "health answered 503"}],
        },
    }
    rows = deploy_rows(p, results)
    assert rows == [
        ["a-v", "vllm-aggregated", "vllm", "aggregated", 8000, "not in this run"],
        ["b-pd", "sglang-prefill", "sglang", "prefill", 31000, "healthy"],
        ["b-pd", "sglang-decode", "sglang", "decode", 32000, "failed"],
        ["b-pd", "sglang-router", "sglang", "router", 30000, "unhealthy: health answered 503"],
    ]
    results["b-pd"]["units"] = None
    results["b-pd"]["health"] = None
    assert [r[5] for r in deploy_rows(p, results)] == ["not in this run"] * 4


def test_deploy_rows_headless_rank_has_no_port():
    plan_ = {"hosts": {"n1": {"instances": [{"unit": "u", "recipe": "r", "engine": "vllm", "role": "aggregated",
                                             "port": None}]}}}
    assert deploy_rows(plan_, {"n1": {"units": [{"name": "u"}]}}) == [
        ["n1", "r", "vllm", "aggregated", "-", "unknown"]]


def test_deploy_rows_check_mode_pending_units():
    with open(EXAMPLE) as f:
        card = load_card(f.read(), EXAMPLE)
    p = plan(card, normalize_placement([("h", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"]})]))
    unit = p["hosts"]["h"]["instances"][0]["unit"]
    results = {"h": {"units": [{"name": unit, "active_state": "active"}], "health": [], "pending": {unit: "restart"}}}
    assert [r[5] for r in deploy_rows(p, results)] == ["would restart (check mode)"]
    results["h"]["pending"] = {}
    assert [r[5] for r in deploy_rows(p, results)] == ["active"]


def test_pending_units_only_in_check_mode():
    conv = {"actions": {"start": ["a.service"], "restart": ["b.service"], "enable": ["a.service"], "stop": []}}
    assert pending_units(conv, True) == {"a.service": "start", "b.service": "restart"}
    assert pending_units(conv, False) == {}
    assert pending_units({}, True) == {} and pending_units(None, True) == {}


def test_deploy_table_groups_by_state_worst_first_with_counts():
    from ansible_collections.launchcard.inference.plugins.plugin_utils._report import deploy_table
    states = ["healthy"] * 250 + ["unhealthy: health answered 503", "failed", "not run", "activating",
                                  "unhealthy: timed out", "would restart (check mode)"]
    rows = [["h%03d" % i, "vllm-monolithic", "vllm", "monolithic", 8000, s] for i, s in enumerate(states)]
    lines = deploy_table(list(reversed(rows)))
    assert lines[0].split() == ["host", "recipe", "engine", "role", "port", "state"]
    body = lines[2:-2]
    got = [line.split(None, 5)[5] for line in body]
    assert got[:2] == ["unhealthy: health answered 503", "unhealthy: timed out"]  # by host within the group
    assert got[2:6] == ["failed", "activating", "not run", "would restart (check mode)"]
    assert set(got[6:]) == {"healthy"} and len(body) == 256
    assert [line.split()[0] for line in body[6:]] == sorted(line.split()[0] for line in body[6:])
    assert lines[-2] == ""
    assert lines[-1] == ("256 instances on 256 hosts: 2 unhealthy, 1 failed, 1 activating, 1 not run, "
                         "1 would restart (check mode), 250 healthy")


def test_deploy_table_of_one_and_of_nothing():
    from ansible_collections.launchcard.inference.plugins.plugin_utils._report import deploy_table
    assert deploy_table([["h", "r", "vllm", "monolithic", 8000, "healthy"]])[-1] == "1 instance on 1 host: 1 healthy"
    assert deploy_table([])[-1] == "0 instances on 0 hosts: nothing planned"


PD = [("pre", {"address": "10.0.0.5", "recipes": ["sglang-prefill"]}),
      ("dec", {"address": "10.0.0.6", "recipes": ["sglang-decode"]}),
      ("rtr", {"address": "10.0.0.7", "recipes": ["sglang-router"]})]
ENC_LANG = [("enc", {"address": "10.0.0.2", "recipes": ["sglang-encoder"]}),
            ("lang", {"address": "10.0.0.3", "recipes": ["sglang-language"]})]


def _example_plan(extra=()):
    """The example card planned onto the prefill/decode/router hosts, plus ``extra``."""
    with open(EXAMPLE) as f:
        card = load_card(f.read(), EXAMPLE)
    return plan(card, normalize_placement(PD + list(extra)))


def test_gate_stages_put_routers_after_their_peers_and_block_them_on_a_crashed_peer():
    import pytest
    from ansible_collections.launchcard.inference.plugins.plugin_utils._report import gate_endpoints
    p = _example_plan(ENC_LANG)
    unit = "launchcard-glm-5.3-flash-sglang-%s-0.service"
    first = {h: [e["name"] for e in gate_endpoints(p, h, "first")] for h in p["hosts"]}
    then = {h: [e["name"] for e in gate_endpoints(p, h, "then")] for h in p["hosts"]}
    assert first == {"pre": [unit % "prefill"], "dec": [unit % "decode"], "rtr": [], "enc": [unit % "encoder"],
                     "lang": []}
    assert then == {"pre": [], "dec": [], "rtr": [unit % "router"], "enc": [], "lang": [unit % "language"]}
    # the two stages split the one-stage list, none left out
    for h in p["hosts"]:
        assert sorted(first[h] + then[h]) == sorted(e["name"] for e in gate_endpoints(p, h, None))
    crash = "engine exited, systemd restarts it (Result=exit-code, exit status 1, NRestarts=1)"
    prior = {"dec": {"endpoints": [{"name": unit % "decode", "healthy": False, "detail": crash}]},
             "pre": {"endpoints": [{"name": unit % "prefill", "healthy": True, "detail": "health 200"}]},
             "enc": {"endpoints": [{"name": unit % "encoder", "healthy": True, "detail": "health 200"}]}}
    (router,) = gate_endpoints(p, "rtr", "then", prior)
    assert router["blocked"] == "not probed: its peer is not healthy: %s on dec (%s)" % (unit % "decode", crash)
    (lang,) = gate_endpoints(p, "lang", "then", prior)
    assert "blocked" not in lang and lang["probe"] == "completion"
    # a peer host without a first-stage result (outside --limit) blocks nothing
    assert "blocked" not in gate_endpoints(p, "rtr", "then", {"pre": prior["pre"]})[0]
    with pytest.raises(ValueError, match="stage"):
        gate_endpoints(p, "rtr", "second")


def test_check_mode_does_not_gate_an_endpoint_whose_peer_would_restart():
    # a check-mode run does not restart the decode engine it would restart, so what the router answers now
    # (through the old, perhaps broken, decode) says nothing of what the run would leave: not gated
    from ansible_collections.launchcard.inference.plugins.plugin_utils._report import gate_endpoints
    p = _example_plan(ENC_LANG)
    unit = "launchcard-glm-5.3-flash-sglang-%s-0.service"
    assert gate_endpoints(p, "rtr", "then", {}, {"dec": {unit % "decode": "restart"}}) == []
    # a pending unit elsewhere (the encoder) leaves the router gated, and the language server not
    assert [e["name"] for e in gate_endpoints(p, "rtr", "then", {}, {"enc": {unit % "encoder": "start"}})] == [
        unit % "router"]
    assert gate_endpoints(p, "lang", "then", {}, {"enc": {unit % "encoder": "start"}}) == []


def test_a_router_needs_no_second_stage_only_while_its_own_peers_stay_as_they_were():
    from ansible_collections.launchcard.inference.plugins.plugin_utils._report import peers_settled
    p = _example_plan(ENC_LANG)
    quiet = {"actions": {"start": [], "restart": []}, "queued": {}, "health": {"unhealthy": []}}
    restarted = dict(quiet, actions={"start": [], "restart": ["x.service"]}, queued={"x.service": {}})
    unhealthy = dict(quiet, health={"unhealthy": ["x.service"]})
    assert peers_settled(p, "rtr", {h: quiet for h in p["hosts"]}) is True
    assert peers_settled(p, "rtr", {}) is True  # no peer converged in this run (outside --limit)
    assert peers_settled(p, "rtr", {"dec": restarted}) is False
    assert peers_settled(p, "rtr", {"pre": unhealthy}) is False
    # the encoder is the language server's peer, not the router's
    assert peers_settled(p, "rtr", {"enc": restarted}) is True
    assert peers_settled(p, "lang", {"enc": restarted}) is False
    assert peers_settled(p, "lang", {"rtr": unhealthy, "dec": restarted}) is True


def test_role_variables_are_checked_once_per_distinct_set_of_host_values():
    from ansible_collections.launchcard.inference.plugins.plugin_utils._role_vars import by_host
    spec = {"preflight_headroom_mib": {"type": "int"}, "units_state": {"type": "str"}}
    hostvars = {"a": {"preflight_headroom_mib": 4096, "ansible_host": "10.0.0.1"},
                "b": {"preflight_headroom_mib": "lots"},
                "c": {"preflight_headroom_mib": 4096},
                "d": {}, "e": {}, "f": {}, "g": {}}
    groups = by_host(hostvars, list(hostvars), list(spec))
    # only the spec's names, one item per distinct set, in the order of each set's first host
    assert [(g["hosts"], g["vars"]) for g in groups] == [
        (["a", "c"], {"preflight_headroom_mib": 4096}), (["b"], {"preflight_headroom_mib": "lots"}),
        (["d", "e", "f", "g"], {})]
    assert [g["label"] for g in groups] == ["a, c", "b", "d, e, f and 1 more"]
    assert by_host(hostvars, ["b"], list(spec))[0]["hosts"] == ["b"]  # the play's hosts only


def test_failure_budget_counts_failed_and_unreachable_hosts_once():
    from ansible_collections.launchcard.inference.plugins.plugin_utils._report import failure_budget_spent
    hosts = ["a", "b", "c", "d"]
    assert failure_budget_spent([], hosts) is False
    assert failure_budget_spent(["a"], hosts) is True  # budget 0: one lost host is over it
    assert failure_budget_spent(["a", "a"], hosts, 25) is False  # 1 of 4 = 25 %: not over
    assert failure_budget_spent(["a", "b"], hosts, "25") is True
    # a count: what every host's task passes (the play's lengths, no set of names)
    assert [failure_budget_spent(n, hosts, 25) for n in (0, 1, 2)] == [False, False, True]
    assert failure_budget_spent(1, hosts) is True
    for bad in (101, -1, "many", True):
        try:
            failure_budget_spent([], hosts, bad)
        except ValueError as exc:
            assert "launchcard_max_fail_percentage" in str(exc)
        else:
            raise AssertionError("accepted %r" % (bad,))


def test_the_failure_budget_is_a_checked_percentage():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.launchcard.inference.plugins.filter.plan import failure_budget
    assert failure_budget(None) == 0
    assert failure_budget("25") == 25
    assert failure_budget(100) == 100
    for bad in (101, -1, "many", True, 2.5j):
        try:
            failure_budget(bad)
        except AnsibleFilterError as exc:
            assert "launchcard_max_fail_percentage" in str(exc)
        else:
            raise AssertionError("accepted %r" % (bad,))


def test_the_first_stage_carries_the_record_and_the_second_stage_endpoints_to_probe_once():
    from ansible_collections.launchcard.inference.plugins.plugin_utils._units_gate import gate_first as units_gate_first
    p = _example_plan()
    record = {"card": {"sha256": "0" * 64}}
    pre = units_gate_first(p["hosts"]["pre"], p, "pre", "600", "2", record)
    assert [e["name"] for e in pre["endpoints"]] == ["launchcard-glm-5.3-flash-sglang-prefill-0.service"]
    assert (pre["timeout"], pre["interval"], pre["record"]) == (600, 2.0, record)
    assert pre["then"] == []
    rtr = units_gate_first(p["hosts"]["rtr"], p, "rtr", 600, 2.0, record)
    # the router's endpoint answers through its peers: the call probes it once, and records only when it may
    assert rtr["endpoints"] == [] and rtr["record"] == record
    assert [e["name"] for e in rtr["then"]] == ["launchcard-glm-5.3-flash-sglang-router-0.service"]
    assert "record" not in units_gate_first(p["hosts"]["pre"], p, "pre", 600, 2.0)
    assert units_gate_first(None, p, "other", 600, 2.0, record) is None
