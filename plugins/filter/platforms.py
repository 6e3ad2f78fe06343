# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The supported-OS table (module_utils/_platforms.py) for the stack roles."""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.module_utils import _platforms as platforms


def os_support(facts):
    """``{supported, summary, found}`` for a host's Ansible facts (``distribution``, ``distribution_version``)."""
    facts = facts or {}
    return platforms.support(facts.get("distribution"), facts.get("distribution_version"))


class FilterModule(object):
    """launchcard.inference platform filters."""

    def filters(self):
        return {"os_support": os_support}
