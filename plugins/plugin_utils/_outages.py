# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Outages an upgrade would cause: every instance whose switch drops requests, and why (issue 26, item 4).

Pure Python, no Ansible import; runs on the controller only. :func:`outages` reads the rollout
(:func:`_rollout.rollout`: which units each batch restarts, which routers drain which workers) and the
target plan; it decides nothing the rollout decides, it says what the rollout's batches cost:

- ``router``: a router whose own unit changes restarts, and refuses its clients until it is back;
- ``mini-lb``: a worker behind a ``--mini-lb`` router. sglang-router's ``--mini-lb`` is a Python debug
  balancer with fixed prefill/decode lists and no worker API, so nothing can take a worker out of it while it
  restarts (sglang-router 0.3.2, the pinned ``requirements.txt`` version, sgl-project/sglang
  ``sgl-router/py_src/sglang_router/mini_lb.py``: ``MiniLoadBalancer`` logs "MiniLB is only for debugging
  purposes, it only supports random policy", refuses to start without ``--pd-disaggregation``, ``select_pair``
  picks a random prefill and decode from the argv lists, ``/health`` answers 200 with no check, and its FastAPI
  app has no ``/workers`` route: ``GET /workers`` answers 404, tests/unit/plugins/modules/
  test_router_workers_versions.py);
- ``not-drained``: a worker behind a router the rollout does not drain it from (a PD router: the rollout
  takes workers out of regular-mode routers, and out of a PD router only in a surge, ``router_ops``);
- ``no-replica``: no other replica serves meanwhile: no router in front of it (its clients reach its own
  address, which a new instance beside it could not take while the old one holds it), or every worker of its
  role in its router switches in the same batch and it does not surge (:mod:`_surge`: a twin beside it while it
  switches); the reason says why not.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from ansible_collections.launchcard.inference.plugins.plugin_utils._argv import Argv

#: The inventory variable that lets the real run cause the outages (playbooks/upgrade.yml).
VARIABLE = "launchcard_upgrade_allow_outage"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _address(url):
    """``(host, port)`` of a URL, or None when it names no port."""
    try:
        parts = urlsplit(url or "")
        return (parts.hostname or "", parts.port) if parts.port else None
    except ValueError:
        return None


def names(router_host, url, inst):
    """Whether a router on ``router_host`` reaches ``inst`` at worker ``url``: its own address, or loopback on its host
    (the planner names a worker on the router's own host by loopback)."""
    want, have = _address(url), _address(inst.get("url"))
    return bool(want and have) and want[1] == have[1] and (
        want[0] == have[0] or (want[0] in LOOPBACK and inst.get("host") == router_host))


def _named(router_host, urls, by_port):
    """The instances a router on ``router_host`` reaches at ``urls`` (:func:`names`).

    :param by_port: ``{port: [instance, ...]}`` of the plan's instances with a URL.
    """
    out = []
    for url in urls or []:
        want = _address(url)
        out += [inst for inst in by_port.get(want[1], []) if names(router_host, url, inst)] if want else []
    return out


def _heads(target):
    """``{(card, recipe, replica): rank 0 instance}``: the instance that serves a multi-node group's URL."""
    out = {}
    for hp in target["hosts"].values():
        for i in hp.get("instances", []):
            if not i.get("node_rank"):
                out[(hp.get("card"), i.get("recipe"), i.get("replica"))] = i
    return out


def _head(inst, target, heads):
    """The rank 0 of a multi-node instance's group (the one that serves its URL), else the instance."""
    if not inst.get("node_rank"):
        return inst
    return heads.get((target["hosts"][inst["host"]].get("card"), inst.get("recipe"), inst.get("replica")), inst)


def _key(inst):
    return (inst["host"], inst["unit"])


