# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the monitoring hosts: the plan's file_sd files where a monitoring host keeps them, and the rules file."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text
from ansible_collections.launchcard.inference.plugins.plugin_utils import _alert_rules
from ansible_collections.launchcard.inference.plugins.plugin_utils import _scrape_targets as scrape_targets


def file_sd_files(plan, image_refs=None, monitors=None, folder=None, without=None, gpu_exporters=None, previous=None):
    """``[{host, path, content}]``: each monitoring host's files, sorted; ``previous``: the files read back there."""
    try:
        read = scrape_targets.read_back(previous)
        return [dict(host=host, path=path, content=text) for host in sorted(set(monitors or ()))
                for path, text in scrape_targets.file_sd_paths(
                    plan, image_refs or {}, host, folder, without or (), gpu_exporters or {},
                    dict((p, t) for (h, p), t in read.items() if h == host)).items()]
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("launchcard.inference.file_sd_files: %s" % to_text(exc))


def file_sd_scrape_configs(folder=None, monitor=None, recipes=None):
    return scrape_targets.scrape_configs(folder, monitor, recipes)


def alert_rules(thresholds=None):
    try:
        return _alert_rules.rule_groups(thresholds or {})
    except ValueError as exc:
        raise AnsibleFilterError("launchcard.inference.alert_rules: %s" % to_text(exc))


class FilterModule(object):
    """launchcard.inference filters of the monitoring hosts."""

    def filters(self):
        return {"file_sd_files": file_sd_files, "alert_rules": alert_rules,
                "file_sd_scrape_configs": file_sd_scrape_configs}
