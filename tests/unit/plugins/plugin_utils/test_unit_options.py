# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one per-host options builder: variables, then preflight's facts, then _unit_spec.DEFAULTS."""

from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as uo
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_spec import DEFAULTS
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import command, host_units

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as _f:
    EX = load_card(_f.read(), "example")


def _vllm():
    p = plan(EX, normalize_placement([("h", {"address": "10.0.0.1", "recipes": ["vllm-monolithic"]})]))
    return p["hosts"]["h"]["instances"][0]


def _facts(vendor="nvidia", pci=None, render_gid=None, davinci=None, devices=True):
    facts = {"accelerators": {"vendor": vendor, "pci": {"vendor": pci}}}
    if devices:
        facts["runtime_devices"] = {"render_gid": render_gid, "davinci": davinci or []}
    return {"preflight_result": {"facts": facts}}


def _run_words(hv):
    return command(_vllm(), uo.host_options(dict(hv, launchcard_runtime="docker")))[0]


def test_without_variables_the_options_are_the_defaults():
    assert uo.host_options({}) == dict(DEFAULTS, secrets_env_file=uo.SECRETS_ENV_FILE)


@pytest.mark.parametrize("role", ["units", "render"])
def test_the_roles_repeat_no_unit_default(role):
    """The defaults live in _unit_spec.OPTIONS only: no role sets or documents them again."""
    for part in ("defaults/main.yml", "meta/argument_specs.yml"):
        with open(os.path.join(ROOT, "roles", role, part)) as f:
            doc = yaml.safe_load(f) or {}
        if part.startswith("meta"):
            doc = doc["argument_specs"]["main"]["options"]
        for key in doc:
            assert not re.search(r"(runtime|vendor|venv|weights|offline|timeout_s$|image_refs|secrets|token$)",
                                 key.replace("health_timeout_s", "")), (role, part, key)


def test_variables_set_the_options_and_are_coerced():
    hv = {"launchcard_runtime": "podman", "launchcard_runtime_native_venv": "/srv/venv", "launchcard_hf_offline": "false",
          "launchcard_unit_stop_timeout_s": "77", "launchcard_extra_container_args": '["--ulimit", "stack=67108864"]',
          "launchcard_ascend_devices": ["3", 1], "launchcard_weights_dir": "/data/hf"}
    opts = uo.host_options(hv)
    assert (opts["runtime"], opts["native_venv"], opts["hf_offline"], opts["stop_timeout_s"]) == (
        "podman", "/srv/venv", False, 77)
    assert opts["extra_container_args"] == ["--ulimit", "stack=67108864"]
    assert opts["ascend_devices"] == [3, 1] and opts["weights_dir"] == "/data/hf"


@pytest.mark.parametrize("var,value,message", [
    ("launchcard_unit_start_timeout_s", "soon", "launchcard_unit_start_timeout_s must be an integer, found 'soon'"),
    ("launchcard_hf_offline", "maybe", "launchcard_hf_offline must be a boolean"),
    ("launchcard_extra_container_args", "--privileged", "launchcard_extra_container_args must be a list"),
    ("launchcard_extra_container_args", [["a"]], r"launchcard_extra_container_args\[0\] must be a string"),
    ("launchcard_ascend_devices", [0, "x"], r"launchcard_ascend_devices\[1\] must be an integer"),
    ("launchcard_runtime", "lxc", "launchcard_runtime must be one of docker, podman, native, found 'lxc'"),
    ("launchcard_accelerator_vendor", "intel", "launchcard_accelerator_vendor must be one of"),
    ("launchcard_runtime_native_venv", ["/a"], "launchcard_runtime_native_venv must be a string"),
])
def test_a_bad_variable_is_named(var, value, message):
    with pytest.raises(uo.OptionError, match=message):
        uo.host_options({var: value})


