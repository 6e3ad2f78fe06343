# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Liveness units (plugin_utils/_liveness.py), the converge's handling of a timer and its service
(module_utils/_systemd.py), and the probe's decisions (roles/units/files/wait-ready.py --liveness)."""

from __future__ import annotations

import http.server
import importlib.util
import io
import json
import os
import shutil
import socketserver
import subprocess
import threading
import types

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.plugin_utils._textfile import TEXTFILE_DIR
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_spec import OptionError, with_defaults
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import host_units

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as _f:
    EX = load_card(_f.read(), "glm-5.3-flash.json")
_SPEC = importlib.util.spec_from_file_location("wait_ready", os.path.join(ROOT, "roles", "units", "files",
                                                                          "wait-ready.py"))
HELPER = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(HELPER)
ENGINE = "launchcard-glm-5.3-flash-vllm-aggregated-0"


def _plan(placement):
    return plan(EX, normalize_placement(placement))


def _units(placement, host, options=None):
    return {u["name"]: u["content"] for u in host_units(_plan(placement)["hosts"][host], options)}


def test_an_aggregated_engine_gets_a_timer_and_a_hardened_oneshot_probe():
    units = _units([("a", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"]})], "a",
                   {"runtime": "native", "secrets_env_file": "/etc/launchcard/secrets.env", "liveness_interval_s": 7,
                    "liveness_timeout_s": 4, "liveness_failures": 2})
    assert sorted(units) == [ENGINE + "-liveness.service", ENGINE + "-liveness.timer", ENGINE + ".service"]
    timer, probe = units[ENGINE + "-liveness.timer"], units[ENGINE + "-liveness.service"]
    assert "OnUnitActiveSec=7\n" in timer and "WantedBy=timers.target" in timer
    assert "Type=oneshot" in probe and "[Install]" not in probe
    words = probe.split("ExecStart=", 1)[1].split("\nTimeoutStartSec", 1)[0].replace("\\\n", " ").split()
    assert words[:4] == ["/usr/bin/python3", "-I", "/usr/local/libexec/launchcard/wait-ready.py", "--liveness"]
    args = dict(zip(words[4::2], words[5::2]))
    assert args == {"--unit": ENGINE + ".service", "--timeout": "4", "--failures": "2",
                    "--lock": "/var/lib/launchcard/lock.json", "--state-dir": "/var/lib/launchcard/liveness",
                    "--textfile-dir": TEXTFILE_DIR, "--completion-url": "http://127.0.0.1:8000/v1/completions",
                    "--model": "zai-org/GLM-5.3-Flash"}
    assert "InaccessiblePaths=-/etc/launchcard/secrets.env" in probe
    assert "EnvironmentFile" not in probe and "CapabilityBoundingSet=\n" in probe
    assert "ReadWritePaths=-%s\n" % TEXTFILE_DIR in probe


def test_routers_get_a_worker_count_check_and_mini_lb_routers_none():
    hp = _plan([("b", {"address": "10.0.0.2", "recipes": ["sglang-prefill", "sglang-decode"]}),
                ("c", {"address": "10.0.0.3", "recipes": ["sglang-router"]})])["hosts"]["c"]
    router = dict(hp["instances"][0])
    router["argv"] = [w for w in router["argv"] if w != "--mini-lb"]  # PD mode with the worker API
    regular = {u["name"]: u["content"] for u in host_units({"instances": [router]})}
    probe = next(v for k, v in regular.items() if k.endswith("-liveness.service")).replace("\\\n    ", "")
    assert "--workers-url http://127.0.0.1:30000/workers" in probe
    assert "--expect-workers 2" in probe  # its --prefill and --decode URLs
    pd = _units([("b", {"address": "10.0.0.2", "recipes": ["sglang-prefill", "sglang-decode"]}),
                 ("c", {"address": "10.0.0.3", "recipes": ["sglang-router"]})], "c")
    assert not [n for n in pd if "liveness" in n]  # --mini-lb: no worker API
    engines = _units([("b", {"address": "10.0.0.2", "recipes": ["sglang-prefill", "sglang-decode"]}),
                      ("c", {"address": "10.0.0.3", "recipes": ["sglang-router"]})], "b")
    assert not [n for n in engines if "liveness" in n]  # a prefill or decode cannot complete alone


def test_a_recipe_turns_its_liveness_off_and_a_wrong_value_is_named():
    placement = [("a", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"]})]
    assert list(_units(placement, "a", {"liveness_recipes": {"vllm-aggregated": False}})) == [ENGINE + ".service"]
    with pytest.raises(OptionError, match=r"launchcard_liveness_recipes\[vllm-aggregated\] must be true or false"):
        _units(placement, "a", {"liveness_recipes": {"vllm-aggregated": "no"}})


@pytest.mark.parametrize("key,bad", [("liveness_interval_s", 1), ("liveness_timeout_s", 0), ("liveness_failures", 0)])
def test_the_liveness_variables_are_bounded(key, bad):
    with pytest.raises(OptionError, match="launchcard_%s must be" % key):
        with_defaults({key: bad})


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="needs systemd-analyze")
def test_systemd_analyze_verify_takes_the_liveness_units(tmp_path):
    units = _units([("a", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"]})], "a",
                   {"runtime": "native", "secrets_env_file": "/etc/launchcard/secrets.env"})
    paths = []
    for name, text in units.items():
        if "liveness" in name:
            (tmp_path / name).write_text(text)
            paths.append(str(tmp_path / name))
    res = subprocess.run(["systemd-analyze", "verify"] + paths, capture_output=True, text=True, check=False)
    assert "Unknown key" not in res.stderr and "Failed to parse" not in res.stderr, res.stderr


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="needs systemd-analyze")
def test_the_probe_is_rated_far_less_exposed_than_an_unhardened_unit(tmp_path):
    units = _units([("a", {"address": "10.0.0.1", "recipes": ["vllm-aggregated"]})], "a",
                   {"runtime": "native", "secrets_env_file": "/etc/launchcard/secrets.env"})
    path = tmp_path / (ENGINE + "-liveness.service")
    path.write_text(units[path.name])
    res = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(path)], capture_output=True, text=True,
                         check=False)
    level = float(res.stdout.split("Overall exposure level for %s: " % path.name, 1)[1].split()[0])
    assert level < 3.0, res.stdout[-2000:]


def _observed(**kw):
    return dict({"locked": None, "active": True, "invocation": "i1", "ok": False, "why": "no answer"}, **kw)


def test_failures_are_counted_reset_on_success_and_restart_after_k():
    step = HELPER.liveness_step
    state, action, dummy = step({}, _observed(), 3)
    assert (state["failures"], action) == (1, "fail")
    state, action, dummy = step(state, _observed(ok=True, why="answered"), 3)
    assert (state["failures"], action) == (0, "ok")
    for want in ("fail", "fail", "restart"):
        state, action, why = step(state, _observed(), 3)
        assert action == want
    assert state == {"invocation": "i1", "failures": 0, "restarts": 1} and why == "no answer"


def test_the_lock_and_an_inactive_unit_stand_aside_and_a_new_process_counts_afresh():
    step = HELPER.liveness_step
    state = {"invocation": "i1", "failures": 2, "restarts": 4}
    new, action, why = step(state, _observed(locked="alice, deploy.yml, run r1"), 3)
    assert action == "aside" and new["failures"] == 0 and new["restarts"] == 4 and "alice" in why
    new, action, dummy = step(state, _observed(active=False), 3)
    assert action == "aside" and new["failures"] == 0
    new, action, dummy = step(state, _observed(invocation="i2"), 3)
    assert (action, new["failures"]) == ("fail", 1)


class _Hung(http.server.BaseHTTPRequestHandler):
    answer = None

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers["Content-Length"]))
        if _Hung.answer is None:
            threading.Event().wait(3)  # longer than the probe's timeout: a hung engine core
            return
        body = json.dumps(_Hung.answer).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _run(tmp_path, port, systemctl, lock=None):
    log = io.StringIO()
    args = ["--unit", ENGINE + ".service", "--timeout", "1", "--failures", "2", "--lock", str(lock or tmp_path / "lock"),
            "--state-dir", str(tmp_path), "--textfile-dir", str(tmp_path),
            "--completion-url", "http://127.0.0.1:%d/v1/completions" % port, "--model", "m"]
    assert HELPER.liveness(args, run=systemctl, log=log) == 0
    return log.getvalue()


