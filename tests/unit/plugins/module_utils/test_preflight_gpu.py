# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine's memory budget, GPUs held by other processes and GPU health, from real nvidia-smi outputs.

The H200 recording (tests/unit/fixtures/real-inputs/h200-vm/) is one real host; the error states are that
recording with the one element a public report showed changed (tests/unit/fixtures/real-inputs/README.md).
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils import _accel_health as health
from ansible_collections.launchcard.inference.plugins.module_utils import _accelerators as acc
from ansible_collections.launchcard.inference.plugins.module_utils._accelerators import summarize
from ansible_collections.launchcard.inference.plugins.module_utils._preflight import evaluate, failed
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_gpu_checks import (
    CUDA_CONTEXT_MIB,
    sglang_default_fraction,
)
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_reads import gpu_owners
from ansible_collections.launchcard.inference.plugins.plugin_utils import _memory_budget as budget
from ansible_collections.launchcard.inference.tests.unit.plugins.module_utils.accel_fixtures import with_fabric

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
REAL = os.path.join(FIXTURES, "real-inputs")
H200 = os.path.join(REAL, "h200-vm")

# A Llama-3.1-70B-shaped config.json (80 layers, 8 KV heads of 128, bfloat16)
LLAMA_70B = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 80, "num_attention_heads": 64,
             "num_key_value_heads": 8, "hidden_size": 8192, "torch_dtype": "bfloat16",
             "max_position_embeddings": 131072}


def text(path):
    with open(path) as handle:
        return handle.read()


def h200(xml="nvidia-smi-q.xml", folder=H200):
    """The H200 host's summary: its recorded query and fabric outputs, and an -q -x output."""
    return summarize("nvidia", {
        "nvidia_smi": (0, text(os.path.join(H200, "nvidia-smi-query-gpu.csv")), ""),
        "nvidia_fabric": (0, text(os.path.join(H200, "nvidia-smi-fabric.csv")), ""),
        "nvidia_smi_q": (0, text(os.path.join(folder, xml)), ""),
        "nvidia_proc_version": text(os.path.join(H200, "proc-driver-nvidia-version.txt")),
    })


def test_h200_one_query_for_the_list_and_the_fabric():
    # the GPU list and fabric columns asked in one nvidia-smi call (_accelerators.COMMANDS) read as the two
    # recorded queries of the real host did
    joined = with_fabric(text(os.path.join(H200, "nvidia-smi-query-gpu.csv")), text(os.path.join(H200, "nvidia-smi-fabric.csv")))
    answers = {tuple(acc.COMMANDS["nvidia"][0][1][1:]): joined,
               ("-q", "-x"): text(os.path.join(H200, "nvidia-smi-q.xml"))}
    files = {"/proc/driver/nvidia/version": text(os.path.join(H200, "proc-driver-nvidia-version.txt"))}
    got = acc.collect("nvidia", lambda name: "/usr/bin/" + name if name == "nvidia-smi" else None,
                      lambda argv: (0, answers[tuple(argv[1:])], ""), files.get, pci_dir="")
    want = h200()
    assert got["devices"] == want["devices"] and got["driver"] == want["driver"]
    assert got["devices"][0]["fabric_state"] is None and got["errors"] == []


def vllm(argv=(), weights_mib=30000, config=None, gpu_ids=(0,)):
    inst = {"unit": "launchcard-m-vllm-0.service", "recipe": "vllm-tp1", "launcher": "vllm", "gpus": len(gpu_ids),
            "gpu_ids": list(gpu_ids), "argv": ["vllm", "serve", "m"] + list(argv)}
    return budget.instance_needs(inst, weights_mib, config)


def needs(*entries):
    # the units this host's plan runs (module_utils/_preflight.host_needs): the engines the run stops or restarts
    return {"gpus": 1, "validated_models": ["h200"], "weights_per_gpu_mib": max(e["weights_mib"] for e in entries),
            "disk_bytes": None, "memory": list(entries), "units": sorted(e["unit"] for e in entries)}


