# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight module, run for real by Ansible on this machine, refuses the card's CUDA image on a host whose
only accelerator tool is a stand-in ``amd-smi`` (#25 item 1).

Not a sandbox test: no sandbox fleet has an AMD stand-in host outside the ROCm stack scenario, and the
preflight fleet runs the native runtime (a container runtime there would need a registry the controller
resolves the card's images from). Here the needs are what the preflight action passes (the plan, then
``_preflight_steps.host_needs``), and the module finds the stand-in on ``PATH`` as it finds ``amd-smi`` on a host.
It reads only (one ad-hoc call, about 10 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.launchcard.inference.plugins.plugin_utils._preflight_steps import host_needs as preflight_needs  # noqa: E402
from ansible_collections.launchcard.inference.plugins.plugin_utils import _vendors as vendors  # noqa: E402
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card  # noqa: E402
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import (  # noqa: E402
    normalize_placement,
    plan_fleet,
)

BIN = os.path.dirname(sys.executable)
CARD = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "accelerators")


def _needs(vendor_var):
    with open(CARD, "rb") as f:
        card = load_card(f.read(), source=CARD)
    plan = plan_fleet({CARD: card}, {CARD: normalize_placement([("mi", {"address": "10.0.0.1",
                                                                        "recipes": ["vllm-aggregated"]})])})
    vendors.apply_vendor_images(plan, {"mi": {"vendor": vendor_var}})
    needs = preflight_needs(card, plan["hosts"]["mi"], plan)
    return dict((k, needs[k]) for k in ("gpus", "image_vendors"))


def _preflight(tmp_path, needs):
    stand_in = tmp_path / "bin"
    stand_in.mkdir(exist_ok=True)
    tool = stand_in / "amd-smi"
    tool.write_text("#!/bin/sh\ncase \"$1\" in\n  list) exec cat %s ;;\n  static) exec cat %s ;;\nesac\nexit 2\n" % (
        os.path.join(FIXTURES, "amd-smi-list.json"), os.path.join(FIXTURES, "amd-smi-static-vram.json")))
    tool.chmod(0o755)
    args = {"needs": needs, "weights_dir": str(tmp_path / "weights"), "runtime": "docker", "pci_devices_dir": "",
            "checks": {"peers": False, "image_disk": False}}
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH=os.pathsep.join([str(stand_in), BIN, os.environ.get("PATH", "")]))
    res = subprocess.run([os.path.join(BIN, "ansible"), "localhost", "-i", "localhost,", "-c", "local",
                          "-e", "ansible_python_interpreter=%s" % sys.executable,
                          "-m", "launchcard.inference.preflight", "-a", json.dumps(args)],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0 and "=>" in res.stdout, res.stdout[-3000:] + res.stderr[-2000:]
    result = yaml.safe_load(res.stdout.split("=>", 1)[1])
    assert result["facts"]["accelerators"]["vendor"] == "amd", result["facts"]["accelerators"]
    return dict((c["check"], c) for c in result["checks"]), result


def test_preflight_refuses_the_cuda_image_on_a_stand_in_amd_host(tmp_path):
    checks, result = _preflight(tmp_path, _needs(None))
    row = checks["image_vendor"]
    assert row["severity"] == "error" and "image_vendor" in result["failed_checks"], row
    assert row["need"] == "images that serve amd" and row["found"] == "vllm-aggregated: vllm/vllm-openai:nightly (nvidia)"
    assert row["message"].startswith("amd accelerators, but recipe vllm-aggregated runs image "
                                     "vllm/vllm-openai:nightly, built for nvidia: set launchcard_accelerator_vendor: amd")
    assert not os.path.exists(tmp_path / "weights")  # it read, and changed nothing
