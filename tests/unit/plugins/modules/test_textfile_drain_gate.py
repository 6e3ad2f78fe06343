# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An upgrade's drain and gate in node exporter's textfile directory (a real temporary one): engine_drain counts its
drains in launchcard-drains.prom, http_health writes its gate results into launchcard.prom, and no series is in
two files. The engines are real HTTP servers on 127.0.0.1 answering what vLLM's /metrics and /health answer."""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.module_utils import _textfile_facts as facts
from ansible_collections.launchcard.inference.plugins.modules import engine_drain, http_health
from ansible_collections.launchcard.inference.tests.unit.plugins.modules.test_systemd_units import A, B, unit_text
from ansible_collections.launchcard.inference.tests.unit.plugins.modules.test_systemd_units import run_module as run_units
from ansible_collections.launchcard.inference.tests.unit.plugins.modules.test_systemd_units_textfile import LABELS, ROUTER

_SAMPLE = re.compile(r'^([a-z_:]+)(\{.*\})? (\S+)$')


class Vllm(object):
    """A vLLM server as the drain and the gate read it: /metrics with ``running`` requests, /health with ``health``."""

    def __init__(self, running=0, health=200):
        engine = self
        self.running, self.health = running, health

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path == "/metrics":
                    # vllm/v1/metrics/loggers.py (0.32.0): the gauges the drain sums
                    status, body = 200, ('vllm:num_requests_running{engine="0",model_name="m"} %d.0\n'
                                         'vllm:num_requests_waiting{engine="0",model_name="m"} 0.0\n' % engine.running)
                else:
                    status, body = engine.health, ""
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


@pytest.fixture
def vllm():
    started = []

    def start(**kwargs):
        started.append(Vllm(**kwargs))
        return started[-1]

    yield start
    for one in started:
        one.server.shutdown()
        one.server.server_close()


def run(capsys, main, rc=0, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            main()
    result = json.loads(capsys.readouterr().out)
    assert info.value.code == rc, result
    return result


def folder(tmp_path):
    path = tmp_path / "node-exporter"
    path.mkdir(exist_ok=True)
    return str(path)


def text(directory, name):
    with open(os.path.join(directory, name)) as f:
        return f.read()


def series(directory):
    """``{file: {(name, labels): value}}`` of every ``*.prom`` file, as node exporter's textfile collector reads them."""
    out = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".prom"):
            out[name] = dict(((m.group(1), m.group(2) or ""), float(m.group(3))) for m in (
                _SAMPLE.match(line) for line in text(directory, name).splitlines() if not line.startswith("#")) if m)
    return out


def drain(capsys, directory, endpoints, **args):
    return run(capsys, engine_drain.main, endpoints=[{"name": unit, "url": url, "engine": "vllm"} for unit, url in endpoints],
               timeout=0, textfile={"directory": directory}, **args)


def test_an_upgrade_s_drain_and_gate_land_in_their_files_and_no_series_is_in_two(
        systemd, vllm, capsys, tmp_path, monkeypatch):
    directory = folder(tmp_path)
    monkeypatch.setattr("time.time", lambda: 1700000000.0)
    # the deploy: both units listed in the drain counters at 0, before their first drain
    run_units(capsys, systemd, [(A, unit_text("/bin/a")), (B, unit_text("/bin/b"))],
              textfile={"directory": directory, "instances": {A: LABELS, B: ROUTER}})
    assert series(directory)[facts.DRAINS_FILE] == {
        (facts.DRAINS, '{unit="%s"}' % A): 0, (facts.DRAINS, '{unit="%s"}' % B): 0,
        (facts.DRAIN_TIMEOUTS, '{unit="%s"}' % A): 0, (facts.DRAIN_TIMEOUTS, '{unit="%s"}' % B): 0}
    gate_before = text(directory, facts.FILE_NAME)
    # the upgrade drains A (idle) and B (still busy when the wait ends), then gates them: A healthy, B not
    monkeypatch.setattr("time.time", lambda: 1800000000.0)
    idle, busy = vllm(), vllm(running=2, health=503)
    result = drain(capsys, directory, [(A, idle.url), (B, busy.url)])
    assert result["changed"] is True and result["busy"] == [B]
    assert result["textfile"] == {"path": os.path.join(directory, facts.DRAINS_FILE), "changed": True, "skipped": None}
    assert text(directory, facts.FILE_NAME) == gate_before  # the drain writes only its own file
    failed = run(capsys, http_health.main, rc=1, timeout=0, interval=0.1, textfile={"directory": directory},
                 endpoints=[{"name": A, "url": idle.url + "/health"}, {"name": B, "url": busy.url + "/health"}])
    assert failed["textfile"]["changed"] is True and failed["unhealthy"] == [B]
    got = series(directory)
    assert got[facts.DRAINS_FILE] == {
        (facts.DRAINS, '{unit="%s"}' % A): 1, (facts.DRAINS, '{unit="%s"}' % B): 1,
        (facts.DRAIN_TIMEOUTS, '{unit="%s"}' % A): 0, (facts.DRAIN_TIMEOUTS, '{unit="%s"}' % B): 1,
        (facts.LAST_DRAIN, '{unit="%s"}' % A): 1800000000, (facts.LAST_DRAIN, '{unit="%s"}' % B): 1800000000}
    assert got[facts.FILE_NAME][(facts.GATE, '{unit="%s"}' % A)] == 1
    assert got[facts.FILE_NAME][(facts.GATE, '{unit="%s"}' % B)] == 0
    # the gate rewrote only its results: the deploy's stamps and labels are as they were
    assert text(directory, facts.FILE_NAME).replace(
        "# HELP %s %s\n# TYPE %s gauge\n" % (facts.GATE, facts.HELP[facts.GATE], facts.GATE), "").startswith(
        gate_before)
    # node exporter serves every file's samples together: no metric, so no series, is in two files
    names = [set(name for name, dummy in one) for one in got.values()]
    assert len(names) == 2 and not names[0] & names[1]
    for name in (facts.FILE_NAME, facts.DRAINS_FILE):
        assert stat.S_IMODE(os.stat(os.path.join(directory, name)).st_mode) == 0o644
    assert sorted(os.listdir(directory)) == [facts.DRAINS_FILE, facts.FILE_NAME]
    # the next deploy keeps the counts and the gate results it did not judge
    run_units(capsys, systemd, [(A, unit_text("/bin/a")), (B, unit_text("/bin/b"))],
              textfile={"directory": directory, "instances": {A: LABELS, B: ROUTER}})
    assert series(directory) == got


