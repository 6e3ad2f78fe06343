# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hosts that run the accelerator exporter (role gpu_exporter); plugins/plugin_utils/_gpu_exporter.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.launchcard.inference.plugins.plugin_utils import _gpu_exporter as gpu_exporter


def gpu_exporters(plan, hostvars):
    """``{host: settings}`` of the plan's hosts whose ``launchcard_gpu_exporter_enabled`` is true."""
    try:
        return gpu_exporter.host_settings((plan or {}).get("hosts") or {}, hostvars or {})
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.gpu_exporters: %s" % exc)


class FilterModule(object):
    """launchcard.inference accelerator exporter filters."""

    def filters(self):
        return {"gpu_exporters": gpu_exporters}
