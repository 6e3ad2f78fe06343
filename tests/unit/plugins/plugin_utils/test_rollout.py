# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rollout planning: batches, order, partners, routers, per-host changes."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan_fleet
from ansible_collections.launchcard.inference.plugins.plugin_utils._rollout import (
    _flags,
    RolloutError,
    card_sha256,
    host_change,
    parse_serial,
    report,
    rollout,
)
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import host_units
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import _card

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
EXAMPLE = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
CARDS = os.path.join(ROOT, "tests", "e2e", "cards")
OPTS = {"runtime": "native"}


def _plan(card, placement, key="card"):
    hosts = [(h, {"address": "10.0.0.%d" % (i + 1), "recipes": recipes}) for i, (h, recipes) in enumerate(placement)]
    return plan_fleet({key: card}, {key: normalize_placement(hosts)})


def _units(p):
    return {h: host_units(hp, OPTS) for h, hp in p["hosts"].items()}


def _cards(card, key="card"):
    return {key: {"sha256": card_sha256(card), "repo": card["model"]["repo"], "revision": card["model"]["revision"]}}


def _records(p, card, key="card"):
    """The records a deploy of plan ``p`` leaves on each host."""
    units = _units(p)
    return {h: {"card": _cards(card, key)[key],
                "instances": hp["instances"],
                "units": {u["name"]: {"text": u["content"]} for u in units[h]}}
            for h, hp in p["hosts"].items()}


REPLICAS = [("w%d" % i, ["sglang-aggregated"]) for i in range(4)] + [("rt", ["sglang-router"])]


def _replicas(serial=1, new_flag=True, new_revision=True, placement=REPLICAS):
    v1 = _card(os.path.join(CARDS, "upgrade-v1.json"))

    def bump(doc):
        if new_flag:
            doc["envs"][0]["argv"] += ["--max-running-requests", "32"]
        if new_revision:
            doc["hf"]["revision"] = "2" * 40
    v2 = _card(os.path.join(CARDS, "upgrade-v1.json"), bump)
    old, new = _plan(v1, placement), _plan(v2, placement)
    return rollout(_records(old, v1), new, _units(new), _cards(v2), serial), old, new


def test_replicas_one_at_a_time_router_untouched():
    ro, dummy, new = _replicas()
    assert [(b["tier"], b["hosts"]) for b in ro["batches"]] == [("server", ["w%d" % i]) for i in range(4)]
    assert ro["unchanged"] == ["rt"]
    assert ro["warnings"] == []
    ch = ro["hosts"]["w2"]
    assert ch["action"] == "update"
    assert ch["write"] == ["launchcard-upgrade-tiny-sglang-aggregated-2.service"]
    assert ch["flags"] == [{"unit": ch["write"][0], "removed": ["--revision " + "1" * 40],
                            "added": ["--max-running-requests 32", "--revision " + "2" * 40]}]
    assert ch["revision"] == {"from": "1" * 40, "to": "2" * 40}
    assert "+    --max-running-requests 32 \\" in ch["diff"][0]["lines"]
    assert "+    --revision " + "2" * 40 in ch["diff"][0]["lines"]
    # taken out of the regular-mode router by its URL, put back under the same one
    router = new["hosts"]["rt"]["instances"][0]
    assert ch["router_ops"] == [{"router": "rt", "router_unit": "launchcard-upgrade-tiny-sglang-router-0.service",
                                 "api": "http://127.0.0.1:30080", "unit": ch["write"][0],
                                 "remove": "http://10.0.0.3:30000", "add": "http://10.0.0.3:30000"}]
    assert "http://10.0.0.3:30000" in router["argv"]
    assert [r["mode"] for r in ro["routers"]] == ["regular"]
    assert sorted(ro["routers"][0]["drains"]) == ["w0", "w1", "w2", "w3"]


@pytest.mark.parametrize("serial,expect", [(2, [["w0", "w1"], ["w2", "w3"]]), (3, [["w0", "w1", "w2"], ["w3"]])])
def test_serial_bounds_each_batch(serial, expect):
    ro, dummy, dummy2 = _replicas(serial)
    assert [b["hosts"] for b in ro["batches"]] == expect
    # capacity: at least N - serial replicas keep serving in every batch
    for b in ro["batches"]:
        assert 4 - len(b["hosts"]) >= 4 - serial


