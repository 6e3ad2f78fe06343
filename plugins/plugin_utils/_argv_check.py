# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which engine parser checks a plan's argv, and where: one check per (image or native Python, engine, argv),
on one host that has the image or pulls it (module launchcard.inference.engine_argv runs it; module_utils._engine_argv)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.launchcard.inference.plugins.module_utils import _engine_argv
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units

_LABEL = {"vllm": "vLLM", "sglang": "SGLang"}


def _running(recorded, host, recipe, tokens, ref):
    """Whether ``host``'s record says it runs ``recipe`` with these parser tokens (a contiguous run of the words of
    its unit's command line, as the record keeps the unit) in this image."""
    rec = (recorded or {}).get(host) or {}
    words = (rec.get("argv") or {}).get(recipe)
    if not words or not tokens:
        return False
    if not any(words[i:i + len(tokens)] == tokens for i in range(len(words) - len(tokens) + 1)):
        return False
    return ref is None or (rec.get("image_refs") or {}).get(ref[0]) == ref[1]


def argv_checks(plan, image_refs, runtimes, pythons=None, in_place=None, options=None, engines=None, recorded=None,
                pull=False, run_args=None, containers_conf=None):
    """The distinct argv checks of ``plan`` that this run needs: each instance's argv as its unit runs it
    (:func:`_units.engine_argv`, e.g. with vLLM's ``--shutdown-timeout``), so the engine's parser sees every flag the
    collection adds.

    :param image_refs: ``{image: NAME@sha256:...}``, this run's resolved digests (container runtimes).
    :param runtimes: ``{host: docker | podman | native}``.
    :param pythons: ``{host: the native virtualenv's python}``: the native hosts whose virtualenv is installed.
    :param in_place: ``{host: [images whose digest the host's engine store holds]}`` (preflight's
        ``facts.image_disk.in_place``); a container check runs on the first such host that runs it.
    :param options: ``{host: unit options}`` (plugin_utils._unit_options.host_options); a host without: the defaults.
    :param engines: ``{host: whether its container engine (the runtime's binary) is installed}``.
    :param recorded: ``{host: {argv: {recipe: words of its unit's command line}, image_refs: {image: ref}}}`` from
        each host's record: an instance whose host's unit already runs that argv in that image (native: that argv)
        needs no check, so a run that changes no argv, no added flag and no image checks nothing (no round trip
        on a no-op run).
    :param pull: when no host holds the image, give the check to the first of its hosts with the engine
        installed, which pulls the image for it (``pull: true``); false (check mode, a run that stops anyway):
        such a check has ``host: None`` and a ``reason``.
    :param run_args: ``{host: [podman run options its units carry, e.g. --cgroups=disabled]}``.
    :param containers_conf: ``{host: the runtime role's containers.conf drop-in text, or None}``.
    :returns: list of ``{key, host, hosts, engine, tokens, runtime, image, python, recipes, pull, reason, run_args,
        containers_conf}``, sorted by key.
    """
    pythons, in_place, engines, options = pythons or {}, in_place or {}, engines or {}, options or {}
    run_args, containers_conf = run_args or {}, containers_conf or {}
    checks = {}
    for host in sorted((plan or {}).get("hosts") or {}):
        runtime = runtimes.get(host) or "docker"
        for inst in plan["hosts"][host].get("instances") or []:
            engine = inst.get("launcher")
            if engine not in _engine_argv.ENGINES:
                continue  # the router is not an engine: its argv is not checked here
            tokens = _engine_argv.parser_tokens(engine, _units.engine_argv(inst, options.get(host)))
            if runtime == "native":
                where, ref = ("native", pythons.get(host) or "python3"), None
            else:
                where = ("image", (image_refs or {}).get(inst.get("image")) or inst.get("image"))
                ref = (inst.get("image"), where[1])
            if _running(recorded, host, inst["recipe"], tokens, ref):
                continue
            key = "%s %s %s %s" % (where[0], where[1], engine, " ".join(tokens))
            check = checks.setdefault(key, {
                "key": key, "host": None, "hosts": [], "engine": engine, "tokens": tokens,
                "runtime": runtime, "image": where[1] if where[0] == "image" else None,
                "python": where[1] if where[0] == "native" else None, "recipes": [],
                "engine_label": _LABEL[engine], "pull": False, "reason": None, "card_image": inst.get("image"),
                "fields": {}})
            check["hosts"].append(host)
            if inst["recipe"] not in check["recipes"]:
                check["recipes"].append(inst["recipe"])
                # where the recipe is in its card, so a refusal names the field (envs[i].argv[j])
                check["fields"][inst["recipe"]] = [plan["hosts"][host].get("card"), inst.get("recipe_index")]
            if check["host"] is None and (host in pythons if where[0] == "native"
                                          else inst.get("image") in (in_place.get(host) or [])):
                check["host"], check["runtime"] = host, runtime
    for check in checks.values():
        if check["host"] is not None:
            continue
        if check["python"] is not None:
            # a first native deploy: a temporary virtualenv of the engine for the check would cost a full install
            check["reason"] = "no host has its virtualenv yet (the runtime role installs the engine after preflight)"
            continue
        pullers = [h for h in check["hosts"] if engines.get(h)]
        if pull and pullers:
            # first deploy: one host pulls the image for the check (kept when accepted: the runtime role's pull)
            check.update(host=pullers[0], runtime=runtimes.get(pullers[0]) or "docker", pull=True)
        elif not pullers:
            check["reason"] = "no host holds %s yet, nor has its container engine installed" % check["image"]
        else:
            check["reason"] = "no host holds %s yet, and this run pulls none for the check" % check["image"]
    for check in checks.values():
        if check["host"] is not None and check["image"] is not None:
            check["run_args"] = list(run_args.get(check["host"]) or [])
            check["containers_conf"] = containers_conf.get(check["host"])
    return [checks[k] for k in sorted(checks)]


