# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The supported ansible-core versions: requirements.txt's and tests/compat's pins, and what the collection says of them."""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import sys

import yaml
from ansible.release import __version__ as running_core
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load_runner():
    spec = importlib.util.spec_from_file_location("compat_run", os.path.join(ROOT, "tests", "compat", "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUNNER = _load_runner()


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def venv_core():
    return re.search(r"^ansible-core==(\S+)", read("requirements.txt"), re.M).group(1)


def pairs_tested():
    """{X.Y.Z of every tested ansible-core: X.Y of the controller Python it is tested on}, where known here."""
    pairs = {c[3].split("==")[1]: c[2] for c in RUNNER.cores()}
    if running_core == venv_core():  # .venv's Python is the one running this test
        pairs[venv_core()] = "%d.%d" % sys.version_info[:2]
    return pairs


def test_the_compat_files_pin_other_minor_releases_than_the_venv_one_each():
    minors = [c[0] for c in RUNNER.cores()]
    venv_minor = ".".join(venv_core().split(".")[:2])
    assert minors and len(set(minors)) == len(minors) and venv_minor not in minors
    # the cores tests/unit runs on are the tested ones: .venv's, or a compat file's
    assert running_core in [venv_core()] + [c[3].split("==")[1] for c in RUNNER.cores()]


def test_requires_ansible_starts_at_the_oldest_tested_core_and_admits_every_tested_one():
    spec = SpecifierSet(yaml.safe_load(read("meta/runtime.yml"))["requires_ansible"])
    cores = sorted([Version(venv_core())] + [Version(c[3].split("==")[1]) for c in RUNNER.cores()])
    assert all(spec.contains(c) for c in cores), (str(spec), cores)
    oldest = "%d.%d.0" % cores[0].release[:2]
    assert spec.contains(oldest) and not spec.contains("%d.%d.999" % (cores[0].major, cores[0].minor - 1)), str(spec)


def test_the_readme_and_the_development_page_name_each_tested_core_with_its_python():
    for page in ("README.md", "docs/development.md"):
        text = " ".join(read(page).split())
        for core, python in pairs_tested().items():
            said = "%s on Python %s" % (".".join(core.split(".")[:2]), python)
            assert said in text, (page, said)


def test_each_compat_file_says_where_its_python_floor_comes_from():
    # the comment beside the pin cites the wheel's Requires-Python, which must admit the Python it runs on
    for _core, path, python, pin in RUNNER.cores():
        text = read(path)
        floor = re.search(r"Requires-Python: (\S+)", text)
        assert floor and SpecifierSet(floor.group(1)).contains(python + ".0"), path
        assert "ansible_core-%s-" % pin.split("==")[1] in text, path


def test_the_other_cores_run_every_test_that_reaches_ansible_core_and_not_the_pure_cores():
    tests = set(RUNNER.core_facing_tests(ROOT))
    facing = [os.path.relpath(p, ROOT) for d in ("modules", "action")
              for p in glob.glob(os.path.join(ROOT, "tests", "unit", "plugins", d, "test_*.py"))]
    assert facing and set(facing) <= tests
    # a filter's test reaches ansible-core through the filter plugin; the planner's tests never do
    assert "tests/unit/plugins/plugin_utils/test_report.py" in tests
    assert "tests/unit/plugins/plugin_utils/test_planner.py" not in tests
    assert "tests/unit/plugins/plugin_utils/test_card_schema.py" not in tests
