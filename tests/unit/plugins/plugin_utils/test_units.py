# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd unit rendering: escaping proven by parsing back the way systemd
does (and by ``systemd-analyze verify`` where it exists), runtimes, secrets."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import CardError, load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_escape import (
    UnsafeValue,
    env_assignment,
    exec_line,
    exec_word,
)
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import command, host_units, render

HERE = os.path.dirname(os.path.abspath(__file__))
UNIT = os.path.dirname(os.path.dirname(HERE))
ROOT = os.path.dirname(os.path.dirname(UNIT))
EXAMPLE = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
VALID = os.path.join(UNIT, "cards", "valid")
MALFORMED = os.path.join(UNIT, "cards", "malformed")
SPECIAL = os.path.join(VALID, "07-special-characters.json")
INJECTION = "8\n[Service]\nExecStartPre=/bin/sh -c id"
TOKEN = "hf_SECRETtokenVALUE1234567890"


def _load(path):
    with open(path) as f:
        return load_card(f.read(), path)


EX = _load(EXAMPLE)


def _plan(card, hosts):
    return plan(card, normalize_placement([(h, {"address": a, "recipes": r}) for h, a, r in hosts]))


def _inst(card, recipe, hosts=None):
    p = _plan(card, hosts or [("h1", "10.0.0.1", [recipe])])
    return [i for hp in p["hosts"].values() for i in hp["instances"] if i["recipe"] == recipe][0]


# -- a reference parser: what systemd makes of a line ------------------------------------
_ESCAPES = {"\\": "\\", '"': '"', "'": "'"}


