# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Surge upgrades (issue 26, item 1): a new instance beside the old one where the hardware allows.

Pure Python, no Ansible import; runs on the controller only. An instance whose switch would drop requests
because no other replica serves meanwhile (:func:`_outages.outages`, code ``no-replica``) surges when a router
with a worker API sends it its requests and its host has the GPUs and ports the plan leaves free: a transient
**twin** of the new version starts on them (its own unit, ``<unit>-surge``), passes the gate and joins the
instance's routers; only then the old one leaves them, drains, restarts in place with the new version, passes the
gate and joins them again; then the twin leaves them, drains, and its unit is stopped and removed
(``playbooks/tasks/upgrade-batch-hosts.yml``). The plan (placement, ports, GPU lists) never changes, so deploy and the
host record stay as they are, and the router's list never drops below what it had.

The routers' worker APIs, as sglang-router 0.3.2 (the pinned ``requirements.txt`` version) answers them on
loopback in front of stand-in engines (``tests/unit/plugins/modules/test_router_workers_pd.py``):

- regular mode (``--worker-urls``): ``POST /workers {"url"}``, ``DELETE /workers/{id}`` (``module_utils/_router.py``);
- PD mode (``--pd-disaggregation`` without ``--mini-lb``): ``POST /workers {"url", "worker_type": "prefill",
  "bootstrap_port"}`` or ``{"url", "worker_type": "decode"}`` (202, queued); ``GET /workers`` lists each worker's
  ``worker_type`` and a prefill's ``bootstrap_port``; ``DELETE /workers/{id}`` takes either out; requests go to
  a prefill and a decode of the list. ``--mini-lb`` has no worker API (:mod:`_outages`): no surge behind it.

