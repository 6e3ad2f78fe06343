# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The unit options of one host, built in one place from that host's variables.

Pure Python, no Ansible import. Both the ``units`` role (through the
``unit_settings`` filter) and ``render.yml`` (through the ``render_fleet``
action) call :func:`host_settings` with a host's variables, so what render
shows is what deploy writes for the same variables.

Every option, its variable, type, default and checks are one entry of
:data:`._unit_spec.OPTIONS`. Each option is read from exactly one variable,
and a few from what preflight found on the host, in this order:

1. the variable, when the inventory (host or group vars) or ``-e`` sets it;
2. the host's facts from preflight (``preflight_result.facts``), for the
   vendor (``accelerators.vendor``, else the PCI bus's vendor on a host
   without a driver yet), the AMD ``render`` group id and the Ascend
   ``/dev/davinciN`` devices (``runtime_devices``), and the image digests
   the runtime role pinned (``runtime_image_refs``);
3. :data:`._unit_spec.DEFAULTS`.

``render.yml`` contacts no host, so it has no facts: there step 2 is empty,
and a host whose vendor or devices differ from the defaults needs the
variable set for render to show what deploy writes.
"""

from __future__ import annotations

import collections
import hashlib
import json
import re

from ansible_collections.launchcard.inference.plugins.module_utils._platforms import os_podman_version
from ansible_collections.launchcard.inference.plugins.plugin_utils._images import REGISTRY_AUTH_FILE
from ansible_collections.launchcard.inference.plugins.plugin_utils import _native_locks
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_spec import (
    DEFAULTS,
    OPTIONS,
    VARIABLES,
    VENDORS,
    OptionError,
    coerce,
    value,
)
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import (
    ENGINE_USER,
    QUADLET_MIN_PODMAN,
    WAIT_READY,
    check_container_flags,
    check_hidden_paths,
)

# What the runtime role installs into the native virtualenv (roles/runtime/defaults/main.yml): the lock of
# launchcard_runtime_native_lock, else the collection's lock for the host's vendor and engines (_native_locks.py);
# launchcard_runtime_native_packages (with launchcard_runtime_native_pip_extra_args) installs the operator's own list.
NATIVE_PACKAGES = ("launchcard_runtime_native_packages", None)
NATIVE_PIP_ARGS = ("launchcard_runtime_native_pip_extra_args", None)
PLAN_VARIABLE = "launchcard_plan"
SECRETS_VARIABLE = "launchcard_hf_token"
# Registry credentials: only whether they are set is read here (the units name the runtime role's auth file).
CREDENTIALS_VARIABLE = "launchcard_registry_credentials"
IMAGE_REFS_FACT = "runtime_image_refs"
PREFLIGHT_RESULT = "preflight_result"
# The secrets file's path when a token is set and launchcard_secrets_env_file is not.
SECRETS_ENV_FILE = "/etc/launchcard/secrets.env"
READY_HELPER = WAIT_READY[-1]
"""Where the units role installs the readiness helper that every unit's ``ExecStartPost=`` runs."""


def _get(mapping, *path):
    for key in path:
        if not hasattr(mapping, "get"):
            return None
        mapping = mapping.get(key)
        if mapping is None:
            return None
    return mapping


