#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hf_snapshot_progress
short_description: Read the progress of an hf_snapshot download running async
version_added: 1.0.0
description:
  - Reads the file that M(launchcard.inference.hf_snapshot) writes with O(launchcard.inference.hf_snapshot#module:progress_file)
    and returns the bytes and files of the revision on disk, and one line for the run's output (RV(msg)).
  - Waits up to O(wait) seconds, and returns as soon as the download ends, so a loop of this module with
    C(loop_control.break_when) (ansible-core 2.18 or newer) prints the progress between polls and stops when the
    download stops. The result of the download itself is C(ansible.builtin.async_status)'s.
  - The download is running while its process holds the lock C(PATH.lock). A file whose process is gone without a
    final state (killed, for example by the C(async) time limit) is reported with RV(state=killed).
  - A file that does not exist yet (the async run has not started) is waited for, up to O(wait) seconds.
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes.read_only
  - launchcard.inference.attributes
options:
  path:
    description: The progress file, as given to M(launchcard.inference.hf_snapshot).
    type: path
    required: true
  wait:
    description: Seconds to wait for the download to end before returning its progress.
    type: float
    default: 10
"""

EXAMPLES = r"""
- name: Print the download's progress every 10 seconds until it ends
  launchcard.inference.hf_snapshot_progress:
    path: /var/lib/launchcard/models/.launchcard-progress.json
    wait: 10
  register: progress
  loop: "{{ range(8641) | list }}"
  loop_control:
    label: "{{ progress.msg }}"
    break_when: not progress.running
"""

RETURN = r"""
running:
  description: Whether the download is still running.
  returned: always
  type: bool
state:
  description:
    - V(listing), V(downloading), V(verified) or V(incomplete) while it runs; V(done) or V(failed) when it ended;
      V(killed) when its process is gone without a final state; null when there is no file yet.
  returned: always
  type: str
bytes_done:
  description: Bytes of the revision on disk, partial files included.
  returned: once the revision is listed
  type: int
bytes_total:
  description: Bytes of the revision, as the Hub lists them.
  returned: once the revision is listed
  type: int
files_done:
  description: Files of the revision complete on disk.
  returned: once the revision is listed
  type: int
files_total:
  description: Files of the revision.
  returned: once the revision is listed
  type: int
bytes_per_s:
  description: Average download speed since the download started, in bytes per second.
  returned: once files download
  type: int
msg:
  description: One line for the run's output.
  returned: always
  type: str
  sample: 12.40 GiB of 56.10 GiB (22%), 3 of 51 files, 310.20 MiB/s
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.launchcard.inference.plugins.module_utils._hf_progress import read_progress

_FIELDS = ("running", "state", "bytes_done", "bytes_total", "files_done", "files_total", "bytes_per_s", "msg")


def main():
    module = AnsibleModule(argument_spec=dict(path=dict(type="path", required=True), wait=dict(type="float", default=10.0)),
                           supports_check_mode=True)
    doc = read_progress(module.params["path"], wait=max(0.0, module.params["wait"]))
    module.exit_json(changed=False, **{k: doc[k] for k in _FIELDS if k in doc})


if __name__ == "__main__":
    main()
