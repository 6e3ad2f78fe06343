# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's engine argv checks on the controller (plugin_utils._argv_check): one check per image and argv, on
one host that holds the image; the report names the recipe, the flag, the engine's message and the near spelling."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _argv_check as ac
from ansible_collections.launchcard.inference.plugins.plugin_utils import _preflight_steps as preflight_steps

IMG = "lmsysorg/sglang:latest"
REF = "docker.io/lmsysorg/sglang@sha256:" + "a" * 64


def _inst(recipe, argv, launcher="sglang", image=IMG):
    return {"recipe": recipe, "launcher": launcher, "image": image, "argv": argv}


SERVE = ["sglang", "serve", "--model-path", "m", "--tp-size", "2"]
PLAN = {"hosts": {
    "b": {"instances": [_inst("agg", SERVE), _inst("rtr", ["sglang-router", "--port", "1"], launcher="router")]},
    "a": {"instances": [_inst("agg", SERVE)]},
    "c": {"instances": [_inst("agg", SERVE + ["--port", "31000"])]},
}}


def test_one_check_per_image_and_argv_on_a_host_that_holds_the_image():
    checks = ac.argv_checks(PLAN, {IMG: REF}, {"a": "podman", "b": "podman", "c": "podman"},
                            in_place={"b": [IMG], "c": [IMG]})
    assert [(c["hosts"], c["host"], c["image"], c["tokens"][-2:]) for c in checks] == [
        (["a", "b"], "b", REF, ["--tp-size", "2"]),  # a runs it too but does not hold the image: b checks it
        (["c"], "c", REF, ["--port", "31000"]),
    ]
    assert all(c["engine"] == "sglang" and c["recipes"] == ["agg"] for c in checks)  # the router is not checked


def test_no_host_holds_the_image_yet_and_native_hosts_check_with_their_virtualenv():
    checks = ac.argv_checks(PLAN, {IMG: REF}, {"a": "docker", "b": "docker", "c": "native"},
                            pythons={"c": "/opt/v/bin/python"})
    assert [(c["host"], c["runtime"], c["python"]) for c in checks] == [
        (None, "docker", None), ("c", "native", "/opt/v/bin/python")]
    refusals, warnings = ac.argv_check_report(checks, [{"key": checks[1]["key"], "status": "ok"}])
    assert refusals == [] and warnings == [
        "argv of agg not checked against SGLang: no host holds %s yet, nor has its container engine installed" % REF]


def test_a_rejected_flag_names_the_recipe_flag_message_and_near_spelling():
    checks = ac.argv_checks(PLAN, {IMG: REF}, {"a": "podman", "b": "podman", "c": "podman"},
                            in_place={"a": [IMG], "c": [IMG]})
    msg = "sglang serve: error: unrecognized arguments: --tp-sise"
    refusals, warnings = ac.argv_check_report(checks, [
        {"key": checks[0]["key"], "status": "rejected", "flag": "--tp-sise", "message": msg,
         "near": ["--tp-size"], "version": "0.5.23"},
        {"key": checks[1]["key"], "status": "unavailable", "message": "Error: image not known"}])
    assert refusals == ["recipe agg: SGLang 0.5.23 rejects --tp-sise: %s (did you mean --tp-size?)" % msg]
    assert warnings == ["argv of agg not checked on c: Error: image not known"]


def test_a_rejected_flag_names_its_card_field():
    argv = ["sglang", "serve", "--model-path", "m", "--tp-sise", "2", "--dsa-prefil-backend=tilelang", "--mem-fraction 0.8"]
    plan = {"hosts": {"p": {"card": "k", "instances": [dict(_inst("prefill", argv), recipe_index=4)]}}}
    cards = {"k": {"recipes": [{"index": 0, "argv": ["vllm", "serve"]}, {"index": 4, "argv": argv}]}}
    checks = ac.argv_checks(plan, {IMG: REF}, {"p": "podman"}, in_place={"p": [IMG]})
    out = {}
    for flag in ("--tp-sise", "--dsa-prefil-backend", "--added-by-an-override", "--mem-fraction 0.8"):
        res = [{"key": checks[0]["key"], "status": "rejected", "flag": flag, "message": "m"}]
        out[flag] = ac.argv_check_report(checks, res, cards)[0][0].split(":")[0]
    assert out == {"--tp-sise": "recipe prefill (envs[4].argv[4])",
                   "--dsa-prefil-backend": "recipe prefill (envs[4].argv[6])",
                   "--added-by-an-override": "recipe prefill (envs[4])",
                   # one word holding a flag and its value (interpret names it whole)
                   "--mem-fraction 0.8": "recipe prefill (envs[4].argv[7])"}
    # without the cards, the recipe's index in its card (from the plan) still names envs[i]
    assert ac.argv_check_report(checks, res)[0][0].startswith("recipe prefill (envs[4]): SGLang rejects")


