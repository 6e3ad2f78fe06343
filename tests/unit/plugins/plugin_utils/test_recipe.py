# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The recipe model: every recipe of the example card and of the valid corpus."""

from __future__ import annotations

import glob
import json
import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import CardError, load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._recipe import (
    RecipeError,
    current_name,
    describe,
    launcher,
    name_recipes,
    slug,
)

HERE = os.path.dirname(os.path.abspath(__file__))
UNIT = os.path.dirname(os.path.dirname(HERE))
ROOT = os.path.dirname(os.path.dirname(UNIT))
EXAMPLE = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
VALID = os.path.join(UNIT, "cards", "valid")


def _load(path):
    with open(path) as f:
        return load_card(f.read(), path)


def _valid(name):
    return _load(os.path.join(VALID, name))


@pytest.fixture(scope="module")
def example():
    return _load(EXAMPLE)


def _env(argv, engine="sglang", env=None):
    return {"engine": engine, "image": "img:1", "argv": argv, "env": env or {}, "checkpoint": "root"}


# -- the example card -----------------------------------------------------------
EXAMPLE_EXPECT = [
    # name, role, engine, launcher, tp, gpus, port, bootstrap, base_gpu_id
    ("vllm-aggregated", "aggregated", "vllm", "vllm", 8, 8, 8000, None, None),
    ("sglang-encoder", "encoder", "sglang", "sglang", 4, 4, 30001, None, 0),
    ("sglang-language", "language", "sglang", "sglang", 4, 4, 30000, None, 0),
    ("sglang-aggregated", "aggregated", "sglang", "sglang", 4, 4, 30000, None, 0),
    ("sglang-prefill", "prefill", "sglang", "sglang", 2, 2, 31000, 8998, 0),
    ("sglang-decode", "decode", "sglang", "sglang", 2, 2, 32000, None, 2),
    ("sglang-router", "router", "sglang", "router", 0, 0, 30000, None, None),
]


@pytest.mark.parametrize("index,expect", list(enumerate(EXAMPLE_EXPECT)), ids=[e[0] for e in EXAMPLE_EXPECT])
def test_example_recipe(example, index, expect):
    name, role, engine, kind, tp, gpus, port, bootstrap, base = expect
    r = example["recipes"][index]
    assert r["index"] == index
    assert r["name"] == name
    assert r["role"] == role
    assert r["engine"] == engine
    assert r["launcher"] == kind
    assert r["tensor_parallel_size"] == tp
    assert r["gpus"] == gpus
    assert r["gpus_total"] == gpus
    assert r["nnodes"] == 1
    assert r["port"] == port
    assert r["bootstrap_port"] == bootstrap
    assert r["base_gpu_id"] == base
    assert r["checkpoint"] == "root"
    assert r["bind_host"] == "0.0.0.0"


def test_example_card_has_seven_recipes_with_unique_names(example):
    assert len(example["recipes"]) == 7
    assert len({r["name"] for r in example["recipes"]}) == 7


def test_example_vllm_aggregated(example):
    r = example["recipes"][0]
    assert r["env"] == {"VLLM_ENGINE_READY_TIMEOUT_S": "3600", "VLLM_USE_RUST_FRONTEND": "1"}
    assert r["model_arg"] == "zai-org/GLM-5.3-Flash"
    assert r["image"] == "vllm/vllm-openai:nightly"
    assert r["kv_transfer_config"] is None
    assert r["transfer_backend"] is None
    assert r["headless"] is False
    assert r["argv"][:3] == ["vllm", "serve", "zai-org/GLM-5.3-Flash"]


def test_example_sglang_cp_does_not_add_gpus(example):
    r = example["recipes"][3]
    assert r["context_parallel_size"] == 4
    assert r["tensor_parallel_size"] == 4
    assert r["expert_parallel_size"] == 1
    assert r["gpus"] == 4


