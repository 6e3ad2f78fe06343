# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Version drift of the stack roles' packages."""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.module_utils._versions import drift, matches


def test_matches_the_release_with_any_revision():
    assert matches("7.0.2.70002-1~launchcard1", "7.0.2.70002")
    assert matches("7.0.2.70002-1.el9", "7.0.2.70002") and matches("7.0.2.70002-1", "7.0.2.70002-1")
    assert not matches("7.0.2.700021-1", "7.0.2.70002")  # another release, not a revision
    assert not matches("7.0.1.70001-1", "7.0.2.70002-1")


def test_drift_lists_installed_packages_at_other_versions_in_wanted_order():
    installed = {"rocm": "7.0.1.70001-1~launchcard1", "amdgpu-install": "7.0.1.70001-1", "amd-smi-lib": None}
    wanted = {"amdgpu-install": "7.0.2.70002-1", "rocm": "7.0.2.70002", "amd-smi-lib": "7.0.2.70002"}
    assert drift(installed, wanted) == [["amdgpu-install", "7.0.1.70001-1"], ["rocm", "7.0.1.70001-1~launchcard1"]]
    assert drift({"rocm": "7.0.2.70002-1"}, wanted) == []
    assert drift(None, wanted) == [] and drift(installed, None) == []
