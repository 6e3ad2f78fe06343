# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which engine parser checks a plan's argv, and where: one check per (image or native Python, engine, argv),
on one host that has the image (module launchcard.inference.engine_argv runs it; module_utils._engine_argv)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.launchcard.inference.plugins.module_utils import _engine_argv
from ansible_collections.launchcard.inference.plugins.plugin_utils import _units

_LABEL = {"vllm": "vLLM", "sglang": "SGLang"}


def argv_checks(plan, image_refs, runtimes, pythons=None, in_place=None, options=None):
    """The distinct argv checks of ``plan``: each instance's argv as its unit runs it (:func:`_units.engine_argv`,
    e.g. with vLLM's ``--shutdown-timeout``), so the engine's parser sees every flag the collection adds.

    :param image_refs: ``{image: NAME@sha256:...}``, this run's resolved digests (container runtimes).
    :param runtimes: ``{host: docker | podman | native}``.
    :param pythons: ``{host: the native virtualenv's python}`` (native hosts).
    :param in_place: ``{host: [images whose digest the host's engine store holds]}`` (preflight's
        ``facts.image_disk.in_place``); a container check runs on the first such host that runs it, and has
        ``host: None`` when no host holds the image yet.
    :param options: ``{host: unit options}`` (plugin_utils._unit_options.host_options); a host without: the defaults.
    :returns: list of ``{key, host, hosts, engine, tokens, runtime, image, python, podman_cgroups, recipes}``, sorted
        by key; ``podman_cgroups`` is the unit option of the host that runs the check, which a podman check runs with.
    """
    pythons, in_place, options = pythons or {}, in_place or {}, options or {}
    checks = {}
    for host in sorted((plan or {}).get("hosts") or {}):
        runtime = runtimes.get(host) or "docker"
        for inst in plan["hosts"][host].get("instances") or []:
            engine = inst.get("launcher")
            if engine not in _engine_argv.ENGINES:
                continue  # the router is not an engine: its argv is not checked here
            tokens = _engine_argv.parser_tokens(engine, _units.engine_argv(inst, options.get(host)))
            if runtime == "native":
                where = ("native", pythons.get(host) or "python3")
            else:
                where = ("image", (image_refs or {}).get(inst.get("image")) or inst.get("image"))
            key = "%s %s %s %s" % (where[0], where[1], engine, " ".join(tokens))
            check = checks.setdefault(key, {
                "key": key, "host": None, "hosts": [], "engine": engine, "tokens": tokens,
                "runtime": runtime, "image": where[1] if where[0] == "image" else None,
                "python": where[1] if where[0] == "native" else None, "podman_cgroups": None, "recipes": [],
                "engine_label": _LABEL[engine]})
            check["hosts"].append(host)
            if inst["recipe"] not in check["recipes"]:
                check["recipes"].append(inst["recipe"])
            if check["host"] is None and (where[0] == "native" or inst.get("image") in (in_place.get(host) or [])):
                check["host"], check["runtime"] = host, runtime
                check["podman_cgroups"] = (options.get(host) or {}).get("podman_cgroups")
    return [checks[k] for k in sorted(checks)]


def argv_check_report(checks, results):
    """``(refusals, warnings)``: one line per rejected argv (each of its recipes: the flag, the engine's message,
    the near spelling); a warning per check that could not run (no host holds the image yet, or no parser)."""
    refusals, warnings = [], []
    by_key = dict((r.get("key"), r) for r in results or [])
    for check in checks:
        res = by_key.get(check["key"])
        if res is None:
            warnings.append("argv of %s not checked against %s: no host holds %s yet" % (
                ", ".join(check["recipes"]), check["engine_label"], check["image"] or check["python"]))
        elif res.get("status") == "rejected":
            label = check["engine_label"] + (" %s" % res["version"] if res.get("version") else "")
            for recipe in check["recipes"]:
                refusals.append(_engine_argv.refusal(recipe, dict(res, engine_label=label)))
        elif res.get("status") != "ok":
            recipes = ", ".join(check["recipes"])
            warnings.append("argv of %s not checked on %s: %s" % (recipes, check["host"], res.get("message")))
    return refusals, warnings
