# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory mistakes the planning step names before it plans (the launch_card action, on the controller).

Pure Python, no Ansible import. The collection's variables are not listed here: :func:`known_variables` reads
every ``launchcard_*`` name the roles' ``meta/argument_specs.yml`` and ``defaults/main.yml`` and the playbooks
(their play variables, ``playbooks/roles/play_*``) write, so a variable is known once it is documented or read.
"""

from __future__ import annotations

import functools
import glob
import os
import re

from urllib.parse import urlsplit

from ansible_collections.launchcard.inference.plugins.plugin_utils._card_issues import near, show

# the installed collection's root: plugins/plugin_utils/ is two levels below it
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# where the collection names its variables (globs under ROOT)
SOURCES = ("roles/*/meta/argument_specs.yml", "roles/*/defaults/main.yml", "playbooks/*.yml",
           "playbooks/tasks/*.yml", "playbooks/roles/*/vars/main.yml")
PREFIX = "launchcard_"
_NAME = re.compile(r"\b%s[a-z0-9_]*[a-z0-9]\b" % PREFIX)
# the switch that makes an unknown variable an error (read from the play's hosts; an extra var sets it for all)
STRICT_VARIABLE = "launchcard_strict_variables"
# hosts named in one line before "and N more"
NAMED_HOSTS = 5


@functools.lru_cache(maxsize=4)
def known_variables(root=ROOT):
    """Every ``launchcard_*`` name the collection's role specs, role defaults and playbooks write."""
    names = set()
    for pattern in SOURCES:
        for path in glob.glob(os.path.join(root, pattern)):
            with open(path, encoding="utf-8") as f:
                names.update(_NAME.findall(f.read()))
    return frozenset(names)


def _hosts(names):
    names = sorted(names)
    more = len(names) - NAMED_HOSTS
    return ", ".join(names[:NAMED_HOSTS]) + (" and %d more" % more if more > 0 else "")


def unknown_variables(host_names, known):
    """One line per ``launchcard_*`` variable no role or playbook of the collection reads, with the hosts that set it.

    :param host_names: ``{host: iterable of its variable names}`` (inventory, group, host and extra variables).
    :param known: :func:`known_variables`.
    :returns: sorted lines ``"launchcard_runtim (lc-a, lc-b): not a variable of launchcard.inference, ignored;
        did you mean launchcard_runtime?"``.
    """
    at = {}
    for host, names in host_names.items():
        for name in names:
            if isinstance(name, str) and name.startswith(PREFIX) and name not in known:
                at.setdefault(name, []).append(host)
    lines = []
    for name in sorted(at):
        guess = near(name, sorted(known))
        lines.append("%s (%s): not a variable of launchcard.inference, ignored%s" % (
            name, _hosts(at[name]), "; did you mean %s?" % guess if guess else ""))
    return lines


def misspelt(names, variables, known):
    """The unknown ``launchcard_*`` names among ``names`` (one host's variables) that :func:`unknown_variables` takes
    for each of ``variables``: ``{variable: sorted names}``, only the variables some name is near."""
    out = {}
    for name in names:
        if isinstance(name, str) and name.startswith(PREFIX) and name not in known:
            guess = near(name, sorted(known))
            if guess in variables:
                out.setdefault(guess, []).append(name)
    return dict((k, sorted(v)) for k, v in out.items())


def registry_credentials(value, variable="launchcard_registry_credentials"):
    """Problems of a ``{registry: {username, password}}`` mapping: each entry needs both, non-empty strings."""
    if value in (None, "", {}):
        return []
    if not isinstance(value, dict):
        return ["%s: expected a mapping {REGISTRY: {username: ..., password: ...}}, found %s" % (
            variable, type(value).__name__)]
    out = []
    for registry in sorted(value, key=str):
        entry = value[registry]
        where = "%s[%s]" % (variable, show(registry))
        if not isinstance(entry, dict):
            out.append("%s: expected {username: ..., password: ...}, found %s" % (where, type(entry).__name__))
            continue
        for key in ("username", "password"):
            got = entry.get(key)
            if not isinstance(got, str) or not got.strip():
                # the value itself is never shown: it may be a secret
                out.append("%s.%s is %s: the registry would be asked without credentials" % (
                    where, key, "missing" if got is None else "empty" if not got else "not a string"))
    return out


def hub_endpoint(value, variable="launchcard_hf_endpoint"):
    """Problems of the Hub endpoint: an ``http(s)://HOST`` URL (huggingface_hub joins paths onto it as is)."""
    if value in (None, ""):
        return []
    if not isinstance(value, str):
        return ["%s: expected an http:// or https:// URL, found %s" % (variable, type(value).__name__)]
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return ["%s: expected an http:// or https:// URL with a host, found %s" % (variable, show(value))]
    return []


def card_path(src, inventory_dir, variable):
    """A host's card source made absolute: a relative path is read from its inventory's directory.

    :returns: ``(path, None)``, or ``(None, problem)`` when a relative path has no inventory directory to
        be read from (a host added by ``add_host``).
    """
    if "://" in src or os.path.isabs(src):
        return src, None
    if not inventory_dir:
        return None, "%s: %s is a relative path and the host has no inventory directory to read it from; " \
                     "write an absolute path (or \"{{ inventory_dir }}/...\")" % (variable, show(src))
    return os.path.normpath(os.path.join(inventory_dir, src)), None


def no_recipe(card_hosts, recipes_var, card_var):
    """The refusal of an inventory whose hosts name a card but no recipe: nothing would be planned anywhere."""
    return ("no host names a recipe: %s set %s but no host sets %s, so nothing would be planned; list the "
            "recipes each host runs in %s" % (_hosts(card_hosts), card_var, recipes_var, recipes_var))


def unknown_recipe_keys(host_values, host_recipes, variable):
    """One line per key of a per-recipe variable (``{RECIPE: ...}``) that is no recipe of the host's card, with the
    hosts that set it: the value is ignored for it, nothing stops.

    :param host_values: ``{host: the variable's value}`` (hosts without it left out or None).
    :param host_recipes: ``{host: the recipe names of its card}``.
    :returns: sorted lines ``"launchcard_liveness_recipes['vllm-agregated'] (lc-a): no recipe of the card, ignored;
        did you mean vllm-aggregated?"``.
    """
    at = {}
    for host, value in host_values.items():
        if not hasattr(value, "keys") or host not in host_recipes:
            continue
        names = sorted(host_recipes[host])
        for key in value.keys():
            if key not in names:
                at.setdefault((str(key), tuple(names)), []).append(host)
    lines = []
    for (key, names), hosts in sorted(at.items()):
        guess = near(key, list(names))
        lines.append("%s[%s] (%s): no recipe of the card, ignored%s" % (
            variable, show(key), _hosts(hosts), "; did you mean %s?" % guess if guess else ""))
    return sorted(set(lines))
