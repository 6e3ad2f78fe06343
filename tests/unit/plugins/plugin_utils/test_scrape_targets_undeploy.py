# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An undeploy resolves no image: the targets it keeps keep the image_digest their monitoring host's file gives them
(issue 43, item 1), and nothing in that file, which is not trusted, gets further than a well-formed digest."""

from __future__ import annotations

import base64
import json

import pytest

from ansible_collections.launchcard.inference.plugins.filter import monitoring
from ansible_collections.launchcard.inference.plugins.plugin_utils import _scrape_targets as st

from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import _variant
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_scrape_targets import (
    REGULAR,
    _by_instance,
    _fleet,
)

VLLM, SGLANG = "sha256:" + "ab" * 32, "sha256:" + "cd" * 32
REFS = {"vllm/vllm-openai:nightly": "docker.io/vllm/vllm-openai@" + VLLM,
        "lmsysorg/sglang:latest": "docker.io/lmsysorg/sglang@" + SGLANG}
ENGINES = "/etc/prometheus/file_sd/" + st.ENGINES_FILE
ROUTER = "glm-5.3-flash-sglang-router-0"


def _engines(paths):
    return json.loads(paths[ENGINES])


def _slurped(host, path, text, **extra):
    """One item of ``ansible.builtin.slurp`` looped over the filter's list, as Ansible registers it."""
    res = {"item": {"host": host, "path": path, "content": "..."}, "ansible_loop_var": "item", "changed": False,
           "failed": False, "source": path, "encoding": "base64",
           "content": base64.b64encode(text if isinstance(text, bytes) else text.encode()).decode()}
    res.update(extra)
    return res


def test_an_undeploy_keeps_the_digests_of_the_targets_it_keeps_so_their_series_stay_the_same():
    fleet = _fleet(hosts=REGULAR)
    deployed = st.file_sd_paths(fleet, REFS, monitor="lc-router")
    assert all("image_digest" in g["labels"] for g in _engines(deployed))
    # the undeploy of lc-decode knows no digest (no registry asked): the others keep theirs, label for label
    undeployed = st.file_sd_paths(fleet, {}, monitor="lc-router", without=["lc-decode"], previous=deployed)
    want = [g for g in _engines(deployed) if g["labels"]["host"] != "lc-decode"]
    assert _engines(undeployed) == want and len(want) == 6
    # the bug: without the files read back, every kept target lost its image_digest label
    bare = st.file_sd_paths(fleet, {}, monitor="lc-router", without=["lc-decode"])
    assert [g for g in _engines(bare) if "image_digest" in g["labels"]] == []
    # the other files are the plan's, as before
    assert dict((p, t) for p, t in undeployed.items() if p != ENGINES) == dict((p, t) for p, t in bare.items() if p != ENGINES)


def test_a_digest_the_run_knows_wins_and_a_moved_folder_reads_its_own_file():
    fleet = _fleet(hosts=REGULAR)
    deployed = st.file_sd_paths(fleet, REFS, folder="/srv/sd/")
    newer = dict(REFS, **{"lmsysorg/sglang:latest": "docker.io/lmsysorg/sglang@sha256:" + "ef" * 32})
    got = _by_instance(json.loads(st.file_sd_paths(fleet, newer, folder="/srv/sd/", previous=deployed)[
        "/srv/sd/" + st.ENGINES_FILE]))
    assert got[ROUTER]["labels"]["image_digest"] == "sha256:" + "ef" * 32
    assert got["glm-5.3-flash-vllm-aggregated-0"]["labels"]["image_digest"] == VLLM
    # the default folder's file is not the one this folder's files replace
    elsewhere = dict((ENGINES, t) for t in deployed.values())
    assert "image_digest" not in _by_instance(_engines(st.file_sd_paths(fleet, previous=elsewhere)))[ROUTER]["labels"]


def test_only_the_same_instance_of_the_same_revision_keeps_its_digest():
    fleet = _fleet(hosts=REGULAR)
    deployed = st.file_sd_paths(fleet, REFS)
    # an upgrade written to the card but not yet run: the files hold the old revision's digests, which are not the
    # new revision's
    newer = _fleet(_variant(lambda doc: doc["hf"].update(revision="1" * 40)), hosts=REGULAR)
    assert [g for g in _engines(st.file_sd_paths(newer, previous=deployed)) if "image_digest" in g["labels"]] == []
    groups = _engines(deployed)
    for name, value in (("instance", "glm-5.3-flash-sglang-router-1"), ("recipe", "sglang-decode"), ("card", "other")):
        moved = [dict(g, labels=dict(g["labels"], **{name: value})) if g["labels"]["instance"] == ROUTER else g
                 for g in groups]
        got = _by_instance(st.engine_targets(fleet, kept=st.kept_digests(json.dumps(moved)))[0])
        assert "image_digest" not in got[ROUTER]["labels"], name
        assert len([g for g in got.values() if "image_digest" in g["labels"]]) == 6, name


