# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus scrape targets from the plan: every engine and router the plan places, and every host's node exporter.

Pure Python, no Ansible import. The output is Prometheus file-based service discovery (``file_sd_configs``,
https://prometheus.io/docs/prometheus/latest/configuration/configuration/#file_sd_config): a JSON list of
``{"targets": ["HOST:PORT"], "labels": {NAME: VALUE}}``. Each target is its own group, labelled with what the plan
knows of it (:data:`LABELS`), so every series scraped from it carries the card, revision, recipe, instance, role,
engine, host and, when the image was resolved, its digest. ``instance`` is the plan's instance id (not Prometheus's
default ``HOST:PORT``), stable across redeploys and moves. An undeploy resolves no image: the instances it keeps carry
the digest the monitoring host's file already gives them (:func:`kept_digests`), so their series stay the same.

Where metrics are served (each fact cited beside the code that uses it):

- vLLM: ``/metrics`` on its API port, always (vllm/entrypoints/serve/instrumentator/metrics.py, 0.32.0,
  ``attach_router`` mounts it on the API app);
- SGLang: ``/metrics`` on its API port with ``--enable-metrics`` (the planner adds it, ``_recipe.METRICS_FLAGS``);
- sglang-router: its own listener, ``--prometheus-host``/``--prometheus-port`` (``_recipe`` defaults, the port
  planned like every other port);
- headless ranks (vLLM ``--headless``, SGLang ranks > 0) serve no API and no ``/metrics``, nor does a router run
  with ``--mini-lb``: no target.

A target is addressed as the monitoring host reaches it: on the monitoring host itself through loopback, elsewhere
through the host's address (a listener bound to one interface: that interface). A listener bound to loopback on
another host cannot be scraped from there: it is left out and named in the notes.
"""

from __future__ import annotations

import base64
import json
import re

from ansible_collections.launchcard.inference.plugins.plugin_utils import _gpu_exporter as gpu_exporter
from ansible_collections.launchcard.inference.plugins.plugin_utils._recipe import (
    DEFAULT_BIND,
    METRICS_FLAGS,
    ROUTER_DEFAULT_PROMETHEUS_HOST,
    argv_reader,
)

#: The labels every engine and router target carries (``image_digest`` only when the image was resolved).
LABELS = ("card", "revision", "recipe", "instance", "role", "engine", "host", "image_digest")
#: The file_sd files the collection writes: engines and routers, and the hosts' node exporters.
ENGINES_FILE = "launchcard-engines.json"
NODES_FILE = "launchcard-nodes.json"
#: The accelerator exporters' targets (``_gpu_exporter.targets``): an empty list when no host of the plan runs one.
GPUS_FILE = "launchcard-gpus.json"
#: Every file a monitoring host gets; the prometheus role has one job per file (:func:`scrape_configs`).
FILES = (ENGINES_FILE, NODES_FILE, GPUS_FILE)
#: Debian's prometheus-node-exporter (1.5.0, ``--help``): ``--web.listen-address=:9100``.
NODE_EXPORTER_PORT = 9100
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
WILDCARD = ("0.0.0.0", "::", "[::]", "")
#: The one ``image_digest`` a file read back from a monitoring host may hand on: that file is not trusted input.
KEPT_DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")
#: The labels that make a target of the file read back the same instance as one of the plan (:func:`kept_digests`).
SAME_INSTANCE = ("card", "instance", "recipe", "revision")


def _bracket(host):
    return "[%s]" % host if ":" in host and not host.startswith("[") else host


def card_of(fleet_plan, host_plan):
    """The card (``{repo, revision, slug}``) a host of the plan serves: its ``card`` of a fleet's ``cards``, or the
    single card's ``model``."""
    return (fleet_plan.get("cards") or {}).get(host_plan.get("card")) or fleet_plan.get("model") or {}


def listener(inst):
    """``(bind, port)`` where ``inst`` serves ``/metrics``, or ``(None, why)`` when it serves none."""
    kind = inst["launcher"]
    a = argv_reader(kind, inst["argv"])
    if kind == "router":
        if a.has("--mini-lb"):
            # sglang_router/launch_router.py (0.3.2) starts mini_lb.MiniLoadBalancer instead, which has no metrics
            return None, "the --mini-lb balancer serves no metrics"
        return a.get("--prometheus-host", ROUTER_DEFAULT_PROMETHEUS_HOST), inst["prometheus_port"]
    if inst.get("url") is None or inst.get("port") is None:
        return None, "a headless rank serves no API and no /metrics"
    flag = METRICS_FLAGS.get(kind)
    if flag and not a.has(flag):
        return None, "metrics are off (%s removed by launchcard_argv_overrides)" % flag
    return a.get("--host", DEFAULT_BIND[kind]), inst["port"]


