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
    C(ServerArgs.add_cli_args)) and parses the argv. Nothing is started and no model is read.
  - A check with C(pull) true (a first deploy, where no host holds the image yet) pulls the image by digest first,
    as the runtime role would - podman with O(registries_conf) as its registries configuration, the credentials of
    O(auth) in a root-only temporary file, never on a command line. When the engine rejects the argv the image is
    removed again, so the host is left as it was; otherwise it stays (the runtime role's own pull finds it) and the
    task reports a change. In check mode nothing is pulled.
  - Returns each check's verdict; the caller stops the run on a rejected argv.
options:
  checks:
    description:
      - The checks to run here, each C({key, engine, tokens, runtime, image, python, pull, run_args, containers_conf})
        as M(launchcard.inference.preflight_fleet) gives them (its C(checks), those of this host).
    type: list
    elements: dict
    default: []
  keep:
    description:
      - Whether an image pulled for a check the engine accepts stays (a deploy - the runtime role would pull it next);
        false removes it after the check too (playbooks/preflight.yml, which changes nothing).
    type: bool
    default: true
  remove:
    description:
      - Images to remove, each C({runtime, image}) - those an earlier call pulled for a check the engine accepted, in a
        run that another check's refusal stops (so the run leaves every host as it was). One not in the store is skipped.
    type: list
    elements: dict
    default: []
  timeout:
    description: Seconds one check, or one pull, may take (an engine's imports take tens of seconds).
    type: int
    default: 300
  registries_conf:
    description:
      - podman, for a pull - the registries configuration the runtime role writes, so the pull asks the same mirrors.
      - Unset, the action plugin builds it from O(registry_mirrors) when a check pulls.
    type: str
  auth:
    description:
      - For a pull - the registry credentials as an auth file holds them (containers-auth.json(5)). Never logged.
      - Unset, the action plugin builds it from O(registry_credentials) when a check pulls.
    type: dict
  registry_mirrors:
    description:
      - For a pull - the registry mirrors the runtime role gives the hosts (C(launchcard_registry_mirrors)), read on
        the controller into O(registries_conf) and into which hosts are plain HTTP.
    type: dict
  registry_credentials:
    description:
      - For a pull - the registry credentials the runtime role gives the hosts (C(launchcard_registry_credentials)),
        read on the controller into O(auth). Never logged.
    type: dict
  registry_plain_http:
    description:
      - The plain-HTTP hosts that may have credentials (C(launchcard_registry_credentials_plain_http)).
    type: list
    elements: str
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes
attributes:
  check_mode:
    support: full
    details: The checks only parse; they run in check mode too, but pull no image.
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
        pull: true
"""

RETURN = r"""
results:
  description:
    - One C({key, status, message, flag, near, version, pulled}) per check. C(status) is C(ok), C(rejected) or
      C(unavailable) (the program could not run, for example the image is not in the engine's store or its pull
      failed). C(pulled) - the image was pulled for the check (removed again when C(rejected)).
  returned: always
  type: list
  elements: dict
"""

import json
import os
import shutil
import subprocess
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.launchcard.inference.plugins.module_utils import _engine_argv


def _unavailable(message):
    return {"status": "unavailable", "message": message, "flag": None, "near": []}


def _run(cmd, timeout, env=None):
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                             env=dict(os.environ, **(env or {})))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, "", "%s: %s" % (type(exc).__name__, exc)
    return res.returncode, res.stdout, res.stderr


def run_check(check, timeout, env=None):
    try:
        cmd = _engine_argv.check_command(check.get("engine"), check.get("tokens") or [], check.get("runtime"),
                                         image=check.get("image"), container_engine=check.get("runtime"),
                                         python=check.get("python") or "python3", run_args=check.get("run_args"))
    except ValueError as exc:
        return _unavailable(str(exc))
    rc, out, err = _run(cmd, timeout, env)
    if rc is None:
        return _unavailable(err)
    return _engine_argv.interpret(rc, out, err)


class Scratch(object):
    """A root-only temporary directory (tempfile.mkdtemp: mode 0700) for the files a pull and a check read:
    podman's registries.conf (``CONTAINERS_REGISTRIES_CONF``) and containers.conf (``CONTAINERS_CONF``) - podman(1)
    Environment Variables - and the registry credentials (0600), which never go on a command line."""

    def __init__(self, engine, registries_conf=None, containers_conf=None, auth=None):
        self.engine, self.dir, self.env, self.auth_file = engine, tempfile.mkdtemp(prefix="launchcard-argv-"), {}, None
        if engine == "podman" and registries_conf:
            self.env["CONTAINERS_REGISTRIES_CONF"] = self._write("registries.conf", registries_conf)
        if engine == "podman" and containers_conf:
            self.env["CONTAINERS_CONF"] = self._write("containers.conf", containers_conf)
        if (auth or {}).get("auths"):
            doc = auth if engine == "podman" else _engine_argv.docker_auths(auth)
            self.auth_file = self._write("auth.json" if engine == "podman" else "config.json", json.dumps(doc))

    def _write(self, name, text):
        path = os.path.join(self.dir, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return path

    def pull_command(self, image):
        return _engine_argv.pull_command(self.engine, image, config_dir=self.dir if self.auth_file else None,
                                         auth_file=self.auth_file if self.engine == "podman" else None)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def run_pulled_check(module, check, timeout):
    """A check on a host that may not hold the image yet (a first deploy): pull it as the runtime role would, check,
    and remove it again when the engine rejects the argv (or with ``keep`` false), so a refused run leaves the host
    as it was; ``(result, kept)``."""
    engine, image = check.get("runtime"), check.get("image")
    if engine not in ("podman", "docker") or not image:
        return _unavailable("a pull needs a container runtime and the recipe's image"), False
    p = module.params
    scratch = Scratch(engine, p["registries_conf"], check.get("containers_conf"), p["auth"])
    try:
        held = _run(_engine_argv.exists_command(engine, image), 60, scratch.env)[0] == 0
        if not held:
            if module.check_mode:
                return _unavailable("check mode: %s not pulled for the check" % image), False
            rc, out, err = _run(scratch.pull_command(image), timeout, scratch.env)
            if rc != 0:
                return _unavailable("pulling %s for the check failed: %s" % (image, (err or out).strip()[-500:])), False
        result = dict(run_check(check, timeout, scratch.env), pulled=not held)
        if held or (result["status"] != "rejected" and p["keep"]):
            return result, not held
        rc, out, err = _run(_engine_argv.remove_command(engine, image), 120, scratch.env)
        if rc != 0:
            module.fail_json(msg="%s: removing %s, pulled for the check, failed: %s"
                             % (check.get("key"), image, (err or out).strip()), results=[result])
        return result, False
    finally:
        scratch.close()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            checks=dict(type="list", elements="dict", default=[]),
            remove=dict(type="list", elements="dict", default=[]),
            keep=dict(type="bool", default=True),
            timeout=dict(type="int", default=300),
            registries_conf=dict(type="str"),
            auth=dict(type="dict", no_log=True),
            # read by the action plugin (plugins/action/engine_argv.py), on the controller
            registry_mirrors=dict(type="dict"),
            registry_credentials=dict(type="dict", no_log=True),
            registry_plain_http=dict(type="list", elements="str"),
        ),
        supports_check_mode=True,
    )
    results, changed = [], False
    for check in module.params["checks"]:
        if check.get("pull"):
            result, kept = run_pulled_check(module, check, module.params["timeout"])
            changed = changed or kept
        else:
            scratch = Scratch(check.get("runtime"), containers_conf=check.get("containers_conf"))
            try:
                result = run_check(check, module.params["timeout"], scratch.env)
            finally:
                scratch.close()
        results.append(dict(result, key=check.get("key")))
    for item in module.params["remove"]:
        # an image an earlier call pulled for an accepted check, in a run another check's refusal stops
        if module.check_mode:
            continue
        engine = item.get("runtime") if item.get("runtime") in ("podman", "docker") else "docker"
        if _run(_engine_argv.exists_command(engine, item.get("image")), 60)[0] != 0:
            continue
        rc, out, err = _run(_engine_argv.remove_command(engine, item.get("image")), 120)
        if rc != 0:
            module.fail_json(msg="removing %s, pulled for an argv check, failed: %s"
                             % (item.get("image"), (err or out).strip()))
        changed = True
    module.exit_json(changed=changed, results=results)


if __name__ == "__main__":
    main()
