# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight: what a host needs, every check passing and failing, the parsers."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.module_utils._preflight import (
    CHECKS,
    evaluate,
    failed,
    host_needs,
    report_rows,
)
from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import bare_host
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_reads import (
    parse_os_release,
    parse_proc_net_tcp,
    unit_from_cgroup,
)

HERE = os.path.dirname(os.path.abspath(__file__))
UNIT = os.path.dirname(os.path.dirname(HERE))
ROOT = os.path.dirname(os.path.dirname(UNIT))
EXAMPLE = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
VALID = os.path.join(UNIT, "cards", "valid")
GIB = 2 ** 30


def _load(path):
    with open(path) as f:
        return load_card(f.read(), path)


EX = _load(EXAMPLE)


def _plan(card, hosts):
    return plan(card, normalize_placement([(h, {"address": a, "recipes": r}) for h, a, r in hosts]))


@pytest.fixture(scope="module")
def fleet():
    return _plan(EX, [("v", "10.0.0.1", ["vllm-aggregated"]),
                      ("el", "10.0.0.2", ["sglang-encoder", "sglang-language"]),
                      ("cp", "10.0.0.3", ["sglang-aggregated"]),
                      ("pd", "10.0.0.4", ["sglang-prefill", "sglang-decode", "sglang-router"])])


# -- host_needs --------------------------------------------------------------------------------
def test_needs_for_the_vllm_host(fleet):
    needs = host_needs(EX, fleet["hosts"]["v"])
    assert needs["disk_bytes"] == 417 * 2 ** 30 == 447750340608
    assert needs["gpus"] == 8
    assert needs["validated_models"] == ["ascend_950pr_8x", "b200", "gb200", "h100", "mi355x"]
    # 305.8 GiB bf16 over TP8
    assert needs["weights_per_gpu_mib"] == int(305.8 * 1024 / 8) == 39142
    assert needs["ports"] == [{"port": 8000, "owner": "launchcard-glm-5.3-flash-vllm-aggregated-0.service",
                               "former_owners": ["launchcard-glm-5.3-flash-vllm-monolithic-0.service"]}]


def test_needs_fp8_halves_the_per_gpu_share(fleet):
    needs = host_needs(EX, fleet["hosts"]["el"])
    assert needs["gpus"] == 8
    assert needs["validated_models"] == []  # the SGLang recipes list no validated hardware
    # the encoder: 305.8 / 4 = 78284.8 MiB; the fp8 language server: 305.8 / 4 / 2 = 39142.4 MiB
    assert needs["weights_per_gpu_mib"] == 78284
    el = fleet["hosts"]["el"]
    lang_only = {"instances": [i for i in el["instances"] if i["role"] == "language"]}
    assert host_needs(EX, lang_only)["weights_per_gpu_mib"] == 39142
    assert [p["port"] for p in host_needs(EX, el)["ports"]] == [30001, 30000]


def test_needs_for_the_pd_host_lists_every_port(fleet):
    needs = host_needs(EX, fleet["hosts"]["pd"])
    assert needs["gpus"] == 4
    assert needs["weights_per_gpu_mib"] == int(305.8 * 1024 / 2)
    slug = "launchcard-glm-5.3-flash-sglang-"
    assert needs["ports"] == [
        {"port": 31000, "owner": slug + "prefill-0.service"},
        {"port": 8998, "owner": slug + "prefill-0.service"},
        {"port": 32000, "owner": slug + "decode-0.service"},
        {"port": 30000, "owner": slug + "router-0.service"},
        {"port": 29000, "owner": slug + "router-0.service"},
    ]


def test_needs_an_fp8_checkpoint_is_not_halved_again():
    doc = json.loads(open(os.path.join(VALID, "01-vllm-multinode-tp16.json")).read())
    for env in doc["envs"]:
        env["argv"] += ["--quantization", "fp8"]
    card = load_card(json.dumps(doc), "x")
    assert card["checkpoints"]["root"]["format"] == "fp8"
    p = _plan(card, [("a", "10.0.0.1", ["vllm-aggregated-0"]), ("b", "10.0.0.2", ["vllm-aggregated-0"])])
    needs = host_needs(card, p["hosts"]["b"])
    assert needs["weights_per_gpu_mib"] == int(641.3 * 1024 / 16)
    assert needs["validated_models"] == ["h100"]
    assert needs["disk_bytes"] == 700 * GIB
    assert needs["gpus"] == 8
    assert needs["ports"] == []  # rank 1 is headless


