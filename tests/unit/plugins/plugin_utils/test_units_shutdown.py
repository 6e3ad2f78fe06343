# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bug-report cases J and K, in the units: engines stop gracefully on every runtime, and the gate's budget is
what the card needs to load (the same number as the unit's TimeoutStartSec)."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as uo
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_times import gate_timeout, start_budget
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import (
    drain_s,
    engine_argv,
    render,
    stop_timeout,
)

from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units import (
    EX,
    _inst,
    _plan,
    directives,
    native_env,
    parse_exec,
)

FLAVOURS = {
    "native": {"runtime": "native"},
    "docker": {"runtime": "docker"},
    "podman": {"runtime": "podman"},
    "quadlet": {"runtime": "podman", "podman_quadlet": True},
}
SHUTDOWN = ["--shutdown-timeout", "30"]


def _engine_words(text, flavour):
    """The engine's argv after argv[0], as systemd (and Quadlet) hand it on."""
    if flavour == "quadlet":
        (value,) = directives(text, "Exec")
        return parse_exec(value)
    (value,) = directives(text, "ExecStart")
    words = parse_exec(value)
    return native_env(words)[1][1:] if flavour == "native" else words[words.index("--entrypoint") + 3:]


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_vllm_gets_a_shutdown_timeout_and_the_stop_outlasts_it_on_every_runtime(flavour):
    inst = _inst(EX, "vllm-aggregated")
    text = render(inst, FLAVOURS[flavour])
    assert _engine_words(text, flavour) == inst["argv"][1:] + SHUTDOWN
    (stop_sec,) = directives(text, "TimeoutStopSec")
    # TimeoutStopSec (90) > container stop timeout (60) > the engine's drain (30)
    assert int(stop_sec) == 90
    if flavour == "quadlet":
        # Quadlet writes KillMode=mixed itself; its ExecStop (podman rm -f) waits the container's --stop-timeout
        assert directives(text, "KillMode") == []
        args = parse_exec(directives(text, "PodmanArgs")[0])
        assert args[args.index("--stop-timeout") + 1] == "60"
        return
    assert directives(text, "KillMode") == ["mixed"]
    if flavour != "native":
        (start,) = directives(text, "ExecStart")
        (stop,) = directives(text, "ExecStop")
        words = parse_exec(start)
        assert words[words.index("--stop-timeout") + 1] == "60"
        assert parse_exec(stop)[1:4] == ["stop", "-t", "60"]


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_a_longer_drain_raises_every_stop_timeout_in_order(flavour):
    inst = _inst(EX, "vllm-aggregated")
    text = render(inst, dict(FLAVOURS[flavour], engine_shutdown_timeout_s=300))
    assert _engine_words(text, flavour)[-2:] == ["--shutdown-timeout", "300"]
    assert directives(text, "TimeoutStopSec") == ["345"]  # 300 + 15 (container) + 30 (unit)
    assert stop_timeout(inst, {"engine_shutdown_timeout_s": 300}) == 315


def test_the_cards_own_shutdown_timeout_is_kept_and_sets_the_stop():
    inst = copy.deepcopy(_inst(EX, "vllm-aggregated"))
    inst["argv"] += ["--shutdown-timeout=120"]
    assert engine_argv(inst) == inst["argv"]
    assert drain_s(inst) == 120 and stop_timeout(inst) == 135
    assert directives(render(inst, {"runtime": "docker"}), "TimeoutStopSec") == ["165"]
    inst["argv"][-1:] = ["--shutdown-timeout", "0"]
    assert engine_argv(inst) == inst["argv"] and drain_s(inst) == 0


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_sglang_argv_is_untouched_and_its_unbounded_drain_is_bounded_by_the_stop(flavour):
    inst = _inst(EX, "sglang-aggregated")
    text = render(inst, dict(FLAVOURS[flavour], engine_shutdown_timeout_s=100))
    assert _engine_words(text, flavour) == inst["argv"][1:]
    assert directives(text, "TimeoutStopSec") == ["145"]


def test_routers_keep_their_argv_and_the_minimum_stop():
    rtr = _inst(EX, "sglang-router", [("h", "10.0.0.1", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    assert engine_argv(rtr) == rtr["argv"] and drain_s(rtr) == 0
    text = render(rtr, {"runtime": "docker", "engine_shutdown_timeout_s": 300})
    assert directives(text, "TimeoutStopSec") == ["90"] and directives(text, "KillMode") == ["mixed"]


def test_zero_writes_no_flag_for_vllm_releases_without_it():
    inst = _inst(EX, "vllm-aggregated")
    assert engine_argv(inst, {"engine_shutdown_timeout_s": 0}) == inst["argv"]
    assert stop_timeout(inst, {"engine_shutdown_timeout_s": 0}) == 60


def test_the_drain_variable_is_read_and_checked():
    assert uo.host_options({"launchcard_engine_shutdown_timeout_s": "45"})["engine_shutdown_timeout_s"] == 45
    with pytest.raises(uo.OptionError, match="launchcard_engine_shutdown_timeout_s must be an integer"):
        uo.host_options({"launchcard_engine_shutdown_timeout_s": "soon"})
    with pytest.raises(uo.OptionError, match="launchcard_engine_shutdown_timeout_s must be 0 or more"):
        uo.host_options({"launchcard_engine_shutdown_timeout_s": -1})


# -- case K: the gate's budget -------------------------------------------------------------------
def test_case_k_the_example_cards_gate_waits_as_long_as_its_unit_may_take_to_start():
    """The example card (VLLM_ENGINE_READY_TIMEOUT_S=3600): its unit allows 3900 s; a flat 600 s gate failed a
    slow but healthy host (and an upgrade rolled it back)."""
    p = _plan(EX, [("h", "10.0.0.1", ["sglang-encoder", "vllm-aggregated"])])
    host = p["hosts"]["h"]
    vllm = [i for i in host["instances"] if i["launcher"] == "vllm"][0]
    assert directives(render(vllm, {"runtime": "docker"}), "TimeoutStartSec") == ["3900"]
    assert start_budget(vllm) == 3900
    assert gate_timeout(host, {"runtime": "docker"}) == 3900
    # the operator's override wins, as written
    assert gate_timeout(host, {}, 20) == 20 and gate_timeout(host, {}, "45") == 45
    assert gate_timeout(host, {}, "") == 3900


def test_the_budget_follows_the_unit_options_and_vllms_own_default():
    p = _plan(EX, [("h", "10.0.0.1", ["sglang-aggregated"])])
    assert gate_timeout(p["hosts"]["h"], {}) == 1800  # launchcard_unit_start_timeout_s's default
    assert gate_timeout(p["hosts"]["h"], {"start_timeout_s": 100}) == 300  # never below the start margin
    inst = copy.deepcopy(_inst(EX, "vllm-aggregated"))
    del inst["env"]["VLLM_ENGINE_READY_TIMEOUT_S"]
    # vllm/envs.py: a vLLM that is not told waits 600 s for its engine
    assert start_budget(inst, {"start_timeout_s": 100}) == 900
    # a record's instances carry no env
    assert gate_timeout({"instances": [{"engine": "vllm", "role": "aggregated"}]}, {"start_timeout_s": 1}) == 900
    assert gate_timeout({}, {}) == 1800


@pytest.mark.parametrize("bad", [0, -5, "soon"])
def test_a_bad_override_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match="gate timeout"):
        gate_timeout({}, {}, bad)
