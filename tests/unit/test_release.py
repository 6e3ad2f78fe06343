# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a release of the collection promises, read from the tree: imports, version_added, changelog, make."""

from __future__ import annotations

import ast
import glob
import os
import subprocess

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(path):
    with open(os.path.join(ROOT, path)) as f:
        return yaml.safe_load(f)


def version():
    return load("galaxy.yml")["version"]


def released():
    return set((load("changelogs/changelog.yaml") or {}).get("releases") or {})


def test_no_plugin_imports_ansible_module_utils_six():
    # ansible-core deprecates ansible.module_utils.six (Python 3's stdlib has what it wraps)
    found = []
    for path in glob.glob(os.path.join(ROOT, "plugins", "**", "*.py"), recursive=True):
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            found += ["%s: %s" % (os.path.relpath(path, ROOT), n) for n in names if n.startswith("ansible.module_utils.six")]
    assert not found


# the filters kept public (issue 45): the views of the plan and records users call beside the modules and roles
PUBLIC_FILTERS = {"alert_rules", "file_sd_scrape_configs", "file_sd_files", "gpu_exporters", "health_endpoints",
                  "drain_endpoints", "host_units", "unit_settings", "os_support", "recorded_image_refs", "failure_budget",
                  "version_drift"}


def version_added_values():
    """(where, value) of every top-level version_added: modules, filter docs, role entry points."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))):
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        doc = [n.value.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "DOCUMENTATION"]
        out.append((os.path.relpath(path, ROOT), yaml.safe_load(doc[0]).get("version_added")))
    for path in sorted(glob.glob(os.path.join(ROOT, "plugins", "filter", "*.yml"))):
        out.append((os.path.relpath(path, ROOT), load(path)["DOCUMENTATION"].get("version_added")))
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml"))):
        out.append((os.path.relpath(path, ROOT), load(path)["argument_specs"]["main"].get("version_added")))
    return out


def test_every_plugin_and_role_says_a_version_added_this_collection_has():
    # a release already in changelog.yaml, or the one galaxy.yml is about to make: nothing from the future
    values = version_added_values()
    # each kind is read (a folder the globs miss would leave nothing to check)
    assert {w.split("/")[0] if w.startswith("roles/") else os.path.dirname(w) for w, dummy in values} == {
        "plugins/modules", "plugins/filter", "roles"}
    allowed = released() | {version()}
    assert [(where, v) for where, v in values if str(v) not in allowed] == []


def test_every_filter_a_plugin_exports_has_its_documentation():
    # ansible-doc lists a filter without a .yml of its name as UNDOCUMENTED (tests/compat/run.py skips those)
    exported = set()
    for path in glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py")):
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "filters":
                exported |= {k.value for d in ast.walk(node) if isinstance(d, ast.Dict) for k in d.keys}
    documented = {os.path.basename(p)[:-4] for p in glob.glob(os.path.join(ROOT, "plugins", "filter", "*.yml"))}
    assert exported == documented, (sorted(exported - documented), sorted(documented - exported))
    # issue 45: at most 12 public filters, the rest private under plugins/plugin_utils
    assert exported == PUBLIC_FILTERS and len(PUBLIC_FILTERS) <= 12


def test_the_changelog_holds_one_release_the_version_galaxy_yml_names():
    changes = load("changelogs/changelog.yaml")
    assert list(changes["releases"]) == [version()] == ["1.0.0"]
    assert changes["ancestor"] is None
    assert changes["releases"]["1.0.0"]["changes"]["release_summary"]
    assert len(changes["releases"]["1.0.0"]["modules"]) == len(glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py")))


def test_make_without_a_target_prints_the_help_and_does_nothing_else():
    res = subprocess.run(["make", "-n", "-C", ROOT], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    # the recipe make would run is the help's grep, not a target that boots or installs anything
    commands = [ln for ln in res.stdout.splitlines() if not ln.startswith("make")]
    assert commands[0].startswith("grep -E") and all(ln.endswith("\\") for ln in commands[:-1]), res.stdout
    res = subprocess.run(["make", "-C", ROOT], capture_output=True, text=True, check=False)
    assert res.returncode == 0
    assert "  demo " in res.stdout and "  test " in res.stdout and "  help " in res.stdout


def test_molecule_finds_the_driver_roles_scenarios_in_the_collection_layout(monkeypatch):
    from molecule import util  # molecule's own lookup: extensions/molecule/<scenario> from the collection root

    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("MOLECULE_GLOB", raising=False)
    found = sorted(glob.glob(os.path.join(ROOT, util.get_effective_molecule_glob())))
    assert [os.path.relpath(p, ROOT) for p in found] == ["extensions/molecule/%s/molecule.yml" % r for r in ("ascend", "nvidia", "rocm")]
    assert not glob.glob(os.path.join(ROOT, "roles", "*", "molecule"))