def facts(acc, owners=None):
    return {"os": {"id": "ubuntu", "version_id": "24.04"}, "accelerators": acc, "listening": {},
            "gpu_owners": owners or {}}


def by_check(results):
    return dict((r["check"], r) for r in results)


# --- the H200 recording --------------------------------------------------------------------------------------------

def test_h200_recording_facts_unchanged_and_health_filled():
    acc = h200()
    assert acc["errors"] == [] and acc["count"] == 1 and acc["models"] == ["h200"]
    device = acc["devices"][0]
    assert (device["memory_mib"], device["fabric_state"], device["bus_id"]) == (143771, None, "0000:00:06.0")
    assert (device["memory_reserved_mib"], device["memory_free_mib"], device["processes"]) == (616, 143156, [])
    assert (device["health"], device["health_issues"]) == ("ok", [])
    assert acc["driver"]["lost_gpus"] == [] and acc["driver"]["loaded_version"] == "580.159.04"
    # CUDA's total on that GPU: memory.total less memory.reserved (the README's 143155 MiB)
    assert device["memory_mib"] - device["memory_reserved_mib"] == 143155


def test_h200_recording_passes_preflight_with_a_one_gpu_vllm_recipe():
    results = evaluate(facts(h200()), needs(vllm(["--max-model-len", "32768"], 30000, LLAMA_70B)))
    checks = by_check(results)
    assert failed(results) == []
    assert checks["memory_budget"]["severity"] == "ok"
    # 0.92 (vLLM 0.32.0's default) of the 143155 MiB CUDA reports
    assert "GPU 0 share 131703 MiB (--gpu-memory-utilization 0.920 of 143155 MiB)" in checks["memory_budget"]["found"]
    assert "KV 10240 for 32768 tokens (--max-model-len)" in checks["memory_budget"]["need"]
    assert checks["gpu_in_use"]["severity"] == "ok" and checks["gpu_health"]["severity"] == "ok"


# --- the engine's share, not memory.total ---------------------------------------------------------------------------

def test_weights_that_fit_memory_total_but_not_the_share_fail_naming_the_flag():
    entry = vllm(weights_mib=128000)
    checks = by_check(evaluate(facts(h200()), needs(entry)))
    # the check before this one compares with memory.total only, and passes
    assert checks["memory_fit"]["severity"] == "ok"
    result = checks["memory_budget"]
    assert result["severity"] == "error"
    assert "vllm-tp1 needs %d MiB per GPU but the engine's share of GPU 0 is 131703 MiB" % (
        128000 + 4096 + CUDA_CONTEXT_MIB) in result["message"]
    assert "raise --gpu-memory-utilization to 0.93" in result["message"]


def test_weights_beyond_any_share_ask_for_more_tensor_parallel():
    result = by_check(evaluate(facts(h200()), needs(vllm(weights_mib=135168))))["memory_budget"]
    assert result["severity"] == "error"
    assert "use more tensor parallel (--tensor-parallel-size)" in result["message"]
    assert "raise" not in result["message"]


def test_a_kv_cache_for_the_max_model_len_that_does_not_fit_fails_naming_max_model_len():
    entry = vllm(["--max-model-len", "131072"], 100000, LLAMA_70B)
    # 2 x 80 layers x 8 heads x 128 x 2 bytes = 320 KiB a token: 40960 MiB for 131072 tokens
    assert entry["kv_mib"] == 40960 and entry["kv_mib_per_1k_tokens"] == 320.0
    result = by_check(evaluate(facts(h200()), needs(entry)))["memory_budget"]
    assert result["severity"] == "error"
    room = 131703 - 100000 - 4096 - CUDA_CONTEXT_MIB
    assert "lower --max-model-len to %d" % int(room / 320.0 * 1024) in result["message"]
    # the same recipe with a shorter context fits
    short = by_check(evaluate(facts(h200()), needs(vllm(["--max-model-len", "65536"], 100000, LLAMA_70B))))
    assert short["memory_budget"]["severity"] == "ok"