def _specifiers(text):
    """``%%`` -> ``%``; any other specifier would be expanded: refuse it."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "%":
            assert text[i + 1:i + 2] == "%", "unescaped specifier in %r" % text
            out.append("%")
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def systemd_words(value):
    """Split like extract_first_word(EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE): words
    end at unquoted whitespace, ``"..."`` and ``'...'`` group, a backslash
    escapes ``\\``, ``"`` or ``'`` (any other escape is refused: the renderer
    never writes one). A lone unquoted ``;`` is a command separator: refused."""
    words, i, n = [], 0, len(value)
    while True:
        while i < n and value[i] in " \t":
            i += 1
        if i >= n:
            return words
        word, quote, started = [], None, False
        while i < n and (quote or value[i] not in " \t"):
            c = value[i]
            if c == "\\":
                nxt = value[i + 1:i + 2]
                assert nxt in _ESCAPES, "unknown escape \\%s in %r" % (nxt, value)
                word.append(_ESCAPES[nxt])
                i += 2
                continue
            if quote is None and c in "\"'":
                quote, started = c, True
            elif c == quote:
                quote = None
            else:
                word.append(c)
            i += 1
        assert quote is None, "unbalanced quoting in %r" % value
        w = "".join(word)
        assert started or w != ";", "a lone ; would end the command"
        words.append(w)


def _dollars(word):
    """Exec-time expansion: ``$$`` -> ``$``; a single ``$`` would expand a variable."""
    out, i = [], 0
    while i < len(word):
        if word[i] == "$":
            assert word[i + 1:i + 2] == "$", "unescaped $ in %r" % word
            out.append("$")
            i += 2
            continue
        out.append(word[i])
        i += 1
    return "".join(out)


def parse_exec(value):
    return [_dollars(w) for w in systemd_words(_specifiers(value))]


def parse_environment(value):
    words = systemd_words(_specifiers(value))
    return dict(w.split("=", 1) for w in words)


def native_env(words):
    """``(environment, command)`` of a native ExecStart's words: env(1)'s ``NAME=VALUE`` words, then the engine."""
    assert words[0] == "/usr/bin/env", words
    k = next(i for i, w in enumerate(words[1:], 1) if "=" not in w)
    return dict(w.split("=", 1) for w in words[1:k]), words[k:]


def container_env(words):
    """The ``--env NAME=VALUE`` pairs of a container's run words (docker/podman run, Quadlet's PodmanArgs=)."""
    return dict(words[i + 1].split("=", 1) for i, w in enumerate(words) if w == "--env")


def engine_environment(text):
    """What a rendered unit (any runtime) gives its engine as environment, parsed the way systemd and the runtime do."""
    podman_args = directives(text, "PodmanArgs")
    if podman_args:
        return container_env(parse_exec(podman_args[0]))
    words = parse_exec(directives(text, "ExecStart")[0])
    return native_env(words)[0] if words[0] == "/usr/bin/env" else container_env(words)


def directives(text, key):
    """Values of ``key=`` lines, continuation lines joined as systemd does (systemd.syntax(7))."""
    joined = text.replace("\\\n", " ")
    return [line.split("=", 1)[1] for line in joined.splitlines() if line.startswith(key + "=")]


# -- exec_word / env_assignment -----------------------------------------------------------
@pytest.mark.parametrize("word,expect", [
    ("plain", "plain"),
    ("--port=30000", "--port=30000"),
    ("100%", "100%%"),
    ("%h", "%%h"),
    ("$HOME", "$$HOME"),
    ("${X}", "$${X}"),
    ("a b", '"a b"'),
    ("", '""'),
    (";", '";"'),
    ("a;b", '"a;b"'),
    ('say "hi"', '"say \\"hi\\""'),
    ("it's", '"it\'s"'),
    ("back\\slash", '"back\\\\slash"'),
    ("50% of $X here", '"50%% of $$X here"'),
    ('{"kv_role":"kv_both"}', '"{\\"kv_role\\":\\"kv_both\\"}"'),
    ("ünïcödé", "ünïcödé"),
])
def test_exec_word(word, expect):
    assert exec_word(word) == expect
    assert parse_exec(exec_word(word)) == [word]


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\tb", "a\x00b", "a\x7fb", "a\x1bb", INJECTION])
def test_control_characters_are_refused(bad):
    with pytest.raises(UnsafeValue, match="control character"):
        exec_word(bad, "argv[3]")
    with pytest.raises(UnsafeValue, match=r"argv\[1\]"):
        exec_line(["vllm", bad])
    with pytest.raises(UnsafeValue):
        env_assignment("X", bad)


@pytest.mark.parametrize("name,value,expect", [
    ("A", "1", '"A=1"'),
    ("EMPTY", "", '"EMPTY="'),
    ("P", "a b $HOME 100%", '"P=a b $HOME 100%%"'),
    ("Q", "single ' double \" backslash \\ end", '"Q=single \' double \\" backslash \\\\ end"'),
    ("S", "%i %n %% $$ ${X}", '"S=%%i %%n %%%% $$ ${X}"'),
])
def test_env_assignment(name, value, expect):
    assert env_assignment(name, value) == expect
    assert parse_environment(expect) == {name: value}


@pytest.mark.parametrize("name", ["1A", "A-B", "A B", "A=B", "", "A\nB"])
def test_env_assignment_refuses_a_bad_name(name):
    with pytest.raises(UnsafeValue, match="not an identifier"):
        env_assignment(name, "v")


_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=[chr(c) for c in range(32)] + ["\x7f"]),
                max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=5))
def test_exec_line_round_trips(words):
    assert parse_exec(exec_line(words)) == words


@settings(max_examples=60, deadline=None)
@given(_TEXT)
def test_env_assignment_round_trips(value):
    assert parse_environment(env_assignment("V", value)) == {"V": value}


# -- the special-characters card -------------------------------------------------------------
@pytest.fixture(scope="module")
def special():
    if not os.path.exists(SPECIAL):
        pytest.skip("no special-characters card in the corpus")
    card = _load(SPECIAL)
    return card, _inst(card, card["recipes"][0]["name"])


def test_special_card_execstart_parses_back_to_the_card_argv_native(special):
    card, inst = special
    text = render(inst, {"runtime": "native", "native_venv": "/opt/lc venv%"})
    (line,) = directives(text, "ExecStart")
    # the card's argv, then the revision pin the planner appends, then the graceful stop vLLM needs (vLLM's default
    # --shutdown-timeout 0 aborts)
    tail = ["--revision", card["model"]["revision"], "--shutdown-timeout", "30"]
    assert native_env(parse_exec(line))[1] == ["/opt/lc venv%/bin/vllm"] + card["recipes"][0]["argv"][1:] + tail


def test_special_card_execstart_parses_back_to_the_card_argv_docker(special):
    card, inst = special
    text = render(inst, {"runtime": "docker"})
    (line,) = directives(text, "ExecStart")
    words = parse_exec(line)
    argv = card["recipes"][0]["argv"]
    k = words.index("--entrypoint")
    assert words[k:k + 3] == ["--entrypoint", "vllm", "vllm/vllm-openai:v0.11.2"]
    assert words[k + 3:] == argv[1:] + ["--revision", card["model"]["revision"], "--shutdown-timeout", "30"]


def test_special_card_environment_parses_back(special):
    card, inst = special
    for options in ({"runtime": "native"}, {"runtime": "docker"}, {"runtime": "podman", "podman_quadlet": True}):
        text = render(inst, options)
        # on the engine's command line only (env(1) or --env): no Environment= reaches the unit's other commands
        assert directives(text, "Environment") == [], options
        env = engine_environment(text)
        for name, value in card["recipes"][0]["env"].items():
            assert env[name] == value, (options, name)


def _native_venv(tmp_path):
    venv = tmp_path / "venv with space"
    (venv / "bin").mkdir(parents=True)
    for exe in ("vllm", "sglang", "python", "python3"):
        path = venv / "bin" / exe
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(venv)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verifies_rendered_native_units(tmp_path):
    venv = _native_venv(tmp_path)
    units_dir = tmp_path / "units"
    units_dir.mkdir()
    fleet = _plan(EX, [("a", "10.0.0.1", ["vllm-aggregated", "sglang-encoder"]),
                       ("b", "10.0.0.2", ["sglang-language", "sglang-aggregated"]),
                       ("c", "10.0.0.3", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    instances = [i for hp in fleet["hosts"].values() for i in hp["instances"]]
    if os.path.exists(SPECIAL):
        card = _load(SPECIAL)
        instances.append(_inst(card, card["recipes"][0]["name"]))
    secrets = tmp_path / "secrets.env"
    secrets.write_text("HF_TOKEN=%s\n" % TOKEN)
    paths = []
    for inst in instances:
        path = units_dir / inst["unit"]
        path.write_text(render(inst, {"runtime": "native", "native_venv": venv, "secrets_env_file": str(secrets)}))
        paths.append(str(path))
    res = subprocess.run(["systemd-analyze", "verify", "--man=no"] + paths, capture_output=True, text=True,
                         timeout=60, check=False)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    for word in ("Ignoring", "Unbalanced", "Unknown", "bad unit file", "not executable"):
        assert word not in out, out


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_rejects_a_missing_executable(tmp_path):
    """The verify test above can fail: a unit whose binary is absent does (a native unit starts /usr/bin/env, so the
    container client's path stands in)."""
    inst = _inst(EX, "vllm-aggregated")
    path = tmp_path / inst["unit"]
    path.write_text(render(inst, {"runtime": "docker", "docker_bin": str(tmp_path / "nowhere" / "docker")}))
    res = subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)], capture_output=True, text=True,
                         timeout=60, check=False)
    assert res.returncode != 0


