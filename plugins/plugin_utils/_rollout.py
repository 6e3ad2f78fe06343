# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rollout planning for fleet upgrades: what runs now + the target plan -> ordered batches.

Pure Python, no Ansible import; runs on the controller only.

Inputs:

- ``current``: ``{host: record}`` where a record is what the host's
  ``/var/lib/launchcard/state.json`` says it runs (see
  :mod:`module_utils._state`): ``units`` (``{unit name: {"text", "sha256"}}``),
  ``instances`` (the plan instances it was deployed from; may be empty for a
  host deployed before records existed, whose unit files were read instead),
  ``card`` (``{"sha256", "repo", "revision"}``, or None; a record written
  by an earlier release also names the card's source, ``key``: nothing reads it). A host
  with no record and no unit file is absent or maps to None.
- ``target``: the new plan (:func:`planner.plan_fleet` output) of the inventory.
- ``target_units``: ``{host: [{"name", "content"}]}``, the unit files each
  host of the target plan must have (``host_units`` of each host).
- ``cards``: ``{card key: {"sha256", "repo", "revision"}}`` of the target.

Output of :func:`rollout` (all JSON-serialisable):

- ``hosts``: ``{host: change}`` for every host involved, see :func:`host_change`, plus what its batch
  (``playbooks/tasks/upgrade-batch-hosts.yml``) reads, decided here: ``drain`` (``engine_drain`` endpoints of the
  running units the switch stops), ``twins``, ``twin_ops``, ``twin_ports``, ``twin_units`` and ``twin_drain``
  (its surges' twin instances, their router ops, ports, unit files and drain endpoints), ``gate_routers``
  (``{"host", "unit", "api", "model"}`` of each router that sends its instances requests, gated once they are
  back: those it leaves, and those that list it without a worker API, ``router_listed``),
  ``runs_before`` and ``runs_after`` (what it runs before and after its batch, in words).
- ``batches``: ordered list of ``{"index", "tier", "hosts"}``; the hosts of
  one batch switch together, a batch starts when the previous one is healthy.
- ``routers``: every router instance of the target: ``{"host", "unit",
  "mode", "api", "workers", "touched"}``.
- ``unchanged``: hosts with nothing to do (never touched).
- ``warnings``: what the upgrade leaves as it is, in words (an engine whose model is a local path).
- ``contracts`` (added by ``_upgrade_fleet.rollout``, which has the cards): each engine the upgrade moves to
  another release against the metric contract, ``{"warning", "text"}`` (:mod:`_contract_upgrade`).
- ``surges``: every instance that switches beside a twin of it instead of dropping requests (:func:`_surge.surges`;
  a PD router's ops for it join its host's ``router_ops``).
- ``outages``: every instance whose switch drops requests, and why (:func:`_outages.outages`).
- ``surge_routers``: ``{"router", "router_unit", "api"}`` of each router a surge drives, once.
- ``diff_lines``: ``{host: lines}`` of each host whose unit files change, its units' unified diffs one after another.

Ordering rules (issue 12, item 2):

1. encoders first (a language server only turns healthy once its encoders
   answer, so new encoders must be up before the language servers move);
2. aggregated and language servers, replicas of a recipe in batches of at
   most ``serial`` hosts running that recipe, so a recipe with N replicas
   keeps at least N - serial serving;
3. prefill/decode: every host with a prefill or decode instance of one card
   serves the others through that card's PD router, so they move as one
   batch; a partner whose own units do not change is restarted with them
   (``action: partner-restart``) so no side keeps a transfer with a peer
   that went away;
4. routers last, in batches of ``serial`` per router recipe;
5. hosts whose units are no longer planned are retired after the routers
   stopped pointing at them.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import shlex

from ansible_collections.launchcard.inference.plugins.module_utils import _drain as drain
from ansible_collections.launchcard.inference.plugins.plugin_utils import _outages as outages
from ansible_collections.launchcard.inference.plugins.plugin_utils import _surge as surge
from ansible_collections.launchcard.inference.plugins.plugin_utils._argv import Argv
from ansible_collections.launchcard.inference.plugins.plugin_utils._liveness import is_liveness

TIERS = ("encoder", "server", "prefill-decode", "router", "retire")
WORKER_ROLES = ("aggregated", "language")


class RolloutError(ValueError):
    """Bad rollout input (the message names the variable or host)."""


def card_sha256(card_model):
    """sha256 hex of a loaded card model (keys sorted), stable across runs.

    The model's ``source`` (the path or URL it was read from, for messages) is left out: the same card read
    from another path is the same card, so a host's record (and the run lock naming the card) does not change.
    """
    body = dict((k, v) for k, v in card_model.items() if k != "source")
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def parse_serial(serial, var="launchcard_upgrade_serial"):
    """``launchcard_upgrade_serial``: hosts per recipe switched together.

    :param serial: an int >= 1 or a string holding one.
    :param var: the variable named in the error.
    :returns: int.
    :raises RolloutError: anything else (names the variable).
    """
    bad = RolloutError("%s must be an integer >= 1, found %r" % (var, serial))
    if isinstance(serial, bool):
        raise bad
    try:
        value = int(serial)
    except (TypeError, ValueError):
        raise bad
    if value < 1 or str(value) != str(serial).strip():
        raise bad
    return value


def reboot_batches(hosts, wanted, serial=1):
    """The accelerator stack's reboots in batches (``roles/stack_reboot``), never all hosts at once.

    :param hosts: the play's hosts, in play order.
    :param wanted: dict host -> whether it reboots (hosts missing: no).
    :param serial: hosts per batch (``launchcard_stack_reboot_serial``), an
        int >= 1 or a string holding one.
    :returns: list of lists of host names, in play order, each at most
        ``serial`` long; ``[]`` when no host reboots.
    :raises RolloutError: a bad ``serial`` (names the variable).
    """
    serial = parse_serial(serial, "launchcard_stack_reboot_serial")
    todo = [h for h in hosts if wanted.get(h)]
    return [todo[i:i + serial] for i in range(0, len(todo), serial)]


def _exec_start(text):
    """The ExecStart= command of a unit text as tokens (continuation lines joined)."""
    lines, out, cont = (text or "").splitlines(), [], False
    for line in lines:
        if line.startswith("ExecStart=") or cont:
            body = line[len("ExecStart="):] if not cont else line
            cont = body.rstrip().endswith("\\")
            out.append(body.rstrip().rstrip("\\"))
            if not cont:
                break
    joined = " ".join(out)
    try:
        return shlex.split(joined)
    except ValueError:
        return joined.split()


_IMAGE_DIGEST = re.compile(r"^(?P<image>[^\s@]+)@(?P<digest>sha256:[0-9a-f]{64})$")
# the comment line plugin_utils/_units.py writes into a native unit
_REQUIREMENTS = "# Native virtualenv requirements: sha256 "


def runs(text):
    """What a unit runs besides its flags: the images it runs by digest and the native requirements.

    :param text: a unit file's text.
    :returns: ``(images, requirements)``: dict image -> ``sha256:...`` from
        the ``ExecStart=`` words that name an image by digest (containers),
        and the digest of the native virtualenv's requirements or None.
    """
    images = {}
    for word in _exec_start(text):
        m = _IMAGE_DIGEST.match(word)
        if m:
            images[m.group("image")] = m.group("digest")
    requirements = None
    for line in (text or "").splitlines():
        if line.startswith(_REQUIREMENTS):
            requirements = line[len(_REQUIREMENTS):].strip()
    return images, requirements


def _runs_reasons(before, after):
    """Reasons a unit's process changes besides its flags (image digest, native requirements)."""
    out = []
    (old_images, old_req), (new_images, new_req) = runs(before), runs(after)
    for image in sorted(new_images):
        if image in old_images and old_images[image] != new_images[image]:
            out.append("image %s %s -> %s" % (image, old_images[image][:19], new_images[image][:19]))
    if old_req and new_req and old_req != new_req:
        out.append("native virtualenv requirements %s -> %s" % (old_req[:12], new_req[:12]))
    return out


def _flags(old_argv, new_argv):
    """Option groups (``--flag value ...``) removed and added between two argv lists."""
    def groups(argv):
        out, cur = [], None
        for tok in argv[1:]:
            if tok.startswith("-") and not tok[1:2].isdigit():
                cur = [tok]
                out.append(cur)
            elif cur is not None:
                cur.append(tok)
            else:
                out.append([tok])
        # quoted as a shell would need (shlex.quote), so a value with spaces or ';' reads as one value
        return [" ".join(shlex.quote(t) for t in g) for g in out]
    old, new = groups(old_argv), groups(new_argv)
    return [g for g in old if g not in new], [g for g in new if g not in old]


def _unit_of(name):
    """The unit a file gives: itself, or ``NAME.service`` for a Quadlet ``NAME.container`` (_units.unit_file_name)."""
    return name[:-len(".container")] + ".service" if name.endswith(".container") else name


def host_change(host, record, target_host, target_units, cards):
    """What the upgrade does on one host.

    :param record: the host's current record (or None).
    :param target_host: ``target["hosts"][host]`` (or None: no longer planned).
    :param target_units: list of ``{"name", "content"}`` for the host (or []).
    :param cards: target cards, ``{key: {"sha256", "repo", "revision"}}``.
    :returns: ``{"host", "action", "write", "remove", "restart", "replaced", "diff",
        "flags", "revision", "card", "units", "recipes", "roles", "reasons"}`` (``units``: how many unit files the
        host has after the upgrade);
        ``action`` is ``none``, ``new`` (nothing runs there yet),
        ``update`` (unit files change; a new model revision changes every engine's
        ``--revision``, so its unit file) or ``retire`` (units no longer planned); the
        rollout makes an unchanged prefill/decode partner ``partner-restart``.
        ``restart`` lists the units restarted although their file is the same (partners only);
        ``replaced`` the running units whose file changes (their process stops and a new one starts);
        ``unpinned`` the engines a new revision leaves as they are (their model is a local path). ``diff`` is one unified diff (list of lines) per
        changed unit, ``flags`` one ``{"unit", "removed", "added"}`` per unit
        whose argv changed.
    """
    record = record or {}
    have = {name: (u or {}).get("text", "") for name, u in (record.get("units") or {}).items()}
    want = {u["name"]: u["content"] for u in target_units or []}
    old_inst = {i.get("unit"): i for i in record.get("instances") or []}
    new_inst = {i["unit"]: i for i in (target_host or {}).get("instances", [])}
    write = sorted(n for n in want if have.get(n) != want[n])
    remove = sorted(n for n in have if n not in want)
    # running units whose process the batch stops and starts again (a new file of a unit the host runs)
    replaced = sorted(_unit_of(n) for n in write if n in have)
    diff, flags, runs_changes = [], [], []
    for name in write + remove:
        before, after = have.get(name, ""), want.get(name, "")
        runs_changes += [r for r in _runs_reasons(before, after) if r not in runs_changes]
        diff.append({"unit": name, "lines": list(difflib.unified_diff(
            before.splitlines(), after.splitlines(),
            "%s (running)" % name if name in have else "(absent)",
            "%s (target)" % name if name in want else "(removed)", lineterm="", n=0))})
        unit = _unit_of(name)
        if unit in old_inst and unit in new_inst:
            removed, added = _flags(old_inst[unit].get("argv") or [], new_inst[unit].get("argv") or [])
        elif name in have and name in want:
            removed, added = _flags(_exec_start(before), _exec_start(after))
        else:
            removed, added = [], []
        if removed or added:
            flags.append({"unit": name, "removed": removed, "added": added})
    old_card = record.get("card") or {}
    new_card = cards.get((target_host or {}).get("card")) or {}
    revision = None
    if target_host and old_card.get("revision") and old_card.get("revision") != new_card.get("revision"):
        revision = {"from": old_card.get("revision"), "to": new_card.get("revision")}
    want_units = set(_unit_of(n) for n in want)
    loads_weights = [u for u, i in new_inst.items() if i.get("role") != "router" and u in want_units]
    reasons = []
    if not have and want:
        action = "new"
        reasons.append("not deployed yet")
    elif not want and have:
        action = "retire"
        reasons.append("no longer planned here")
    elif write or remove:
        action = "update"
        reasons.append("%d unit file(s) change" % len(write + remove))
        reasons += runs_changes
    else:
        action = "none"
    if revision and action != "none":
        reasons.append("model revision %s -> %s" % (revision["from"][:12], (revision["to"] or "?")[:12]))
    insts = list(new_inst.values()) or list(old_inst.values())
    return {
        "host": host,
        "action": action,
        "write": write,
        "remove": remove,
        "restart": [],
        "replaced": replaced,
        "diff": diff,
        "flags": flags,
        "revision": revision,
        "card": (target_host or {}).get("card"),
        "units": len([n for n in want if not is_liveness(n)]),
        "recipes": sorted({i.get("recipe") for i in insts if i.get("recipe")}),
        "roles": sorted({i.get("role") for i in insts if i.get("role")}),
        "reasons": reasons,
        "router_ops": [],
        # routers that list an instance here but cannot take it out (--mini-lb, PD): gated once it is back
        "router_listed": [],
        # engines whose files stay the same under a new revision: they name no revision (a local model path)
        "unpinned": sorted(loads_weights) if revision and action == "none" else [],
    }


def _tier(change):
    if change["action"] == "retire":
        return "retire"
    roles = set(change["roles"])
    if "router" in roles:
        return "router"
    if roles & {"prefill", "decode"}:
        return "prefill-decode"
    if roles and roles <= {"encoder"}:
        return "encoder"
    return "server"


def _pack(hosts, changes, serial):
    """Greedy batches: at most ``serial`` hosts of any one recipe per batch."""
    batches = []
    for host in hosts:
        recipes = changes[host]["recipes"] or [host]
        for batch in batches:
            if all(batch["count"].get(r, 0) < serial for r in recipes):
                break
        else:
            batch = {"hosts": [], "count": {}}
            batches.append(batch)
        batch["hosts"].append(host)
        for r in recipes:
            batch["count"][r] = batch["count"].get(r, 0) + 1
    return [b["hosts"] for b in batches]


def routers_of(target):
    """Every router instance of ``target``, with how its workers can be drained.

    ``mode``: ``regular`` (``--worker-urls``; the router's worker API
    ``GET/POST /workers``, ``DELETE /workers/{id}`` takes them out and puts
    them back), ``mini-lb`` (``--mini-lb``: no worker API), ``pd``
    (``--pd-disaggregation``: the prefill/decode group moves as one batch).
    ``mini_lb``: the router runs ``--mini-lb`` (also in PD mode, the example
    card's router): no worker API (see :mod:`_outages`).
    ``api`` is the router's base URL as seen from its own host.
    """
    out = []
    for host, hp in sorted(target.get("hosts", {}).items()):
        for inst in hp.get("instances", []):
            if inst.get("role") != "router":
                continue
            a = Argv(inst.get("argv") or [])
            if a.has("--pd-disaggregation"):
                mode, workers = "pd", [g[0] for g in a.groups("--prefill") + a.groups("--decode") if g]
            else:
                mode = "mini-lb" if a.has("--mini-lb") else "regular"
                workers = [u for g in a.groups("--worker-urls") for u in g]
            api = (inst.get("health_url") or "").rsplit("/health", 1)[0]
            out.append({"host": host, "unit": inst["unit"], "card": hp.get("card"), "mode": mode, "api": api,
                        "url": inst.get("url"), "model": inst.get("served_model"), "workers": workers,
                        "mini_lb": a.has("--mini-lb"), "touched": False, "drains": []})
    return out


def router_drains(routers, instances, old=None):
    """Which routers list each of one host's ``instances``, and whether each can take it out while it stops.

    The one answer for upgrade.yml's batches (:func:`rollout`) and for the stack reboots
    (:func:`reboot_drains`): a router lists an instance when a worker URL its argv names reaches it
    (:func:`_outages.names`: its own URL, or loopback on the router's host). A regular-mode router takes it out
    through its worker API (``router_workers``); ``--mini-lb`` has none, and a PD router's workers are taken out
    only in an upgrade's surge (:mod:`_surge`), where a twin serves meanwhile: a lone prefill or decode out of its
    PD router would leave it none.

    :param routers: :func:`routers_of` output.
    :param instances: the host's plan instances.
    :param old: ``{unit: instance}`` the host runs now (its record), whose URL is the one taken out; None: the plan's.
    :returns: ``(ops, refused)``, in router order, then unit order. ``ops``: one ``{"router", "router_unit", "api",
        "unit", "remove", "add"}`` per regular-mode router and instance it lists (``remove`` the URL it runs under
        now, ``add`` its planned one; both the loopback URL for a worker on the router's own host). ``refused``: one
        ``{"router", "router_unit", "unit", "mode", "reason"}`` per other router that lists one of them, ``reason``
        why it cannot take it out, in words.
    """
    ops, refused = [], []
    insts = sorted((i for i in instances or [] if i.get("url")), key=lambda i: i["unit"])
    for r in routers:
        for inst in insts:
            listed = [u for u in r["workers"] if outages.names(r["host"], u, inst)]
            if not listed:
                continue
            if r["mode"] == "regular":
                # by its own URL: the one it runs under now out, the planned one back; by loopback: that URL both ways
                own = listed[0] == inst["url"]
                ops.append({"router": r["host"], "router_unit": r["unit"], "api": r["api"], "unit": inst["unit"],
                            "remove": ((old or {}).get(inst["unit"]) or inst).get("url") if own else listed[0],
                            "add": inst["url"] if own else listed[0]})
                continue
            if r["mini_lb"]:
                why = "it runs --mini-lb, the debug balancer of SGLang, which has no worker API"
            else:
                why = ("it is a prefill/decode router (--pd-disaggregation), whose workers only an upgrade's surge "
                       "takes out")
            refused.append({"router": r["host"], "router_unit": r["unit"], "unit": inst["unit"], "mode": r["mode"],
                            "reason": why})
    return ops, refused


def reboot_drains(plan, host, serving):
    """What a stack reboot of ``host`` does with the routers that send it requests (``roles/stack_reboot``).

    :param plan: the plan (``launchcard_plan``); empty when the stack role runs alone.
    :param host: the host that reboots.
    :param serving: names of the units active on it before the reboot; only those are taken out and drained.
    :returns: ``{"ops", "drain", "routers", "warnings"}``: ``ops`` as :func:`router_drains` (taken out before the
        reboot, put back after its gate); ``drain`` the serving instances ``ops`` take out of a router (their
        in-flight requests finish before the reboot); ``routers`` one ``{"host", "unit", "api", "model"}`` per router
        of ``ops``, gated by a 1-token completion once they are put back; ``warnings`` one line per router that
        keeps sending a serving instance requests through the reboot (:func:`router_drains`' refusals), and per
        router that reboots with the host.
    """
    routers = routers_of(plan or {})
    serving = set(serving or [])
    insts = [i for i in ((plan or {}).get("hosts", {}).get(host) or {}).get("instances", [])
             if i.get("unit") in serving]
    ops, refused = router_drains(routers, insts)
    drained = set(op["unit"] for op in ops)
    gates = []
    for r in routers:
        if any(op["router"] == r["host"] and op["router_unit"] == r["unit"] for op in ops):
            gates.append({"host": r["host"], "unit": r["unit"], "api": r["api"], "model": r["model"]})
    warnings = ["%s: %s stays in router %s (%s) through the reboot: %s, so requests it sends there meanwhile fail" % (
        host, x["unit"], x["router"], x["router_unit"], x["reason"]) for x in refused]
    warnings += ["%s: router %s reboots with the host: its clients are refused until it is back" % (host, i["unit"])
                 for i in insts if i.get("role") == "router"]
    return {"ops": ops, "drain": [i for i in insts if i["unit"] in drained], "routers": gates, "warnings": warnings}


def runs_before(record):
    """What a host runs before its batch, in words (upgrade.yml's log lines): its record's revision and unit count."""
    if record is None:
        return "nothing"
    return "revision %s, %d unit(s)" % (((record.get("card") or {}).get("revision") or "?")[:12],
                                        len([n for n in record.get("units") or {} if not is_liveness(n)]))


def _batch_fields(result, current, target, cards, twin_units):
    """What each host's batch (playbooks/tasks/upgrade-batch-hosts.yml) reads, decided here once for the fleet."""
    thosts = target.get("hosts", {})
    for host, ch in result["hosts"].items():
        record = current.get(host)
        # the units the switch stops: replaced files, restarted partners, removed units (a Quadlet file's service)
        stops = set(ch["replaced"]) | set(ch["restart"]) | set(_unit_of(n) for n in ch["remove"])
        ch["drain"] = drain.endpoints_of([i for i in (record or {}).get("instances") or [] if i.get("unit") in stops])
        mine = [s for s in result["surges"] if s["host"] == host]
        ch["twins"] = [s["twin"] for s in mine]
        ch["twin_ops"] = [op for s in mine for op in s["twin_ops"]]
        ch["twin_ports"] = [p["port"] for t in ch["twins"] for p in t["ports"]]
        ch["twin_drain"] = drain.endpoints_of(ch["twins"])
        ch["twin_units"] = twin_units(host, {"instances": ch["twins"]}) if ch["twins"] and twin_units else []
        # the routers that send this host's instances requests (drained, surged or not): each is gated once they are back
        left = set((op["router"], op["router_unit"]) for op in ch["router_ops"]) | set(map(tuple, ch["router_listed"]))
        ch["gate_routers"] = [{"host": r["host"], "unit": r["unit"], "api": r["api"], "model": r["model"]}
                              for r in result["routers"] if (r["host"], r["unit"]) in left]
        ch["runs_before"] = runs_before(record)
        revision = (cards.get(ch["card"]) or {}).get("revision") or "?"
        if host not in thosts:
            ch["runs_after"] = "nothing (retired)"
        else:
            # an unchanged host's files are the new card's already: upgrade.yml rewrites only its record
            what = {"none": "unchanged", "partner-restart": "restarted with its partner"}.get(
                ch["action"], "upgraded: %d unit file(s) written, %d removed" % (len(ch["write"]), len(ch["remove"])))
            ch["runs_after"] = "revision %s, %d unit(s) (%s)" % (revision[:12], ch["units"], what)
    # each router a surge drives, once: upgrade.yml probes its worker API before anything is staged
    seen = []
    for s in result["surges"]:
        for op in s["twin_ops"]:
            probe = {"router": op["router"], "router_unit": op["router_unit"], "api": op["api"]}
            if probe not in seen:
                seen.append(probe)
    result["surge_routers"] = seen
    result["diff_lines"] = dict((h, [line for d in ch["diff"] for line in d["lines"]])
                                for h, ch in result["hosts"].items() if ch["diff"])


def rollout(current, target, target_units, cards, serial=1, gpus=None, surge_hosts=None, twin_units=None):
    """Plan the upgrade of a fleet.

    :param current: ``{host: record or None}`` (see module docstring).
    :param target: the target plan.
    :param target_units: ``{host: [{"name", "content"}]}``.
    :param cards: ``{card key: {"sha256", "repo", "revision"}}``.
    :param serial: hosts per recipe per batch (see :func:`parse_serial`).
    :param gpus: ``{host: GPUs or None}`` of the play's hosts, for the room to start a twin beside an instance
        that would otherwise drop requests (:func:`_surge.surges`); None: unknown.
    :param surge_hosts: the hosts whose instances may surge (``launchcard_upgrade_surge``); None: every host.
    :param twin_units: ``(host, {"instances": twins}) -> [{"name", "content"}]``, the unit files of a host's surge
        twins (the builder of ``target_units``); None: no twin's files (``twin_units`` stays empty).
    :returns: the rollout (see module docstring).
    :raises RolloutError: a bad ``serial``.
    """
    serial = parse_serial(serial)
    current = current or {}
    thosts = target.get("hosts", {})
    names = sorted(set(thosts) | {h for h, r in current.items() if r and r.get("units")})
    changes = {h: host_change(h, current.get(h), thosts.get(h), target_units.get(h, []), cards) for h in names}
    routers = routers_of(target)
    warnings = []

    # Router operations: take each changed worker out of every regular-mode router that lists it; the other
    # modes have no drain here: their workers' restarts are outages (_outages).
    for r in routers:
        if changes.get(r["host"], {}).get("action", "none") != "none":
            r["touched"] = True
    for host, ch in changes.items():
        if ch["action"] in ("none", "new"):
            continue
        old = {i.get("unit"): i for i in (current.get(host) or {}).get("instances") or []}
        ch["router_ops"], refused = router_drains(routers, thosts.get(host, {}).get("instances", []), old)
        ch["router_listed"] = sorted(set((r["router"], r["router_unit"]) for r in refused))
        for op in ch["router_ops"]:
            for r in routers:
                if (r["host"], r["unit"]) == (op["router"], op["router_unit"]):
                    r["drains"].append(host)

    for host in names:
        if changes[host]["unpinned"]:
            rev = changes[host]["revision"]
            warnings.append("%s: the model revision changes (%s -> %s) but %s name no revision (their model is a "
                            "local path): they keep serving what that path holds" % (
                                host, rev["from"][:12], (rev["to"] or "?")[:12], ", ".join(changes[host]["unpinned"])))

    # Tiers and batches.
    moving = [h for h in names if changes[h]["action"] != "none"]
    batches = []
    for tier in TIERS:
        hosts = [h for h in moving if _tier(changes[h]) == tier]
        if tier == "prefill-decode":
            by_card = {}
            for h in names:
                if _tier(changes[h]) == "prefill-decode" and changes[h]["action"] != "retire":
                    by_card.setdefault(changes[h]["card"], []).append(h)
            for card, group in sorted(by_card.items(), key=lambda kv: str(kv[0])):
                if not any(changes[h]["action"] != "none" for h in group):
                    continue
                for h in group:
                    if changes[h]["action"] == "none":
                        changes[h]["action"] = "partner-restart"
                        changes[h]["restart"] = sorted(
                            i["unit"] for i in thosts[h]["instances"] if i["role"] in ("prefill", "decode"))
                        changes[h]["reasons"].append("prefill/decode partner of a host that changes")
                batches.append((tier, group))
            continue
        if tier == "retire":
            if hosts:
                batches.append((tier, hosts))
            continue
        for group in _pack(hosts, changes, serial):
            batches.append((tier, group))

    result = {
        "serial": serial,
        "hosts": changes,
        "batches": [{"index": n, "tier": tier, "hosts": group} for n, (tier, group) in enumerate(batches)],
        "routers": routers,
        "unchanged": [h for h in names if changes[h]["action"] == "none"],
        "warnings": warnings,
    }
    # the outages with no surge, then the surges that remove some of them
    result["surges"], refused = surge.surges(target, result, outages.outages(target, result), gpus, None, current,
                                             surge_hosts)
    for s in result["surges"]:
        changes[s["host"]]["router_ops"] += s["own_ops"]
        for op in s["own_ops"]:
            for r in routers:
                if (r["host"], r["unit"]) == (op["router"], op["router_unit"]):
                    r["drains"].append(s["host"])
    result["outages"] = outages.outages(target, result, refused)
    _batch_fields(result, current, target, cards, twin_units)
    return result


def report(plan, allow_outage=False):
    """The rollout in words, one line per item (for check mode and the log).

    :param plan: :func:`rollout` output.
    :param allow_outage: whether the run accepts the outages (:func:`_outages.report`).
    :returns: list of str.
    """
    lines = ["rollout: %d batch(es), serial %d (hosts per recipe per batch)" % (len(plan["batches"]), plan["serial"])]
    for b in plan["batches"]:
        lines.append("batch %d (%s): %s" % (b["index"] + 1, b["tier"], ", ".join(b["hosts"])))
        for h in b["hosts"]:
            ch = plan["hosts"][h]
            lines.append("  %s: %s (%s)" % (h, ch["action"], "; ".join(ch["reasons"]) or "-"))
            for f in ch["flags"]:
                lines.append("    %s flags: -[%s] +[%s]" % (f["unit"], ", ".join(f["removed"]), ", ".join(f["added"])))
            for name in ch["write"]:
                if not any(f["unit"] == name for f in ch["flags"]):
                    lines.append("    %s: unit file changes (see the diff)" % name)
            for name in ch["remove"]:
                lines.append("    %s: removed" % name)
            for name in ch["restart"]:
                lines.append("    %s: restart" % name)
            for op in ch["router_ops"]:
                lines.append("    out of router %s while it switches (%s)" % (op["router"], op["remove"]))
    touched = [r for r in plan["routers"] if r["touched"] or r["drains"]]
    for r in touched:
        # touched: the router's host changes; its own unit restarts only when its unit file is written or restarted
        ch = plan["hosts"].get(r["host"]) or {}
        own = r["unit"] in set(ch.get("write") or []) | set(ch.get("restart") or [])
        lines.append("router %s %s (%s): %s" % (
            r["host"], r["unit"], r["mode"],
            "; ".join(x for x in (
                ("unit changes, restarts last" if own else "its host changes, its unit does not") if r["touched"]
                else "",
                "drains %s through its worker API" % ", ".join(sorted(set(r["drains"]))) if r["drains"] else "")
                if x)))
    if not touched:
        lines.append("routers touched: none")
    lines.append("unchanged (not touched): %s" % (", ".join(plan["unchanged"]) or "none"))
    for w in plan["warnings"]:
        lines.append("warning: " + w)
    # an engine moved to another release, against the metric contract (_contract_upgrade): said, never refused
    for c in plan.get("contracts") or []:
        lines.append(("warning: " if c["warning"] else "") + "metric contract: " + c["text"])
    return lines + surge.report(plan.get("surges") or []) + outages.report(plan.get("outages") or [], allow_outage)
