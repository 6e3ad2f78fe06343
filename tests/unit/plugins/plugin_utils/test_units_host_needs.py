# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue #25 items 3-7, read from the rendered files of every flavour (docker, podman run, Quadlet, native):
RDMA where the plan moves data between hosts, SELinux labels, the uvm/ctl device nodes of native NVIDIA
engines, the wait for usable accelerators before an engine starts, and a compile/JIT cache per engine and image.
The readiness helper's accelerator wait runs for real against the sandbox's stand-in nvidia-smi.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as uo
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import render

from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units import (
    engine_environment, parse_exec)
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units_hardening import (
    INST, ROOT, WAIT_READY_SRC, _directives)

FLAVOURS = {"docker": {"runtime": "docker"}, "podman": {"runtime": "podman"},
            "quadlet": {"runtime": "podman", "podman_quadlet": True}, "native": {"runtime": "native"}}
CONTAINERS = ("docker", "podman", "quadlet")
PD = ("sglang-prefill", "sglang-decode")
STANDIN_SMI = os.path.join(ROOT, "tests", "sandbox", "nvidia_smi_standin.py")


def _values(text, section, key):
    return [line.split("=", 1)[1] for line in _directives(text, section) if line.startswith(key + "=")]


def _run_words(text, flavour):
    """The container's run options: ExecStart= of a run unit, PodmanArgs= of a Quadlet file."""
    if flavour == "quadlet":
        return parse_exec(_values(text, "Container", "PodmanArgs")[0])
    joined = text.replace(" \\\n    ", " ")  # systemd.syntax(7): a continuation line joins with a space
    return parse_exec(_values(joined, "Service", "ExecStart")[0])


def _volumes(text, flavour):
    if flavour == "quadlet":
        return _values(text, "Container", "Volume")
    words = _run_words(text, flavour)
    return [words[i + 1] for i, w in enumerate(words) if w == "-v"]


def _render(recipe, flavour, **opts):
    return render(INST[recipe], dict(FLAVOURS[flavour], vendor=opts.pop("vendor", "nvidia"), **opts))


# -- item 3: RDMA ------------------------------------------------------------------------------------------
def _has_rdma(text, flavour):
    if flavour == "native":
        service = _directives(text, "Service")
        return "LimitMEMLOCK=infinity" in service and "AmbientCapabilities=CAP_IPC_LOCK" in service and \
            "CapabilityBoundingSet=CAP_IPC_LOCK" in service
    words = _run_words(text, flavour)
    pairs = set(zip(words, words[1:]))
    return {("--device", "/dev/infiniband"), ("--ulimit", "memlock=-1:-1"), ("--cap-add", "IPC_LOCK")} <= pairs


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_pd_engines_get_rdma_on_hosts_that_have_it(flavour):
    for recipe in PD:
        assert _has_rdma(_render(recipe, flavour, rdma_devices=True), flavour), (recipe, flavour)
        # a host without RDMA devices: docker would refuse a missing --device; preflight warns instead
        assert not _has_rdma(_render(recipe, flavour, rdma_devices=False), flavour)
        assert not _has_rdma(_render(recipe, flavour), flavour)  # not known (render.yml): not written
    # an aggregated server moves nothing between hosts; a router has no GPU
    assert not _has_rdma(_render("vllm-aggregated", flavour, rdma_devices=True), flavour)
    assert not _has_rdma(_render("sglang-router", flavour, rdma=True), flavour)


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_rdma_variable_forces_it_on_or_off(flavour):
    assert _has_rdma(_render("vllm-aggregated", flavour, rdma=True), flavour)
    assert not _has_rdma(_render("sglang-prefill", flavour, rdma=False, rdma_devices=True), flavour)


def test_multi_node_ranks_need_rdma():
    inst = dict(INST["vllm-aggregated"], nnodes=2)
    assert units.needs_rdma(inst) and not units.needs_rdma(INST["vllm-aggregated"])
    assert units.rdma(inst, units.options_with_defaults({"rdma_devices": True}))


def test_native_rdma_keeps_every_other_capability_dropped():
    text = _render("sglang-prefill", "native", rdma_devices=True)
    assert _values(text, "Service", "CapabilityBoundingSet") == ["CAP_IPC_LOCK"]
    assert "NoNewPrivileges=yes" in _directives(text, "Service")


# -- item 4: SELinux ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("flavour", CONTAINERS)
def test_selinux_hosts_get_labelled_volumes_and_cdi_devices(flavour):
    text = _render("vllm-aggregated", flavour, selinux=True)
    vols = _volumes(text, flavour)
    assert vols and all(v.endswith(":z") for v in vols), vols
    words = _run_words(text, flavour)
    label = ("--security-opt", "label=disable") in set(zip(words, words[1:]))
    # the NVIDIA CDI guide's flag, for podman's CDI devices; docker --gpus goes through the NVIDIA runtime
    assert label == (flavour != "docker"), (flavour, words)
    plain = _render("vllm-aggregated", flavour)
    assert not [v for v in _volumes(plain, flavour) if v.endswith(":z")]
    assert "label=disable" not in plain


