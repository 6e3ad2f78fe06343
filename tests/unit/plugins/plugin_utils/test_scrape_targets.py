# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus file_sd targets from the plan (issue 43, item 1)."""

from __future__ import annotations

import json
import os

from ansible_collections.launchcard.inference.plugins.plugin_utils import _alert_rules as alert_rules
from ansible_collections.launchcard.inference.plugins.plugin_utils import _scrape_targets as st
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan_fleet

from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import (
    EX,
    SANDBOX,
    VALID,
    _h,
    _variant,
)

REV = EX["model"]["revision"]
DIGEST = "sha256:" + "ab" * 32


def _fleet(card=None, hosts=None, key="cards/glm-5.3-flash.json"):
    return plan_fleet({key: card or EX}, {key: normalize_placement(hosts or SANDBOX)})


def _by_instance(groups):
    return dict((g["labels"]["instance"], g) for g in groups)


# the card's PD router runs --mini-lb, which serves no metrics; the regular router does
REGULAR = [(h, dict(v, argv_overrides={"sglang-router": {"remove": ["--mini-lb"]}}) if h == "lc-router" else v)
           for h, v in SANDBOX]


def test_every_engine_and_router_of_the_sandbox_fleet_is_a_target_labelled_from_the_plan():
    p = _fleet(hosts=REGULAR)
    refs = {"vllm/vllm-openai:nightly": "docker.io/vllm/vllm-openai@" + DIGEST}
    groups, notes = st.engine_targets(p, refs)
    assert notes == []
    got = _by_instance(groups)
    want = {"vllm-aggregated": ("lc-vllm", "198.18.0.11:8000", "aggregated", "vllm"),
            "sglang-encoder": ("lc-encoder", "198.18.0.12:30001", "encoder", "sglang"),
            "sglang-language": ("lc-language", "198.18.0.13:30000", "language", "sglang"),
            "sglang-aggregated": ("lc-cp", "198.18.0.14:30000", "aggregated", "sglang"),
            "sglang-prefill": ("lc-prefill", "198.18.0.15:31000", "prefill", "sglang"),
            "sglang-decode": ("lc-decode", "198.18.0.16:32000", "decode", "sglang"),
            "sglang-router": ("lc-router", "198.18.0.17:29000", "router", "sglang")}
    assert sorted(got) == sorted("glm-5.3-flash-%s-0" % r for r in want)
    for recipe, (host, target, role, engine) in want.items():
        g = got["glm-5.3-flash-%s-0" % recipe]
        labels = {"card": "glm-5.3-flash", "revision": REV, "recipe": recipe, "instance": "glm-5.3-flash-%s-0" % recipe,
                  "role": role, "engine": engine, "host": host}
        if recipe == "vllm-aggregated":
            labels["image_digest"] = DIGEST  # resolved; the SGLang images were not
        assert g == {"targets": [target], "labels": labels}
        assert set(g["labels"]) <= set(st.LABELS)


def test_a_mini_lb_router_serves_no_metrics_so_it_gets_no_target():
    groups, notes = st.engine_targets(_fleet())
    assert "glm-5.3-flash-sglang-router-0" not in _by_instance(groups) and len(groups) == 6
    assert notes == ["lc-router: glm-5.3-flash-sglang-router-0: no target, the --mini-lb balancer serves no metrics"]


def test_the_monitoring_host_scrapes_its_own_instances_through_loopback():
    groups, dummy = st.engine_targets(_fleet(hosts=REGULAR), monitor="lc-router")
    got = _by_instance(groups)
    assert got["glm-5.3-flash-sglang-router-0"]["targets"] == ["127.0.0.1:29000"]
    assert got["glm-5.3-flash-sglang-decode-0"]["targets"] == ["198.18.0.16:32000"]
    nodes = dict((g["labels"]["host"], g["targets"]) for g in st.node_targets(_fleet(), monitor="lc-router"))
    assert nodes["lc-router"] == ["127.0.0.1:9100"] and nodes["lc-vllm"] == ["198.18.0.11:9100"]