@pytest.mark.parametrize("min_disk_gib,weight_gib,want_gib",
                         [(700, 641.3, 700), (100, 641.3, 641.3), (None, 641.3, 641.3), (700, None, 700), (None, None, None)])
def test_needs_disk_is_never_less_than_the_weights(min_disk_gib, weight_gib, want_gib):
    doc = json.loads(open(os.path.join(VALID, "01-vllm-multinode-tp16.json")).read())
    doc["hardware"]["min_disk_gib"], doc["hf"]["weight_gib"] = min_disk_gib, weight_gib
    card = load_card(json.dumps(doc), "x")
    p = _plan(card, [("a", "10.0.0.1", ["vllm-aggregated-0"]), ("b", "10.0.0.2", ["vllm-aggregated-0"])])
    want = None if want_gib is None else int(round(want_gib * GIB))
    assert host_needs(card, p["hosts"]["a"])["disk_bytes"] == want


def test_needs_vllm_nixl_side_channel_ports():
    card = _load(os.path.join(VALID, "03-vllm-pd-nixl.json"))
    p = _plan(card, [("a", "10.0.0.1", ["vllm-aggregated-0", "vllm-aggregated-1"])])
    needs = host_needs(card, p["hosts"]["a"])
    assert sorted(x["port"] for x in needs["ports"]) == [5600, 5601, 8100, 8200]
    assert needs["validated_models"] == ["h100", "h200"]


def test_needs_of_the_minimal_card():
    card = _load(os.path.join(VALID, "10-minimal-required-only.json"))
    p = _plan(card, [("a", "10.0.0.1", ["vllm-aggregated"])])
    needs = host_needs(card, p["hosts"]["a"])
    assert needs == {"disk_bytes": None, "gpus": 1, "validated_models": [], "weights_per_gpu_mib": None,
                     "weights_per_gpu_spread_mib": None, "weights_by_unit": {}, "weights_spread_by_unit": {},
                     "ports": [{"port": 8000, "owner": "launchcard-smollm2-1.7b-instruct-vllm-aggregated-0.service",
                                "former_owners": ["launchcard-smollm2-1.7b-instruct-vllm-monolithic-0.service"]}],
                     "images": [p["hosts"]["a"]["instances"][0]["image"]], "peers": [], "rdma": [],
                     "units": ["launchcard-smollm2-1.7b-instruct-vllm-aggregated-0.service"],
                     "former_units": ["launchcard-smollm2-1.7b-instruct-vllm-monolithic-0.service"]}


def test_needs_of_an_empty_host():
    assert host_needs(EX, {}) == {"disk_bytes": None, "gpus": 0, "validated_models": [],
                                  "weights_per_gpu_mib": None, "weights_per_gpu_spread_mib": None, "weights_by_unit": {},
                                  "weights_spread_by_unit": {}, "ports": [], "images": [], "peers": [], "rdma": [],
                                  "units": [], "former_units": []}


# -- evaluate --------------------------------------------------------------------------------------
def _dev(model="h100", mib=81559, fabric="Completed"):
    return {"model_id": model, "memory_mib": mib, "fabric_state": fabric}


def _facts(**over):
    facts = {
        "os": {"id": "debian", "version_id": "12"},
        "disk": {"path": "/var/lib/launchcard/models", "free_bytes": 500 * GIB, "present_bytes": 0},
        "accelerators": {"vendor": "nvidia", "devices": [_dev()] * 8,
                         "driver": {"installed_version": "570.133.20", "loaded_version": "570.133.20",
                                    "reboot_required": False, "fabric_manager_required": True},
                         "errors": []},
        "listening": {22: None},
    }
    facts.update(over)
    return facts


NEEDS = {"disk_bytes": 417 * GIB, "gpus": 8, "validated_models": ["h100", "b200"], "weights_per_gpu_mib": 39142,
         "ports": [{"port": 8000, "owner": "launchcard-v.service"}]}


