# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a revision lives in a host's Hugging Face cache, and the weights role's completion stamp.

Pure Python, no Ansible import. Apart from ``_hf_snapshot`` so that the ``preflight`` module, which only reads the
stamp, does not ship and compile the download code on every run (docs/speed.md). The cache layout is
huggingface_hub's own (https://huggingface.co/docs/huggingface_hub/guides/manage-cache).
"""

from __future__ import annotations

import os


def hub_repo_dir(hub_cache, repo):
    """``<hub_cache>/models--owner--name``: the repository's folder in the hub cache (``HF_HUB_CACHE``)."""
    return os.path.join(hub_cache, "models--" + repo.replace("/", "--"))


def repo_dir(hf_home, repo):
    """``<hf_home>/hub/models--owner--name``: the repository's folder in the cache."""
    return hub_repo_dir(os.path.join(hf_home, "hub"), repo)


def snapshot_dir(hf_home, repo, revision):
    return os.path.join(repo_dir(hf_home, repo), "snapshots", revision)


def stamp_path(hf_home, repo, revision):
    """``<repo_dir>/.launchcard-complete-<revision>``: the weights role's completion stamp of one revision.

    It holds the revision's size in bytes (decimal); the ``preflight`` module
    compares it with what the snapshot holds (``_preflight_reads.weights_staged``).
    """
    return os.path.join(repo_dir(hf_home, repo), ".launchcard-complete-" + revision)
