# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SGLang router's worker API (regular mode): take workers out, put them back.

Pure Python, no Ansible import. Read from the installed sglang-router 0.3.2
(https://pypi.org/project/sglang-router/) and checked against it and 0.2.4 on loopback: ``GET
/workers`` answers ``{"workers": [{"id", "url", "is_healthy", ...}], "total", "stats"}``; ``DELETE
/workers/{id}`` and ``POST /workers`` with ``{"url": ...}`` answer 202 and act in the background, so the
caller polls ``GET /workers`` until the change shows. Two generations key a worker differently (sglang PR
#15540, "Use UUIDs for router-managed worker resources"): before it (0.2.x) a worker's ``id`` is its URL and
``DELETE /workers/{url}`` takes the URL-encoded URL; from it on (0.3.x) the ``id`` is a UUID and
``DELETE /workers/{url}`` answers 400 ("expected UUID"). Both are spoken: the path is the listed ``id``,
percent-encoded. The older ``/add_worker?url=`` and ``/remove_worker?url=`` routes answer 404 on 0.3.2.
In PD mode (``--pd-disaggregation`` without ``--mini-lb``) the same routes list, take out and add prefill and
decode workers; ``POST /workers`` then names the kind, ``{"url", "worker_type": "prefill", "bootstrap_port"}`` or
``{"url", "worker_type": "decode"}``, and ``GET /workers`` lists each worker's ``worker_type`` (measured on 0.3.2 in
front of stand-in engines: tests/unit/plugins/modules/test_router_workers_pd.py). ``--mini-lb`` has no worker API.
"""

from __future__ import annotations

import json
import re
import time
from urllib.parse import quote

# request(url, method="GET", payload=None, timeout=10.0) -> (status: int, body: str); raises on no answer.

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# what each worker API is, in words, for the run's output and its errors
API_WORDS = {
    "uuid": "workers keyed by UUID (sglang-router from sglang PR #15540 on, 0.3.x)",
    "url": "workers keyed by their URL (sglang-router before sglang PR #15540, 0.2.x)",
    None: "no worker listed, so its key cannot be told; adding works alike on both",
}


def workers(body):
    """``{url: {"id", "healthy"}}`` from a ``GET /workers`` body.

    :raises ValueError: a body that is not ``{"workers": [{"id", "url", ...}, ...]}``, saying what it is.
    """
    try:
        doc = json.loads(body)
    except ValueError:
        raise ValueError("GET /workers answered a body that is not JSON: %r" % (body[:120],))
    if not isinstance(doc, dict) or not isinstance(doc.get("workers"), list):
        raise ValueError("GET /workers answered JSON without a workers list: %r" % (body[:120],))
    out = {}
    for w in doc["workers"]:
        if not isinstance(w, dict) or not isinstance(w.get("url"), str) or not isinstance(w.get("id"), str):
            raise ValueError("GET /workers lists a worker without a url and an id: %r" % (w,))
        out[w["url"]] = {"id": w["id"], "healthy": bool(w.get("is_healthy"))}
    return out


def api_kind(listed):
    """``"uuid"``, ``"url"`` or None (nothing listed) for the workers of :func:`workers`.

    :raises ValueError: ids of neither kind, or of both (naming one).
    """
    kinds = set()
    for url, w in listed.items():
        if w["id"] == url:
            kinds.add("url")
        elif _UUID.match(w["id"]):
            kinds.add("uuid")
        else:
            raise ValueError("GET /workers lists worker %s with id %r, neither its URL (sglang-router before sglang PR "
                             "#15540) nor a UUID (from it on)" % (url, w["id"]))
    if len(kinds) > 1:
        raise ValueError("GET /workers lists workers keyed both by URL and by UUID")
    return kinds.pop() if kinds else None


def read(api, request):
    """``(listed, kind)`` of the router at ``api``: :func:`workers` and :func:`api_kind` of its ``GET /workers``.

    A router answering anything but ``200`` with that shape is not one this module can drive; never read as
    "no workers".

    :raises RuntimeError: naming the router and what it answered.
    """
    status, body = request(api + "/workers")
    if status != 200:
        raise RuntimeError("GET %s/workers answered %d (%s): not the worker API of sglang-router 0.2 or 0.3 (a --mini-lb "
                           "router, or a release without GET /workers)" % (api, status, body[:200].strip()))
    try:
        listed = workers(body)
        return listed, api_kind(listed)
    except ValueError as exc:
        raise RuntimeError("router %s: %s" % (api, exc))


def payload(url, worker_type="regular", bootstrap_port=None):
    """The ``POST /workers`` body that adds worker ``url``: a PD router's workers name their kind, a prefill its
    bootstrap port; a regular router's carry the URL alone (what sglang-router 0.2 and 0.3 both take)."""
    if worker_type in (None, "regular"):
        return {"url": url}
    if worker_type not in ("prefill", "decode"):
        raise ValueError("worker_type must be regular, prefill or decode, found %r" % (worker_type,))
    body = {"url": url, "worker_type": worker_type}
    if worker_type == "prefill" and bootstrap_port is not None:
        body["bootstrap_port"] = int(bootstrap_port)
    return body


def converge(api, remove, add, request, timeout=60.0, interval=0.5, clock=time.monotonic, sleep=time.sleep,
             worker_type="regular", bootstrap_port=None):
    """Remove ``remove`` and add ``add`` (worker URLs), then wait until the router shows it.

    An URL both removed and added is left in (``add`` wins). Added workers must
    show as healthy in the router's list. ``worker_type`` and ``bootstrap_port``: what the added workers are
    (:func:`payload`).

    :returns: ``{"changed", "removed", "added", "workers", "api"}``; ``workers`` the URLs listed at the end, ``api``
        the kind of worker API (:func:`api_kind`) the first listing showed.
    :raises RuntimeError: the router refused a request or did not show the change within ``timeout`` s.
    """
    remove = [u for u in remove if u not in add]

    def listing():
        return read(api, request)[0]

    now, kind = read(api, request)
    removed, added = [], []
    for url in remove:
        if url in now:
            # the listed id, percent-encoded: a URL before sglang PR #15540, a UUID from it on
            path = "%s/workers/%s" % (api, quote(now[url]["id"], safe=""))
            status, body = request(path, method="DELETE")
            if status not in (200, 202, 204):
                raise RuntimeError("DELETE %s (%s) answered %d: %s" % (path, url, status, body[:200]))
            removed.append(url)
    for url in add:
        if url not in now:
            status, body = request(api + "/workers", method="POST", payload=payload(url, worker_type, bootstrap_port))
            if status not in (200, 201, 202):
                raise RuntimeError("POST %s/workers %s answered %d: %s" % (api, url, status, body[:200]))
            added.append(url)
    deadline = clock() + timeout
    while True:
        now = listing()
        pending = [u for u in remove if u in now] + [u for u in add if not (now.get(u) or {}).get("healthy")]
        if not pending:
            return {"changed": bool(removed or added), "removed": removed, "added": added, "workers": sorted(now),
                    "api": kind}
        if clock() >= deadline:
            raise RuntimeError("router %s did not show the change within %gs: still pending %s (listed: %s)" % (
                api, timeout, ", ".join(pending), ", ".join(sorted(now)) or "none"))
        sleep(interval)