def test_serial_covering_every_replica_is_an_outage_of_each():
    ro, dummy, dummy2 = _replicas(4)
    assert [b["hosts"] for b in ro["batches"]] == [["w0", "w1", "w2", "w3"]]
    assert [(o["host"], o["codes"]) for o in ro["outages"]] == [("w%d" % i, ["no-replica"]) for i in range(4)]
    assert "(4 of 4 switch in batch 1)" in ro["outages"][0]["line"]


def test_revision_only_rewrites_each_engine_unit():
    # case A: the engine loads the revision its unit names, so a new revision is a new unit file
    ro, old, new = _replicas(new_flag=False)
    ch = ro["hosts"]["w0"]
    unit = "launchcard-upgrade-tiny-sglang-aggregated-0.service"
    assert ch["action"] == "update" and ch["write"] == [unit] and ch["restart"] == []
    assert ch["flags"] == [{"unit": unit, "removed": ["--revision " + "1" * 40], "added": ["--revision " + "2" * 40]}]
    assert "model revision 111111111111 -> 222222222222" in ch["reasons"]
    assert [b["hosts"] for b in ro["batches"]] == [["w0"], ["w1"], ["w2"], ["w3"]]
    # the new file names the new revision; the record (what a rollback writes back) the old one
    text = {u["name"]: u["content"] for u in _units(new)["w0"]}[unit]
    assert "--revision " + "2" * 40 in text and "1" * 40 not in text
    record = _records(old, _card(os.path.join(CARDS, "upgrade-v1.json")))["w0"]["units"][unit]["text"]
    assert "--revision " + "1" * 40 in record and "2" * 40 not in record
    # the router loads no weights: its unit is the same, it is not restarted
    assert ro["hosts"]["rt"]["action"] == "none" and ro["unchanged"] == ["rt"]
    assert ro["warnings"] == []


def test_revision_only_leaves_a_local_path_engine_with_a_warning():
    def local(doc):
        doc["envs"][0]["argv"][3] = "/srv/models/tiny"
    v1 = _card(os.path.join(CARDS, "upgrade-v1.json"), local)
    v2 = _card(os.path.join(CARDS, "upgrade-v1.json"), lambda d: (local(d), d["hf"].update(revision="2" * 40)))
    old, new = _plan(v1, REPLICAS), _plan(v2, REPLICAS)
    ro = rollout(_records(old, v1), new, _units(new), _cards(v2), 1)
    assert ro["batches"] == [] and ro["hosts"]["w0"]["unpinned"] == [
        "launchcard-upgrade-tiny-sglang-aggregated-0.service"]
    assert any(w.startswith("w0: the model revision changes (111111111111 -> 222222222222)") and "local path" in w
               for w in ro["warnings"])


def test_no_change_touches_nothing():
    ro, dummy, dummy2 = _replicas(new_flag=False, new_revision=False)
    assert ro["batches"] == [] and ro["unchanged"] == ["rt", "w0", "w1", "w2", "w3"]
    assert "unchanged (not touched): rt, w0, w1, w2, w3" in report(ro)


def test_two_recipes_on_one_host_count_for_both():
    card = _card(EXAMPLE)
    placement = [("a", ["sglang-aggregated", "vllm-aggregated"]), ("b", ["sglang-aggregated"]), ("c", ["vllm-aggregated"])]
    p = _plan(card, placement)
    ro = rollout({}, p, _units(p), _cards(card), 1)
    # a carries both recipes: b and c may share a batch, a may not join either
    assert [b["hosts"] for b in ro["batches"]] == [["a"], ["b", "c"]]
    assert all(ro["hosts"][h]["action"] == "new" for h in "abc")


