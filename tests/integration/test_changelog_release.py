# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make changelog` on a copy of the tree: every fragment, also one landed after the release was cut, ends in the
one release galaxy.yml names, and the fragments stay for the branches that still land theirs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def test_a_fragment_landed_after_the_release_joins_it(tmp_path):
    tree = tmp_path / "ansible_collections" / "launchcard" / "inference"
    for part in ("changelogs", "meta", "plugins", "roles", "playbooks"):
        shutil.copytree(os.path.join(ROOT, part), str(tree / part), ignore=shutil.ignore_patterns("molecule", "__pycache__"))
    shutil.copy(os.path.join(ROOT, "galaxy.yml"), str(tree))
    (tree / "changelogs" / "fragments" / "zz-landed-later.yml").write_text(
        "---\nbugfixes:\n  - later - a fix that landed after the release was cut.\n")
    fragments = sorted(os.listdir(str(tree / "changelogs" / "fragments")))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path), PATH=BIN + os.pathsep + os.environ["PATH"])
    res = subprocess.run([os.path.join(BIN, "antsibull-changelog"), "release", "--refresh-fragments"], cwd=str(tree), env=env,
                         capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    with open(str(tree / "changelogs" / "changelog.yaml")) as f:
        releases = yaml.safe_load(f)["releases"]
    assert list(releases) == ["1.0.0"]
    assert sorted(releases["1.0.0"]["fragments"]) == fragments
    assert "later - a fix that landed after the release was cut." in releases["1.0.0"]["changes"]["bugfixes"]
    assert sorted(os.listdir(str(tree / "changelogs" / "fragments"))) == fragments
    with open(str(tree / "CHANGELOG.rst")) as f:
        text = f.read()
    assert text.count("\nv1.0.0\n") == 1 and "a fix that landed after the release was cut" in text
