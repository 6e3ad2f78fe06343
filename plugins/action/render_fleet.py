# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin for launchcard.inference.render_fleet; documented in plugins/modules/render_fleet.py."""

from __future__ import annotations

import json
import os
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils import _gpu_exporter as gpu_exporter
from ansible_collections.launchcard.inference.plugins.plugin_utils import _scrape_targets as scrape_targets
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as unit_options
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units

# Arguments handed to the launch_card action unchanged: the plan is made exactly as the plan role makes it.
PLAN_ARGS = ("src", "checksum", "card_var", "checksum_var", "recipes_var", "argv_overrides_var", "validate_certs",
             "plan_file", "strict_variables")
UNIT_PREFIX = "launchcard-"
UNIT_SUFFIXES = (".service", ".container")  # .container: a Quadlet file (podman >= 4.4)
FILE_SD = scrape_targets.FILES
#: The inventory group whose hosts run Prometheus: each gets the targets as it reaches them.
MONITORING_GROUP = "launchcard_monitoring"


def plan_json(host_plan):
    """The text of a host's plan.json (sorted keys, 4-space indent, final newline)."""
    return json.dumps(host_plan, indent=4, sort_keys=True, separators=(",", ": "), ensure_ascii=False) + "\n"


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except (IOError, OSError):
        return None


def _write(path, data):
    """Write ``data`` to ``path`` atomically (a temporary file renamed over it), mode 0644."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".render-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class ActionModule(ActionBase):
    """Plan the fleet once and write every host's plan and unit files on the controller."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def _plan(self, args, task_vars):
        task = self._task.copy()
        task.args = dict((k, args[k]) for k in PLAN_ARGS if args.get(k) is not None)
        planner = self._shared_loader_obj.action_loader.get(
            "launchcard.inference.launch_card", task=task, connection=self._connection,
            play_context=self._play_context, loader=self._loader, templar=self._templar,
            shared_loader_obj=self._shared_loader_obj)
        return planner.run(task_vars=task_vars)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            dest=dict(type="path", required=True),
            hosts=dict(type="list", elements="str"),
            src=dict(type="str"),
            checksum=dict(type="str"),
            card_var=dict(type="str", default="launchcard_card_src"),
            checksum_var=dict(type="str", default="launchcard_card_checksum"),
            recipes_var=dict(type="str", default="launchcard_recipes"),
            argv_overrides_var=dict(type="str", default="launchcard_argv_overrides"),
            validate_certs=dict(type="bool", default=True),
            plan_file=dict(type="path"),
            strict_variables=dict(type="bool", default=False),
        ))
        if not args["dest"]:
            # the render role passes launchcard_render_dir, empty when unset
            raise AnsibleActionFail("dest is empty: no output directory; set launchcard_render_dir (for example "
                                    "-e launchcard_render_dir=/tmp/render), the controller directory that gets "
                                    "one folder per host")
        planned = self._plan(args, task_vars)
        if planned.get("failed"):
            return planned
        the_plan = planned["ansible_facts"]["launchcard_plan"]
        hostvars = task_vars.get("hostvars") or {}
        # a plan file's resolved digests: the images its deploy pins (none when it planned here)
        plan_refs = (planned["ansible_facts"].get("launchcard_plan_images") or {}).get("image_refs")
        hosts = args["hosts"] or task_vars.get("ansible_play_hosts_all") or sorted(the_plan["hosts"])

        # Everything is rendered before anything is written: one bad host writes nothing at all.
        files = {}
        for host in hosts:
            if not host or host in (".", "..") or "/" in host:
                raise AnsibleActionFail("hosts: %r cannot name a folder" % host)
            host_plan = the_plan["hosts"].get(host) or {"instances": []}
            try:
                opts = unit_options.host_options(
                    unit_options.with_image_refs(hostvars[host] if host in hostvars else {}, plan_refs), host_plan)
                rendered = units.host_units(host_plan, opts)
            except ValueError as exc:
                raise AnsibleActionFail("%s: %s" % (host, to_text(exc)))
            files[host] = [("plan.json", plan_json(host_plan))] + [(u["name"], u["content"]) for u in rendered]
        # Prometheus file_sd on each monitoring host, as it reaches the targets
        monitors = set((task_vars.get("groups") or {}).get(MONITORING_GROUP) or ())
        try:
            # checked as deploy's planning checks them (playbooks/tasks/plan.yml), monitoring hosts or not
            exporters = gpu_exporter.host_settings(the_plan.get("hosts") or {}, hostvars)
        except gpu_exporter.ExporterError as exc:
            raise AnsibleActionFail(to_text(exc))
        sd_notes = []
        for host in hosts:
            if host in monitors:
                # the digests the units show: the host's runtime_image_refs where set, else the plan file's
                refs = unit_options.with_image_refs(hostvars[host] if host in hostvars else {}, plan_refs)
                sd, sd_notes = scrape_targets.file_sd_files(the_plan, refs.get(unit_options.IMAGE_REFS_FACT), monitor=host,
                                                            gpu_exporters=exporters)
                files[host] += sorted(sd.items())

        written, removed = [], []
        dest = args["dest"]
        for host, host_files in files.items():
            folder = os.path.join(dest, host)
            names = set(name for name, dummy in host_files)
            stale = []
            if os.path.isdir(folder):
                stale = sorted(n for n in os.listdir(folder) if n.startswith(UNIT_PREFIX) and (
                    n.endswith(UNIT_SUFFIXES) or n in FILE_SD) and n not in names)
            todo = [(n, t.encode("utf-8")) for n, t in host_files]
            todo = [(n, data) for n, data in todo if _read(os.path.join(folder, n)) != data]
            written += [os.path.join(host, n) for n, dummy in todo]
            removed += [os.path.join(host, n) for n in stale]
            if self._task.check_mode or not (todo or stale):
                continue
            try:
                if not os.path.isdir(folder):
                    os.makedirs(folder, 0o755)
                for name, data in todo:
                    _write(os.path.join(folder, name), data)
                for name in stale:
                    os.unlink(os.path.join(folder, name))
            except (IOError, OSError) as exc:
                raise AnsibleActionFail("cannot write %s: %s" % (folder, to_native(exc)))

        n_units = sum(len([n for n, dummy in f[1:] if n not in FILE_SD]) for f in files.values())
        result.update(changed=bool(written or removed), written=sorted(written), removed=sorted(removed),
                      hosts=len(files), units=n_units, dest=dest)
        result["scrape_notes"] = sd_notes
        if planned.get("warnings"):
            result["warnings"] = planned["warnings"]
        result["msg"] = "%s; %d host(s), %d unit(s) in %s, %d file(s) %s, %d stale unit(s) %s" % (
            planned.get("msg", ""), len(files), n_units, dest, len(written),
            "to write" if self._task.check_mode else "written", len(removed),
            "to remove" if self._task.check_mode else "removed")
        return result
