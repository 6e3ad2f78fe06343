# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/render.yml, run for real with ansible-playbook, contacting no host.

Three placements of the example card: the card's own (prefill, decode and
router on one host), one role per host (the sandbox inventory) and two
prefill + two decode + a router. Every unit written must pass
``systemd-analyze verify`` (its executables exist in a throwaway virtualenv
directory), and a malformed card must write nothing.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "integration", "render")
BIN = os.path.dirname(sys.executable)
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
           PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as _f:
    CARD = json.load(_f)


def render(inventory, out, venv, *extra):
    return subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "playbooks/render.yml", "-i", inventory,
         "-e", "launchcard_render_dir=%s" % out, "-e", "launchcard_runtime=native",
         "-e", "render_native_venv=%s" % venv] + list(extra),
        cwd=ROOT, env=ENV, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A directory whose bin/ holds every program the card's argv starts."""
    path = tmp_path_factory.mktemp("venv")
    os.makedirs(path / "bin")
    for exe in sorted({env["argv"][0] for env in CARD["envs"]}):
        script = path / "bin" / exe
        script.write_text("#!/bin/sh\nexit 0\n")
        script.chmod(0o755)
    return str(path)


def rendered(out):
    hosts = {}
    for folder in sorted(glob.glob(os.path.join(out, "*"))):
        with open(os.path.join(folder, "plan.json")) as f:
            hosts[os.path.basename(folder)] = json.load(f)
    return hosts


def verify(unit_paths):
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed")
    for path in unit_paths:
        res = subprocess.run(["systemd-analyze", "verify", path], capture_output=True, text=True, check=False)
        assert res.returncode == 0, (path, res.stdout, res.stderr)


@pytest.mark.parametrize("inventory", [
    "tests/integration/render/card-own.ini",
    "inventories/sandbox/gpus.ini",
    "tests/integration/render/two-by-two.ini",
])
def test_render_writes_verified_units(inventory, venv, tmp_path):
    out = str(tmp_path / "out")
    res = render(inventory, out, venv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    hosts = rendered(out)
    units = glob.glob(os.path.join(out, "*", "launchcard-*.service"))
    assert len(units) == sum(len(h["instances"]) for h in hosts.values()) > 0
    for host, hp in hosts.items():
        for inst in hp["instances"]:
            with open(os.path.join(out, host, inst["unit"])) as f:
                text = f.read()
            assert "ExecStart=%s/bin/%s " % (venv, inst["argv"][0]) in text
    verify(units)


def test_card_own_placement_keeps_the_card_argv(venv, tmp_path):
    out = str(tmp_path / "out")
    assert render("tests/integration/render/card-own.ini", out, venv).returncode == 0
    pd = rendered(out)["r-pd"]["instances"]
    assert [i["recipe"] for i in pd] == ["sglang-prefill", "sglang-decode", "sglang-router"]
    for inst in pd:
        assert inst["argv"] == CARD["envs"][inst["recipe_index"]]["argv"]
        assert inst["changes"] == []
    assert [i["gpu_ids"] for i in pd] == [[0, 1], [2, 3], []]


def test_former_recipe_names_render_under_the_new_names_with_a_deprecation(venv, tmp_path):
    out = str(tmp_path / "out")
    res = render("tests/integration/render/former-names.ini", out, venv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    text = " ".join((res.stdout + res.stderr).split())
    assert "[DEPRECATION WARNING]" in text
    assert "launchcard_recipes names 'vllm-monolithic'; the role is now called 'aggregated'" in text
    hosts = rendered(out)
    assert {h: [i["recipe"] for i in hp["instances"]] for h, hp in hosts.items()} == {
        "f-vllm": ["vllm-aggregated"], "f-cp": ["sglang-aggregated"]}
    assert os.path.exists(os.path.join(out, "f-vllm", "launchcard-glm-5.3-flash-vllm-aggregated-0.service"))


def test_two_by_two_router_lists_every_worker(venv, tmp_path):
    out = str(tmp_path / "out")
    assert render("tests/integration/render/two-by-two.ini", out, venv).returncode == 0
    hosts = rendered(out)
    argv = hosts["r-router"]["instances"][0]["argv"]
    line = " ".join(argv)
    for addr in ("10.20.1.11", "10.20.1.12"):
        assert "--prefill http://%s:31000 8998" % addr in line
    for addr in ("10.20.1.21", "10.20.1.22"):
        assert "--decode http://%s:32000" % addr in line
    assert argv.count("--prefill") == 2 and argv.count("--decode") == 2
    # decode hosts own two GPUs each: the card's --base-gpu-id 2 becomes 0
    for h in ("r-d1", "r-d2"):
        d = hosts[h]["instances"][0]["argv"]
        assert d[d.index("--base-gpu-id") + 1] == "0"


@pytest.mark.parametrize("name", ["14-argv-newline-injection.json", "13-argv-element-number.json"])
def test_malformed_card_writes_nothing(name, venv, tmp_path):
    with open(os.path.join(ROOT, "tests", "unit", "cards", "malformed", "expected.json")) as f:
        expected = json.load(f)[name]
    out = str(tmp_path / "out")
    res = render("inventories/sandbox/gpus.ini", out, venv,
                 "-e", "launchcard_card_src=%s" % os.path.join(ROOT, "tests", "unit", "cards", "malformed", name))
    assert res.returncode != 0
    assert expected["path"] in res.stdout + res.stderr
    assert not os.path.exists(out) or not os.listdir(out)


def test_card_checksum_is_enforced(venv, tmp_path):
    path = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    wrong = str(tmp_path / "wrong")
    res = render("tests/integration/render/two-by-two.ini", wrong, venv,
                 "-e", "launchcard_card_checksum=sha256:%s" % ("0" * 64))
    assert res.returncode != 0
    assert "checksum" in res.stdout and digest in res.stdout
    assert not os.path.exists(wrong) or not os.listdir(wrong)
    right = str(tmp_path / "right")
    res = render("tests/integration/render/two-by-two.ini", right, venv,
                 "-e", "launchcard_card_checksum=sha256:%s" % digest)
    assert res.returncode == 0, res.stdout[-2000:]
    assert len(os.listdir(right)) == 5