def test_vendor_comes_from_preflight_unless_the_inventory_sets_it():
    assert uo.host_options(_facts("amd"))["vendor"] == "amd"
    assert uo.host_options(dict(_facts("amd"), launchcard_accelerator_vendor="nvidia"))["vendor"] == "nvidia"
    # a host without its driver yet: the PCI bus names the vendor
    assert uo.host_options(_facts("none", pci="ascend"))["vendor"] == "ascend"
    assert uo.host_options(_facts("none"))["vendor"] == "none"
    # no preflight (render.yml) or a skipped one: the default
    assert uo.host_options({"preflight_result": {"skipped": True}})["vendor"] == DEFAULTS["vendor"] == "nvidia"


def test_amd_render_group_from_the_host_else_the_variable():
    words = _run_words(_facts("amd", render_gid=110))
    assert words[words.index("video") + 1:words.index("video") + 3] == ["--group-add", "110"]
    assert words.count("--group-add") == 2 and "110" in words
    assert "109" in _run_words(dict(_facts("amd", render_gid=110), launchcard_amd_render_gid=109))
    assert "109" in _run_words(dict(_facts("amd", devices=False), launchcard_amd_render_gid="109"))
    # no render group found or set: only the video group
    assert _run_words(_facts("amd", devices=False)).count("--group-add") == 1


def _davinci(words):
    return [w for w in words if re.fullmatch(r"/dev/davinci\d+", w)]


def test_ascend_devices_from_the_host_else_the_variables_else_eight():
    found = _davinci(_run_words(_facts("ascend", davinci=[4, 0, 2])))
    assert found == ["/dev/davinci0", "/dev/davinci2", "/dev/davinci4"]
    assert _davinci(_run_words(dict(_facts("ascend", davinci=[0, 1]), launchcard_ascend_devices=[7]))) == [
        "/dev/davinci7"]
    assert _davinci(_run_words(dict(_facts("ascend", devices=False), launchcard_ascend_device_count=2))) == [
        "/dev/davinci0", "/dev/davinci1"]
    assert len(_davinci(_run_words(_facts("ascend", devices=False)))) == 8


def test_extra_container_args_go_before_the_image_escaped():
    words = _run_words({"launchcard_extra_container_args": ["--ulimit", "stack=67108864", "--label", "a b"]})
    image = words.index("--entrypoint")
    assert words[image - 4:image] == ["--ulimit", "stack=67108864", "--label", "a b"]
    p = plan(EX, normalize_placement([("h", {"address": "10.0.0.1", "recipes": ["vllm-monolithic"]})]))
    opts = uo.host_options({"launchcard_runtime": "docker", "launchcard_extra_container_args": ["a b"]})
    text = host_units(p["hosts"]["h"], opts)[0]["content"]
    assert '"a b"' in text


def test_image_digests_come_from_the_runtime_role():
    inst = _vllm()
    ref = inst["image"].split(":")[0] + "@sha256:" + "a" * 64
    words = command(inst, uo.host_options({"launchcard_runtime": "docker", "runtime_image_refs": {inst["image"]: ref}}))[0]
    assert ref in words and inst["image"] not in words


def test_units_name_the_secrets_file_token_or_not_and_the_token_only_in_the_secrets():
    # the same unit text whether or not the vault is loaded: a run without the token restarts nothing
    assert uo.host_options({})["secrets_env_file"] == uo.SECRETS_ENV_FILE
    assert uo.host_options({"launchcard_hf_token": ""})["secrets_env_file"] == uo.SECRETS_ENV_FILE
    assert uo.host_options({"launchcard_hf_token": "hf_x"})["secrets_env_file"] == uo.SECRETS_ENV_FILE
    hv = {"launchcard_hf_token": "hf_SECRET", "launchcard_secrets_env_file": "/etc/lc/s.env"}
    settings = uo.host_settings(hv)
    assert settings["secrets"] == {"HF_TOKEN": "hf_SECRET"} and settings["secrets_file"] == "/etc/lc/s.env"
    assert settings["options"]["secrets_env_file"] == "/etc/lc/s.env"
    assert "hf_SECRET" not in repr(settings["options"])
    # no token: nothing to write; the file stays unless launchcard_hf_token_remove asks
    assert uo.host_settings({}) == {"options": uo.host_options({}), "ready_helper": uo.READY_HELPER,
                                    "secrets_file": uo.SECRETS_ENV_FILE, "secrets": {}}


