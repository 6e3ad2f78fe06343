# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts about the engines and tools the renderer keeps as data (_units.QUADLET_CONTAINER_KEYS,
CONTAINER_FLAG_CONFLICTS): what it writes obeys them, and what breaks them fails naming the variable."""

from __future__ import annotations

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as uo
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_spec import OptionError
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units import EX, _inst, _plan
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units_quadlet import sections

QUADLET = {"runtime": "podman", "podman_quadlet": True}


def _quadlet_files(**extra):
    p = _plan(EX, [("c", "10.0.0.3", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    insts = [i for hp in p["hosts"].values() for i in hp["instances"]] + [_inst(EX, "vllm-aggregated")]
    out = []
    for vendor in ("nvidia", "amd", "ascend", "none"):
        for rdma in (True, False):
            opts = dict(QUADLET, vendor=vendor, rdma=rdma, selinux=rdma, podman_auth_file="/etc/a.json",
                        podman_cgroups="disabled", extra_container_args=["--label", "x=1"], **extra)
            out += [units.render_quadlet(i, opts) for i in insts]
    return out


def test_quadlet_files_hold_only_keys_the_oldest_quadlet_podman_knows():
    # podman's generator drops a whole file over one key it does not know: every key written is 4.4's
    written = set()
    for text in _quadlet_files() + _quadlet_files(jit_cache=False):
        written |= {line.split("=", 1)[0] for line in sections(text)["Container"]}
    assert written == {"Image", "ContainerName", "Network", "Volume", "PodmanArgs", "Exec"}
    assert all(units.QUADLET_CONTAINER_KEYS[k] <= units.QUADLET_MIN_PODMAN for k in written)


@pytest.mark.parametrize("key", ["StopTimeout", "Entrypoint", "ShmSize", "GroupAdd", "NoSuchKey"])
def test_a_newer_or_unknown_quadlet_key_is_refused(key):
    with pytest.raises(ValueError, match="Quadlet key %s= is not in podman 4.4" % key):
        units._quadlet_key(key, "x")


def test_the_hosts_that_get_quadlet_files_have_the_release_of_every_key():
    assert uo.quadlet_podman("podman version 4.4.0") and not uo.quadlet_podman("4.3.1")
    assert min(units.QUADLET_CONTAINER_KEYS.values()) == units.QUADLET_MIN_PODMAN


@pytest.mark.parametrize("runtime,quadlet", [("docker", False), ("podman", False), ("podman", True)])
@pytest.mark.parametrize("extra", [["--shm-size", "16g"], ["--shm-size=16g"], ["--label", "a", "--shm-size", "1g"]])
def test_shm_size_beside_the_units_ipc_host_fails_naming_the_variable(runtime, quadlet, extra):
    # podman refuses --shm-size with --ipc host, docker ignores the size: either way not what the operator asked
    hv = {"launchcard_runtime": runtime, "launchcard_podman_quadlet": quadlet, "launchcard_extra_container_args": extra}
    message = "^launchcard_extra_container_args: --shm-size conflicts with --ipc host"
    with pytest.raises(OptionError, match=message):
        uo.host_options(hv)
    # the renderer checks the same rule, for options that reach it another way
    with pytest.raises(OptionError, match=message):
        units.render(_inst(EX, "vllm-aggregated"), {"runtime": runtime, "podman_quadlet": quadlet,
                                                    "extra_container_args": extra})


def test_native_units_and_other_extra_arguments_pass():
    extra = ["--shm-size", "16g"]
    assert uo.host_options({"launchcard_runtime": "native", "launchcard_extra_container_args": extra})
    for words in (["--label", "shm-size=1"], ["--ulimit", "stack=67108864"], ["--ipc=host"]):
        assert uo.host_options({"launchcard_extra_container_args": words})["extra_container_args"] == words


def test_the_conflict_is_seen_in_either_spelling_and_blames_an_option_before_the_units(monkeypatch):
    # a rule against a flag an option adds (as a new --shm-size option would) names that option's variable
    monkeypatch.setattr(units, "CONTAINER_FLAG_CONFLICTS", ((("--ipc", "host"), "--cgroups", "a test rule"),))
    with pytest.raises(OptionError, match="^launchcard_podman_cgroups: --cgroups conflicts with --ipc host"):
        uo.host_options({"launchcard_runtime": "podman", "launchcard_podman_cgroups": "disabled"})
    assert units._has_flag(["--ipc=host"], ("--ipc", "host")) and units._has_flag(["--ipc", "host"], ("--ipc", "host"))
    assert not units._has_flag(["--ipc", "private"], ("--ipc", "host")) and not units._has_flag(["--ipc"], ("--ipc", "host"))
    assert units._has_flag(["--shm-size=1g"], "--shm-size") and not units._has_flag(["--shm-sizes"], "--shm-size")