# -- injection ---------------------------------------------------------------------------------
def test_the_schema_refuses_a_directive_in_argv():
    doc = json.loads(open(EXAMPLE).read())
    doc["envs"][0]["argv"][6] = INJECTION
    with pytest.raises(CardError) as exc:
        load_card(json.dumps(doc), "x")
    assert [p for p, dummy in exc.value.errors if p.startswith("envs[0].argv[6]")]
    with pytest.raises(CardError):
        _load(os.path.join(MALFORMED, "14-argv-newline-injection.json"))


@pytest.mark.parametrize("field", ["argv", "env", "host", "id", "image"])
def test_render_refuses_a_directive_fed_directly(field):
    inst = dict(_inst(EX, "vllm-aggregated"))
    inst["env"] = dict(inst["env"])
    if field == "argv":
        inst["argv"] = inst["argv"] + ["--x", INJECTION]
    elif field == "env":
        inst["env"]["X"] = INJECTION
    else:
        inst[field] = INJECTION
    # every unit kind: a native or docker .service, a podman Quadlet .container (Image= is taken literally there)
    for options in ({"runtime": "native"}, {"runtime": "docker"}, {"runtime": "podman", "podman_quadlet": True}):
        if field == "image" and options["runtime"] == "native":
            continue  # native units run no image
        with pytest.raises(UnsafeValue):
            render(inst, options)


