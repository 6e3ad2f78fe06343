#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hf_snapshot
short_description: Make one revision of a Hugging Face model repository complete in the host's cache
version_added: 1.0.0
description:
  - Lists the files of O(repo) at O(revision) on the Hub (one C(list_repo_tree) call) and compares them with the
    Hugging Face cache under O(hf_home) (C(HF_HOME); the snapshot is C(hub/models--OWNER--NAME/snapshots/REVISION)).
    A file counts as present when the snapshot holds it with exactly the size in bytes that the Hub lists and the
    content the listing's digest names - the SHA-256 (C(lfs.oid)) of an LFS file, the git blob id (C(oid), the SHA-1
    of C(blob SIZE), a NUL byte and the bytes) of any other. C(huggingface_hub) checks only sizes.
  - The listing is untrusted. A path that is absolute, holds C(..), or leads through a symlink out of the
    repository's folder in the cache fails with cause V(unsafe listing), naming it, before any file is read, removed
    or downloaded.
  - Content is checked after every download and copy, and when a snapshot of the right sizes has no completion stamp
    (the C(.launchcard-complete-REVISION) file the launchcard.inference.weights role writes once it is verified);
    with O(source=path) (a shared filesystem, read on every run) sizes only. A file whose content differs is
    downloaded again once (after a copy, from O(endpoint)); differing again, it fails with cause
    V(checksum mismatch), naming the file and both digests.
  - A token is never sent to a plain C(http://) O(endpoint) (cause V(token over http)) unless O(allow_http_token).
  - When every file is present nothing is downloaded and the result is C(changed=false).
  - Otherwise only the missing files, and those whose size is wrong (their blob is removed first), are downloaded
    with C(huggingface_hub)'s C(snapshot_download), O(max_workers) files at once, and the snapshot is checked again.
  - With O(progress_file), the bytes of the revision on disk are written there about every second while files
    download, for M(launchcard.inference.hf_snapshot_progress) to read while this module runs async.
  - Resuming is per file - a run keeps every file already complete; within a file C(huggingface_hub) retries an
    interrupted transfer with a range request; the partial file left by a killed run is removed.
  - Files and folders of the repository are made readable by every user (C(a+r), folders C(a+rx)), so an engine
    running as a dedicated user can read what was downloaded as root.
  - With O(source=peer) the host downloads nothing - another host, the seed named by O(seed), holds the revision
    and the launchcard.inference.weights role copies it from there. Before the copy the module lists the revision
    and reports the files the copy must bring (RV(would_copy)); after it (O(copied=true)) it verifies the copy
    exactly as a download is verified (every file, its size and content), and fails when something is short.
  - Before downloading, the bytes still missing are compared with the free space of the filesystem holding
    O(hf_home); a download that would not fit, or a disk that fills during it, fails with cause V(disk full), naming
    the mount, the bytes needed and the bytes free. A transfer that ends short (a mirror or proxy that cuts a file)
    fails with V(truncated download), naming the file and both sizes. Neither leaves a partial file behind.
  - Errors carry a C(cause) - V(wrong revision), V(repository not found), V(hub unreachable), V(incomplete)
    (O(source=path)), V(truncated download), V(incomplete copy) (O(source=peer)), V(disk full), V(cache error) (the
    cache cannot be written), V(xet unavailable) (see O(xet)), V(unsafe listing), V(checksum mismatch),
    V(token over http), V(hub error) - and a message naming the revision, endpoint or files;
      a seed's message names the hosts that copy from it (O(copies)), a copy's the seed.
requirements:
  - huggingface_hub (on the managed host; the launchcard.inference.weights role installs it into a virtualenv)
options:
  repo:
    description: The model repository, C(owner/name).
    type: str
    required: true
  revision:
    description: The commit hash (40 hex digits) to stage.
    type: str
    required: true
  hf_home:
    description: The Hugging Face home of the engines (C(HF_HOME)); the cache is its C(hub) folder.
    type: path
    required: true
  endpoint:
    description: Base URL of the Hub (C(HF_ENDPOINT)), for example an internal mirror.
    type: str
    default: https://huggingface.co
  token:
    description: Hugging Face token for gated or private repositories; empty for none. Never returned or logged.
    type: str
    default: ""
  allow_http_token:
    description:
      - Send O(token) to an C(http://) O(endpoint) (plain HTTP, readable on the way). False - such a run fails with
        cause V(token over http) before any request. The launchcard.inference.weights role sets it from
        C(launchcard_hf_allow_http_token).
    type: bool
    default: false
  source:
    description:
      - V(hub) downloads what is missing.
      - V(path) only verifies (a shared filesystem already holds the weights) and fails when something is missing.
      - V(peer) downloads nothing - the revision is copied from O(seed) by the caller; see O(copied).
    type: str
    choices: [hub, path, peer]
    default: hub
  seed:
    description:
      - With O(source=peer), the host (as the inventory names it) the revision is copied from; named in the
        messages and returned. Required with O(source=peer).
    type: str
  copied:
    description:
      - With O(source=peer) - false before the copy (an incomplete snapshot is reported in RV(would_copy), not an
        error); true after it (an incomplete snapshot fails with cause V(incomplete copy)).
    type: bool
    default: false
  copies:
    description:
      - With O(source=hub), the hosts that copy the revision from this one (this host is their seed); named in a
        failure's message, so a seed's failure says whose copies it stops.
    type: list
    elements: str
    default: []
  xet:
    description:
      - Whether a file the endpoint marks Xet-backed (C(X-Xet-Hash) and a C(xet-auth) link) may be downloaded from Xet
        storage, as C(huggingface_hub) does when C(hf_xet) is installed (C(huggingface_hub) 2.4.0 requires it on
        x86_64 and aarch64). That path asks the endpoint for a C(xet-read-token) and then reads from the storage (CAS)
        host the token names, which an internal mirror rarely serves or reaches.
      - V(auto) - only when O(endpoint) is the public Hub (C(huggingface.co), C(hf.co)); any other endpoint sends
        every byte over plain HTTP. V(always) - whenever the endpoint offers it; a failed Xet step fails with cause
        V(xet unavailable), naming the file, the step and the remedy. V(never) - plain HTTP from O(endpoint) only.
    type: str
    choices: [auto, always, never]
    default: auto
  timeout:
    description: Seconds to wait for the Hub to answer one request (not for a whole download).
    type: float
    default: 30
  max_workers:
    description:
      - Files downloaded at once (the threads of C(huggingface_hub)'s C(snapshot_download), one file each).
      - The default is C(snapshot_download)'s own (C(huggingface_hub) 2.4.0).
    type: int
    default: 8
  progress_file:
    description:
      - A file the module replaces, atomically and readable by its owner only (C(0600)),
        with the progress of the run - C(bytes_done), C(bytes_total), C(files_done), C(files_total),
        C(bytes_per_s), a C(state) (V(listing), V(downloading), V(verifying), V(verified), V(done), V(failed)), the
        repository and the revision; never the token nor the endpoint. The module holds a lock on
        C(PROGRESS_FILE.lock) while it runs and removes it at the end. A missing folder is made (C(0700)).
      - Read it with M(launchcard.inference.hf_snapshot_progress), for example while this module runs with C(async).
      - Not written in check mode.
    type: path
  venv:
    description:
      - A virtualenv, made with the same Python that runs this module, holding C(huggingface_hub); its
        C(site-packages) folder is searched first. Empty - C(huggingface_hub) must be importable as is.
    type: path
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes
attributes:
  check_mode:
    details:
      - Lists the repository and reports the files it would download (RV(would_download)), or with O(source=peer)
        copy (RV(would_copy)); downloads nothing.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Stage the card's revision in the engines' Hugging Face cache
  launchcard.inference.hf_snapshot:
    repo: zai-org/GLM-5.3-Flash
    revision: 46a050bec13002ad29ee795c16e61cf4fa3c4a9c
    hf_home: /var/lib/launchcard/models
    endpoint: http://hub-mirror.internal:8080
    token: "{{ hf_token }}"
    venv: /opt/launchcard/hf

- name: Download async, eight files at once, and print the progress every 10 seconds
  launchcard.inference.hf_snapshot:
    repo: zai-org/GLM-5.3-Flash
    revision: 46a050bec13002ad29ee795c16e61cf4fa3c4a9c
    hf_home: /var/lib/launchcard/models
    max_workers: 8
    progress_file: /var/lib/launchcard/models/.launchcard-progress.json
    venv: /opt/launchcard/hf
  async: 86400
  poll: 0
  register: download

- name: Progress
  launchcard.inference.hf_snapshot_progress:
    path: /var/lib/launchcard/models/.launchcard-progress.json
    wait: 10
  register: progress
  loop: "{{ range(8641) | list }}"
  loop_control:
    label: "{{ progress.msg }}"
    break_when: not progress.running

- name: The download's result
  ansible.builtin.async_status:
    jid: "{{ download.ansible_job_id }}"
  register: downloaded
  until: downloaded.finished
  retries: 30
  delay: 2

- name: After copying the repository's folder from gpu-01, verify the copy against the Hub's listing
  launchcard.inference.hf_snapshot:
    repo: zai-org/GLM-5.3-Flash
    revision: 46a050bec13002ad29ee795c16e61cf4fa3c4a9c
    hf_home: /var/lib/launchcard/models
    endpoint: http://hub-mirror.internal:8080
    source: peer
    seed: gpu-01
    copied: true
    venv: /opt/launchcard/hf
"""

RETURN = r"""
complete:
  description: Whether every file of the revision is in the snapshot with its listed size (and content, see the description).
  returned: success
  type: bool
bytes_total:
  description: Bytes of the revision, as the Hub lists them.
  returned: success
  type: int
bytes_present:
  description: Bytes already in the snapshot before this run.
  returned: success
  type: int
bytes_done:
  description: Bytes downloaded by this run (0 in check mode).
  returned: success
  type: int
files_total:
  description: Number of files of the revision.
  returned: success
  type: int
downloaded:
  description: Repository paths downloaded by this run.
  returned: success
  type: list
  elements: str
refetched:
  description: Repository paths downloaded again by this run because their content differed from the listing.
  returned: success
  type: list
  elements: str
files_verified:
  description: Files of the revision whose content this run checked (0 when sizes were enough, see the description).
  returned: success
  type: int
would_download:
  description: Check mode; the repository paths a real run would download.
  returned: success
  type: list
  elements: str
would_copy:
  description: With O(source=peer), the repository paths the copy from the seed must bring (before the copy).
  returned: success
  type: list
  elements: str
seed:
  description: With O(source=peer), the host the revision is copied from (O(seed)); null otherwise.
  returned: success
  type: str
snapshot:
  description: The snapshot folder on the host.
  returned: success
  type: str
  sample: /var/lib/launchcard/models/hub/models--zai-org--GLM-5.3-Flash/snapshots/46a050bec13002ad29ee795c16e61cf4fa3c4a9c
cause:
  description: On failure, the short cause (see the description).
  returned: failure
  type: str
  sample: wrong revision
"""

import os
import re
import sys
from contextlib import nullcontext

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.launchcard.inference.plugins.module_utils._hf_progress import ProgressFile
from ansible_collections.launchcard.inference.plugins.module_utils._hf_snapshot import (
    DEFAULT_MAX_WORKERS, HubClient, WeightsError, describe_error, ensure_snapshot)
from ansible_collections.launchcard.inference.plugins.module_utils._hf_verify import plain_http_token

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _role_note(p):
    """What this host's failure means for the others (the peer source)."""
    if p["source"] == "peer":
        return " (this host copies the revision from the seed %s)" % p["seed"]
    if p["source"] == "hub" and p["copies"]:
        return " (this host is the seed of its card: %s copy the revision from it)" % ", ".join(p["copies"])
    return ""


def main():
    module = AnsibleModule(
        argument_spec=dict(
            repo=dict(type="str", required=True),
            revision=dict(type="str", required=True),
            hf_home=dict(type="path", required=True),
            endpoint=dict(type="str", default="https://huggingface.co"),
            token=dict(type="str", default="", no_log=True),
            allow_http_token=dict(type="bool", default=False),
            source=dict(type="str", default="hub", choices=["hub", "path", "peer"]),
            seed=dict(type="str"),
            copied=dict(type="bool", default=False),
            copies=dict(type="list", elements="str", default=[]),
            xet=dict(type="str", default="auto", choices=["auto", "always", "never"]),
            timeout=dict(type="float", default=30.0),
            max_workers=dict(type="int", default=DEFAULT_MAX_WORKERS),
            progress_file=dict(type="path"),
            venv=dict(type="path"),
        ),
        required_if=[("source", "peer", ["seed"])],
        supports_check_mode=True,
    )
    p = module.params
    if not _COMMIT.match(p["revision"]):
        module.fail_json(msg="revision must be a commit hash (40 lowercase hex digits), found %r" % p["revision"],
                         cause="wrong revision")
    if p["venv"]:
        site = os.path.join(p["venv"], "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
        if not os.path.isdir(site):
            module.fail_json(msg="%s has no %s: it was not made with this Python (%s)" % (p["venv"], site, sys.executable),
                             cause="hub error")
        sys.path.insert(0, site)
    refused = plain_http_token(p["endpoint"], p["token"], p["allow_http_token"])
    if refused:
        module.fail_json(msg="token over http: %s" % refused, cause="token over http")
    if p["max_workers"] < 1:
        module.fail_json(msg="max_workers must be 1 or more, found %d" % p["max_workers"], cause="hub error")
    progress = p["progress_file"] if p["progress_file"] and not module.check_mode else None  # check mode writes nothing
    if progress:
        try:
            os.makedirs(os.path.dirname(progress), mode=0o700, exist_ok=True)
        except OSError as exc:
            module.fail_json(msg="cannot make the folder of progress_file %s: %s" % (progress, exc), cause="cache error")
    with ProgressFile(progress, p["repo"], p["revision"]) if progress else nullcontext() as report:
        result, failure = _stage(module, p, report)
    if failure:
        module.fail_json(**failure)
    module.exit_json(**result)


def _stage(module, p, report):
    """``(result, None)``, or ``(None, fail_json's arguments)``; the progress file's final state is written here."""
    try:
        client = HubClient(p["endpoint"], p["token"], p["hf_home"], timeout=p["timeout"], xet=p["xet"])
    except ImportError as exc:
        failure = dict(msg=missing_required_lib("huggingface_hub"), exception=str(exc), cause="hub error")
    else:
        try:
            return ensure_snapshot(client, p["hf_home"], p["repo"], p["revision"], check_mode=module.check_mode,
                                   verify_only=p["source"] == "path",
                                   copy_from=p["seed"] if p["source"] == "peer" else None, copied=p["copied"],
                                   max_workers=p["max_workers"], progress=report), None
        except WeightsError as exc:
            failure = dict(msg="%s: %s%s" % (exc.cause, exc.message, _role_note(p)), cause=exc.cause)
        except OSError as exc:
            err = describe_error(exc, p["endpoint"], p["repo"], p["revision"], hf_home=p["hf_home"])
            failure = dict(msg="%s: %s%s" % (err.cause, err.message, _role_note(p)), cause=err.cause)
    if report:
        report.finish("failed", cause=failure["cause"])
    return None, failure


if __name__ == "__main__":
    main()
