# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Units fit for production: mount dependency, engine user, sandboxing, readiness, secrets line.

systemd-analyze (when installed) checks what systemd makes of the rendered
files: ``verify`` that every directive is known and well-formed, and
``security --offline`` that the native engine unit is far less exposed than
an unhardened one.
"""

from __future__ import annotations

import http.server
import os
import re
import shutil
import socketserver
import subprocess
import sys
import threading

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import (
    HARDENING,
    WAIT_READY,
    render,
)
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units import engine_environment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
WAIT_READY_SRC = os.path.join(ROOT, "roles", "units", "files", "wait-ready.py")
with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as _f:
    EX = load_card(_f.read(), "glm-5.3-flash.json")
SECRETS = "/etc/launchcard/secrets.env"


def _instances():
    p = plan(EX, normalize_placement([("a", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"]}),
                                      ("b", {"address": "10.0.0.2", "recipes": ["sglang-prefill", "sglang-decode"]}),
                                      ("c", {"address": "10.0.0.3", "recipes": ["sglang-router"]})]))
    return {i["recipe"]: i for hp in p["hosts"].values() for i in hp["instances"]}


INST = _instances()


def _directives(text, section):
    body = text.split("[%s]" % section, 1)[1].split("\n[", 1)[0]
    return [line for line in body.splitlines() if line and not line.startswith((" ", "#"))]


@pytest.mark.parametrize("runtime", ["native", "docker", "podman"])
def test_every_unit_requires_the_weights_mount_and_checks_readiness(runtime):
    for inst in INST.values():
        text = render(inst, {"runtime": runtime, "weights_dir": "/srv/hf", "secrets_env_file": SECRETS,
                             "hf_offline": False})
        assert "RequiresMountsFor=/srv/hf" in _directives(text, "Unit")
        post = [d for d in _directives(text, "Service") if d.startswith("ExecStartPost=")]
        timeout = [d for d in _directives(text, "Service") if d.startswith("TimeoutStartSec=")][0].split("=")[1]
        # bounded by the unit's own start timeout
        assert post == ["ExecStartPost=%s %s %s" % (" ".join(WAIT_READY), inst["health_url"], timeout)]
        assert WAIT_READY[:2] == ("/usr/bin/python3", "-I")  # the card's PYTHON* variables do not reach it
        # the same secrets line with or without a token: the option is always set by the role
        assert ("EnvironmentFile=-%s" % SECRETS) in _directives(text, "Service")
        # an offline engine (the default) never downloads: its unit does not read the token
        offline = render(inst, {"runtime": runtime, "weights_dir": "/srv/hf", "secrets_env_file": SECRETS})
        assert not [d for d in _directives(offline, "Service") if d.startswith("EnvironmentFile=")]


def test_weights_dir_that_cannot_be_a_mount_dependency_is_refused():
    for bad in ("/srv/h f", "relative/dir"):
        with pytest.raises(ValueError, match="weights_dir"):
            render(INST["vllm-aggregated"], {"runtime": "native", "weights_dir": bad})


def test_native_engines_run_as_the_launchcard_user_sandboxed():
    text = render(INST["sglang-decode"], {"runtime": "native", "vendor": "amd", "weights_dir": "/srv/hf"})
    service = _directives(text, "Service")
    assert "User=launchcard" in service and "Group=launchcard" in service
    assert "SupplementaryGroups=render video" in service  # AMD's /dev/kfd and /dev/dri
    assert "ReadWritePaths=/srv/hf" in service and "CacheDirectory=launchcard" in service
    assert set(HARDENING) <= set(service)
    assert engine_environment(text)["HOME"] == "/var/cache/launchcard"
    for unsafe in ("PrivateDevices=", "DevicePolicy=", "ProtectClock=", "MemoryDenyWriteExecute=", "RemoveIPC="):
        assert not [d for d in service if d.startswith(unsafe)], unsafe  # GPUs, JIT, shared memory
    # the router has no GPUs: no device groups; NVIDIA nodes are world-usable: none either
    assert not [d for d in _directives(render(INST["sglang-router"], {"runtime": "native", "vendor": "amd"}), "Service")
                if d.startswith("SupplementaryGroups=")]
    assert not [d for d in _directives(render(INST["sglang-decode"], {"runtime": "native"}), "Service")
                if d.startswith("SupplementaryGroups=")]


def test_container_units_run_the_runtime_client_as_root_unchanged():
    service = _directives(render(INST["vllm-aggregated"], {"runtime": "docker", "secrets_env_file": SECRETS}), "Service")
    assert not [d for d in service if d.startswith(("User=", "ProtectSystem=", "NoNewPrivileges="))]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_accepts_the_hardened_unit_and_scores_it_low(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for exe in ("vllm", "sglang", "python3"):
        (venv / "bin" / exe).write_text("#!/bin/sh\n")
        (venv / "bin" / exe).chmod(0o755)
    scores = {}
    for name, opts in (("hardened", {"runtime": "native", "native_venv": str(venv), "secrets_env_file": SECRETS}),
                       ("container", {"runtime": "podman", "podman_bin": str(venv / "bin" / "python3")})):
        path = tmp_path / ("%s-%s" % (name, INST["vllm-aggregated"]["unit"]))
        path.write_text(render(INST["vllm-aggregated"], opts))
        res = subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)], capture_output=True, text=True,
                             timeout=60, check=False)
        out = res.stdout + res.stderr
        assert res.returncode == 0 and not re.search(r"Unknown|Ignoring|bad unit file|Invalid", out), out
        sec = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", str(path)],
                             capture_output=True, text=True, timeout=60, check=False)
        scores[name] = float(re.search(r"Overall exposure level for \S+: (\d+\.\d)", sec.stdout).group(1))
    assert scores["hardened"] <= 3.0 < 9.0 <= scores["container"], scores


class _Engine(http.server.BaseHTTPRequestHandler):
    answers = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        status = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()


def _serve(answers):
    _Engine.answers = list(answers)
    server = socketserver.TCPServer(("127.0.0.1", 0), _Engine)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_wait_ready_returns_once_the_engine_answers_200():
    server = _serve([503, 200])
    try:
        url = "http://127.0.0.1:%d/health" % server.server_address[1]
        res = subprocess.run([sys.executable, WAIT_READY_SRC, url, "30"], capture_output=True, text=True, timeout=60,
                             check=False)
        assert res.returncode == 0, res.stderr
    finally:
        server.shutdown()
        server.server_close()


def test_wait_ready_gives_up_after_its_deadline_and_says_why():
    server = _serve([503])
    try:
        url = "http://127.0.0.1:%d/health" % server.server_address[1]
        res = subprocess.run([sys.executable, WAIT_READY_SRC, url, "1"], capture_output=True, text=True, timeout=60,
                             check=False)
        assert res.returncode == 1 and "not ready in time: answered 503" in res.stderr
    finally:
        server.shutdown()
        server.server_close()


def test_wait_ready_ends_when_the_engine_process_is_gone():
    """systemd waits for ExecStartPost= even after the engine exited: the check must end by itself."""
    server = _serve([503])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        url = "http://127.0.0.1:%d/health" % server.server_address[1]
        env = dict(os.environ, MAINPID=str(gone.pid))
        res = subprocess.run([sys.executable, WAIT_READY_SRC, url, "60"], capture_output=True, text=True, timeout=30,
                             env=env, check=False)
        assert res.returncode == 1 and "exited before" in res.stderr, res.stderr
    finally:
        server.shutdown()
        server.server_close()