@pytest.mark.parametrize("message,field", [
    # argparse's _check_value and _get_value (Lib/argparse.py): the refused value is the word after the flag
    ("sglang serve: error: argument --dsa-prefill-backend: invalid choice: '$(touch /tmp/x)' (choose from 'fa3', "
     "'tilelang')", "envs[4].argv[7]"),
    ("sglang serve: error: argument --dsa-prefill-backend: invalid int value: '$(touch /tmp/x)'", "envs[4].argv[7]"),
    # a value that is not the next word, or a message about the flag itself: the flag's word
    ("sglang serve: error: argument --dsa-prefill-backend: invalid choice: 'other' (choose from 'fa3')", "envs[4].argv[6]"),
    ("sglang serve: error: argument --dsa-prefill-backend: expected one argument", "envs[4].argv[6]"),
])
def test_a_refused_value_names_its_own_word(message, field):
    argv = ["sglang", "serve", "--model-path", "m", "--tp-size", "2", "--dsa-prefill-backend", "$(touch /tmp/x)"]
    plan = {"hosts": {"p": {"card": "k", "instances": [dict(_inst("prefill", argv), recipe_index=4)]}}}
    cards = {"k": {"recipes": [{"index": 4, "argv": argv}]}}
    checks = ac.argv_checks(plan, {IMG: REF}, {"p": "podman"}, in_place={"p": [IMG]})
    res = [{"key": checks[0]["key"], "status": "rejected", "flag": "--dsa-prefill-backend", "message": message}]
    assert ac.argv_check_report(checks, res, cards)[0][0].startswith("recipe prefill (%s): SGLang rejects" % field)


def test_vllm_is_checked_with_the_flags_its_unit_adds():
    """The parser sees the argv the unit runs: vLLM's --shutdown-timeout (plugin_utils._units.engine_argv), which a
    vLLM before 0.18 refuses, and none when the host's drain is 0."""
    vllm = _inst("v", ["vllm", "serve", "m", "--revision", "r"], launcher="vllm", image="vllm/vllm-openai:v0.11.2")
    plan = {"hosts": {"a": {"instances": [vllm]}, "b": {"instances": [vllm]}}}
    checks = ac.argv_checks(plan, {}, {"a": "podman", "b": "podman"},
                            options={"b": {"engine_shutdown_timeout_s": 0}})
    assert sorted((c["hosts"], c["tokens"]) for c in checks) == [
        (["a"], ["m", "--revision", "r", "--shutdown-timeout", "30"]), (["b"], ["m", "--revision", "r"])]


def test_first_deploy_one_planned_host_with_the_engine_pulls_the_image_for_the_check():
    runtimes = {"a": "podman", "b": "podman", "c": "podman"}
    checks = ac.argv_checks(PLAN, {IMG: REF}, runtimes, engines={"a": None, "b": "/usr/bin/podman", "c": "/usr/bin/podman"},
                            pull=True)
    # a runs the first argv but has no podman yet: b, which runs it too, pulls; c pulls for its own argv
    assert [(c["hosts"], c["host"], c["pull"], c["image"]) for c in checks] == [
        (["a", "b"], "b", True, REF), (["c"], "c", True, REF)]
    # a host that holds the image still checks it without a pull
    held = ac.argv_checks(PLAN, {IMG: REF}, runtimes, in_place={"a": [IMG]}, engines={"b": "/usr/bin/podman"},
                          pull=True)
    assert (held[0]["host"], held[0]["pull"]) == ("a", False)
    msg = "sglang serve: error: unrecognized arguments: --tp-sise"
    refusals, warnings = ac.argv_check_report(checks, [
        {"key": checks[0]["key"], "status": "rejected", "flag": "--tp-sise", "message": msg, "near": ["--tp-size"],
         "pulled": True},
        {"key": checks[1]["key"], "status": "ok", "pulled": True}])
    assert refusals == ["recipe agg: SGLang rejects --tp-sise: %s (did you mean --tp-size?) [%s pulled on b for the "
                        "check, removed]" % (msg, REF)]
    assert warnings == []
    # c pulled for an accepted argv: its image goes too, since the refusal stops the run
    assert ac.argv_pulls_kept(checks, [{"key": checks[0]["key"], "status": "rejected", "pulled": True},
                                       {"key": checks[1]["key"], "status": "ok", "pulled": True}]) == [
        {"host": "c", "runtime": "podman", "image": REF}]