def test_example_language_points_at_the_encoder(example):
    r = example["recipes"][2]
    assert r["encoder_urls"] == ["http://localhost:30001"]
    assert r["quantization"] == "fp8"
    assert r["model_arg"] == "zai-org/GLM-5.3-Flash"
    assert example["recipes"][1]["encoder_urls"] == []


def test_example_pd_pair(example):
    pre, dec = example["recipes"][4], example["recipes"][5]
    assert pre["transfer_backend"] == "nixl" and dec["transfer_backend"] == "nixl"
    assert pre["bootstrap_port"] == 8998
    assert dec["bootstrap_port"] is None
    assert dec["base_gpu_id"] == 2


def test_example_router(example):
    r = example["recipes"][6]
    assert r["pd_disaggregation"] is True
    assert r["prefill_urls"] == [{"url": "http://127.0.0.1:31000", "bootstrap_port": "8998"}]
    assert r["decode_urls"] == ["http://127.0.0.1:32000"]
    assert r["worker_urls"] == []
    assert r["prometheus_port"] == 29000
    assert r["gpus"] == 0 and r["tensor_parallel_size"] == 0


def test_recipe_models_are_json_serialisable(example):
    assert json.loads(json.dumps(example["recipes"])) == example["recipes"]


# -- the valid corpus --------------------------------------------------------------
def test_vllm_multinode_tp16():
    c = _valid("01-vllm-multinode-tp16.json")
    r0, r1 = c["recipes"]
    assert [r["name"] for r in c["recipes"]] == ["vllm-aggregated-0", "vllm-aggregated-1"]
    for r in (r0, r1):
        assert r["tensor_parallel_size"] == 16
        assert r["nnodes"] == 2
        assert r["gpus"] == 8
        assert r["gpus_total"] == 16
        assert r["master_addr"] == "10.20.0.11"
        assert r["role"] == "aggregated"
    assert (r0["node_rank"], r0["headless"], r0["port"]) == (0, False, 8000)
    assert (r1["node_rank"], r1["headless"], r1["port"]) == (1, True, 8000)
    assert r0["env"]["NCCL_SOCKET_IFNAME"] == "ib0"


def test_sglang_multinode_tp16():
    c = _valid("02-sglang-multinode-tp16.json")
    for rank, r in enumerate(c["recipes"]):
        assert r["launcher"] == "sglang"
        assert r["tensor_parallel_size"] == 16
        assert r["nnodes"] == 2
        assert r["node_rank"] == rank
        assert r["gpus"] == 8
        assert r["dist_init_addr"] == "10.20.0.21:5000"
        assert r["port"] == 30000
        assert r["model_arg"] == "deepseek-ai/DeepSeek-R1-0528"


