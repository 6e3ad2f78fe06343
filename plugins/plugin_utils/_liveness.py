# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Liveness units: per engine a timer and the oneshot service it fires, which probes the engine and restarts its
unit after repeated failures (docs/observability.md, "Liveness").

vLLM's ``/health`` can answer 200 while its engine core hangs (vllm-project/vllm#39863), so an engine is probed
with a real 1-token completion; a router (sglang-router, regular or PD mode) with its worker list (``GET
/workers``, :mod:`..module_utils._router`): it fails when the router lists fewer workers than its argv names.
``--mini-lb`` has no worker API (sglang_router mini_lb.py serves no ``/workers``) and a PD prefill or decode engine
cannot complete a request alone: neither gets a timer. The probe is the units' readiness helper
(``wait-ready.py --liveness``), shipped by the units role.

Pure Python, no Ansible import.
"""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.plugin_utils._textfile import TEXTFILE_DIR
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_escape import _spec, exec_line
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_spec import OptionError, SPEC

# where the probe keeps its count of failures in a row and of its restarts (StateDirectory=, under /var/lib)
STATE_SUBDIR = "launchcard/liveness"
HOST_LOCK = "lock.json"
SUFFIX = "-liveness"
# The probe runs as root (systemctl restart needs it) with no capability and a read-only view of the host
# (systemd.exec(5)); it writes only its state directory and the textfile directory, and cannot read the secrets.
HARDENING = (
    "NoNewPrivileges=yes",
    "ProtectSystem=strict",
    "ProtectHome=yes",
    "PrivateTmp=yes",
    "PrivateDevices=yes",
    "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes",
    "ProtectKernelLogs=yes",
    "ProtectControlGroups=yes",
    "ProtectClock=yes",
    "ProtectHostname=yes",
    "RestrictSUIDSGID=yes",
    "RestrictRealtime=yes",
    "RestrictNamespaces=yes",
    "LockPersonality=yes",
    "MemoryDenyWriteExecute=yes",
    "SystemCallArchitectures=native",
    "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
    "CapabilityBoundingSet=",
    "SystemCallFilter=@system-service",
    "SystemCallErrorNumber=EPERM",
    # node_exporter (its own user) reads the textfile
    "UMask=0022",
)
# systemd gives the oneshot this long beyond the probe's own timeout (the systemctl calls; the restart is queued)
TIMEOUT_MARGIN_S = 30


def kind(inst):
    """``completion``, ``workers`` or None (no liveness: a PD prefill, decode or encoder, a ``--mini-lb`` router,
    an instance without a health URL)."""
    if not inst.get("health_url") or inst.get("probe") != "completion":
        return None
    if inst.get("role") == "router":
        return None if "--mini-lb" in inst.get("argv", ()) else "workers"
    return "completion"


def worker_count(argv):
    """How many workers a router's argv names: its ``http(s)://`` words (``--worker-urls``, ``--prefill URL
    [PORT]``, ``--decode URL``; sglang_router/router_args.py)."""
    return sum(1 for word in argv if str(word).startswith(("http://", "https://")))


def enabled(inst, opts):
    """Whether ``inst`` gets liveness units: it has a :func:`kind` and ``launchcard_liveness_recipes`` does not turn
    its recipe off.

    :raises OptionError: a value of ``launchcard_liveness_recipes`` that is not a boolean, naming its key.
    """
    if kind(inst) is None:
        return False
    per = opts.get("liveness_recipes") or {}
    value = per.get(inst["recipe"], True)
    if not isinstance(value, bool):
        raise OptionError("%s[%s] must be true or false, found %r" % (
            SPEC["liveness_recipes"].variable, inst["recipe"], value))
    return value


def is_liveness(name):
    """Whether a unit file name is a liveness unit's (:func:`names`), not an engine's."""
    return name.endswith((SUFFIX + ".service", SUFFIX + ".timer"))


def names(inst):
    """``(service, timer)`` file names of ``inst``'s liveness units: ``<engine unit>-liveness.{service,timer}``
    (systemd.timer(5): a timer fires the service of its own name)."""
    base = inst["unit"][:-len(".service")] + SUFFIX
    return base + ".service", base + ".timer"


def probe_argv(inst, opts, helper):
    """The liveness probe's command line: ``helper`` (the readiness helper's, ``_units.WAIT_READY``) ``--liveness``."""
    base = inst["health_url"].rsplit("/", 1)[0]
    argv = list(helper) + ["--liveness", "--unit", inst["unit"], "--timeout", str(opts["liveness_timeout_s"]),
                           "--failures", str(opts["liveness_failures"]),
                           "--lock", "%s/%s" % (str(opts["lock_dir"]).rstrip("/"), HOST_LOCK),
                           "--state-dir", "/var/lib/" + STATE_SUBDIR, "--textfile-dir", TEXTFILE_DIR]
    if kind(inst) == "workers":
        return argv + ["--workers-url", base + "/workers", "--expect-workers", str(worker_count(inst["argv"]))]
    # vllm/entrypoints/openai/api_server.py and sglang's http_server.py: POST /v1/completions
    return argv + ["--completion-url", base + "/v1/completions", "--model", inst["served_model"]]


def render_service(inst, opts, helper):
    """The oneshot service the timer fires."""
    lines = ["# Managed by the launchcard.inference collection; changes are overwritten.",
             "[Unit]",
             "Description=%s" % _spec("launchcard liveness probe of %s" % inst["unit"]),
             "After=%s" % _spec(inst["unit"]),
             "",
             "[Service]",
             "Type=oneshot",
             "ExecStart=%s" % exec_line(probe_argv(inst, opts, helper), wrap=True),
             "TimeoutStartSec=%d" % (int(opts["liveness_timeout_s"]) + TIMEOUT_MARGIN_S),
             "StateDirectory=%s" % STATE_SUBDIR,
             # "-": a host without node_exporter has no such directory; the probe then writes no textfile
             "ReadWritePaths=-%s" % TEXTFILE_DIR]
    if opts.get("secrets_env_file"):
        # the probe needs no token (it asks the engine's own port): it cannot open the secrets file
        lines.append("InaccessiblePaths=-%s" % _spec(opts["secrets_env_file"], "secrets_env_file"))
    lines += list(HARDENING) + ["SyslogIdentifier=%s" % _spec(names(inst)[0][:-len(".service")]), ""]
    return "\n".join(lines)


def render_timer(inst, opts):
    """The timer: first ``liveness_interval_s`` after it starts, then that long after each probe started."""
    every = int(opts["liveness_interval_s"])
    return "\n".join(["# Managed by the launchcard.inference collection; changes are overwritten.",
                      "[Unit]",
                      "Description=%s" % _spec("launchcard liveness timer of %s" % inst["unit"]),
                      "",
                      "[Timer]",
                      "OnActiveSec=%d" % every,
                      "OnUnitActiveSec=%d" % every,
                      "AccuracySec=1s",
                      "",
                      "[Install]",
                      "WantedBy=timers.target",
                      ""])


def units(inst, opts, helper):
    """The liveness unit files of one instance (``[]`` without liveness), as :func:`._units.host_units` rows;
    ``helper``: the readiness helper's command (``_units.WAIT_READY``)."""
    if not enabled(inst, opts):
        return []
    service, timer = names(inst)
    return [{"name": service, "content": render_service(inst, opts, helper), "instance": inst["id"]},
            {"name": timer, "content": render_timer(inst, opts), "instance": inst["id"]}]
