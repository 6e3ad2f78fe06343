# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan file (``launchcard.plan/v1``): a fleet's plan, made once, applied to any subset of its hosts.

Pure Python, no Ansible import. ``playbooks/plan.yml`` writes it (:func:`document`, :func:`dumps`); the
``launch_card`` action, given ``plan_file``, reads it (:func:`loads`) and applies it instead of planning, once
:func:`differences` finds nothing that changed since: the cards' bytes, and the variables the planner read of
each host (:func:`host_inputs` is the only way the action reads a host, so the fingerprint holds all of them).
"""

from __future__ import annotations

import hashlib
import json

SCHEMA = "launchcard.plan/v1"
# the most differences one refusal lists (a group variable changed on a thousand hosts is one cause)
MAX_LISTED = 20
# hosts named in one line of a refusal before "and N more"
NAMED_HOSTS = 5


class PlanFileError(ValueError):
    """A plan file that cannot be read, or no longer matches the cards or the inventory."""


def input_vars(args, vendor_var):
    """The host variable behind each input the planner reads, in the order it reads them.

    :param args: the launch_card action's arguments (``card_var``, ``checksum_var``, ``recipes_var``,
        ``argv_overrides_var``, ``vendor_images_var``, ``image_vendors_var``).
    :param vendor_var: the variable naming a host's accelerator vendor (``_unit_spec.VARIABLES``).
    :returns: list of ``(input, variable)``.
    """
    return [
        ("card", args["card_var"]),
        ("checksum", args["checksum_var"]),
        ("recipes", args["recipes_var"]),
        ("address", "launchcard_address"),
        ("ansible_host", "ansible_host"),
        ("gpus", "launchcard_gpus"),
        ("argv_overrides", args["argv_overrides_var"]),
        ("vendor", vendor_var),
        ("vendor_images", args["vendor_images_var"]),
        ("image_vendors", args["image_vendors_var"]),
    ]


def host_inputs(host_vars, names):
    """``{input: value}`` of one host (``None`` where unset), read through ``names`` (:func:`input_vars`)."""
    return dict((key, host_vars.get(var)) for key, var in names)


def digest(value):
    """``sha256:<hex>`` of a JSON value, keys sorted: equal values give equal digests, whatever their order."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def bytes_digest(data):
    """``sha256:<hex>`` of a card's bytes, as ``sha256sum`` and ``launchcard_card_checksum`` spell it."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def fingerprint(hosts, names):
    """What the plan was made from, per host: the digest of each variable the planner read that is set.

    :param hosts: list of ``(host, inputs)`` in inventory order (the planner places in that order), ``inputs``
        from :func:`host_inputs`.
    :param names: :func:`input_vars`, to name each input by its variable.
    :returns: ``[[host, {variable: "sha256:<hex>"}], ...]``.
    """
    var = dict(names)
    return [[host, dict((var[k], digest(v)) for k, v in sorted(inputs.items()) if v is not None)]
            for host, inputs in hosts]


def document(plan, cards, card_digests, inventory, images=None):
    """The plan file's content.

    :param plan: ``launchcard_plan`` (the whole fleet's).
    :param cards: ``launchcard_cards`` (source to card model), for each card's model repo and revision.
    :param card_digests: source to :func:`bytes_digest` of the card's bytes.
    :param inventory: :func:`fingerprint`.
    :param images: the resolved images (``image_refs``, ``image_sizes`` of ``resolve_images``), or None.
    """
    doc = {
        "schema": SCHEMA,
        "cards": dict((src, {"sha256": card_digests[src], "repo": card["model"]["repo"],
                             "revision": card["model"]["revision"]}) for src, card in cards.items()),
        "inventory": inventory,
        "plan": plan,
    }
    if images and images.get("image_refs"):
        doc["images"] = {"image_refs": dict(images["image_refs"]), "image_sizes": dict(images.get("image_sizes") or {})}
    return doc


def dumps(doc):
    """The file's text: sorted keys, one-space indent, final newline; the same plan gives the same bytes."""
    return json.dumps(doc, indent=1, sort_keys=True, separators=(",", ": "), ensure_ascii=False) + "\n"


def text_of(planned, images=None):
    """The plan file's text from the planning step's result (``launch_card`` with ``facts=false``, registered as
    ``plan_planned``) and the resolved images (or None).

    :raises PlanFileError: ``planned`` is not such a result (the key it lacks named).
    """
    try:
        inputs = planned["launchcard_plan_inputs"]
        return dumps(document(planned["launchcard_plan"], planned["launchcard_cards"], inputs["cards"],
                              inputs["inventory"], images))
    except (KeyError, TypeError) as exc:
        raise PlanFileError("expected the launch_card result registered with facts=false (plan_planned), missing %s" % exc)


def loads(text, path="plan file"):
    """Parse and check a plan file's text.

    :raises PlanFileError: not JSON, another schema, or a part missing (the message names ``path``).
    """
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise PlanFileError("%s: not a plan file (not JSON: %s)" % (path, exc))
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise PlanFileError("%s: not a plan file: schema %r, expected %r (write one with playbooks/plan.yml)"
                            % (path, found, SCHEMA))
    shapes = (("cards", dict), ("inventory", list), ("plan", dict))
    for key, kind in shapes:
        if not isinstance(doc.get(key), kind):
            raise PlanFileError("%s: %s is missing or not a %s" % (path, key, "mapping" if kind is dict else "list"))
    if not isinstance(doc["plan"].get("hosts"), dict):
        raise PlanFileError("%s: plan.hosts is missing or not a mapping" % path)
    for entry in doc["inventory"]:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], dict)):
            raise PlanFileError("%s: inventory entry %r is not [host, {variable: digest}]" % (path, entry))
    return doc