def test_without_max_model_len_the_models_max_position_embeddings_counts():
    entry = vllm([], 100000, LLAMA_70B)
    assert (entry["tokens"], entry["tokens_from"], entry["kv_mib"]) == (131072, "max_position_embeddings", 40960)


def test_without_the_models_config_the_kv_cache_is_a_warning():
    result = by_check(evaluate(facts(h200()), needs(vllm(weights_mib=30000))))["memory_budget"]
    assert result["severity"] == "warning"
    assert "KV cache not checked (the model's config.json was not read at planning)" in result["message"]


def test_sglang_default_mem_fraction_follows_its_memory_hook_on_the_h200():
    # memory_hook.py (0.5.23) on the H200 (143771 MiB), TP 1: chunked_prefill_size 8192, decode max_bs 256;
    # reserved 512 + 8192 x 1.5 + 1/8 x 1024 + 256 x 2 + 58 prefill graph sizes (4..8192) x 8 = 13904
    assert sglang_default_fraction(143771, {"tp": 1, "pp": 1}) == round((143771 - 13904) / 143771.0, 3) == 0.903
    # MLA: the prefill graphs reserve 1.5 GiB instead
    assert sglang_default_fraction(143771, {"tp": 1, "pp": 1, "mla": True}) == round(
        (143771 - (512 + 12288 + 128 + 512 + 1536)) / 143771.0, 3)
    # 80 GiB H100, TP 8: decode max_bs 512, reserved 512 + 12288 + 1024 + 1024 + 464 = 15312
    assert sglang_default_fraction(81559, {"tp": 8, "pp": 1}) == round((81559 - 15312) / 81559.0, 3)
    # a 24 GiB card: chunk 4096, max_bs 48, 50 prefill sizes, no 10 GiB floor: 512 + 6144 + 128 + 96 + 400 = 7280
    assert sglang_default_fraction(24564, {"tp": 1, "pp": 1}) == round((24564 - 7280) / 24564.0, 3)
    # not CUDA (ROCm): no prefill graph by default; the 10 GiB floor holds on a 192 GiB MI300X
    assert sglang_default_fraction(196592, {"tp": 1, "pp": 1}, cuda=False) == round((196592 - 26240) / 196592.0, 3)
    # --disable-cuda-graph, a PD decode server with 128 running requests
    assert sglang_default_fraction(143771, {"tp": 1, "pp": 1, "disable_decode_graph": True,
                                            "disable_prefill_graph": True}) == round((143771 - 12928) / 143771.0, 3)
    assert sglang_default_fraction(24564, {"tp": 1, "pp": 1, "disaggregation_mode": "decode",
                                           "max_running_requests": 128}) == round(
        (24564 - (512 + 3072 + 128 + 48 * 2)) / 24564.0, 3)


def test_sglang_recipe_reads_mem_fraction_static_and_context_length():
    inst = {"unit": "u", "recipe": "sg", "launcher": "sglang", "gpus": 1, "gpu_ids": [0],
            "argv": ["python3", "-m", "sglang.launch_server", "--context-length", "8192", "--tp-size", "1"]}
    entry = budget.instance_needs(inst, 130000, LLAMA_70B)
    assert (entry["fraction"], entry["fraction_flag"], entry["tokens"]) == (None, "--mem-fraction-static", 8192)
    result = by_check(evaluate(facts(h200()), needs(entry)))["memory_budget"]
    # 0.903 of 143155 = 129269 < 130000 + 2560: SGLang's fraction holds weights and KV only
    assert result["severity"] == "error" and "the engine's share of GPU 0 is 129269 MiB" in result["message"]
    assert "raise --mem-fraction-static to 0.93" in result["message"]


