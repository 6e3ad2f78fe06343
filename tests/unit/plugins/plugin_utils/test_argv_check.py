# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's engine argv checks on the controller (plugin_utils._argv_check): one check per image and argv, on
one host that holds the image; the report names the recipe, the flag, the engine's message and the near spelling."""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.plugin_utils import _argv_check as ac

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
    assert refusals == [] and warnings == ["argv of agg not checked against SGLang: no host holds %s yet" % REF]


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


def test_vllm_is_checked_with_the_flags_its_unit_adds():
    """The parser sees the argv the unit runs: vLLM's --shutdown-timeout (plugin_utils._units.engine_argv), which a
    vLLM before 0.18 refuses, and none when the host's drain is 0."""
    vllm = _inst("v", ["vllm", "serve", "m", "--revision", "r"], launcher="vllm", image="vllm/vllm-openai:v0.11.2")
    plan = {"hosts": {"a": {"instances": [vllm]}, "b": {"instances": [vllm]}}}
    checks = ac.argv_checks(plan, {}, {"a": "podman", "b": "podman"},
                            options={"b": {"engine_shutdown_timeout_s": 0}})
    assert sorted((c["hosts"], c["tokens"]) for c in checks) == [
        (["a"], ["m", "--revision", "r", "--shutdown-timeout", "30"]), (["b"], ["m", "--revision", "r"])]


def test_a_podman_check_runs_with_the_cgroups_mode_of_the_host_that_runs_it():
    """The units run podman with the host's launchcard_podman_cgroups (--cgroups=disabled where the host cannot
    create cgroups, as in the sandbox); the check, a podman run too, runs as they do on the host it is given to."""
    checks = ac.argv_checks(PLAN, {IMG: REF}, {"a": "podman", "b": "podman", "c": "podman"},
                            in_place={"b": [IMG], "c": [IMG]},
                            options={"b": {"podman_cgroups": "disabled"}, "c": {"podman_cgroups": "enabled"}})
    assert [(c["host"], c["podman_cgroups"]) for c in checks] == [("b", "disabled"), ("c", "enabled")]
