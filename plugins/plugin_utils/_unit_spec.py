# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The unit options: one entry per option, and the one function that checks a value of one.

Each entry of :data:`OPTIONS` holds everything about an option: its key in the options dict the renderer reads
(:mod:`._units`), the one ``launchcard_*`` variable that sets it, its type, default, allowed values, the text that
documents it, where it is meant to be set, which roles read the variable and which units it changes. The rest is
made from it: :data:`DEFAULTS`, :data:`VARIABLES`, the checks of :func:`value`, and, by ``tools/unit_docs.py``
(``make docs``), the option lists of ``docs/inventory.md``, the units role's argument_specs, ``render_fleet``'s,
``unit_settings``' and ``host_units``' documentation.

Pure Python, no import of Ansible or of the collection (``tools/unit_docs.py`` loads this file by its path).
"""

from __future__ import annotations

import collections
import json
import re

from ansible_collections.launchcard.inference.plugins.plugin_utils._card_issues import near

RUNTIMES = ("docker", "podman", "native")
VENDORS = ("nvidia", "amd", "ascend", "none")
# podman-run(1) --cgroups=MODE
PODMAN_CGROUPS = ("enabled", "disabled", "no-conmon", "split")
# what ``units`` holds when an option changes every kind of unit
ALL_UNITS = RUNTIMES
CONTAINERS = ("docker", "podman")


def container_run(binary, runtime, name):
    """The head of a unit's foreground ``docker run``/``podman run`` (the client is the unit's main process).

    docker keeps ``--rm``: its client waits for the removal before it exits with the container's status. podman's
    does not: with ``--rm`` conmon's cleanup may remove the stopped container before the client's wait reads its
    status, and the client then exits 127 (pkg/domain/infra/abi/containers.go ContainerRun: ``ctr.Wait`` gives
    ErrNoSuchCtr, no Exited event, ``define.ExecErrorCodeNotFound``; podman-run(1) "127 ... could not be found"),
    leaving the stopped unit ``failed``. Its record is removed by the unit's ExecStartPre=/ExecStopPost= ``rm -f``.

    podman's gets ``--log-driver=passthrough``: the container writes to the unit's own stdout and stderr, so the
    journal has each line once, under the unit. podman's default driver on a systemd host is journald (podman-run(1)
    --log-driver, "Default journald"), whose conmon wrote every line a second time beside the attached client's copy.
    Quadlet runs its units the same way (podman v4.4.0 pkg/systemd/quadlet/quadlet.go: ``--log-driver passthrough``);
    podman 3.4 added the driver (PR 11390) and refuses it only on a TTY or a remote client (v4.3.1
    cmd/podman/containers/create.go), neither of which a unit has.
    """
    head = [binary, "run"] + (["--rm"] if runtime == "docker" else ["--log-driver=passthrough"])
    return head + ["--name", name]


# the roles that read every option, through the unit_settings filter (units) and the render_fleet module (render)
OPTION_ROLES = ("units", "render")

Option = collections.namedtuple("Option", "key variable kind default doc choices minimum where roles units example "
                                "maximum")
Option.__doc__ = """One unit option.

