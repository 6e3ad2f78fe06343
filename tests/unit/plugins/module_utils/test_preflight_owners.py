# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight: who holds a port (units and containers), validated-model suffixes, fabric counts."""

from __future__ import annotations

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _planner as planner
from ansible_collections.launchcard.inference.plugins.module_utils._preflight import evaluate
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_checks import UNIT_PREFIX
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_reads import container_from_cgroup

CID = "4f1c3a9e" * 8
OWNER = "launchcard-glm-5.3-flash-vllm-aggregated-0.service"


def _needs(**over):
    needs = {"disk_bytes": None, "gpus": 8, "validated_models": ["h100"], "weights_per_gpu_mib": None,
             "ports": [{"port": 8000, "owner": OWNER}]}
    needs.update(over)
    return needs


def _facts(devices=None, listening=None):
    devices = devices if devices is not None else [{"model_id": "h100", "memory_mib": 81559,
                                                    "fabric_state": "completed"}] * 8
    return {"os": {"id": "debian", "version_id": "12"},
            "accelerators": {"vendor": "nvidia", "devices": devices,
                             "driver": {"installed_version": "580.95.05", "fabric_manager_required": True}},
            "listening": listening or {}}


def _check(results, name):
    return next(r for r in results if r["check"] == name)


def test_unit_prefix_matches_the_planner():
    assert UNIT_PREFIX == planner.UNIT_PREFIX


@pytest.mark.parametrize("text,cid", [
    ("0::/system.slice/docker-%s.scope\n" % CID, CID),  # docker, systemd cgroup driver
    ("12:pids:/docker/%s\n0::/docker/%s\n" % (CID, CID), CID),  # docker, cgroupfs driver
    ("0::/machine.slice/libpod-%s.scope/container\n" % CID, CID),  # podman
    ("0::/libpod_parent/libpod-%s\n" % CID, CID),
    ("0::/machine.slice/libpod-conmon-%s.scope\n" % CID, None),  # conmon holds no engine port
    ("0::/system.slice/launchcard-x.service\n", None),
    ("0::/system.slice/docker-abc.scope\n", None),
    ("", None),
])
def test_container_from_cgroup(text, cid):
    assert container_from_cgroup(text) == cid


def test_a_port_held_by_our_own_container_is_ours():
    ours = _facts(listening={8000: "container glm-5.3-flash-vllm-aggregated-0"})
    assert _check(evaluate(ours, _needs()), "ports")["ok"] is True
    other = _facts(listening={8000: "container jupyter"})
    r = _check(evaluate(other, _needs()), "ports")
    assert (r["ok"], r["found"]) == (False, "8000 (held by container jupyter)")
    # a unit of another instance is not ours either
    sibling = _facts(listening={8000: "launchcard-glm-5.3-flash-vllm-aggregated-1.service"})
    assert _check(evaluate(sibling, _needs()), "ports")["ok"] is False


def test_validated_hardware_with_a_count_suffix():
    npus = [{"model_id": "ascend_950pr", "memory_mib": 131072, "fabric_state": None}] * 8
    needs = _needs(validated_models=["ascend_950pr_8x", "h100"])
    r = _check(evaluate(_facts(npus), needs), "gpu_model")
    assert (r["ok"], r["found"]) == (True, "ascend_950pr")
    r = _check(evaluate(_facts([dict(npus[0], model_id="ascend_950")] * 8), needs), "gpu_model")
    assert r["ok"] is False


def test_unvalidated_warning_says_it_was_allowed():
    h200 = [{"model_id": "h200", "memory_mib": 143771, "fabric_state": "completed"}] * 8
    r = _check(evaluate(_facts(h200), _needs(), {"allow_unvalidated_hardware": True}), "gpu_model")
    assert (r["severity"], r["found"]) == ("warning", "h200")
    assert r["message"] == "not validated for these recipes: h200 (allowed by allow_unvalidated_hardware)"


def test_fabric_found_counts_gpus_per_state():
    mixed = [{"model_id": "h100", "memory_mib": 81559, "fabric_state": s}
             for s in ["completed"] * 6 + ["in_progress", None]]
    r = _check(evaluate(_facts(mixed), _needs()), "fabric")
    assert (r["ok"], r["found"]) == (False, "completed on 6, in_progress on 1, unknown on 1 of 8 GPUs")
    r = _check(evaluate(_facts(), _needs()), "fabric")
    assert (r["ok"], r["found"]) == (True, "completed on 8 of 8 GPUs")