def _by_check(results):
    out = {r["check"]: r for r in results}
    assert len(out) == len(results)
    return out


def test_every_check_passes_on_a_good_host():
    res = _by_check(evaluate(_facts(), NEEDS))
    # peers, shm and image_disk need facts/options this host does not have (test_preflight_more.py);
    # rocm_release and cann_driver are for AMD and Ascend hosts (test_preflight_compat.py)
    # the container_* checks need a container runtime (test_preflight_containers.py), removal and runtime_change a
    # record (tests/unit/plugins/modules/test_preflight_removal.py); memory_budget, gpu_in_use and gpu_health need
    # nvidia-smi's -q -x facts and the plan's memory needs (test_preflight_gpu.py)
    assert sorted(res) == sorted(set(CHECKS) - {"peers", "shm", "rdma", "container_engine", "image_disk", "rocm_release",
                                                "memory_budget", "gpu_in_use", "gpu_health",
                                                "cann_driver", "image_vendor", "native_install",
                                                "container_nvidia_runtime", "container_cdi_spec",
                                                "container_amd_devices", "container_ascend_devices", "removal",
                                                "runtime_change"})
    for r in res.values():
        assert r["ok"] is True and r["severity"] == "ok", r
    assert res["disk"]["need"] == "417.0 GiB free on /var/lib/launchcard/models"
    assert res["memory_fit"]["need"] == "43238 MiB per GPU (weights 39142 + headroom 4096)"
    assert failed(evaluate(_facts(), NEEDS)) == []


@pytest.mark.parametrize("os_id,version,ok", [
    ("debian", "12", True), ("ubuntu", "22.04", True), ("ubuntu", "24.04", True), ("rhel", "9.4", True),
    ("rocky", "9", True), ("debian", "11", False), ("ubuntu", "23.10", False), ("centos", "7", False),
    (None, None, False),
])
def test_os_check(os_id, version, ok):
    r = _by_check(evaluate(_facts(os={"id": os_id, "version_id": version}), NEEDS))["os"]
    assert r["ok"] is ok
    assert r["found"] == "%s %s" % (os_id, version)


def test_disk_check_counts_what_is_already_staged():
    short = _facts(disk={"path": "/w", "free_bytes": 100 * GIB, "present_bytes": 0})
    r = _by_check(evaluate(short, NEEDS))["disk"]
    assert (r["ok"], r["severity"], r["found"]) == (False, "error", "100.0 GiB free")
    assert r["message"] == "not enough free space for the weights"
    staged = _facts(disk={"path": "/w", "free_bytes": 100 * GIB, "present_bytes": 317 * GIB})
    r = _by_check(evaluate(staged, NEEDS))["disk"]
    assert r["ok"] is True and r["need"] == "100.0 GiB free on /w"
    unknown = _facts(disk={"path": "/w"})
    assert _by_check(evaluate(unknown, NEEDS))["disk"]["found"] == "unknown free"
    assert "disk" not in _by_check(evaluate(_facts(), dict(NEEDS, disk_bytes=None)))


def test_gpu_count_check():
    few = _facts()
    few["accelerators"] = dict(few["accelerators"], devices=[_dev()] * 4)
    r = _by_check(evaluate(few, NEEDS))["gpu_count"]
    assert (r["ok"], r["need"], r["found"]) == (False, "8 GPUs", "4 nvidia GPU(s)")
    assert r["message"] == "the recipes placed here need 8 GPUs"
    none = dict(few, accelerators=dict(few["accelerators"], devices=[]))
    one = _by_check(evaluate(none, dict(NEEDS, gpus=1)))["gpu_count"]
    assert (one["need"], one["message"]) == ("1 GPU", "the recipes placed here need 1 GPU")
    broken = _facts(accelerators={"vendor": None, "devices": [], "driver": {},
                                  "errors": ["nvidia-smi: NVIDIA-SMI has failed"]})
    r = _by_check(evaluate(broken, NEEDS))["gpu_count"]
    assert r["ok"] is False and "(nvidia-smi: NVIDIA-SMI has failed)" in r["message"]
    assert r["found"] == "no GPU found"
    # a router-only host needs no GPU checks at all
    checks = _by_check(evaluate(broken, dict(NEEDS, gpus=0)))
    assert not set(checks) & {"gpu_count", "gpu_model", "memory_fit", "driver", "fabric"}