def detected(host_vars):
    """What preflight found on the host that the units depend on.

    :param host_vars: the host's variables (``hostvars[host]``).
    :returns: dict with ``vendor`` (``nvidia``/``amd``/``ascend``/``none``, or
        None when preflight did not run or was skipped), ``amd_render_gid``
        (int or None), ``ascend_devices`` (list of ints or None) and ``podman_quadlet`` (whether the host's
        podman, ``engines.podman_version``, else the one its OS ships, has Quadlet; None when neither is known),
        read from ``preflight_result.facts``.
    """
    facts = _get(host_vars, PREFLIGHT_RESULT, "facts") or {}
    vendor = _get(facts, "accelerators", "vendor")
    if vendor in (None, "none"):
        # a host whose driver is not installed yet: the PCI bus names the vendor
        vendor = _get(facts, "accelerators", "pci", "vendor") or vendor
    devices = _get(facts, "runtime_devices") or {}
    podman = _get(facts, "engines", "podman_version")
    if not podman and facts.get("os"):
        # no podman on the host yet: the runtime role installs the OS's own
        podman = os_podman_version(_get(facts, "os", "id"), _get(facts, "os", "version_id"))
    gid = devices.get("render_gid") if hasattr(devices, "get") else None
    rdma_names = devices.get("rdma") if hasattr(devices, "get") else None
    selinux = devices.get("selinux") if hasattr(devices, "get") else None
    davinci = devices.get("davinci") if hasattr(devices, "get") else None
    return {
        "vendor": vendor if vendor in VENDORS else None,
        "amd_render_gid": gid if isinstance(gid, int) and not isinstance(gid, bool) else None,
        "ascend_devices": sorted(int(d) for d in davinci) if davinci else None,
        "podman_quadlet": quadlet_podman(podman) if podman else None,
        # older preflight results have no such key: unknown, not "none"
        "rdma_devices": bool(rdma_names) if isinstance(rdma_names, list) else None,
        "selinux": selinux in ("enforcing", "permissive") if selinux else None,
    }


def quadlet_podman(version):
    """Whether a podman version (``5.4.2``, ``podman version 4.3.1``) has Quadlet (:data:`_units.QUADLET_MIN_PODMAN`)."""
    match = re.search(r"(\d+)\.(\d+)", str(version or ""))
    return bool(match) and (int(match.group(1)), int(match.group(2))) >= QUADLET_MIN_PODMAN


def native_install(host_vars, host_plan=None):
    """What the runtime role installs into the native virtualenv: ``{"packages": [...], "pip_args": str,
    "lock": {"name", "text", "sha256"} or None}``.

    ``launchcard_runtime_native_packages`` (with ``launchcard_runtime_native_pip_extra_args``) where set: the
    operator's own list, no lock. Else a hash-pinned lock (:mod:`._native_locks`): ``launchcard_runtime_native_lock``,
    or the collection's lock for the host's vendor (``launchcard_accelerator_vendor``, else the one preflight found,
    else ``nvidia``) and what its plan runs; ``packages`` are then the lock's pins and ``pip_args`` hash-checking
    from the lock's one source or ``launchcard_runtime_native_index_url``.

    :param host_plan: the host's plan entry; default: ``launchcard_plan.hosts[inventory_hostname]`` of ``host_vars``.
    :raises OptionError: a malformed package list or lock, or no lock for the host (naming the variables).
    """
    packages = host_vars.get(NATIVE_PACKAGES[0])
    extra = host_vars.get(NATIVE_PIP_ARGS[0])
    if packages is not None:
        packages = coerce("list_str", packages, NATIVE_PACKAGES[0])
        return {"packages": packages, "pip_args": "" if extra is None else str(extra), "lock": None}
    if host_plan is None:
        host_plan = (_get(host_vars, PLAN_VARIABLE, "hosts") or {}).get(host_vars.get("inventory_hostname")) or {}
    vendor = host_vars.get(VARIABLES["vendor"]) or detected(host_vars)["vendor"] or DEFAULTS["vendor"]
    instances = host_plan.get("instances") or []
    engines = [i["engine"] for i in instances if i.get("role") != "router"]
    if not instances:
        return {"packages": [], "pip_args": "", "lock": None}  # nothing runs here: nothing to install
    try:
        lock = _native_locks.host_lock(vendor, engines, any(i.get("role") == "router" for i in instances),
                                       host_vars.get(_native_locks.LOCK_VARIABLE))
        args = _native_locks.pip_args(lock, host_vars.get(_native_locks.INDEX_VARIABLE))
    except _native_locks.LockError as exc:
        raise OptionError(str(exc))
    return {"packages": lock["pins"], "pip_args": args,
            "lock": {"name": lock["name"], "text": lock["text"], "sha256": lock["sha256"]}}


