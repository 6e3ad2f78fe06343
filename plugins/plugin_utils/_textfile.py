# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the collection writes its own metrics for node_exporter's textfile collector.

node_exporter reads every ``*.prom`` file of the directory its ``--collector.textfile.directory`` names. Debian's
``prometheus-node-exporter`` package (1.5.0-1+b6, Debian 12) ships that directory, ``/var/lib/prometheus/node-exporter``,
and its ``/usr/share/doc/prometheus-node-exporter/README.textfile`` says to put there files "readable by the
prometheus user" (the user its unit runs as), written beside and renamed into place so the collector never reads
half a file.

Pure Python, no Ansible import.
"""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.plugin_utils._scrape_targets import card_of

TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"


def instances(fleet_plan, host):
    """``{unit: {card, recipe, revision, role, engine}}`` of every instance the plan places on ``host``, the labels
    of ``launchcard_instance_info`` (``module_utils/_textfile_facts.py``); the same values as its scrape targets'."""
    hp = (fleet_plan.get("hosts") or {}).get(host)
    if not hp:
        return {}
    card = card_of(fleet_plan, hp)
    return dict((i["unit"], {"card": card.get("slug", ""), "recipe": i["recipe"], "revision": card.get("revision", ""),
                             "role": i["role"], "engine": i["engine"]}) for i in hp.get("instances") or [])


def with_directory(args):
    """A module's arguments with ``textfile.directory`` filled in when ``textfile`` is given without it (the host side
    of a module cannot import plugin_utils, so its action plugin does this)."""
    if isinstance(args.get("textfile"), dict) and not args["textfile"].get("directory"):
        return dict(args, textfile=dict(args["textfile"], directory=TEXTFILE_DIR))
    return args
