#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: engine_argv
short_description: Check recipes' argv with the engine's own argument parser, where the engine is installed
version_added: 1.0.0
description:
  - Runs a parse-only program with the Python of the engine's pinned image (C(podman|docker run --rm --pull never
    --network none --entrypoint python3 IMAGE@DIGEST -c ...)) or of the native virtualenv. The program builds the
    parser the engine's server builds (vLLM C(make_arg_parser) over its C(FlexibleArgumentParser), SGLang
    C(ServerArgs.add_cli_args)) and parses the argv. Nothing is started, no model is read, no image is pulled.
  - Returns each check's verdict; the caller stops the run on a rejected argv.
options:
  checks:
    description:
      - The checks to run here, each C({key, engine, tokens, runtime, image, python, podman_cgroups}) as the
        filter P(launchcard.inference.argv_checks#filter) gives them; C(podman_cgroups) is the host's
        C(launchcard_podman_cgroups), which a podman check runs with as the host's units do.
    type: list
    elements: dict
    required: true
  timeout:
    description: Seconds one check may take (an engine's imports take tens of seconds).
    type: int
    default: 300
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes
attributes:
  check_mode:
    support: full
    details: The checks only parse; they run in check mode too.
  diff_mode:
    support: N/A
    details: Nothing is changed; nothing to diff.
"""

EXAMPLES = r"""
- name: Check the recipes' argv on the host that holds the image
  launchcard.inference.engine_argv:
    checks:
      - key: one
        engine: sglang
        tokens: [--model-path, zai-org/GLM-5.3-Flash, --tp-size, "2"]
        runtime: podman
        image: docker.io/lmsysorg/sglang@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
"""

RETURN = r"""
results:
  description:
    - One C({key, status, message, flag, near, version}) per check. C(status) is C(ok), C(rejected) or
      C(unavailable) (the program could not run, for example the image is not in the engine's store).
  returned: always
  type: list
  elements: dict
"""

import subprocess

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.launchcard.inference.plugins.module_utils import _engine_argv


def run_check(check, timeout):
    try:
        cmd = _engine_argv.check_command(check.get("engine"), check.get("tokens") or [], check.get("runtime"),
                                         image=check.get("image"), container_engine=check.get("runtime"),
                                         python=check.get("python") or "python3",
                                         cgroups=check.get("podman_cgroups"))
    except ValueError as exc:
        return {"status": "unavailable", "message": str(exc), "flag": None, "near": []}
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"status": "unavailable", "message": "%s: %s" % (type(exc).__name__, exc), "flag": None, "near": []}
    return _engine_argv.interpret(res.returncode, res.stdout, res.stderr)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            checks=dict(type="list", elements="dict", required=True),
            timeout=dict(type="int", default=300),
        ),
        supports_check_mode=True,
    )
    results = []
    for check in module.params["checks"]:
        results.append(dict(run_check(check, module.params["timeout"]), key=check.get("key")))
    module.exit_json(changed=False, results=results)


if __name__ == "__main__":
    main()
