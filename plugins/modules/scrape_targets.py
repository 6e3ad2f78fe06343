#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: scrape_targets
short_description: Write a monitoring host's Prometheus file_sd files in one call
version_added: 1.0.0
description:
  - Writes every file of O(files) on the host in one module call - C(playbooks/tasks/file-sd.yml) gives it the files the
    filter C(launchcard.inference.file_sd_files) makes for one host of C(launchcard_monitoring), so the host gets one
    round trip where a folder task and a copy per file took several each.
  - A folder above a file that does not exist is made, mode C(0755); a file's own folder that exists is set to
    C(0755). A file whose text differs is written to a temporary file in its own folder and renamed over the old
    one, so Prometheus never reads half a file; it is left mode C(0644), keeping the owner of the file it replaces.
    A file whose text is the same only gets its mode set where that differs, and is not rewritten (its mtime stays).
  - A path that is not absolute, has a C(..) segment, ends in C(/) or is given twice fails the task before anything
    is written, naming the entry (C(files[i].path)).
options:
  files:
    description: The files to write, in their order.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: The file's absolute path, as it is (no C(~) or variable is expanded).
        type: str
        required: true
      content:
        description: The file's whole text, written as UTF-8.
        type: str
        required: true
      host:
        description:
          - The monitoring host the entry is for, as the C(launchcard.inference.file_sd_files) filter names it. With
            O(host), an entry naming another host is left out.
        type: str
  host:
    description:
      - Write only the entries of O(files) whose O(files[].host) is this one or that name no host, so a task can pass
        every monitoring host's files and delegate to each host in turn.
    type: str
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes
attributes:
  check_mode:
    details: Says which folders and files would be made or changed (RV(folders), RV(files)); nothing is written.
  diff_mode:
    support: full
    details: As M(ansible.builtin.file) and M(ansible.builtin.copy) - per folder made, its state; per file, its text before
      (empty when there was none) and after, or its mode where only that changes.
seealso:
  - module: ansible.builtin.copy
"""

EXAMPLES = r"""
- name: Write the scrape targets of one monitoring host
  launchcard.inference.scrape_targets:
    files:
      - path: /etc/prometheus/file_sd/launchcard-nodes.json
        content: |
          [{"labels": {"host": "gpu-01"}, "targets": ["10.0.0.11:9100"]}]
      - path: /etc/prometheus/file_sd/launchcard-gpus.json
        content: "[]\n"
  delegate_to: prom-01
  run_once: true
"""

RETURN = r"""
files:
  description:
    - One entry per file of O(files), in their order - C(path), C(action) (C(created), C(updated), C(mode) where only
      the mode was set, or C(unchanged); in check mode what would be done) and C(changed).
  returned: success
  type: list
  elements: dict
  sample: [{path: /etc/prometheus/file_sd/launchcard-gpus.json, action: unchanged, changed: false}]
folders:
  description: The folders made (in check mode, that would be), outermost first, then the files' folders that were there and were set to mode C(0755).
  returned: success
  type: list
  elements: str
  sample: [/etc/prometheus/file_sd]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.launchcard.inference.plugins.module_utils import _scrape_targets as scrape_targets


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type="list", elements="dict", required=True, options=dict(
                path=dict(type="str", required=True),
                content=dict(type="str", required=True),
                host=dict(type="str"),
            )),
            host=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    try:
        files = module.params["files"]
        if module.params["host"] is not None:
            files = scrape_targets.for_host(files, module.params["host"])
        changed, files, folders, diff = scrape_targets.write(files, module.check_mode, module.atomic_move)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot write the scrape targets: %s" % exc)
    more = {"diff": diff} if module._diff and diff else {}
    module.exit_json(changed=changed, files=files, folders=folders, **more)


if __name__ == "__main__":
    main()
