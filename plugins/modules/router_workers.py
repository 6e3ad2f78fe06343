#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: router_workers
short_description: Take workers out of an SGLang router (regular mode) and put them back
version_added: 1.1.0
description:
  - Uses the router's worker API (sglang-router 0.3) - C(GET /workers), C(DELETE /workers/{id}),
    C(POST /workers) - and waits until the router's list shows the change (the API acts in the background).
  - Added workers must be listed as healthy by the router before the module returns.
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
"""

RETURN = r"""
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

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError
from ansible.module_utils.urls import open_url

from ansible_collections.launchcard.inference.plugins.module_utils._router import converge, workers


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
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    p = module.params
    api = p["api"].rstrip("/")
    try:
        if module.check_mode:
            status, body = request(api + "/workers")
            listed = workers(body) if status == 200 else {}
            rem = [u for u in p["remove"] if u in listed and u not in p["add"]]
            add = [u for u in p["add"] if u not in listed]
            module.exit_json(changed=bool(rem or add), removed=rem, added=add, workers=sorted(listed))
        result = converge(api, p["remove"], p["add"], request, timeout=p["timeout"])
    except (RuntimeError, ValueError, OSError) as exc:
        module.fail_json(msg="router %s: %s" % (api, exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