key: its name in the options dict; variable: the ``launchcard_*`` variable that sets it, None for one the collection
fills in itself; kind: ``str``, ``path``, ``size`` (docker's and podman's ``16g``), ``bool``, ``int``,
``int_or_none``, ``list_str``, ``list_int_or_none`` or ``dict``; default: its value when neither the variable nor
preflight sets it; doc: what it means (Ansible markup, ``C()``); choices: the allowed values or None; minimum: the
least integer (each item of a list) or None; maximum: the largest, or None; where: where the variable is meant to be set (``all``, ``host/group``);
roles: the roles besides units and render whose defaults, tasks or vars read the variable; units: the runtimes whose
units it can change; example: a value other than the default that it takes, which the spec's tests render on those
runtimes (None: they make one from its kind)."""


def _opt(key, variable, kind, default, doc, choices=None, minimum=None, where="all", roles=(), units=ALL_UNITS,
         example=None, maximum=None):
    return Option(key, variable, kind, default, doc, choices, minimum, where, roles, units, example, maximum)


# The longest time span systemd parses, in seconds: src/basic/time-util.c parse_time() refuses with ERANGE a value
# whose microseconds reach USEC_INFINITY (2^64 - 1); `systemd-analyze timespan` (systemd 252) takes 18446744073708
# and refuses 18446744073709 ("Numerical result out of range"). A TimeoutStartSec= it refuses is ignored (the
# default applies), so every seconds option and what the units add to it must stay at or below this.
SYSTEMD_MAX_SECONDS = 18446744073708
# what starting the process or the image adds to the engine's own load time (TimeoutStartSec = load budget + this)
START_MARGIN_S = 300
# what a container stop (podman/docker stop -t) gives beyond the engine's drain, for its own exit after the drain
STOP_MARGIN_S = 15
# what TimeoutStopSec gives beyond the container stop timeout (the client's own exit, ExecStopPost=)
STOP_UNIT_MARGIN_S = 30
# The largest seconds value an option or a card may give: what the units add to it still parses.
MAX_SECONDS = SYSTEMD_MAX_SECONDS - max(START_MARGIN_S, STOP_MARGIN_S + STOP_UNIT_MARGIN_S)
# A group id: Linux's gid_t is 32 bits and (gid_t) -1 means "no change" (chown(2)), so 2^32 - 2 is the largest.
MAX_GID = (1 << 32) - 2
# Device numbers and counts: each becomes a `--device /dev/davinciN` word of ExecStart=, whose logical line systemd
# reads up to LONG_LINE_MAX (1 MiB, _card_schema.MAX_COMMAND_BYTES); 4096 devices stay far below it.
MAX_DEVICES = 4096


OPTIONS = (
    _opt("runtime", "launchcard_runtime", "str", "docker",
         "How engines run - C(docker), C(podman) or C(native). docker comes from the OS on Debian and Ubuntu "
         "(C(docker.io)); RHEL 9 and its rebuilds ship podman only, so there preflight requires docker installed from "
         "Docker's own repository (C(docker-ce)) and otherwise stops, naming C(podman) as the other way (check "
         "C(container_engine)).",
         choices=RUNTIMES, roles=("preflight", "runtime", "gpu_exporter")),
    _opt("vendor", "launchcard_accelerator_vendor", "str", "nvidia",
         "C(nvidia), C(amd), C(ascend), C(none) - container device flags and the visible-devices variable. Unset - "
         "the vendor preflight found on the host (its tools, else its PCI bus), else C(nvidia).",
         choices=VENDORS, where="host/group", roles=("plan", "preflight", "gpu_exporter")),
    _opt("native_venv", "launchcard_runtime_native_venv", "path", "/opt/launchcard/venv",
         "C(native) runtime - the virtualenv whose C(bin/) holds the engines.",
         roles=("preflight", "runtime"), units=("native",)),
    _opt("weights_dir", "launchcard_weights_dir", "path", "/var/lib/launchcard/models",
         "The Hugging Face cache (HF_HOME) on the hosts, where the weights role stages the snapshots; mounted into "
         "containers.",
         roles=("preflight", "weights")),
    _opt("hf_offline", "launchcard_hf_offline", "bool", True,
         "C(true) - units set C(HF_HUB_OFFLINE=1), so engines serve the staged snapshot without network."),
    _opt("start_timeout_s", "launchcard_unit_start_timeout_s", "int", 1800,
         "Minimum C(TimeoutStartSec), raised to the card's C(VLLM_ENGINE_READY_TIMEOUT_S) + 300.",
         minimum=0, maximum=MAX_SECONDS),
    _opt("stop_timeout_s", "launchcard_unit_stop_timeout_s", "int", 60,
         "Minimum seconds a container gets to stop (C(stop -t), C(--stop-timeout)), raised to the engine's drain "
         "(C(launchcard_engine_shutdown_timeout_s)) + 15; C(TimeoutStopSec) is 30 s more.",
         minimum=0, maximum=MAX_SECONDS),
    _opt("engine_shutdown_timeout_s", "launchcard_engine_shutdown_timeout_s", "int", 30,
         "Seconds an engine may finish its in-flight requests after SIGTERM - vLLM gets C(--shutdown-timeout N) unless "
         "the card's argv sets it (vLLM's own default 0 aborts them); SGLang drains without a bound of its own, bounded "
         "by the stop timeouts. 0 writes no flag, for vLLM before 0.18, which has no C(--shutdown-timeout).",
         minimum=0, maximum=MAX_SECONDS),
    _opt("docker_bin", "launchcard_docker_bin", "path", "/usr/bin/docker",
         "The docker client the units run.", roles=("gpu_exporter",), units=("docker",)),
    _opt("podman_bin", "launchcard_podman_bin", "path", "/usr/bin/podman",
         "The podman the units run.", roles=("gpu_exporter",), units=("podman",)),
    _opt("secrets_env_file", "launchcard_secrets_env_file", "path", None,
         "Where C(launchcard_hf_token) is written (mode 0600); the unit of every engine that may download (not "
         "offline: C(launchcard_hf_offline) false and no C(HF_HUB_OFFLINE=1) in the card) names it as optional "
         "(C(EnvironmentFile=-)), token or not; offline engines never get the token. Unset - "
         "C(/etc/launchcard/secrets.env)."),
    _opt("amd_render_gid", "launchcard_amd_render_gid", "int_or_none", None,
         "AMD containers - id of the host's C(render) group (C(--group-add)). Unset - the id preflight read from the "
         "host's C(/etc/group), else none.",
         minimum=0, where="host/group", roles=("preflight",), units=CONTAINERS, maximum=MAX_GID),
    _opt("amd_unconfined", "launchcard_amd_container_unconfined", "bool", False,
         "AMD containers - C(true) adds C(--cap-add SYS_PTRACE --security-opt seccomp=unconfined). ROCm's guide "
         "(Running ROCm Docker containers) needs only C(--device /dev/kfd --device /dev/dri) and marks "
         "C(seccomp=unconfined) optional, for memory mapping (numactl) in HPC environments; C(SYS_PTRACE) is for "
         "debuggers (ptrace(2)). Unset - neither: the engine runs under the runtime's seccomp profile and "
         "capabilities.",
         where="host/group", units=CONTAINERS),
    _opt("ascend_devices", "launchcard_ascend_devices", "list_int_or_none", None,
         "Ascend containers - the C(/dev/davinciN) numbers passed with C(--device) (e.g. C([0, 1, 2, 3])). Unset - "
         "the devices preflight found on the host, else C(0) .. C(launchcard_ascend_device_count) - 1.",
         minimum=0, where="host/group", roles=("preflight",), units=CONTAINERS, maximum=MAX_DEVICES),
    _opt("ascend_device_count", "launchcard_ascend_device_count", "int", 8,
         "Ascend containers - how many C(/dev/davinciN) when neither C(launchcard_ascend_devices) nor preflight "
         "names them.",
         minimum=0, where="host/group", units=CONTAINERS, maximum=MAX_DEVICES),
    _opt("extra_container_args", "launchcard_extra_container_args", "list_str", [],
         "docker/podman - extra C(run) arguments before the image (a list; escaped for systemd like every argv "
         "word). One that conflicts with a flag the units write fails, naming the variable that brings the "
         "other flag: C(--shm-size) here with the units' C(--ipc host) names this variable; C(--ipc host) here with "
         "C(launchcard_container_shm_size) set names that one.",
         where="host/group", units=CONTAINERS),
    _opt("container_shm_size", "launchcard_container_shm_size", "size", None,
         "docker/podman - the size of each container's own C(/dev/shm) (C(16g), C(512m): a number and an optional "
         "unit b, k, m, g, t, p, 1024-based), written as C(--shm-size) in place of C(--ipc host): the containers get "
         "an IPC namespace of their own instead of the host's. Unset - C(--ipc host), the host's C(/dev/shm). With "
         "C(--ipc host) in C(launchcard_extra_container_args) it fails, naming this variable. A Quadlet file carries "
         "it in C(PodmanArgs=) (C(ShmSize=) is podman 4.7's).",
         where="host/group", units=CONTAINERS, example="16g"),
    _opt("podman_cgroups", "launchcard_podman_cgroups", "str", "enabled",
         "podman - the units' C(podman run --cgroups=MODE) - C(enabled) (no flag), C(disabled), C(no-conmon), "
         "C(split). C(disabled) runs each container in its unit's cgroup, for hosts without cgroup delegation "
         "(read-only cgroup v1 controllers - the sandbox's nspawn hosts).",
         choices=PODMAN_CGROUPS, units=("podman",)),
    _opt("podman_quadlet", "launchcard_podman_quadlet", "bool", False,
         "podman - C(true) writes each unit as a Quadlet file, C(/etc/containers/systemd/launchcard-*.container) "
         "(podman-systemd.unit(5)), which podman's systemd generator makes into the C(.service) on the converge's one "
         "C(daemon-reload); C(false) writes C(.service) units that call C(podman run). Unset - Quadlet where the "
         "host's podman is 4.4 or newer, from the version the preflight call reads (C(podman --version)), else the "
         "one the host's OS ships (Debian 13 - 5.4; Debian 12 - 4.3, Ubuntu 24.04 - 4.9, ...; RHEL 9 hosts - only an "
         "installed podman tells). Set it for C(render.yml), which reads no host.",
         where="host/group", units=("podman",)),
    _opt("podman_auth_file", None, "path", None,
         "podman - the registry auth file the units pass with C(--authfile) (a path, never a secret), set when "
         "C(launchcard_registry_credentials) is not empty.",
         units=("podman",)),
    _opt("rdma", "launchcard_rdma", "bool", None,
         "RDMA for the engines that move data between hosts - containers get C(--device /dev/infiniband --ulimit "
         "memlock=-1:-1 --cap-add IPC_LOCK), native units C(LimitMEMLOCK=infinity) and C(CAP_IPC_LOCK). Unset - the "
         "PD prefills and decodes and the multi-node ranks, on hosts where preflight found RDMA devices "
         "(C(/sys/class/infiniband); a PD or multi-node plan on a host without is a preflight warning - NCCL and the "
         "KV transfer fall back to TCP); C(true)/C(false) - every GPU instance / none. Set it for C(render.yml), which "
         "reads no host.",
         where="host/group"),
    _opt("rdma_devices", None, "bool", None,
         "Whether the host has RDMA devices (preflight's C(runtime_devices.rdma)); unset - not known."),
    _opt("selinux", "launchcard_selinux_labels", "bool", None,
         "Containers on SELinux hosts (RHEL 9) - C(:z) on the weights and cache volumes, and C(--security-opt "
         "label=disable) for podman's CDI GPUs. Unset - where preflight found SELinux enabled (C(/sys/fs/selinux)). "
         "Set it for C(render.yml).",
         where="host/group", units=CONTAINERS),
    _opt("jit_cache", "launchcard_jit_cache", "bool", True,
         "Containers - keep each engine's compile/JIT caches (torch.compile, Triton, vLLM's) across restarts in "
         "C(/var/cache/launchcard/jit/<engine>-<image key>/), one per image digest.",
         units=CONTAINERS),
    _opt("image_refs", None, "dict", {},
         "Image to C(image@sha256:...), from the runtime role's C(runtime_image_refs) fact.",
         units=CONTAINERS),
    _opt("liveness_interval_s", "launchcard_liveness_interval_s", "int", 60,
         "Liveness (docs/observability.md) - seconds between two probes of an engine by its liveness timer (a 1-token "
         "completion; a router's worker list).",
         minimum=5, maximum=86400),
    _opt("liveness_timeout_s", "launchcard_liveness_timeout_s", "int", 30,
         "Liveness - seconds one probe waits for its answer before it counts as a failure.",
         minimum=1, maximum=3600),
    _opt("liveness_failures", "launchcard_liveness_failures", "int", 3,
         "Liveness - failed probes in a row after which the liveness check restarts the engine's unit.",
         minimum=1, maximum=1000),
    _opt("liveness_recipes", "launchcard_liveness_recipes", "dict", {},
         "Liveness per recipe - C({RECIPE: false}) renders no liveness timer for that recipe's instances. Unset - "
         "every engine that serves completions and every router with a worker API has one.",
         example={"vllm-aggregated": False}),
    _opt("lock_dir", "launchcard_lock_dir", "path", "/var/lib/launchcard",
         "Where the run lock files live on the hosts (C(lock.json), and C(fleet-lock.json) on the anchor host); the "
         "liveness probes stand aside while a run holds the host's lock.",
         roles=("preflight",), example="/srv/launchcard-locks"),
    _opt("native_requirements", None, "str", None,
         "Native runtime - digest of C(launchcard_runtime_native_packages) and "
         "C(launchcard_runtime_native_pip_extra_args), a comment in each unit, so that a new requirement set restarts "
         "the units.",
         units=("native",), example="0" * 64),
)
SPEC = {o.key: o for o in OPTIONS}
# The defaults, written in OPTIONS only.
DEFAULTS = {o.key: o.default for o in OPTIONS}
# Option -> the variable that sets it (None: the collection fills it in).
VARIABLES = {o.key: o.variable for o in OPTIONS}


class OptionError(ValueError):
    """A variable holds a value of the wrong type, outside its choices or below its minimum (names the variable)."""


def _true(value, var):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on", "y", "t"):
        return True
    if text in ("0", "false", "no", "off", "n", "f"):
        return False
    raise OptionError("%s must be a boolean, found %r" % (var, value))


def _int(value, var, minimum=None, maximum=None):
    if isinstance(value, bool):
        raise OptionError("%s must be an integer, found %r" % (var, value))
    if not isinstance(value, int):
        try:
            value = int(str(value).strip())
        except ValueError:
            raise OptionError("%s must be an integer, found %r" % (var, value))
    if minimum is not None and value < minimum:
        raise OptionError("%s must be %d or more, found %r" % (var, minimum, value))
    if maximum is not None and value > maximum:
        raise OptionError("%s must be %d or less, found %r" % (var, maximum, value))
    return value


def _list(value, var):
    if isinstance(value, str):
        # an INI [group:vars] value arrives as a string
        try:
            value = json.loads(value)
        except ValueError:
            raise OptionError("%s must be a list, found %r" % (var, value))
    if not isinstance(value, (list, tuple)):
        raise OptionError("%s must be a list, found %r" % (var, value))
    return list(value)


def _str(value, var):
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise OptionError("%s must be a string, found %r" % (var, value))
    return str(value)


# A path option is written into unit directives (RequiresMountsFor=, ReadWritePaths=, EnvironmentFile=, ExecStart=)
# and the containers' -v HOST:CONTAINER[:OPTIONS]: it must be absolute (systemd.service(5) "Command lines": a first
# word that starts with "@", "-", ":", "+" or "!" is a prefix, and "+" runs the command with full privileges), and
# hold no ":" (the volume separator of docker-run(1) and podman-run(1) -v), no "=" (env(1) reads NAME=VALUE words
# before the program it runs), no control character and no ".." part. Whitespace is escaped where a directive can
# carry it (_unit_escape) and refused where it cannot (the weights directory: _units).
_PATH_REFUSED = re.compile(r"[:=\x00-\x1f\x7f]")


def _path(value, var):
    text = _str(value, var)
    if not text.startswith("/"):
        raise OptionError("%s must be an absolute path (starting with /; systemd reads a leading +, -, @, ! or : as a "
                          "prefix that changes how a command runs), found %r" % (var, value))
    bad = _PATH_REFUSED.search(text)
    if bad:
        raise OptionError("%s must be a path without ':', '=' or control characters, found %r in %r (docker and podman "
                          "read ':' as the volume separator, env(1) '=' as an assignment)" % (var, bad.group(0), text))
    if ".." in text.split("/"):
        raise OptionError("%s must be a path without '..' parts, found %r" % (var, text))
    return text


# docker/go-units size.go RAMInBytes, which both docker's --shm-size (docker/cli opts/opts.go MemBytes.Set) and
# podman's (pkg/specgenutil/specgen.go) parse: a number, then b or k/m/g/t/p with an optional b or ib, any case; the
# subset both go-units v0.4 (its regex) and v0.5+ (parseSize) take, without the space they allow before the unit
_SIZE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([kmgtp](?:i?b)?|b)?$", re.IGNORECASE)


def _size(value, var):
    text = _str(value, var).strip()
    match = _SIZE.match(text)
    if not match:
        raise OptionError("%s must be a size such as 16g or 512m, found %r" % (var, value))
    if float(match.group(1)) <= 0:
        # docker reads 0 as its default (moby daemon/daemon_unix.go adaptContainerSettings: ShmSize 0 -> 64 MiB)
        raise OptionError("%s must be above 0, found %r" % (var, value))
    return text


def coerce(kind, value, var, minimum=None, maximum=None):
    """``value`` as an option of type ``kind`` (strings from INI files parsed); errors name ``var``."""
    if kind == "str":
        return _str(value, var)
    if kind == "path":
        return _path(value, var)
    if kind == "size":
        return _size(value, var)
    if kind == "bool":
        return _true(value, var)
    if kind in ("int", "int_or_none"):
        return _int(value, var, minimum, maximum)
    if kind == "list_str":
        return [_str(item, "%s[%d]" % (var, i)) for i, item in enumerate(_list(value, var))]
    if kind == "list_int_or_none":
        return [_int(item, "%s[%d]" % (var, i), minimum, maximum) for i, item in enumerate(_list(value, var))]
    if kind == "dict":
        if not hasattr(value, "items"):
            raise OptionError("%s must be a mapping, found %r" % (var, value))
        return value
    raise ValueError("unknown option type %r" % kind)


def value(key, raw):
    """The value of option ``key`` that ``raw`` (not None) sets: coerced to its type, checked against its choices
    and minimum.

    :raises OptionError: naming the option's variable (its key for one without a variable).
    """
    opt = SPEC[key]
    var = opt.variable or key
    out = coerce(opt.kind, raw, var, opt.minimum, opt.maximum)
    if opt.choices is not None and out not in opt.choices:
        guess = near(out, opt.choices) if isinstance(out, str) else None
        hint = "; did you mean %r?" % guess if guess else ""
        raise OptionError("%s must be one of %s, found %r%s" % (var, ", ".join(opt.choices), out, hint))
    return out


def with_defaults(options):
    """``options`` (None values left out) checked by :func:`value` and merged over :data:`DEFAULTS`; keys that are
    no option pass as they are.

    :raises OptionError: see :func:`value`.
    """
    opts = dict(DEFAULTS)
    for key, raw in (options or {}).items():
        if raw is None:
            continue
        fast = _VALID.get(key)
        opts[key] = raw if fast is not None and fast(raw) else value(key, raw) if key in SPEC else raw
    return opts


def _valid(opt):
    """A quick test that a value of ``opt`` needs no coercion and passes :func:`value` as it is, or None."""
    exact = {"str": str, "path": str, "bool": bool, "int": int, "int_or_none": int}.get(opt.kind)
    if exact is None:
        return None
    if opt.kind == "path":
        return None
    choices, minimum, maximum = opt.choices, opt.minimum, opt.maximum
    # the exact class: a bool (an int's subclass) or Ansible's tagged str takes value()'s way
    return lambda raw: raw.__class__ is exact and (choices is None or raw in choices) and (
        minimum is None or raw >= minimum) and (maximum is None or raw <= maximum)


# The renderer checks its options at every call; most are already of their type.
_VALID = {o.key: _valid(o) for o in OPTIONS if _valid(o) is not None}