@pytest.mark.parametrize("config, kv, tp, per_token", [
    (LLAMA_70B, "auto", 1, 2 * 80 * 8 * 128 * 2),
    (LLAMA_70B, "fp8", 1, 2 * 80 * 8 * 128),
    (LLAMA_70B, "auto", 8, 2 * 80 * 1 * 128 * 2),
    # TP beyond the KV heads: each rank keeps one (replicated) KV head
    (LLAMA_70B, "auto", 16, 2 * 80 * 1 * 128 * 2),
    # MLA (DeepSeek V3): one latent of kv_lora_rank + qk_rope_head_dim per layer, on every TP rank
    ({"num_hidden_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "num_attention_heads": 128,
      "torch_dtype": "bfloat16"}, "auto", 8, 61 * 576 * 2),
    # a multimodal model's text_config
    ({"text_config": {"num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512}, "torch_dtype": "float16"},
     "auto", 1, 2 * 4 * 8 * 64 * 2),
])
def test_kv_bytes_per_token(config, kv, tp, per_token):
    assert budget.kv_bytes_per_token(config, kv, tp) == per_token


def test_a_config_without_layers_is_named():
    with pytest.raises(budget.MemoryConfigError, match="num_hidden_layers"):
        budget.kv_bytes_per_token({"hidden_size": 4}, "auto")


# --- GPUs in use ----------------------------------------------------------------------------------------------------

def test_a_gpu_another_process_holds_fails_naming_the_process():
    acc = h200("nvidia-smi-q-process-60g.xml", REAL)
    assert acc["devices"][0]["processes"] == [{"pid": 4242, "name": "/usr/bin/python3", "used_mib": 61440, "type": "C"}]
    result = by_check(evaluate(facts(acc), needs(vllm())))["gpu_in_use"]
    assert result["severity"] == "error"
    assert result["found"] == "GPU 0: %d MiB free, vllm-tp1 needs 131703 MiB, held by pid 4242 /usr/bin/python3 " \
        "(61440 MiB)" % (81716 - CUDA_CONTEXT_MIB)


def test_the_collections_own_engine_on_the_gpu_does_not_count():
    acc = h200("nvidia-smi-q-process-60g.xml", REAL)
    owners = gpu_owners(acc, read=lambda path: "0::/system.slice/launchcard-m-vllm-0.service\n"
                        if path == "/proc/4242/cgroup" else None)
    assert owners == {"4242": "launchcard-m-vllm-0.service"}
    assert by_check(evaluate(facts(acc, owners), needs(vllm())))["gpu_in_use"]["severity"] == "ok"


@pytest.mark.parametrize("cgroup", [
    "0::/system.slice/docker-%s.scope\n" % ("ab" * 32),  # someone's container
    "0::/system.slice/launchcard-other-card-vllm-0.service\n",  # an engine this host's plan does not run
])
def test_a_container_or_unit_that_is_not_this_hosts_engine_holds_the_gpu(cgroup):
    acc = h200("nvidia-smi-q-process-60g.xml", REAL)
    owners = gpu_owners(acc, read=lambda path: cgroup if path == "/proc/4242/cgroup" else None)
    assert owners["4242"]
    assert by_check(evaluate(facts(acc, owners), needs(vllm())))["gpu_in_use"]["severity"] == "error"


def test_the_engines_own_container_does_not_count():
    acc = h200("nvidia-smi-q-process-60g.xml", REAL)
    owners = {"4242": "container m-vllm-0"}  # the container of launchcard-m-vllm-0.service
    assert by_check(evaluate(facts(acc, owners), needs(vllm())))["gpu_in_use"]["severity"] == "ok"


# --- GPU health -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("xml, what", [
    ("nvidia-smi-q-ecc-uncorrectable.xml", "2 uncorrectable ECC error(s) since the driver loaded"),
    ("nvidia-smi-q-remap-pending.xml", "a row remap is pending"),
])
def test_a_gpu_with_uncorrectable_ecc_or_a_pending_remap_fails_naming_the_gpu(xml, what):
    acc = h200(xml, REAL)
    assert acc["devices"][0]["health"] == "error"
    result = by_check(evaluate(facts(acc), needs(vllm())))["gpu_health"]
    assert result["severity"] == "error"
    assert result["message"].startswith("GPU 0 (0000:00:06.0): %s: drain the host and reset the GPU (nvidia-smi -r -i 0"
                                        % what)