def _address(inst, bind, monitor):
    """The address ``monitor`` (a host of the plan, or None: a host outside it) scrapes ``inst`` at, or None."""
    if inst["host"] == monitor:
        if bind in WILDCARD or bind in ("127.0.0.1", "localhost"):
            return "127.0.0.1"
        return "[::1]" if bind in ("::1", "[::1]") else _bracket(bind)
    if bind in LOOPBACK:
        return None
    return _bracket(inst["address"] if bind in WILDCARD else bind)


def _digest(inst, image_refs):
    ref = inst.get("image_ref") or (image_refs or {}).get(inst.get("image") or "")
    return ref.rsplit("@", 1)[1] if ref and "@" in ref else None


def read_back(registered):
    """``{(host, path): text}``: the files ``ansible.builtin.slurp`` read on the monitoring hosts, looped over the
    filter ``file_sd_files``' ``[{host, path, content}]`` (``playbooks/undeploy.yml``). An item that read nothing (no
    file, an unreachable host) or whose content is not base64 of UTF-8 text is left out."""
    results = registered.get("results") if isinstance(registered, dict) else registered
    out = {}
    for res in results if isinstance(results, list) else ():
        item = res.get("item") if isinstance(res, dict) else None
        if not isinstance(item, dict) or res.get("encoding") != "base64" or not isinstance(res.get("content"), str):
            continue
        try:
            out[(item.get("host"), item.get("path"))] = base64.b64decode(res["content"], validate=True).decode("utf-8")
        except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
            continue
    return out


def kept_digests(text):
    """``{(card, instance, recipe, revision): "sha256:..."}``: the ``image_digest`` labels of an engines file as a
    monitoring host keeps it (:data:`ENGINES_FILE`, written by an earlier run), for the instances whose digest a run
    does not know (an undeploy resolves no image: the registry may be down).

    The file is not trusted: text that is not such a file, a group without the four labels of :data:`SAME_INSTANCE`
    as strings, or a label that is not ``sha256:`` and 64 lowercase hex digits gives nothing; two groups of one
    instance with different digests give none for it. Never raises.
    """
    try:
        groups = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return {}
    kept, clashes = {}, set()
    for group in groups if isinstance(groups, list) else ():
        labels = group.get("labels") if isinstance(group, dict) else None
        if not isinstance(labels, dict):
            continue
        key, digest = tuple(labels.get(name) for name in SAME_INSTANCE), labels.get("image_digest")
        if not all(isinstance(v, str) and v for v in key) or not isinstance(digest, str) or not KEPT_DIGEST.match(digest):
            continue
        if kept.setdefault(key, digest) != digest:
            clashes.add(key)
    return dict((key, digest) for key, digest in kept.items() if key not in clashes)


def engine_targets(fleet_plan, image_refs=None, monitor=None, kept=None):
    """The engines' and routers' targets as ``monitor`` reaches them.

    :param fleet_plan: the plan (``_planner.plan_fleet``: ``cards`` and ``hosts``, each host naming its ``card``).
    :param image_refs: ``{image: "REPO@sha256:..."}`` when the images were resolved (a plan file's, the runtime
        role's); an instance's own ``image_ref`` wins.
    :param monitor: the monitoring host's inventory name when it is a host of the plan (its own instances are
        scraped through loopback), else None.
    :param kept: :func:`kept_digests` of the monitoring host's file, for an instance whose image ``image_refs`` does
        not resolve: it keeps the ``image_digest`` it had there.
    :returns: ``(groups, notes)``: the file_sd groups, sorted by instance; one line per instance left out.
    """
    groups, notes = [], []
    for host in sorted(fleet_plan.get("hosts") or {}):
        hp = fleet_plan["hosts"][host]
        card = card_of(fleet_plan, hp)
        for inst in hp["instances"]:
            bind, port = listener(inst)
            if bind is None:
                notes.append("%s: %s: no target, %s" % (host, inst["id"], port))
                continue
            addr = _address(inst, bind, monitor)
            if addr is None:
                notes.append("%s: %s: no target, its metrics listen on %s:%d only, which a monitoring host on "
                             "another machine cannot reach" % (host, inst["id"], bind, port))
                continue
            labels = {"card": card.get("slug", ""), "revision": card.get("revision", ""), "recipe": inst["recipe"],
                      "instance": inst["id"], "role": inst["role"], "engine": inst["engine"], "host": host}
            digest = _digest(inst, image_refs) or (kept or {}).get(tuple(labels[name] for name in SAME_INSTANCE))
            if digest:
                labels["image_digest"] = digest
            groups.append({"targets": ["%s:%d" % (addr, port)], "labels": labels})
    groups.sort(key=lambda g: (g["labels"]["card"], g["labels"]["instance"]))
    return groups, notes


