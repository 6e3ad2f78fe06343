# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SGLang router's worker API (regular mode): take workers out, put them back.

Pure Python, no Ansible import. Read from the installed sglang-router 0.3.2
(https://pypi.org/project/sglang-router/) and checked against it: ``GET
/workers`` answers ``{"workers": [{"id": uuid, "url", "is_healthy", ...}],
"total", "stats"}``; ``DELETE /workers/{id}`` and ``POST /workers`` with
``{"url": ...}`` answer 202 and act in the background, so the caller polls
``GET /workers`` until the change shows. The older ``/add_worker?url=`` and
``/remove_worker?url=`` routes answer 404 there. ``--mini-lb`` and PD mode
(``--pd-disaggregation``) are out of scope of this helper.
"""

from __future__ import annotations

import json
import time

# request(url, method="GET", payload=None, timeout=10.0) -> (status: int, body: str); raises on no answer.


def workers(body):
    """``{url: {"id", "healthy"}}`` from a ``GET /workers`` body."""
    doc = json.loads(body)
    out = {}
    for w in doc.get("workers") or []:
        out[w.get("url")] = {"id": w.get("id"), "healthy": bool(w.get("is_healthy"))}
    return out


def converge(api, remove, add, request, timeout=60.0, interval=0.5, clock=time.monotonic, sleep=time.sleep):
    """Remove ``remove`` and add ``add`` (worker URLs), then wait until the router shows it.

    An URL both removed and added is left in (``add`` wins). Added workers must
    show as healthy in the router's list.

    :returns: ``{"changed", "removed", "added", "workers"}``; ``workers`` the URLs listed at the end.
    :raises RuntimeError: the router refused a request or did not show the change within ``timeout`` s.
    """
    remove = [u for u in remove if u not in add]

    def listing():
        status, body = request(api + "/workers")
        if status != 200:
            raise RuntimeError("GET %s/workers answered %d: %s" % (api, status, body[:200]))
        return workers(body)

    now = listing()
    removed, added = [], []
    for url in remove:
        if url in now:
            status, body = request("%s/workers/%s" % (api, now[url]["id"]), method="DELETE")
            if status not in (200, 202, 204):
                raise RuntimeError("DELETE %s/workers/%s (%s) answered %d: %s" % (
                    api, now[url]["id"], url, status, body[:200]))
            removed.append(url)
    for url in add:
        if url not in now:
            status, body = request(api + "/workers", method="POST", payload={"url": url})
            if status not in (200, 201, 202):
                raise RuntimeError("POST %s/workers %s answered %d: %s" % (api, url, status, body[:200]))
            added.append(url)
    deadline = clock() + timeout
    while True:
        now = listing()
        pending = [u for u in remove if u in now] + [u for u in add if not (now.get(u) or {}).get("healthy")]
        if not pending:
            return {"changed": bool(removed or added), "removed": removed, "added": added, "workers": sorted(now)}
        if clock() >= deadline:
            raise RuntimeError("router %s did not show the change within %gs: still pending %s (listed: %s)" % (
                api, timeout, ", ".join(pending), ", ".join(sorted(now)) or "none"))
        sleep(interval)
