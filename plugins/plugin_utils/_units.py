# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render systemd units from plan instances, escaping every card value.

Pure Python, no Ansible import. Escaping follows systemd.service(5),
"Command lines", and systemd.exec(5), ``Environment=``:

- in ``ExecStart=`` a word is quoted with double quotes when it is empty or
  holds whitespace, a quote, a backslash or ``;``; inside quotes ``\\`` and
  ``"`` are backslash-escaped; ``%`` becomes ``%%`` (specifiers) and ``$``
  becomes ``$$`` (variable expansion) everywhere;
- ``Environment="KEY=VALUE"`` expands ``%`` specifiers but not ``$``;
- a newline ends a directive, so any control character in a value is refused
  (:class:`UnsafeValue`) even though the card schema already rejects them.

Card values therefore reach the engine as the exact argv the card wrote and
can never add a directive or run a shell.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NEEDS_QUOTES = re.compile(r"[\s\"'\\;]")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PLAIN_EXE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]*$")

RUNTIMES = ("docker", "podman", "native")
VENDORS = ("nvidia", "amd", "ascend", "none")
VISIBLE_DEVICES_ENV = {"nvidia": "CUDA_VISIBLE_DEVICES", "amd": "HIP_VISIBLE_DEVICES",
                       "ascend": "ASCEND_RT_VISIBLE_DEVICES"}
CONTAINER_HF_HOME = "/root/.cache/huggingface"

DEFAULTS = {
    "runtime": "docker",
    "vendor": "nvidia",
    "docker_bin": "/usr/bin/docker",
    "podman_bin": "/usr/bin/podman",
    "native_venv": "/opt/launchcard/venv",
    "weights_dir": "/var/lib/launchcard/models",
    "hf_offline": True,
    "secrets_env_file": None,
    "image_refs": {},
    "start_timeout_s": 1800,
    "stop_timeout_s": 60,
    "amd_render_gid": None,
    "ascend_device_count": 8,
    "extra_container_args": [],
}


class UnsafeValue(ValueError):
    """A value that cannot be written into a unit safely (names the field)."""


def _check(value, what):
    value = str(value)
    if _CONTROL.search(value):
        raise UnsafeValue("%s contains a control character (newline, tab, NUL...): %r" % (what, value[:60]))
    return value


def exec_word(word, what="argv"):
    """Escape one argv word for ``ExecStart=``.

    :raises UnsafeValue: the word holds a control character.
    """
    w = _check(word, what).replace("%", "%%").replace("$", "$$")
    if w == "" or _NEEDS_QUOTES.search(w):
        w = '"' + w.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return w


def exec_line(argv, what="argv", wrap=False):
    """Join an argv into an ``ExecStart=`` value, each word escaped.

    With ``wrap``, every option (a word starting with ``-``) after the first
    word starts a continuation line (`` \\`` + newline + 4 spaces), so a
    long command reads, and diffs, one option per line. systemd joins
    continuation lines with a space (systemd.syntax(7)), so the words are
    the same either way.
    """
    words = [exec_word(w, "%s[%d]" % (what, i)) for i, w in enumerate(argv)]
    if not wrap:
        return " ".join(words)
    out = words[:1]
    for raw, word in zip(argv[1:], words[1:]):
        out.append((" \\\n    " if raw.startswith("-") else " ") + word)
    return "".join(out)


def env_assignment(name, value):
    """Render one ``Environment=`` value, quoted, ``%`` doubled.

    :raises UnsafeValue: ``name`` is not an identifier or a control
        character is present.
    """
    if not _ENV_NAME.match(name):
        raise UnsafeValue("environment name %r is not an identifier" % name)
    v = _check(value, "env.%s" % name)
    v = v.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return '"%s=%s"' % (name, v)


def _spec(text, what="description"):
    return _check(text, what).replace("%", "%%")


def options_with_defaults(options):
    """Return ``options`` merged over :data:`DEFAULTS`, validated.

    :raises ValueError: unknown runtime or vendor.
    """
    opts = dict(DEFAULTS)
    opts.update({k: v for k, v in (options or {}).items() if v is not None})
    if opts["runtime"] not in RUNTIMES:
        raise ValueError("runtime must be one of %s, found %r" % (", ".join(RUNTIMES), opts["runtime"]))
    if opts["vendor"] not in VENDORS:
        raise ValueError("vendor must be one of %s, found %r" % (", ".join(VENDORS), opts["vendor"]))
    return opts


def _start_timeout(inst, opts):
    ready = inst["env"].get("VLLM_ENGINE_READY_TIMEOUT_S")
    try:
        ready = int(ready) if ready is not None else 0
    except ValueError:
        ready = 0
    # TimeoutStartSec (systemd.service(5)) must exceed the engine's readiness
    # timeout plus the time to start the image, or systemd kills a loading engine.
    return max(int(opts["start_timeout_s"]), ready + 300)


def _container_vendor_args(inst, opts):
    vendor = opts["vendor"]
    if not inst["gpus"] or vendor == "none":
        return []
    if vendor == "nvidia":
        if inst["gpu_selection"] == "visible_devices":
            return ["--gpus", '"device=%s"' % ",".join(str(g) for g in inst["gpu_ids"])]
        return ["--gpus", "all"]
    if vendor == "amd":
        args = ["--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video",
                "--cap-add", "SYS_PTRACE", "--security-opt", "seccomp=unconfined"]
        if opts["amd_render_gid"] is not None:
            args += ["--group-add", str(opts["amd_render_gid"])]
        return args
    args = []
    for i in range(int(opts["ascend_device_count"])):
        args += ["--device", "/dev/davinci%d" % i]
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


