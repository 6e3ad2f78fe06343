# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Images and native packages per accelerator vendor (#25 item 1, engine-fidelity defect 11).

The example card's vLLM recipe runs ``vllm/vllm-openai:nightly`` (a CUDA build) and lists mi355x and
ascend_950pr_8x: an AMD or Ascend host must get an image built for it, and preflight must refuse a host
whose accelerators its image does not serve.
"""

from __future__ import annotations

import copy
import os

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils._preflight import evaluate
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as uo
from ansible_collections.launchcard.inference.plugins.plugin_utils import _vendors as vendors
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan_fleet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
CARD_PATH = os.path.join(ROOT, "cards", "glm-5.3-flash.json")


@pytest.fixture(scope="module")
def card():
    with open(CARD_PATH, "rb") as f:
        return load_card(f.read(), source=CARD_PATH)


def _plan(card, hosts):
    placement = normalize_placement([(h, {"address": "10.0.0.%d" % i, "recipes": r})
                                     for i, (h, r) in enumerate(hosts, 1)])
    return plan_fleet({CARD_PATH: card}, {CARD_PATH: placement})


@pytest.mark.parametrize("image, served", [
    ("vllm/vllm-openai:nightly", ("nvidia",)),
    ("lmsysorg/sglang:latest", ("nvidia",)),
    ("vllm/vllm-openai-rocm:latest", ("amd",)),
    ("rocm/vllm:rocm7.12.0_gfx950-dcgpu_ubuntu24.04_py3.12_pytorch_2.9.1_vllm_0.16.0", ("amd",)),
    ("lmsysorg/sglang:v0.5.8-rocm700-mi35x", ("amd",)),
    ("quay.io/ascend/vllm-ascend:v0.23.0", ("ascend",)),
    ("quay.io/ascend/sglang:main-cann8.5.0-910b", ("ascend",)),
    ("registry.corp:5000/ml/vllm-openai-rocm:v1@sha256:" + "a" * 64, ("amd",)),
])
def test_the_vendor_an_image_serves_is_read_from_its_name(image, served):
    assert vendors.image_vendors(image) == served


def test_the_inventory_declares_the_vendor_of_an_image_whose_name_does_not_say_it():
    declared = {"registry.corp/ml/engine:v3": "amd", "registry.corp/ml/multi:v1": ["nvidia", "amd"]}
    assert vendors.image_vendors("registry.corp/ml/engine:v3", declared) == ("amd",)
    assert vendors.image_vendors("registry.corp/ml/engine:v3@sha256:" + "b" * 64, declared) == ("amd",)
    assert vendors.image_vendors("registry.corp/ml/multi:v1", declared) == ("amd", "nvidia")
    with pytest.raises(vendors.VendorError, match=r"launchcard_image_vendors\['registry.corp/ml/engine:v3'\]"):
        vendors.image_vendors("registry.corp/ml/engine:v3", {"registry.corp/ml/engine:v3": "intel"})


def test_amd_and_ascend_hosts_get_their_vendors_image_and_nvidia_hosts_the_cards(card):
    plan = _plan(card, [("nv", ["vllm-aggregated"]), ("mi", ["vllm-aggregated"]), ("npu", ["vllm-aggregated"]),
                        ("cpu", ["vllm-aggregated"])])
    before = copy.deepcopy(plan)
    vendors.apply_vendor_images(plan, {"mi": {"vendor": "amd"}, "npu": {"vendor": "ascend"}, "cpu": {"vendor": "none"}})
    image = dict((h, hp["instances"][0]["image"]) for h, hp in plan["hosts"].items())
    assert image == {"nv": "vllm/vllm-openai:nightly", "mi": "vllm/vllm-openai-rocm:latest",
                     "npu": "quay.io/ascend/vllm-ascend:v0.23.0", "cpu": "vllm/vllm-openai:nightly"}
    # the NVIDIA and vendor-less hosts' plans are what they were; the others name the swap
    assert plan["hosts"]["nv"] == before["hosts"]["nv"] and plan["hosts"]["cpu"] == before["hosts"]["cpu"]
    assert plan["hosts"]["mi"]["instances"][0]["changes"][-1] == (
        "image vllm/vllm-openai-rocm:latest (the card's vllm/vllm-openai:nightly serves nvidia, this host is amd: "
        "launchcard_vendor_images)")


def test_the_inventory_mapping_wins_and_routers_keep_the_cards_image(card):
    plan = _plan(card, [("mi", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    mine = "registry.corp/sglang:v0.5.23-rocm700-mi35x"
    vendors.apply_vendor_images(plan, {"mi": {"vendor": "amd", "vendor_images": {"sglang": {"amd": mine}}}})
    got = dict((i["role"], i["image"]) for i in plan["hosts"]["mi"]["instances"])
    assert got == {"prefill": mine, "decode": mine, "router": "lmsysorg/sglang:latest"}


def test_a_card_image_for_amd_on_an_nvidia_host_takes_the_cuda_image(card):
    plan = _plan(card, [("nv", ["vllm-aggregated"])])
    plan["hosts"]["nv"]["instances"][0]["image"] = "vllm/vllm-openai-rocm:nightly"
    # the vendor unset: the plan knows no host facts, the card's image stays (preflight holds it to the host)
    vendors.apply_vendor_images(plan, {})
    assert plan["hosts"]["nv"]["instances"][0]["image"] == "vllm/vllm-openai-rocm:nightly"
    vendors.apply_vendor_images(plan, {"nv": {"vendor": "nvidia"}})
    assert plan["hosts"]["nv"]["instances"][0]["image"] == "vllm/vllm-openai:latest"


def test_bad_vendor_variables_are_named_with_the_host(card):
    plan = _plan(card, [("mi", ["vllm-aggregated"])])
    with pytest.raises(vendors.VendorError, match=r"mi: launchcard_accelerator_vendor must be one of"):
        vendors.apply_vendor_images(copy.deepcopy(plan), {"mi": {"vendor": "intel"}})
    with pytest.raises(vendors.VendorError, match=r"mi: launchcard_vendor_images\['vllm'\]\['amd'\] must be an image"):
        vendors.apply_vendor_images(copy.deepcopy(plan), {"mi": {"vendor": "amd",
                                                                 "vendor_images": {"vllm": {"amd": "a\nb"}}}})


def _preflight(needs, vendor, runtime="docker", **options):
    facts = {"accelerators": {"vendor": vendor, "devices": [{"index": i} for i in range(8)]}}
    options.update(runtime=runtime, checks={})
    return [r for r in evaluate(facts, dict(needs, gpus=8), options) if r["check"] == "image_vendor"]


def test_preflight_refuses_a_host_whose_vendor_its_image_does_not_serve(card):
    plan = _plan(card, [("mi", ["vllm-aggregated"])])
    needs = {"image_vendors": vendors.image_vendor_needs(plan["hosts"]["mi"])}
    assert needs["image_vendors"] == [{"recipe": "vllm-aggregated", "image": "vllm/vllm-openai:nightly",
                                       "vendors": ["nvidia"]}]
    (row,) = _preflight(needs, "amd")
    assert row["severity"] == "error" and row["need"] == "images that serve amd"
    assert row["found"] == "vllm-aggregated: vllm/vllm-openai:nightly (nvidia)"
    assert row["message"].startswith("amd accelerators, but recipe vllm-aggregated runs image vllm/vllm-openai:nightly, "
                                     "built for nvidia: set launchcard_accelerator_vendor: amd")
    # the units' vendor (launchcard_accelerator_vendor) is what the containers get, whatever the tools say
    assert _preflight(needs, "nvidia", container_vendor="ascend")[0]["severity"] == "error"
    # once the plan took the AMD image, the same host passes
    vendors.apply_vendor_images(plan, {"mi": {"vendor": "amd"}})
    (row,) = _preflight({"image_vendors": vendors.image_vendor_needs(plan["hosts"]["mi"])}, "amd")
    assert row["ok"], row
    # native installs per vendor (no image), and a host without accelerators runs any image
    assert _preflight(needs, "amd", runtime="native") == []
    assert _preflight(needs, "none") == []


def test_native_packages_are_pinned_per_vendor_and_engine_from_one_index():
    pypi = "https://pypi.org/simple"
    assert vendors.native_requirements("nvidia", ["vllm"]) == {"packages": ["vllm==0.23.0"], "index_url": pypi}
    assert vendors.native_requirements("amd", ["vllm"]) == {
        "packages": ["vllm==0.23.0+rocm700"], "index_url": "https://wheels.vllm.ai/rocm/0.23.0/rocm700"}
    assert vendors.native_requirements("ascend", ["vllm"])["packages"] == ["vllm==0.23.0", "vllm-ascend==0.23.0"]
    assert vendors.native_requirements("nvidia", ["sglang", "sglang"], router=True)["packages"] == [
        "sglang==0.5.23", "sglang-router==0.3.2"]
    assert vendors.native_requirements("amd", [], router=True)["packages"] == ["sglang-router==0.3.2"]
    with pytest.raises(vendors.VendorError, match="no pip install of sglang is published for amd"):
        vendors.native_requirements("amd", ["sglang"])
    # vLLM's ROCm index and PyPI's router: never both at once (no --extra-index-url), a mirror serving both instead
    with pytest.raises(vendors.VendorError, match="come from https://wheels.vllm.ai/rocm/0.23.0/rocm700 and "
                                                  "https://pypi.org/simple: one lock has one index"):
        vendors.native_requirements("amd", ["vllm"], router=True)


def test_the_native_runtime_installs_what_the_hosts_plan_runs(card):
    plan = _plan(card, [("nv", ["sglang-prefill", "sglang-decode", "sglang-router"]), ("mi", ["vllm-aggregated"]),
                        ("r", ["sglang-router"])])
    hosts = plan["hosts"]

    def install(host, **hv):
        return uo.native_install(dict(hv, launchcard_plan=plan, inventory_hostname=host))
    assert install("nv")["lock"]["name"] == "nvidia-sglang-0.5.23+sglang-router-0.3.2.txt"
    assert {"sglang==0.5.23", "sglang-router==0.3.2"} <= set(install("nv")["packages"])
    assert install("mi")["lock"]["name"] == "nvidia-vllm-0.23.0.txt"
    assert install("r")["lock"]["name"] == "sglang-router-0.3.2.txt"
    # the vendor preflight found, when the variable is unset: Ascend ships no lock, so the host is refused
    found = {"preflight_result": {"facts": {"accelerators": {"vendor": "ascend"}}}}
    with pytest.raises(uo.OptionError, match="no hash-pinned lock of vllm 0.23.0 for ascend accelerators"):
        install("mi", **found)
    # the variables win (an offline wheelhouse)
    assert install("mi", launchcard_runtime_native_packages=["x"], launchcard_runtime_native_pip_extra_args="--no-index") == {
        "packages": ["x"], "pip_args": "--no-index", "lock": None}
    with pytest.raises(uo.OptionError, match="no pip install of sglang is published for amd"):
        uo.native_install({"launchcard_accelerator_vendor": "amd"}, hosts["nv"])
    # the units carry the digest of what the host installs: another lock, another digest
    assert uo.native_requirements({}, hosts["mi"]) != uo.native_requirements({}, hosts["nv"])


def test_preflight_needs_hold_no_native_gap_where_the_inventory_names_a_lock_or_packages(card):
    from ansible_collections.launchcard.inference.plugins.plugin_utils._preflight_steps import host_needs as preflight_needs
    host = _plan(card, [("v", ["vllm-aggregated"])])["hosts"]["v"]
    assert preflight_needs(card, host)["native_gaps"] == {"amd": ["vllm"], "ascend": ["vllm"]}
    assert preflight_needs(card, host, native_lock="/srv/locks/amd.txt")["native_gaps"] == {}
    assert preflight_needs(card, host, native_packages=["vllm==0.23.0"])["native_gaps"] == {}