def test_vllm_pd_nixl_kv_both():
    c = _valid("03-vllm-pd-nixl.json")
    for r, port in zip(c["recipes"], (8100, 8200)):
        assert r["role"] == "aggregated"  # kv_both: neither producer nor consumer
        assert r["kv_transfer_config"] == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
        assert r["transfer_backend"] == "NixlConnector"
        assert r["gpus"] == 2
        assert r["port"] == port
    assert c["recipes"][1]["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5601"


@pytest.mark.parametrize("kv_role,role", [("kv_producer", "prefill"), ("kv_consumer", "decode"),
                                          ("kv_both", "aggregated")])
def test_vllm_kv_role_gives_the_role(kv_role, role):
    kv = json.dumps({"kv_connector": "NixlConnector", "kv_role": kv_role})
    r = describe(_env(["vllm", "serve", "m", "--kv-transfer-config", kv], "vllm"), 0)
    assert r["role"] == role
    r = describe(_env(["vllm", "serve", "m", "--kv-transfer-config=" + kv], "vllm"), 0)
    assert r["role"] == role


def test_sglang_epd_two_encoders():
    c = _valid("04-sglang-epd-two-encoders.json")
    e0, e1, lang = c["recipes"]
    assert [r["name"] for r in c["recipes"]] == ["sglang-encoder-0", "sglang-encoder-1", "sglang-language"]
    assert (e0["role"], e0["gpus"], e0["port"], e0["base_gpu_id"]) == ("encoder", 2, 30001, 0)
    assert (e1["role"], e1["gpus"], e1["port"], e1["base_gpu_id"]) == ("encoder", 2, 30002, 2)
    assert (lang["role"], lang["gpus"], lang["port"], lang["base_gpu_id"]) == ("language", 4, 30000, 4)
    assert lang["encoder_urls"] == ["http://127.0.0.1:30001", "http://127.0.0.1:30002"]


def test_vllm_rocm_and_ascend():
    r = _valid("05-vllm-rocm-mi355x.json")["recipes"][0]
    assert (r["gpus"], r["port"], r["validated_hardware"]) == (2, 8000, ["mi355x"])
    assert r["quantization"] is None  # --kv-cache-dtype fp8 is not weight quantization
    r = _valid("06-vllm-ascend-910b.json")["recipes"][0]
    assert (r["gpus"], r["expert_parallel"], r["validated_hardware"]) == (4, True, ["ascend_910b"])


def test_special_characters_survive_in_argv():
    r = _valid("07-special-characters.json")["recipes"][0]
    assert r["served_model_name"] == "mistral 7b (100% local)"
    assert r["argv"][r["argv"].index("--api-key") + 1] == "it's \"quoted\" \\ and ; not a separator"
    assert r["env"]["EMPTY"] == ""


def test_digest_pinned_single_gpu():
    c = _valid("08-vllm-single-gpu-digest-pinned.json")
    v, s = c["recipes"]
    assert v["image"].endswith("@sha256:67770084c135436aa79624b6e373089dea0ce9491ec525c29a5e3235421b09fa")
    assert (v["gpus"], v["served_model_name"]) == (1, "qwen2.5-7b-instruct")
    assert (s["launcher"], s["gpus"], s["port"]) == ("sglang", 1, 30000)


def test_sglang_dp_attention_shares_the_tp_gpus():
    r = _valid("09-sglang-dp-attention-ep.json")["recipes"][0]
    assert r["tensor_parallel_size"] == 8
    assert r["data_parallel_size"] == 8
    assert r["expert_parallel_size"] == 8
    assert r["gpus"] == 8


def test_sglang_dp_without_dp_attention_multiplies():
    r = describe(_env(["sglang", "serve", "--model-path", "m", "--tp-size", "2", "--dp-size", "4"]), 0)
    assert r["gpus"] == 8


def test_minimal_card():
    c = _valid("10-minimal-required-only.json")
    r = c["recipes"][0]
    assert (r["name"], r["gpus"], r["port"], r["env"], r["checkpoint"]) == ("vllm-aggregated", 1, 8000, {}, None)
    assert r["validated_hardware"] == []


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(VALID, "*.json"))), ids=os.path.basename)
def test_every_valid_card_models_consistently(path):
    """Whatever valid card appears in the corpus: the model agrees with its argv."""
    c = _load(path)
    assert c["recipes"]
    names = [r["name"] for r in c["recipes"]]
    assert len(names) == len(set(names))
    for r in c["recipes"]:
        assert r["role"] in ("aggregated", "encoder", "language", "prefill", "decode", "router")
        assert r["name"].startswith("%s-%s" % (r["engine"], r["role"]))
        if r["launcher"] == "router":
            assert r["gpus"] == 0
            continue
        tp, pp = r["tensor_parallel_size"], r["pipeline_parallel_size"]
        assert r["gpus"] * r["nnodes"] >= tp * pp
        assert r["gpus_total"] % r["nnodes"] == 0
        assert 0 <= r["node_rank"] < r["nnodes"]
        assert 1 <= r["port"] <= 65535


