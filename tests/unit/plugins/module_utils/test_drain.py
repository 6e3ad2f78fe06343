# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bug-report case J, the upgrade's drain: wait until each engine reports no request in flight, bounded."""

from __future__ import annotations

import json

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils import _drain as drain

# what vLLM 0.32's /metrics holds (vllm/v1/metrics/loggers.py names; two data-parallel engines)
VLLM_BUSY = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="zai-org/GLM 5"} 2.0
vllm:num_requests_running{engine="1",model_name="zai-org/GLM 5"} 1.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="zai-org/GLM 5"} 1.0
vllm:num_requests_running_extra 9.0
vllm:request_success_total{finished_reason="length",model_name="m"} 40.0
"""


def loads(*ranks):
    """SGLang 0.5.23's /v1/loads JSON for ranks of (running, waiting)."""
    return json.dumps({"version": "0.5.23", "loads": [{"dp_rank": i, "num_running_reqs": r, "num_waiting_reqs": w,
                                                       "num_used_tokens": 7} for i, (r, w) in enumerate(ranks)]})


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, s):
        self.now += s


def server(answers):
    """``request`` for engines whose answers change over time: url -> list of (status, body) or exceptions,
    one per read (the last repeats)."""
    reads = {}

    def request(url):
        seq = answers[url]
        n = reads.get(url, 0)
        reads[url] = n + 1
        got = seq[min(n, len(seq) - 1)]
        if isinstance(got, Exception):
            raise got
        return got
    request.reads = reads
    return request


def test_prometheus_sums_every_sample_of_the_named_gauges_only():
    assert drain.parse_prometheus(VLLM_BUSY, drain.VLLM_GAUGES) == 4
    assert drain.parse_prometheus("# nothing\nother 3\n", drain.VLLM_GAUGES) is None
    assert drain.parse_prometheus('vllm:num_requests_running{a="x } 5"} 0.0\n', drain.VLLM_GAUGES) == 0
    assert drain.parse_loads(loads((2, 1), (0, 3))) == 6
    assert drain.parse_loads("not json") is None and drain.parse_loads('{"loads": []}') is None


def test_waits_until_every_engine_is_idle():
    request = server({
        "http://v:8000/metrics": [(200, VLLM_BUSY)] * 3 + [(200, VLLM_BUSY.replace("2.0", "0.0").replace("1.0", "0.0"))],
        "http://s:30000/v1/loads?include=core": [(200, loads((1, 0)))] * 5 + [(200, loads((0, 0)))],
    })
    clock = Clock()
    eps = [{"name": "v", "url": "http://v:8000/health", "engine": "vllm"},
           {"name": "s", "url": "http://s:30000", "engine": "sglang"}]
    out = drain.wait_drained(eps, 300, request, 1.0, clock, clock.sleep)
    assert [(r["name"], r["in_flight"], r["drained"]) for r in out] == [("v", 0, True), ("s", 0, True)]
    assert request.reads == {"http://v:8000/metrics": 4, "http://s:30000/v1/loads?include=core": 6}
    assert clock.now == 5.0


def test_the_wait_is_bounded_and_names_what_was_left():
    request = server({"http://v:8000/metrics": [(200, VLLM_BUSY)]})
    clock = Clock()
    params = {"endpoints": [{"name": "u.service", "url": "http://v:8000", "engine": "vllm"}], "timeout": 10,
              "interval": 3.0}
    out = drain.wait_drained(params["endpoints"], 10, request, 3.0, clock, clock.sleep)
    assert out[0]["drained"] is False and out[0]["in_flight"] == 4 and clock.now == 10.0
    res = drain.run_drain(dict(params, timeout=0), False, request)
    assert res["busy"] == ["u.service"]
    assert res["warnings"] == ["still in flight after 0s, left to the engine's own drain on SIGTERM: "
                               "u.service (4 request(s) in flight)"]


def test_a_stopped_engine_has_nothing_to_wait_for_and_an_unreadable_one_is_reported():
    request = server({"http://gone:8000/metrics": [ConnectionRefusedError(111, "refused")],
                      "http://old:30000/v1/loads?include=core": [(404, '{"detail":"Not Found"}')]})
    res = drain.run_drain({"endpoints": [{"url": "http://gone:8000", "engine": "vllm"},
                                         {"name": "old", "url": "http://old:30000", "engine": "sglang"}],
                           "timeout": 60, "interval": 1.0}, False, request)
    assert res["busy"] == [] and res["unreadable"] == ["old"]
    assert res["endpoints"][0]["in_flight"] == 0 and "not answering" in res["endpoints"][0]["detail"]
    assert res["warnings"] == ["old: http://old:30000/v1/loads?include=core answered 404: in-flight requests "
                               "cannot be read; not waited for"]


def test_check_mode_reads_once_without_waiting():
    request = server({"http://v:8000/metrics": [(200, VLLM_BUSY)]})
    res = drain.run_drain({"endpoints": [{"url": "http://v:8000", "engine": "vllm"}], "timeout": 600,
                           "interval": 1.0}, True, request)
    assert res["busy"] == ["http://v:8000"] and res["warnings"] == [] and request.reads == {"http://v:8000/metrics": 1}


@pytest.mark.parametrize("ep,match", [
    ({"url": "http://v:8000", "engine": "trt"}, r"endpoints\[0\]\.engine must be one of vllm, sglang"),
    ({"url": "v:8000", "engine": "vllm"}, r"endpoints\[0\]\.url: not an http\(s\) URL"),
])
def test_bad_endpoints_are_refused_naming_the_field(ep, match):
    with pytest.raises(drain.DrainError, match=match):
        drain.run_drain({"endpoints": [ep], "timeout": 1, "interval": 1.0}, False, server({}))


def test_endpoints_of_a_plan_or_a_record_are_its_engines_that_answer_http():
    instances = [
        {"unit": "a.service", "launcher": "vllm", "role": "aggregated", "health_url": "http://10.0.0.1:8000/health"},
        {"unit": "r.service", "launcher": "router", "role": "router", "health_url": "http://10.0.0.1:8998/health"},
        {"unit": "h.service", "launcher": "vllm", "role": "aggregated", "health_url": None},
        # a record's instance: no launcher, its engine
        {"unit": "s.service", "engine": "sglang", "role": "decode", "health_url": "http://[::1]:30001/health"},
        {"unit": "x.service", "engine": "sglang", "role": "router", "health_url": "http://10.0.0.1:30080/health"},
    ]
    assert drain.endpoints_of(instances) == [
        {"name": "a.service", "url": "http://10.0.0.1:8000", "engine": "vllm"},
        {"name": "s.service", "url": "http://[::1]:30001", "engine": "sglang"}]