def test_a_listener_bound_to_loopback_is_reached_only_from_its_own_host():
    def loopback(doc):
        doc["envs"][0]["argv"] += ["--host", "127.0.0.1"]
        doc["envs"][6]["argv"].remove("--mini-lb")
        doc["envs"][6]["argv"] += ["--prometheus-host", "127.0.0.1"]
    card = _variant(loopback)
    pd = ["sglang-prefill", "sglang-decode", "sglang-router"]
    hosts = [_h("v", "10.0.0.1", ["vllm-aggregated"]), _h("pd", "10.0.0.2", pd)]
    groups, notes = st.engine_targets(_fleet(card, hosts))
    assert sorted(_by_instance(groups)) == ["glm-5.3-flash-sglang-decode-0", "glm-5.3-flash-sglang-prefill-0"]
    assert notes == [
        "pd: glm-5.3-flash-sglang-router-0: no target, its metrics listen on 127.0.0.1:29000 only, which a monitoring "
        "host on another machine cannot reach",
        "v: glm-5.3-flash-vllm-aggregated-0: no target, its metrics listen on 127.0.0.1:8000 only, which a monitoring "
        "host on another machine cannot reach"]
    on_pd, dummy = st.engine_targets(_fleet(card, hosts), monitor="pd")
    assert _by_instance(on_pd)["glm-5.3-flash-sglang-router-0"]["targets"] == ["127.0.0.1:29000"]


def test_headless_ranks_serve_no_metrics_and_rank_zero_does():
    with open(os.path.join(VALID, "01-vllm-multinode-tp16.json")) as f:
        card = load_card(f.read(), "multi")
    hosts = [_h("n0", "10.1.0.1", ["vllm-aggregated-0"]), _h("n1", "10.1.0.2", ["vllm-aggregated-0"])]
    groups, notes = st.engine_targets(_fleet(card, hosts, "multi.json"))
    assert [g["targets"] for g in groups] == [["10.1.0.1:8000"]]
    assert groups[0]["labels"]["instance"].endswith("-rank0")
    assert notes == ["n1: %s: no target, a headless rank serves no API and no /metrics" %
                     groups[0]["labels"]["instance"].replace("rank0", "rank1")]


def test_metrics_turned_off_leave_the_instance_out_with_a_note():
    hosts = [("cp", {"address": "10.0.0.3", "recipes": ["sglang-aggregated"],
                     "argv_overrides": {"sglang-aggregated": {"remove": ["--enable-metrics"]}}})]
    groups, notes = st.engine_targets(_fleet(EX, hosts))
    assert groups == []
    assert notes == ["cp: glm-5.3-flash-sglang-aggregated-0: no target, metrics are off (--enable-metrics removed by "
                     "launchcard_argv_overrides)"]


def test_the_files_are_stable_json_an_unchanged_plan_rewrites_nothing():
    one, dummy = st.file_sd_files(_fleet(hosts=REGULAR), monitor="lc-router")
    two, dummy = st.file_sd_files(_fleet(hosts=REGULAR), monitor="lc-router")
    assert one == two and sorted(one) == [st.ENGINES_FILE, st.GPUS_FILE, st.NODES_FILE]
    # no host runs an accelerator exporter: its file is there, empty
    assert one[st.GPUS_FILE] == "[]\n"
    assert all(text.endswith("\n") and isinstance(json.loads(text), list) for text in one.values())
    # an upgraded card's series carry the new revision
    newer = _variant(lambda doc: doc["hf"].update(revision="1" * 40))
    three, dummy = st.file_sd_files(_fleet(newer), monitor="lc-router")
    assert set(g["labels"]["revision"] for g in json.loads(three[st.ENGINES_FILE])) == {"1" * 40}