def node_targets(fleet_plan, monitor=None, port=NODE_EXPORTER_PORT):
    """One node exporter target per host of the plan, labelled with its card, revision and host."""
    groups = []
    for host in sorted(fleet_plan.get("hosts") or {}):
        hp = fleet_plan["hosts"][host]
        card = card_of(fleet_plan, hp)
        addr = "127.0.0.1" if host == monitor else _bracket(hp["address"])
        groups.append({"targets": ["%s:%d" % (addr, port)],
                       "labels": {"card": card.get("slug", ""), "revision": card.get("revision", ""), "host": host}})
    return groups


def file_sd_files(fleet_plan, image_refs=None, monitor=None, gpu_exporters=None, kept=None):
    """``({file name: text}, notes)``: the file_sd files a monitoring host gets (:data:`FILES`), as sorted JSON with
    a final newline, so an unchanged plan rewrites nothing.

    :param gpu_exporters: ``{host: {vendor, port}}`` (``_gpu_exporter.host_settings``). With none on a host of the
        plan, :data:`GPUS_FILE` is the empty list ``[]``, not left out: Prometheus drops the targets of a file whose
        groups shrink or that disappears alike (discovery/file/file.go, ``refresh``: "Send empty updates for sources
        that disappeared", ``n > m``), and a file that is there keeps ``promtool check config`` from warning that the
        job's file does not exist (promtool 2.42.0, a run), so the exporter turned off leaves no stale target.
    :param kept: as :func:`engine_targets`.
    """
    engines, notes = engine_targets(fleet_plan, image_refs, monitor, kept)
    files = {ENGINES_FILE: engines, NODES_FILE: node_targets(fleet_plan, monitor),
             GPUS_FILE: gpu_exporter.targets(fleet_plan, gpu_exporters, monitor)}
    return dict((name, json.dumps(groups, indent=2, sort_keys=True) + "\n") for name, groups in files.items()), notes


#: Where the collection writes the file_sd files on a monitoring host (the prometheus role's scrape config reads
#: them there); ``launchcard_file_sd_dir`` moves it, for a Prometheus of the site's own.
FILE_SD_DIR = "/etc/prometheus/file_sd"


def file_sd_paths(fleet_plan, image_refs=None, monitor=None, folder=None, without=(), gpu_exporters=None, previous=None):
    """``{path: text}``: :func:`file_sd_files` under ``folder`` (default :data:`FILE_SD_DIR`), leaving out the hosts
    ``without`` names (an undeploy's: their targets leave Prometheus); with no plan every file is an empty list.
    ``previous`` (``{path: text}``, the files now on ``monitor``) keeps the digests of its engines file
    (:func:`kept_digests`) for the instances ``image_refs`` does not resolve."""
    folder = (folder or FILE_SD_DIR).rstrip("/") or "/"
    kept = kept_digests((previous or {}).get("%s/%s" % (folder, ENGINES_FILE)))
    if fleet_plan is not None and without:
        fleet_plan = dict(fleet_plan, hosts=dict((h, hp) for h, hp in (fleet_plan.get("hosts") or {}).items()
                                                 if h not in set(without)))
    if fleet_plan is None:
        files = dict((name, "[]\n") for name in FILES)
    else:
        files = file_sd_files(fleet_plan, image_refs, monitor, gpu_exporters, kept)[0]
    return dict(("%s/%s" % (folder, name), text) for name, text in sorted(files.items()))


#: The job of a monitoring host's own node exporter: the nodes file lists only the hosts the plan places.
MONITOR_NODE_JOB = "launchcard-monitor-node"


def scrape_configs(folder=None, monitor=None, recipes=None):
    """Prometheus ``scrape_configs`` entries reading the file_sd files in ``folder``: one job per file, named after it
    (``launchcard-engines``, ``launchcard-gpus``, ``launchcard-nodes``); then, for the monitoring host ``monitor``
    that runs no recipe (``launchcard_recipes``), :data:`MONITOR_NODE_JOB` scraping its own node exporter, labelled
    ``host`` (one the plan places is in the nodes file, with its card: not scraped twice)."""
    jobs = [{"job_name": path.rsplit("/", 1)[1][:-len(".json")], "file_sd_configs": [{"files": [path]}]}
            for path in sorted(file_sd_paths(None, folder=folder))]
    if monitor and not recipes:
        jobs.append({"job_name": MONITOR_NODE_JOB, "static_configs": [
            {"targets": ["127.0.0.1:%d" % NODE_EXPORTER_PORT], "labels": {"host": str(monitor)}}]})
    return jobs
