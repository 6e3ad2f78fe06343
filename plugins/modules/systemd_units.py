#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: systemd_units
short_description: Converge all of a host's launchcard systemd units in one call
version_added: 1.0.0
description:
  - Writes every given unit file whose content differs, removes the collection's own unit files that
    are no longer wanted (stopping and disabling them first), runs C(systemctl daemon-reload) once and
    only when a file changed, then enables, starts, or restarts the units with one C(systemctl) call
    per action. A removed unit it stopped is C(systemctl reset-failed) after the reload, so none is left
    C(failed) behind.
  - Reads every unit's state with a single C(systemctl show) call, so a host converges in one round
    trip however many units it runs.
  - Units whose file changed are restarted together in one call, so prefill/decode partners on one
    host come back as a group. Start and restart jobs are queued (C(systemctl --no-block)) after a
    C(systemctl reset-failed) of those units (a unit that hit its start limit can start again); whether the
    engines come up is the health gate's to tell (M(launchcard.inference.http_health)). A unit that is
    C(failed) right after the jobs were queued fails the module.
  - Because the jobs are queued, the process a restart replaces may still answer for a while. RV(queued) gives,
    per unit started or restarted, what it ran before (C(InvocationID), C(MainPID)); pass it to
    M(launchcard.inference.http_health) (O(launchcard.inference.http_health#module:endpoints[].previous)) so the
    gate counts only the new process.
  - With O(health), the same call then gates on the health of the converged units, as
    M(launchcard.inference.http_health) does, so a host converges and is gated in one round trip.
  - A unit given as a Quadlet file (C(NAME.container), podman >= 4.4, U(https://docs.podman.io/en/latest/markdown/podman-systemd.unit.5.html))
    is written to O(quadlet_directory); podman's systemd generator makes C(NAME.service) of it on the
    C(daemon-reload), and the module handles that unit like any other, in the same batched calls. Before writing,
    the generator's dry run (C(quadlet -dryrun)) converts every changed file and C(systemd-analyze verify) checks
    the generated units. Generated units are enabled by their file's C([Install]) section, never by
    C(systemctl enable). A unit that moves from one kind of file to the other (a C(.service) replaced by a
    C(.container)) is restarted once, like a changed file.
  - The collection writes its Quadlet files here rather than through C(containers.podman.podman_container)
    (C(quadlet) state) - one call per host, validated before anything is written, keeps a no-op run at one task
    per host, where a module call per container would cost a round trip per unit and would reload systemd per file.
options:
  units:
    description:
      - The unit files this host must have.
      - A C(NAME.service) given with a C(NAME.timer) is the timer's to start (systemd.timer(5)). Only the timer is
        enabled and started; the service is never enabled, started or restarted, only stopped (C(state=stopped),
        pruning).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description:
          - Unit file name, for example C(launchcard-glm-5.3-flash-sglang-prefill-0.service), a timer
            C(launchcard-glm-5.3-flash-vllm-aggregated-0-liveness.timer), or a Quadlet file
            C(launchcard-glm-5.3-flash-sglang-prefill-0.container) (its unit is the C(.service) of the same name).
        type: str
        required: true
      content:
        description: The full unit file text.
        type: str
        required: true
      instance:
        description: The plan instance the unit runs (informational, for reports).
        type: str
  restart:
    description:
      - Units of O(units) (C(.service) names, also for a unit given as a C(.container)) to restart even when their
        file did not change (for example because the model
        revision they load or the packages they run changed). Queued with the other restarts; a unit that is not
        running is started. Ignored with O(state=stopped).
    type: list
    elements: str
    default: []
  state:
    description:
      - C(started) enables and starts the units (changed files restart); C(stopped) stops and disables them.
    type: str
    choices: [started, stopped]
    default: started
  prune:
    description:
      - Stop, disable and delete unit files in O(directory) and Quadlet files (C(*.container)) in O(quadlet_directory)
        that start with O(prefix) and are not in O(units).
    type: bool
    default: true
  allow_removal:
    description:
      - V(false) - with O(units) empty (a host the plan gives nothing, though its units run - a host or group that
        lost its C(launchcard_recipes), a misspelt variable), a unit O(prune) would stop while it runs fails the
        call, naming each, before anything changes (in check mode too). A deploy's
        M(launchcard.inference.preflight) C(removal) check refuses them first, before any host changes.
      - The units role sets it from C(launchcard_allow_removal) (default V(false)); C(undeploy.yml) removes a fleet.
    type: bool
    default: true
  prefix:
    description:
      - Name prefix that marks the collection's own units; only these are ever pruned.
    type: str
    default: launchcard-
  directory:
    description:
      - Where unit files are written.
    type: path
    default: /etc/systemd/system
  quadlet_directory:
    description:
      - Where Quadlet C(.container) files are written (the generator's directory for the system's units).
    type: path
    default: /etc/containers/systemd
  quadlet_bin:
    description:
      - The Quadlet generator, run with C(-dryrun) to check the changed C(.container) files; unset, the first of
        C(/usr/libexec/podman/quadlet) and C(/usr/lib/podman/quadlet) that exists. A host without it cannot run
        Quadlet files, so the module fails before writing (in check mode, where the runtime role would install podman
        first, the check is skipped with a warning).
    type: path
  verify:
    description:
      - Before anything is written, check every unit file that would change with
        C(systemd-analyze verify) (when the host has it), a Quadlet file with the generator's dry run and then
        C(systemd-analyze verify) of what it generates; if any fails, the module fails and no
        file is written, no unit is touched.
      - Verification needs the units' executables on the host (for example the virtualenv or
        C(/usr/bin/docker)), so run it after the runtime is installed.
    type: bool
    default: true
  allowed_dropins:
    description:
      - Drop-ins on the units that are kept, as C(UNIT.d/NAME.conf), C(UNIT.d/*) or a full path.
      - Every other C(*.conf) in C(UNIT.d/) under O(dropin_directories) (what C(systemctl edit UNIT) writes) is
        drift; it is reported (a warning and RV(dropins)) and removed, then systemd reloads and the running
        unit restarts with its file's settings.
    type: list
    elements: str
    default: []
  dropin_directories:
    description: Where drop-in directories of the units are looked for (C(systemctl edit) and C(systemctl edit --runtime)).
    type: list
    elements: path
    default: [/etc/systemd/system, /run/systemd/system]
  foreign_peers:
    description:
      - Address -> host name of the planned instances that run outside this play (a C(--limit) run).
      - When a unit the run would rewrite newly names an C(address:port) of one of them (the plan moved that
        peer to a new port or address), the module fails before anything is written, naming the peers' hosts,
        because the peer still runs its old unit and the rewritten unit would point at nothing.
    type: dict
    default: {}
  secrets:
    description:
      - Secret environment variables (for example C(HF_TOKEN)) for the units' C(EnvironmentFile=).
      - Written to O(secrets_file) with mode 0600 (directory 0700) when not empty. When empty, the file
        is left as it is (a run without the vault changes nothing); O(remove_secrets) deletes it.
      - When the file's content changes (its SHA-256 differs), the active units whose C(EnvironmentFile=)
        names O(secrets_file) are restarted, so the engines run with the new values.
      - Values never appear in unit files, C(systemctl show), logs or this module's output.
    type: dict
    default: {}
  remove_secrets:
    description:
      - Delete O(secrets_file) (and restart the active units that read it). Not with a non-empty O(secrets).
    type: bool
    default: false
  secrets_file:
    description: Path of the secrets environment file.
    type: path
    default: /etc/launchcard/secrets.env
  health:
    description:
      - After the converge (with O(state=started)), gate on these endpoints in the same call. The keys are the
        options of M(launchcard.inference.http_health), with the same meaning and defaults
        (O(launchcard.inference.http_health#module:endpoints), O(launchcard.inference.http_health#module:timeout),
        O(launchcard.inference.http_health#module:interval), O(launchcard.inference.http_health#module:journal_lines),
        O(launchcard.inference.http_health#module:record)); an unknown or wrong key fails the module, naming it,
        before anything is changed.
      - This module fills in each endpoint's O(launchcard.inference.http_health#module:endpoints[].previous) from
        RV(queued), so only the new process of a unit it started or restarted counts; in check mode the endpoints
        of the units it would start or restart are left out (their new process does not run).
      - An endpoint that is not healthy does not fail the module; RV(health) says which, and why (the deploy prints
        its fleet-wide summary before it stops the unhealthy hosts).
      - One more key, C(then), lists the host's endpoints that answer through their peers (the gate's second
        stage), as O(launchcard.inference.http_health#module:endpoints) does. When this call started or
        restarted nothing, the host record would stay as it is (no new card or units), outside check mode and once
        every other endpoint is healthy, each is probed once, without
        waiting; all healthy, they join the result and C(record) is written (C(then_gated) true in RV(health)). Otherwise
        C(record) waits for the second stage's own M(launchcard.inference.http_health) call, which gates them.
        On a deploy that changes nothing, a router's host is so gated in one round trip.
      - Unset (the default) - no gate.
    type: dict
  settled:
    description:
      - Handled on the controller by the action plugin of the same name, never sent to the host. The result a
        call would return on a host where it would change nothing (what
        M(launchcard.inference.settle_or_lock) returns from the host's preflight reading, RV(launchcard.inference.preflight#module:units_found));
        given (not null), the task returns it as its result and the host is not contacted, so a deploy that changes
        nothing makes one round trip per host fewer. The result then has C(settled=true).
      - Null or unset (the default) - the module runs on the host as usual.
    type: dict
  from_plan:
    description:
      - Handled on the controller by the action plugin of the same name, never sent to the host. True - the action
        plugin builds O(units), O(secrets), O(secrets_file), O(remove_secrets), O(health) and O(textfile) (which are
        then not given) from the host's variables, as the C(launchcard.inference.units) role converges them, in
        Python - the unit files of the host's share of the plan (C(launchcard_plan)) under its unit options (as
        C(playbooks/render.yml) renders them), the token C(launchcard_hf_token) (C(units_hf_token_remove)), the
        first stage of the health gate (when O(state=started); C(units_health_timeout_s), C(units_health_interval_s),
        C(units_record); the fleet's C(launchcard_gates) where the play found it) and its instances' textfile facts.
      - False (the default) - the options as given.
    type: bool
    default: false
  prepare:
    description:
      - Handled on the controller by the action plugin of the same name; takes no other option. True - the
        C(launchcard.inference.units) role's setup decisions for the host, returned as RV(setup) - whether its setup
        steps (the engines' user, the weights directory's owner, the readiness helper) have anything to do, from what
        the preflight call found (C(units_setup_found); not found - they run) - and, on a C(--limit) run that leaves
        out planned instances this host's units may point at (C(launchcard_foreign_peers), else found from the plan;
        unless C(units_allow_moved_peers)), the check of O(foreign_peers) against the unit files of the host's share
        of the plan, run on the host in check mode. Without moved peers to check, the host is not contacted.
    type: bool
    default: false
  textfile:
    description:
      - Write the facts of the host's instances for node exporter's textfile collector, C(launchcard.prom) in
        O(textfile.directory), atomically (written beside it and renamed, mode 0644); docs/observability.md lists
        its metrics. A unit whose file this call changed, or that it started or restarted, gets the time of this
        run as its last deploy or upgrade; the others keep their timestamps and, when the gate did not judge them
        in this call, their gate result, so a call that changes nothing writes nothing.
      - The same call lists the instances in C(launchcard-drains.prom), the drain counters of
        M(launchcard.inference.engine_drain), at 0 before a unit's first drain; a unit's counts are kept.
      - When O(textfile.directory) does not exist (node exporter is not installed), nothing is written and
        RV(textfile) says so; the call does not fail. No instance - both files are removed.
      - Unset (the default) - the file is left as it is.
    type: dict
    suboptions:
      directory:
        description:
          - node exporter's textfile directory; the action plugin fills it in, when not given, with the collection's
            (C(plugins/plugin_utils/_textfile.py)).
        type: path
        required: true
      event:
        description: Which timestamp a changed or restarted unit gets.
        type: str
        choices: [deploy, upgrade]
        default: deploy
      instances:
        description:
          - Unit (C(NAME.service)) -> its labels C(card), C(recipe), C(revision), C(role), C(engine), from the plan
            (O(from_plan) fills them in). Units not in O(units) are left out.
        type: dict
        default: {}
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes
attributes:
  diff_mode:
    support: full
    details:
      - One diff per unit file written or removed, headed by its path; the secrets file is never diffed.
      - With O(health)'s C(record), the host's record when it changes (or would), without its C(previous).
  action:
    description: Has an action plugin of the same name, which runs on the controller before the module.
    support: full
    details: The action plugin returns O(settled) without contacting the host, else runs the module (with O(from_plan), on
      the options it built).
notes:
  - Requires systemd on the managed host.
"""

EXAMPLES = r"""
- name: Converge this host's units
  launchcard.inference.systemd_units:
    units:
      - name: launchcard-demo-vllm-aggregated-0.service
        content: "{{ lookup('ansible.builtin.template', 'unit.j2') }}"
    state: started
"""

RETURN = r"""
setup:
  description:
    - With O(prepare) - what the units role's setup steps do on the host - C(needed) (anything to do), C(native)
      (the engines run natively, as the C(launchcard) system user, who owns C(weights_dir)), C(weights_dir) and
      C(ready_helper_dir) (where the readiness helper goes).
  returned: with O(prepare)
  type: dict
moved_peers:
  description: With O(prepare) - the instances outside the run checked, C({address - host}); empty when none was.
  returned: with O(prepare)
  type: dict
units:
  description:
    - State of every desired unit after the run, from C(systemctl show).
    - A run that stopped, disabled, wrote, removed, enabled, started and restarted nothing (and check mode) reports
      the states read before it, with no second C(systemctl show).
  returned: always
  type: list
  elements: dict
  sample:
    - name: launchcard-demo-vllm-aggregated-0.service
      active_state: active
      sub_state: running
      unit_file_state: enabled
      n_restarts: 0
written:
  description: Unit files (and Quadlet C(.container) files) written in this run.
  returned: always
  type: list
  elements: str
removed:
  description: Stale unit files (and Quadlet C(.container) files) removed in this run.
  returned: always
  type: list
  elements: str
actions:
  description: The systemctl actions taken (or that would be taken in check mode), by verb.
  returned: always
  type: dict
  sample: {enable: [], start: [], restart: [], stop: [], disable: []}
daemon_reloaded:
  description: Whether C(systemctl daemon-reload) ran.
  returned: always
  type: bool
dropins:
  description: Drop-ins found on the units, C(kept) (allowed) and C(removed) (or to be removed, in check mode).
  returned: always
  type: dict
  sample: {kept: [], removed: [/etc/systemd/system/launchcard-demo-vllm-monolithic-0.service.d/override.conf]}
secrets_changed:
  description: Whether the secrets file was written or removed (its content is never returned).
  returned: always
  type: bool
queued:
  description:
    - Per unit whose start or restart this run queued, the verb and what the unit ran before the job
      (C(InvocationID), empty when none; C(MainPID), 0 when none), for
      O(launchcard.inference.http_health#module:endpoints[].previous). Empty in check mode.
  returned: always
  type: dict
  sample:
    launchcard-demo-vllm-aggregated-0.service:
      verb: restart
      invocation_id: 5d1f3c0e6b8a4f3e9c2d7b1a0e4f6c8d
      main_pid: 4242
secrets_restarted:
  description: Units restarted because the secrets file they read changed (also among the RV(actions) C(restart) units).
  returned: always
  type: list
  elements: str
health:
  description:
    - With O(health) and O(state=started), the gate's result, with the keys M(launchcard.inference.http_health)
      returns (C(endpoints), C(unhealthy), C(crashed), C(recorded), C(lock)), C(msg), why the unhealthy endpoints
      are not healthy (empty when all are), and C(then_gated), whether the endpoints of O(health)'s C(then) were
      gated in this call (null without them). Null otherwise.
  returned: always
  type: dict
  sample:
    endpoints:
      - {name: launchcard-demo-vllm-aggregated-0.service, url: "http://127.0.0.1:8000/health", probe: health,
         healthy: true, detail: health 200, elapsed_s: 0.0}
    unhealthy: []
    crashed: []
    recorded: false
    lock: null
    msg: ""
    then_gated: null
textfile:
  description:
    - With O(textfile), the path of C(launchcard.prom), whether it or C(launchcard-drains.prom) C(changed) (or would, in
      check mode), and C(skipped), why nothing was written (its directory does not exist), else null.
  returned: when O(textfile) is given and the module ran on the host
  type: dict
  sample: {path: /var/lib/prometheus/node-exporter/launchcard.prom, changed: true, skipped: null}
"""

import hashlib
import os
import shutil
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.launchcard.inference.plugins.module_utils import _gate as gate
from ansible_collections.launchcard.inference.plugins.module_utils import _textfile_facts as textfile_facts
from ansible_collections.launchcard.inference.plugins.module_utils._systemd import (
    QUADLET_SUFFIX,
    RESTART_PROPERTIES,
    TIMER_SUFFIX,
    triggered,
    SHOW_PROPERTIES,
    actions,
    read_unit_files,
    unit_of,
    restart_baseline,
    dropin_verdicts,
    find_dropins,
    unit_rows,
    foreign_peer_changes,
    render_env_file,
    diff_files,
    parse_show,
)


QUADLET_BINS = ("/usr/libexec/podman/quadlet", "/usr/lib/podman/quadlet")


def _quadlet_bin(module, given):
    if given:
        return given if os.path.exists(given) else None
    return next((b for b in QUADLET_BINS if os.path.exists(b)), None)


def _verify(module, desired, names, quadlet=None):
    """Check the would-be files in a scratch directory: Quadlet files through the generator's dry run
    (podman-systemd.unit(5), "quadlet -dryrun"), then systemd-analyze verify over the units."""
    analyze = module.get_bin_path("systemd-analyze")
    containers = [n for n in names if n.endswith(QUADLET_SUFFIX)]
    services = [n for n in names if not n.endswith(QUADLET_SUFFIX)]
    if not names or (not analyze and not containers):
        return
    scratch = tempfile.mkdtemp(prefix="launchcard-verify-")
    try:
        paths = []
        for name in services:
            path = os.path.join(scratch, name)
            with open(path, "w") as f:
                f.write(desired[name])
            paths.append(path)
        if containers and quadlet:
            source = os.path.join(scratch, "quadlet")
            os.mkdir(source)
            for name in containers:
                with open(os.path.join(source, name), "w") as f:
                    f.write(desired[name])
            # QUADLET_UNIT_DIRS: read only these files; -dryrun: print the units, write nothing
            rc, out, err = module.run_command([quadlet, "-dryrun"], environ_update={"QUADLET_UNIT_DIRS": source})
            generated = _split_dryrun(out)
            missing = [n for n in containers if unit_of(n) not in generated]
            if rc != 0 or missing:
                module.fail_json(msg="the Quadlet generator rejected %s; nothing was changed: %s" % (
                    ", ".join(missing or containers), (err or out).strip().replace(source + "/", "")),
                    failed_units=missing or containers)
            for name in containers:
                path = os.path.join(scratch, unit_of(name))
                with open(path, "w") as f:
                    f.write(generated[unit_of(name)])
                paths.append(path)
        rc, out, err = module.run_command([analyze, "verify"] + paths) if analyze and paths else (0, "", "")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if rc != 0:
        module.fail_json(msg="systemd-analyze verify rejected %s; nothing was changed: %s" % (
            ", ".join(names), (err or out).strip().replace(scratch + "/", "")), failed_units=names)


def _split_dryrun(out):
    """Unit name -> text of the units ``quadlet -dryrun`` printed, each after a ``---NAME---`` line."""
    units, name, lines = {}, None, []
    for line in (out or "").splitlines():
        if line.startswith("---") and line.endswith("---") and len(line) > 6:
            if name:
                units[name] = "\n".join(lines) + "\n"
            name, lines = line[3:-3], []
        elif name:
            lines.append(line)
    if name:
        units[name] = "\n".join(lines) + "\n"
    return units


def _read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except (IOError, OSError):
        return None


def _digest(text):
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def _reads_secrets(content, path):
    """Whether a unit file's text loads ``path`` with ``EnvironmentFile=`` (optional ``-`` prefix)."""
    for line in content.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() == "EnvironmentFile" and value.strip().lstrip("-") == path:
            return True
    return False


def _write_secrets(path, text):
    if text is None:
        if os.path.exists(path):
            os.unlink(path)
        return
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    tmp = path + ".launchcard-tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o600)
    # rename, not module.atomic_move: atomic_move gives a new file default
    # permissions, which would expose the secret for a moment.
    os.rename(tmp, path)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            units=dict(type="list", elements="dict", required=True, options=dict(
                name=dict(type="str", required=True),
                content=dict(type="str", required=True),
                instance=dict(type="str"),
            )),
            state=dict(type="str", choices=["started", "stopped"], default="started"),
            restart=dict(type="list", elements="str", default=[]),
            prune=dict(type="bool", default=True),
            allow_removal=dict(type="bool", default=True),
            prefix=dict(type="str", default="launchcard-"),
            directory=dict(type="path", default="/etc/systemd/system"),
            quadlet_directory=dict(type="path", default="/etc/containers/systemd"),
            quadlet_bin=dict(type="path"),
            verify=dict(type="bool", default=True),
            secrets=dict(type="dict", default={}, no_log=True),
            remove_secrets=dict(type="bool", default=False),
            allowed_dropins=dict(type="list", elements="str", default=[]),
            foreign_peers=dict(type="dict", default={}),
            dropin_directories=dict(type="list", elements="path",
                                    default=["/etc/systemd/system", "/run/systemd/system"]),
            secrets_file=dict(type="path", default="/etc/launchcard/secrets.env"),
            health=dict(type="dict"),
            settled=dict(type="dict"),
            from_plan=dict(type="bool", default=False),
            # the action plugin's (never reaches the host): documented with the module
            prepare=dict(type="bool", default=False),
            textfile=dict(type="dict", options=dict(
                directory=dict(type="path", required=True),
                event=dict(type="str", choices=list(textfile_facts.EVENTS), default="deploy"),
                instances=dict(type="dict", default={}),
            )),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["secrets"] and p["remove_secrets"]:
        module.fail_json(msg="secrets and remove_secrets: give one, not both")
    health = None
    if p["health"] is not None:
        checked = ArgumentSpecValidator(gate.CONVERGE_SPEC).validate(p["health"])
        if checked.error_messages:
            module.fail_json(msg="health: %s; nothing was changed" % "; ".join(checked.error_messages))
        health = checked.validated_parameters
    if p["textfile"] is not None:
        problem = textfile_facts.check(p["textfile"]["instances"])
        if problem:
            module.fail_json(msg="%s; nothing was changed" % problem)
    systemctl = module.get_bin_path("systemctl", required=True)
    desired = {}  # file name -> content
    wanted = {}  # unit name -> file name
    for i, u in enumerate(p["units"]):
        name = u["name"]
        if "/" in name or not name.startswith(p["prefix"]) or not name.endswith((".service", TIMER_SUFFIX, QUADLET_SUFFIX)):
            module.fail_json(msg="units[%d].name: expected %s*.service, %s*%s or %s*%s without '/', found %r" % (
                i, p["prefix"], p["prefix"], TIMER_SUFFIX, p["prefix"], QUADLET_SUFFIX, name))
        if unit_of(name) in wanted:
            module.fail_json(msg="units[%d].name: %s and %s both give %s" % (i, wanted[unit_of(name)], name, unit_of(name)))
        desired[name] = u["content"]
        wanted[unit_of(name)] = name
    for i, name in enumerate(p["restart"]):
        if name not in wanted:
            module.fail_json(msg="restart[%d]: %r is not one of the units given" % (i, name))
    generated = set(unit_of(n) for n in desired if n.endswith(QUADLET_SUFFIX))

    def path_of(name):
        return os.path.join(p["quadlet_directory"] if name.endswith(QUADLET_SUFFIX) else p["directory"], name)

    existing = read_unit_files(p["directory"], p["quadlet_directory"], p["prefix"])
    plan = diff_files(desired, existing, p["prefix"]) if p["prune"] else dict(
        diff_files(desired, existing, p["prefix"]), remove=[])

    def run(args, check_rc=True):
        rc, out, err = module.run_command([systemctl] + args)
        if check_rc and rc != 0:
            module.fail_json(msg="systemctl %s failed (rc=%d): %s" % (" ".join(args), rc, (err or out).strip()))
        return out

    def show(names):
        if not names:
            return {}
        props = SHOW_PROPERTIES + tuple(k for k in RESTART_PROPERTIES if k not in SHOW_PROPERTIES)
        return parse_show(run(["show", "-p", ",".join(props), "--"] + sorted(names)))

    if p["foreign_peers"]:
        moved = dict((name, foreign_peer_changes(existing.get(name, ""), desired[name], p["foreign_peers"]))
                     for name in plan["write"])
        moved = dict((name, found) for name, found in moved.items() if found)
        if moved:
            hosts = sorted(set(host for found in moved.values() for dummy, host in found))
            module.fail_json(msg="refusing to rewrite %s: %s; the plan moved %s, outside this run, which still serves "
                                 "its old address or port; nothing was changed. Include %s in --limit." % (
                                     ", ".join(sorted(moved)),
                                     "; ".join("%s would point at %s (%s)" % (name, ep, host)
                                               for name, found in sorted(moved.items()) for ep, host in found),
                                     "the peer" if len(hosts) == 1 else "the peers", ", ".join(hosts)),
                             foreign_peers_moved=dict((n, [ep for ep, dummy in f]) for n, f in moved.items()),
                             hosts_to_include=hosts)

    if p["verify"]:
        quadlet = _quadlet_bin(module, p["quadlet_bin"])
        if not quadlet and any(n.endswith(QUADLET_SUFFIX) for n in plan["write"]):
            if not module.check_mode:
                module.fail_json(msg="Quadlet files given (%s) but this host has no Quadlet generator (%s): it needs "
                                     "podman 4.4 or newer; nothing was changed" % (
                                         ", ".join(n for n in plan["write"] if n.endswith(QUADLET_SUFFIX)),
                                         p["quadlet_bin"] or " or ".join(QUADLET_BINS)))
            module.warn("no Quadlet generator on this host yet (podman is installed by the real run): "
                        "the .container files are not checked in check mode")
        _verify(module, desired, plan["write"], quadlet)

    # One diff per file, headed by its path, as ansible.builtin.copy shows them.
    diffs = []
    for name in plan["write"] + plan["remove"]:
        path = path_of(name)
        diffs.append({"before_header": path if name in existing else "(absent)",
                      "after_header": path if name in desired else "(removed)",
                      "before": existing.get(name, ""), "after": desired.get(name, "")})

    before = show(list(wanted))
    # a unit whose file is new, rewritten or replaced by the other kind (.service <-> .container) restarts
    rewritten = set(unit_of(n) for n in plan["write"]) | set(unit_of(n) for n in plan["remove"] if unit_of(n) in wanted)
    todo = actions(list(wanted), before, rewritten | set(p["restart"]), p["state"], generated)
    stale = show(set(unit_of(n) for n in plan["remove"]) - set(wanted))
    stale_active = {n for n, st in stale.items() if st.get("ActiveState") in ("active", "activating", "failed")}
    stale_enabled = {n for n, st in stale.items() if st.get("UnitFileState") in ("enabled", "enabled-runtime")}
    todo["stop"] = sorted(set(todo["stop"]) | stale_active)
    todo["disable"] = sorted(set(todo["disable"]) | stale_enabled)
    serving = sorted(n for n in stale_active if stale[n].get("ActiveState") in ("active", "activating"))
    if serving and not desired and not p["allow_removal"]:
        them = "it" if len(serving) == 1 else "them"
        module.fail_json(msg="refusing to stop %s: the plan places nothing on this host any more (a host or group "
                             "without its launchcard_recipes, a misspelt variable?); nothing was changed. Fix the "
                             "inventory, or set launchcard_allow_removal=true to remove %s (undeploy.yml removes a "
                             "whole fleet)" % (", ".join(serving), them), removals=serving)
    found = find_dropins(wanted, p["dropin_directories"])
    dropins = dropin_verdicts(found, p["allowed_dropins"])
    for path in dropins["remove"]:
        module.warn("drift: drop-in %s overrides the collection's unit; %s (list it in allowed_dropins to keep it)"
                    % (path, "would be removed" if module.check_mode else "removed"))
    if p["state"] == "started":
        # the unit runs with the drop-in's settings until it restarts
        queued = set(todo["start"]) | set(todo["restart"])
        todo["restart"] = sorted(set(todo["restart"]) | set(
            n for n in dropins["units"] if n not in queued
            and before.get(n, {}).get("ActiveState") in ("active", "activating", "reloading")))
    current = _read_text(p["secrets_file"])
    try:
        secrets_text = render_env_file(p["secrets"]) if p["secrets"] else None if p["remove_secrets"] else current
    except ValueError as exc:
        module.fail_json(msg="secrets: %s" % exc)
    content_changed = _digest(current) != _digest(secrets_text)
    secrets_changed = content_changed or (
        secrets_text is not None and os.stat(p["secrets_file"]).st_mode & 0o777 != 0o600)
    secrets_restarted = []
    if content_changed and p["state"] == "started":
        # the engines read the file only when they start: restart the running ones that use it
        queued = set(todo["start"]) | set(todo["restart"])
        secrets_restarted = sorted(n for n, f in wanted.items() if n not in queued
                                   and _reads_secrets(desired[f], p["secrets_file"])
                                   and before.get(n, {}).get("ActiveState") in ("active", "activating", "reloading"))
        todo["restart"] = sorted(set(todo["restart"]) | set(secrets_restarted))
    # whether the call touches a unit or its files (the secrets file aside): a call that does not (a no-op run)
    # reports the states it read before, one `systemctl show` per call, not two
    acted = bool(any(todo.values()) or plan["write"] or plan["remove"] or dropins["remove"])
    changed = acted or secrets_changed
    reloaded = False
    if not module.check_mode:
        if secrets_changed:
            _write_secrets(p["secrets_file"], secrets_text)
        if todo["stop"]:
            run(["stop", "--"] + todo["stop"])
        if todo["disable"]:
            run(["disable", "--"] + todo["disable"])
        for name in plan["remove"]:
            os.unlink(path_of(name))
        for path in dropins["remove"]:
            os.unlink(path)
            try:
                os.rmdir(os.path.dirname(path))
            except OSError:  # other (allowed) files remain
                pass
        for name in plan["write"]:
            path = path_of(name)
            if not os.path.isdir(os.path.dirname(path)):
                os.makedirs(os.path.dirname(path), 0o755)
            tmp = path + ".launchcard-tmp"
            with open(tmp, "w") as f:
                f.write(desired[name])
            os.chmod(tmp, 0o644)
            module.atomic_move(tmp, path)
        if plan["write"] or plan["remove"] or dropins["remove"]:
            # a daemon-reload can take the GPUs away from running containers
            # (NVIDIA Container Toolkit troubleshooting, "Failed to initialize
            # NVML: Unknown Error"), so reload only when a unit file changed.
            run(["daemon-reload"])
            reloaded = True
        if stale_active:
            # a removed unit that failed (or whose stop failed) stays loaded as `not-found failed` until
            # `systemctl reset-failed` (systemctl(1)), seen by node_exporter's systemd collector; "not loaded" is fine
            run(["reset-failed", "--"] + sorted(stale_active), check_rc=False)
        if todo["enable"]:
            run(["enable", "--"] + todo["enable"])
        if todo["start"] or todo["restart"]:
            # A unit that hit its start limit (StartLimitBurst=) refuses to start until its
            # counter is reset; a deploy is an operator's request to try again.
            run(["reset-failed", "--"] + todo["start"] + todo["restart"], check_rc=False)
        for verb in ("start", "restart"):
            if todo[verb]:
                # --no-block: a unit is "active" only once its engine answers (ExecStartPost=),
                # which the health gate waits for, watching every unit at once.
                run([verb, "--no-block", "--"] + todo[verb])
    queued = {} if module.check_mode else dict(
        (name, dict(restart_baseline(before.get(name, {})), verb=verb))
        for verb in ("start", "restart") for name in todo[verb] if name in wanted)
    after = before if module.check_mode or not acted else show(list(wanted))
    units = unit_rows(wanted, after)
    result = dict(changed=changed, units=units, written=plan["write"], removed=plan["remove"],
                  actions=todo, daemon_reloaded=reloaded, secrets_changed=secrets_changed,
                  secrets_restarted=secrets_restarted, queued=queued,
                  dropins={"kept": dropins["keep"], "removed": dropins["remove"]})
    if module._diff and diffs:
        result["diff"] = diffs
    result["health"] = None
    if p["state"] == "started" and not module.check_mode:
        # a liveness probe that failed is its timer's to run again, not a unit that failed to start
        failed = [u["name"] for u in units if u["active_state"] == "failed" and u["name"] not in triggered(wanted)]
        if failed:
            module.fail_json(msg="units failed at start: %s (see journalctl -u NAME)" % ", ".join(failed),
                             **result)
    if health is not None and p["state"] == "started":
        result["health"] = _gate(module, health, todo, queued)
        result["changed"] = changed or bool(result["health"]["recorded"])
        if "diff" in result["health"]:
            result["diff"] = result.get("diff", []) + [result["health"].pop("diff")]
    if p["textfile"] is not None:
        touched = (set(todo["start"]) | set(todo["restart"]) | rewritten) & set(wanted)
        instances = dict((u, v) for u, v in p["textfile"]["instances"].items() if u in wanted)
        written, result["textfile"], diffs = textfile_facts.converge(
            dict(p["textfile"], instances=instances), touched, textfile_facts.gate_results(result["health"]),
            time.time(), module.check_mode)
        result["changed"] = result["changed"] or written
        if module._diff and diffs:
            result["diff"] = result.get("diff", []) + diffs
    module.exit_json(**result)


def _gate(module, params, todo, queued):
    """The O(health) gate after the converge: the new processes of queued units only, none of check mode's pending."""
    pending = set(todo["start"]) | set(todo["restart"]) if module.check_mode else set()
    endpoints = []
    for ep in params["endpoints"]:
        if (ep.get("unit") or ep.get("name")) in pending:
            continue
        ep = dict(ep)
        if ep.get("unit") in queued:
            ep["previous"] = {"invocation_id": queued[ep["unit"]].get("invocation_id") or "",
                              "main_pid": queued[ep["unit"]].get("main_pid") or 0}
        endpoints.append(ep)
    try:
        out = gate.run_gate(dict(params, endpoints=endpoints), module.check_mode, module.run_command,
                            module.get_bin_path, module.atomic_move,
                            settled=not (queued or todo["start"] or todo["restart"]), diff=module._diff)
    except gate.GateError as exc:
        module.fail_json(msg="health: %s" % exc)
    for warning in out.pop("warnings"):
        module.warn(warning)
    return out


if __name__ == "__main__":
    main()