def test_gpu_model_check_and_the_unvalidated_override():
    a100 = _facts()
    a100["accelerators"] = dict(a100["accelerators"], devices=[_dev("a100")] * 8)
    r = _by_check(evaluate(a100, NEEDS))["gpu_model"]
    assert (r["ok"], r["severity"], r["found"]) == (False, "error", "a100")
    assert r["message"] == "not validated for these recipes: a100"
    r = _by_check(evaluate(a100, NEEDS, {"allow_unvalidated_hardware": True}))["gpu_model"]
    assert (r["ok"], r["severity"]) == (False, "warning")
    assert failed(evaluate(a100, NEEDS, {"allow_unvalidated_hardware": True})) == []
    assert "gpu_model" not in _by_check(evaluate(a100, dict(NEEDS, validated_models=[])))


def test_memory_fit_uses_the_smallest_gpu_and_the_headroom():
    mixed = _facts()
    mixed["accelerators"] = dict(mixed["accelerators"], devices=[_dev()] * 7 + [_dev(mib=40960)])
    r = _by_check(evaluate(mixed, NEEDS))["memory_fit"]
    assert (r["ok"], r["found"]) == (False, "40960 MiB")
    assert r["message"] == "the weights do not fit in device memory"
    tight = _facts()
    tight["accelerators"] = dict(tight["accelerators"], devices=[_dev(mib=43238)] * 8)
    assert _by_check(evaluate(tight, NEEDS))["memory_fit"]["ok"] is True
    assert _by_check(evaluate(tight, NEEDS, {"headroom_mib": 4097}))["memory_fit"]["ok"] is False


def test_driver_check_reboot_required():
    facts = _facts()
    facts["accelerators"] = dict(facts["accelerators"], driver={
        "installed_version": "570.133.20", "loaded_version": "565.57.01", "reboot_required": True})
    r = _by_check(evaluate(facts, NEEDS))["driver"]
    assert (r["ok"], r["found"]) == (False, "loaded 565.57.01, installed 570.133.20")
    assert r["message"].startswith("reboot needed")


@pytest.mark.parametrize("states,ok", [(["Completed"] * 8, True), (["completed"] * 8, True),
                                       (["Completed"] * 7 + ["In Progress"], False), (["None"] * 8, False)])
def test_fabric_check(states, ok):
    facts = _facts()
    facts["accelerators"] = dict(facts["accelerators"], devices=[_dev(fabric=s) for s in states])
    r = _by_check(evaluate(facts, NEEDS))["fabric"]
    assert r["ok"] is ok
    if not ok:
        assert "nvidia-fabricmanager" in r["message"]


def test_fabric_check_only_when_the_driver_needs_it():
    facts = _facts()
    facts["accelerators"] = dict(facts["accelerators"], devices=[_dev(fabric="N/A")] * 8,
                                 driver={"installed_version": "570", "fabric_manager_required": False})
    assert "fabric" not in _by_check(evaluate(facts, NEEDS))


def test_ports_check():
    ours = _facts(listening={8000: "launchcard-v.service"})
    assert _by_check(evaluate(ours, NEEDS))["ports"]["ok"] is True
    taken = _facts(listening={8000: "jupyter.service", 22: None})
    r = _by_check(evaluate(taken, NEEDS))["ports"]
    assert (r["ok"], r["found"]) == (False, "8000 (held by jupyter.service)")
    anon = _facts(listening={8000: None})
    assert _by_check(evaluate(anon, NEEDS))["ports"]["found"] == "8000 (held by another process)"
    assert _by_check(evaluate(_facts(), NEEDS))["ports"]["need"] == "8000 free"


def test_checks_can_be_switched_off():
    bad = _facts(os={"id": "centos", "version_id": "7"}, disk={"path": "/", "free_bytes": 0})
    res = evaluate(bad, NEEDS, {"checks": {"os": False, "disk": False}})
    assert not {"os", "disk"} & set(_by_check(res))
    assert failed(res) == []