def test_example_card_order_encoder_then_servers_then_pd_group_then_router():
    card = _card(EXAMPLE)
    placement = [("vllm", ["vllm-aggregated"]), ("enc", ["sglang-encoder"]), ("lang", ["sglang-language"]),
                 ("cp", ["sglang-aggregated"]), ("pre", ["sglang-prefill"]), ("dec", ["sglang-decode"]),
                 ("rt", ["sglang-router"])]
    old = _plan(card, placement)

    def bump(doc):
        for e in doc["envs"]:
            if "--disaggregation-mode" in e["argv"] and "decode" in e["argv"]:
                e["argv"] += ["--max-running-requests", "8"]
            if "--encoder-only" in e["argv"] or "--language-only" in e["argv"]:
                e["argv"] += ["--log-level", "debug"]
        doc["envs"][-1]["argv"] += ["--log-level", "debug"]
    new_card = _card(EXAMPLE, bump)
    new = _plan(new_card, placement)
    ro = rollout(_records(old, card), new, _units(new), _cards(new_card), 1)
    assert [(b["tier"], b["hosts"]) for b in ro["batches"]] == [
        ("encoder", ["enc"]), ("server", ["lang"]), ("prefill-decode", ["dec", "pre"]), ("router", ["rt"])]
    # the prefill did not change: it restarts with its decode partner
    assert ro["hosts"]["pre"]["action"] == "partner-restart"
    assert ro["hosts"]["pre"]["restart"] == ["launchcard-glm-5.3-flash-sglang-prefill-0.service"]
    assert ro["hosts"]["dec"]["action"] == "update"
    assert ro["unchanged"] == ["cp", "vllm"]
    rt = ro["routers"][0]
    assert rt["mode"] == "pd" and rt["touched"] and rt["drains"] == []
    text = "\n".join(report(ro))
    assert "batch 3 (prefill-decode): dec, pre" in text
    assert "router rt launchcard-glm-5.3-flash-sglang-router-0.service (pd): unit changes, restarts last" in text


def _decode_bump(placement):
    """The example card's decode recipe with one more flag, rolled out over ``placement``: (rollout, new card)."""
    card = _card(EXAMPLE)
    old = _plan(card, placement)

    def bump(doc):
        for e in doc["envs"]:
            if "--disaggregation-mode" in e["argv"] and "decode" in e["argv"]:
                e["argv"] += ["--max-running-requests", "8"]
    new_card = _card(EXAMPLE, bump)
    new = _plan(new_card, placement)
    return rollout(_records(old, card), new, _units(new), _cards(new_card), 1), new_card