@pytest.mark.parametrize("text", [
    None, "", "not json", b"\xff\xfe", "{}", '"sha256:%s"' % ("ab" * 32), "[1, null, []]", "[" * 100000 + "]" * 100000,
    json.dumps([{"labels": "card=x"}]),
])
def test_a_file_that_is_not_an_engines_file_keeps_nothing_and_never_raises(text):
    assert st.kept_digests(text) == {}


@pytest.mark.parametrize("digest", [
    "sha256:" + "AB" * 32, "sha256:" + "ab" * 31, "sha256:" + "ab" * 33, "sha512:" + "ab" * 64, "ab" * 32,
    "sha256:" + "ab" * 32 + "\n", "sha256:" + "ab" * 31 + "zz", "sha256:" + "ab" * 32 + '", "x": "y', 42, None,
    ["sha256:" + "ab" * 32],
])
def test_only_a_well_formed_sha256_digest_is_carried_over(digest):
    labels = {"card": "c", "instance": "c-vllm-aggregated-0", "recipe": "vllm-aggregated", "revision": "r",
              "image_digest": digest}
    assert st.kept_digests(json.dumps([{"targets": ["h:1"], "labels": labels}])) == {}
    assert st.kept_digests(json.dumps([{"targets": ["h:1"], "labels": dict(labels, image_digest=VLLM)}])) == {
        ("c", "c-vllm-aggregated-0", "vllm-aggregated", "r"): VLLM}


def test_labels_that_are_not_strings_or_two_digests_for_one_instance_keep_nothing_for_it():
    one = {"card": "c", "instance": "i", "recipe": "r", "revision": "v", "image_digest": VLLM}
    assert st.kept_digests(json.dumps([{"labels": dict(one, instance=["i"])}, {"labels": dict(one, card="")},
                                       {"labels": dict((k, v) for k, v in one.items() if k != "recipe")}])) == {}
    assert st.kept_digests(json.dumps([{"labels": one}, {"labels": dict(one, image_digest=SGLANG)}])) == {}
    assert st.kept_digests(json.dumps([{"labels": one}, {"labels": one}])) == {("c", "i", "r", "v"): VLLM}


def test_read_back_takes_what_slurp_read_and_leaves_out_what_it_could_not():
    registered = {"changed": False, "msg": "All items completed", "results": [
        _slurped("prom", "/sd/a.json", "[]\n"),
        # no file: failed_when false keeps the run going, the item has no content
        {"item": {"host": "prom", "path": "/sd/b.json"}, "failed": False, "msg": "file not found: /sd/b.json"},
        {"item": {"host": "prom", "path": "/sd/c.json"}, "unreachable": True, "skipped": True},
        _slurped("prom", "/sd/d.json", "[]", content="not base64!"),
        _slurped("prom", "/sd/e.json", b"\xff\xfe"),
        _slurped("prom", "/sd/f.json", "[]", encoding="text"),
        _slurped("other", "/sd/a.json", "[1]"),
        "garbage", {"item": "prom"},
    ]}
    assert st.read_back(registered) == {("prom", "/sd/a.json"): "[]\n", ("other", "/sd/a.json"): "[1]"}
    assert st.read_back(registered["results"]) == st.read_back(registered)
    for nothing in (None, {}, {"results": None}, {"skipped": True, "results": []}, "x"):
        assert st.read_back(nothing) == {}


def test_the_filter_keeps_each_monitoring_hosts_own_labels():
    fleet = _fleet(hosts=REGULAR)
    deployed = monitoring.file_sd_files(fleet, REFS, ["lc-router", "prom"])
    # prom's files were lost (a new disk): it gets the targets without digests, lc-router keeps its own
    registered = {"results": [_slurped(w["host"], w["path"], w["content"]) for w in deployed if w["host"] == "lc-router"]
                  + [{"item": {"host": "prom", "path": ENGINES}, "failed": False, "msg": "file not found"}]}
    undeployed = monitoring.file_sd_files(fleet, {}, ["lc-router", "prom"], None, ["lc-decode"], {}, registered)
    engines = dict((w["host"], json.loads(w["content"])) for w in undeployed if w["path"] == ENGINES)
    before = dict((w["host"], json.loads(w["content"])) for w in deployed if w["path"] == ENGINES)
    assert engines["lc-router"] == [g for g in before["lc-router"] if g["labels"]["host"] != "lc-decode"]
    assert len(engines["prom"]) == 6 and not [g for g in engines["prom"] if "image_digest" in g["labels"]]
    # a deploy passes nothing read back: as before
    assert monitoring.file_sd_files(fleet, REFS, ["lc-router", "prom"], None, None, {}, None) == deployed