# -- a change of what the native virtualenv holds restarts the units (issue 12, item 5) -------------
def test_native_units_change_when_the_requirements_change():
    host = {"instances": [_vllm()]}
    base = {"launchcard_runtime": "native", "launchcard_runtime_native_packages": ["vllm==0.11.0"]}

    def unit_text(**extra):
        return host_units(host, uo.host_options(dict(base, **extra)))[0]["content"]

    first = unit_text()
    assert first == unit_text()  # the same requirements: the same file, nothing restarts
    marker = [line for line in first.splitlines() if line.startswith("# Native virtualenv requirements: sha256 ")]
    assert len(marker) == 1 and re.match(r"^# Native virtualenv requirements: sha256 [0-9a-f]{64}$", marker[0])
    assert unit_text(launchcard_runtime_native_packages=["vllm==0.11.1"]) != first
    assert unit_text(launchcard_runtime_native_pip_extra_args="--find-links /srv/wheels") != first
    # the unit text differs only in that line
    changed = unit_text(launchcard_runtime_native_packages=["vllm==0.11.1"]).splitlines()
    assert [a for a, b in zip(first.splitlines(), changed) if a != b] == marker
    # the runtime role's default: the hash-pinned lock of the host's vendor and engines (an unpinned `vllm` for
    # every host installed the CUDA wheel on AMD hosts and nothing that runs an SGLang or router recipe; a pinned
    # `vllm==0.23.0` left its dependencies unpinned), not a package list
    vllm_host = {"instances": [_vllm()]}
    assert uo.native_requirements({}, vllm_host) != uo.native_requirements(
        {"launchcard_runtime_native_packages": ["vllm==0.23.0"]}, vllm_host)


def test_container_units_carry_no_requirements_line():
    for runtime in ("docker", "podman"):
        opts = uo.host_options({"launchcard_runtime": runtime, "launchcard_runtime_native_packages": ["vllm"]})
        assert opts["native_requirements"] is None
        assert "requirements" not in host_units({"instances": [_vllm()]}, opts)[0]["content"]


def test_a_bad_package_list_is_named():
    with pytest.raises(uo.OptionError, match="launchcard_runtime_native_packages must be a list"):
        uo.host_options({"launchcard_runtime": "native", "launchcard_runtime_native_packages": 3})


# -- the units role's setup steps, read by the preflight call --------------------------------------

HELPER_SHA1 = "0" * 40


def _found(runtime="native", helper=None, weights=None, user=True, weights_dir="/var/lib/launchcard/models"):
    ok_helper = {"exists": True, "type": "file", "owner": "root", "group": "root", "mode": "0644",
                 "checksum": HELPER_SHA1}
    ok_weights = {"exists": True, "type": "directory", "owner": "launchcard", "group": "launchcard",
                  "mode": "0755", "checksum": None}
    return {"inspected": {uo.READY_HELPER: dict(ok_helper, **(helper or {})),
                          weights_dir: dict(ok_weights, **(weights or {}))},
            "users": {"launchcard": user} if runtime == "native" else {}}


def test_setup_reads_follow_the_options_builder():
    native = uo.setup_reads({"launchcard_runtime": "native", "launchcard_weights_dir": "/srv/hf"})
    assert native == {"inspect": ["/srv/hf", uo.READY_HELPER], "users": ["launchcard"]}
    assert uo.setup_reads({"launchcard_runtime": "podman"})["users"] == []


@pytest.mark.parametrize("found,runtime,needed", [
    (None, "native", True),
    (_found(), "native", False),
    (_found(helper={"checksum": "1" * 40}), "native", True),
    (_found(helper={"mode": "0755"}), "native", True),
    (_found(weights={"owner": "root"}), "native", True),
    (_found(user=False), "native", True),
    # containers: the user and the weights directory's owner are not the role's business
    (_found(runtime="podman", weights={"owner": "root"}), "podman", False),
])
def test_setup_needed(found, runtime, needed):
    opts = uo.host_options({"launchcard_runtime": runtime})
    assert uo.setup_needed(found, opts, HELPER_SHA1) is needed


