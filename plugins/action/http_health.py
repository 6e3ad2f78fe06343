# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of ``launchcard.inference.http_health``: the module, with ``textfile.directory`` filled in."""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.plugin_utils._textfile_action import TextfileAction


class ActionModule(TextfileAction):
    """Run the module on the host."""

    MODULE = "launchcard.inference.http_health"
