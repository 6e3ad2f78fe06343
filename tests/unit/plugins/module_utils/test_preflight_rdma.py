# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight reads the host's RDMA devices and SELinux mode in its one call (#25 items 3-4), and warns where a
PD or multi-node plan lands on a host without RDMA, naming the TCP fallback."""

from __future__ import annotations

import os

from ansible_collections.launchcard.inference.plugins.module_utils._preflight import CHECKS, evaluate, host_needs
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_reads import rdma_and_selinux
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan

from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units_hardening import EX


def _tree(tmp_path, devices=(), dev_dir=True, enforce=None):
    sys_root, dev = tmp_path / "sys", tmp_path / "dev"
    (sys_root / "class" / "infiniband").mkdir(parents=True)
    for name in devices:
        (sys_root / "class" / "infiniband" / name).mkdir()
    if dev_dir:
        (dev / "infiniband").mkdir(parents=True)
    if enforce is not None:
        (sys_root / "fs" / "selinux").mkdir(parents=True)
        (sys_root / "fs" / "selinux" / "enforce").write_text(enforce)
    return str(sys_root), str(dev)


def test_reads_rdma_devices_and_selinux(tmp_path):
    sys_root, dev = _tree(tmp_path, ["mlx5_1", "mlx5_0"], enforce="1")
    assert rdma_and_selinux(sys_root, dev) == {"rdma": ["mlx5_0", "mlx5_1"], "selinux": "enforcing"}


def test_no_verbs_devices_no_selinuxfs(tmp_path):
    sys_root, dev = _tree(tmp_path / "a", ["mlx5_0"], dev_dir=False)
    assert rdma_and_selinux(sys_root, dev) == {"rdma": [], "selinux": "disabled"}
    sys_root, dev = _tree(tmp_path / "b", [], enforce="0\n")
    assert rdma_and_selinux(sys_root, dev) == {"rdma": [], "selinux": "permissive"}
    assert rdma_and_selinux(str(tmp_path / "none"), str(tmp_path / "none"))["rdma"] == []


def test_this_host_reads_without_error():
    found = rdma_and_selinux()
    assert isinstance(found["rdma"], list) and found["selinux"] in ("enforcing", "permissive", "disabled")
    assert bool(found["rdma"]) <= os.path.isdir("/dev/infiniband")


def _needs(recipes_by_host):
    p = plan(EX, normalize_placement([(h, {"address": "10.0.0.%d" % (i + 1), "recipes": r})
                                      for i, (h, r) in enumerate(recipes_by_host)]))
    return {h: host_needs(EX, p["hosts"][h], p) for h in p["hosts"]}


def _rdma_result(needs, rdma):
    checks = dict((c, c == "rdma") for c in CHECKS)
    out = evaluate({"runtime_devices": {"rdma": rdma} if rdma is not None else {}}, needs, {"checks": checks})
    return out[0] if out else None


def test_pd_plan_on_a_host_without_rdma_is_a_warning_naming_the_fallback():
    needs = _needs([("p", ["sglang-prefill", "sglang-router"]), ("d", ["sglang-decode"]), ("a", ["vllm-aggregated"])])
    assert needs["p"]["rdma"] and needs["d"]["rdma"] and needs["a"]["rdma"] == []
    res = _rdma_result(needs["d"], [])
    assert res["severity"] == "warning" and "NCCL falls back to TCP" in res["message"]
    assert _rdma_result(needs["d"], ["mlx5_0"])["severity"] == "ok"
    # nothing to say where no instance needs it, or a module too old to read the devices
    assert _rdma_result(needs["a"], []) is None and _rdma_result(needs["d"], None) is None
