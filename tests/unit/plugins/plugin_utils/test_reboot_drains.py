# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stack reboots drain first (issue 26, item 3): which routers a rebooting host's engines leave, by which URL and
API, and the routers that cannot take them out, with the reason."""

from __future__ import annotations

import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan_fleet
from ansible_collections.launchcard.inference.plugins.plugin_utils._rollout import reboot_drains, router_drains, routers_of
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import _card
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_rollout import _replicas

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
EXAMPLE = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
REPLICAS_CARD = os.path.join(ROOT, "tests", "e2e", "cards", "upgrade-v1.json")
ROUTER = "launchcard-upgrade-tiny-sglang-router-0.service"


def _plan(card, placement):
    hosts = [(h, {"address": "10.0.0.%d" % (i + 1), "recipes": recipes}) for i, (h, recipes) in enumerate(placement)]
    return plan_fleet({"card": card}, {"card": normalize_placement(hosts)})


def _serving(plan, host):
    return [i["unit"] for i in plan["hosts"][host]["instances"]]


def _replica_plan(mutate=None, placement=None):
    placement = placement or [("w%d" % i, ["sglang-aggregated"]) for i in range(2)] + [("rt", ["sglang-router"])]
    return _plan(_card(REPLICAS_CARD, mutate), placement)


def test_a_replica_leaves_its_regular_router_by_its_url_and_is_drained_and_gated_back():
    plan = _replica_plan()
    unit = plan["hosts"]["w1"]["instances"][0]["unit"]
    out = reboot_drains(plan, "w1", [unit, "launchcard-other.service"])
    assert out["ops"] == [{"router": "rt", "router_unit": ROUTER, "api": "http://127.0.0.1:30080", "unit": unit,
                           "remove": "http://10.0.0.2:30000", "add": "http://10.0.0.2:30000"}]
    assert out["drain"] == plan["hosts"]["w1"]["instances"]
    assert out["routers"] == [{"host": "rt", "unit": ROUTER, "api": "http://127.0.0.1:30080",
                               "model": "launchcard-test/Upgrade-Tiny"}]
    assert out["warnings"] == []


@pytest.mark.parametrize("plan, host, serving", [
    ("replicas", "w0", []),  # nothing served before the reboot: nothing to take out
    ("replicas", "spare", ["launchcard-x.service"]),  # a host the plan does not name
    ({}, "w0", ["launchcard-x.service"]),  # the stack role alone, no plan
])
def test_nothing_to_take_out(plan, host, serving):
    plan = _replica_plan() if plan == "replicas" else plan
    assert reboot_drains(plan, host, serving) == {"ops": [], "drain": [], "routers": [], "warnings": []}


def test_the_upgrade_and_the_reboot_take_a_replica_out_of_the_same_router_by_the_same_url():
    """One decision, two callers: the upgrade's router_ops of a host are the reboot's (the plan's URL both ways)."""
    ro, dummy, new = _replicas()
    for host in ("w0", "w2"):
        assert ro["hosts"][host]["router_ops"] == reboot_drains(new, host, _serving(new, host))["ops"]


def test_the_upgrade_takes_a_replica_out_of_the_router_on_its_own_host_by_loopback():
    """Before the shared decision the upgrade matched the router's worker URLs to the replica's own URL only, and
    left a replica its router names by loopback in it while it restarted."""
    placement = [("w0", ["sglang-aggregated", "sglang-router"]), ("w1", ["sglang-aggregated"])]
    ro, dummy, new = _replicas(placement=placement)
    assert [(op["router"], op["remove"], op["add"]) for op in ro["hosts"]["w0"]["router_ops"]] == [
        ("w0", "http://127.0.0.1:30000", "http://127.0.0.1:30000")]
    assert not [o for o in ro["outages"] if "not-drained" in o["codes"]]


def test_a_mini_lb_router_keeps_the_replica_with_a_warning_naming_both():
    def mini(doc):
        doc["envs"][1]["argv"].insert(3, "--mini-lb")
    plan = _replica_plan(mini)
    out = reboot_drains(plan, "w0", _serving(plan, "w0"))
    assert (out["ops"], out["drain"], out["routers"]) == ([], [], [])
    assert out["warnings"] == [
        "w0: launchcard-upgrade-tiny-sglang-aggregated-0.service stays in router rt (%s) through the reboot: it runs "
        "--mini-lb, the debug balancer of SGLang, which has no worker API, so requests it sends there meanwhile fail"
        % ROUTER]


@pytest.mark.parametrize("mini_lb, reason", [
    (True, "it runs --mini-lb, the debug balancer of SGLang, which has no worker API"),
    (False, "it is a prefill/decode router (--pd-disaggregation), whose workers only an upgrade's surge takes out"),
])
def test_a_pd_router_keeps_its_prefill_and_decode_with_the_reason(mini_lb, reason):
    def regular(doc):
        for env in doc["envs"]:
            if "--mini-lb" in env["argv"] and not mini_lb:
                env["argv"].remove("--mini-lb")
    card = _card(EXAMPLE, regular)
    plan = _plan(card, [("pre", ["sglang-prefill"]), ("dec", ["sglang-decode"]), ("rt", ["sglang-router"])])
    router = routers_of(plan)[0]
    assert router["mode"] == "pd" and router["mini_lb"] is mini_lb
    for host in ("pre", "dec"):
        out = reboot_drains(plan, host, _serving(plan, host))
        assert out["ops"] == [] and out["drain"] == [] and out["routers"] == []
        unit = plan["hosts"][host]["instances"][0]["unit"]
        assert out["warnings"] == ["%s: %s stays in router rt (%s) through the reboot: %s, so requests it sends there "
                                   "meanwhile fail" % (host, unit, router["unit"], reason)]
        dummy, refused = router_drains(routers_of(plan), plan["hosts"][host]["instances"])
        assert [(r["router"], r["unit"], r["mode"]) for r in refused] == [("rt", unit, "pd")]


def test_a_router_that_reboots_with_its_replica_says_so_and_still_gets_it_back():
    plan = _replica_plan(placement=[("w0", ["sglang-aggregated", "sglang-router"]), ("w1", ["sglang-aggregated"])])
    out = reboot_drains(plan, "w0", _serving(plan, "w0"))
    # the router names the replica on its own host by loopback: that is the URL its worker API lists
    assert [(op["router"], op["remove"], op["add"]) for op in out["ops"]] == [
        ("w0", "http://127.0.0.1:30000", "http://127.0.0.1:30000")]
    assert out["warnings"] == ["w0: router %s reboots with the host: its clients are refused until it is back" % ROUTER]


def test_an_instance_without_a_url_is_in_no_router():
    plan = _replica_plan()
    inst = dict(plan["hosts"]["w0"]["instances"][0], url=None)
    assert router_drains(routers_of(plan), [inst]) == ([], [])


def test_the_filter():
    plan = _replica_plan()
    assert reboot_drains(plan, "w0", _serving(plan, "w0"))["routers"][0]["host"] == "rt"
    assert reboot_drains({}, "w0", [])["ops"] == []
    with pytest.raises(KeyError, match="unit"):
        reboot_drains({"hosts": {"w0": {"instances": [{"unit": "u", "url": "x"}]}, "rt": {"instances": [
            {"role": "router", "argv": ["r", "--worker-urls", "x"]}]}}}, "w0", ["u"])
