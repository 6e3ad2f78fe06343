# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 42, "Privileges and bounded values": AMD containers get no extra capability unless asked, numbers from
inventories and cards stay within what systemd parses, and path variables cannot turn into a systemd prefix, a second
volume or a place the native units' hardening hides. Refused on the controller (the unit options, the renderer),
naming the variable or field. docs/untrusted-input.md lists these cases."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as uo
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_spec as spec
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_escape import UnsafeValue
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import render
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units import (
    EX, _inst, directives, parse_exec)

AMD_EXTRA = ("SYS_PTRACE", "seccomp=unconfined")


def _amd_words(host_vars):
    opts = uo.host_options(dict({"launchcard_accelerator_vendor": "amd"}, **host_vars))
    text = render(_inst(EX, "vllm-aggregated"), opts)
    (value,) = directives(text, "PodmanArgs") or directives(text, "ExecStart")
    return parse_exec(value)


@pytest.mark.parametrize("runtime", [{"launchcard_runtime": "docker"}, {"launchcard_runtime": "podman"},
                                     {"launchcard_runtime": "podman", "launchcard_podman_quadlet": True}])
def test_amd_containers_get_no_ptrace_or_unconfined_seccomp_unless_asked(runtime):
    words = _amd_words(runtime)
    assert "/dev/kfd" in words and not [w for w in words if w in AMD_EXTRA], words
    asked = _amd_words(dict(runtime, launchcard_amd_container_unconfined=True))
    assert asked[asked.index("SYS_PTRACE") - 1] == "--cap-add"
    assert asked[asked.index("seccomp=unconfined") - 1] == "--security-opt"


@pytest.mark.parametrize("variable", ["launchcard_unit_start_timeout_s", "launchcard_unit_stop_timeout_s",
                                      "launchcard_engine_shutdown_timeout_s"])
def test_a_timeout_systemd_would_ignore_is_refused_naming_the_variable(variable):
    with pytest.raises(spec.OptionError, match="^%s must be %d or less" % (variable, spec.MAX_SECONDS)):
        uo.host_options({variable: "9" * 400})
    # the largest one accepted still renders time spans systemd parses (TimeoutStartSec=, TimeoutStopSec=)
    opts = uo.host_options({variable: spec.MAX_SECONDS, "launchcard_runtime": "docker"})
    text = render(_inst(EX, "vllm-aggregated"), opts)
    for key in ("TimeoutStartSec", "TimeoutStopSec"):
        (value,) = directives(text, key)
        assert int(value) <= spec.SYSTEMD_MAX_SECONDS, (key, value)
        if shutil.which("systemd-analyze"):
            res = subprocess.run(["systemd-analyze", "timespan", value], capture_output=True, text=True, check=False)
            assert res.returncode == 0, (key, value, res.stderr)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemds_own_limit_is_the_one_written_down():
    ok = subprocess.run(["systemd-analyze", "timespan", str(spec.SYSTEMD_MAX_SECONDS)], capture_output=True, check=False)
    over = subprocess.run(["systemd-analyze", "timespan", str(spec.SYSTEMD_MAX_SECONDS + 1)], capture_output=True,
                          check=False)
    assert ok.returncode == 0 and over.returncode != 0


@pytest.mark.parametrize("variable,value", [("launchcard_amd_render_gid", 1 << 32),
                                            ("launchcard_ascend_device_count", 10 ** 9),
                                            ("launchcard_ascend_devices", [0, 10 ** 9])])
def test_ids_and_counts_are_bounded_naming_the_variable(variable, value):
    with pytest.raises(spec.OptionError, match="^%s" % variable):
        uo.host_options({variable: value})


def test_a_card_shutdown_timeout_systemd_cannot_carry_is_refused():
    inst = _inst(EX, "vllm-aggregated")
    inst = dict(inst, argv=inst["argv"] + ["--shutdown-timeout", "9" * 400])
    with pytest.raises(UnsafeValue, match="argv --shutdown-timeout"):
        render(inst, {"runtime": "docker"})


@pytest.mark.parametrize("variable,value,message", [
    ("launchcard_runtime_native_venv", "+/opt/v", "an absolute path"),  # ExecStart=+... runs the engine as full root
    ("launchcard_runtime_native_venv", "-/opt/v", "an absolute path"),
    ("launchcard_runtime_native_venv", "/opt/a=b", "without ':', '='"),  # env(1) would take it as an assignment
    ("launchcard_weights_dir", "/var/lib/x:/etc", "without ':'"),  # a second volume: the host's /etc in the container
    ("launchcard_weights_dir", "/var/lib/x/../../etc", "'..'"),
    ("launchcard_docker_bin", "@/usr/bin/docker", "an absolute path"),
    ("launchcard_secrets_env_file", "relative.env", "an absolute path"),
])
def test_path_variables_are_absolute_plain_paths(variable, value, message):
    with pytest.raises(spec.OptionError, match="^%s must be .*%s" % (variable, re.escape(message))):
        uo.host_options({variable: value})


@pytest.mark.parametrize("weights", ["/tmp/models", "/var/tmp/m", "/home/ops/models", "/root/hf", "/run/user/0/hf"])
def test_native_weights_where_the_hardening_hides_them_are_refused(weights):
    with pytest.raises(spec.OptionError, match="^launchcard_weights_dir: .* hides from the engine"):
        uo.host_options({"launchcard_runtime": "native", "launchcard_weights_dir": weights})
    with pytest.raises(spec.OptionError, match="launchcard_weights_dir"):
        render(_inst(EX, "vllm-aggregated"), {"runtime": "native", "weights_dir": weights})
    # a container's weights are mounted by the runtime's daemon, outside any unit hardening: allowed
    assert uo.host_options({"launchcard_runtime": "docker", "launchcard_weights_dir": weights})["weights_dir"] == weights


def test_a_path_that_only_starts_like_a_hidden_one_is_not_under_it():
    assert uo.host_options({"launchcard_runtime": "native", "launchcard_weights_dir": "/tmpfs/models"})
