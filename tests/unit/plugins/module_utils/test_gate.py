# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The converge call's gate (module_utils._gate.run_gate) with second-stage endpoints (``then``)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils import _gate as gate


def _params(tmp_path, then):
    return {"endpoints": [{"name": "pre", "url": "http://10.0.0.2:31000/health", "probe": "health"}],
            "then": then, "timeout": 1, "interval": 0.01, "journal_lines": 0,
            "record": {"card": {"sha256": "0" * 64}, "instances": [], "runtime": {}, "release_lock": None,
                       "path": str(tmp_path / "state.json"), "directory": str(tmp_path / "units"),
                       "prefix": "launchcard-"}}


def _probe(answers, calls):
    def probe(url, payload=None, timeout=10.0):
        calls.append(url)
        return answers[url], "{}"
    return probe


ROUTER = {"name": "rtr", "url": "http://10.0.0.3:30000/health", "probe": "health"}


def _run(tmp_path, then, answers, check_mode=False, settled=True):
    (tmp_path / "units").mkdir(exist_ok=True)
    calls = []
    out = gate.run_gate(_params(tmp_path, then), check_mode,
                        lambda argv: (1, "", ""), lambda name: None, os.replace,
                        probe=_probe(answers, calls), settled=settled)
    return out, calls


def test_a_settled_host_gates_its_second_stage_in_the_same_call_and_records(tmp_path):
    healthy = {"http://10.0.0.2:31000/health": 200, ROUTER["url"]: 200}
    _run(tmp_path, [], healthy)  # an earlier deploy recorded what the host runs
    out, calls = _run(tmp_path, [ROUTER], healthy)
    assert out["then_gated"] is True
    assert [e["name"] for e in out["endpoints"]] == ["pre", "rtr"] and out["unhealthy"] == []
    assert calls.count(ROUTER["url"]) == 1  # probed once, no wait
    assert out["recorded"] is False and (tmp_path / "state.json").exists()


def test_a_record_that_would_change_leaves_the_second_stage_its_own_call(tmp_path):
    # a new card (or new units) on the host: this run changes it; the record and the lock wait for the second
    # stage, after every peer's first stage
    healthy = {"http://10.0.0.2:31000/health": 200, ROUTER["url"]: 200}
    out, calls = _run(tmp_path, [ROUTER], healthy)
    assert out["then_gated"] is False and ROUTER["url"] not in calls
    assert out["recorded"] is None and not (tmp_path / "state.json").exists()


def test_an_unhealthy_second_stage_endpoint_waits_for_its_own_call_without_a_record(tmp_path):
    _run(tmp_path, [], {"http://10.0.0.2:31000/health": 200})
    before = (tmp_path / "state.json").read_text()
    out, calls = _run(tmp_path, [ROUTER], {"http://10.0.0.2:31000/health": 200, ROUTER["url"]: 503})
    assert out["then_gated"] is False and calls.count(ROUTER["url"]) == 1
    assert [e["name"] for e in out["endpoints"]] == ["pre"] and out["unhealthy"] == []  # not reported here
    assert out["recorded"] is None and (tmp_path / "state.json").read_text() == before


@pytest.mark.parametrize("check_mode,settled", [(False, False), (True, True)])
def test_a_host_that_changed_or_a_check_run_leaves_the_second_stage_unprobed(tmp_path, check_mode, settled):
    out, calls = _run(tmp_path, [ROUTER], {"http://10.0.0.2:31000/health": 200, ROUTER["url"]: 200},
                      check_mode=check_mode, settled=settled)
    assert out["then_gated"] is False and ROUTER["url"] not in calls
    assert out["recorded"] is None and not (tmp_path / "state.json").exists()


def test_an_unhealthy_first_stage_probes_no_second_stage(tmp_path):
    out, calls = _run(tmp_path, [ROUTER], {"http://10.0.0.2:31000/health": 503, ROUTER["url"]: 200})
    assert out["unhealthy"] == ["pre"] and ROUTER["url"] not in calls and out["then_gated"] is None


def test_without_a_second_stage_the_call_records_as_before(tmp_path):
    out, dummy = _run(tmp_path, [], {"http://10.0.0.2:31000/health": 200})
    assert out["then_gated"] is None and out["recorded"] is True


def test_a_record_that_would_change_shows_in_the_diff_and_one_that_would_not_shows_nothing(tmp_path):
    """A host whose units stay but whose card changes (deploy --check of another card): its gate reports the record
    changed; with --diff the record's change is what it shows (the card), without the previous record."""
    healthy = {"http://10.0.0.2:31000/health": 200}
    _run(tmp_path, [], healthy)  # recorded, card 0...0
    calls = []
    params = _params(tmp_path, [])
    params["record"]["card"] = {"sha256": "1" * 64}
    out = gate.run_gate(params, True, lambda argv: (1, "", ""), lambda name: None, os.replace,
                        probe=_probe(healthy, calls), diff=True)
    assert out["recorded"] is True
    diff = out["diff"]
    assert (diff["before_header"], diff["after_header"]) == (
        "%s (recorded)" % (tmp_path / "state.json"), "%s (this run)" % (tmp_path / "state.json"))
    removed = [line for line in diff["before"].splitlines() if line not in diff["after"].splitlines()]
    added = [line for line in diff["after"].splitlines() if line not in diff["before"].splitlines()]
    assert (removed, added) == (['  "sha256": "%s"' % ("0" * 64)], ['  "sha256": "%s"' % ("1" * 64)])
    assert '"previous"' not in diff["before"] + diff["after"]
    # the state on file: no change, no diff
    same = gate.run_gate(_params(tmp_path, []), True, lambda argv: (1, "", ""), lambda name: None, os.replace,
                         probe=_probe(healthy, calls), diff=True)
    assert same["recorded"] is False and "diff" not in same
