# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner: card model + placement -> what runs where.

Pure Python, no Ansible import. Input is the card model from
:func:`card.load_card` and a placement (which hosts run which recipes).
Output is a plan: for every host, the instances it runs, each with its GPU
ids, ports, and a final argv in which every peer reference (encoder URLs,
router prefill/decode lists with bootstrap ports, multi-node ranks and init
address) points at the placed hosts.

Fidelity rule: when the placement matches the card's own (every peer on the
same host, the card's ports free, the card's GPU offsets), the final argv is
the card's argv token for token, plus the revision pin. Otherwise only these
tokens change, and each change is listed in the instance's ``changes``:

- the site's ``launchcard_argv_overrides`` of the host the instance lands on
  (:mod:`_overrides`), applied first: everything below is planned from the
  effective argv they give;
- ``--revision <hf.revision>`` appended to every engine that loads ``hf.repo``
  and does not name it already (vLLM ``--tokenizer-revision`` and SGLang
  ``--speculative-draft-model-revision`` where those name ``hf.repo`` too;
  routers none; :func:`recipe.hub_pins`, read from the effective argv): the
  weights role stages the revision by commit hash, which an offline engine
  finds only by that hash;
- ``--port`` / ``--disaggregation-bootstrap-port`` / router ``--prometheus-port``
  when the card's port is taken on that host by an earlier instance;
- ``--enable-metrics`` appended to every SGLang engine that does not write it (``_recipe.METRICS_FLAGS``):
  metrics on by default, unless the host's overrides ``remove`` it;
- ``--base-gpu-id`` (SGLang) to the first GPU the planner assigned;
- ``--encoder-urls``, router ``--prefill URL PORT`` / ``--decode URL`` /
  ``--worker-urls``: one entry per placed peer instance;
- ``--host 0.0.0.0`` added when a server bound to loopback by default must be
  reached from another host (a prefill also when a decode on another host
  dials its bootstrap server, which binds ``--host``);
- a PD router's ``--prefill`` URL is the prefill's routable address whenever
  a decode runs on another host than the prefill (the router hands the URL's
  host to the decode as ``bootstrap_host``); a vLLM prefill/decode behind the
  SGLang PD router is refused;
- multi-node: ``--node-rank``, ``--dist-init-addr HOST:PORT`` (SGLang),
  ``--master-addr``, ``--master-port`` when its port moved, ``--headless``
  added on ranks > 0 and removed on rank 0 (vLLM). Rank 0 holds the init
  port like any other port (SGLang: the block P .. P+6 it opens from it, see
  ``SGLANG_DIST_INIT_PORT_SPAN``), so two groups whose rank 0 shares a host
  get different ones. SGLang ranks > 0 hold ``--port`` (their dummy
  ``/health``, probed). A vLLM data parallel group over nodes (``-dpl`` <
  ``-dp``) is placed the same way: ``--data-parallel-address`` the head,
  ``--data-parallel-rpc-port`` held there, ``--headless`` and
  ``--data-parallel-start-rank k x dpl`` on node k;
- environment: ``CUDA_VISIBLE_DEVICES`` is never written into argv; vLLM
  instances select GPUs through the runtime (see :mod:`units`), and vLLM NIXL
  instances get ``VLLM_NIXL_SIDE_CHANNEL_HOST``/``_PORT`` (a port held per
  local DP rank: vLLM listens on the base + its DP index).