def test_check_mode_or_a_run_that_stops_pulls_nothing_and_warns():
    checks = ac.argv_checks(PLAN, {IMG: REF}, {"a": "podman", "b": "podman", "c": "podman"},
                            engines={"a": "/usr/bin/podman", "b": "/usr/bin/podman", "c": "/usr/bin/podman"})
    assert [(c["host"], c["pull"]) for c in checks] == [(None, False), (None, False)]
    assert ac.argv_check_report(checks, [])[1][0] == (
        "argv of agg not checked against SGLang: no host holds %s yet, and this run pulls none for the check" % REF)


def test_an_argv_and_image_every_host_already_runs_needs_no_check():
    """A no-op run: each host's record names the argv and the digest it runs; nothing to check, no round trip."""
    runtimes = {"a": "podman", "b": "podman", "c": "native"}
    recorded = {"a": {"argv": {"agg": SERVE}, "image_refs": {IMG: REF}},
                "b": {"argv": {"agg": SERVE, "rtr": ["sglang-router"]}, "image_refs": {IMG: REF}},
                "c": {"argv": {"agg": SERVE + ["--port", "31000"]}, "image_refs": {}}}
    assert ac.argv_checks(PLAN, {IMG: REF}, runtimes, in_place={"a": [IMG], "b": [IMG]}, recorded=recorded) == []
    # a new digest on one host (b), or an argv a host does not run yet: checked again
    moved = dict(recorded, b={"argv": {"agg": SERVE}, "image_refs": {IMG: REF[:-1] + "b"}})
    again = ac.argv_checks(PLAN, {IMG: REF}, runtimes, in_place={"a": [IMG]}, recorded=moved)
    assert [(c["hosts"], c["host"]) for c in again] == [(["b"], None)]
    changed = dict(recorded, c={"argv": {"agg": SERVE}})
    assert [(c["hosts"], c["host"]) for c in ac.argv_checks(PLAN, {IMG: REF}, runtimes, pythons={"c": "/v/bin/python"},
                                                            recorded=changed)] == [
        (["c"], "c")]


def _fleet_checks(plan, image_refs, hostvars, hosts, native_python, pull=False):
    """The argv checks from each host's variables and preflight result (the fleet step's argv_step reads them so)."""
    return preflight_steps.argv_checks(plan, image_refs, dict((h, hostvars[h]) for h in hosts if h in hostvars),
                                       dict((h, hostvars.get(h, {}).get("preflight_result") or {}) for h in hosts),
                                       hosts, native_python, pull)


def test_the_checks_read_engines_records_and_failed_checks_from_each_hosts_preflight_result():

    def hv(runtime="podman", podman="5.4.2", failed=(), argv=None, refs=None):
        return {"launchcard_runtime": runtime, "preflight_result": {
            "failed_checks": list(failed), "recorded_argv": argv or {}, "recorded_image_refs": refs or {},
            "facts": {"engines": {"docker": None, "podman_version": podman}, "image_disk": {"in_place": []}}}}

    hostvars = {"a": hv(podman=None), "b": hv(failed=["image_disk"]),
                "c": dict(hv(), launchcard_podman_cgroups="disabled", launchcard_podman_keyring="false")}
    checks = _fleet_checks(PLAN, {IMG: REF}, hostvars, ["a", "b", "c"], "/v/bin/python", pull=True)
    # a has no podman yet, b failed a check (it is not changed): nobody pulls the first argv; c pulls its own
    assert [(c["hosts"], c["host"], c["pull"]) for c in checks] == [(["a", "b"], None, False), (["c"], "c", True)]
    # c's container runs as its units' do (--cgroups) under the runtime role's keyring setting, not written yet
    assert checks[1]["run_args"] == ["--cgroups=disabled"] and "keyring = false" in checks[1]["containers_conf"]
    assert "nor has its container engine installed" in checks[0]["reason"]
    # a no-op run: every host's record names its argv and digest, nothing to check
    done = dict((h, hv(argv={"agg": i[0]["argv"]}, refs={IMG: REF})) for h, i in
                ((h, PLAN["hosts"][h]["instances"]) for h in PLAN["hosts"]))
    assert _fleet_checks(PLAN, {IMG: REF}, done, ["a", "b", "c"], "/v/bin/python", pull=True) == []
    # a --limit run on c: only c's argv, with c's reading; a and b are not in the run (their argv are not checked,
    # nor said to be unchecked)
    limited = _fleet_checks(PLAN, {IMG: REF}, hostvars, ["c"], "/v/bin/python", pull=True)
    assert [(c["hosts"], c["host"], c["reason"]) for c in limited] == [(["c"], "c", None)]
    assert _fleet_checks(PLAN, {IMG: REF}, dict(done, c=hostvars["c"]), ["a"], "/v/bin/python", pull=True) == []


