# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of playbooks/upgrade.yml; the logic is in plugin_utils._upgrade_fleet."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.launchcard.inference.plugins.plugin_utils import _upgrade_fleet as upgrade_fleet


def upgrade_card(cards, key):
    """``{sha256, repo, revision}`` of one loaded card, for the host's record (see plugin_utils._upgrade_fleet)."""
    try:
        return upgrade_fleet.record_card(cards, key)
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.upgrade_card: %s" % to_text(exc))


class FilterModule(object):
    """launchcard.inference upgrade filters."""

    def filters(self):
        return {"upgrade_card": upgrade_card}
