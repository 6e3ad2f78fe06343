#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: engine_drain
short_description: Wait, bounded, until the engines of a host have no request in flight
version_added: 1.0.0
description:
  - Reads every given engine from the managed host until none reports a request running or waiting, or
    O(timeout) seconds pass. Meant for the moment after a host's instances left their routers and before their
    units stop, so that long generations finish instead of being cut by the stop.
  - vLLM is read from C(GET /metrics), the gauges C(vllm:num_requests_running) and C(vllm:num_requests_waiting);
    SGLang from C(GET /v1/loads?include=core), C(num_running_reqs) and C(num_waiting_reqs) of each rank (no
    C(--enable-metrics) needed).
  - An engine that does not answer has nothing in flight to wait for. One that answers without these numbers is not
    waited for, and is reported in RV(unreadable) with a warning.
  - The wait running out does not fail the task; RV(busy) names the engines that still had requests, with a
    warning, and the stop that follows gives them the engine's own drain (vLLM C(--shutdown-timeout)).
options:
  endpoints:
    description: The engines to wait for.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: A label for reports, for example the unit name.
        type: str
      url:
        description: The engine's server, for example C(http://127.0.0.1:8000) (a path, such as C(/health), is ignored).
        type: str
        required: true
      engine:
        description: Which engine serves there.
        type: str
        required: true
        choices: [vllm, sglang]
  timeout:
    description: Seconds to wait for all engines together; C(0) reads each once.
    type: int
    default: 300
  interval:
    description: Seconds between two readings of an engine that still has requests.
    type: float
    default: 1.0
  textfile:
    description:
      - Count this drain per engine for node exporter's textfile collector, in C(launchcard-drains.prom) in
        O(textfile.directory) (written beside it and renamed, mode 0644; docs/observability.md lists its metrics),
        under the engine's O(endpoints[].name), its unit. A unit the file does not list yet is added.
      - When O(textfile.directory) does not exist (node exporter is not installed), nothing is written and
        RV(textfile) says so; the call does not fail.
      - Unset (the default) - nothing is written.
    type: dict
    suboptions:
      directory:
        description:
          - node exporter's textfile directory; the action plugin fills it in, when not given, with the collection's
            (C(plugins/plugin_utils/_textfile.py)).
        type: path
        required: true
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes
attributes:
  check_mode:
    support: full
    details: Each engine is read once, without waiting; with O(textfile), the count that would be written is predicted.
  diff_mode:
    support: full
    details: With O(textfile), the counters' file when it changes (or would).
"""

EXAMPLES = r"""
- name: Let in-flight requests finish before the units stop
  launchcard.inference.engine_drain:
    endpoints:
      - name: launchcard-demo-vllm-aggregated-0.service
        url: http://127.0.0.1:8000
        engine: vllm
      - name: launchcard-demo-sglang-aggregated-1.service
        url: http://127.0.0.1:30000
        engine: sglang
    timeout: 300
"""

RETURN = r"""
endpoints:
  description: One result per engine, in the order given.
  returned: always
  type: list
  elements: dict
  sample:
    - name: launchcard-demo-vllm-aggregated-0.service
      url: http://127.0.0.1:8000
      engine: vllm
      in_flight: 0
      drained: true
      detail: "0 request(s) in flight"
      elapsed_s: 12.3
busy:
  description: Names of the engines that still had requests in flight when the wait ended.
  returned: always
  type: list
  elements: str
unreadable:
  description: Names of the engines that answered without the numbers (not waited for).
  returned: always
  type: list
  elements: str
textfile:
  description:
    - With O(textfile), the file's C(path), whether it C(changed) (or would, in check mode), and C(skipped), why
      nothing was written (its directory does not exist), else null.
  returned: when O(textfile) is given
  type: dict
  sample: {path: /var/lib/prometheus/node-exporter/launchcard-drains.prom, changed: true, skipped: null}
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.launchcard.inference.plugins.module_utils import _textfile_facts as textfile_facts

from ansible_collections.launchcard.inference.plugins.module_utils._drain import DrainError, run_drain
from ansible_collections.launchcard.inference.plugins.module_utils._gate import request


def main():
    module = AnsibleModule(
        argument_spec=dict(
            endpoints=dict(type="list", elements="dict", required=True, options=dict(
                name=dict(type="str"),
                url=dict(type="str", required=True),
                engine=dict(type="str", required=True, choices=["vllm", "sglang"]),
            )),
            timeout=dict(type="int", default=300),
            interval=dict(type="float", default=1.0),
            textfile=dict(type="dict", options=dict(directory=dict(type="path", required=True))),
        ),
        supports_check_mode=True,
    )
    try:
        result = run_drain(module.params, module.check_mode, request)
    except DrainError as exc:
        module.fail_json(msg=str(exc))
    for warning in result.pop("warnings"):
        module.warn(warning)
    changed = False
    if module.params["textfile"] is not None:
        changed, result["textfile"], diff = textfile_facts.converge_drains(
            module.params["textfile"]["directory"], textfile_facts.drain_results(result["endpoints"]), time.time(),
            module.check_mode)
        if module._diff and diff:
            result["diff"] = diff
    module.exit_json(changed=changed, **result)


if __name__ == "__main__":
    main()
