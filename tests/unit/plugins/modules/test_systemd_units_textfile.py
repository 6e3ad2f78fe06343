# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd_units' ``textfile``: the instances' facts in node exporter's textfile directory (a real temporary one),
written by the same call that converges the units (the fake systemctl of test_systemd_units)."""

from __future__ import annotations

import os
import stat

from ansible_collections.launchcard.inference.plugins.module_utils import _textfile_facts as facts
from ansible_collections.launchcard.inference.plugins.plugin_utils import _metric_contract as contract
from ansible_collections.launchcard.inference.plugins.plugin_utils import _textfile as plugin_textfile
from ansible_collections.launchcard.inference.tests.unit.plugins.modules.test_systemd_units import (
    A,
    B,
    run_module,
    unit_text,
)

LABELS = {"card": "demo", "recipe": "vllm-aggregated", "revision": "0123abcd", "role": "aggregated", "engine": "vllm"}
ROUTER = {"card": "demo", "recipe": "sglang-router", "revision": "0123abcd", "role": "router", "engine": "sglang"}
UNITS = [(A, unit_text("/bin/a")), (B, unit_text("/bin/b"))]


def textfile(tmp_path, **extra):
    folder = tmp_path / "node-exporter"
    folder.mkdir(exist_ok=True)
    return dict({"directory": str(folder), "instances": {A: LABELS, B: ROUTER}}, **extra)


def prom(opts):
    return os.path.join(opts["directory"], facts.FILE_NAME)


def read(opts):
    with open(prom(opts)) as f:
        return f.read()


def test_a_first_deploy_writes_every_unit_s_facts_0644(systemd, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr("time.time", lambda: 1700000000.5)
    opts = textfile(tmp_path)
    result, dummy = run_module(capsys, systemd, UNITS, textfile=opts)
    assert result["changed"] is True
    assert result["textfile"] == {"path": prom(opts), "changed": True, "skipped": None}
    assert read(opts) == (
        "# HELP launchcard_instance_info What the unit runs, from the plan (always 1).\n"
        "# TYPE launchcard_instance_info gauge\n"
        'launchcard_instance_info{unit="%s",card="demo",recipe="sglang-router",revision="0123abcd",role="router",'
        'engine="sglang"} 1\n'
        'launchcard_instance_info{unit="%s",card="demo",recipe="vllm-aggregated",revision="0123abcd",'
        'role="aggregated",engine="vllm"} 1\n'
        "# HELP launchcard_last_deploy_timestamp_seconds Unix time a deploy last changed or restarted the unit.\n"
        "# TYPE launchcard_last_deploy_timestamp_seconds gauge\n"
        'launchcard_last_deploy_timestamp_seconds{unit="%s"} 1700000000\n'
        'launchcard_last_deploy_timestamp_seconds{unit="%s"} 1700000000\n' % (B, A, B, A))
    assert stat.S_IMODE(os.stat(prom(opts)).st_mode) == 0o644
    # written beside and renamed: no temporary file is left in the collector's directory
    assert sorted(os.listdir(opts["directory"])) == [facts.DRAINS_FILE, facts.FILE_NAME]
    # the drain counters exist at 0 before the first drain, so that increase() sees the first one
    with open(os.path.join(opts["directory"], facts.DRAINS_FILE)) as f:
        assert f.read() == (
            "# HELP launchcard_drains_total Drains of the unit (engine_drain) before an upgrade stopped it.\n"
            "# TYPE launchcard_drains_total counter\n"
            'launchcard_drains_total{unit="%s"} 0\n'
            'launchcard_drains_total{unit="%s"} 0\n'
            "# HELP launchcard_drain_timeouts_total Drains of the unit whose wait ran out with requests still in flight.\n"
            "# TYPE launchcard_drain_timeouts_total counter\n"
            'launchcard_drain_timeouts_total{unit="%s"} 0\n'
            'launchcard_drain_timeouts_total{unit="%s"} 0\n' % (B, A, B, A))
    assert stat.S_IMODE(os.stat(os.path.join(opts["directory"], facts.DRAINS_FILE)).st_mode) == 0o644


def test_a_no_op_run_leaves_the_file_byte_identical_and_unchanged(systemd, capsys, tmp_path, monkeypatch):
    opts = textfile(tmp_path)
    monkeypatch.setattr("time.time", lambda: 1700000000.0)
    run_module(capsys, systemd, UNITS, textfile=opts)
    before, mtime = read(opts), os.stat(prom(opts)).st_mtime_ns
    monkeypatch.setattr("time.time", lambda: 1800000000.0)
    second, dummy = run_module(capsys, systemd, UNITS, textfile=opts)
    assert second["changed"] is False and second["textfile"]["changed"] is False
    assert read(opts) == before and os.stat(prom(opts)).st_mtime_ns == mtime


def test_an_upgrade_stamps_only_the_unit_it_changed_and_keeps_the_others(systemd, capsys, tmp_path, monkeypatch):
    opts = textfile(tmp_path)
    monkeypatch.setattr("time.time", lambda: 1700000000.0)
    run_module(capsys, systemd, UNITS, textfile=opts)
    monkeypatch.setattr("time.time", lambda: 1800000000.0)
    upgraded = dict(opts, event="upgrade", instances={A: dict(LABELS, revision="fedc9876"), B: ROUTER})
    result, dummy = run_module(capsys, systemd, [(A, unit_text("/bin/a2")), UNITS[1]], textfile=upgraded)
    assert result["actions"]["restart"] == [A] and result["textfile"]["changed"] is True
    text = read(opts)
    assert 'revision="fedc9876",role="aggregated"' in text
    # A keeps its deploy time and gets the upgrade's; B, untouched, keeps its deploy time and gets none
    assert 'launchcard_last_deploy_timestamp_seconds{unit="%s"} 1700000000\n' % A in text
    assert 'launchcard_last_deploy_timestamp_seconds{unit="%s"} 1700000000\n' % B in text
    assert 'launchcard_last_upgrade_timestamp_seconds{unit="%s"} 1800000000\n' % A in text
    assert 'launchcard_last_upgrade_timestamp_seconds{unit="%s"}' % B not in text


def test_the_gate_result_is_written_and_kept_when_the_gate_does_not_run(systemd, servers, capsys, tmp_path):
    opts = textfile(tmp_path)
    dummy_server, url = servers(503)
    run_module(capsys, systemd, UNITS, textfile=opts,
               health={"endpoints": [{"name": A, "unit": A, "url": url}], "timeout": 1, "interval": 0.2})
    assert 'launchcard_gate_passed{unit="%s"} 0\n' % A in read(opts)
    assert 'launchcard_gate_passed{unit="%s"}' % B not in read(opts)
    dummy_server, url = servers(200)
    run_module(capsys, systemd, UNITS, textfile=opts,
               health={"endpoints": [{"name": A, "unit": A, "url": url}], "timeout": 5, "interval": 0.1})
    assert 'launchcard_gate_passed{unit="%s"} 1\n' % A in read(opts)
    result, dummy = run_module(capsys, systemd, UNITS, textfile=opts)
    assert result["textfile"]["changed"] is False
    assert 'launchcard_gate_passed{unit="%s"} 1\n' % A in read(opts)


def test_no_textfile_directory_writes_nothing_and_does_not_fail(systemd, capsys, tmp_path):
    opts = {"directory": str(tmp_path / "no-node-exporter"), "instances": {A: LABELS}}
    result, dummy = run_module(capsys, systemd, UNITS, textfile=opts)
    assert result["textfile"]["changed"] is False
    assert "does not exist (node exporter not installed)" in result["textfile"]["skipped"]
    assert not os.path.exists(opts["directory"])


def test_check_mode_reports_the_change_and_writes_nothing(systemd, capsys, tmp_path):
    opts = textfile(tmp_path)
    result, dummy = run_module(capsys, systemd, UNITS, textfile=opts, _ansible_check_mode=True, _ansible_diff=True)
    assert result["textfile"]["changed"] is True and result["changed"] is True
    assert os.listdir(opts["directory"]) == []
    diff = [d for d in result["diff"] if d["after_header"] == prom(opts)]
    assert diff and "launchcard_instance_info" in diff[0]["after"]


def test_no_instance_left_removes_the_file_and_units_not_given_are_left_out(systemd, capsys, tmp_path):
    opts = textfile(tmp_path, instances={A: LABELS, "launchcard-demo-vllm-aggregated-9.service": LABELS})
    run_module(capsys, systemd, UNITS, textfile=opts)
    assert "aggregated-9" not in read(opts)
    result, dummy = run_module(capsys, systemd, [], textfile=dict(opts, instances={}))
    assert result["textfile"]["changed"] is True and os.listdir(opts["directory"]) == []


def test_label_values_are_escaped_and_read_back():
    odd = 'a"b\\c\nd'
    text = facts.render({odd: LABELS}, None, {odd}, "deploy", 5, {odd: True})
    assert 'unit="a\\"b\\\\c\\nd"' in text
    assert facts.parse(text) == {odd: {facts.DEPLOY: 5, facts.GATE: 1}}
    assert facts.render({odd: LABELS}, text, set(), "upgrade", 9) == text


def test_every_name_written_is_in_the_collection_s_metric_contract():
    declared = contract.load()["launchcard"]["metrics"]
    assert set(facts.HELP) | set(facts.DRAIN_HELP) <= set(declared)
    assert all(declared[name]["type"] == kind for name, (kind, dummy) in facts.DRAIN_HELP.items())


def test_the_plan_s_instances_give_the_labels_of_their_scrape_targets():
    plan = {"cards": {"c": {"slug": "demo", "revision": "0123abcd", "repo": "o/demo"}},
            "hosts": {"h1": {"card": "c", "instances": [{"unit": A, "recipe": "vllm-aggregated", "role": "aggregated",
                                                         "engine": "vllm", "id": "demo-vllm-aggregated-0"}]}}}
    assert plugin_textfile.instances(plan, "h1") == {A: LABELS}
    assert plugin_textfile.instances(plan, "h2") == {}


def test_labels_that_are_not_strings_fail_naming_the_field_before_anything_changes(systemd, capsys, tmp_path):
    opts = textfile(tmp_path, instances={A: dict(LABELS, revision=["x"])})
    result, dummy = run_module(capsys, systemd, UNITS, rc=1, textfile=opts)
    assert result["msg"] == "textfile.instances[%s].revision: expected a string, found list; nothing was changed" % A
    assert systemd.mutating() == [] and systemd.listing() == []