def native_requirements(host_vars, host_plan=None):
    """A digest of what the runtime role installs into the native virtualenv (:func:`native_install`).

    The runtime role reinstalls the virtualenv when its requirements (the
    package list and pip's extra arguments, the lock's text) change; processes started before
    keep running on replaced files. The units carry this digest (a comment
    line), so that change rewrites them and the converge restarts them.

    :returns: 64 hex digits (SHA-256 of the JSON of both, keys sorted).
    :raises OptionError: see :func:`native_install`.
    """
    req = native_install(host_vars, host_plan)
    state = {"packages": req["packages"], "pip_extra_args": req["pip_args"]}
    if req["lock"]:
        state["lock"] = req["lock"]["sha256"]
    text = json.dumps(state, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def with_image_refs(host_vars, image_refs):
    """``host_vars`` with ``image_refs`` as its :data:`IMAGE_REFS_FACT` where the host has none: a plan file's
    digests for ``render.yml``, which runs no runtime role, so it shows the images deploy pins."""
    if not image_refs or host_vars.get(IMAGE_REFS_FACT):
        return host_vars
    return collections.ChainMap({IMAGE_REFS_FACT: dict(image_refs)}, host_vars)


def host_options(host_vars, host_plan=None):
    """The unit options of one host: variable, else preflight's facts, else the default.

    :param host_vars: mapping of the host's variables (Ansible's
        ``hostvars[host]``, or a plain dict in tests). Only the variables of
        :data:`._unit_spec.VARIABLES`, ``launchcard_hf_token`` and ``launchcard_registry_credentials``
        (whether they are set, never their values), ``preflight_result`` and ``runtime_image_refs`` are read.
    :returns: a full options dict for :func:`_units.render` (every key of
        :data:`._unit_spec.DEFAULTS`); ``secrets_env_file`` is always set (the
        units name it as optional), token or not.
    :raises OptionError: a variable's value fails its spec (:func:`._unit_spec.value`), the operator's
        container arguments conflict with the units' own (:func:`._units.check_container_flags`), or a native
        host's weights directory is where the units' hardening hides it (:func:`._units.check_hidden_paths`);
        the message names the variable.
    """
    found = detected(host_vars)
    opts = dict(DEFAULTS)
    for opt in OPTIONS:
        raw = host_vars.get(opt.variable) if opt.variable else None
        if raw is None:
            raw = found.get(opt.key)
        if raw is not None:
            opts[opt.key] = value(opt.key, raw)
    check_container_flags(opts)
    check_hidden_paths(opts)
    if opts["runtime"] == "podman" and host_vars.get(CREDENTIALS_VARIABLE):
        # the file the runtime role writes (roles/runtime: runtime_registry_auth_file)
        opts["podman_auth_file"] = REGISTRY_AUTH_FILE
    refs = host_vars.get(IMAGE_REFS_FACT)
    opts["image_refs"] = dict(refs) if hasattr(refs, "items") else {}
    if opts["runtime"] == "native":
        opts["native_requirements"] = native_requirements(host_vars, host_plan)
    # An engine that may download names the secrets file (EnvironmentFile=-, optional; _units.passes_secrets) whether
    # or not a token is given, so a run without the vault loaded rewrites no unit.
    secrets_file = host_vars.get(VARIABLES["secrets_env_file"]) or SECRETS_ENV_FILE
    opts["secrets_env_file"] = str(secrets_file)
    return opts


def host_secrets(host_vars):
    """The secrets of one host and the file they go to: ``{"secrets_file": path, "secrets": {"HF_TOKEN": token}
    or {}}``; only ``launchcard_hf_token`` and ``launchcard_secrets_env_file`` are read (no preflight fact)."""
    token = host_vars.get(SECRETS_VARIABLE)
    token = "" if token is None else str(token)
    return {"secrets_file": str(host_vars.get(VARIABLES["secrets_env_file"]) or SECRETS_ENV_FILE),
            "secrets": {"HF_TOKEN": token} if token else {}}


def host_settings(host_vars):
    """The unit options plus the secrets of one host, for the ``units`` role.

    :returns: ``{"options": host_options(...), "ready_helper": path of the
        units' readiness helper (:data:`READY_HELPER`), "secrets_file": path,
        "secrets": {"HF_TOKEN": token} or {}}`` (:func:`host_secrets`); ``secrets_file`` is the path
        even without a token (the converge removes a stale file there).
    """
    return dict(host_secrets(host_vars), options=host_options(host_vars), ready_helper=READY_HELPER)


def setup_reads(host_vars):
    """What the preflight call reads for the units role's setup steps, so they need no call of their own.

    :returns: ``{"inspect": [paths], "users": [names]}`` for the ``preflight`` module's options of those
        names: the weights directory and the readiness helper; under the native runtime the engines' user.
    :raises ValueError: a variable :func:`host_options` refuses.
    """
    opts = host_options(host_vars)
    return {"inspect": [opts["weights_dir"], READY_HELPER],
            "users": [ENGINE_USER] if opts["runtime"] == "native" else []}


def setup_needed(found, options, helper_sha1):
    """Whether the units role's setup steps have anything to do on a host.

    :param found: the preflight module's ``{"inspected": {path: ...}, "users": {name: bool}}`` for the
        paths and users of :func:`setup_reads`, or None (not read: the steps run, each reporting its own
        change).
    :param options: the host's :func:`host_options`.
    :param helper_sha1: SHA-1 (hex) of the readiness helper the role ships.
    :returns: True when the helper is not that file as ``root:root 0644``, or, under the native runtime,
        the engines' user is missing or the weights directory is not a ``launchcard:launchcard 0755``
        directory.
    """
    if found is None:
        return True
    inspected = found.get("inspected") or {}
    helper = {"exists": True, "type": "file", "owner": "root", "group": "root", "mode": "0644",
              "checksum": helper_sha1}
    if inspected.get(READY_HELPER) != helper:
        return True
    if options["runtime"] != "native":
        return False
    weights = {"exists": True, "type": "directory", "owner": ENGINE_USER, "group": ENGINE_USER, "mode": "0755",
               "checksum": None}
    return not (found.get("users") or {}).get(ENGINE_USER) or inspected.get(options["weights_dir"]) != weights


def setup_parts(preflight, host_plan, stack_roles, run_tags=("all",), skip_tags=(), install_stack=True,
                runtime=False, units_prepare=False):
    """The roles a deploy includes on a host before its units, in order, from the preflight call's verdict.

    :param preflight: the host's preflight module result (``stack_vendor``, ``bare_host``, ``weights_staged``);
        empty when preflight did not run (``--tags weights``).
    :param host_plan: the host's share of the plan (its ``instances``), or None when the plan gives it nothing.
    :param stack_roles: vendor -> the role that installs its stack, e.g. ``{"nvidia": "nvidia"}``.
    :param run_tags: the run's ``--tags`` (``ansible_run_tags``; ``["all"]`` without them).
    :param skip_tags: the run's ``--skip-tags`` (``ansible_skip_tags``).
    :param install_stack: False when the hosts' stack is provisioned another way.
    :param runtime: the runtime role has something to do on the host (``_runtime_host.RuntimeHost.needed``: the native
        requirements stamp or the container setup digest is not the one the preflight call read).
    :param units_prepare: the units role's ``prepare.yml`` has something to do (``_units_host.UnitsHost.prepare_needed``:
        the engines' user, weights directory or readiness helper not in place, or a --limit run's moved peers).
    :returns: role names: the vendor's stack role (tag ``stack``) and, on a host that was bare, ``preflight``
        (checked again once the driver is in); ``weights`` (tag ``weights``) on a host that runs an engine
        (routers load no weights) whose revision preflight did not find staged; ``runtime`` (tag ``runtime``)
        and ``units`` (tag ``units``; the role's ``prepare.yml``) where their flag says so. Empty on a no-op run.
    """
    preflight = preflight or {}

    def wanted(tag):
        return ("all" in run_tags or tag in run_tags) and tag not in skip_tags

    parts = []
    vendor = preflight.get("stack_vendor") or "none"
    # a host the plan gives nothing gets no stack (its preflight call checked only what it serves today)
    if install_stack and vendor in stack_roles and wanted("stack") and host_plan is not None:
        parts.append(stack_roles[vendor])
        if preflight.get("bare_host"):
            parts.append("preflight")
    engines = [i for i in (host_plan or {}).get("instances") or [] if i.get("role") != "router"]
    if engines and wanted("weights") and not preflight.get("weights_staged"):
        parts.append("weights")
    if runtime and wanted("runtime"):
        parts.append("runtime")
    if units_prepare and wanted("units"):
        parts.append("units")
    return parts