def card_field(cards, where, flag, value=None):
    """``envs[i].argv[j]`` of ``flag`` (``--f`` or ``--f=v``) in the card recipe ``where`` (``[card key, i]``), or
    of the word after it where that is the ``value`` the engine refused; ``envs[i]`` when its argv lacks the flag (an
    override or the collection added it); None when unknown."""
    key, index = where or (None, None)
    if index is None:
        return None
    recipe = next((r for r in ((cards or {}).get(key) or {}).get("recipes") or [] if r.get("index") == index), None)
    argv = (recipe or {}).get("argv") or []
    for j, token in enumerate(argv):
        if flag and (token == flag or token.startswith(flag + "=")):
            at = j + 1 if token == flag and value is not None and argv[j + 1:j + 2] == [value] else j
            return "envs[%d].argv[%d]" % (index, at)
    return "envs[%d]" % index


def argv_check_report(checks, results, cards=None):
    """``(refusals, warnings)``: one line per rejected argv (each of its recipes: the card field, the flag, the
    engine's message, the near spelling, and the image a host pulled for the check and removed); a warning per check
    that could not run (no host holds the image and none pulled it, or no parser).

    :param cards: ``{card key: card model}`` (``launchcard_cards``), to name each rejected flag's field."""
    refusals, warnings = [], []
    by_key = dict((r.get("key"), r) for r in results or [])
    for check in checks:
        res = by_key.get(check["key"])
        recipes = ", ".join(check["recipes"])
        if res is None:
            warnings.append("argv of %s not checked against %s: %s" % (
                recipes, check["engine_label"], check.get("reason") or "no host ran the check"))
        elif res.get("status") == "rejected":
            label = check["engine_label"] + (" %s" % res["version"] if res.get("version") else "")
            for recipe in check["recipes"]:
                field = card_field(cards, (check.get("fields") or {}).get(recipe), res.get("flag"),
                                   _engine_argv.bad_value(res.get("message")))
                line = _engine_argv.refusal(recipe, dict(res, engine_label=label), field)
                if res.get("pulled"):
                    line += " [%s pulled on %s for the check, removed]" % (check["image"], check["host"])
                refusals.append(line)
        elif res.get("status") != "ok":
            warnings.append("argv of %s not checked on %s: %s" % (recipes, check["host"], res.get("message")))
    return refusals, warnings


def argv_pulls_kept(checks, results):
    """The images hosts pulled for checks the engine accepted (kept for the runtime role): ``[{host, runtime,
    image}]``, to remove again when another check's refusal stops the run."""
    by_key = dict((r.get("key"), r) for r in results or [])
    kept = []
    for check in checks:
        res = by_key.get(check["key"]) or {}
        if res.get("pulled") and res.get("status") != "rejected":
            kept.append({"host": check["host"], "runtime": check["runtime"], "image": check["image"]})
    return kept
