#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: router_workers
short_description: Take workers out of an SGLang router (regular or PD mode) and put them back
version_added: 1.0.0
description:
  - Uses the router's worker API - C(GET /workers), C(DELETE /workers/{id}), C(POST /workers) - and waits until the
    router's list shows the change (the API acts in the background). Both generations of it are spoken - workers keyed
    by their URL (sglang-router 0.2, before sglang PR 15540) and by UUID (0.3) - as C(GET /workers) shows them; the
    id is percent-encoded in the path.
  - A router whose C(GET /workers) answers anything but C(200) with a list of workers, each with its C(url) and
    C(id), fails the task naming the router and what it answered; it is never read as a router without workers,
    in check mode either.
  - Added workers must be listed as healthy by the router before the module returns.
  - A PD router (C(--pd-disaggregation)) has the same API; a worker put in there names its kind (O(worker_type)), a
    prefill also its O(bootstrap_port).
  - Routers started with C(--mini-lb) have no worker API; this module does not apply to them.
options:
  api:
    description: The router's base URL as seen from where the module runs, for example C(http://127.0.0.1:30000).
    type: str
    required: true
  remove:
    description: Worker URLs to take out (absent ones are ignored).
    type: list
    elements: str
    default: []
  add:
    description: Worker URLs to put in (present ones are kept); an URL in both lists stays in.
    type: list
    elements: str
    default: []
  worker_type:
    description:
      - What the workers of O(add) are - C(regular) (a regular-mode router), or C(prefill) or C(decode) (a PD router).
    type: str
    choices: [regular, prefill, decode]
    default: regular
  bootstrap_port:
    description: The bootstrap port of the prefill workers of O(add) (O(worker_type=prefill)).
    type: int
  probe:
    description:
      - Only read which worker API the router speaks (RV(api)); O(remove) and O(add) are not used. A router that does
        not answer (not running) is reported with RV(api) null and RV(answering) false, not failed.
    type: bool
    default: false
  timeout:
    description: Seconds to wait for the router to show the change.
    type: int
    default: 60
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes
attributes:
  check_mode:
    details: In check mode the router is only read.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Take a worker out of the router on its host
  launchcard.inference.router_workers:
    api: http://127.0.0.1:30000
    remove: [http://10.1.0.15:30000]
  delegate_to: router-host

- name: Put a prefill into a PD router
  launchcard.inference.router_workers:
    api: http://127.0.0.1:30000
    add: [http://10.1.0.16:31000]
    worker_type: prefill
    bootstrap_port: 8998
  delegate_to: router-host
"""

RETURN = r"""
api:
  description:
    - C(uuid) (workers keyed by UUID, sglang-router 0.3), C(url) (keyed by their URL, 0.2), or null (no worker listed,
      or with O(probe) a router that does not answer).
  returned: always
  type: str
  sample: uuid
answering:
  description: Whether the router answered (false only with O(probe)).
  returned: always
  type: bool
removed:
  description: Worker URLs taken out in this run.
  returned: always
  type: list
  elements: str
added:
  description: Worker URLs put in in this run.
  returned: always
  type: list
  elements: str
workers:
  description: Worker URLs the router lists at the end.
  returned: always
  type: list
  elements: str
"""

import json
# ansible/module_utils/urls.py (core 2.19): open_url raises the stdlib's urllib.error.HTTPError/URLError
from urllib.error import HTTPError, URLError

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.launchcard.inference.plugins.module_utils._router import converge, read


def request(url, method="GET", payload=None, timeout=10.0):
    """(status, body); HTTP errors are returned, not raised."""
    data = None if payload is None else json.dumps(payload)
    try:
        resp = open_url(url, data=data, method=method, timeout=timeout, use_proxy=False,
                        headers={"Content-Type": "application/json"} if data else None)
        return resp.getcode(), resp.read(1 << 20).decode("utf-8", "replace")
    except HTTPError as exc:
        return exc.code, exc.read(4096).decode("utf-8", "replace")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            api=dict(type="str", required=True),
            remove=dict(type="list", elements="str", default=[]),
            add=dict(type="list", elements="str", default=[]),
            worker_type=dict(type="str", default="regular", choices=["regular", "prefill", "decode"]),
            bootstrap_port=dict(type="int"),
            probe=dict(type="bool", default=False),
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    p = module.params
    api = p["api"].rstrip("/")
    try:
        if p["probe"]:
            try:
                listed, kind = read(api, request)
            except (OSError, URLError) as exc:
                module.exit_json(changed=False, api=None, answering=False, removed=[], added=[], workers=[],
                                 msg="router %s does not answer: %s" % (api, getattr(exc, "reason", exc)))
            module.exit_json(changed=False, api=kind, answering=True, removed=[], added=[], workers=sorted(listed))
        if module.check_mode:
            listed, kind = read(api, request)
            rem = [u for u in p["remove"] if u in listed and u not in p["add"]]
            add = [u for u in p["add"] if u not in listed]
            module.exit_json(changed=bool(rem or add), removed=rem, added=add, workers=sorted(listed), api=kind,
                             answering=True)
        result = converge(api, p["remove"], p["add"], request, timeout=p["timeout"], worker_type=p["worker_type"],
                          bootstrap_port=p["bootstrap_port"])
    except (RuntimeError, ValueError, OSError) as exc:
        module.fail_json(msg="router %s: %s" % (api, exc))
    module.exit_json(answering=True, **result)


if __name__ == "__main__":
    main()