def test_check_mode_predicts_the_counts_and_writes_nothing(vllm, capsys, tmp_path):
    directory = folder(tmp_path)
    result = drain(capsys, directory, [(A, vllm().url)], _ansible_check_mode=True, _ansible_diff=True)
    assert result["changed"] is True and result["textfile"]["changed"] is True
    assert '%s{unit="%s"} 1\n' % (facts.DRAINS, A) in result["diff"]["after"]
    assert os.listdir(directory) == []
    facts.write(os.path.join(directory, facts.FILE_NAME), facts.render({A: LABELS}, None, {A}, "deploy", 5))
    before = text(directory, facts.FILE_NAME)
    gate = run(capsys, http_health.main, timeout=0, textfile={"directory": directory}, _ansible_check_mode=True,
               endpoints=[{"name": A, "url": vllm().url + "/health"}])
    assert gate["changed"] is True and gate["textfile"]["changed"] is True
    assert os.listdir(directory) == [facts.FILE_NAME] and text(directory, facts.FILE_NAME) == before


def test_a_host_without_node_exporter_gets_nothing_and_the_calls_do_not_fail(vllm, capsys, tmp_path):
    directory = str(tmp_path / "no-node-exporter")
    engine = vllm()
    result = drain(capsys, directory, [(A, engine.url)])
    assert result["changed"] is False and "node exporter not installed" in result["textfile"]["skipped"]
    gate = run(capsys, http_health.main, timeout=0, textfile={"directory": directory},
               endpoints=[{"name": A, "url": engine.url + "/health"}])
    assert gate["changed"] is False and "node exporter not installed" in gate["textfile"]["skipped"]
    assert not os.path.exists(directory)


def test_without_the_option_the_drain_writes_nothing_and_changes_nothing(vllm, capsys, tmp_path):
    directory = folder(tmp_path)
    result = run(capsys, engine_drain.main, timeout=0, endpoints=[{"name": A, "url": vllm().url, "engine": "vllm"}])
    assert result["changed"] is False and "textfile" not in result
    assert os.listdir(directory) == []


def test_a_gate_before_any_deploy_file_or_of_units_it_does_not_list_writes_nothing(vllm, capsys, tmp_path):
    directory = folder(tmp_path)
    engine = vllm()
    gate = run(capsys, http_health.main, timeout=0, textfile={"directory": directory},
               endpoints=[{"name": A, "url": engine.url + "/health"}])
    assert gate["changed"] is False and "lists no unit" in gate["textfile"]["skipped"]
    assert os.listdir(directory) == []
    facts.write(os.path.join(directory, facts.FILE_NAME), facts.render({A: LABELS}, None, {A}, "deploy", 5))
    before = text(directory, facts.FILE_NAME)
    # a surge twin's unit is not one of the card's: its result is not written
    gate = run(capsys, http_health.main, timeout=0, textfile={"directory": directory},
               endpoints=[{"name": "launchcard-demo-vllm-aggregated-0-surge.service", "url": engine.url + "/health"}])
    assert gate["changed"] is False and text(directory, facts.FILE_NAME) == before


def test_a_drain_of_a_unit_no_converge_listed_adds_it_and_a_second_drain_counts_on(vllm, capsys, tmp_path, monkeypatch):
    directory = folder(tmp_path)
    engine = vllm()
    monkeypatch.setattr("time.time", lambda: 10.0)
    drain(capsys, directory, [(A, engine.url)])
    monkeypatch.setattr("time.time", lambda: 20.0)
    drain(capsys, directory, [(A, engine.url)])
    assert series(directory)[facts.DRAINS_FILE] == {
        (facts.DRAINS, '{unit="%s"}' % A): 2, (facts.DRAIN_TIMEOUTS, '{unit="%s"}' % A): 0,
        (facts.LAST_DRAIN, '{unit="%s"}' % A): 20}


def test_the_drain_file_reads_back_what_it_wrote_and_keeps_only_the_listed_units():
    once = facts.render_drains(None, None, {A: True}, 7)
    assert facts.parse(once, tuple(facts.DRAIN_HELP)) == {A: {facts.DRAINS: 1, facts.DRAIN_TIMEOUTS: 1, facts.LAST_DRAIN: 7}}
    assert facts.render_drains({A: LABELS}, once, {}, 9) == once
    assert facts.render_drains({B: ROUTER}, once, {}, 9) == facts.render_drains({B: ROUTER}, None, {}, 1)
    assert facts.render_drains({}, once, {}, 9) is None