"""

from __future__ import annotations

import functools
import json
from urllib.parse import urlsplit

from ansible_collections.launchcard.inference.plugins.plugin_utils import _card_issues as card_issues
from ansible_collections.launchcard.inference.plugins.plugin_utils import _overrides as overrides
from ansible_collections.launchcard.inference.plugins.plugin_utils._recipe import (
    FORMER_ROLES,
    METRICS_FLAGS,
    VLLM_DEFAULT_NIXL_SIDE_CHANNEL_PORT,
    VLLM_DP_GROUP_FLAGS,
    argv_reader,
    current_name,
)
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import worker_ready_timeout

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
#: What preflight reads of a recipe model beyond the plan (``module_utils/_preflight.py``): an instance whose
#: host overrides its recipe's argv carries them as ``recipe_facts``, read from its effective argv.
RECIPE_FACTS = ("tensor_parallel_size", "pipeline_parallel_size", "quantization", "pd_disaggregation",
                "worker_urls", "encoder_urls", "data_parallel_size", "prefill_context_parallel_size")
UNIT_PREFIX = "launchcard-"


class PlanError(ValueError):
    """A placement the planner refuses; ``errors`` lists ``(where, message)``."""

    def __init__(self, errors):
        self.errors = list(errors)
        super().__init__("the placement cannot be planned:\n  " +
                         "\n  ".join("%s: %s" % e for e in self.errors))


def normalize_placement(hosts):
    """Turn inventory-style host entries into the planner's placement.

    :param hosts: list of ``(host, vars)`` in inventory order, where ``vars``
        holds ``address`` (str), ``recipes`` (list of recipe names, indexes,
        or ``{"name": ..., "replicas": N}`` dicts; may be empty) and
        optionally ``gpus`` (int, GPUs the host has, when known) and
        ``argv_overrides`` (the host's ``launchcard_argv_overrides``, checked
        against its card by :func:`plan`).
    :returns: list of ``{"host", "address", "gpus", "recipes": [{"ref", "replicas"}]}``, with
        ``argv_overrides`` where the host has them.
    :raises PlanError: a malformed entry (the message names the host and the
        ``launchcard_recipes`` element).
    """
    out, errors = [], []
    for host, hv in hosts:
        refs = []
        raw = hv.get("recipes") or []
        if not isinstance(raw, (list, tuple)):
            errors.append((host, "launchcard_recipes must be a list, found %r" % (raw,)))
            continue
        for i, item in enumerate(raw):
            where = "%s: launchcard_recipes[%d]" % (host, i)
            if isinstance(item, dict):
                ref, replicas = item.get("name", item.get("index")), item.get("replicas", 1)
            else:
                ref, replicas = item, 1
            if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
                errors.append((where, "replicas must be an integer >= 1, found %r" % (replicas,)))
                continue
            if isinstance(ref, bool) or not isinstance(ref, (str, int)):
                errors.append((where, "expected a recipe name or index, found %r" % (ref,)))
                continue
            refs.append({"ref": ref, "replicas": replicas})
        gpus = hv.get("gpus")
        if isinstance(gpus, str) and gpus.strip().isdigit():
            # `-e launchcard_gpus=8` and INI host lines pass strings: a plain decimal count is a count
            gpus = int(gpus.strip())
        if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0):
            errors.append((host, "launchcard_gpus must be a non-negative integer, found %r" % (gpus,)))
        out.append({"host": host, "address": str(hv.get("address") or host), "gpus": gpus, "recipes": refs})
        if hv.get("argv_overrides") is not None:
            out[-1]["argv_overrides"] = hv["argv_overrides"]
    if errors:
        raise PlanError(errors)
    return out


def plan(card, placement):
    """Plan a card onto hosts.

    :param card: the card model (:func:`card.load_card`).
    :param placement: output of :func:`normalize_placement`.
    :returns: ``{"model": {...}, "hosts": {host: {"address", "gpus",
        "gpus_needed", "instances": [instance, ...]}}, "deprecations": [str]}``;
        hosts that run nothing of this card are left out; ``deprecations``
        names each recipe reference that used a former role name
        (``vllm-monolithic``, still planned as ``vllm-aggregated``). An instance is a dict with
        ``id``, ``unit``, ``recipe``, ``engine``, ``role``, ``launcher``,
        ``host``, ``address``, ``replica``, ``nnodes``, ``node_rank``,
        ``gpu_ids`` (list of int), ``gpu_selection``
        (``base_gpu_id`` | ``visible_devices`` | ``none``), ``port``,
        ``bootstrap_port``, ``prometheus_port`` (routers; else None),
        ``dist_init_port`` (multi-node: the port rank 0 listens on for its
        group, ``--dist-init-addr`` / ``--master-port``; else None),
        ``ports`` (every port the instance holds on its host, a list of
        ``{"port", "what"}``: what preflight checks free),
        ``former_units`` (the instance's unit names under former role
        names, e.g. ``...-vllm-monolithic-0.service``: a port one of them
        holds is this instance's for preflight, since the upgrade prunes
        it before starting this one),
        ``url``, ``health_url`` (None on headless ranks), ``probe``
        (``completion`` where a request can be served end to end, else
        ``health``; ``none`` on headless ranks), ``served_model``,
        ``image``, ``argv``, ``env``, ``changes`` (list of str).
    :raises PlanError: unknown recipe names, a decode with no prefill, a
        router with no workers, a language server with no encoder, a
        multi-node recipe on a host count that is not a multiple of
        ``--nnodes``, more GPUs than a host declares, a loopback-bound
        server that a peer on another host must reach.
    """
    recipes = card["recipes"]
    by_name = {r["name"]: r for r in recipes}
    errors = []
    deprecations = []
    model = card["model"]
    effective, host_specs = _site_overrides(recipes, placement, errors, deprecations, model)
    if errors:
        raise PlanError(errors)

    # 1. resolve references and build instances ---------------------------
    assigned = {}  # recipe name -> list of hosts (one per replica)
    for entry in placement:
        for item in entry["recipes"]:
            ref = item["ref"]
            r = by_name.get(ref) if isinstance(ref, str) else (recipes[ref] if 0 <= ref < len(recipes) else None)
            if r is None and current_name(ref) in by_name:
                r = by_name[current_name(ref)]
                deprecations.append("%s: launchcard_recipes names %r; the role is now called 'aggregated' "
                                    "(aggregated serving): write %r" % (entry["host"], ref, r["name"]))
            if r is None:
                errors.append((entry["host"], "launchcard_recipes: " + card_issues.no_recipe(ref, by_name)))
                continue
            r = effective(entry["host"], r)
            if r["nnodes"] > 1 and item["replicas"] != 1:
                errors.append((entry["host"], "%s spans %d nodes; list it once per host instead of replicas" % (
                    r["name"], r["nnodes"])))
                continue
            assigned.setdefault(r["name"], []).extend([entry["host"]] * item["replicas"])
    if errors:
        raise PlanError(errors)

    hosts = {e["host"]: {"address": e["address"], "gpus": e["gpus"], "gpus_needed": 0, "instances": []}
             for e in placement}
    instances = []
    for r in recipes:
        placed = assigned.get(r["name"], [])
        if not placed:
            continue
        card_recipe = r
        keys = sorted({overrides.spec_key(host_specs[h].get(r["name"])) for h in placed})
        r = effective(placed[0], card_recipe)
        if r["nnodes"] > 1 and len(keys) > 1:
            # one group's ranks must run one command line; per-host overrides could split it
            errors.append((r["name"], "spans %d nodes, so its %s must be the same on every host it is placed on "
                           "(%s): set it for their group, not per host" % (
                               r["nnodes"], overrides.VARIABLE, ", ".join(sorted(set(placed))))))
            continue
        if r["nnodes"] > 1:
            if len(placed) % r["nnodes"]:
                errors.append((r["name"], "spans --nnodes %d but is placed on %d host(s): %s" % (
                    r["nnodes"], len(placed), ", ".join(placed))))
                continue
            groups = [placed[i:i + r["nnodes"]] for i in range(0, len(placed), r["nnodes"])]
        else:
            groups = [[h] for h in placed]
        for replica, group in enumerate(groups):
            for rank, host in enumerate(group):
                inst = _instance(effective(host, card_recipe), model, host, hosts[host]["address"], replica, rank, group)
                # a port the site pins is never moved (_take_port): a collision is the override's error
                inst["_pinned"] = overrides.set_paths(inst["launcher"], card_recipe["name"],
                                                      host_specs.get(host, {}).get(card_recipe["name"]))
                instances.append(inst)
    if errors:
        raise PlanError(errors)

    # 2. GPUs and ports, host by host, in recipe order ----------------------
    for inst in instances:
        h = hosts[inst["host"]]
        h["instances"].append(inst)
    for name, h in hosts.items():
        _assign_resources(name, h, errors)
    if errors:
        raise PlanError(errors)

    # 3. peers ----------------------------------------------------------------
    # the rank-0 instances of each role, in plan order: looked up once, not per instance
    heads = {}
    for inst in instances:
        if inst["node_rank"] == 0:
            heads.setdefault(inst["role"], []).append(inst)
    memo = {}
    for inst in instances:
        _rewrite_peers(inst, instances, heads, hosts, errors, memo)
    if errors:
        raise PlanError(errors)
    for inst in instances:
        inst.pop("_recipe")
        inst.pop("_group")
        inst.pop("_opened_for_decodes", None)
        inst.pop("_pinned", None)
        facts = inst.pop("_recipe_facts")
        if facts is not None:
            inst["recipe_facts"] = facts
    return {
        "model": {"repo": model["repo"], "revision": model["revision"], "slug": model["slug"]},
        "hosts": {n: h for n, h in hosts.items() if h["instances"]},
        "deprecations": deprecations,
    }


def _resolve(ref, recipes, by_name):
    """The card recipe a ``launchcard_recipes`` element names (name, index or former role name), else None."""
    r = by_name.get(ref) if isinstance(ref, str) else (recipes[ref] if 0 <= ref < len(recipes) else None)
    return r if r is not None else by_name.get(current_name(ref))


def _site_overrides(recipes, placement, errors, deprecations, model):
    """Check every host's ``launchcard_argv_overrides`` against the card (:mod:`_overrides`).

    Applied per placed host: an instance runs its recipe with the overrides of the host it lands on, and
    everything the planner derives (GPUs, ports, peers' URLs) comes from that effective argv. A recipe
    spanning nodes must have the same overrides on all its hosts (checked in :func:`plan`). Each distinct
    (recipe, overrides) pair is read once, however many hosts share it (a group variable).

    :returns: ``(effective, host_specs)``: ``effective(host, recipe)`` gives the recipe model that host
        runs; ``host_specs`` maps a host to its checked overrides (recipe name -> spec).
    """
    names = [r["name"] for r in recipes]
    parsed, models, host_specs = {}, {}, {}
    by_name = {r["name"]: r for r in recipes}
    problems_at = {}  # (where, message) -> hosts: a group's bad value is one error naming its hosts, not one per host
    running_at = {}  # the same, for hosts that run the recipe the bad value is for
    for entry in placement:
        raw = entry.get("argv_overrides")
        host_specs[entry["host"]] = {}
        if raw is None or raw == {}:
            continue
        try:
            key = json.dumps(raw, sort_keys=True, default=repr)
        except (TypeError, ValueError):
            key = None
        if key is None or key not in parsed:
            try:
                parsed[key] = (overrides.parse(raw, names), None)
            except overrides.OverrideError as exc:
                parsed[key] = (None, exc.errors)
        result, problems = parsed[key]
        if problems:
            for e in problems:
                problems_at.setdefault(e, []).append(entry["host"])
            continue
        specs, notes = result
        deprecations.extend(n for n in notes if n not in deprecations)
        host_specs[entry["host"]] = specs
        runs = {r["name"] for r in (_resolve(i["ref"], recipes, by_name) for i in entry["recipes"]) if r is not None}
        for name, spec in specs.items():
            mkey = (name, overrides.spec_key(spec))
            if mkey not in models:
                try:
                    models[mkey] = (overrides.effective_recipe(by_name[name], spec,
                                                               hub=(model["repo"], model["revision"])), None)
                except overrides.OverrideError as exc:
                    models[mkey] = (None, exc.errors)
            for e in models[mkey][1] or ():
                # a group value reaches hosts that do not run the recipe: name those that do, when any
                (running_at if name in runs else problems_at).setdefault(e, []).append(entry["host"])
    for e, at in running_at.items():
        problems_at[e] = at
    for (where, message), at in problems_at.items():
        hosts = ", ".join(at[:3]) + (" and %d more host(s)" % (len(at) - 3) if len(at) > 3 else "")
        errors.append((hosts, "%s: %s" % (where, message)))

    def effective(host, recipe):
        spec = host_specs.get(host, {}).get(recipe["name"])
        return recipe if spec is None else models[(recipe["name"], overrides.spec_key(spec))][0]
    return effective, host_specs


def _instance(r, model, host, address, replica, rank, group):
    iid = "%s-%s-%d" % (model["slug"], r["name"], replica)
    if r["nnodes"] > 1:
        iid += "-rank%d" % rank
    # The same instance's unit under a former role name (launchcard-...-vllm-monolithic-0.service):
    # an upgrade prunes it before starting this one, so a port it holds is this instance's.
    former = []
    for old, new in sorted(FORMER_ROLES.items()):
        if new == r["role"]:
            name = "%s-%s%s" % (r["engine"], old, r["name"][len("%s-%s" % (r["engine"], new)):])
            rank_part = "-rank%d" % rank if r["nnodes"] > 1 else ""
            former.append("%s%s-%s-%d%s.service" % (UNIT_PREFIX, model["slug"], name, replica, rank_part))
    metrics = METRICS_FLAGS.get(r["launcher"])
    # metrics on by default (Prometheus scrapes /metrics); an override's remove of the flag turns them off
    metrics = [metrics] if metrics and not r.get("metrics_off") and not argv_reader(r["launcher"], r["argv"]).has(
        metrics) else []
    return {
        "id": iid,
        "unit": UNIT_PREFIX + iid + ".service",
        "former_units": former,
        "recipe": r["name"],
        "recipe_index": r["index"],
        "engine": r["engine"],
        "role": r["role"],
        "launcher": r["launcher"],
        "host": host,
        "address": address,
        "replica": replica,
        "nnodes": r["nnodes"],
        "node_rank": rank,
        "gpus": r["gpus"],
        "gpu_ids": [],
        "gpu_selection": "none" if r["gpus"] == 0 else (
            "base_gpu_id" if r["launcher"] == "sglang" else "visible_devices"),
        "port": r["port"],
        "bootstrap_port": r["bootstrap_port"],
        "prometheus_port": None,
        "dist_init_port": None,
        "ports": [],
        "image": r["image"],
        "checkpoint": r["checkpoint"],
        "served_model": r.get("served_model_name") or r.get("model_arg") or model["repo"],
        # the revision options the engine needs to load the staged snapshot offline (recipe.hub_pins)
        "argv": list(r["argv"]) + metrics + [tok for pin in r["hub_pins"] for tok in pin],
        "env": dict(r["env"]),
        "changes": list(r.get("overrides") or ()) + [
            "%s (metrics on by default; %s remove turns them off)" % (m, overrides.VARIABLE) for m in metrics] + [
            "%s %s (hf.revision: the staged snapshot, loaded offline)" % tuple(pin) for pin in r["hub_pins"]],
        "_recipe": r,
        "_recipe_facts": None if r.get("overrides") is None else dict(
            (k, r.get(k)) for k in RECIPE_FACTS),
        "_group": group,
    }


def _assign_resources(name, h, errors):
    next_gpu = 0
    used = {}
    for inst in h["instances"]:
        r = inst["_recipe"]
        a = argv_reader(inst["launcher"], inst["argv"])
        if inst["gpus"]:
            inst["gpu_ids"] = list(range(next_gpu, next_gpu + inst["gpus"]))
            next_gpu += inst["gpus"]
            if inst["gpu_selection"] == "base_gpu_id" and inst["gpu_ids"][0] != r["base_gpu_id"]:
                a.set("--base-gpu-id", inst["gpu_ids"][0])
                inst["changes"].append("--base-gpu-id %d (card: %d)" % (inst["gpu_ids"][0], r["base_gpu_id"]))
        headless = inst["node_rank"] > 0
        # SGLang ranks >= 1 serve a dummy /health on --port (sglang/srt/entrypoints/engine.py,
        # launch_dummy_health_check_server(serving.host, serving.port)): they hold it like rank 0
        if not headless or r["launcher"] == "sglang":
            inst["port"] = _take_port(used, inst, "port", r["port"], a, "--port")
        if inst["bootstrap_port"] is not None:
            inst["bootstrap_port"] = _take_port(used, inst, "bootstrap port", r["bootstrap_port"], a,
                                                "--disaggregation-bootstrap-port")
        if r["launcher"] == "router":
            inst["prometheus_port"] = _take_port(used, inst, "prometheus port", r["prometheus_port"], a,
                                                 "--prometheus-port")
        if inst["nnodes"] > 1 and not headless:
            # rank 0 listens here; the other ranks of its group connect to it (see _rewrite_multinode)
            inst["dist_init_port"] = _take_port(
                used, inst, "--dist-init-addr port" if r["launcher"] == "sglang" else (
                    "--data-parallel-rpc-port" if r.get("dp_nodes", 1) > 1 else "--master-port"),
                r["dist_init_port"], None, None, r["dist_init_port_span"])
        kv = r.get("kv_transfer_config") or {}
        if kv.get("kv_connector") == "NixlConnector":
            raw = inst["env"].get("VLLM_NIXL_SIDE_CHANNEL_PORT", VLLM_DEFAULT_NIXL_SIDE_CHANNEL_PORT)
            try:
                want = int(raw)
            except ValueError:
                errors.append((inst["id"], "env VLLM_NIXL_SIDE_CHANNEL_PORT must be a port number, found %r" % raw))
                want = VLLM_DEFAULT_NIXL_SIDE_CHANNEL_PORT
            # one side channel per DP rank: VLLM_NIXL_SIDE_CHANNEL_PORT + data_parallel_index
            # (vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_scheduler.py, NixlBaseConnectorScheduler)
            start = _dp_start_rank(inst)
            got = _take_port(used, inst, "NIXL side channel port", want + start, None, None,
                             r.get("dp_local_size") or 1) - start
            inst["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] = str(got)
            inst["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] = inst["address"]
        inst["argv"] = a.tokens
        if headless and r["launcher"] != "sglang":
            inst["port"] = None
    h["gpus_needed"] = next_gpu
    if h["gpus"] is not None and next_gpu > h["gpus"]:
        errors.append((name, "the recipes placed here need %d GPUs (%s) but the host has %d" % (
            next_gpu, ", ".join("%s: %d" % (i["id"], i["gpus"]) for i in h["instances"] if i["gpus"]),
            h["gpus"])))


def _dp_start_rank(inst):
    """The first global DP rank ``inst`` runs: a vLLM DP group's node k runs ranks k x -dpl onwards."""
    r = inst["_recipe"]
    if r.get("dp_nodes", 1) > 1:
        return inst["node_rank"] * r["dp_local_size"]
    return r.get("dp_start_rank") or 0


def _take_port(used, inst, what, want, argv, flag, span=1):
    """Give ``inst`` the first port at or above ``want`` that no earlier
    instance on the host holds (``span`` consecutive ports when the process
    opens a block), record it in ``inst["ports"]`` and, when ``argv`` is
    given, rewrite ``flag`` to it. A port a site override pins (``inst["_pinned"]``) is never moved: taken, it is
    a PlanError naming the override."""
    port = want
    while any(p in used for p in range(port, port + span)):
        port += 1
    if port + span - 1 > 65535:
        raise PlanError([(inst["host"], "no free port at or above %d for %s" % (want, inst["id"]))])
    for p in range(port, port + span):
        used[p] = inst["id"]
        inst["ports"].append({"port": p, "what": what if span == 1 else "%s + %d" % (what, p - port)})
    if port != want:
        taken = next(used[p] for p in range(want, want + span) if used[p] != inst["id"])
        pinned = (inst.get("_pinned") or {}).get(argv_reader(inst["launcher"], []).name(flag)) if flag else None
        if pinned:
            raise PlanError([(inst["host"], "%s: %s %d is taken on this host by %s; an overridden port is not moved, "
                              "choose a free one" % (pinned, flag, want, taken))])
        inst["changes"].append("%s %d (card: %d, taken by %s)" % (flag or what, port, want, taken))
        if argv is not None:
            argv.set(flag, port)
    return port


def _url(template, peer, consumer_host, port):
    """Point ``template`` (a card URL or None) at ``peer``.

    The card's host part is kept when the peer runs on the consumer's own
    host and the card wrote a loopback address; otherwise it becomes the
    peer's address. The port is always the peer's assigned port.
    """
    scheme, host, path = "http", None, ""
    if template:
        scheme, host, dummy, path = _split(template)
    if not (peer["host"] == consumer_host and host in LOOPBACK):
        host = peer["address"]
    return "%s://%s:%d%s" % (scheme, _bracket(host), port, path)


def _bracket(host):
    """An IPv6 address in a URL or ``HOST:PORT`` needs brackets."""
    return "[%s]" % host if ":" in host and not host.startswith("[") else host


def _template_for(urls, peer):
    """Pick the card URL that referred to ``peer``'s recipe (same card port)."""
    # the port the card gives the peer's recipe: the one its card URLs name, whatever a site override moved
    want = peer["_recipe"].get("card_port", peer["_recipe"]["port"])
    for u in urls:
        try:
            if _split(u)[2] == want:
                return u
        except ValueError:
            continue
    return urls[0] if urls else None


@functools.lru_cache(maxsize=4096)
def _split(url):
    """``(scheme, hostname, port, path)`` of a card URL (``http://`` assumed when it names none).

    Cached: a fleet's peers share a handful of card URLs, read once per consumer and peer.
    :raises ValueError: the port is not a number (from ``urllib.parse``).
    """
    parts = urlsplit(url if "://" in url else "http://" + url)
    return parts.scheme or "http", parts.hostname, parts.port, parts.path


class _PeerList(object):
    """One role's peers as a consumer's argv lists them: built once per (recipe, flag), not per consumer.

    A fleet's consumers (every language server, the routers) list the same peers; only the entries
    for peers on the consumer's own host can differ (a loopback card URL stays loopback there), so
    the URLs are built once and those few entries patched. Without this, n language servers each
    listing n encoders cost O(n^2) URL builds (bench/render_and_plan.py, 10,000 hosts).
    """

    def __init__(self, peers, templates):
        self.peers = peers
        self.templates = [_template_for(templates, p) for p in peers]
        self.base = [_url(t, p, None, p["port"]) for t, p in zip(self.templates, peers)]
        self.by_host = {}
        for i, p in enumerate(peers):
            self.by_host.setdefault(p["host"], []).append(i)
        # peers bound to loopback that no consumer on another host has opened yet
        self.closed = [p for p in peers if p["_recipe"]["bind_host"] in LOOPBACK]

    def urls(self, consumer_host):
        """The peers' URLs as seen from ``consumer_host`` (a new list)."""
        urls = list(self.base)
        for i in self.by_host.get(consumer_host, ()):
            urls[i] = _url(self.templates[i], self.peers[i], consumer_host, self.peers[i]["port"])
        return urls

    def open_for(self, consumer_host, errors):
        """Bind every loopback-bound peer not on ``consumer_host`` to the network, once per peer."""
        if not self.closed:
            return
        still = []
        for p in self.closed:
            if p["host"] != consumer_host:
                _open_to_network(p, errors)
            else:
                still.append(p)
        self.closed = still


def _rewrite_peers(inst, instances, heads, hosts, errors, memo=None):
    """Point ``inst``'s peer flags at the placed peers.

    :param heads: role -> its rank-0 instances, in plan order.
    :param memo: a dict shared by every call of one plan (peer lists built once).
    """
    r = inst["_recipe"]
    a = argv_reader(inst["launcher"], inst["argv"])
    memo = {} if memo is None else memo

    def peers_of(role):
        return heads.get(role, [])

    def peer_list(role, field, templates):
        key = (id(r), field)
        if key not in memo:
            memo[key] = _PeerList(peers_of(role), templates)
        lst = memo[key]
        lst.open_for(inst["host"], errors)
        return lst

    if inst["role"] == "language" and r["encoder_urls"]:
        encs = peers_of("encoder")
        if not encs:
            errors.append((inst["id"], "a language-only server needs at least one encoder placed"))
        urls = peer_list("encoder", "encoder_urls", r["encoder_urls"]).urls(inst["host"])
        if urls != r["encoder_urls"]:
            a.replace_groups("--encoder-urls", [urls])
            inst["changes"].append("--encoder-urls %s" % " ".join(urls))
    if inst["role"] == "router":
        _note_worker_start(inst, [p for role in (("prefill", "decode") if r["pd_disaggregation"] else
                                                 ("aggregated",)) for p in peers_of(role)])
        if r["pd_disaggregation"]:
            pre, dec = peers_of("prefill"), peers_of("decode")
            if not pre or not dec:
                errors.append((inst["id"], "a PD router needs at least one prefill and one decode placed "
                               "(found %d prefill, %d decode)" % (len(pre), len(dec))))
            _refuse_vllm_pd(inst, pre + dec, errors)
            card_urls = [g["url"] for g in r["prefill_urls"]]
            card_bs = {g["url"]: g["bootstrap_port"] for g in r["prefill_urls"]}
            plist = peer_list("prefill", "prefill_urls", card_urls)
            groups = []
            for p, tmpl, url in zip(pre, plist.templates, plist.urls(inst["host"])):
                # the router hands the prefill URL's host to every decode as bootstrap_host (sglang_router
                # mini_lb.py: bootstrap_host = urlparse(prefill).hostname): loopback only when no decode is elsewhere
                remote = [d for d in dec if d["host"] != p["host"]]
                if remote:
                    url = _url(tmpl, p, None, p["port"])
                    _open_for_decodes(p, errors)
                group = [url]
                if card_bs.get(tmpl) is not None or p["bootstrap_port"] != p["_recipe"]["bootstrap_port"]:
                    group.append(str(p["bootstrap_port"]))
                groups.append(group)
            dgroups = [[u] for u in peer_list("decode", "decode_urls", r["decode_urls"]).urls(inst["host"])]
            if groups != [[g["url"]] + ([g["bootstrap_port"]] if g["bootstrap_port"] is not None else [])
                          for g in r["prefill_urls"]]:
                a.replace_groups("--prefill", groups)
                inst["changes"].append("--prefill %s" % " ; ".join(" ".join(g) for g in groups))
            if dgroups != [[u] for u in r["decode_urls"]]:
                a.replace_groups("--decode", dgroups)
                inst["changes"].append("--decode %s" % " ; ".join(g[0] for g in dgroups))
        elif r["worker_urls"]:
            workers = peers_of("aggregated")
            if not workers:
                errors.append((inst["id"], "a router with --worker-urls needs at least one server placed"))
            urls = peer_list("aggregated", "worker_urls", r["worker_urls"]).urls(inst["host"])
            if urls != r["worker_urls"]:
                a.replace_groups("--worker-urls", [urls])
                inst["changes"].append("--worker-urls %s" % " ".join(urls))
    if inst["role"] == "decode" and not peers_of("prefill"):
        errors.append((inst["id"], "a decode server needs a prefill server placed"))
    if inst["role"] == "prefill" and not peers_of("decode"):
        errors.append((inst["id"], "a prefill server needs a decode server placed"))
    if inst["nnodes"] > 1:
        _rewrite_multinode(inst, a, hosts, instances)
    inst["argv"] = a.tokens
    bind = argv_reader(inst["launcher"], inst["argv"]).get("--host", r["bind_host"])
    if bind in ("0.0.0.0", "::", "", "127.0.0.1", "localhost"):
        local = "127.0.0.1"
    elif bind in ("::1", "[::1]"):
        local = "[::1]"
    else:
        local = _bracket(bind)
    if inst["port"] is None:
        inst["url"] = inst["health_url"] = None
        inst["probe"] = "none"
    elif inst["node_rank"] > 0:
        # an SGLang rank >= 1: its dummy health server answers /health, no API
        inst["url"] = None
        inst["health_url"] = "http://%s:%d/health" % (local, inst["port"])
        inst["probe"] = "health"
    else:
        inst["url"] = "http://%s:%d" % (_bracket(inst["address"]), inst["port"])
        inst["health_url"] = "http://%s:%d/health" % (local, inst["port"])
        inst["probe"] = "completion" if inst["role"] in ("aggregated", "language", "router") else "health"


def _note_worker_start(router, workers):
    """Record on a router the longest load budget of its workers (vLLM ``VLLM_ENGINE_READY_TIMEOUT_S``, else
    vLLM's default): the units give the router's --worker-startup-timeout-secs at least the start budget its
    workers get (:func:`_units.engine_argv`)."""
    router["workers_ready_timeout_s"] = worker_ready_timeout(workers)


def _refuse_vllm_pd(router, peers, errors):
    """The SGLang PD router sends SGLang's bootstrap fields; a vLLM prefill/decode pair (NixlConnector,
    kv_producer/kv_consumer) needs a proxy that passes kv_transfer_params from prefill to decode
    (vLLM docs/features/nixl_connector_usage.md), so behind this router no KV moves: refuse it."""
    vllm = sorted({p["recipe"] for p in peers if p["launcher"] == "vllm"})
    if vllm:
        errors.append((router["id"], "the SGLang PD router (%s) cannot serve vLLM prefill/decode recipes (%s): it "
                       "sends SGLang's bootstrap fields, not the kv_transfer_params vLLM's NixlConnector needs, so "
                       "no KV would move; serve them behind a vLLM proxy, or place SGLang prefill/decode recipes" % (
                           router["recipe"], ", ".join(vllm))))


def _open_for_decodes(prefill, errors):
    """A prefill's bootstrap server binds its --host (sglang/srt/managers/disagg_service.py:
    bootstrap server at serving.host): open it when a decode on another host must reach it."""
    if not prefill.get("_opened_for_decodes"):
        prefill["_opened_for_decodes"] = True
        if argv_reader(prefill["launcher"], prefill["argv"]).get("--host", prefill["_recipe"]["bind_host"]) \
                in LOOPBACK:
            _open_to_network(prefill, errors)


def _open_to_network(peer, errors):
    a = argv_reader(peer["launcher"], peer["argv"])
    if a.has("--host"):
        if a.get("--host") in LOOPBACK:
            errors.append((peer["id"], "binds %s but a peer on another host must reach it; "
                           "remove --host or set it to 0.0.0.0 in the card" % a.get("--host")))
        return
    a.set("--host", "0.0.0.0")
    peer["argv"] = a.tokens
    peer["changes"].append("--host 0.0.0.0 (a peer on another host reaches it)")


def _rewrite_multinode(inst, a, hosts, instances):
    r = inst["_recipe"]
    head = hosts[inst["_group"][0]]["address"]
    rank0 = next(i for i in instances if i["recipe"] == inst["recipe"] and i["replica"] == inst["replica"]
                 and i["node_rank"] == 0)
    port = inst["dist_init_port"] = rank0["dist_init_port"]
    if r.get("dp_nodes", 1) > 1:
        _rewrite_dp_group(inst, a, head, port)
        return
    if a.has("--node-rank") or inst["node_rank"]:
        a.set("--node-rank", inst["node_rank"])
    if r["launcher"] == "sglang":
        a.set("--dist-init-addr", "%s:%d" % (_bracket(head), port))
    elif r["launcher"] == "vllm":
        a.set("--master-addr", head)
        if port != r["dist_init_port"] or a.has("--master-port"):
            a.set("--master-port", port)
        if inst["node_rank"] > 0:
            a.add_flag("--headless")
        elif a.has("--headless"):
            # the card's rank>0 recipe placed as a group: its head serves the API
            a.remove("--headless")
    inst["changes"].append("multi-node rank %d of %d, head %s" % (inst["node_rank"], inst["nnodes"], head))


def _rewrite_dp_group(inst, a, head, port):
    """One node of a vLLM data parallel group over nodes (vLLM docs/serving/data_parallel_deployment.md,
    "Internal Load Balancing"): every node names the head's ``--data-parallel-address`` and
    ``--data-parallel-rpc-port``; the head serves the API, node k runs ``--headless`` with
    ``--data-parallel-start-rank k x -dpl``."""
    r = inst["_recipe"]
    flags = VLLM_DP_GROUP_FLAGS
    a.set(flags["address"], head)
    if port != r["dist_init_port"] or a.has(flags["rpc_port"]):
        a.set(flags["rpc_port"], port)
    start = _dp_start_rank(inst)
    if inst["node_rank"] > 0:
        a.add_flag("--headless")
        a.set(flags["start_rank"], start)
    else:
        # the card's secondary-node recipe placed as a group: its first host is the head
        a.remove("--headless")
        if a.has(flags["start_rank"]):
            a.set(flags["start_rank"], 0)
    inst["changes"].append("data parallel node %d of %d (ranks %d-%d), head %s" % (
        inst["node_rank"], inst["nnodes"], start, start + r["dp_local_size"] - 1, head))


def plan_fleet(cards, placements):
    """Plan several cards, each onto its own hosts, into one fleet plan.

    :param cards: dict card key (its source path or URL) -> card model.
    :param placements: dict card key -> :func:`normalize_placement` output
        for the hosts that serve that card. A host belongs to one card.
    :returns: ``{"cards": {key: {"repo", "revision", "slug"}}, "hosts":
        {host: {..., "card": key}}, "deprecations": [str]}``: the hosts of
        every card's :func:`plan`, each tagged with its card, and every
        card's deprecations prefixed with its key.
    :raises PlanError: every card's placement errors, each prefixed with the
        card key; a host placed by two cards.
    """
    merged = {"cards": {}, "hosts": {}, "deprecations": []}
    errors = []
    for key in sorted(cards):
        try:
            one = plan(cards[key], placements.get(key, []))
        except PlanError as exc:
            errors.extend(("%s: %s" % (key, where), msg) for where, msg in exc.errors)
            continue
        merged["cards"][key] = one["model"]
        merged["deprecations"].extend("%s: %s" % (key, d) for d in one["deprecations"])
        for host, hp in one["hosts"].items():
            if host in merged["hosts"]:
                errors.append((host, "placed by two cards: %s and %s" % (merged["hosts"][host]["card"], key)))
                continue
            hp["card"] = key
            merged["hosts"][host] = hp
    if errors:
        raise PlanError(errors)
    return merged
