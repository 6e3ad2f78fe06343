# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""BENCH CODE (bench/scale.py): an action plugin that stands in for ``launchcard.inference.preflight`` on hosts that
do not exist, returning on the controller what the module reads on a host that already runs the plan (a no-op
deploy's host), so that every other task of playbooks/deploy.yml runs as it does on such a fleet.

bench/scale.py copies it into a scratch copy of the collection as ``plugins/action/preflight.py`` (an action
plugin of a module's name runs instead of the module); the collection itself never ships it. It is the collection's
own preflight action plugin (loaded from this tree) with the module call answered here, so the options that action
computes (the units role's reads, the lock) are the deploy's own.

What a settled host reads is taken from the deploy's own variables and steps: the unit files the converge would
write and the record it would write (``_units_host.UnitsHost``), the endpoints it would probe (the call's
``units_reads``), the native requirement stamp (``_runtime_host.RuntimeHost``) and the readiness helper's checksum; the
argv each instance runs (for the engine argv check) from ``_units.engine_argv``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os

from ansible.template import trust_as_template

from ansible_collections.launchcard.inference.plugins.module_utils import _state as state
from ansible_collections.launchcard.inference.plugins.module_utils import _systemd as systemd
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as unit_options
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units
from ansible_collections.launchcard.inference.plugins.plugin_utils._runtime_host import RuntimeHost
from ansible_collections.launchcard.inference.plugins.plugin_utils._units_host import UnitsHost

# the names of the checks a real call returns on a host that passes (plugins/module_utils/_preflight.py)
CHECKS = ("os", "python", "gpu_count", "gpu_model", "gpu_memory", "driver", "disk", "ports", "peers", "shm",
          "container_engine", "image_disk")
CALLS_LOG = "LAUNCHCARD_BENCH_CALLS"  # file each call appends its host to (bench/scale.py counts them)


# the shadow collection links plugins/module_utils to this tree: the real action plugin is next to it
_REAL = os.path.join(os.path.dirname(os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "module_utils"))),
                     "action", "preflight.py")
_SPEC = importlib.util.spec_from_file_location("launchcard_bench_preflight_action", _REAL)
_ACTION = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_ACTION)


class ActionModule(_ACTION.ActionModule):
    """A settled host's preflight result, made on the controller."""

    def _expr(self, expression):
        return self._templar.template(trust_as_template("{{ %s }}" % expression))

    def _execute_module(self, module_name=None, module_args=None, task_vars=None, **kwargs):
        args = module_args
        result = {}
        host = task_vars["inventory_hostname"]
        host_plan = self._expr("lookup('launchcard.inference.host_entry', 'launchcard_plan.hosts')")
        here = UnitsHost(self._templar, task_vars)
        options = here.settings["options"]
        desired = units.host_units(host_plan, options)
        record = here.record()
        reads = args.get("units_reads") or {}
        files = dict((u["name"], hashlib.sha256(u["content"].encode("utf-8")).hexdigest()) for u in desired)
        states = dict((systemd.unit_of(n), {"ActiveState": "active", "SubState": "running",
                                            "UnitFileState": "enabled", "NRestarts": "0"}) for n in files)

        def probed(endpoints):
            return [dict(ep, healthy=True, detail="health 200 (bench: no host)") for ep in endpoints or []]

        record_sha = state.state_sha256(state.build(dict((u["name"], u["content"]) for u in desired),
                                                    record.get("card"), record.get("instances"), record.get("runtime")))
        helper = self._expr("lookup('ansible.builtin.file', units_ready_helper_src, rstrip=false) | hash('sha1')")
        inspected = {unit_options.READY_HELPER: {"exists": True, "type": "file", "owner": "root", "group": "root",
                                                 "mode": "0644", "checksum": helper},
                     options["weights_dir"]: {"exists": True, "type": "directory", "owner": unit_options.ENGINE_USER,
                                              "group": unit_options.ENGINE_USER, "mode": "0755", "checksum": None}}
        lock = args.get("lock") or {}
        gpus = sum(i.get("gpus") or 0 for i in host_plan["instances"])
        result.update(
            changed=False, bare_host=False, stack_vendor="none", weights_staged=True, container_package=None,
            checks=[{"check": c, "ok": True, "severity": "ok", "need": "-", "found": "-", "message": "bench"}
                    for c in CHECKS],
            failed_checks=[],
            native_stamps=[".launchcard-%s" % RuntimeHost(self._templar, task_vars).native_stamp()],
            inspected=inspected, users={unit_options.ENGINE_USER: True},
            recorded_image_refs={}, recorded_runtime_setup=None, recorded_images_missing=[],
            recorded_argv=dict((i["recipe"], units.engine_argv(i, options)) for i in host_plan["instances"]
                               if i.get("launcher")),
            lock={"taken": False, "reason": "", "held_by": [], "broken": [], "locks": [],
                  "deferred": [p for p in lock.get("paths") or [] if p.get("defer")]},
            units_found={"files": files, "states": states, "dropins": [], "secrets_in_place": True,
                         "endpoints": probed(reads.get("endpoints")), "then": probed(reads.get("then")),
                         "record_sha256": record_sha},
            facts={"accelerators": {"vendor": "nvidia" if gpus else "none",
                                    "devices": [{"index": n} for n in range(gpus)]},
                   "image_disk": {"in_place": []}, "engines": {}},
        )
        if os.environ.get(CALLS_LOG):
            with open(os.environ[CALLS_LOG], "a") as f:
                f.write(host + "\n")
        return result