def test_a_narrow_pcie_link_and_hw_slowdown_warn():
    acc = h200("nvidia-smi-q-pcie-x8-slowdown.xml", REAL)
    result = by_check(evaluate(facts(acc), needs(vllm())))["gpu_health"]
    assert result["severity"] == "warning"
    assert "PCIe link x8, below its maximum x16" in result["message"]
    assert "hardware slowdown active" in result["message"]


def test_an_idle_gpu_trained_down_to_a_lower_pcie_gen_is_not_a_warning():
    xml = text(os.path.join(H200, "nvidia-smi-q.xml")).replace(
        "<current_link_gen>5</current_link_gen>", "<current_link_gen>1</current_link_gen>")
    assert list(health.parse_nvidia_smi_xml(xml).values())[0]["issues"] == []


def test_a_gpu_fallen_off_the_bus_fails_naming_its_bus_id():
    # eight H100s, the last one lost (NVIDIA/dcgm-exporter#604, NVIDIA/open-gpu-kernel-modules#387)
    lost = text(os.path.join(FIXTURES, "accelerators", "nvidia-smi-lost-gpu.csv"))
    acc = summarize("nvidia", {"nvidia_smi": (0, lost, "")})
    assert acc["driver"]["lost_gpus"] == ["0000:db:00.0"]
    result = by_check(evaluate(facts(acc), {"gpus": 1, "validated_models": [], "disk_bytes": None}))["gpu_health"]
    assert result["severity"] == "error"
    assert result["message"].startswith("GPU at 0000:db:00.0: nvidia-smi cannot reach it (fallen off the bus, Xid 79)")


def test_not_xml_is_an_error_not_a_crash():
    acc = summarize("nvidia", {"nvidia_smi": (0, text(os.path.join(H200, "nvidia-smi-query-gpu.csv")), ""),
                               "nvidia_smi_q": (0, "<nope", "")})
    assert acc["count"] == 1 and acc["devices"][0]["health"] is None
    assert acc["errors"][0].startswith("nvidia-smi -q -x: not XML")


def test_the_sandbox_stand_in_answers_q_x_in_each_state(tmp_path):
    import json
    import subprocess
    import sys
    standin = os.path.join(os.path.dirname(__file__), "..", "..", "..", "sandbox", "nvidia_smi_standin.py")
    gpu = {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-1", "pci.bus_id": "00000000:18:00.0",
           "memory.total": 143771, "memory.reserved": 616, "memory.used": 61440, "remapped_rows.pending": True,
           "ecc.uncorrectable.volatile": 3, "processes": [{"pid": 4242, "name": "python3", "used_mib": 61440}]}
    (tmp_path / "gpus.json").write_text(json.dumps({"driver_version": "580.95.05", "gpus": [gpu]}))
    out = subprocess.run([sys.executable, standin, "-q", "-x"], capture_output=True, text=True, check=True,
                         env=dict(os.environ, LAUNCHCARD_SANDBOX_GPUS_JSON=str(tmp_path / "gpus.json"))).stdout
    facts = health.parse_nvidia_smi_xml(out)["0000:18:00.0"]
    assert facts["memory"] == {"total_mib": 143771, "reserved_mib": 616, "used_mib": 61440, "free_mib": 81715}
    assert [i["what"] for i in facts["issues"]] == ["3 uncorrectable ECC error(s) since the driver loaded",
                                                    "a row remap is pending"]
    assert facts["processes"] == [{"pid": 4242, "name": "python3", "used_mib": 61440, "type": "C"}]


# --- model names: family and variant whatever suffix the tool prints -----------------------------------------------

