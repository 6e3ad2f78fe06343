#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: http_health
short_description: Wait until every inference endpoint of a host is healthy, in one call
version_added: 1.0.0
description:
  - Polls every given endpoint concurrently from the managed host until each answers C(GET /health)
    with 200 or O(timeout) seconds pass.
  - Endpoints with C(probe=completion) must also return a real 1-token completion from
    C(POST /v1/completions), because both vLLM and SGLang have answered 200 on C(/health) while
    wedged.
  - Connection refused counts as "still loading", because vLLM opens its port only after the model has loaded.
options:
  endpoints:
    description: The endpoints to gate on.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: A label for reports, for example the unit name.
        type: str
      url:
        description: The health URL, for example C(http://127.0.0.1:8000/health).
        type: str
        required: true
      probe:
        description: C(health) checks only the health URL; C(completion) also sends a 1-token completion.
        type: str
        choices: [health, completion]
        default: health
      model:
        description: Model name sent in the completion request.
        type: str
  timeout:
    description: Seconds to wait for all endpoints together.
    type: int
    default: 600
  interval:
    description: Seconds between two probes of one endpoint.
    type: float
    default: 2.0
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes.read_only
  - launchcard.inference.attributes
attributes:
  check_mode:
    details: Read-only; in check mode the endpoints are probed once and nothing fails.
"""

EXAMPLES = r"""
- name: Gate on all endpoints of this host
  launchcard.inference.http_health:
    endpoints:
      - name: launchcard-demo-vllm-aggregated-0.service
        url: http://127.0.0.1:8000/health
        probe: completion
        model: Qwen/Qwen2.5-7B-Instruct
    timeout: 3900
"""

RETURN = r"""
endpoints:
  description: One result per endpoint, in the order given.
  returned: always
  type: list
  elements: dict
  sample:
    - name: launchcard-demo-vllm-aggregated-0.service
      url: http://127.0.0.1:8000/health
      probe: completion
      healthy: true
      detail: "health 200, completion ' Hello'"
      elapsed_s: 0.1
unhealthy:
  description: Names of the endpoints that were not healthy in time.
  returned: always
  type: list
  elements: str
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError
from ansible.module_utils.urls import open_url

from ansible_collections.launchcard.inference.plugins.module_utils._health import wait_all


def request(url, payload=None, timeout=10.0):
    """HTTP for the health policy: (status, body); HTTP errors are returned, not raised."""
    data = None if payload is None else json.dumps(payload)
    try:
        resp = open_url(url, data=data, method="GET" if data is None else "POST", timeout=timeout, use_proxy=False,
                        headers={"Content-Type": "application/json"} if data else None)
        return resp.getcode(), resp.read(65536).decode("utf-8", "replace")
    except HTTPError as exc:
        return exc.code, exc.read(4096).decode("utf-8", "replace")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            endpoints=dict(type="list", elements="dict", required=True, options=dict(
                name=dict(type="str"),
                url=dict(type="str", required=True),
                probe=dict(type="str", choices=["health", "completion"], default="health"),
                model=dict(type="str"),
            )),
            timeout=dict(type="int", default=600),
            interval=dict(type="float", default=2.0),
        ),
        supports_check_mode=True,
    )
    p = module.params
    timeout = 0 if module.check_mode else p["timeout"]
    results = wait_all(p["endpoints"], timeout, request, p["interval"])
    bad = [r["name"] for r in results if not r["healthy"]]
    if bad and not module.check_mode:
        module.fail_json(msg="not healthy after %ds: %s" % (p["timeout"], "; ".join(
            "%s (%s)" % (r["name"], r["detail"]) for r in results if not r["healthy"])),
            endpoints=results, unhealthy=bad)
    module.exit_json(changed=False, endpoints=results, unhealthy=bad)


if __name__ == "__main__":
    main()