def command(inst, options=None):
    """Return ``(exec_start_argv, exec_stop_argv_or_None, environment)``.

    - ``native``: ``<venv>/bin/<argv[0]>`` then the card's argv; GPUs chosen
      with the vendor's visible-devices variable for vLLM, ``--base-gpu-id``
      (already in argv) for SGLang.
    - ``docker``/``podman``: ``run --rm --name <id> --network host --ipc host``,
      vendor device flags (the vendors' container guides: NVIDIA ``--gpus``,
      AMD ``--device /dev/kfd --device /dev/dri``, Ascend ``/dev/davinciN`` and
      its manager devices; NVIDIA vLLM gets only its
      GPUs, AMD/Ascend vLLM selects with the visible-devices variable), the
      weights directory
      mounted as the HF cache, ``--entrypoint argv[0]``, the image (by digest
      when ``image_refs`` maps it), then ``argv[1:]``. Card env travels as
      ``-e NAME`` (value from the unit's ``Environment=``), secrets as
      ``--env-file``, never on the command line.

    :raises UnsafeValue: argv[0] is not a plain program name (native).
    """
    opts = options_with_defaults(options)
    env = _gpu_env(inst, opts)
    argv = list(inst["argv"])
    if opts["runtime"] == "native":
        exe = argv[0].rsplit("/", 1)[-1]
        if not _PLAIN_EXE.match(exe):
            raise UnsafeValue("argv[0] %r is not a plain program name" % argv[0])
        env.setdefault("HF_HOME", opts["weights_dir"])
        if opts["hf_offline"]:
            env.setdefault("HF_HUB_OFFLINE", "1")
        return ["%s/bin/%s" % (opts["native_venv"].rstrip("/"), exe)] + argv[1:], None, env
    binary = opts["docker_bin"] if opts["runtime"] == "docker" else opts["podman_bin"]
    image = opts["image_refs"].get(inst["image"], inst["image"])
    run = [binary, "run", "--rm", "--name", inst["id"], "--network", "host", "--ipc", "host"]
    if opts["runtime"] == "podman" and opts["vendor"] == "nvidia" and inst["gpus"]:
        # one CDI device name per GPU (nvidia.com/gpu=0, =1, ...; "0,1" names no device)
        names = [str(g) for g in inst["gpu_ids"]] if inst["gpu_selection"] == "visible_devices" else ["all"]
        for name in names:
            run += ["--device", "nvidia.com/gpu=%s" % name]
    else:
        run += _container_vendor_args(inst, opts)
    env["HF_HOME"] = CONTAINER_HF_HOME
    if opts["hf_offline"]:
        env.setdefault("HF_HUB_OFFLINE", "1")
    run += ["-v", "%s:%s" % (opts["weights_dir"], CONTAINER_HF_HOME)]
    for name in sorted(env):
        run += ["-e", name]
    if opts["secrets_env_file"]:
        run += ["--env-file", opts["secrets_env_file"]]
    run += list(opts["extra_container_args"])
    run += ["--entrypoint", argv[0], image] + argv[1:]
    stop = [binary, "stop", "-t", str(int(opts["stop_timeout_s"])), inst["id"]]
    return run, stop, env


def render(inst, options=None):
    """Render the unit file text for one plan instance.

    :param inst: a plan instance (:func:`planner.plan`).
    :param options: runtime options; see :data:`DEFAULTS`.
    :returns: the unit file as a str, ending in a newline.
    :raises UnsafeValue: a value would break out of its directive.
    """
    opts = options_with_defaults(options)
    start, stop, env = command(inst, opts)
    stop_timeout = int(opts["stop_timeout_s"])
    lines = [
        "# Managed by the launchcard.inference collection; changes are overwritten.",
        "[Unit]",
        "Description=%s" % _spec("launchcard %s %s (%s, %s) on %s" % (
            inst["engine"], inst["role"], inst["recipe"], inst["id"], inst["host"])),
        "Wants=network-online.target",
        "After=network-online.target",
    ]
    if opts["runtime"] == "docker":
        lines += ["Requires=docker.service", "After=docker.service"]
    lines += ["StartLimitIntervalSec=0", "", "[Service]", "Type=exec"]
    for name in sorted(env):
        lines.append("Environment=%s" % env_assignment(name, env[name]))
    if opts["secrets_env_file"] and opts["runtime"] == "native":
        # EnvironmentFile= takes a literal path (specifiers only, no quotes).
        lines.append("EnvironmentFile=-%s" % _spec(opts["secrets_env_file"], "secrets_env_file"))
    if stop is not None:
        lines.append("ExecStartPre=-%s" % exec_line([start[0], "rm", "-f", inst["id"]]))
    lines.append("ExecStart=%s" % exec_line(start, wrap=True))
    if stop is not None:
        lines.append("ExecStop=%s" % exec_line(stop))
    lines += [
        "Restart=on-failure",
        "RestartSec=10",
        "TimeoutStartSec=%d" % _start_timeout(inst, opts),
        # TimeoutStopSec > container stop timeout > the engine's drain time.
        "TimeoutStopSec=%d" % (stop_timeout + 30),
        "KillSignal=SIGTERM",
        "SyslogIdentifier=%s" % _spec(inst["id"]),
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ]
    return "\n".join(lines)


def host_units(host_plan, options=None):
    """Render every unit of one host.

    :param host_plan: ``plan["hosts"][host]``.
    :returns: list of ``{"name": unit file name, "content": text,
        "instance": id}`` in plan order.
    """
    return [{"name": i["unit"], "content": render(i, options), "instance": i["id"]}
            for i in host_plan.get("instances", [])]
