# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drain: wait, bounded, until every engine of a host reports no request in flight.

Pure Python, no Ansible import. The upgrade takes a host's instances out of their routers, then calls this
before it stops them, so that what the engines still run (long streams, reasoning) finishes instead of being cut
by the stop. What each engine reports, and where:

- vLLM: ``GET /metrics`` (Prometheus text, always served), the gauges ``vllm:num_requests_running`` ("Number of
  requests in model execution batches") and ``vllm:num_requests_waiting`` (vllm/v1/metrics/loggers.py, 0.32.0),
  one sample per engine (data-parallel rank) and model; their sum is what is in flight.
- SGLang: ``GET /v1/loads?include=core`` (JSON; served without ``--enable-metrics``, which its ``/metrics`` needs),
  ``loads[].num_running_reqs`` and ``loads[].num_waiting_reqs``, one entry per data-parallel rank
  (python/sglang/srt/entrypoints/v1_loads.py and managers/load_snapshot.py, 0.5.23).

An engine that does not answer (stopped, crashed, still loading) has nothing in flight that a drain could save;
one that answers without the numbers (an older release, a proxy) cannot be read, is not waited for, and is so
reported.
"""

from __future__ import annotations

import http.client
import json
import math
import re
import time

ENGINES = ("vllm", "sglang")
VLLM_PATH = "/metrics"
VLLM_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")
SGLANG_PATH = "/v1/loads?include=core"
SGLANG_FIELDS = ("num_running_reqs", "num_waiting_reqs")
# Prometheus text exposition: NAME{labels} VALUE [timestamp]; labels may hold spaces inside quotes
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)')
# what a stopped or restarting server can make a request raise
_GONE = (OSError, http.client.HTTPException)


class DrainError(ValueError):
    """An endpoint the drain cannot use (names the endpoint and the field)."""


def base_url(url):
    """The server of a URL: ``http://h:8000/health`` -> ``http://h:8000``."""
    match = re.match(r"^(https?://[^/?#]+)", str(url or ""))
    if not match:
        raise DrainError("not an http(s) URL: %r" % (url,))
    return match.group(1)


def endpoints_of(instances):
    """The drain's endpoints for plan instances: each vLLM or SGLang server that answers HTTP (rank 0 of its
    group: ``health_url`` set), as ``{"name": unit, "url": server, "engine": vllm | sglang}``; routers and headless
    ranks are left out (a router holds no request of its own once its workers finish theirs)."""
    out = []
    for inst in instances or []:
        engine = inst.get("launcher") or inst.get("engine")
        if engine not in ENGINES or inst.get("role") == "router" or not inst.get("health_url"):
            continue
        out.append({"name": inst.get("unit") or inst.get("id") or inst["health_url"],
                    "url": base_url(inst["health_url"]), "engine": engine})
    return out


def parse_prometheus(text, names):
    """The sum of every sample of the metrics ``names`` in Prometheus text, or None when none is there."""
    total, seen = 0.0, False
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match or match.group(1) not in names:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        if not math.isnan(value):  # NaN: no reading
            total, seen = total + value, True
    return int(round(total)) if seen else None


def parse_loads(text):
    """The sum of SGLang's running and waiting requests over its ranks (``/v1/loads``), or None when unreadable."""
    try:
        loads = json.loads(text)["loads"]
        return int(sum(int(one.get(f) or 0) for one in loads for f in SGLANG_FIELDS)) if loads else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def in_flight(endpoint, request):
    """Read one engine once.

    :param endpoint: ``{"url": server, "engine": vllm | sglang}``.
    :param request: ``request(url) -> (status, body)``; a connection failure raises ``OSError``.
    :returns: ``(count, detail)``: ``count`` the requests running or waiting, 0 when the server does not answer,
        None when it answers without the numbers.
    """
    engine = endpoint.get("engine")
    if engine not in ENGINES:
        raise DrainError("%s: engine must be one of %s, found %r" % (endpoint.get("name"), ", ".join(ENGINES), engine))
    url = base_url(endpoint["url"]) + (VLLM_PATH if engine == "vllm" else SGLANG_PATH)
    try:
        status, body = request(url)
    except _GONE as exc:
        return 0, "not answering (%s): nothing in flight to wait for" % (getattr(exc, "reason", None) or exc)
    if status != 200:
        return None, "%s answered %d: in-flight requests cannot be read" % (url, status)
    count = parse_prometheus(body, VLLM_GAUGES) if engine == "vllm" else parse_loads(body)
    if count is None:
        what = " and ".join(VLLM_GAUGES) if engine == "vllm" else "loads[].num_running_reqs"
        return None, "%s has no %s: in-flight requests cannot be read" % (url, what)
    return count, "%d request(s) in flight" % count


def wait_drained(endpoints, timeout, request, interval=1.0, clock=time.monotonic, sleep=time.sleep):
    """Poll every endpoint until none has a request in flight or ``timeout`` seconds pass.

    :returns: one dict per endpoint, in order: ``name``, ``url``, ``engine``, ``in_flight`` (the last count, None
        when unreadable), ``drained`` (False only for an engine that still had requests at the end), ``detail``,
        ``elapsed_s`` (when it was last read).
    """
    start = clock()
    results = [None] * len(endpoints)
    pending = list(range(len(endpoints)))
    while True:
        for i in list(pending):
            ep = endpoints[i]
            count, detail = in_flight(ep, request)
            results[i] = {"name": ep.get("name") or ep["url"], "url": ep["url"], "engine": ep["engine"],
                          "in_flight": count, "drained": not count, "detail": detail,
                          "elapsed_s": round(clock() - start, 1)}
            if not count:
                pending.remove(i)
        if not pending or clock() - start >= timeout:
            return results
        sleep(max(0.0, min(interval, timeout - (clock() - start))))


def run_drain(params, check_mode, request):
    """The module's work: validate, wait (one reading in check mode), and summarise.

    :returns: ``{endpoints, busy, unreadable, msg, warnings}``; ``busy`` names the engines that still had requests
        when the wait ended (the stop that follows gives them the engine's own shutdown timeout).
    """
    endpoints = []
    for i, ep in enumerate(params["endpoints"]):
        if ep.get("engine") not in ENGINES:
            raise DrainError("endpoints[%d].engine must be one of %s, found %r" % (i, ", ".join(ENGINES),
                                                                                   ep.get("engine")))
        try:
            url = base_url(ep["url"])
        except DrainError as exc:
            raise DrainError("endpoints[%d].url: %s" % (i, exc))
        endpoints.append(dict(ep, url=url, name=ep.get("name") or url))
    if params["timeout"] < 0:
        raise DrainError("timeout must be 0 or more seconds, found %r" % params["timeout"])
    timeout = 0 if check_mode else params["timeout"]
    results = wait_drained(endpoints, timeout, request, params["interval"])
    busy = [r["name"] for r in results if not r["drained"]]
    unreadable = [r["name"] for r in results if r["in_flight"] is None]
    warnings = []
    if busy and not check_mode:
        warnings.append("still in flight after %ds, left to the engine's own drain on SIGTERM: %s" % (
            params["timeout"], "; ".join("%s (%s)" % (r["name"], r["detail"]) for r in results if not r["drained"])))
    for r in results:
        if r["in_flight"] is None:
            warnings.append("%s: %s; not waited for" % (r["name"], r["detail"]))
    return {"endpoints": results, "busy": busy, "unreadable": unreadable, "warnings": warnings}
