# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A stand-in ``amd-smi`` host given the card's CUDA image is refused by preflight (#25 item 1).

The sandbox fleets have no AMD stand-in, and the preflight fleet runs the native runtime (a container runtime
there would need a registry for the controller's image resolution), so this runs the parts for real on the
controller: a stand-in ``amd-smi`` executable (answering with amd-smi's recorded JSON) read by the preflight
module's own collector, the plan the plan role makes (planner, then the vendor images) and the needs the
preflight role passes (the ``preflight_needs`` filter), evaluated by the preflight module's checks.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._preflight_steps import host_needs as preflight_needs
from ansible_collections.launchcard.inference.plugins.module_utils._accelerators import collect
from ansible_collections.launchcard.inference.plugins.module_utils._preflight import evaluate
from ansible_collections.launchcard.inference.plugins.plugin_utils import _vendors as vendors
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan_fleet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
CARD = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "accelerators")


@pytest.fixture()
def amd_host(tmp_path):
    """The accelerator facts of a host whose only vendor tool is a stand-in amd-smi (8 x MI355X)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "amd-smi"
    tool.write_text("#!/bin/sh\ncase \"$1\" in\n  list) exec cat %s ;;\n  static) exec cat %s ;;\nesac\nexit 2\n" % (
        os.path.join(FIXTURES, "amd-smi-list.json"), os.path.join(FIXTURES, "amd-smi-static-vram.json")))
    tool.chmod(0o755)

    def which(name):
        return shutil.which(name, path=str(bin_dir))

    def run(argv):
        res = subprocess.run(argv, capture_output=True, text=True, check=False)
        return res.returncode, res.stdout, res.stderr
    acc = collect("auto", which, run, pci_dir="")
    assert acc["vendor"] == "amd" and acc["count"] == 8, acc
    return {"accelerators": acc}


def _needs(vendor_var):
    with open(CARD, "rb") as f:
        card = load_card(f.read(), source=CARD)
    plan = plan_fleet({CARD: card}, {CARD: normalize_placement([("mi", {"address": "10.0.0.1",
                                                                        "recipes": ["vllm-aggregated"]})])})
    vendors.apply_vendor_images(plan, {"mi": {"vendor": vendor_var}})
    return preflight_needs(card, plan["hosts"]["mi"], plan)


def _image_vendor(facts, needs, runtime="docker"):
    return [r for r in evaluate(facts, needs, {"runtime": runtime, "checks": {}}) if r["check"] == "image_vendor"]


def test_the_cuda_image_on_a_stand_in_amd_host_is_refused_before_any_change(amd_host):
    # launchcard_accelerator_vendor unset: the plan takes the card's CUDA image; the host's amd-smi says AMD
    (row,) = _image_vendor(amd_host, _needs(None))
    assert not row["ok"] and row["severity"] == "error", row
    assert row["message"].startswith("amd accelerators, but recipe vllm-aggregated runs image vllm/vllm-openai:nightly, "
                                     "built for nvidia"), row
    # with the host's vendor set, the plan gives it the ROCm image and the same host passes
    (row,) = _image_vendor(amd_host, _needs("amd"))
    assert row["ok"] and "vllm/vllm-openai-rocm:latest" in row["found"], row