# -- errors ------------------------------------------------------------------------
def test_unknown_launcher_names_argv0():
    with pytest.raises(RecipeError) as exc:
        describe(_env(["tgi-launcher", "--model-id", "m"]), 3)
    assert exc.value.path == "envs[3].argv[0]"
    assert "'tgi-launcher'" in str(exc.value)
    assert str(exc.value).startswith("envs[3].argv[0]: ")


def test_engine_mismatch():
    with pytest.raises(RecipeError) as exc:
        describe(_env(["vllm", "serve", "m"], "sglang"), 0)
    assert exc.value.path == "envs[0].argv[0]"
    assert "engine is 'sglang' but argv starts vllm" in exc.value.message


def test_non_integer_tp_names_the_flag():
    with pytest.raises(RecipeError) as exc:
        describe(_env(["sglang", "serve", "--model-path", "m", "--tp-size", "x"]), 1)
    assert exc.value.path == "envs[1].argv[5]"  # the element holding the value
    assert exc.value.message == "--tp-size expects an integer, found 'x'"
    with pytest.raises(RecipeError, match=r"envs\[0\]\.argv\[3\]: --tensor-parallel-size expects an integer"):
        describe(_env(["vllm", "serve", "m", "--tensor-parallel-size=eight"], "vllm"), 0)


def test_bad_kv_transfer_config():
    with pytest.raises(RecipeError) as exc:
        describe(_env(["vllm", "serve", "m", "--kv-transfer-config", "{kv_connector: Nixl}"], "vllm"), 2)
    assert exc.value.path == "envs[2].argv[4]"
    assert "--kv-transfer-config is not valid JSON" in exc.value.message
    with pytest.raises(RecipeError, match="must be a JSON object"):
        describe(_env(["vllm", "serve", "m", "--kv-transfer-config", "[1]"], "vllm"), 0)


@pytest.mark.parametrize("argv,path,message", [
    (["sglang", "serve", "--tp-size", "0"], "[3]", "--tp-size (tensor parallel size) must be >= 1, found 0"),
    (["sglang", "serve", "--tp=0"], "[2]", "--tp (tensor parallel size) must be >= 1, found 0"),
    (["vllm", "serve", "m", "-pp", "-1"], "[4]", "-pp (pipeline parallel size) must be >= 1, found -1"),
    (["vllm", "serve", "m", "--data-parallel-size-local", "0"], "[4]",
     "--data-parallel-size-local 0 (an API server without engines) is not planned"),
    (["sglang", "serve", "--nnodes", "0"], "[3]", "--nnodes (number of nodes) must be >= 1, found 0"),
    (["sglang", "serve", "--nnodes", "x"], "[3]", "--nnodes expects an integer, found 'x'"),
    (["sglang", "serve", "--nnodes", "2", "--node-rank", "2"], "[5]", "--node-rank must be from 0 to --nnodes - 1 (1)"),
    (["sglang", "serve", "--tp-size", "3", "--nnodes", "2"], "[5]", "3 GPUs do not split evenly over --nnodes 2"),
    (["vllm", "serve", "m", "-tp", "3", "--nnodes=2"], "[5]", "3 GPUs do not split evenly over --nnodes 2"),
    (["sglang", "serve", "--disaggregation-mode", "both"], "[3]", "--disaggregation-mode expects prefill, decode or null"),
    (["python", "-m", "sglang_router.launch_router", "--prefill", "--decode", "http://d:1"], "[3]",
     "--prefill expects URL [BOOTSTRAP_PORT]"),
    (["python", "-m", "sglang_router.launch_router", "--port", "http"], "[4]", "--port expects an integer"),
])
def test_recipe_errors_name_the_element(argv, path, message):
    with pytest.raises(RecipeError) as exc:
        describe(_env(argv, "vllm" if argv[0] == "vllm" else "sglang"), 5)
    assert exc.value.path == "envs[5].argv" + path
    assert message in exc.value.message