def test_the_probe_restarts_a_hung_engine_and_writes_its_counters(tmp_path):
    calls = []

    def systemctl(*args):
        calls.append(args)
        out = "ActiveState=active\nInvocationID=abc\n" if args[0] == "show" else ""
        return types.SimpleNamespace(stdout=out, stderr="", returncode=0)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Hung)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        _Hung.answer = None
        assert "probe failed (1 of 2)" in _run(tmp_path, port, systemctl)
        assert "restarting it after 2 failed probes in a row: completion: no answer within 1s" in _run(
            tmp_path, port, systemctl)
        assert calls[-1] == ("restart", "--no-block", "--", ENGINE + ".service")
        prom = (tmp_path / ("launchcard-liveness-%s.service.prom" % ENGINE)).read_text()
        assert 'launchcard_liveness_restarts_total{unit="%s.service"} 1\n' % ENGINE in prom
        assert "# TYPE launchcard_liveness_restarts_total counter" in prom
        # held lock: no probe, no restart
        lock = tmp_path / "held.json"
        lock.write_text(json.dumps({"user": "bob", "playbook": "upgrade.yml", "run_id": "r9"}))
        _Hung.answer = None
        before = len(calls)
        _run(tmp_path, port, systemctl, lock)
        _run(tmp_path, port, systemctl, lock)
        assert calls[before:] == []
        _Hung.answer = {"choices": [{"text": "x"}]}
        assert _run(tmp_path, port, systemctl) == ""
        assert json.loads((tmp_path / (ENGINE + ".service.json")).read_text()) == {
            "invocation": "abc", "failures": 0, "restarts": 1}
    finally:
        server.shutdown()