def test_a_router_whose_host_changes_but_not_its_unit_is_reported_as_such():
    # the card's single-host PD layout: a decode change touches the router's host, never the router's unit
    ro, dummy = _decode_bump([("pd", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    router = "launchcard-glm-5.3-flash-sglang-router-0.service"
    assert ro["routers"][0]["touched"] and router not in ro["hosts"]["pd"]["write"] + ro["hosts"]["pd"]["restart"]
    text = "\n".join(report(ro))
    assert "router pd %s (pd): its host changes, its unit does not" % router in text
    assert "unit changes, restarts last" not in text


def test_mini_lb_gap_is_an_outage():
    def mini(doc):
        doc["envs"][1]["argv"].insert(3, "--mini-lb")
    v1 = _card(os.path.join(CARDS, "upgrade-v1.json"), mini)

    def bump(doc):
        mini(doc)
        doc["envs"][0]["argv"] += ["--max-running-requests", "32"]
    v2 = _card(os.path.join(CARDS, "upgrade-v1.json"), bump)
    old, new = _plan(v1, REPLICAS), _plan(v2, REPLICAS)
    ro = rollout(_records(old, v1), new, _units(new), _cards(v2), 1)
    assert ro["routers"][0]["mode"] == "mini-lb" and ro["routers"][0]["mini_lb"]
    assert all(ro["hosts"]["w%d" % i]["router_ops"] == [] for i in range(4))
    # each replica's restart is an outage (the other three still serve, but the router keeps sending it requests)
    assert [(o["host"], o["codes"]) for o in ro["outages"]] == [("w%d" % i, ["mini-lb"]) for i in range(4)]
    assert sum("runs --mini-lb, the debug balancer of SGLang: no worker API" in line for line in report(ro)) == 4


def test_retired_host_goes_last_and_host_without_record_reads_as_new():
    ro, dummy, dummy2 = _replicas(placement=REPLICAS[:3] + REPLICAS[4:])
    # w3 still runs units of the old card but the new placement drops it
    assert ro["hosts"].get("w3") is None  # no record given for it: the records come from the old plan of 3
    v1 = _card(os.path.join(CARDS, "upgrade-v1.json"))
    old, new = _plan(v1, REPLICAS), _plan(v1, REPLICAS[:3] + REPLICAS[4:])
    ro = rollout(_records(old, v1), new, _units(new), _cards(v1), 1)
    assert ro["batches"][-1] == {"index": len(ro["batches"]) - 1, "tier": "retire", "hosts": ["w3"]}
    # the engine's unit and its liveness timer and probe (plugin_utils/_liveness.py)
    assert ro["hosts"]["w3"]["remove"] == ["launchcard-upgrade-tiny-sglang-aggregated-3-liveness.service",
                                           "launchcard-upgrade-tiny-sglang-aggregated-3-liveness.timer",
                                           "launchcard-upgrade-tiny-sglang-aggregated-3.service"]
    # the router's --worker-urls lose w3: it restarts, before w3 is retired
    assert [b["tier"] for b in ro["batches"]] == ["router", "retire"]


def test_record_from_unit_files_only_still_diffs():
    ro, old, new = _replicas()
    units = _units(old)
    bare = {h: {"units": {u["name"]: {"text": u["content"]} for u in units[h]}, "instances": [], "card": None}
            for h in old["hosts"]}
    v2 = ro  # same target
    ro2 = rollout(bare, new, _units(new), {"card": {"sha256": "x", "repo": "r", "revision": "2" * 40}}, 1)
    ch = ro2["hosts"]["w1"]
    assert ch["action"] == "update" and ch["revision"] is None
    assert ch["flags"] == [{"unit": "launchcard-upgrade-tiny-sglang-aggregated-1.service",
                            "removed": ["--revision " + "1" * 40],
                            "added": ["--max-running-requests 32", "--revision " + "2" * 40]}]
    assert [b["hosts"] for b in ro2["batches"]] == [b["hosts"] for b in v2["batches"]]


@pytest.mark.parametrize("bad", [0, -1, "two", "1.5", True, None, "50%"])
def test_bad_serial_names_the_variable(bad):
    with pytest.raises(RolloutError, match="launchcard_upgrade_serial"):
        parse_serial(bad)


def test_serial_from_string():
    assert parse_serial("3") == 3 and parse_serial(2) == 2


def test_host_change_new_and_none():
    assert host_change("h", None, None, [], {})["action"] == "none"
    ch = host_change("h", None, {"card": "k", "instances": []}, [{"name": "launchcard-x.service", "content": "a\n"}],
                     {"k": {"revision": "r"}})
    assert ch["action"] == "new" and ch["write"] == ["launchcard-x.service"]


def _same_card_new_runtime(old_opts, new_opts):
    v1 = _card(os.path.join(CARDS, "upgrade-v1.json"))
    p = _plan(v1, REPLICAS)
    records = {h: {"card": dict(_cards(v1)["card"], key="card"), "instances": hp["instances"],
                   "units": {u["name"]: {"text": u["content"]} for u in host_units(hp, old_opts)}}
               for h, hp in p["hosts"].items()}
    return rollout(records, p, {h: host_units(hp, new_opts) for h, hp in p["hosts"].items()}, _cards(v1), 1)


def test_a_new_image_digest_alone_changes_the_host_and_says_so():
    v1 = _card(os.path.join(CARDS, "upgrade-v1.json"))
    image = v1["recipes"][0]["image"]
    old = {"runtime": "docker", "image_refs": {image: image.split(":")[0] + "@sha256:" + "a" * 64}}
    new = {"runtime": "docker", "image_refs": {image: image.split(":")[0] + "@sha256:" + "b" * 64}}
    ro = _same_card_new_runtime(old, new)
    ch = ro["hosts"]["w0"]
    assert ch["action"] == "update" and ch["flags"] == []
    assert "image %s sha256:aaaaaaaaaaaa -> sha256:bbbbbbbbbbbb" % image.split(":")[0] in ch["reasons"]
    text = "\n".join(report(ro))
    assert "w0: update (1 unit file(s) change; image " in text
    assert [b["hosts"] for b in ro["batches"]][:4] == [["w0"], ["w1"], ["w2"], ["w3"]]


def test_new_native_requirements_alone_change_the_host_and_say_so():
    ro = _same_card_new_runtime(dict(OPTS, native_requirements="a" * 64), dict(OPTS, native_requirements="b" * 64))
    for h in ("w0", "w1", "w2", "w3", "rt"):
        assert ro["hosts"][h]["action"] == "update"
        assert "native virtualenv requirements aaaaaaaaaaaa -> bbbbbbbbbbbb" in ro["hosts"][h]["reasons"]
    # the same requirements: nothing to do
    same = _same_card_new_runtime(dict(OPTS, native_requirements="a" * 64), dict(OPTS, native_requirements="a" * 64))
    assert same["batches"] == []


def test_flag_changes_quote_values_a_shell_would_split():
    removed, added = _flags(["vllm", "--port", "8000"], ["vllm", "--port", "8000", "--served-model-name", "x;rm -rf /"])
    assert removed == []
    assert added == ["--served-model-name 'x;rm -rf /'"]


def test_the_same_card_read_from_another_path_leaves_every_record_as_it_is(tmp_path):
    """The record's card (the planning step's launchcard_record_cards, as deploy.yml and upgrade.yml pass it) names
    no controller path: the same bytes read from another path or URL write no new record, in check mode or not."""
    from ansible_collections.launchcard.inference.plugins.plugin_utils._plan_tables import record_card
    from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
    with open(EXAMPLE, "rb") as f:
        raw = f.read()
    sources = [EXAMPLE, "/srv/elsewhere/glm.json", "cards/glm-5.3-flash.json", "https://cards.example/glm.json"]
    cards = dict((src, load_card(raw, src)) for src in sources)
    found = [record_card(cards, src) for src in sources]
    assert found[0] == {"sha256": card_sha256(cards[EXAMPLE]), "repo": "zai-org/GLM-5.3-Flash",
                        "revision": cards[EXAMPLE]["model"]["revision"]}
    assert all(f == found[0] for f in found[1:])
    assert [card_sha256(cards[src]) for src in sources] == [found[0]["sha256"]] * len(sources)

    units = tmp_path / "system"
    units.mkdir()
    (units / "launchcard-glm-5.3-flash-vllm-aggregated-0.service").write_text("[Service]\nExecStart=/bin/true\n")
    record = tmp_path / "state.json"

    def write(card, check_mode=False):
        return state.write_present(str(record), str(units), "launchcard-", card, [], {"kind": "native"},
                                   check_mode, os.replace)[0]

    # a record an earlier release wrote names the source and a digest over it: rewritten once, then stable
    write(dict(found[0], key=EXAMPLE, sha256="0" * 64))
    assert write(found[0], check_mode=True) is True and write(found[0]) is True
    for card in found:
        assert write(card, check_mode=True) is False and write(card) is False
    written = json.loads(record.read_text())
    assert written["card"] == found[0] and written["previous"]["card"]["key"] == EXAMPLE

    # a card that differs (not only where it was read from) still changes the record
    doc = json.loads(raw)
    doc["hf"]["weight_gib"] = (doc["hf"].get("weight_gib") or 0) + 1
    other = record_card({"/srv/elsewhere/glm.json": load_card(json.dumps(doc), "/srv/elsewhere/glm.json")},
                        "/srv/elsewhere/glm.json")
    assert other["sha256"] != found[0]["sha256"] and other["revision"] == found[0]["revision"]
    assert write(other, check_mode=True) is True


def test_each_batch_host_drains_what_it_stops_and_gates_the_routers_it_left():
    """Issue 27: what a batch host does is a field of the rollout, read as it is by tasks/upgrade-batch-hosts.yml."""
    ro, old, dummy = _replicas()
    ch, unit = ro["hosts"]["w1"], "launchcard-upgrade-tiny-sglang-aggregated-1.service"
    assert ch["drain"] == [{"name": unit, "url": "http://127.0.0.1:30000", "engine": "sglang"}]
    router = old["hosts"]["rt"]["instances"][0]
    assert ch["gate_routers"] == [{"host": "rt", "unit": router["unit"], "api": "http://127.0.0.1:30080",
                                   "model": router["served_model"]}]
    assert ch["runs_before"] == "revision 111111111111, 1 unit(s)"
    assert ch["runs_after"] == "revision 222222222222, 1 unit(s) (upgraded: 1 unit file(s) written, 0 removed)"
    assert (ch["twins"], ch["twin_ops"], ch["twin_ports"], ch["twin_units"], ch["twin_drain"]) == ([], [], [], [], [])
    # the router's host is untouched: nothing to drain, no router to gate, no diff; upgrade.yml records it as planned
    assert (ro["hosts"]["rt"]["drain"], ro["hosts"]["rt"]["gate_routers"], ro["surge_routers"]) == ([], [], [])
    assert sorted(ro["diff_lines"]) == ["w0", "w1", "w2", "w3"] and ro["diff_lines"]["w1"] == ch["diff"][0]["lines"]
    assert ro["unchanged"] == ["rt"] and "rt" in old["hosts"]
    # the untouched router's record is rewritten to the new revision: the summary says so, not the old one
    assert ro["hosts"]["rt"]["runs_before"] == "revision 111111111111, 1 unit(s)"
    assert ro["hosts"]["rt"]["runs_after"] == "revision 222222222222, 1 unit(s) (unchanged)"


def test_a_partner_restart_drains_its_restarted_units_and_says_so():
    ro, new_card = _decode_bump([("pre", ["sglang-prefill"]), ("dec", ["sglang-decode"]), ("rt", ["sglang-router"])])
    pre = ro["hosts"]["pre"]
    assert pre["action"] == "partner-restart" and pre["write"] == []
    assert [d["name"] for d in pre["drain"]] == ["launchcard-glm-5.3-flash-sglang-prefill-0.service"]
    assert [d["name"] for d in ro["hosts"]["dec"]["drain"]] == ["launchcard-glm-5.3-flash-sglang-decode-0.service"]
    assert pre["runs_after"] == "revision %s, 1 unit(s) (restarted with its partner)" % new_card["model"]["revision"][:12]
    # a PD router cannot take the pair out, yet the changed host gates through it once the pair is back
    assert pre["gate_routers"] == []
    router = ro["routers"][0]
    assert ro["hosts"]["dec"]["router_ops"] == []
    gate = {"host": "rt", "unit": router["unit"], "api": router["api"], "model": router["model"]}
    assert ro["hosts"]["dec"]["gate_routers"] == [gate]


def test_a_retired_quadlet_host_drains_the_service_its_container_file_gives():
    v1 = _card(os.path.join(CARDS, "upgrade-v1.json"))
    quadlet = {"runtime": "podman", "podman_quadlet": True}
    old, new = _plan(v1, REPLICAS), _plan(v1, REPLICAS[:3] + REPLICAS[4:])
    records = {h: {"card": _cards(v1)["card"], "instances": hp["instances"],
                   "units": {u["name"]: {"text": u["content"]} for u in host_units(hp, quadlet)}}
               for h, hp in old["hosts"].items()}
    ro = rollout(records, new, {h: host_units(hp, quadlet) for h, hp in new["hosts"].items()}, _cards(v1), 1)
    ch = ro["hosts"]["w3"]
    assert ch["action"] == "retire" and ch["remove"] == ["launchcard-upgrade-tiny-sglang-aggregated-3-liveness.service",
                                                         "launchcard-upgrade-tiny-sglang-aggregated-3-liveness.timer",
                                                         "launchcard-upgrade-tiny-sglang-aggregated-3.container"]
    assert [d["name"] for d in ch["drain"]] == ["launchcard-upgrade-tiny-sglang-aggregated-3.service"]
    assert ch["runs_after"] == "nothing (retired)"