@pytest.mark.parametrize("argv,index,written,full", [
    (["sglang", "serve", "--model-path", "m", "--tp-si", "4"], 4, "--tp-si", "--tp-size"),
    (["python", "-m", "sglang.launch_server", "--model-path", "m", "--tp-si=4"], 5, "--tp-si", "--tp-size"),
    (["sglang", "serve", "--model-path", "m", "--disaggregation-m", "prefill"], 4, "--disaggregation-m",
     "--disaggregation-mode"),
    (["sglang", "serve", "--model-pa", "m"], 2, "--model-pa", "--model-path"),
    (["sglang", "serve", "--model-path", "m", "--nno", "2"], 4, "--nno", "--nnodes"),
    (["vllm", "serve", "m", "--tensor-parallel", "4"], 3, "--tensor-parallel", "--tensor-parallel-size"),
    (["vllm", "serve", "m", "--tensor_parallel_si", "4"], 3, "--tensor_parallel_si", "--tensor-parallel-size"),
    (["vllm", "serve", "m", "--kv-transfer", "{}"], 3, "--kv-transfer", "--kv-transfer-config"),
    (["python", "-m", "sglang_router.launch_router", "--pd-dis", "--prefill", "http://p:1"], 3, "--pd-dis",
     "--pd-disaggregation"),
])
def test_an_abbreviated_option_is_refused_naming_the_option(argv, index, written, full):
    engine = "vllm" if argv[0] == "vllm" else "sglang"
    with pytest.raises(RecipeError) as exc:
        describe(_env(argv, engine), 0)
    assert exc.value.path == "envs[0].argv[%d]" % index
    assert exc.value.message.startswith("%r abbreviates %s: " % (written, full))
    assert "allow_abbrev" in exc.value.message and exc.value.message.endswith("write %s" % full)


@pytest.mark.parametrize("argv, index, option", [
    (["sglang", "serve", "--model-path; rm -rf /", "--tp-size", "2"], 2, "--model-path"),
    (["sglang", "serve", "--model-path", "m", "--tp-size 2"], 4, "--tp-size"),
    (["vllm", "serve", "m", "--tensor_parallel_size\t4"], 3, "--tensor_parallel_size"),
    (["python", "-m", "sglang_router.launch_router", "--pd-disaggregation", "--prefill;x", "http://p:1"], 4, "--prefill"),
])
def test_an_option_run_into_its_value_is_refused_naming_the_element(argv, index, option):
    engine = "vllm" if argv[0] == "vllm" else "sglang"
    with pytest.raises(RecipeError) as exc:
        describe(_env(argv, engine), 0)
    assert exc.value.path == "envs[0].argv[%d]" % index
    assert exc.value.message.startswith("%r is one argv element" % argv[index])
    assert exc.value.message.endswith("write %s and its value as elements of their own" % option)


@pytest.mark.parametrize("value", ["--site-flag x", "--not-ours; y", "--model-path=a b"])
def test_a_word_that_only_starts_like_an_option_is_left_to_the_engine(value):
    # an option the planner does not read, or one written with "=" (its value may hold spaces), is the engine's
    model = describe(_env(["sglang", "serve", "--model-path", "m", "--chat-template", value]), 0)
    assert model["argv"][-1] == value


def test_an_ambiguous_abbreviation_lists_every_option():
    with pytest.raises(RecipeError) as exc:
        describe(_env(["sglang", "serve", "--model-path", "m", "--disaggregation", "prefill"]), 0)
    assert "abbreviates --disaggregation-bootstrap-port or --disaggregation-mode or " \
           "--disaggregation-transfer-backend" in exc.value.message
    assert exc.value.message.endswith("write it in full")


