# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make this checkout importable as ``ansible_collections.launchcard.inference``.

A throwaway tree ``<tmp>/ansible_collections/launchcard/inference`` is a
symlink to the repository root, and ``<tmp>`` goes first on ``sys.path``, so
tests import the code exactly as Ansible does. Nothing is stubbed.
``ansible_collections`` is a namespace package, so collections installed in
the virtualenv stay importable next to this one.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

from hypothesis import settings

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _mount_collection():
    base = tempfile.mkdtemp(prefix="launchcard-collections-")
    atexit.register(shutil.rmtree, base, True)
    namespace = os.path.join(base, "ansible_collections", "launchcard")
    os.makedirs(namespace)
    os.symlink(REPO_ROOT, os.path.join(namespace, "inference"))
    sys.path.insert(0, base)
    return base


COLLECTIONS_ROOT = _mount_collection()

# make test runs these beside the sandbox fleets on 2 CPUs: a wall-clock deadline per example would fail a correct
# test for the machine's load, so hypothesis checks only what the examples assert
settings.register_profile("launchcard", deadline=None)
settings.load_profile("launchcard")