def test_native_refuses_an_executable_path_trick():
    inst = dict(_inst(EX, "vllm-aggregated"))
    inst["argv"] = ["-vllm"] + inst["argv"][1:]
    with pytest.raises(UnsafeValue, match="not a plain program name"):
        command(inst, {"runtime": "native"})


# -- docker --------------------------------------------------------------------------------------
def test_docker_vllm_unit():
    inst = _inst(EX, "vllm-aggregated")
    digest = "vllm/vllm-openai@sha256:" + "a" * 64
    start, stop, env = command(inst, {"runtime": "docker", "image_refs": {"vllm/vllm-openai:nightly": digest},
                                      "secrets_env_file": "/etc/launchcard/secrets.env"})
    assert start[:9] == ["/usr/bin/docker", "run", "--rm", "--name", inst["id"], "--network", "host", "--ipc", "host"]
    k = start.index("--gpus")
    assert start[k + 1] == '"device=0,1,2,3,4,5,6,7"'
    assert start[start.index("-v") + 1] == "/var/lib/launchcard/models:/root/.cache/huggingface"
    # the engine's environment is the container's (--env NAME=VALUE), never the docker client's
    assert container_env(start) == env
    assert sorted(env) == ["DG_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE", "HF_HOME", "HF_HUB_OFFLINE",
                           "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "VLLM_ENGINE_READY_TIMEOUT_S",
                           "VLLM_USE_RUST_FRONTEND", "XDG_CACHE_HOME"]
    # offline (launchcard_hf_offline, the default): the engine never downloads, so it gets no token
    assert "-e" not in start and "HF_TOKEN" not in start
    online = command(inst, {"runtime": "docker", "hf_offline": False, "secrets_env_file": "/etc/launchcard/secrets.env"})
    assert "--env-file" not in online[0] and online[0][online[0].index("HF_TOKEN") - 1] == "-e"  # from EnvironmentFile=
    k = start.index("--entrypoint")
    assert start[k:k + 3] == ["--entrypoint", "vllm", digest]
    assert start[k + 3:] == inst["argv"][1:] + ["--shutdown-timeout", "30"]
    assert "vllm/vllm-openai:nightly" not in start
    assert start[start.index("--stop-timeout") + 1] == "60"
    assert stop == ["/usr/bin/docker", "stop", "-t", "60", inst["id"]]
    assert env["HF_HOME"] == "/root/.cache/huggingface" and env["HF_HUB_OFFLINE"] == "1"
    assert "CUDA_VISIBLE_DEVICES" not in env


