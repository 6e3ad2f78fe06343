# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The accelerator vendors' own Prometheus exporters, one container unit per host (the ``gpu_exporter`` role).

Pure Python (Ansible's boolean parser only). Each vendor's exporter runs from its image, pinned by digest as the
engines' are, with what its upstream says it needs (each fact cited beside it). :func:`render` gives the systemd unit;
:func:`host_settings` reads the inventory's ``launchcard_gpu_exporter_*`` of every host once (planning, render);
:func:`targets` the file_sd groups a monitoring host scrapes (``_scrape_targets.GPUS_FILE``), labelled with the
host, its card and the vendor.
"""

from __future__ import annotations

import re

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_spec
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_escape import UnsafeValue, _spec, exec_line

UNIT = "launchcard-gpu-exporter.service"
CONTAINER = "launchcard-gpu-exporter"
RUNTIMES = ("docker", "podman")
_DIGEST_REF = re.compile(r"^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}$")

#: Per vendor: the upstream image (the operator pins it by digest), the port and path it serves, and the
#: container options it needs.
EXPORTERS = {
    # NVIDIA/dcgm-exporter README.md (Quickstart): docker run --gpus all --cap-add SYS_ADMIN -p 9400:9400
    # nvcr.io/nvidia/k8s/dcgm-exporter:TAG; curl localhost:9400/metrics. SYS_ADMIN: DCGM's profiling metrics.
    "nvidia": {"name": "dcgm-exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter", "port": 9400,
               "path": "/metrics", "args": ["--cap-add", "SYS_ADMIN"], "command": []},
    # ROCm/device-metrics-exporter docs/index.md: docker run --device=/dev/dri --device=/dev/kfd -p 5000:5000
    # rocm/device-metrics-exporter:TAG; metrics endpoint http://localhost:5000/metrics
    "amd": {"name": "device-metrics-exporter", "image": "rocm/device-metrics-exporter", "port": 5000,
            "path": "/metrics", "args": ["--device", "/dev/dri", "--device", "/dev/kfd"], "command": []},
    # Ascend/mind-cluster component/npu-exporter: build/npu-exporter.yaml runs "npu-exporter -port=8082 -ip=0.0.0.0"
    # privileged, with /usr/local/Ascend/driver, /usr/local/dcmi and /etc/localtime mounted read-only; the image is
    # built from build/Dockerfile (no public registry: the site's own). cmd/npu-exporter/main.go: /metrics, -port
    # in [1025, 40000], -ip has no default (an empty one is refused).
    "ascend": {"name": "npu-exporter", "image": "npu-exporter", "port": 8082, "path": "/metrics",
               "args": ["--privileged", "-v", "/usr/local/Ascend/driver:/usr/local/Ascend/driver:ro",
                        "-v", "/usr/local/dcmi:/usr/local/dcmi:ro", "-v", "/etc/localtime:/etc/localtime:ro"],
               "command": ["npu-exporter", "-port={port}", "-ip=0.0.0.0"]},
}
#: The Ascend exporter's accepted ports (cmd/npu-exporter/main.go: portLeft, portRight).
ASCEND_PORTS = (1025, 40000)


class ExporterError(ValueError):
    """A setting the exporter cannot run with, naming the variable."""


def settings(vendor, image_ref, runtime=None, port=None):
    """The checked settings: ``{vendor, image_ref, runtime, port}``.

    :param runtime: ``launchcard_gpu_exporter_runtime``, else the host's ``launchcard_runtime``; empty - that
        variable's default (the unit options'); a native host runs the exporter with docker.

    :raises ExporterError: an unknown vendor or runtime, an image not pinned by digest, a port out of range.
    """
    if vendor not in EXPORTERS:
        raise ExporterError("launchcard_gpu_exporter_vendor: %r is none of %s" % (vendor, ", ".join(sorted(EXPORTERS))))
    runtime = runtime or _unit_spec.DEFAULTS["runtime"]
    runtime = "docker" if runtime == "native" else runtime
    if runtime not in RUNTIMES:
        raise ExporterError("launchcard_gpu_exporter_runtime: %r is none of %s" % (runtime, ", ".join(RUNTIMES)))
    ref = str(image_ref or "")
    if not _DIGEST_REF.match(ref):
        raise ExporterError("launchcard_gpu_exporter_image: %r is not pinned by digest (%s@sha256:<64 hex>)" % (
            ref, EXPORTERS[vendor]["image"]))
    port = EXPORTERS[vendor]["port"] if port in (None, "") else port
    try:
        port = int(port)
    except (TypeError, ValueError):
        raise ExporterError("launchcard_gpu_exporter_port: %r is not a port number" % (port,))
    low, high = ASCEND_PORTS if vendor == "ascend" else (1, 65535)
    if not low <= port <= high:
        raise ExporterError("launchcard_gpu_exporter_port: %d is outside %d-%d (%s)" % (
            port, low, high, EXPORTERS[vendor]["name"]))
    return {"vendor": vendor, "image_ref": ref, "runtime": runtime, "port": port}


def host_settings(hosts, hostvars):
    """``{host: settings}`` of the ``hosts`` whose ``launchcard_gpu_exporter_enabled`` is true, read from their
    inventory variables as the role's defaults read them (the vendor falls back to ``launchcard_accelerator_vendor``,
    the runtime to ``launchcard_runtime``).

    :param hostvars: ``{host: {variable: value}}`` (Ansible's ``hostvars``); a host missing from it runs none.
    :raises ExporterError: ``HOST: VARIABLE: why``, the first host (sorted) whose settings cannot run.
    """
    out = {}
    for host in sorted(hosts or ()):
        hv = hostvars[host] if host in hostvars else {}
        try:
            enabled = boolean(hv.get("launchcard_gpu_exporter_enabled", False), strict=True)
        except TypeError as exc:
            # ansible's boolean(strict=True) raises TypeError for a value that is no boolean
            raise ExporterError("%s: launchcard_gpu_exporter_enabled: %s" % (host, exc))
        if not enabled:
            continue
        try:
            out[host] = settings(
                hv.get("launchcard_gpu_exporter_vendor") or hv.get("launchcard_accelerator_vendor"),
                hv.get("launchcard_gpu_exporter_image"),
                hv.get("launchcard_gpu_exporter_runtime") or hv.get("launchcard_runtime"),
                hv.get("launchcard_gpu_exporter_port"))
        except ExporterError as exc:
            raise ExporterError("%s: %s" % (host, exc))
    return out


def run_argv(conf, binary):
    """The ``docker run``/``podman run`` argv of the exporter's container."""
    exp = EXPORTERS[conf["vendor"]]
    argv = _unit_spec.container_run(binary, conf["runtime"], CONTAINER)
    if conf["runtime"] == "podman" and conf["vendor"] == "nvidia":
        # podman takes NVIDIA GPUs as CDI devices (the NVIDIA container toolkit's CDI guide), as the engines' units do
        argv += ["--device", "nvidia.com/gpu=all"]
    elif conf["vendor"] == "nvidia":
        argv += ["--gpus", "all"]
    argv += list(exp["args"])
    # the port published as upstream runs it (-p PORT:PORT), the exporter listening on its own default inside
    argv += ["--publish", "%d:%d" % (conf["port"], conf["port"] if conf["vendor"] == "ascend" else exp["port"])]
    command = [w.format(port=conf["port"]) for w in exp["command"]]
    if command:
        argv += ["--entrypoint", command[0], conf["image_ref"]] + command[1:]
    else:
        argv.append(conf["image_ref"])
    return argv


def render(conf, docker_bin=None, podman_bin=None):
    """The exporter's systemd unit text (a container in the foreground, removed when it stops).

    :param docker_bin: ``launchcard_docker_bin``, the engines' client (None: the unit option's default).
    :param podman_bin: ``launchcard_podman_bin`` likewise.
    :raises UnsafeValue: a value would break out of its directive.
    :raises ValueError: a client path the unit options refuse, naming its variable.
    """
    key, raw = ("docker_bin", docker_bin) if conf["runtime"] == "docker" else ("podman_bin", podman_bin)
    binary = _unit_spec.DEFAULTS[key] if raw is None else _unit_spec.value(key, raw)
    exp = EXPORTERS[conf["vendor"]]
    lines = ["# Managed by the launchcard.inference collection; changes are overwritten.", "[Unit]",
             "Description=%s" % _spec("launchcard %s (%s accelerator metrics)" % (exp["name"], conf["vendor"])),
             "Wants=network-online.target", "After=network-online.target"]
    if conf["runtime"] == "docker":
        lines += ["Requires=docker.service", "After=docker.service"]
    lines += ["", "[Service]", "Type=exec",
              "ExecStartPre=-%s" % exec_line([binary, "rm", "-f", CONTAINER]),
              "ExecStart=%s" % exec_line(run_argv(conf, binary), wrap=True),
              "ExecStop=%s" % exec_line([binary, "stop", "-t", "10", CONTAINER]),
              "ExecStopPost=-%s" % exec_line([binary, "rm", "-f", CONTAINER]),
              "Restart=on-failure", "RestartSec=10s", "SyslogIdentifier=%s" % CONTAINER,
              "", "[Install]", "WantedBy=multi-user.target", ""]
    return "\n".join(lines)


def _bracket(host):
    return "[%s]" % host if ":" in host and not host.startswith("[") else host


def targets(fleet_plan, exporters, monitor=None):
    """The exporters' file_sd groups, one per host of the plan whose exporter is on.

    :param exporters: ``{host: {"vendor": ..., "port": ...}}`` of the hosts that run one (``settings``' output).
    :param monitor: the monitoring host (its own exporter scraped through loopback).
    """
    groups = []
    cards = fleet_plan.get("cards") or {}
    for host in sorted(fleet_plan.get("hosts") or {}):
        conf = (exporters or {}).get(host)
        if not conf:
            continue
        hp = fleet_plan["hosts"][host]
        card = cards.get(hp.get("card")) or fleet_plan.get("model") or {}
        addr = "127.0.0.1" if host == monitor else _bracket(hp["address"])
        groups.append({"targets": ["%s:%d" % (addr, int(conf["port"]))],
                       "labels": {"card": card.get("slug", ""), "host": host, "vendor": conf["vendor"]}})
    return groups


__all__ = ["EXPORTERS", "ExporterError", "UnsafeValue", "host_settings", "render", "run_argv", "settings", "targets"]