STACKS = {"nvidia": "nvidia", "amd": "rocm", "ascend": "ascend"}
ENGINE_HOST = {"instances": [{"role": "prefill"}, {"role": "router"}]}
ROUTER_HOST = {"instances": [{"role": "router"}]}


@pytest.mark.parametrize("preflight, host_plan, run_tags, skip_tags, install, expected", [
    # a no-op run: the driver answered, the weights are staged: nothing to include
    ({"stack_vendor": "nvidia", "weights_staged": True}, ENGINE_HOST, ["all"], [], True, ["nvidia"]),
    ({"stack_vendor": "none", "weights_staged": True}, ENGINE_HOST, ["all"], [], True, []),
    # a bare AMD host: its stack, then preflight again, then the weights
    ({"stack_vendor": "amd", "bare_host": True}, ENGINE_HOST, ["all"], [], True, ["rocm", "preflight", "weights"]),
    # routers load no weights; a host outside the plan none either
    ({"stack_vendor": "none"}, ROUTER_HOST, ["all"], [], True, []),
    ({"stack_vendor": "none"}, None, ["all"], [], True, []),
    # a host the plan gives nothing, checked only for what it serves today (its record): no stack either
    ({"stack_vendor": "nvidia", "bare_host": True}, None, ["all"], [], True, []),
    # the stack provisioned another way
    ({"stack_vendor": "ascend", "bare_host": True}, ENGINE_HOST, ["all"], [], False, ["weights"]),
    # tags pick the parts; preflight not run (--tags weights): the weights are staged (the role checks)
    ({}, ENGINE_HOST, ["weights"], [], True, ["weights"]),
    ({"stack_vendor": "nvidia"}, ENGINE_HOST, ["stack"], [], True, ["nvidia"]),
    ({"stack_vendor": "nvidia"}, ENGINE_HOST, ["all"], ["stack"], True, ["weights"]),
    ({"stack_vendor": "nvidia"}, ENGINE_HOST, ["units"], [], True, []),
])
def test_setup_parts_are_what_preflight_found_missing(preflight, host_plan, run_tags, skip_tags, install, expected):
    assert uo.setup_parts(preflight, host_plan, STACKS, run_tags, skip_tags, install) == expected


@pytest.mark.parametrize("run_tags, skip_tags, runtime, units_prepare, expected", [
    # a no-op run: neither the runtime nor the units' setup has anything to do
    (["all"], [], False, False, []),
    # in the order deploy ran them as roles: the runtime, then the units' prepare.yml
    (["all"], [], True, True, ["runtime", "units"]),
    (["all"], [], False, True, ["units"]),
    # each has its tag: --tags units sets up the units but not the runtime; --skip-tags runtime leaves it out
    (["units"], [], True, True, ["units"]),
    (["runtime"], [], True, True, ["runtime"]),
    (["all"], ["runtime"], True, True, ["units"]),
])
def test_setup_parts_add_the_runtime_and_the_units_setup_where_needed(run_tags, skip_tags, runtime, units_prepare,
                                                                      expected):
    parts = uo.setup_parts({"stack_vendor": "none", "weights_staged": True}, ENGINE_HOST, STACKS, run_tags, skip_tags,
                           True, runtime, units_prepare)
    assert parts == expected


def test_a_plan_files_digests_fill_in_only_where_the_host_has_none():
    plan_refs = {"img:tag": "reg/img@sha256:" + "1" * 64}
    own = {"runtime_image_refs": {"img:tag": "reg/img@sha256:" + "2" * 64}}
    assert uo.host_options(uo.with_image_refs({"launchcard_runtime": "podman"}, plan_refs))["image_refs"] == plan_refs
    assert uo.host_options(uo.with_image_refs(own, plan_refs))["image_refs"] == own["runtime_image_refs"]
    assert uo.with_image_refs(own, None) is own