def test_report_rows():
    res = evaluate(_facts(os={"id": "debian", "version_id": "11"}), NEEDS)
    rows = report_rows({"b": None, "a": res})
    assert rows[0] == ["a", "os", "FAIL", "Debian 12/13, Ubuntu 22.04/24.04, RHEL/Rocky/Alma 9", "debian 11",
                       "OS not supported by the roles"]
    assert rows[1][:3] == ["a", "disk", "ok"]
    assert rows[-1] == ["b", "-", "ERROR", "-", "-", "host could not be checked"]
    warn = evaluate(_facts(accelerators=dict(_facts()["accelerators"], devices=[_dev("l4")] * 8)), NEEDS,
                    {"allow_unvalidated_hardware": True})
    assert ["x", "gpu_model", "WARN"] == report_rows({"x": warn})[3][:3]


# -- parsers ------------------------------------------------------------------------------------------
PROC_NET_TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 18210 1 0000000000000000 100 0 0 10 0
   1: 00000000:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 912345 1 0000000000000000 100 0 0 10 0
   2: 0100007F:2326 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 912399 1 0000000000000000 100 0 0 10 0
   3: 0B1212C6:7530 0C1212C6:D2F0 01 00000000:00000000 02:000A7D9E 00000000     0        0 913001 2 0000000000000000 20 4 30 10 -1
   4: 0100007F:1F40 0100007F:A3B2 06 00000000:00000000 03:00001771 00000000     0        0 0 3 0000000000000000