def test_selinux_and_rdma_come_from_preflight_facts():
    facts = {"preflight_result": {"facts": {"runtime_devices": {"rdma": ["mlx5_0"], "selinux": "enforcing"}}}}
    opts = uo.host_options(facts)
    assert opts["rdma_devices"] is True and opts["selinux"] is True
    opts = uo.host_options({"preflight_result": {"facts": {"runtime_devices": {"rdma": [], "selinux": "disabled"}}}})
    assert opts["rdma_devices"] is False and opts["selinux"] is False
    forced = uo.host_options(dict(facts, launchcard_selinux_labels=False, launchcard_rdma="no"))
    assert forced["selinux"] is False and forced["rdma"] is False


# -- item 5: device nodes and usable accelerators before the engine starts ---------------------------------
def test_native_nvidia_engines_create_the_uvm_and_ctl_nodes_privileged():
    text = _render("vllm-aggregated", "native")
    assert "-+/usr/bin/nvidia-modprobe -u -c=0" in _values(text, "Service", "ExecStartPre")
    for flavour in CONTAINERS:
        assert "nvidia-modprobe" not in _render("vllm-aggregated", flavour)
    assert "nvidia-modprobe" not in _render("vllm-aggregated", "native", vendor="amd")
    assert "nvidia-modprobe" not in _render("sglang-router", "native")


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_gpu_engines_wait_for_usable_accelerators_within_their_start_timeout(flavour):
    for recipe in ("vllm-aggregated",) + PD:
        text = _render(recipe, flavour)
        pre = [parse_exec(v) for v in _values(text, "Service", "ExecStartPre")]
        waits = [w for w in pre if "--accelerators" in w]
        assert len(waits) == 1, pre
        timeout = _values(text, "Service", "TimeoutStartSec")[0]
        assert waits[0][-3:] == ["--accelerators", "nvidia", timeout]
        # the wait does not fail (which would spend a start of StartLimitBurst) before systemd's own timeout
        assert int(timeout) >= units.RESTART_SEC * units.START_LIMIT_BURST
    assert "--accelerators" not in _render("sglang-router", flavour)


def _smi(tmp_path, state):
    """The sandbox's stand-in nvidia-smi on PATH, its GPUs' fabric in ``state``."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    smi = bindir / "nvidia-smi"
    shutil.copy(STANDIN_SMI, smi)
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    gpus = tmp_path / "gpus.json"
    gpus.write_text(json.dumps({"driver_version": "580.95.05", "gpus": [
        {"index": i, "name": "NVIDIA H100 80GB HBM3", "fabric.state": state} for i in range(2)]}))
    return dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]), LAUNCHCARD_SANDBOX_GPUS_JSON=str(gpus))


@pytest.mark.parametrize("state", ["Completed", "[N/A]"])
def test_the_accelerator_wait_passes_once_the_fabric_is_up(tmp_path, state):
    env = _smi(tmp_path, state if state != "[N/A]" else None)
    res = subprocess.run([sys.executable, WAIT_READY_SRC, "--accelerators", "nvidia", "30"], env=env,
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr


def test_the_accelerator_wait_holds_while_the_fabric_manager_trains_and_says_why(tmp_path):
    env = _smi(tmp_path, "In Progress")
    res = subprocess.run([sys.executable, WAIT_READY_SRC, "--accelerators", "nvidia", "1"], env=env,
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 1
    assert "GPU 0 fabric In Progress" in res.stderr and "not usable in time" in res.stderr


def test_the_accelerator_wait_keeps_polling_until_usable():
    spec = __import__("importlib.util").util.spec_from_file_location("wait_ready", WAIT_READY_SRC)
    mod = __import__("importlib.util").util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    answers = [(False, "GPU 0 fabric In Progress")] * 12 + [(True, "usable")]
    now = [0.0]

    def sleep(s):
        now[0] += s
    assert mod.wait_accelerators("nvidia", 600, check=lambda: answers.pop(0), sleep=sleep,
                                 clock=lambda: now[0]) == 0
    assert now[0] == 60.0 and not answers  # a 60 s fabric manager start: waited, never failed


# -- item 7: compile/JIT cache per engine and image --------------------------------------------------------
@pytest.mark.parametrize("flavour", CONTAINERS)
def test_container_engines_keep_a_jit_cache_per_engine_and_image(flavour):
    inst = INST["vllm-aggregated"]
    digest_a = {inst["image"]: inst["image"].split(":")[0] + "@sha256:" + "a" * 64}
    digest_b = {inst["image"]: inst["image"].split(":")[0] + "@sha256:" + "b" * 64}
    text_a = _render("vllm-aggregated", flavour, image_refs=digest_a)
    text_b = _render("vllm-aggregated", flavour, image_refs=digest_b)
    (cache_a,) = [v.split(":")[0] for v in _volumes(text_a, flavour) if v.split(":")[1] == units.CONTAINER_JIT_CACHE]
    (cache_b,) = [v.split(":")[0] for v in _volumes(text_b, flavour) if v.split(":")[1] == units.CONTAINER_JIT_CACHE]
    assert cache_a != cache_b and cache_a.startswith(units.ENGINE_CACHE + "/jit/vllm-")
    # systemd creates the directory before the start (podman run -v refuses a missing source)
    assert _values(text_a, "Service", "CacheDirectory") == [cache_a[len("/var/cache/"):]]
    env = engine_environment(text_a)
    for name in ("XDG_CACHE_HOME", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE",
                 "DG_CACHE_DIR"):
        assert env[name].startswith(units.CONTAINER_JIT_CACHE), name
    assert units.CONTAINER_JIT_CACHE not in _render("sglang-router", flavour)
    assert units.CONTAINER_JIT_CACHE not in _render("vllm-aggregated", flavour, jit_cache=False)
