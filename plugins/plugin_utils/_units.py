# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render systemd units from plan instances; every card value goes through :mod:`._unit_escape`.

Pure Python, no Ansible import.
"""

from __future__ import annotations

import hashlib
import re

from ansible_collections.launchcard.inference.plugins.module_utils._preflight import needs_rdma
from ansible_collections.launchcard.inference.plugins.plugin_utils import _env_policy as env_policy
from ansible_collections.launchcard.inference.plugins.plugin_utils import _liveness as liveness
from ansible_collections.launchcard.inference.plugins.plugin_utils._argv import Argv
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_escape import (
    UnsafeValue, _check, _quadlet_value, _spec, exec_line)
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_spec import (
    CONTAINERS as CONTAINER_RUNTIMES, SPEC, START_MARGIN_S, STOP_UNIT_MARGIN_S, OptionError, container_run, with_defaults)
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_times import (
    VLLM_SHUTDOWN_FLAG, _card_shutdown_timeout, _ready_timeout, _start_timeout, drain_s,
    stop_timeout)
from ansible_collections.launchcard.inference.plugins.plugin_utils._recipe import (
    ROUTER_DEFAULT_WORKER_STARTUP_TIMEOUT_S,
    ROUTER_STARTUP_FLAG,
)

_PLAIN_EXE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]*$")

VISIBLE_DEVICES_ENV = {"nvidia": "CUDA_VISIBLE_DEVICES", "amd": "HIP_VISIBLE_DEVICES",
                       "ascend": "ASCEND_RT_VISIBLE_DEVICES"}
CONTAINER_HF_HOME = "/root/.cache/huggingface"
# Restart policy: a unit whose engine keeps exiting is restarted every RESTART_SEC s, at most
# START_LIMIT_BURST starts within START_LIMIT_INTERVAL_S s (manual starts included), then stays
# failed ("Start request repeated too quickly"; Result keeps the exit that caused it) until a deploy
# or `systemctl reset-failed` (systemd.unit(5)). The limit trips only when the whole burst fits in one
# interval, so an engine that crashes after loading for minutes is not limited.
# An engine that fails fast at boot because its GPUs are not usable yet keeps retrying for about
# (START_LIMIT_BURST - 1) * RESTART_SEC s (~4.5 min) before it gives up; a growing delay (RestartSteps=,
# RestartMaxDelaySec=) would be kinder but needs systemd 254: systemd-analyze verify on Debian 12's
# systemd 252 says "Unknown key 'RestartSteps' in section [Service], ignoring" (RHEL 9 has 252 too).
RESTART_SEC = 30
# "Started" means ready: ExecStartPost= runs this helper (shipped by the units role) until the
# engine's health URL answers 200, bounded by TimeoutStartSec=. vLLM and SGLang do not call
# sd_notify(3), so Type=notify is not possible.
# -I: isolated mode, so no PYTHON* variable of the unit's own environment changes what it imports.
WAIT_READY = ("/usr/bin/python3", "-I", "/usr/local/libexec/launchcard/wait-ready.py")
# native runtime: the engines' system user (created by the units role, owner of the weights
# directory) and the groups that own each vendor's device nodes. NVIDIA's /dev/nvidia* are
# 0666 by default; AMD's /dev/kfd and /dev/dri/renderD* belong to render and video (ROCm's
# install guide); Ascend's /dev/davinci* to HwHiAiUser (the Ascend driver installer).
ENGINE_USER = "launchcard"
DEVICE_GROUPS = {"nvidia": (), "amd": ("render", "video"), "ascend": ("HwHiAiUser",), "none": ()}
# where the engines may write besides the weights directory (CacheDirectory=, owned by the user):
# torch, Triton, vLLM and FlashInfer caches under HOME / XDG_CACHE_HOME.
ENGINE_CACHE = "/var/cache/launchcard"
# systemd sandboxing the engines tolerate (systemd.exec(5)). Left out on purpose:
# PrivateDevices= and DevicePolicy= (the GPUs are device nodes), ProtectClock= (implies a
# device allow-list), MemoryDenyWriteExecute= (Triton and torch.compile JIT), and
# an allow-list SystemCallFilter= (CUDA IPC and NCCL use calls outside @system-service; only
# groups no engine needs are denied), RemoveIPC= (the units of a host share one user: one
# unit's stop would remove its partners' shared memory), PrivateNetwork=/IPAddressDeny= (engines
# serve and reach peers over the network), PrivateUsers= (device nodes' groups).
HARDENING = (
    "NoNewPrivileges=yes",
    "ProtectSystem=strict",
    "ProtectHome=yes",
    "PrivateTmp=yes",
    "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes",
    "ProtectKernelLogs=yes",
    "ProtectControlGroups=yes",
    "ProtectHostname=yes",
    "RestrictSUIDSGID=yes",
    "RestrictRealtime=yes",
    "RestrictNamespaces=yes",
    "LockPersonality=yes",
    "SystemCallArchitectures=native",
    "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK",
    "CapabilityBoundingSet=",
    "PrivateMounts=yes",
    "SystemCallFilter=~@clock @cpu-emulation @module @mount @obsolete @raw-io @reboot @swap",
    "SystemCallErrorNumber=EPERM",
    "UMask=0027",
)
# What HARDENING hides from a native engine (systemd.exec(5)): ProtectHome=yes makes /home, /root and /run/user
# inaccessible, PrivateTmp=yes gives the unit an empty /tmp and /var/tmp of its own. Weights staged there are not
# what the engine would see: such a weights directory is refused (:func:`check_hidden_paths`).
HIDDEN_BY_HARDENING = (("ProtectHome=yes", ("/home", "/root", "/run/user")), ("PrivateTmp=yes", ("/tmp", "/var/tmp")))
# Units after which an engine that uses GPUs starts at boot, so it does not fail (and burn its start limit)
# while the GPUs are not usable yet. After= only orders, it starts nothing: a unit that is absent or not
# enabled (no NVSwitch, no fabric manager) is skipped, one that is enabled is waited for.
# nvidia-persistenced.service: NVIDIA/nvidia-persistenced init/systemd/nvidia-persistenced.service.template;
# nvidia-fabricmanager.service: the fabric manager package's unit (NVIDIA/NVSentinel#883 quotes
# /usr/lib/systemd/system/nvidia-fabricmanager.service; CUDA fails with 802 before it is up, NVIDIA/nvtrust#128);
# nvidia-cdi-refresh.service: nvidia-container-toolkit >= 1.18 deployments/systemd (oneshot, WantedBy=multi-user);
# CDI_REFRESH_UNIT: the nvidia role's own oneshot that rewrites the CDI spec for the loaded driver at boot.
# AMD and Ascend: no readiness unit is named here (none looked up in ROCm's or Ascend's packaging).
CDI_REFRESH_UNIT = "nvidia-cdi-launchcard.service"
ACCELERATOR_READY_UNITS = {
    "nvidia": ("nvidia-persistenced.service", "nvidia-fabricmanager.service", "nvidia-cdi-refresh.service",
               CDI_REFRESH_UNIT),
    "amd": (), "ascend": (), "none": (),
}
# RDMA (#25 item 3) for an instance that moves data between hosts (module_utils/_preflight.py needs_rdma: a PD
# prefill or decode, a multi-node rank). Without it NCCL uses sockets and NIXL/Mooncake use TCP or fail.
# vllm docs/serving/parallelism_scaling.md (GPUDirect RDMA in containers: IPC_LOCK, the InfiniBand devices);
# sglang docker/compose.yaml (memlock ulimit -1, the /dev/infiniband device, "required by RDMA").
RDMA_DEVICES_DIR = "/dev/infiniband"
RDMA_CONTAINER_ARGS = ("--device", RDMA_DEVICES_DIR, "--ulimit", "memlock=-1:-1", "--cap-add", "IPC_LOCK")
# Per engine and image compile/JIT caches (#25 item 7), so a restart does not rebuild torch.compile, Triton,
# FlashInfer or DeepGEMM kernels. The host directory (CacheDirectory=, created by systemd before the start) is
# keyed by the image reference, pinned by digest, so a new image never reads an old image's kernels.
# vllm/envs.py: VLLM_CACHE_ROOT defaults to $XDG_CACHE_HOME/vllm (torch.compile cache under it);
# torch/_inductor/runtime/cache_dir_utils.py: TORCHINDUCTOR_CACHE_DIR (default under /tmp, lost with --rm);
# triton/runtime/cache.py: TRITON_CACHE_DIR (default ~/.triton/cache); flashinfer/jit/env.py:
# FLASHINFER_WORKSPACE_BASE (default ~, cache under .cache/flashinfer); deep_gemm/jit/compiler.py: DG_CACHE_DIR
# (default ~/.deep_gemm).
CONTAINER_JIT_CACHE = "/var/cache/launchcard-jit"
JIT_CACHE_SUBDIR = "jit"
JIT_CACHE_ENV = (("XDG_CACHE_HOME", ""), ("TRITON_CACHE_DIR", "/triton"), ("TORCHINDUCTOR_CACHE_DIR", "/inductor"),
                 ("FLASHINFER_WORKSPACE_BASE", "/flashinfer"), ("DG_CACHE_DIR", "/deep_gemm"))
# Native NVIDIA engines run unprivileged (HARDENING), so the setuid nvidia-modprobe the CUDA driver forks cannot
# make /dev/nvidia-uvm on a fresh boot; a privileged ("+") ExecStartPre makes it and /dev/nvidiactl first. CUDA
# installation guide, "Device Node Verification": `nvidia-modprobe -u -c=0`. "-": a host whose packaging has no
# nvidia-modprobe (its udev rules make the nodes) still starts.
NVIDIA_MODPROBE = ("/usr/bin/nvidia-modprobe", "-u", "-c=0")
# Engines wait for usable accelerators before they start (#25 item 5): an ExecStartPre= (the readiness helper's
# --accelerators mode) polls the vendor tool until every GPU answers and, where it reports one, the NVLink fabric
# is up (nvidia-smi fabric.state "Completed"; "[N/A]" on parts without NVSwitch). It waits inside
# TimeoutStartSec= instead of failing fast, so a slow fabric manager (nvtrust#128: ~47 s, CUDA error 802 before)
# uses no start of the unit's start limit.
WAIT_ACCELERATORS_VENDORS = ("nvidia",)
# Variables the secrets file (secrets_env_file) may hold, passed into containers by name.
SECRET_ENV_NAMES = ("HF_TOKEN",)
# A native engine's environment is set on its process alone: env(1) (coreutils) sets each NAME=VALUE and execs the
# program in its place (same PID, so KillMode= and $MAINPID still name the engine); the unit's other commands
# (nvidia-modprobe, the readiness helper) run without it. systemd.exec(5) Environment= would reach every command.
ENV_PROGRAM = "/usr/bin/env"
START_LIMIT_BURST = 10
START_LIMIT_INTERVAL_S = 600

# Quadlet, the podman systemd generator, ships with podman 4.4 (podman-systemd.unit(5)): hosts with an older podman
# get .service units that call `podman run`.
QUADLET_MIN_PODMAN = (4, 4)
# Quadlet [Container] keys and the podman release whose generator first takes each: podman's
# pkg/systemd/quadlet/quadlet.go, supportedContainerKeys at each vX.Y.0 tag. The generator refuses a file with a key
# it does not know ("unsupported key ... in group 'Container'": no .service is made), so render_quadlet writes only
# keys of QUADLET_MIN_PODMAN's release (_quadlet_key) and passes what newer keys would say as podman run options in
# PodmanArgs=, which every release hands on.
QUADLET_CONTAINER_KEYS = {
    "Image": (4, 4), "ContainerName": (4, 4), "Network": (4, 4), "Volume": (4, 4), "PodmanArgs": (4, 4),
    "Exec": (4, 4), "AddDevice": (4, 4),
    "SecurityLabelDisable": (4, 5), "ShmSize": (4, 7), "Ulimit": (4, 7), "StopTimeout": (5, 0),
    "Entrypoint": (5, 0), "GroupAdd": (5, 1),
}
# The files are written by the systemd_units converge, not containers.podman.podman_container (state: quadlet):
# that is a task per container, a round trip per unit on every no-op run and a reload per file, where the
# converge writes, checks (quadlet -dryrun) and reloads once per host.
QUADLET_SUFFIX = ".container"


def options_with_defaults(options):
    """Return ``options`` merged over :data:`._unit_spec.DEFAULTS`, each value checked by its spec (``_unit_spec.value``).

    :raises ValueError: a value of the wrong type or outside its choices (``_unit_spec.OptionError``, naming the
        variable).
    """
    return with_defaults(options)


def engine_argv(inst, options=None):
    """The card's argv with what a graceful stop needs: a vLLM engine gets ``--shutdown-timeout N``
    (:func:`drain_s`) unless the card sets it, because vLLM's default (0) aborts every in-flight request on SIGTERM
    (vllm/v1/engine/core.py 0.32.0, ``_handle_shutdown``: mode "abort" when 0, "drain" otherwise).

    With ``engine_shutdown_timeout_s`` 0 no flag is written (vLLM's own default): releases before 0.18 have no
    such option (vLLM PR 34730, "Available in: vLLM v0.18.0+", llm-d issue 927) and would refuse to start.
    """
    argv = list(inst["argv"])
    if inst.get("launcher") == "vllm" and _card_shutdown_timeout(argv) is None:
        drain = drain_s(inst, options)
        if drain > 0:
            argv += [VLLM_SHUTDOWN_FLAG, str(drain)]
    if inst.get("role") == "router" and inst.get("workers_ready_timeout_s") is not None:
        argv = _router_startup(argv, inst["workers_ready_timeout_s"], options)
    return argv


def worker_ready_timeout(workers):
    """The longest engine load budget among a router's workers (:func:`_ready_timeout`), 0 without workers."""
    return max([_ready_timeout(w) for w in workers] or [0])


def _router_startup(argv, ready, options):
    """A router gives up on a worker not ready within ``--worker-startup-timeout-secs``
    (sglang_router/router_args.py:31, default 1800); its workers may take their start budget
    (``start_timeout_s``, or their load budget plus :data:`START_MARGIN_S`), so it waits at least that long."""
    opts = options_with_defaults(options)
    budget = max(int(opts["start_timeout_s"]), ready + START_MARGIN_S)
    a = Argv(argv)
    try:
        have = int(a.get(ROUTER_STARTUP_FLAG, ROUTER_DEFAULT_WORKER_STARTUP_TIMEOUT_S))
    except ValueError:
        return argv
    if have < budget:
        a.set(ROUTER_STARTUP_FLAG, budget)
    return a.tokens


def _container_vendor_args(inst, opts):
    vendor = opts["vendor"]
    if not inst["gpus"] or vendor == "none":
        return []
    if vendor == "nvidia":
        if inst["gpu_selection"] == "visible_devices":
            return ["--gpus", '"device=%s"' % ",".join(str(g) for g in inst["gpu_ids"])]
        return ["--gpus", "all"]
    if vendor == "amd":
        # ROCm's docker guide (install-on-linux how-to/docker.html): /dev/kfd and /dev/dri are what a container needs;
        # seccomp=unconfined is "(optional)", and SYS_PTRACE is for debuggers: both only when asked (amd_unconfined)
        args = ["--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video"]
        if opts.get("amd_unconfined"):
            args += ["--cap-add", "SYS_PTRACE", "--security-opt", "seccomp=unconfined"]
        if opts["amd_render_gid"] is not None:
            args += ["--group-add", str(opts["amd_render_gid"])]
        return args
    args = []
    devices = opts["ascend_devices"]
    if devices is None:
        devices = range(int(opts["ascend_device_count"]))
    for i in devices:
        args += ["--device", "/dev/davinci%d" % int(i)]
    args += ["--device", "/dev/davinci_manager", "--device", "/dev/devmm_svm", "--device", "/dev/hisi_hdc",
             "-v", "/usr/local/dcmi:/usr/local/dcmi:ro",
             "-v", "/usr/local/bin/npu-smi:/usr/local/bin/npu-smi:ro",
             "-v", "/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64:ro",
             "-v", "/usr/local/Ascend/driver/version.info:/usr/local/Ascend/driver/version.info:ro",
             "-v", "/etc/ascend_install.info:/etc/ascend_install.info:ro"]
    return args


def _gpu_env(inst, opts):
    """The card env with the plan's GPU selection applied.

    The planner owns GPU assignment, so a visible-devices variable the card
    wrote for its own layout is dropped for every instance that uses GPUs.
    vLLM (``visible_devices``) then gets the vendor's variable with the
    planned host GPU ids, except in an NVIDIA container, where
    ``--gpus device=...`` / CDI already exposes only those GPUs (renumbered
    from 0 inside). AMD and Ascend containers see every device, so the
    variable selects there too. SGLang uses ``--base-gpu-id`` in argv.
    """
    env = dict(inst["env"])
    if not inst["gpus"]:
        return env
    for var in VISIBLE_DEVICES_ENV.values():
        env.pop(var, None)
    var = VISIBLE_DEVICES_ENV.get(opts["vendor"])
    runtime_selects = opts["runtime"] != "native" and opts["vendor"] == "nvidia"
    if var and inst["gpu_selection"] == "visible_devices" and inst["gpu_ids"] and not runtime_selects:
        env[var] = ",".join(str(g) for g in inst["gpu_ids"])
    return env


def podman_cgroups_args(opts):
    """podman's ``--cgroups=MODE`` (podman-run(1)) for the host's ``podman_cgroups``; none for ``enabled`` (podman's
    default) or another runtime. The units' containers and preflight's argv check run with it alike."""
    if opts.get("runtime") == "podman" and opts.get("podman_cgroups", "enabled") != "enabled":
        return ["--cgroups=%s" % opts["podman_cgroups"]]
    return []


def rdma(inst, opts):
    """Whether an instance's unit gets the RDMA devices, memlock limit and IPC_LOCK (see :data:`._unit_spec.DEFAULTS` ``rdma``)."""
    if not inst.get("gpus") or opts["vendor"] == "none":
        return False
    if opts.get("rdma") is not None:
        return bool(opts["rdma"])
    return needs_rdma(inst) and opts.get("rdma_devices") is True


def _volume(host, container, opts):
    # podman-run(1) --volume "z": relabel the content shared (container_file_t) so an SELinux-confined container
    # may read it; docker run takes the same option (ignored where SELinux is off)
    return "%s:%s%s" % (host, container, ":z" if opts.get("selinux") else "")


def jit_cache_dir(inst, opts):
    """The host directory (under :data:`ENGINE_CACHE`) of a container engine's compile/JIT caches, or None.

    One per engine and image reference (pinned by digest where ``image_refs`` maps it): a new image starts
    with an empty cache instead of loading kernels built by another torch/Triton.
    """
    if opts["runtime"] == "native" or not inst.get("gpus") or not opts.get("jit_cache"):
        return None
    image = opts["image_refs"].get(inst["image"], inst["image"])
    engine = re.sub(r"[^A-Za-z0-9_.-]", "_", str(inst.get("engine") or "engine"))
    key = hashlib.sha256(str(image).encode("utf-8")).hexdigest()[:16]
    return "%s/%s/%s-%s" % (ENGINE_CACHE, JIT_CACHE_SUBDIR, engine, key)


def _jit_env(env, inst, opts):
    if jit_cache_dir(inst, opts):
        for name, sub in JIT_CACHE_ENV:
            env.setdefault(name, CONTAINER_JIT_CACHE + sub)
    return env


def _volumes(inst, opts):
    """The ``-v`` words of a container: the weights as the HF cache, and the instance's JIT cache."""
    words = ["-v", _volume(opts["weights_dir"], CONTAINER_HF_HOME, opts)]
    cache = jit_cache_dir(inst, opts)
    if cache:
        words += ["-v", _volume(cache, CONTAINER_JIT_CACHE, opts)]
    return words


def _service_pre_lines(inst, opts):
    """``[Service]`` lines every flavour shares: the JIT cache directory, and the waits before the engine starts."""
    lines = []
    cache = jit_cache_dir(inst, opts)
    if cache:
        # systemd creates it (root, 0755) before ExecStartPre=; podman run -v refuses a missing source
        lines.append("CacheDirectory=%s" % _spec(cache[len("/var/cache/"):], "jit cache"))
    if inst.get("gpus") and opts["vendor"] == "nvidia" and opts["runtime"] == "native":
        lines.append("ExecStartPre=-+%s" % exec_line(list(NVIDIA_MODPROBE)))
    if inst.get("gpus") and opts["vendor"] in WAIT_ACCELERATORS_VENDORS:
        wait = list(WAIT_READY) + ["--accelerators", opts["vendor"], str(_start_timeout(inst, opts))]
        lines.append("ExecStartPre=%s" % exec_line(wait))
    return lines


def _native_rdma_lines(inst, opts):
    """Native RDMA: unlimited locked memory and CAP_IPC_LOCK (the hardening drops every capability)."""
    if opts["runtime"] != "native" or not rdma(inst, opts):
        return []
    # systemd.exec(5): LimitMEMLOCK= (RLIMIT_MEMLOCK), AmbientCapabilities= for the unprivileged User=
    return ["LimitMEMLOCK=infinity", "AmbientCapabilities=CAP_IPC_LOCK"]


# Flags the container units write, and flags that break them when launchcard_extra_container_args (or another
# option) adds them: (the units' words, the other flag, what the runtimes do with both).
# --ipc host / --shm-size: podman refuses the pair (pkg/specgen/container_validate.go, "cannot set shmsize when
# running in the host IPC Namespace"; podman-run(1) --shm-size, "This option conflicts with --ipc=host"), docker
# ignores the size (moby daemon/container_operations_unix.go setupIPCDirs: --ipc host mounts the host's /dev/shm).
CONTAINER_FLAG_CONFLICTS = (
    (("--ipc", "host"), "--shm-size",
     "podman refuses to start such a container and docker ignores the size: under --ipc host engines use the host's "
     "/dev/shm"),
)


def _host_run_parts(opts):
    """The ``run`` options every container of a host gets besides its name, network, mounts and image, in order,
    each with the option that brings it (None: the units' own): ``--ipc host`` (vLLM's docker docs: PyTorch shares
    tensors between processes through shared memory, so the container gets the host's), podman's ``--cgroups=MODE``
    and ``--authfile PATH``. With ``container_shm_size`` the container gets ``--shm-size SIZE`` (its own IPC
    namespace) in place of ``--ipc host``, which the two runtimes do not combine (:data:`CONTAINER_FLAG_CONFLICTS`)."""
    if opts.get("container_shm_size"):
        ipc = ("container_shm_size", ["--shm-size", str(opts["container_shm_size"])])
    else:
        ipc = (None, ["--ipc", "host"])
    parts = [ipc, ("podman_cgroups", podman_cgroups_args(opts))]
    if opts["runtime"] == "podman" and opts["podman_auth_file"]:
        # podman-run(1) --authfile: the pull a start makes when the image is missing authenticates with it
        parts.append(("podman_auth_file", ["--authfile", _check(opts["podman_auth_file"], "podman_auth_file")]))
    return parts


def _has_flag(words, flag):
    """Whether ``words`` hold ``flag`` (a word, or a tuple of a flag and its value), as ``F V`` or ``F=V``."""
    if isinstance(flag, str):
        return any(w == flag or w.startswith(flag + "=") for w in words)
    name, val = flag
    return any(w == "%s=%s" % (name, val) or (w == name and words[i + 1:i + 2] == [val]) for i, w in enumerate(words))


def check_container_flags(opts):
    """Refuse run options that :data:`CONTAINER_FLAG_CONFLICTS` says break the units' own (containers only).

    :raises OptionError: naming the variable that adds the conflicting flag (``launchcard_extra_container_args``,
        or the option's own).
    """
    if opts.get("runtime") not in CONTAINER_RUNTIMES:
        return
    parts = _host_run_parts(opts) + [("extra_container_args", list(opts.get("extra_container_args") or []))]
    for ours, theirs, why in CONTAINER_FLAG_CONFLICTS:
        have = [key for key, words in parts if _has_flag(words, ours)]
        added = [key for key, words in parts if _has_flag(words, theirs)]
        if have and added:
            # an option's own flag is to blame before the units', the one that adds the other flag first
            key = ([k for k in added + have if k is not None] or [None])[0]
            var = (SPEC[key].variable or key) if key in SPEC else "the units"
            raise OptionError("%s: %s conflicts with %s (%s)" % (var, theirs, " ".join(ours), why))


def container_options(inst, opts, env):
    """The ``podman run``/``docker run`` options of an instance besides its name, network, weights mount,
    entrypoint and image, in two lists: ``--ipc host``, podman's ``--cgroups=MODE`` and ``--authfile PATH``
    (``podman_auth_file``; a Quadlet file carries it in ``PodmanArgs=``, which every Quadlet release hands to
    ``podman run``, rather than a ``[Container]`` key that older releases may lack), and the vendor's device
    flags; then ``-e NAME`` for every variable of ``env`` and every secret name, and the operator's extra
    arguments (the ``run`` units put the weights mount between the two)."""
    check_container_flags(opts)
    words = [w for dummy, part in _host_run_parts(opts) for w in part]
    if opts["runtime"] == "podman" and opts["vendor"] == "nvidia" and inst["gpus"]:
        # one CDI device name per GPU (nvidia.com/gpu=0, =1, ...; "0,1" names no device)
        names = [str(g) for g in inst["gpu_ids"]] if inst["gpu_selection"] == "visible_devices" else ["all"]
        for name in names:
            words += ["--device", "nvidia.com/gpu=%s" % name]
        if opts.get("selinux"):
            # NVIDIA container toolkit CDI guide (podman): --security-opt=label=disable, SELinux would deny the
            # container the device nodes and driver files the spec injects
            words += ["--security-opt", "label=disable"]
    else:
        words += _container_vendor_args(inst, opts)
    if rdma(inst, opts):
        words += list(RDMA_CONTAINER_ARGS)
    # docker-run(1), podman-run(1) --env NAME=VALUE: the container's environment, never the client's (the unit has
    # no Environment=), so no card variable reaches the docker or podman client, conmon or the unit's helpers
    passing = [w for name in sorted(engine_env(env)) for w in ("--env", "%s=%s" % (name, env[name]))]
    if passes_secrets(env, opts):
        # The unit reads the secrets file (EnvironmentFile=-, a missing file is fine) into the
        # client's environment and -e NAME passes each secret on, if set, without its value on the
        # command line; --env-file would fail the start when the file is absent.
        for name in SECRET_ENV_NAMES:
            passing += ["-e", name]
    return words, passing + list(opts["extra_container_args"])


def engine_env(env):
    """``env``, checked: a name :mod:`._env_policy` refuses (``LD_PRELOAD``, ``DOCKER_HOST``, ...) raises here too, for
    a plan that did not come through the card's checks (a plan file, a planner's own variable).

    :raises UnsafeValue: naming ``env.NAME`` and why.
    """
    for name in env:
        why = env_policy.refusal_message(name)
        if why:
            raise UnsafeValue("env.%s: %s" % (name, why))
    return env


def passes_secrets(env, opts):
    """Whether a unit hands the secrets file's token to its engine: only one that may download from the Hub, i.e.
    not one whose environment sets ``HF_HUB_OFFLINE`` true (``launchcard_hf_offline``, the default, or the card)."""
    return bool(opts["secrets_env_file"]) and not env_policy.offline(env)


def command(inst, options=None):
    """Return ``(exec_start_argv, exec_stop_argv_or_None, environment)``.

    - ``native``: ``/usr/bin/env NAME=VALUE... <venv>/bin/<argv[0]>`` then the card's argv (the environment on the
      engine's process alone, :data:`ENV_PROGRAM`); GPUs chosen
      with the vendor's visible-devices variable for vLLM, ``--base-gpu-id``
      (already in argv) for SGLang.
    - ``docker``/``podman``: ``run --name <id> --network host --ipc host`` (docker: ``run --rm``,
      :func:`._unit_spec.container_run`)
      (``--shm-size SIZE`` instead with ``container_shm_size``; podman: ``--cgroups=MODE`` unless
      ``podman_cgroups`` is ``enabled``),
      vendor device flags (the vendors' container guides: NVIDIA ``--gpus``,
      AMD ``--device /dev/kfd --device /dev/dri``, Ascend ``/dev/davinciN`` and
      its manager devices; NVIDIA vLLM gets only its
      GPUs, AMD/Ascend vLLM selects with the visible-devices variable), the
      weights directory
      mounted as the HF cache, ``--entrypoint argv[0]``, the image (by digest
      when ``image_refs`` maps it), then ``argv[1:]``. The engine's environment
      travels as ``--env NAME=VALUE`` (the container's, not the client's), the
      secrets as ``-e HF_TOKEN`` (value from the unit's ``EnvironmentFile=``,
      never on the command line), and only to an engine that may download
      (:func:`passes_secrets`).

    :raises UnsafeValue: argv[0] is not a plain program name (native), or a variable name :mod:`._env_policy` refuses.
    """
    opts = options_with_defaults(options)
    env = _gpu_env(inst, opts)
    argv = engine_argv(inst, opts)
    if opts["runtime"] == "native":
        exe = argv[0].rsplit("/", 1)[-1]
        if not _PLAIN_EXE.match(exe):
            raise UnsafeValue("argv[0] %r is not a plain program name" % argv[0])
        env.setdefault("HF_HOME", opts["weights_dir"])
        env.setdefault("HOME", ENGINE_CACHE)
        env.setdefault("XDG_CACHE_HOME", ENGINE_CACHE)
        if opts["hf_offline"]:
            env.setdefault("HF_HUB_OFFLINE", "1")
        assign = ["%s=%s" % (name, env[name]) for name in sorted(engine_env(env))]
        return [ENV_PROGRAM] + assign + ["%s/bin/%s" % (opts["native_venv"].rstrip("/"), exe)] + argv[1:], None, env
    binary = opts["docker_bin"] if opts["runtime"] == "docker" else opts["podman_bin"]
    image = opts["image_refs"].get(inst["image"], inst["image"])
    env["HF_HOME"] = CONTAINER_HF_HOME
    if opts["hf_offline"]:
        env.setdefault("HF_HUB_OFFLINE", "1")
    _jit_env(env, inst, opts)
    run = container_run(binary, opts["runtime"], inst["id"]) + ["--network", "host"]
    devices, passing = container_options(inst, opts, env)
    grace = str(stop_timeout(inst, opts))
    # podman-run(1), docker-run(1) --stop-timeout: what any stop of the container (an operator's `podman stop`, a
    # host shutdown) gives its main process between SIGTERM and SIGKILL, not the runtime's default 10 s
    run += devices + ["--stop-timeout", grace] + _volumes(inst, opts) + passing
    run += ["--entrypoint", argv[0], image] + argv[1:]
    # podman-stop(1), docker-stop(1): SIGTERM to the container's main process (the engine, PID 1 in the container)
    # only, SIGKILL after -t seconds: what KillMode=mixed does for a native engine
    stop = [binary, "stop", "-t", grace, inst["id"]]
    return run, stop, env


def render(inst, options=None):
    """Render the unit file text for one plan instance.

    :param inst: a plan instance (:func:`planner.plan`).
    :param options: runtime options; see :data:`._unit_spec.DEFAULTS`.
    :returns: the unit file as a str, ending in a newline.
    :raises UnsafeValue: a value would break out of its directive.
    """
    opts = options_with_defaults(options)
    if quadlet(opts):
        return render_quadlet(inst, opts)
    start, stop, env = command(inst, opts)
    grace = stop_timeout(inst, opts)
    lines = [
        "# Managed by the launchcard.inference collection; changes are overwritten.",
    ]
    if opts["runtime"] == "native" and opts.get("native_requirements"):
        # What the virtualenv holds is part of what runs: a new requirement set rewrites the file, and a
        # rewritten file restarts the unit (as an image digest does in a container's ExecStart=).
        if not re.match(r"^[0-9a-f]{16,128}$", str(opts["native_requirements"])):
            raise UnsafeValue("native_requirements must be a hex digest: %r" % opts["native_requirements"])
        lines.append("# Native virtualenv requirements: sha256 %s" % opts["native_requirements"])
    lines += [
        "[Unit]",
        "Description=%s" % _spec("launchcard %s %s (%s, %s) on %s" % (
            inst["engine"], inst["role"], inst["recipe"], inst["id"], inst["host"])),
        "Wants=network-online.target",
        "After=network-online.target",
    ] + _ready_lines(inst, opts)
    if opts["runtime"] == "docker":
        lines += ["Requires=docker.service", "After=docker.service"]
    # an engine must not start on an empty mount point (systemd.unit(5)); the directive takes a
    # space-separated list, so a path with whitespace cannot be written
    if re.search(r"\s", str(opts["weights_dir"])) or not str(opts["weights_dir"]).startswith("/"):
        raise UnsafeValue("weights_dir must be an absolute path without whitespace: %r" % opts["weights_dir"])
    lines.append("RequiresMountsFor=%s" % _spec(opts["weights_dir"], "weights_dir"))
    lines += ["StartLimitIntervalSec=%d" % START_LIMIT_INTERVAL_S, "StartLimitBurst=%d" % START_LIMIT_BURST,
              "", "[Service]", "Type=exec"]
    if passes_secrets(env, opts):
        # The same line whether or not a token is given (a run without the vault changes no
        # unit); "-": a missing file is no error. EnvironmentFile= takes a literal path
        # (specifiers only, no quotes).
        lines.append("EnvironmentFile=-%s" % _spec(opts["secrets_env_file"], "secrets_env_file"))
    lines += _service_pre_lines(inst, opts)
    if stop is not None:
        lines.append("ExecStartPre=-%s" % exec_line([start[0], "rm", "-f", inst["id"]]))
    lines.append("ExecStart=%s" % exec_line(start, wrap=True))
    if inst.get("health_url"):
        ready = list(WAIT_READY) + [inst["health_url"], str(_start_timeout(inst, opts))]
        lines.append("ExecStartPost=%s" % exec_line(ready))
    if stop is not None:
        lines.append("ExecStop=%s" % exec_line(stop))
        # podman's run has no --rm (container_run) and docker's --rm needs its client to outlive the stop:
        # the container's record is removed here ("-": none left is fine).
        lines.append("ExecStopPost=-%s" % exec_line([start[0], "rm", "-f", inst["id"]]))
    if opts["runtime"] == "native":
        check_hidden_paths(opts)
        lines += ["User=%s" % ENGINE_USER, "Group=%s" % ENGINE_USER]
        groups = DEVICE_GROUPS.get(opts["vendor"], ())
        if groups and inst["gpus"]:
            lines.append("SupplementaryGroups=%s" % " ".join(groups))
        lines += ["CacheDirectory=%s" % ENGINE_CACHE.rsplit("/", 1)[1],
                  "ReadWritePaths=%s" % _spec(opts["weights_dir"], "weights_dir")]
        hardening = list(HARDENING)
        if rdma(inst, opts):
            hardening[hardening.index("CapabilityBoundingSet=")] = "CapabilityBoundingSet=CAP_IPC_LOCK"
        lines += hardening + _native_rdma_lines(inst, opts)
    lines += _restart_lines(inst, opts, grace) + [
        "KillSignal=SIGTERM",
        # systemd.kill(5) KillMode=mixed: SIGTERM to the main process only (the engine's API server, or the
        # container client), SIGKILL to the rest of the cgroup after it exits or after TimeoutStopSec; under the
        # default control-group every process gets SIGTERM at once and vLLM's workers die under a draining
        # server (measured on vLLM 0.32: the stream ends in an in-band 500)
        "KillMode=mixed",
        "SyslogIdentifier=%s" % _spec(inst["id"]),
    ] + INSTALL_SECTION
    return "\n".join(lines)


# The end of every unit: enabled for boot.
INSTALL_SECTION = ["", "[Install]", "WantedBy=multi-user.target", ""]


def check_hidden_paths(opts):
    """Refuse, for native units, a weights directory under a path :data:`HARDENING` hides from the engine
    (:data:`HIDDEN_BY_HARDENING`).

    :raises OptionError: naming the variable, the path and the directive that hides it.
    """
    if opts.get("runtime") != "native":
        return
    path = str(opts.get("weights_dir") or "").rstrip("/") + "/"
    for directive, hidden in HIDDEN_BY_HARDENING:
        under = [h for h in hidden if path.startswith(h + "/")]
        if under and directive in HARDENING:
            raise OptionError("%s: %r is under %s, which the native units' %s hides from the engine (systemd.exec(5)); "
                              "choose a path outside %s" % (SPEC["weights_dir"].variable, opts["weights_dir"], under[0],
                                                            directive, ", ".join(hidden)))


def _ready_lines(inst, opts):
    """``After=`` the vendor's GPU readiness units, for an instance that uses GPUs (none for a router)."""
    ready = ACCELERATOR_READY_UNITS.get(opts["vendor"], ()) if inst["gpus"] else ()
    return ["After=%s" % " ".join(ready)] if ready else []


def _restart_lines(inst, opts, grace):
    """Restart and timeout directives of an engine's ``[Service]``, for a ``.service`` and a Quadlet file alike."""
    return [
        "Restart=on-failure",
        "RestartSec=%d" % RESTART_SEC,
        "TimeoutStartSec=%d" % _start_timeout(inst, opts),
        # TimeoutStopSec > container stop timeout (grace) > the engine's drain time (drain_s); systemd.service(5):
        # the whole stop, ExecStop= included, is bounded by it, then SIGKILL
        "TimeoutStopSec=%d" % (grace + STOP_UNIT_MARGIN_S),
    ]


def render_quadlet(inst, options=None):
    """Render the Quadlet ``.container`` file of one plan instance (podman >= 4.4, podman-systemd.unit(5)).

    The generator (``/usr/libexec/podman/quadlet``, run by systemd on ``daemon-reload``) makes
    ``<unit>.service`` of it: ``podman run --name ... --replace --rm -d --sdnotify=conmon`` with the
    ``[Container]`` keys, and the ``[Unit]``, ``[Service]`` and ``[Install]`` sections passed through. So:

    - the card's argv after argv[0] is ``Exec=`` and the run options ``PodmanArgs=``; Quadlet splits both
      into words by systemd's rules (quotes group, backslash escapes) and writes them into ``ExecStart=``,
      where ``%`` and ``$`` are systemd's: every word is escaped by :func:`exec_word`, as in a ``run``
      unit, so the engine gets the card's exact argv and no value adds a key or a directive;
    - the engine's environment is ``--env NAME=VALUE`` words of ``PodmanArgs=`` (escaped as every word there), never
      ``[Container] Environment=`` (Quadlet's own parser splits and drops values: podman #26259, #26542) nor
      ``[Service] Environment=`` (which would reach podman, conmon and the unit's helpers too); the secrets come
      from ``EnvironmentFile=-`` by name (``-e HF_TOKEN``), only to an engine that may download;
    - ``Image=`` and ``ContainerName=`` take one literal value, so they must be plain references.

    :raises UnsafeValue: a value would break out of its key, or the image is not a plain reference.
    """
    opts = options_with_defaults(options)
    env = _gpu_env(inst, opts)
    argv = engine_argv(inst, opts)
    env["HF_HOME"] = CONTAINER_HF_HOME
    if opts["hf_offline"]:
        env.setdefault("HF_HUB_OFFLINE", "1")
    _jit_env(env, inst, opts)
    image = opts["image_refs"].get(inst["image"], inst["image"])
    devices, passing = container_options(inst, opts, env)
    grace = stop_timeout(inst, opts)
    # --stop-timeout: what the generated ExecStop= (podman rm -f) gives the engine to drain (StopTimeout= is 5.0's)
    # --entrypoint: the card's argv[0] (Entrypoint= is 5.0's); both are podman run options since 4.x
    # No KillMode= here: Quadlet writes KillMode=mixed itself (podman pkg/systemd/quadlet/quadlet.go, "We default to
    # mixed instead of control-group, because it lets conmon do its thing"), and its ExecStop= stops the container first
    podman_args = devices + ["--stop-timeout", str(grace)] + passing + ["--entrypoint", argv[0]]
    lines = ["# Managed by the launchcard.inference collection; changes are overwritten.",
             "# Quadlet (podman-systemd.unit(5)): podman's generator makes %s of this file." % _spec(inst["unit"])]
    lines += _unit_section(inst, opts)
    lines += ["", "[Container]",
              _quadlet_key("Image", _quadlet_value(image, "image")),
              _quadlet_key("ContainerName", _quadlet_value(inst["id"], "instance id")),
              _quadlet_key("Network", "host"),
              _quadlet_key("Volume", _spec(_volume(opts["weights_dir"], CONTAINER_HF_HOME, opts), "weights_dir"))]
    cache = jit_cache_dir(inst, opts)
    if cache:
        lines.append(_quadlet_key("Volume", _spec(_volume(cache, CONTAINER_JIT_CACHE, opts), "jit cache")))
    lines.append(_quadlet_key("PodmanArgs", exec_line(podman_args, "podman_args")))
    if len(argv) > 1:
        lines.append(_quadlet_key("Exec", exec_line(argv[1:], wrap=True)))
    lines += ["", "[Service]"]
    if passes_secrets(env, opts):
        lines.append("EnvironmentFile=-%s" % _spec(opts["secrets_env_file"], "secrets_env_file"))
    lines += _service_pre_lines(inst, opts)
    if inst.get("health_url"):
        ready = list(WAIT_READY) + [inst["health_url"], str(_start_timeout(inst, opts))]
        lines.append("ExecStartPost=%s" % exec_line(ready))
    lines += _restart_lines(inst, opts, grace) + INSTALL_SECTION
    return "\n".join(lines)


def _quadlet_key(key, text):
    """``KEY=text`` of a Quadlet ``[Container]``; a key newer than :data:`QUADLET_MIN_PODMAN` (or unknown) is refused,
    since older generators drop the whole file (:data:`QUADLET_CONTAINER_KEYS`)."""
    if QUADLET_CONTAINER_KEYS.get(key, (99, 0)) > QUADLET_MIN_PODMAN:
        raise ValueError("Quadlet key %s= is not in podman %d.%d, the oldest release the units are Quadlet files on"
                         % ((key,) + QUADLET_MIN_PODMAN))
    return "%s=%s" % (key, text)


def _unit_section(inst, opts):
    """The ``[Unit]`` section of a Quadlet file (the generator passes it through)."""
    weights = str(opts["weights_dir"])
    if re.search(r"\s", weights) or not weights.startswith("/"):
        raise UnsafeValue("weights_dir must be an absolute path without whitespace: %r" % weights)
    head = ["[Unit]",
            "Description=%s" % _spec("launchcard %s %s (%s, %s) on %s" % (
                inst["engine"], inst["role"], inst["recipe"], inst["id"], inst["host"])),
            "Wants=network-online.target",
            "After=network-online.target"]
    tail = ["RequiresMountsFor=%s" % _spec(weights, "weights_dir"),
            "StartLimitIntervalSec=%d" % START_LIMIT_INTERVAL_S,
            "StartLimitBurst=%d" % START_LIMIT_BURST]
    return head + _ready_lines(inst, opts) + tail


def host_units(host_plan, options=None):
    """Render every unit of one host.

    :param host_plan: ``plan["hosts"][host]``.
    :returns: list of ``{"name": unit file name, "content": text,
        "instance": id}`` in plan order, each engine's liveness service and timer after its unit (:mod:`._liveness`).
    """
    opts = options_with_defaults(options)
    out = []
    for i in host_plan.get("instances", []):
        out.append({"name": unit_file_name(i["unit"], opts), "content": render(i, opts), "instance": i["id"]})
        out += liveness.units(i, opts, WAIT_READY)
    return out


def quadlet(options):
    """Whether the units of these options are Quadlet ``.container`` files."""
    return options.get("runtime") == "podman" and bool(options.get("podman_quadlet"))


def unit_file_name(unit, options=None):
    """The file a unit is written as: ``NAME.service`` itself, or ``NAME.container`` under Quadlet
    (the generator makes ``NAME.service`` of it on ``daemon-reload``)."""
    if quadlet(options_with_defaults(options)) and unit.endswith(".service"):
        return unit[:-len(".service")] + QUADLET_SUFFIX
    return unit
