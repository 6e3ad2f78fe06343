# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Health gate: wait until every endpoint of a host answers, all at once.

Pure Python (stdlib ``urllib`` and threads), no Ansible import.

What "healthy" means, per engine (the engines' API servers and the issues cited):

- vLLM ``GET /health`` is 200 when serving, 503 once the engine is dead; the
  port opens only after the model has loaded, so "connection refused" means
  "still loading", not "failed".
- SGLang ``GET /health`` is 503 while starting and while draining.
- The SGLang router answers ``GET /health`` itself.
- Health can lie (200 while wedged, gateway-api-inference-extension 558,
  vllm 45094), so endpoints with ``probe: completion`` must also return one
  real 1-token completion from ``POST /v1/completions``.
"""

from __future__ import annotations

import http.client
import json
import threading
import time

# The HTTP function is injected: the module passes one built on Ansible's
# open_url (proxies off: the endpoints are the engines' own ports), tests pass
# their own. Its contract:
#   request(url, payload=None, timeout=10.0) -> (status: int, body: str)
# where payload (a dict) makes it a JSON POST, an HTTP error status is
# returned (not raised), and a connection failure raises.

# What a server that is still starting (or restarting) can make a request raise.
_NOT_YET = (OSError, ValueError, http.client.HTTPException)


def completion_url(health_url):
    """Return the ``/v1/completions`` URL on the same server as ``health_url``."""
    return health_url.rsplit("/", 1)[0] + "/v1/completions"


def check_once(endpoint, request):
    """Probe one endpoint once.

    :param endpoint: dict with ``url`` (the health URL), ``probe``
        (``health`` | ``completion``) and, for completions, ``model``.
    :param request: the HTTP function (see the contract above).
    :returns: ``(healthy: bool, detail: str)``.
    """
    try:
        status, body = request(endpoint["url"])
    except _NOT_YET as exc:
        return False, "no answer yet (%s)" % getattr(exc, "reason", exc)
    if status != 200:
        return False, "health answered %d" % status
    if endpoint.get("probe") != "completion":
        return True, "health 200"
    payload = {"model": endpoint.get("model"), "prompt": "ping", "max_tokens": 1, "temperature": 0}
    try:
        status, body = request(completion_url(endpoint["url"]), payload, 120.0)
    except _NOT_YET as exc:
        return False, "completion failed (%s)" % getattr(exc, "reason", exc)
    if status != 200:
        return False, "completion answered %d: %s" % (status, body[:200])
    try:
        text = json.loads(body)["choices"][0].get("text") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return False, "completion answered 200 without choices: %s" % body[:200]
    return True, "health 200, completion %r" % str(text)[:120]


def wait_all(endpoints, timeout, request, interval=2.0, clock=time.monotonic, sleep=time.sleep, watch=None,
             fresh=None):
    """Poll every endpoint in its own thread until healthy or ``timeout`` s.

    :param watch: optional ``watch(pending) -> (crashed, unsettled)``, called
        from this thread before the probes start and then every ``interval``
        s with the endpoints still waiting (dicts as given). ``crashed`` is a
        dict endpoint name -> reason: such an endpoint ends its wait at once,
        unhealthy, with ``reason`` as its detail and ``crashed: True`` (a key
        only such results have). ``unsettled`` is a dict endpoint name ->
        state (e.g. ``deactivating/stop-sigterm``) of the endpoints whose unit
        is not ``active`` yet: a health answer from one of them is not taken
        as healthy, since it may come from the old process that a queued
        restart has not stopped yet (with the units' readiness check,
        ``ExecStartPost=``, "active" means the new process answered). The
        module passes a reader of the endpoints' systemd units, so an engine
        that exits at start is reported in seconds instead of after
        ``timeout``. An exception in ``watch`` stops watching (and the
        unsettled check), not the gate.
    :param fresh: optional ``fresh(held) -> set of endpoint names``, called
        along with ``watch`` with the endpoints that carry a ``previous`` key
        (the unit's process before a queued start or restart) and are not yet
        named: the names of those whose unit now runs its new process, ready.
        Such an endpoint's probe counts only once ``fresh`` has named it
        before the probe, so the process that a queued restart is about to
        replace cannot pass the gate, even in the instant before systemd
        starts the queued job (when the unit still reads ``active``). Without
        ``fresh``, ``previous`` is ignored; an exception in ``fresh`` names
        none (the wait then ends by timeout).

    An endpoint with a ``blocked`` reason (str) is not probed: it reads
    unhealthy at once with that reason as its detail and ``blocked: True``
    (e.g. a router whose peer crashed, known from another host's gate).

    :returns: list of dicts ``{name, url, probe, healthy, detail,
        elapsed_s}`` (plus ``crashed`` or ``blocked``, see above) in the
        order given.
    """
    results = [None] * len(endpoints)
    ended = {}
    unsettled = {}
    held = set(i for i, ep in enumerate(endpoints) if fresh is not None and ep.get("previous") is not None)
    renewed = set()
    start = clock()
    watching = [watch is not None]

    def record(i, ep, ok, detail, crashed=False):
        results[i] = {"name": ep.get("name", ep["url"]), "url": ep["url"], "probe": ep.get("probe", "health"),
                      "healthy": ok, "detail": detail, "elapsed_s": round(clock() - start, 1)}
        if crashed:
            results[i]["crashed"] = True

    def worker(i, ep):
        if ep.get("blocked"):
            record(i, ep, False, ep["blocked"])
            results[i]["blocked"] = True
            return None
        while True:
            if i in ended:
                return record(i, ep, False, ended[i], True)
            counts = i not in held or i in renewed  # read before the probe
            try:
                ok, detail = check_once(ep, request)
            except Exception as exc:  # a thread that dies would leave no result
                ok, detail = False, "probe failed: %r" % (exc,)
            state = unsettled.get(ep.get("name", ep["url"])) if watching[0] else None
            if ok and not counts:
                ok, detail = False, "%s, but from the process before the queued restart: the unit is not " \
                                    "active with a new process yet" % detail
            elif ok and state:
                ok, detail = False, "%s, but its unit is %s (not ready yet, or the old process)" % (detail, state)
            if ok or clock() - start >= timeout:
                return record(i, ep, ok, detail)
            sleep(interval)

    def observe():
        waiting = [i for i in sorted(held - renewed) if results[i] is None]
        try:
            named = fresh([endpoints[i] for i in waiting]) if waiting else set()
        except Exception:  # counts none: the gate then ends by timeout, never on the old process
            named = set()
        renewed.update(i for i in waiting if endpoints[i].get("name", endpoints[i]["url"]) in named)
        if not watching[0]:
            return
        pending = [ep for i, ep in enumerate(endpoints) if results[i] is None and i not in ended and not ep.get("blocked")]
        try:
            crashed, busy = watch(pending) if pending else ({}, {})
        except Exception:  # the gate still ends by health or timeout
            watching[0] = False
            return
        unsettled.clear()
        unsettled.update(busy)
        for i, ep in enumerate(endpoints):
            name = ep.get("name", ep["url"])
            if results[i] is None and i not in ended and name in crashed:
                ended[i] = crashed[name]

    # The watch loop sleeps until the next observation or until the last probe has ended, whichever comes
    # first: a gate whose endpoints answer at once returns at once (a plain sleep here cost every call a
    # whole interval, 2 s by default, on a no-op deploy).
    left = [len(endpoints)]
    lock = threading.Lock()
    finished = threading.Event()
    if not endpoints:
        finished.set()

    def run(i, ep):
        try:
            worker(i, ep)
        finally:
            with lock:
                left[0] -= 1
                if not left[0]:
                    finished.set()

    def pause():
        if sleep is time.sleep:
            finished.wait(interval)
        else:  # an injected clock and sleep (tests): their time, not the event's
            sleep(interval)

    observe()  # the units' state is known before the first probe
    threads = [threading.Thread(target=run, args=(i, ep)) for i, ep in enumerate(endpoints)]
    for t in threads:
        t.daemon = True
        t.start()
    while (watching[0] or held - renewed) and not finished.is_set() and clock() - start < timeout:
        pause()
        if not finished.is_set():
            observe()
    for t in threads:
        t.join()
    return results