def _hosts(names):
    """``host a`` or ``hosts a, b, c (3)``, at most :data:`NAMED_HOSTS` names, then how many more."""
    if len(names) == 1:
        return "host %s" % names[0]
    more = len(names) - NAMED_HOSTS
    shown = ", ".join(names[:NAMED_HOSTS]) + (" and %d more" % more if more > 0 else "")
    return "hosts %s (%d)" % (shown, len(names))


def differences(doc, card_digests, inventory, card_var=None):
    """What changed since the plan file was written, one line each; empty when it still applies.

    Hosts with the same changed variables share a line (a new card path changes every host's).

    :param doc: :func:`loads`.
    :param card_digests: source to :func:`bytes_digest` of each card of the plan, read now.
    :param inventory: :func:`fingerprint` of the inventory now: every host of the plan, or a subset of them
        (a sliced job's inventory holds its own hosts only); a host the plan does not hold is refused.
    :param card_var: the variable naming a host's card: when it changed, the line names the plan's cards.
    """
    out = []
    for src, card in sorted(doc["cards"].items()):
        now = card_digests.get(src)
        if now != card.get("sha256"):
            out.append("card %s: checksum %s in the plan, %s now" % (src, card.get("sha256"), now))
    planned = dict((host, inputs) for host, inputs in doc["inventory"])
    groups = {}
    for host, inputs in inventory:
        changed = (("not in the plan",) if host not in planned else
                   tuple(sorted(v for v in set(inputs) | set(planned[host]) if inputs.get(v) != planned[host].get(v))))
        if changed:
            groups.setdefault(changed, []).append(host)
    for changed, hosts in groups.items():
        if changed == ("not in the plan",):
            out.append("%s: not in the plan" % _hosts(hosts))
            continue
        line = "%s: %s changed" % (_hosts(hosts), ", ".join(changed))
        if card_var in changed:
            line += " (the plan was made from %s)" % ", ".join(sorted(doc["cards"]))
        out.append(line)
    order = [host for host, dummy in doc["inventory"]]
    rank = dict((host, i) for i, host in enumerate(order))
    common = [host for host, dummy in inventory if host in rank]
    if common != sorted(common, key=rank.get):
        out.append("inventory: the hosts' order changed (the planner places hosts in inventory order)")
    return out


def refusal(path, diffs):
    """The message of a plan file refused: every difference up to :data:`MAX_LISTED`, then how many more."""
    lines = diffs[:MAX_LISTED]
    if len(diffs) > MAX_LISTED:
        lines.append("... and %d more" % (len(diffs) - MAX_LISTED))
    return ("%s no longer matches the cards or the inventory; plan again (playbooks/plan.yml) or undo the change:\n  %s"
            % (path, "\n  ".join(lines)))


# the run id of a run that applies a plan file, as plugins/module_utils/_lock.py records it: "plan-" and this many
# hex digits of the file's digest
RUN_ID_DIGITS = 16


def run_id(file_digest):
    """The run id every job applying one plan file shares, so the slices of one plan hold the fleet's run lock as
    one run: ``plan-<16 hex>`` of :func:`bytes_digest` of the file. Another plan (or a run without one) is another
    run, refused while this one holds the lock."""
    algo, dummy, hexdigest = (file_digest or "").partition(":")
    if algo != "sha256" or len(hexdigest) < RUN_ID_DIGITS:
        raise PlanFileError("not a sha256 digest of a plan file: %r" % (file_digest,))
    return "plan-" + hexdigest[:RUN_ID_DIGITS].lower()


def keeps_fleet_lock(run, plan_hosts, play_hosts, final=None):
    """Whether this run leaves the fleet lock held when it ends, for a later job of the same plan to release.

    A run of its own (no shared plan id) releases it as it always did. A job of a plan file (``run["plan"]``) is one
    part of one run: a slice that released the fleet lock when it ended would leave the slices still running
    unlocked, so only the plan's final job releases it: ``final`` (``launchcard_plan_final``) when given, else a job
    whose hosts are every host of the plan (an unsliced run of the file).

    :param run: ``launchcard_run``.
    :param plan_hosts: the plan's hosts (``launchcard_plan.hosts``).
    :param play_hosts: this job's hosts (``ansible_play_hosts_all``).
    :param final: ``launchcard_plan_final``, or None when unset.
    """
    if not (run or {}).get("plan"):
        return False
    if final is not None:
        return not final
    return not set(plan_hosts or ()) <= set(play_hosts or ())