@pytest.mark.parametrize("name, model_id", [
    # torch_npu's soc_version table (Ascend910B1..B4, Ascend910B2C, Ascend910B4-1, Ascend910_93xx)
    ("Ascend910B2C", "ascend_910b"),
    ("910B2C", "ascend_910b"),
    ("Ascend910B4-1", "ascend_910b"),
    ("910B3", "ascend_910b"),
    ("Ascend910_9391", "ascend_910c"),
    ("Ascend910_9382", "ascend_910c"),
    ("Ascend310P3", "ascend_310p"),
    ("Ascend310B4", "ascend_310b"),
])
def test_ascend_names_with_a_suffix_after_the_variant_number(name, model_id):
    from ansible_collections.launchcard.inference.plugins.module_utils._accel_tables import normalize_model
    assert normalize_model(name) == model_id


# --- the model's config.json at planning ----------------------------------------------------------------------------

def test_model_configs_keep_only_the_numbers_the_kv_cache_needs_and_record_a_failure():
    cards = {"a.json": {"model": {"repo": "o/m", "revision": "r1"}},
             "b.json": {"model": {"repo": "o/gone", "revision": "r2"}}}

    def fetch(repo, revision):
        if repo == "o/gone":
            raise OSError("404 Client Error: Entry Not Found\nmore")
        return dict(LLAMA_70B, auto_map={"AutoModel": "evil.py"}, num_hidden_layers=80, head_dim="128; rm -rf /",
                    torch_dtype="bfloat16")

    out = budget.model_configs(cards, fetch)
    assert out["a.json"]["config"] == {"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
                                       "hidden_size": 8192, "max_position_embeddings": 131072,
                                       "torch_dtype": "bfloat16"}
    assert out["b.json"]["error"] == "config.json of o/gone@r2 not read: 404 Client Error: Entry Not Found"
    entry = vllm([], 30000, None)
    assert entry["kv_error"] == "the model's config.json was not read at planning"
    inst = {"unit": "u", "recipe": "r", "launcher": "vllm", "gpus": 1, "gpu_ids": [0], "argv": ["vllm", "serve", "m"]}
    assert budget.instance_needs(inst, 1, None, out["b.json"]["error"])["kv_error"] == out["b.json"]["error"]


def test_an_ascend_npu_in_alarm_fails_naming_it():
    info = text(os.path.join(FIXTURES, "accelerators", "npu-smi-info-910b3x8.txt"))
    alarm = info.replace("| 0     910B3               | OK    ", "| 0     910B3               | Alarm ", 1)
    assert alarm != info
    acc = summarize("ascend", {"npu_smi_info": (0, alarm, "")})
    assert acc["devices"][0]["health"] == "alarm"
    result = by_check(evaluate(facts(acc), {"gpus": 8, "validated_models": [], "disk_bytes": None}))["gpu_health"]
    assert result["severity"] == "error"
    assert result["message"].startswith("GPU 0 (0000:c1:00.0): npu-smi reports health alarm: read its alarms "
                                        "(npu-smi info -t health -i 0)")
    # the recorded host itself has NPU 5 in Warning: a warning, naming it
    recorded = by_check(evaluate(facts(summarize("ascend", {"npu_smi_info": (0, info, "")})),
                                 {"gpus": 8, "validated_models": [], "disk_bytes": None}))["gpu_health"]
    assert recorded["severity"] == "warning"
    assert recorded["message"].startswith("GPU 5 (0000:41:00.0): npu-smi reports health warning")