What does not surge, and why (in :func:`surges`' refusals, and so in the outage's reason): no router in front of
it (its clients reach its own address), a router with no worker API (``--mini-lb``), a router that restarts in
the same batch (it would forget the twin), a multi-node group, ports the twin cannot move (a vLLM NIXL side
channel, a multi-node init port), or no free GPUs on its host. A spare host (a play host the plan leaves empty)
with the GPUs is named, but upgrade.yml does not start a twin there: the runtime and the new revision are
installed and staged on the plan's hosts only.
"""

from __future__ import annotations

import copy

from ansible_collections.launchcard.inference.plugins.plugin_utils import _outages as outages
from ansible_collections.launchcard.inference.plugins.plugin_utils._recipe import argv_reader

SUFFIX = "-surge"
#: the ports a twin can take elsewhere (its argv names them); any other kind keeps the instance from surging
MOVABLE = {"port": "--port", "bootstrap port": "--disaggregation-bootstrap-port"}
LOOPBACK_BIND = ("127.0.0.1", "localhost", "::1", "[::1]")


def _url_port(url, port):
    """``url`` (``http://HOST:PORT[/path]``) with its port replaced."""
    scheme, rest = url.split("://", 1)
    hostport, sep, path = rest.partition("/")
    host = hostport.rsplit(":", 1)[0]
    return "%s://%s:%d%s%s" % (scheme, host, port, sep, path)


def _fronts(inst, routers):
    """``[(router, listed URL)]``: every router whose argv names ``inst`` (:func:`_outages.names`)."""
    out = []
    for r in routers:
        listed = [u for u in r.get("workers") or [] if outages.names(r["host"], u, inst)]
        if listed:
            out.append((r, listed[0]))
    return out


def _restarts(plan, host, unit):
    """Whether the rollout stops and starts ``unit`` on ``host`` (its file changes, or it restarts with a partner)."""
    ch = plan.get("hosts", {}).get(host) or {}
    if ch.get("action") in ("new", "none", "retire", None):
        return ch.get("action") == "retire"
    return unit in set(ch.get("replaced") or []) | set(ch.get("restart") or [])


def _refuse(inst, fronts, plan):
    """Why ``inst`` cannot surge whatever the GPUs, in words; None when it can."""
    if (inst.get("nnodes") or 1) > 1:
        return "it is one node of a multi-node group, which a twin cannot join"
    if not fronts:
        return "no router in front of it: its clients reach its own address, which a twin cannot take"
    for r, dummy in fronts:
        if r.get("mini_lb"):
            return "its router %s (%s) runs --mini-lb, which has no worker API to add a twin to" % (
                r["host"], r["unit"])
        if _restarts(plan, r["host"], r["unit"]):
            return "its router %s (%s) restarts in the same batch, and would forget a twin" % (r["host"], r["unit"])
    fixed = sorted(set(p["what"] for p in inst.get("ports") or []) - set(MOVABLE))
    if fixed or "VLLM_NIXL_SIDE_CHANNEL_PORT" in (inst.get("env") or {}):
        return "a twin cannot move its %s" % (", ".join(fixed) or "NIXL side channel port")
    return None


def _total(host, target, gpus):
    hp = target["hosts"].get(host) or {}
    return hp.get("gpus") if hp.get("gpus") is not None else (gpus or {}).get(host)


def _free_gpus(host, target, gpus, taken):
    """The GPU indices of ``host`` the plan leaves free (the planner gives its instances 0 .. gpus_needed - 1),
    less the ones ``taken`` by twins of the same batch; None when the host's GPUs are unknown."""
    total = _total(host, target, gpus)
    if total is None:
        return None
    used = (target["hosts"].get(host) or {}).get("gpus_needed") or 0
    return [g for g in range(used, total) if g not in taken.get(host, set())]


def _used_ports(host, target, twins):
    out = set()
    for i in (target["hosts"].get(host) or {}).get("instances", []):
        out.update(p["port"] for p in i.get("ports") or [])
    for t in twins:
        if t["host"] == host:
            out.update(p["port"] for p in t["ports"])
    return out


def twin(inst, gpu_ids, used, host=None, address=None):
    """The twin of plan instance ``inst``: the same instance on other GPUs and ports, under its own unit.

    :param gpu_ids: the GPU indices it runs on (as many as ``inst`` has, consecutive for SGLang's
        ``--base-gpu-id``).
    :param used: the ports taken on its host (the plan's and other twins'); each of its ports moves to the first
        free one at or above the instance's.
    :param host: its host, when not ``inst``'s (a spare host), with that host's ``address``.
    :returns: a plan instance (the unit builder renders it like any other) with ``twin_of``: the instance's unit.
    """
    t = copy.deepcopy(dict((k, v) for k, v in inst.items() if not k.startswith("_")))
    t.update(id=inst["id"] + SUFFIX, unit="%s%s.service" % (inst["unit"][:-len(".service")], SUFFIX),
             former_units=[], gpu_ids=list(gpu_ids), twin_of=inst["unit"], host=host or inst["host"],
             address=address or inst["address"])
    a = argv_reader(inst["launcher"], t["argv"])
    changes = ["twin of %s for the surge" % inst["unit"]]
    if t["gpu_selection"] == "base_gpu_id" and gpu_ids:
        a.set("--base-gpu-id", gpu_ids[0])
    if gpu_ids:
        changes.append("GPUs %s (the plan leaves them free)" % ",".join(str(g) for g in gpu_ids))
    taken = set(used)
    t["ports"] = []
    for p in inst.get("ports") or []:
        port = p["port"]
        while port in taken:
            port += 1
        taken.add(port)
        t["ports"].append({"port": port, "what": p["what"]})
        a.set(MOVABLE[p["what"]], port)
        t["port" if p["what"] == "port" else "bootstrap_port"] = port
        changes.append("%s %d (%s: %d)" % (MOVABLE[p["what"]], port, p["what"], p["port"]))
    if t["host"] != inst["host"] and a.get("--host", "127.0.0.1") in LOOPBACK_BIND:
        # elsewhere than the instance, the twin answers its router and its PD peers over the network
        a.set("--host", "0.0.0.0")
    t["argv"] = a.tokens
    if t.get("url"):
        t["url"] = "http://%s:%d" % ("[%s]" % t["address"] if ":" in t["address"] else t["address"], t["port"])
    if t.get("health_url"):
        t["health_url"] = _url_port(t["health_url"], t["port"])
    t["changes"] = list(inst.get("changes") or []) + changes
    return t


def _router_ops(inst, fronts, tw, old):
    """What each router of ``inst`` does in its surge: the twin in and out, and (PD routers, whose workers the
    regular drain leaves, _rollout.router_drains) the instance itself out and back."""
    twin_ops, own_ops = [], []
    for r, listed in fronts:
        kind = inst["role"] if r["mode"] == "pd" else "regular"
        loopback = listed != inst["url"]
        url = _url_port(listed, tw["port"]) if loopback and tw["host"] == inst["host"] else tw["url"]
        twin_ops.append({"router": r["host"], "router_unit": r["unit"], "api": r["api"], "unit": tw["unit"],
                         "url": url, "worker_type": kind, "bootstrap_port": tw.get("bootstrap_port")})
        if r["mode"] == "pd":
            before = (old or {}).get(inst["unit"]) or inst
            own_ops.append({"router": r["host"], "router_unit": r["unit"], "api": r["api"], "unit": inst["unit"],
                            "remove": listed if loopback else before.get("url"), "add": listed,
                            "worker_type": kind, "bootstrap_port": inst.get("bootstrap_port"),
                            "old_bootstrap_port": before.get("bootstrap_port")})
    return twin_ops, own_ops


def surges(target, plan, found, gpus=None, spare=None, current=None, hosts=None):
    """Which instances of the rollout surge, on which GPUs and ports, and which cannot.

    :param target: the target plan (:func:`_planner.plan_fleet`).
    :param plan: the rollout (:func:`_rollout.rollout`): ``hosts``, ``batches``, ``routers``.
    :param found: its outages (:func:`_outages.outages`, computed without surges): the candidates are those with
        code ``no-replica``.
    :param gpus: ``{host: GPUs or None}`` of the play's hosts (``launchcard_gpus``, else preflight's count).
    :param spare: ``{host: address}`` of the spare hosts a twin may run on; None or empty: its own host only.
    :param current: ``{host: record}`` (what each host runs now), whose instances' URLs leave the PD routers.
    :param hosts: the hosts whose instances may surge (``launchcard_upgrade_surge`` not false); None: every host.
    :returns: ``(surges, refused)``. ``surges``: one ``{"host", "unit", "batch", "twin", "twin_ops", "own_ops"}``
        per instance that surges, in batch, host, unit order: ``twin`` the twin instance (:func:`twin`);
        ``twin_ops`` one ``{"router", "router_unit", "api", "unit", "url", "worker_type", "bootstrap_port"}`` per
        router that sends the instance requests (the twin goes in there, then out); ``own_ops`` the same routers'
        ops for the instance itself where the regular drain does not take it out (PD routers, as
        :func:`_rollout.router_drains`' ops plus ``worker_type``, ``bootstrap_port`` and ``old_bootstrap_port``).
        ``refused``: ``{(host, unit): reason}`` of the other candidates, in words.
    """
    out, refused, taken_by_batch, twins_by_batch = [], {}, {}, {}
    routers = plan.get("routers", [])
    insts = dict(((i["host"], i["unit"]), i) for hp in target.get("hosts", {}).values()
                 for i in hp.get("instances", []))
    for o in sorted(found, key=lambda x: (x["batch"], x["host"], x["unit"])):
        if "no-replica" not in o["codes"]:
            continue
        inst = insts[(o["host"], o["unit"])]
        fronts = _fronts(inst, routers)
        why = _refuse(inst, fronts, plan)
        if not why and hosts is not None and inst["host"] not in hosts:
            why = "launchcard_upgrade_surge is false on %s" % inst["host"]
        if why:
            refused[(o["host"], o["unit"])] = why
            continue
        taken = taken_by_batch.setdefault(o["batch"], {})
        twins = twins_by_batch.setdefault(o["batch"], [])
        need = inst.get("gpus") or 0
        place, ids = None, None
        free = _free_gpus(inst["host"], target, gpus, taken)
        if free is not None and len(free) >= need:
            place, ids = inst["host"], free[:need]
        for host in sorted(spare or {}):
            if place is None and host not in target.get("hosts", {}):
                free = _free_gpus(host, target, gpus, taken)
                if free is not None and len(free) >= need:
                    place, ids = host, free[:need]
        if place is None:
            elsewhere = None if spare else room_elsewhere(inst, target, gpus)
            refused[(o["host"], o["unit"])] = _no_room(inst, target, gpus, taken) + (
                "; " + elsewhere if elsewhere else "")
            continue
        tw = twin(inst, ids, _used_ports(place, target, twins), place if place != inst["host"] else None,
                  (spare or {}).get(place))
        taken.setdefault(place, set()).update(ids)
        twins.append(tw)
        old = dict((i.get("unit"), i) for i in ((current or {}).get(inst["host"]) or {}).get("instances") or [])
        twin_ops, own_ops = _router_ops(inst, fronts, tw, old)
        out.append({"host": inst["host"], "unit": inst["unit"], "batch": o["batch"], "twin": tw,
                    "twin_ops": twin_ops, "own_ops": own_ops})
    return out, refused


def _no_room(inst, target, gpus, taken):
    """Why no GPUs are free for ``inst``'s twin, in words."""
    host, need = inst["host"], inst.get("gpus") or 0
    total = _total(host, target, gpus)
    if total is None:
        return "the GPUs of %s are unknown (launchcard_gpus), so no twin is placed beside it" % host
    used = (target["hosts"][host].get("gpus_needed") or 0) + len(taken.get(host, ()))
    return "no free GPUs for a twin beside it: %s has %d, %s %d, it needs %d" % (
        host, total, "the plan and the batch's other twins use" if taken.get(host) else "the plan uses", used, need)


def room_elsewhere(inst, target, gpus):
    """A spare host of the play (no instance in the plan) with the GPUs ``inst`` needs, in words, or None."""
    need = inst.get("gpus") or 0
    spare = sorted(h for h, n in (gpus or {}).items() if h not in target["hosts"] and n is not None and n >= need)
    if not spare:
        return None
    return ("spare host %s has the %d GPU(s) a twin needs, but upgrade.yml starts twins on an instance's own host "
            "only (the runtime and the new revision are installed on the plan's hosts)" % (spare[0], need))


def report(found):
    """The surges in words, one line per instance (the rollout's report, check mode).

    :param found: :func:`surges`' ``surges``.
    :returns: list of str.
    """
    lines = []
    for s in found:
        tw = s["twin"]
        ports = ", ".join("%s %d" % (p["what"], p["port"]) for p in tw["ports"])
        lines.append("surge: %s: %s (batch %d): twin %s on %s, GPUs %s, %s; joins %s before the old one leaves" % (
            s["host"], s["unit"], s["batch"], tw["unit"], tw["host"],
            ",".join(str(g) for g in tw["gpu_ids"]) or "none", ports,
            ", ".join("%s (%s, %s)" % (op["router"], op["router_unit"], op["worker_type"]) for op in s["twin_ops"])))
    return lines