"""

PROC_NET_TCP6 = (
    "  sl  local_address                         remote_address                        st tx_queue rx_queue tr "
    "tm->when retrnsmt   uid  timeout inode\n"
    "   0: 00000000000000000000000000000000:7148 00000000000000000000000000000000:0000 0A 00000000:00000000 "
    "00:00000000 00000000     0        0 777001 1 0000000000000000 100 0 0 10 0\n"
)


def test_parse_proc_net_tcp():
    # 0x0016 = 22, 0x7530 = 30000, 0x2326 = 8998; ESTABLISHED (01) and TIME_WAIT (06) are not listening
    assert parse_proc_net_tcp(PROC_NET_TCP) == {22: "18210", 30000: "912345", 8998: "912399"}
    assert parse_proc_net_tcp(PROC_NET_TCP6) == {29000: "777001"}
    assert parse_proc_net_tcp("") == {}
    assert parse_proc_net_tcp("header\n   0: garbage\n") == {}


@pytest.mark.parametrize("text,unit", [
    ("0::/system.slice/launchcard-glm-5.3-flash-sglang-router-0.service\n",
     "launchcard-glm-5.3-flash-sglang-router-0.service"),
    ("12:pids:/system.slice/launchcard-x.service\n11:memory:/system.slice/launchcard-x.service\n"
     "1:name=systemd:/system.slice/launchcard-x.service\n0::/system.slice/launchcard-x.service\n",
     "launchcard-x.service"),
    ("4:cpu,cpuacct:/\n1:name=systemd:/system.slice/sshd.service\n", "sshd.service"),
    ("0::/system.slice/launchcard-x.service/payload\n", "launchcard-x.service"),
    ("0::/user.slice/user-0.slice/session-3.scope\n", None),
    ("0::/system.slice/docker-0123abcd.scope\n", None),
    ("", None),
])
def test_unit_from_cgroup(text, unit):
    assert unit_from_cgroup(text) == unit


def test_parse_os_release():
    text = ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
            "VERSION=\"12 (bookworm)\"\nID=debian\nHOME_URL=\"https://www.debian.org/\"\n")
    assert parse_os_release(text) == {"id": "debian", "version_id": "12"}
    assert parse_os_release("ID='rocky'\nVERSION_ID=9.4\nID_LIKE=\"rhel centos fedora\"\n") == {
        "id": "rocky", "version_id": "9.4"}
    assert parse_os_release("") == {}


def test_bare_host_passes_on_its_pci_count_only_when_the_stack_is_installed_next():
    pci = {"vendor": "nvidia", "count": 8, "devices": [{"bus_id": "0000:%02x:00.0" % i, "vendor": "nvidia",
                                                        "device_id": "0x2335"} for i in range(8)]}
    bare = _facts(accelerators={"vendor": "none", "devices": [], "driver": {"message": "no accelerator tool found"},
                                "pci": pci, "errors": []})
    res = _by_check(evaluate(bare, NEEDS, {"install_driver": True}))
    assert (res["gpu_count"]["ok"], res["gpu_count"]["found"]) == (True, "8 nvidia GPU(s) on the PCI bus, no driver yet")
    assert (res["driver"]["severity"], res["driver"]["found"]) == ("warning", "none")
    assert "the nvidia stack is installed next" in res["driver"]["message"]
    assert "gpu_model" not in res and "memory_fit" not in res  # checked again after the install
    assert bare_host(bare["accelerators"], True) and not bare_host(bare["accelerators"], False)
    assert not bare_host(_facts()["accelerators"], True)  # its driver answers
    assert failed(evaluate(bare, NEEDS, {"install_driver": True})) == []
    # too few on the bus is still too few
    four = dict(bare, accelerators=dict(bare["accelerators"], pci=dict(pci, count=4)))
    assert _by_check(evaluate(four, NEEDS, {"install_driver": True}))["gpu_count"]["ok"] is False
    # without the stack install the host fails, and says what the bus shows
    r = _by_check(evaluate(bare, NEEDS))["gpu_count"]
    assert (r["ok"], r["found"]) == (False, "no GPU found")
    assert r["message"].endswith("(the PCI bus shows 8 nvidia accelerator(s) without a working driver: install its stack)")
    # a host whose driver works is judged on its driver's devices, whatever the bus shows
    good = _facts()
    good["accelerators"] = dict(good["accelerators"], pci=dict(pci, count=2))
    assert _by_check(evaluate(good, NEEDS, {"install_driver": True}))["gpu_count"]["found"] == "8 nvidia GPU(s)"


def _dp_ep_card():
    with open(EXAMPLE) as f:
        doc = json.load(f)
    # vLLM docs/serving/data_parallel_deployment.md: DP 16 over two 8-GPU nodes, experts spread with EP
    doc["envs"][0]["argv"] = ["vllm", "serve", "zai-org/GLM-5.3-Flash", "-tp", "1", "-dp", "16", "-dpl", "8",
                              "--enable-expert-parallel"]
    return load_card(json.dumps(doc), "dp-ep")


def test_memory_fit_spreads_moe_experts_over_the_data_parallel_ranks():
    card = _dp_ep_card()
    p = _plan(card, [("d1", "10.0.1.1", ["vllm-aggregated"]), ("d2", "10.0.1.2", ["vllm-aggregated"])])
    needs = host_needs(card, p["hosts"]["d2"], p)
    # TP 1: the dense bound is the whole checkpoint; with every weight an expert, 1/16 of it per GPU
    assert needs["weights_per_gpu_mib"] == int(305.8 * 1024) == 313139
    assert needs["weights_per_gpu_spread_mib"] == int(305.8 * 1024 / 16) == 19571
    b200 = _facts()
    b200["accelerators"] = dict(b200["accelerators"], devices=[_dev("b200", 183359)] * 8)
    r = _by_check(evaluate(b200, needs))["memory_fit"]
    # a warning, not the false error "313139 MiB per GPU" (it fails only where even the spread share cannot fit)
    assert (r["ok"], r["severity"]) == (False, "warning")
    assert "19571 MiB per GPU" in r["message"]
    assert "memory_fit" not in [x["check"] for x in failed(evaluate(b200, needs))]
    small = _facts()
    small["accelerators"] = dict(small["accelerators"], devices=[_dev("b200", 16384)] * 8)
    r = _by_check(evaluate(small, needs))["memory_fit"]
    assert (r["ok"], r["severity"]) == (False, "error")


def test_memory_fit_without_data_parallel_has_no_spread_bound(fleet):
    assert host_needs(EX, fleet["hosts"]["v"])["weights_per_gpu_spread_mib"] is None
