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
  - Endpoints that name their O(endpoints[].unit) are also watched through systemd, one C(systemctl show) for
    all of them every O(interval) seconds. A unit that failed, exited and waits for its automatic restart,
    was restarted by systemd, or stays inactive ends its wait at once, and the failure message gives the
    unit's C(Result), exit status, restart count and the last O(journal_lines) lines of its journal.
    An engine that exits at start is so reported in seconds, not after O(timeout).
  - Endpoints that name what their unit ran before a queued start or restart (O(endpoints[].previous)) count
    a probe only once their unit runs the new process and is C(active); one more C(systemctl show) for all of
    them every O(interval) seconds until then.
options:
  endpoints:
    description: The endpoints to gate on. Required unless O(stage) is given (which builds them).
    type: list
    elements: dict
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
      unit:
        description:
          - The systemd unit that serves the endpoint, for example C(launchcard-demo-vllm-monolithic-0.service).
          - When set, the unit's state can end the wait early (see the description), and a health answer
            counts only once the unit is C(active) (with the units' readiness check, C(ExecStartPost=), that
            is once its new process answered; before, the answer may come from the old process that a
            queued restart has not stopped yet).
        type: str
      blocked:
        description:
          - Why this endpoint cannot become healthy in this run, for example a peer it routes to that
            crashed. When set, the endpoint is not probed and reads unhealthy with this text as its detail.
        type: str
      previous:
        description:
          - What the unit ran before this run queued its start or restart (M(launchcard.inference.systemd_units)
            returns it as RV(launchcard.inference.systemd_units#module:queued)). C(systemctl --no-block) returns
            before the job runs, so the process about to be replaced may still answer for a while.
          - When set (with O(endpoints[].unit)), a probe counts only once systemd reports the unit C(active) with
            an C(InvocationID) other than this one (without one, a C(MainPID) other than this one), that is the
            new process, ready (the units' C(ExecStartPost=) readiness check keeps them C(activating) until the
            engine answers).
        type: dict
        suboptions:
          invocation_id:
            description: The unit's C(InvocationID) before the job; empty when it had none.
            type: str
            default: ""
          main_pid:
            description: The unit's C(MainPID) before the job; 0 when none.
            type: int
            default: 0
  stage:
    description:
      - Handled on the controller by the action plugin of the same name, never sent to the host. A stage of the
        C(launchcard.inference.units) role's health gate on this host, built from the host's variables (then not
        given - O(endpoints); O(timeout), O(interval) and O(record) unless given) - C(first), the engines that name no
        peer (C(--tags health), with no converge in the run); C(then), those that answer only through their peers
        (routers, language servers), after every host's converge, those whose peer was not healthy in its first stage
        read unhealthy without a probe.
      - The endpoints are the host's share of the plan (C(launchcard_plan); the fleet's C(launchcard_gates) where the
        play found it); the timeout C(units_health_timeout_s), else what the host's engines need to load; the interval
        C(units_health_interval_s); with C(then), the record C(units_record) where this run's
        M(launchcard.inference.systemd_units) call (C(units_converge)) did not write it, and the peers' first-stage
        results (C(units_converge.health) or C(units_health_first)) from their variables.
      - The task is skipped on a host whose stage has no endpoint, and with C(then) where the converge call's one
        probe gated these endpoints while their peers stayed as they were.
    type: str
    choices: [first, then]
  journal_lines:
    description:
      - Lines of a crashed unit's journal quoted in the message, its engine's own output
        (C(journalctl -u UNIT -t SYSLOG_IDENTIFIER -n N -o cat)).
    type: int
    default: 10
  timeout:
    description: Seconds to wait for all endpoints together.
    type: int
    default: 600
  interval:
    description: Seconds between two probes of one endpoint.
    type: float
    default: 2.0
  record:
    description:
      - When every endpoint is healthy, also record what the host runs, in this same call, as
        M(launchcard.inference.host_state) with O(launchcard.inference.host_state#module:state=present) does (same
        file, same content; nothing is written when the running state is the same), and release this run's run
        locks (its O(launchcard.inference.host_state#module:release_lock)). C(playbooks/deploy.yml) passes it on a
        host's last gate call, so a deploy needs no round trip of its own for the record.
      - When an endpoint is not healthy nothing is recorded and no lock is released (the play releases them).
        In check mode the record that would be written is predicted whatever the endpoints answer.
      - Unset (the default) writes nothing.
    type: dict
    suboptions:
      card:
        description: "The card the host serves, C({sha256, repo, revision})."
        type: dict
        default: {}
      instances:
        description: The plan instances of this host.
        type: list
        elements: dict
        default: []
      runtime:
        description: "What runs the engines, for example C({kind: native, packages: [...], image_refs: {}})."
        type: dict
        default: {}
      release_lock:
        description: "This run's run locks to release after the record, C({run_id, paths: [{path, scope}]})."
        type: dict
      path:
        description: The record file.
        type: path
        default: /var/lib/launchcard/state.json
      directory:
        description: Where the unit files are.
        type: path
        default: /etc/systemd/system
      prefix:
        description: Name prefix of the collection's unit files.
        type: str
        default: launchcard-
  textfile:
    description:
      - Write each gated unit's result (C(launchcard_gate_passed), 1 healthy, 0 not) into C(launchcard.prom) in
        O(textfile.directory), the file M(launchcard.inference.systemd_units) writes (its O(launchcard.inference.systemd_units#module:textfile));
        only the units that file lists, the rest of it unchanged, written beside it and renamed, also when the gate
        fails. C(playbooks/upgrade.yml) passes it to the gates of its switch and its rollback.
      - When O(textfile.directory) or the file does not exist, nothing is written and RV(textfile) says so; the call
        does not fail because of it.
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
    details:
      - The endpoints are probed once and nothing fails; with O(record), the record is predicted (C(changed), RV(recorded)),
        not written; with O(textfile), so is the file.
  diff_mode:
    support: full
    details: With O(record), the host's record when it changes (or would), without its C(previous); with O(textfile), the file.
"""

EXAMPLES = r"""
- name: Gate on all endpoints of this host
  launchcard.inference.http_health:
    endpoints:
      - name: launchcard-demo-vllm-aggregated-0.service
        url: http://127.0.0.1:8000/health
        probe: completion
        model: Qwen/Qwen2.5-7B-Instruct
        unit: launchcard-demo-vllm-monolithic-0.service
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
    - name: launchcard-demo-sglang-decode-0.service
      url: http://127.0.0.1:30001/health
      probe: health
      healthy: false
      crashed: true
      detail: "engine exited, systemd restarts it (Result=exit-code, exit status 1, NRestarts=1); journal: ..."
      elapsed_s: 4.1
unhealthy:
  description: Names of the endpoints that were not healthy in time.
  returned: always
  type: list
  elements: str
crashed:
  description: Names of the endpoints whose unit's state ended the wait (a subset of RV(unhealthy)).
  returned: always
  type: list
  elements: str
recorded:
  description:
    - With O(record) - whether the record changed (or, in check mode, would change); C(null) when an endpoint was
      not healthy and nothing was recorded. Null without O(record).
  returned: always
  type: bool
lock:
  description:
    - With O(record.release_lock), once recorded - C(released) (the paths this run held and released), C(held_by)
      (each lock another run holds, left in place), as M(launchcard.inference.host_state) returns them. Null otherwise.
  returned: always
  type: dict
  sample: {released: [/var/lib/launchcard/lock.json], held_by: []}
textfile:
  description:
    - With O(textfile), the file's C(path), whether it C(changed) (or would, in check mode), and C(skipped), why
      nothing was written, else null.
  returned: when O(textfile) is given
  type: dict
  sample: {path: /var/lib/prometheus/node-exporter/launchcard.prom, changed: true, skipped: null}
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.launchcard.inference.plugins.module_utils import _textfile_facts as textfile_facts
from ansible_collections.launchcard.inference.plugins.module_utils._gate import ARGUMENT_SPEC, GateError, run_gate


def main():
    # stage: the action plugin builds the endpoints from it and never sends it
    module = AnsibleModule(argument_spec=dict(ARGUMENT_SPEC, endpoints=dict(ARGUMENT_SPEC["endpoints"], required=False),
                                              stage=dict(type="str", choices=["first", "then"]),
                                              textfile=dict(type="dict", options=dict(directory=dict(type="path", required=True)))),
                           required_one_of=[["endpoints", "stage"]], mutually_exclusive=[["endpoints", "stage"]],
                           supports_check_mode=True)
    try:
        result = run_gate(module.params, module.check_mode, module.run_command, module.get_bin_path,
                          module.atomic_move, diff=module._diff)
    except GateError as exc:
        module.fail_json(msg=str(exc))
    for warning in result.pop("warnings"):
        module.warn(warning)
    written = False
    if module.params["textfile"] is not None:
        # launchcard_gate_passed stays in launchcard.prom alone: node_exporter 1.5.0 serves all *.prom files' samples as one
        # (collector/textfile.go, Update) and client_golang 1.14.0 drops a repeated series (prometheus/registry.go, checkMetricConsistency)
        written, result["textfile"], diff = textfile_facts.converge_gate(
            module.params["textfile"]["directory"], textfile_facts.gate_results(result), time.time(), module.check_mode)
        if module._diff and diff:
            result["diff"] = ([result["diff"]] if "diff" in result else []) + [diff]
    if result["msg"]:
        module.fail_json(**result)
    del result["msg"]
    module.exit_json(changed=bool(result["recorded"]) or written, **result)


if __name__ == "__main__":
    main()