def test_the_files_go_where_the_prometheus_role_reads_them():
    paths = st.file_sd_paths(_fleet(hosts=REGULAR), monitor="lc-router")
    assert sorted(paths) == ["/etc/prometheus/file_sd/launchcard-engines.json",
                             "/etc/prometheus/file_sd/launchcard-gpus.json",
                             "/etc/prometheus/file_sd/launchcard-nodes.json"]
    jobs = st.scrape_configs()
    assert jobs == [{"job_name": "launchcard-engines", "file_sd_configs": [{"files": [sorted(paths)[0]]}]},
                    {"job_name": "launchcard-gpus", "file_sd_configs": [{"files": [sorted(paths)[1]]}]},
                    {"job_name": "launchcard-nodes", "file_sd_configs": [{"files": [sorted(paths)[2]]}]}]
    # launchcard_file_sd_dir moves them all, for a Prometheus of the site's own
    assert [j["file_sd_configs"][0]["files"][0] for j in st.scrape_configs("/srv/sd/")] == [
        "/srv/sd/launchcard-engines.json", "/srv/sd/launchcard-gpus.json", "/srv/sd/launchcard-nodes.json"]


def test_a_monitoring_host_scrapes_its_own_node_exporter_once():
    jobs = st.scrape_configs(None, "lc-monitor")
    assert jobs[:3] == st.scrape_configs()
    assert jobs[3] == {"job_name": st.MONITOR_NODE_JOB, "static_configs": [
        {"targets": ["127.0.0.1:%d" % st.NODE_EXPORTER_PORT], "labels": {"host": "lc-monitor"}}]}
    # one the plan places is in the nodes file (labelled with its card): no second job for the same exporter
    assert st.scrape_configs(None, "lc-router", ["sglang-router"]) == st.scrape_configs()
    assert "lc-router" in [g["labels"]["host"] for g in st.node_targets(_fleet(), monitor="lc-router")]


def test_the_disk_rule_watches_every_node_target_with_a_host_the_collection_labels():
    (rule,) = [r for g in alert_rules.rule_groups()["groups"] for r in g["rules"]
               if r.get("alert") == "LaunchcardWeightsDiskNearlyFull"]
    assert 'host!=""' in rule["expr"] and 'card!=""' not in rule["expr"]


def test_an_undeploy_leaves_its_hosts_targets_out_and_keeps_the_others():
    fleet = _fleet(hosts=REGULAR)
    everything = st.file_sd_paths(fleet, without=[h for h, dummy in REGULAR])
    assert set(everything.values()) == {"[]\n"}
    one = st.file_sd_paths(fleet, without=["lc-router"])
    engines = json.loads(one["/etc/prometheus/file_sd/launchcard-engines.json"])
    assert "glm-5.3-flash-sglang-router-0" not in _by_instance(engines)
    assert len(engines) == 6
    assert "lc-router" not in [g["labels"]["host"] for g in json.loads(one["/etc/prometheus/file_sd/launchcard-nodes.json"])]


def test_the_filters_give_each_monitoring_host_its_files_and_name_a_bad_threshold():
    import pytest
    from ansible.errors import AnsibleFilterError
    from ansible_collections.launchcard.inference.plugins.filter import monitoring

    writes = monitoring.file_sd_files(_fleet(hosts=REGULAR), {}, ["lc-router", "prom", "lc-router"])
    assert [(w["host"], w["path"].rsplit("/", 1)[1]) for w in writes] == [
        (h, name) for h in ("lc-router", "prom") for name in (st.ENGINES_FILE, st.GPUS_FILE, st.NODES_FILE)]
    # each reaches the router as it can: lc-router through loopback, prom at its address
    router = dict((w["host"], _by_instance(json.loads(w["content"]))) for w in writes if w["path"].endswith(st.ENGINES_FILE))
    assert router["lc-router"]["glm-5.3-flash-sglang-router-0"]["targets"] == ["127.0.0.1:29000"]
    assert router["prom"]["glm-5.3-flash-sglang-router-0"]["targets"] == ["198.18.0.17:29000"]
    assert monitoring.file_sd_files(_fleet(hosts=REGULAR), {}, []) == []
    rules = monitoring.alert_rules({"target_down_for": "30s"})
    assert rules["groups"][0]["rules"][0]["for"] == "30s"
    with pytest.raises(AnsibleFilterError, match="unknown alert threshold.*target_down"):
        monitoring.alert_rules({"target_down": "30s"})
