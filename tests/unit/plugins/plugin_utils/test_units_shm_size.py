# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""launchcard_container_shm_size: a container's own /dev/shm of that size (``--shm-size``) in place of the host's
(``--ipc host``), in docker and podman ``run`` units and Quadlet files alike; a bad size and ``--ipc host`` beside
it fail naming the variable."""

from __future__ import annotations

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as uo
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_spec import OptionError
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units import (
    EX, _inst, directives, parse_exec)
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units_quadlet import sections

VAR = "launchcard_container_shm_size"


def _podman_host(version, **variables):
    """A podman host's variables with preflight's facts of its podman ``version`` (Debian 13)."""
    facts = {"os": {"id": "debian", "version_id": "13"}, "engines": {"docker": None, "podman_version": version}}
    return dict({"launchcard_runtime": "podman", "preflight_result": {"facts": facts}}, **variables)


def _run_words(text):
    """The container's ``run`` options: ExecStart='s words of a ``run`` unit, PodmanArgs='s of a Quadlet file."""
    (line,) = directives(text, "PodmanArgs") or directives(text, "ExecStart")
    return parse_exec(line)


def _ipc_and_shm(words):
    """The IPC flags of ``words`` and their values."""
    flags = ("--ipc", "--shm-size")
    return [w for i, w in enumerate(words) if w in flags or (i and words[i - 1] in flags)]


@pytest.mark.parametrize("runtime", ["docker", "podman"])
def test_run_units_get_shm_size_in_place_of_ipc_host(runtime):
    inst = _inst(EX, "vllm-aggregated")
    run, dummy, dummy = units.command(inst, {"runtime": runtime, "container_shm_size": "16g"})
    assert run[:2] == ["/usr/bin/%s" % runtime, "run"] and _ipc_and_shm(run) == ["--shm-size", "16g"]
    assert run.index("--shm-size") < run.index(inst["image"])  # a run option, before the image
    assert _ipc_and_shm(_run_words(units.render(inst, {"runtime": runtime, "container_shm_size": "16g"}))) == [
        "--shm-size", "16g"]
    # unset: the host's IPC namespace, as before
    assert _ipc_and_shm(_run_words(units.render(inst, {"runtime": runtime}))) == ["--ipc", "host"]


@pytest.mark.parametrize("version,quadlet", [("4.3.1", False), ("4.4.0", True), ("4.7.0", True), ("5.4.2", True)])
def test_podman_hosts_of_each_release_get_it_in_the_unit_they_run(version, quadlet):
    inst = _inst(EX, "vllm-aggregated")
    opts = uo.host_options(_podman_host(version, **{VAR: "16g"}))
    assert opts["podman_quadlet"] is quadlet and opts["container_shm_size"] == "16g"
    unit = units.host_units({"instances": [inst]}, opts)[0]  # its liveness units follow
    assert unit["name"].endswith(".container" if quadlet else ".service")
    assert _ipc_and_shm(_run_words(unit["content"])) == ["--shm-size", "16g"]
    if quadlet:
        # ShmSize= is podman 4.7's (QUADLET_CONTAINER_KEYS): a 4.4-4.6 generator would drop the whole file, so every
        # release gets PodmanArgs=, which each hands to podman run
        keys = {line.split("=", 1)[0] for line in sections(unit["content"])["Container"]}
        assert "ShmSize" not in keys and "PodmanArgs" in keys
        assert units.QUADLET_CONTAINER_KEYS["ShmSize"] > units.QUADLET_MIN_PODMAN


def test_native_units_do_not_change():
    inst = _inst(EX, "vllm-aggregated")
    opts = uo.host_options({"launchcard_runtime": "native", VAR: "16g"})
    assert units.render(inst, opts) == units.render(inst, dict(opts, container_shm_size=None))
    assert "shm" not in units.render(inst, opts)


@pytest.mark.parametrize("raw,out", [("16g", "16g"), ("512M", "512M"), ("1.5GiB", "1.5GiB"), ("64mb", "64mb"),
                                     ("1073741824", "1073741824"), (1073741824, "1073741824"), (" 8g ", "8g")])
def test_sizes_docker_and_podman_both_parse_pass(raw, out):
    assert uo.host_options({VAR: raw})["container_shm_size"] == out


@pytest.mark.parametrize("raw,why", [
    ("16 gigs", "must be a size such as 16g"), ("16 g", "must be a size"), ("-1g", "must be a size"),
    ("g", "must be a size"), ("16gib2", "must be a size"), ("16x", "must be a size"), ("1e9", "must be a size"),
    ("0", "must be above 0"), ("0.0m", "must be above 0"), (["16g"], "must be a string"), (True, "must be a string"),
])
def test_a_bad_size_fails_naming_the_variable(raw, why):
    message = "^%s %s" % (VAR, why)
    with pytest.raises(OptionError, match=message):
        uo.host_options({"launchcard_runtime": "docker", VAR: raw})
    # the renderer's own check is the same one
    with pytest.raises(OptionError, match=message):
        units.render(_inst(EX, "vllm-aggregated"), {"runtime": "docker", "container_shm_size": raw})


@pytest.mark.parametrize("runtime,quadlet", [("docker", False), ("podman", False), ("podman", True)])
@pytest.mark.parametrize("extra", [["--ipc", "host"], ["--ipc=host"], ["--label", "a", "--ipc", "host"]])
def test_ipc_host_beside_it_fails_naming_it(runtime, quadlet, extra):
    # podman refuses --shm-size in the host's IPC namespace, docker ignores the size (CONTAINER_FLAG_CONFLICTS)
    hv = {"launchcard_runtime": runtime, "launchcard_podman_quadlet": quadlet, VAR: "16g",
          "launchcard_extra_container_args": extra}
    message = "^%s: --shm-size conflicts with --ipc host \\(podman refuses" % VAR
    with pytest.raises(OptionError, match=message):
        uo.host_options(hv)
    with pytest.raises(OptionError, match=message):
        units.render(_inst(EX, "vllm-aggregated"), {"runtime": runtime, "podman_quadlet": quadlet,
                                                    "container_shm_size": "16g", "extra_container_args": extra})


def test_the_conflict_is_the_rule_table_not_a_check_of_its_own(monkeypatch):
    hv = {"launchcard_runtime": "docker", VAR: "16g", "launchcard_extra_container_args": ["--ipc=private"]}
    assert uo.host_options(hv)["extra_container_args"] == ["--ipc=private"]  # another IPC mode is the operator's
    monkeypatch.setattr(units, "CONTAINER_FLAG_CONFLICTS", ())
    hv["launchcard_extra_container_args"] = ["--ipc", "host"]
    assert uo.host_options(hv)["container_shm_size"] == "16g"
