# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host where the converge would change nothing (module_utils._systemd.settled_converge), from what the
preflight call reads there (module_utils._gate.converge_reads), and the filters that join them."""

from __future__ import annotations

import copy
import hashlib
import os

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils import _gate as gate
from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units_gate as units_gate
from ansible_collections.launchcard.inference.plugins.module_utils._systemd import (
    read_unit_files,
    render_env_file,
    settled_converge,
)

SVC = "launchcard-demo-vllm-aggregated-0.service"
CTR = "launchcard-demo-sglang-router-0.container"
UNITS = [{"name": SVC, "content": "[Service]\nExecStart=/bin/engine\n"},
         {"name": CTR, "content": "[Container]\nImage=x@sha256:" + "1" * 64 + "\n"}]
RUNNING = {"ActiveState": "active", "SubState": "running", "UnitFileState": "enabled", "NRestarts": "2"}


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def found(**kw):
    out = {"files": dict((u["name"], sha(u["content"])) for u in UNITS),
           "states": {SVC: dict(RUNNING, Id=SVC),
                      # a Quadlet unit is generated: enabled by its [Install] section, so "generated" is fine
                      "launchcard-demo-sglang-router-0.service": dict(RUNNING, UnitFileState="generated")},
           "dropins": [], "secrets_in_place": True,
           "endpoints": [{"name": SVC, "url": "http://h:8000/health", "probe": "health", "healthy": True,
                          "detail": "health 200", "elapsed_s": 0.0}],
           "then": [], "record_sha256": "r" * 64}
    out.update(kw)
    return out


def test_a_host_as_the_converge_would_leave_it_gets_the_converge_result_without_a_call():
    out = settled_converge(found(), UNITS, (), "r" * 64)
    assert out["settled"] is True and out["changed"] is False
    assert out["written"] == [] and out["removed"] == [] and not any(out["actions"].values())
    assert out["queued"] == {} and out["secrets_changed"] is False and out["daemon_reloaded"] is False
    assert [(u["name"], u["active_state"], u["n_restarts"]) for u in out["units"]] == [
        ("launchcard-demo-sglang-router-0.service", "active", 2), (SVC, "active", 2)]
    assert out["health"]["unhealthy"] == [] and out["health"]["recorded"] is False
    assert out["health"]["lock"] is None and out["health"]["then_gated"] is None
    assert [e["name"] for e in out["health"]["endpoints"]] == [SVC]


@pytest.mark.parametrize("drift", [
    {"files": {SVC: sha("[Service]\nExecStart=/bin/other\n"), CTR: sha(UNITS[1]["content"])}},  # a file to rewrite
    {"files": {SVC: sha(UNITS[0]["content"])}},  # a file to write
    {"files": dict(found()["files"], **{"launchcard-old.service": sha("x")})},  # a file to remove
    {"states": {SVC: dict(RUNNING, ActiveState="inactive")}},  # a unit to start
    {"states": {SVC: dict(RUNNING, ActiveState="failed")}},
    {"states": {SVC: dict(RUNNING, UnitFileState="disabled")}},  # a unit to enable
    {"dropins": ["/etc/systemd/system/%s.d/override.conf" % SVC]},  # a drop-in to remove
    {"secrets_in_place": False},
    {"endpoints": [{"name": SVC, "healthy": False, "detail": "no answer yet"}]},
    {"then": [{"name": "router", "healthy": False, "detail": "health answered 503"}]},
    {"record_sha256": None},  # no record on the host
    {"record_sha256": "s" * 64},  # another card or runtime recorded
])
def test_anything_the_converge_would_change_leaves_it_to_the_converge(drift):
    states = found()["states"]
    if "states" in drift:
        drift = dict(drift, states=dict(states, **drift["states"]))
    assert settled_converge(found(**drift), UNITS, (), "r" * 64) is None


def test_an_allowed_dropin_is_kept_and_the_second_stage_counts_as_gated():
    dropin = "/etc/systemd/system/%s.d/limits.conf" % SVC
    router = {"name": "router", "url": "http://h:30000/health", "probe": "health", "healthy": True}
    out = settled_converge(found(dropins=[dropin], then=[router]), UNITS, ["%s.d/limits.conf" % SVC], "r" * 64)
    assert out["dropins"] == {"kept": [dropin], "removed": []}
    assert out["health"]["then_gated"] is True and [e["name"] for e in out["health"]["endpoints"]] == [SVC, "router"]
    assert settled_converge(found(), UNITS, (), None)["health"]["recorded"] is None  # no record compared
    assert settled_converge(None, UNITS) is None


def test_state_sha256_is_equal_exactly_when_the_records_describe_the_same_state():
    a = state.build({SVC: "x"}, {"sha256": "c"}, [{"id": "i", "unit": SVC}], {"kind": "native"})
    b = state.build({SVC: "x"}, {"sha256": "c"}, [{"id": "i", "unit": SVC}], {"kind": "native"}, previous=a)
    assert state.same_state(a, b) and state.state_sha256(a) == state.state_sha256(b)
    c = state.build({SVC: "y"}, {"sha256": "c"}, [{"id": "i", "unit": SVC}], {"kind": "native"})
    assert not state.same_state(a, c) and state.state_sha256(a) != state.state_sha256(c)
    assert state.state_sha256(None) is None


def test_the_converge_and_the_preflight_read_the_same_unit_files(tmp_path):
    units, quadlet = tmp_path / "system", tmp_path / "containers"
    units.mkdir()
    quadlet.mkdir()
    (units / SVC).write_text("a")
    (units / "launchcard-x.timer").write_text("t")  # any file of the prefix: the converge prunes it
    (units / "launchcard-stray.container").write_text("q")  # a Quadlet file counts only in its own directory
    (units / "other.service").write_text("o")
    (quadlet / CTR).write_text("c")
    (quadlet / "launchcard-notes.txt").write_text("n")
    os.symlink(str(units / SVC), str(units / "launchcard-link.service"))
    assert read_unit_files(str(units), str(quadlet), "launchcard-") == {SVC: "a", "launchcard-x.timer": "t", CTR: "c"}
    assert read_unit_files(str(tmp_path / "none"), str(tmp_path / "none"), "launchcard-") == {}


def spec(tmp_path, **kw):
    out = dict((k, v.get("default")) for k, v in gate.READS_SPEC.items())
    out.update(directory=str(tmp_path / "system"), quadlet_directory=str(tmp_path / "containers"),
               dropin_directories=[str(tmp_path / "system"), str(tmp_path / "run")],
               secrets_file=str(tmp_path / "secrets.env"))
    out.update(kw)
    return out


def test_converge_reads_one_show_one_probe_each_and_no_digest_of_the_secrets(tmp_path):
    system = tmp_path / "system"
    (system / (SVC + ".d")).mkdir(parents=True)
    (system / SVC).write_text(UNITS[0]["content"])
    (system / (SVC + ".d") / "override.conf").write_text("[Service]\n")
    secret = render_env_file({"HF_TOKEN": "hf_secret"})
    (tmp_path / "secrets.env").write_text(secret)
    os.chmod(str(tmp_path / "secrets.env"), 0o600)
    calls, probes = [], []

    def run(argv):
        calls.append(argv)
        return 0, "Id=%s\nActiveState=active\nSubState=running\nUnitFileState=enabled\n" % SVC, ""

    def probe(url, payload=None, timeout=10.0):
        probes.append(url)
        return (200, "{}") if "8000" in url else (503, "")
    first = [{"name": SVC, "url": "http://127.0.0.1:8000/health", "probe": "health"}]
    then = [{"url": "http://127.0.0.1:30000/health", "probe": "health"}]
    record = state.build({SVC: UNITS[0]["content"]}, {"sha256": "c"}, [], {})
    out = gate.converge_reads(spec(tmp_path, secrets_sha256=sha(secret), endpoints=first, then=then), run,
                              lambda name: "/bin/" + name, record, probe=probe)
    assert out["files"] == {SVC: sha(UNITS[0]["content"])} and out["states"][SVC]["ActiveState"] == "active"
    assert len(calls) == 1 and calls[0][1:4] == ["show", "-p", ",".join(gate.SHOW_PROPERTIES)] and calls[0][-1] == SVC
    assert out["dropins"] == [str(system / (SVC + ".d") / "override.conf")]
    assert out["secrets_in_place"] is True and sha(secret) not in repr(out) and "hf_secret" not in repr(out)
    assert sorted(probes) == sorted([first[0]["url"], then[0]["url"]])
    assert [r["healthy"] for r in out["endpoints"]] == [True] and [r["healthy"] for r in out["then"]] == [False]
    assert out["then"][0]["name"] == then[0]["url"] and out["record_sha256"] == state.state_sha256(record)


def test_the_secrets_file_is_in_place_only_as_the_converge_would_leave_it(tmp_path):
    path = str(tmp_path / "secrets.env")
    text = render_env_file({"HF_TOKEN": "hf_a"})
    assert gate.secrets_in_place(path) and gate.secrets_in_place(path, remove=True)  # none, none wanted
    assert not gate.secrets_in_place(path, sha(text))  # one to write
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    assert not gate.secrets_in_place(path, sha(text)) and not gate.secrets_in_place(path)  # mode to mend
    os.chmod(path, 0o600)
    assert gate.secrets_in_place(path, sha(text)) and gate.secrets_in_place(path)
    assert not gate.secrets_in_place(path, sha(render_env_file({"HF_TOKEN": "hf_b"})))  # a rotated token
    assert not gate.secrets_in_place(path, remove=True)  # one to remove


PLAN = {"hosts": {"h1": {"card": "c.json", "instances": [
    {"id": "i0", "unit": SVC, "role": "aggregated", "health_url": "http://10.0.0.1:8000/health", "probe": "health",
     "served_model": "m", "address": "10.0.0.1:8000", "peers": []}]}}}


def test_the_reads_pass_the_secrets_digest_and_the_reading_decides_with_the_record():
    reads = units_gate.reads(PLAN["hosts"]["h1"], PLAN, "h1", {"launchcard_hf_token": "hf_a"})
    assert reads["secrets_sha256"] == sha(render_env_file({"HF_TOKEN": "hf_a"})) and not reads["remove_secrets"]
    assert [e["url"] for e in reads["endpoints"]] == ["http://10.0.0.1:8000/health"] and reads["then"] == []
    assert reads["secrets_file"] == "/etc/launchcard/secrets.env"
    none = units_gate.reads(PLAN["hosts"]["h1"], PLAN, "h1", {"launchcard_secrets_env_file": "/s"}, True)
    assert none["secrets_sha256"] == "" and none["remove_secrets"] and none["secrets_file"] == "/s"
    # a host the plan gives nothing (a monitoring host): its unit files and secrets are read, no endpoint probed,
    # and with none of the collection's units on it its converge is settled without a call
    bare = units_gate.reads(None, PLAN, "h9", {})
    assert bare["endpoints"] == [] and bare["then"] == [] and bare["secrets_file"] == "/etc/launchcard/secrets.env"
    assert units_gate.settled(found(files={}, states={}, endpoints=[]), [], [], None)["settled"] is True
    assert units_gate.settled(found(files={SVC: sha(UNITS[0]["content"])}, states={SVC: dict(RUNNING, Id=SVC)}),
                              [], [], None) is None
    record = {"card": {"sha256": "c"}, "instances": PLAN["hosts"]["h1"]["instances"], "runtime": {"kind": "native"},
              "release_lock": {"run_id": "r", "paths": []}}
    units = [dict(UNITS[0], instance="i0")]
    on_host = state.build({SVC: UNITS[0]["content"]}, record["card"], record["instances"], record["runtime"])
    reading = found(files={SVC: sha(UNITS[0]["content"])}, states={SVC: dict(RUNNING, Id=SVC)},
                    record_sha256=state.state_sha256(on_host))
    assert units_gate.settled(reading, units, [], record)["settled"] is True
    moved = copy.deepcopy(record)
    moved["runtime"]["image_refs"] = {"x": "x@sha256:" + "2" * 64}
    assert units_gate.settled(reading, units, [], moved) is None
    assert units_gate.settled(None, units, [], record) is None