def test_docker_sglang_uses_all_gpus_and_base_gpu_id():
    p = _plan(EX, [("pd", "10.0.0.1", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    pre, dec, rtr = p["hosts"]["pd"]["instances"]
    start, dummy, env = command(dec, {"runtime": "docker"})
    assert start[start.index("--gpus") + 1] == "all"
    assert "CUDA_VISIBLE_DEVICES" not in env
    assert start[start.index("--base-gpu-id") + 1] == "2"
    start = command(rtr, {"runtime": "docker"})[0]
    assert "--gpus" not in start
    k = start.index("--entrypoint")
    assert start[k:k + 5] == ["--entrypoint", "python", "lmsysorg/sglang:latest", "-m", "sglang_router.launch_router"]


def test_docker_unit_text():
    inst = _inst(EX, "vllm-aggregated")
    text = render(inst, {"runtime": "docker", "stop_timeout_s": 45})
    assert "Requires=docker.service" in text.splitlines()
    assert directives(text, "ExecStartPre")[-1] == "-/usr/bin/docker rm -f %s" % inst["id"]
    assert directives(text, "ExecStop") == ["/usr/bin/docker stop -t 45 %s" % inst["id"]]
    assert directives(text, "ExecStopPost") == ["-/usr/bin/docker rm -f %s" % inst["id"]]
    assert directives(text, "TimeoutStopSec") == ["75"]
    assert parse_exec(directives(text, "ExecStart")[0])[0] == "/usr/bin/docker"
    assert text.endswith("WantedBy=multi-user.target\n")


def test_a_podman_unit_logs_each_line_once_through_its_own_stdout_and_a_docker_unit_keeps_its_driver():
    inst = _inst(EX, "sglang-encoder")
    podman = command(inst, {"runtime": "podman"})[0]
    # passthrough: no conmon journald copy beside the attached client's (the walkthrough saw every line twice)
    assert [w for w in podman if w.startswith("--log-driver")] == ["--log-driver=passthrough"]
    assert podman.index("--log-driver=passthrough") < podman.index("--entrypoint")
    assert not [w for w in command(inst, {"runtime": "docker"})[0] if w.startswith("--log-driver")]


def test_podman_cgroups_mode_is_one_flag_right_after_the_run_options():
    inst = _inst(EX, "sglang-encoder")
    default = command(inst, {"runtime": "podman"})[0]
    assert not [w for w in default if w.startswith("--cgroups")]
    start = command(inst, {"runtime": "podman", "podman_cgroups": "disabled"})[0]
    assert start[:9] == ["/usr/bin/podman", "run", "--log-driver=passthrough", "--name", inst["id"], "--network", "host",
                         "--ipc", "host"]
    assert start[9] == "--cgroups=disabled"
    # a podman option: docker units never get it
    assert not [w for w in command(inst, {"runtime": "docker", "podman_cgroups": "disabled"})[0]
                if w.startswith("--cgroups")]
    with pytest.raises(ValueError, match="podman_cgroups must be one of enabled, disabled, no-conmon, split"):
        command(inst, {"runtime": "podman", "podman_cgroups": "off"})


def test_podman_nvidia_uses_cdi_devices():
    inst = _inst(EX, "vllm-aggregated")
    start, stop = command(inst, {"runtime": "podman"})[:2]
    assert start[0] == "/usr/bin/podman"
    assert [start[k + 1] for k, w in enumerate(start) if w == "--device"] == [
        "nvidia.com/gpu=%d" % g for g in range(8)]
    enc = _inst(EX, "sglang-encoder")
    assert [w for w in command(enc, {"runtime": "podman"})[0] if w.startswith("nvidia.com/")] == ["nvidia.com/gpu=all"]
    assert stop[:2] == ["/usr/bin/podman", "stop"]
    assert "Requires=docker.service" not in render(inst, {"runtime": "podman"})


def test_container_gpu_selection_per_vendor():
    """Two vLLM TP2 instances on one host (card 03 pins CUDA_VISIBLE_DEVICES 0,1 / 2,3)."""
    card = _load(os.path.join(VALID, "03-vllm-pd-nixl.json"))
    second = _inst(card, "vllm-aggregated-1", [("h", "10.0.0.1", ["vllm-aggregated-0", "vllm-aggregated-1"])])
    assert second["gpu_ids"] == [2, 3]
    # NVIDIA container: the runtime exposes GPUs 2,3 as 0,1; a CUDA_VISIBLE_DEVICES=2,3 would hide both
    start, dummy, env = command(second, {"runtime": "docker"})
    assert start[start.index("--gpus") + 1] == '"device=2,3"'
    assert "CUDA_VISIBLE_DEVICES" not in env
    # AMD/Ascend containers see every device: select with the vendor's variable
    start, dummy, env = command(second, {"runtime": "docker", "vendor": "amd", "amd_render_gid": 109})
    assert env["HIP_VISIBLE_DEVICES"] == "2,3" and "CUDA_VISIBLE_DEVICES" not in env
    assert ["--device", "/dev/kfd"] == start[start.index("/dev/kfd") - 1:start.index("/dev/kfd") + 1]
    assert "--cap-add" not in start and "seccomp=unconfined" not in start and "109" in start
    start, dummy, env = command(second, {"runtime": "docker", "vendor": "ascend", "ascend_device_count": 4})
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == "2,3"
    assert [w for w in start if w.startswith("/dev/davinci") and w[-1].isdigit()] == [
        "/dev/davinci0", "/dev/davinci1", "/dev/davinci2", "/dev/davinci3"]
    # alone on a host it gets GPUs 0,1 whatever the card pinned
    alone = _inst(card, "vllm-aggregated-1")
    assert command(alone, {"runtime": "native"})[2]["CUDA_VISIBLE_DEVICES"] == "0,1"


# -- native ---------------------------------------------------------------------------------------
def test_native_vllm_unit():
    inst = _inst(EX, "vllm-aggregated", [("h", "10.0.0.1", ["sglang-encoder", "vllm-aggregated"])])
    start, stop, env = command(inst, {"runtime": "native", "native_venv": "/opt/lc/venv/"})
    assert native_env(start) == (env, ["/opt/lc/venv/bin/vllm"] + inst["argv"][1:] + ["--shutdown-timeout", "30"])
    assert stop is None
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
    assert env["HF_HOME"] == "/var/lib/launchcard/models" and env["HF_HUB_OFFLINE"] == "1"
    text = render(inst, {"runtime": "native", "native_venv": "/opt/lc/venv"})
    assert engine_environment(text)["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
    assert directives(text, "Environment") == [] and "docker" not in text
    assert directives(text, "ExecStop") == [] and "rm" not in " ".join(directives(text, "ExecStartPre"))


def test_native_sglang_selects_gpus_in_argv_only():
    enc = _inst(EX, "sglang-encoder", [("h", "10.0.0.1", ["vllm-aggregated", "sglang-encoder"])])
    start, dummy, env = command(enc, {"runtime": "native", "hf_offline": False})
    assert "CUDA_VISIBLE_DEVICES" not in env and "HF_HUB_OFFLINE" not in env
    assert start[start.index("--base-gpu-id") + 1] == "8"
    rtr = _inst(EX, "sglang-router", [("h", "10.0.0.1", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    start = command(rtr, {"runtime": "native"})[0]
    assert native_env(start)[1][:3] == ["/opt/launchcard/venv/bin/python", "-m", "sglang_router.launch_router"]


def test_native_secrets_file():
    inst = _inst(EX, "vllm-aggregated")
    online = {"runtime": "native", "hf_offline": False}
    text = render(inst, dict(online, secrets_env_file="/etc/launch card/secrets$1.env"))
    # EnvironmentFile= is a literal path: no quotes, no $$; % doubled
    assert directives(text, "EnvironmentFile") == ["-/etc/launch card/secrets$1.env"]
    text = render(inst, dict(online, secrets_env_file="/etc/100%/s.env"))
    assert directives(text, "EnvironmentFile") == ["-/etc/100%%/s.env"]
    assert directives(render(inst, {"runtime": "native"}), "EnvironmentFile") == []


@pytest.mark.parametrize("runtime,ready,start,expect", [
    ("docker", "3600", 1800, 3900),
    ("native", "3600", 5000, 5000),
    ("docker", None, 1800, 1800),
])
def test_timeout_start_exceeds_the_engine_ready_timeout(runtime, ready, start, expect):
    inst = dict(_inst(EX, "vllm-aggregated"))
    inst["env"] = {k: v for k, v in inst["env"].items() if k != "VLLM_ENGINE_READY_TIMEOUT_S"}
    if ready is not None:
        inst["env"]["VLLM_ENGINE_READY_TIMEOUT_S"] = ready
    text = render(inst, {"runtime": runtime, "start_timeout_s": start})
    assert directives(text, "TimeoutStartSec") == [str(expect)]


@pytest.mark.parametrize("ready", ["soon", "-5", "9" * 400])
def test_a_ready_timeout_the_unit_cannot_carry_is_refused(ready):
    inst = dict(_inst(EX, "vllm-aggregated"))
    inst["env"] = dict(inst["env"], VLLM_ENGINE_READY_TIMEOUT_S=ready)
    with pytest.raises(UnsafeValue, match="^env.VLLM_ENGINE_READY_TIMEOUT_S: expected"):
        render(inst, {"runtime": "docker"})


def test_card_ready_timeout_gives_a_start_timeout_above_it():
    text = render(_inst(EX, "vllm-aggregated"))
    assert int(directives(text, "TimeoutStartSec")[0]) >= 3600 + 300


def test_options_are_validated():
    inst = _inst(EX, "vllm-aggregated")
    with pytest.raises(ValueError, match="runtime must be one of docker, podman, native, found 'lxc'"):
        render(inst, {"runtime": "lxc"})
    with pytest.raises(ValueError, match="vendor must be one of"):
        render(inst, {"vendor": "intel"})


def test_secret_token_never_in_a_unit(tmp_path):
    secrets = tmp_path / "secrets.env"
    secrets.write_text("HF_TOKEN=%s\n" % TOKEN)
    p = _plan(EX, [("a", "10.0.0.1", ["vllm-aggregated"]), ("b", "10.0.0.2", ["sglang-encoder", "sglang-language"]),
                   ("c", "10.0.0.3", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    for runtime in ("docker", "podman", "native"):
        for host, hp in p["hosts"].items():
            for u in host_units(hp, {"runtime": runtime, "secrets_env_file": str(secrets), "hf_offline": False}):
                assert TOKEN not in u["content"]
                assert "HF_TOKEN=" not in u["content"]  # containers get the name (-e HF_TOKEN), never a value
                # an engine names the file to read it, its liveness probe to be kept out of it (a timer reads none)
                assert str(secrets) in u["content"] or u["name"].endswith("-liveness.timer")
            # offline engines never download: no unit of theirs reads the token
            for u in host_units(hp, {"runtime": runtime, "secrets_env_file": str(secrets)}):
                assert "HF_TOKEN" not in u["content"]
                assert str(secrets) not in u["content"] or "InaccessiblePaths=-%s\n" % secrets in u["content"]


def test_host_units_names_and_order():
    p = _plan(EX, [("c", "10.0.0.3", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    units = host_units(p["hosts"]["c"])
    assert [u["name"] for u in units] == ["launchcard-glm-5.3-flash-sglang-%s-0.service" % r
                                          for r in ("prefill", "decode", "router")]
    assert [u["instance"] for u in units] == ["glm-5.3-flash-sglang-%s-0" % r for r in ("prefill", "decode", "router")]
    assert host_units({}) == []


def test_description_and_syslog_identifier_escape_specifiers():
    inst = dict(_inst(EX, "vllm-aggregated"))
    inst["host"] = "gpu%h"
    text = render(inst)
    assert directives(text, "Description")[0].endswith("on gpu%%h")


@pytest.mark.parametrize("runtime", ["docker", "podman"])
def test_only_docker_removes_its_container_by_the_clients_rm(runtime):
    # podman's client exits 127 when conmon's --rm cleanup removes the container before its wait reads the status
    # (the stopped unit is left failed); the unit's ExecStopPost= rm -f removes it instead
    inst = _inst(EX, "sglang-encoder")
    text = render(inst, {"runtime": runtime})
    assert ("--rm" in parse_exec(directives(text, "ExecStart")[0])) == (runtime == "docker")
    assert directives(text, "ExecStopPost") == ["-/usr/bin/%s rm -f %s" % (runtime, inst["id"])]