def test_a_flag_the_unit_adds_is_checked_until_the_hosts_unit_runs_it():
    """The record's words are the unit's command line: a vLLM unit that runs --shutdown-timeout 30 needs no check;
    one recorded before the collection added it (the same card argv and image) is checked again."""
    vllm = _inst("v", ["vllm", "serve", "m", "--revision", "r"], launcher="vllm", image=IMG)
    plan = {"hosts": {"a": {"instances": [vllm]}}}
    unit = ["/usr/bin/podman", "run", "--rm", "--entrypoint", "vllm", REF, "serve", "m", "--revision", "r"]
    ran = {"a": {"argv": {"v": unit + ["--shutdown-timeout", "30"]}, "image_refs": {IMG: REF}}}
    assert ac.argv_checks(plan, {IMG: REF}, {"a": "podman"}, in_place={"a": [IMG]}, recorded=ran) == []
    before = {"a": {"argv": {"v": unit}, "image_refs": {IMG: REF}}}
    checks = ac.argv_checks(plan, {IMG: REF}, {"a": "podman"}, in_place={"a": [IMG]}, recorded=before)
    assert [(c["host"], c["tokens"][-2:]) for c in checks] == [("a", ["--shutdown-timeout", "30"])]


def test_a_first_native_deploy_has_no_virtualenv_to_check_with_yet():

    plan = {"hosts": {"c": PLAN["hosts"]["c"]}}
    bare = {"c": {"launchcard_runtime": "native", "preflight_result": {"native_stamps": [], "facts": {}}}}
    checks = _fleet_checks(plan, {}, bare, ["c"], "/v/bin/python", pull=True)
    assert [(c["host"], c["pull"]) for c in checks] == [(None, False)]
    assert ac.argv_check_report(checks, [])[1] == [
        "argv of agg not checked against SGLang: no host has its virtualenv yet (the runtime role installs the "
        "engine after preflight)"]
    installed = {"c": {"launchcard_runtime": "native", "preflight_result": {"native_stamps": [".launchcard-1"]}}}
    assert [c["host"] for c in _fleet_checks(plan, {}, installed, ["c"], "/v/bin/python")] == ["c"]


@pytest.mark.parametrize("runtime, quadlet", [("podman", False), ("podman", True), ("docker", False),
                                              ("native", False)])
def test_the_units_the_collection_writes_read_back_as_running_their_argv(runtime, quadlet):
    """A record of the real unit files (service, Quadlet) vouches for the argv they run, vLLM's added flag included:
    the no-op run after a deploy checks nothing."""
    from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units
    from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
    from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    with open(os.path.join(root, "cards", "glm-5.3-flash.json")) as f:
        card = load_card(f.read(), "glm-5.3-flash.json")
    p = plan(card, normalize_placement([("a", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"]}),
                                        ("b", {"address": "10.0.0.2", "recipes": ["sglang-prefill", "sglang-decode"]})]))
    opts = {"runtime": runtime, "weights_dir": "/srv/hf", "secrets_env_file": "/etc/launchcard/secrets.env",
            "podman_quadlet": quadlet, "podman_cgroups": "disabled"}
    refs = dict((i["image"], i["image"].split(":")[0] + "@sha256:" + "c" * 64)
                for hp in p["hosts"].values() for i in hp["instances"])
    recorded = {}
    for host, hp in p["hosts"].items():
        rendered = units.host_units(hp, dict(opts, image_refs=refs))
        record = {"version": 1, "card": {}, "previous": None, "runtime": {"kind": runtime, "image_refs": refs},
                  "instances": hp["instances"],
                  "units": dict((u["name"], {"sha256": "0", "text": u["content"]}) for u in rendered)}
        recorded[host] = {"argv": state.recorded_argv(json.dumps(record)), "image_refs": refs}
    engines = dict((h, opts) for h in p["hosts"])
    runtimes = dict((h, runtime) for h in p["hosts"])
    pythons = dict((h, "/v/bin/python") for h in p["hosts"]) if runtime == "native" else None
    assert ac.argv_checks(p, refs, runtimes, pythons, options=engines, recorded=recorded) == []
    # the same units, before the collection added vLLM's --shutdown-timeout: vLLM's argv is checked again
    longer = dict((h, dict(o, engine_shutdown_timeout_s=45)) for h, o in engines.items())
    again = ac.argv_checks(p, refs, runtimes, pythons, options=longer, recorded=recorded)
    assert [(c["engine"], c["tokens"][-2:]) for c in again] == [("vllm", ["--shutdown-timeout", "45"])]
