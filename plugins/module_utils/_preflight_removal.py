# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's checks of the host's record: a deploy never stops an instance a host serves today only because the
plan no longer places it there (``removal``: a dropped group, a misspelt variable; the converge would prune its unit),
nor moves the instances it keeps to another runtime (``runtime_change``: a misspelt ``launchcard_runtime`` falls back
to the default, and the runtime role and the converge would replace every engine).

Pure Python, no Ansible import. Read from the host's record (``_state.py``, written by the deploy that started the
instance) in the preflight call, so the refusal comes before any host changes and costs no round trip.
"""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.module_utils._preflight_checks import _result

# the variable that lets a deploy remove them (undeploy.yml removes a whole fleet)
ALLOW_VARIABLE = "launchcard_allow_removal"
# the variable that names the runtime, and the one that lets a deploy move running instances to another
RUNTIME_VARIABLE = "launchcard_runtime"
# the variable that places recipes on a host: one misspelt leaves the host out of the plan
RECIPES_VARIABLE = "launchcard_recipes"
ALLOW_RUNTIME_VARIABLE = "launchcard_allow_runtime_change"


def removals(recorded, needs):
    """The recorded instances whose unit the plan gives this host no more, under this name or a former one
    (``needs.units``, ``needs.former_units``: an instance renamed by a release is kept, not removed)."""
    kept = set(needs.get("units") or ()) | set(needs.get("former_units") or ())
    return [(unit, iid) for unit, iid in recorded if unit not in kept]


def check_removal(host):
    """``removal``: no instance the host's record names is left out of the plan, unless the deploy allows it
    (``options.allow_removal``; None: not checked, as for an upgrade, which removes its own).
    ``options.misspelt_recipes``: the host's unknown variables near :data:`RECIPES_VARIABLE`, named in the message."""
    allow = host.options.get("allow_removal")
    recorded = host.facts.get("recorded_units")
    if allow is None or recorded is None:
        return None
    gone = removals(recorded, host.needs)
    if not gone:
        return _result("removal", True, "every recorded instance planned", "%d recorded" % len(recorded),
                       "the plan keeps every instance this host runs")
    names = ", ".join(iid for dummy, iid in gone)
    if allow:
        return _result("removal", False, "every recorded instance planned", names,
                       "the plan no longer places %s here: this deploy stops and removes %s (%s is true)" % (
                           names, "it" if len(gone) == 1 else "them", ALLOW_VARIABLE), severity="warning")
    misspelt = [str(v) for v in host.options.get("misspelt_recipes") or ()]
    why = ("%s is set on this host: did you mean %s?" % (", ".join(misspelt), RECIPES_VARIABLE) if misspelt else
           "a host or group without its %s, a misspelt variable?" % RECIPES_VARIABLE)
    return _result("removal", False, "every recorded instance planned", names,
                   "this host serves %s, which the plan no longer places here (%s): nothing is stopped; fix the "
                   "inventory, or set %s=true to remove %s (undeploy.yml removes a whole fleet)" % (
                       names, why, ALLOW_VARIABLE, "it" if len(gone) == 1 else "them"))


def check_runtime_change(host):
    """``runtime_change``: the instances the host runs today and the plan keeps there stay under the runtime their
    record names, unless the deploy allows the change (``options.allow_runtime_change``; None: not checked).
    ``options.misspelt``: the host's unknown variables near :data:`RUNTIME_VARIABLE`, named in the message."""
    allow = host.options.get("allow_runtime_change")
    kind = host.facts.get("recorded_runtime")
    recorded = host.facts.get("recorded_units")
    if allow is None or not kind or not recorded:
        return None
    gone = set(removals(recorded, host.needs))
    kept = [iid for unit, iid in recorded if (unit, iid) not in gone]
    want = host.options.get("runtime") or "docker"
    if not kept:
        return None
    need = "%s (the record's runtime)" % kind
    found = "%s (%s)" % (want, RUNTIME_VARIABLE)
    if want == kind:
        return _result("runtime_change", True, need, found, "the plan keeps the runtime this host's instances run under")
    names = ", ".join(kept)
    them = "it" if len(kept) == 1 else "them"
    misspelt = [str(v) for v in host.options.get("misspelt") or ()]
    variable = RUNTIME_VARIABLE + ("; %s is set on this host: did you mean %s?" % (
        ", ".join(misspelt), RUNTIME_VARIABLE) if misspelt else "")
    if allow:
        return _result("runtime_change", False, need, found,
                       "this host runs %s under %s; the plan asks for %s (%s): this deploy moves %s to %s (%s is true)" % (
                           names, kind, want, variable, them, want, ALLOW_RUNTIME_VARIABLE), severity="warning")
    return _result("runtime_change", False, need, found,
                   "this host runs %s under %s, but the plan asks for %s (%s): nothing is changed; set %s to %s, "
                   "or set %s=true to move %s to %s" % (
                       names, kind, want, variable, RUNTIME_VARIABLE, kind, ALLOW_RUNTIME_VARIABLE, them, want))