@pytest.mark.parametrize("argv", [
    ["sglang", "serve", "--model-path", "m", "--tp", "4"],                      # an alias, not an abbreviation
    ["vllm", "serve", "m", "--data-parallel-size", "2"],                        # a prefix of -local, but exact
    ["sglang", "serve", "--model-path", "m", "--max-running", "4"],             # a prefix of an option not read
    ["sglang", "serve", "--model-path", "m", "--", "--tp-si"],                  # after --: a positional
    ["python", "-m", "sglang.launch_server", "--model-path", "m"],              # python's own -m
])
def test_exact_options_and_options_not_read_pass(argv):
    describe(_env(argv, "vllm" if argv[0] == "vllm" else "sglang"), 0)


def test_vllm_reads_underscores_as_dashes_like_its_parser():
    m = describe(_env(["vllm", "serve", "m", "--tensor_parallel_size", "4", "--data_parallel_size=2"], "vllm"), 0)
    assert (m["tensor_parallel_size"], m["data_parallel_size"], m["gpus"]) == (4, 2, 8)
    # SGLang's plain argparse does not: there an underscore option is just an unknown option
    m = describe(_env(["sglang", "serve", "--model-path", "m", "--tp_size", "4"]), 0)
    assert m["tensor_parallel_size"] == 1


def test_vllm_json_option_by_key_is_refused():
    with pytest.raises(RecipeError) as exc:
        describe(_env(["vllm", "serve", "m", "--kv-transfer-config.kv_role", "kv_producer"], "vllm"), 1)
    assert exc.value.path == "envs[1].argv[3]"
    assert "sets one key of --kv-transfer-config" in exc.value.message


def test_load_card_reports_the_recipe_error_path(example):
    with open(EXAMPLE) as f:
        doc = json.load(f)
    doc["envs"][3]["argv"][doc["envs"][3]["argv"].index("--tp-size") + 1] = "four"
    doc["envs"][6]["argv"][0] = "nginx"
    with pytest.raises(CardError) as exc:
        load_card(json.dumps(doc), "x.json")
    index = doc["envs"][3]["argv"].index("four")
    assert ("envs[3].argv[%d]" % index, "--tp-size expects an integer, found 'four'") in exc.value.errors
    assert [p for p, dummy in exc.value.errors if p == "envs[6].argv[0]"]


# -- helpers -----------------------------------------------------------------------
@pytest.mark.parametrize("argv,kind", [
    (["vllm", "serve", "m"], "vllm"),
    (["/opt/venv/bin/vllm", "serve", "m"], "vllm"),
    (["python3", "-m", "vllm.entrypoints.openai.api_server"], "vllm"),
    (["sglang", "serve"], "sglang"),
    (["python", "-m", "sglang.launch_server"], "sglang"),
    (["python3.11", "-m", "sglang_router.launch_router"], "router"),
    (["sglang-router"], "router"),
    (["python", "serve.py"], None),
    (["python", "-m"], None),
    ([], None),
])
def test_launcher(argv, kind):
    assert launcher(argv) == kind


def test_name_recipes_suffixes_only_duplicates():
    rs = [{"engine": "vllm", "role": "aggregated", "index": 0},
          {"engine": "sglang", "role": "aggregated", "index": 1},
          {"engine": "vllm", "role": "aggregated", "index": 2}]
    assert [r["name"] for r in name_recipes(rs)] == ["vllm-aggregated-0", "sglang-aggregated", "vllm-aggregated-2"]


@pytest.mark.parametrize("name, current", [
    ("vllm-monolithic", "vllm-aggregated"),
    ("sglang-monolithic-3", "sglang-aggregated-3"),
    ("vllm-aggregated", None),
    ("sglang-prefill", None),
    ("monolithic", None),
    ("vllm-monolithic-x", None),
    (3, None),
])
def test_current_name_of_a_former_role_name(name, current):
    assert current_name(name) == current


def test_slug():
    assert slug("GLM-5.3-Flash") == "glm-5.3-flash"
    assert slug("Qwen3 VL_235B!") == "qwen3-vl-235b"
    assert slug("...") == "x"