def test_the_filter_gives_each_gpu_instance_its_memory_needs_from_the_plans_model_config():
    from ansible_collections.launchcard.inference.plugins.plugin_utils._preflight_steps import host_needs as preflight_needs
    from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
    from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
    path = os.path.join(FIXTURES, "..", "..", "..", "cards", "glm-5.3-flash.json")
    card = load_card(text(path), path)
    the_plan = plan(card, normalize_placement([("v", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"]}),
                                               ("s", {"address": "10.0.0.2", "recipes": ["sglang-aggregated"]})]))
    src = "cards/glm-5.3-flash.json"
    for host_plan in the_plan["hosts"].values():
        host_plan["card"] = src  # as plan_fleet tags each host with its card
    the_plan["model_configs"] = {src: {"repo": "r", "revision": "x", "config": budget.config_facts(LLAMA_70B)}}
    (vllm_entry,) = preflight_needs(card, the_plan["hosts"]["v"], the_plan)["memory"]
    # TP 8 of 305.8 GiB; the recipe sets no --gpu-memory-utilization nor --max-model-len
    assert (vllm_entry["weights_mib"], vllm_entry["fraction"], vllm_entry["gpu_ids"]) == (39142, 0.92, list(range(8)))
    assert (vllm_entry["tokens"], vllm_entry["tokens_from"]) == (131072, "max_position_embeddings")
    assert vllm_entry["kv_mib"] == 40960 // 8  # one KV head of eight per TP rank
    (sglang_entry,) = preflight_needs(card, the_plan["hosts"]["s"], the_plan)["memory"]
    # no --mem-fraction-static: SGLang's default, computed on the host from what the argv sets
    assert (sglang_entry["fraction"], sglang_entry["fraction_flag"]) == (None, "--mem-fraction-static")
    assert (sglang_entry["sglang"]["tp"], sglang_entry["sglang"]["mla"], sglang_entry["kv_mib"]) == (4, False, 40960 // 2 // 4)
    # without the plan's model_configs the KV cache is unknown, and says why
    del the_plan["model_configs"]
    assert preflight_needs(card, the_plan["hosts"]["v"], the_plan)["memory"][0]["kv_error"] == \
        "the model's config.json was not read at planning"


def test_npus_another_vllm_holds_fail_naming_its_processes():
    # npu-smi info of 8 x 910B2 under a running vLLM, posted in vllm-project/vllm-ascend#4866
    acc = summarize("ascend", {"npu_smi_info": (0, text(os.path.join(REAL, "npu-smi-info-910b2x8-vllm-held.txt")), "")})
    assert acc["errors"] == [] and acc["models"] == ["ascend_910b"]
    first = acc["devices"][0]
    # used 60126, of which the process 56293: the rest is the driver's, as on an idle NPU
    assert (first["memory_mib"], first["memory_free_mib"], first["memory_reserved_mib"]) == (65536, 65536 - 60126,
                                                                                             60126 - 56293)
    assert first["processes"] == [{"pid": 2759218, "name": "VLLMWorker_DP", "used_mib": 56293, "type": None}]
    entry = vllm(["--tensor-parallel-size", "8"], 20000, None, gpu_ids=range(8))
    result = by_check(evaluate(facts(acc), needs(entry)))["gpu_in_use"]
    assert result["severity"] == "error"
    assert result["found"].startswith("GPU 0: %d MiB free, vllm-tp1 needs 56767 MiB, held by pid 2759218 VLLMWorker_DP "
                                      "(56293 MiB); GPU 1:" % (65536 - 60126 - CUDA_CONTEXT_MIB))
    # the idle 910B3 host's npu-smi (no process) leaves the share free
    idle_text = text(os.path.join(FIXTURES, "accelerators", "npu-smi-info-910b3x8.txt"))
    idle = summarize("ascend", {"npu_smi_info": (0, idle_text, "")})
    assert by_check(evaluate(facts(idle), needs(entry)))["gpu_in_use"]["severity"] == "ok"


@pytest.mark.parametrize("written, tokens", [("32768", 32768), ("32k", 32000), ("32K", 32768), ("1.5k", 1500),
                                             ("auto", budget.AUTO), ("-1", budget.AUTO), ("many", None), (None, None)])
def test_max_model_len_as_vllms_parser_reads_it(written, tokens):
    assert budget.context_tokens(written) == tokens


def test_an_auto_max_model_len_needs_no_kv_cache_and_no_warning():
    entry = vllm(["--max-model-len", "auto"], 30000, LLAMA_70B)
    assert (entry["tokens"], entry["kv_mib"], entry["kv_error"]) == (None, None, None)
    result = by_check(evaluate(facts(h200()), needs(entry)))["memory_budget"]
    assert result["severity"] == "ok" and "KV fitted by the engine (--max-model-len auto)" in result["need"]
    assert vllm(["--max-model-len", "32K"], 30000, LLAMA_70B)["kv_mib"] == 10240


def test_a_data_parallel_recipe_that_fits_only_with_its_experts_spread_warns_as_memory_fit_does():
    entry = dict(vllm(weights_mib=128000), weights_spread_mib=60000)
    result = by_check(evaluate(facts(h200()), needs(entry)))["memory_budget"]
    assert result["severity"] == "warning"
    assert result["message"] == ("vllm-tp1 fits GPU 0's share only if its weights are mostly MoE experts spread over "
                                 "the data parallel ranks (60000 MiB per GPU if all are)")
    # beyond even the spread bound: an error
    entry["weights_spread_mib"] = 130000
    assert by_check(evaluate(facts(h200()), needs(entry)))["memory_budget"]["severity"] == "error"


def test_no_context_length_anywhere_is_named():
    config = dict(LLAMA_70B)
    del config["max_position_embeddings"]
    assert vllm([], 30000, config)["kv_error"] == \
        "no --max-model-len in the argv and no max_position_embeddings in config.json"


def test_an_amd_gpu_with_uncorrectable_ecc_errors_fails_naming_it():
    # amd-smi metric --ecc --json in the keys amdsmi's CLI writes (its CHANGELOG shows them as TOTAL_..._COUNT)
    accel = os.path.join(FIXTURES, "accelerators")
    acc = summarize("amd", {"amd_smi_list": (0, text(os.path.join(accel, "amd-smi-list.json")), ""),
                            "amd_smi_static": (0, text(os.path.join(accel, "amd-smi-static-vram.json")), ""),
                            "amd_smi_ecc": (0, text(os.path.join(accel, "amd-smi-metric-ecc.json")), "")})
    assert acc["errors"] == []
    # GPU 3 reports N/A: no issue, as a GPU without ECC counts
    assert [d["health"] for d in acc["devices"]] == ["ok", "error", "warning", "ok", "ok", "ok", "ok", "ok"]
    placed = {"gpus": 8, "validated_models": [], "disk_bytes": None,
              "memory": [dict(vllm(weights_mib=1000, gpu_ids=range(8)), kv_error=None)]}
    result = by_check(evaluate(facts(acc), placed))["gpu_health"]
    assert result["severity"] == "error"
    assert result["message"].startswith("GPU 1 (0000:15:00.0): 3 uncorrectable ECC error(s): drain the host and reset "
                                        "the GPU (amd-smi reset --gpureset -g 1) or reboot")
    assert "GPU 2 (0000:65:00.0): 1 deferred (poisoned) ECC error(s)" in result["message"]
    # an amd-smi without --ecc (it exits non-zero) leaves health unknown, without an error
    older = summarize("amd", {"amd_smi_list": (0, text(os.path.join(accel, "amd-smi-list.json")), ""),
                              "amd_smi_ecc": (2, "", "unrecognized arguments: --ecc")})
    assert older["devices"][0]["health"] is None and not [e for e in older["errors"] if "ecc" in e]


def test_a_gpu_nvidia_smi_says_requires_reset_fails_naming_it():
    rows = text(os.path.join(H200, "nvidia-smi-query-gpu.csv")).strip()
    rows += "\n1, NVIDIA H200, [GPU requires reset], [GPU requires reset], 580.159.04, 00000000:00:07.0, Enabled\n"
    acc = summarize("nvidia", {"nvidia_smi": (0, rows, "")})
    assert [d["health"] for d in acc["devices"]] == [None, "error"]
    result = by_check(evaluate(facts(acc), {"gpus": 2, "validated_models": [], "disk_bytes": None}))["gpu_health"]
    assert result["severity"] == "error"
    assert result["message"].startswith("GPU 1 (0000:00:07.0): nvidia-smi reports [GPU requires reset]: drain the host "
                                        "and reset the GPU (nvidia-smi -r -i 1")