def outages(target, plan, refused=None):
    """Every instance whose switch in the rollout drops requests.

    :param target: the target plan (:func:`_planner.plan_fleet`).
    :param plan: the rollout (:func:`_rollout.rollout`): ``hosts`` (each change's ``replaced`` and ``restart``
        units, ``router_ops``, ``action``), ``batches``, ``routers`` (``host``, ``unit``, ``mode``, ``mini_lb``,
        ``workers``: the worker URLs its argv names).
    :param refused: ``{(host, unit): reason}``: why an instance with no other replica does not surge
        (:func:`_surge.surges`), added to its reason; the instances of ``plan["surges"]`` are not outages.
    :returns: list of ``{"host", "unit", "recipe", "role", "batch", "codes", "reasons", "line"}`` in batch
        order; ``batch`` counts from 1, ``codes`` are the module docstring's (``router``, ``mini-lb``,
        ``not-drained``, ``no-replica``), ``reasons`` one sentence per code, ``line`` the instance in one line.
    """
    thosts = target.get("hosts", {})
    changes = plan.get("hosts", {})
    batch_of = {h: b["index"] + 1 for b in plan.get("batches", []) for h in b["hosts"]}
    # a twin serves in their place while they switch (_surge)
    surged = set((s["host"], s["unit"]) for s in plan.get("surges") or [])
    down = []  # (batch, instance) of every running instance a batch stops and starts again
    for host in sorted(batch_of):
        ch = changes.get(host) or {}
        if ch.get("action") in ("new", "retire", "none"):
            continue
        units = set(ch.get("replaced") or []) | set(ch.get("restart") or [])
        for inst in (thosts.get(host) or {}).get("instances", []):
            if inst["unit"] in units and (host, inst["unit"]) not in surged:
                down.append((batch_of[host], inst))
    if not down:
        return []
    everyone = [i for hp in thosts.values() for i in hp.get("instances", [])]
    heads = _heads(target)
    # a worker on a host that has nothing running yet serves no one before its batch
    serving = set(_key(i) for i in everyone if (changes.get(i["host"]) or {}).get("action") != "new")
    down_in = {}
    for batch, inst in down:
        down_in.setdefault(batch, set()).add(_key(_head(inst, target, heads)))
    by_port = {}
    for i in everyone:
        if i.get("role") != "router" and _address(i.get("url")):
            by_port.setdefault(_address(i["url"])[1], []).append(i)
    fronts = {}  # worker key -> [(router, [the router's worker instances])]
    for r in plan.get("routers", []):
        workers = _named(r["host"], r.get("workers"), by_port)
        for w in workers:
            fronts.setdefault(_key(w), []).append((r, workers))

    out = []
    for batch, inst in down:
        codes, reasons = [], []
        if inst.get("role") == "router":
            codes.append("router")
            reasons.append("its own unit changes: the router restarts, and its clients (%s) are refused until it "
                           "is back" % inst.get("url"))
        else:
            head = _head(inst, target, heads)
            behind = fronts.get(_key(head), [])
            if not behind:
                codes.append("no-replica")
                who = "the language servers (--encoder-urls)" if head.get("role") == "encoder" else "its clients"
                reasons.append("no router in front of it: %s reach %s directly, an address a new one beside it "
                               "could not take while the old one holds it" % (who, head.get("url")))
            for r, ws in behind:
                name = "%s (%s)" % (r["host"], r["unit"])
                if r.get("mini_lb"):
                    codes.append("mini-lb")
                    reasons.append("its router %s runs --mini-lb, the debug balancer of SGLang: no worker API, so "
                                   "it cannot be drained and keeps sending it requests while it restarts" % name)
                elif not any(op.get("router") == r["host"] and op.get("unit") == head["unit"]
                             for op in (changes.get(head["host"]) or {}).get("router_ops") or []):
                    codes.append("not-drained")
                    reasons.append("the upgrade does not take it out of its %s router %s, which keeps sending it "
                                   "requests while it restarts" % (r["mode"], name))
                same = [w for w in ws if w.get("role") == head.get("role")]
                switching = [w for w in same if _key(w) in down_in[batch]]
                left = [w for w in same if _key(w) in serving and _key(w) not in down_in[batch]]
                if not left and "no-replica" not in codes:
                    codes.append("no-replica")
                    why = (refused or {}).get(_key(inst))
                    reasons.append("no other %s instance behind router %s serves meanwhile (%d of %d switch in batch "
                                   "%d)%s" % (head.get("role"), name, len(switching), len(same), batch,
                                              "; no surge: " + why if why else ""))
        if codes:
            line = "%s: %s (batch %d): %s" % (inst["host"], inst["unit"], batch, "; ".join(reasons))
            out.append({"host": inst["host"], "unit": inst["unit"], "recipe": inst.get("recipe"),
                        "role": inst.get("role"), "batch": batch, "codes": codes, "reasons": reasons, "line": line})
    return sorted(out, key=lambda o: (o["batch"], o["host"], o["unit"]))


def report(found, allowed=False):
    """The outages in words, one line per instance (appended to the rollout's report).

    :param found: :func:`outages` output.
    :param allowed: whether the run accepts them (``launchcard_upgrade_allow_outage``).
    :returns: list of str.
    """
    if not found:
        return ["outages: none (no instance drops requests)"]
    if allowed:
        return ["outage: " + o["line"] for o in found] + [
            "outages: %d instance(s) would drop requests; accepted (%s: true), the real run causes them"
            % (len(found), VARIABLE)]
    return ["outage: " + o["line"] for o in found] + [
        "outages: %d instance(s) would drop requests; the real run refuses this upgrade unless the inventory sets "
        "%s: true" % (len(found), VARIABLE)]


def mini_lb_notes(target):
    """What each ``--mini-lb`` router of a plan costs, for the plan's warnings.

    :param target: a plan (:func:`_planner.plan_fleet`).
    :returns: list of str, one per ``--mini-lb`` router instance.
    """
    out = []
    for host, hp in sorted(target.get("hosts", {}).items()):
        for inst in hp.get("instances", []):
            if inst.get("role") == "router" and Argv(inst.get("argv") or []).has("--mini-lb"):
                out.append(
                    "%s: %s runs --mini-lb, the debug balancer of SGLang: it has no worker API, so no upgrade can drain "
                    "its workers, and every upgrade of them is an outage (upgrade.yml refuses it unless %s: true). "
                    "The regular PD router has a worker API: run it with launchcard_argv_overrides: "
                    "{%s: {remove: ['--mini-lb']}}" % (host, inst["unit"], VARIABLE, inst.get("recipe")))
    return out
