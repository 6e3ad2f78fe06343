# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The execution environment for AWX / AAP (meta/execution-environment.yml).

ansible-builder reads that file twice over: ``make ee`` (``ansible-builder create``)
turns it into a build context, and when the collection is installed in any image,
ansible-builder's introspection reads its Python and system dependencies from it.
Building the image itself needs a container registry, so only the context is checked.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tarfile

import pytest
import yaml

import built

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
BUILDER = os.path.join(BIN, "ansible-builder")

pytestmark = pytest.mark.skipif(not os.path.exists(BUILDER), reason="ansible-builder is not installed (requirements.txt)")


def load(rel):
    with open(os.path.join(ROOT, rel)) as fh:
        return yaml.safe_load(fh) if rel.endswith((".yml", ".yaml")) else fh.read()


def lines(text):
    """The requirement lines of a file, without comments (requirements.txt says what uses each pin)."""
    return [ln.split("#", 1)[0].strip() for ln in text.splitlines() if ln.split("#", 1)[0].strip()]


def pin(name):
    """The version requirements.txt pins for a package."""
    for ln in lines(load("requirements.txt")):
        if ln.lower().startswith(name.lower() + "=="):
            return ln.split("==", 1)[1]
    raise AssertionError(f"{name} not pinned in requirements.txt")


@pytest.fixture(scope="module")
def definition():
    ee = load("meta/execution-environment.yml")
    assert ee["version"] == 3
    return ee


@pytest.fixture(scope="module")
def context(tmp_path_factory, definition):
    """`make ee` into a temporary folder; returns the build context it wrote."""
    ee_dir = tmp_path_factory.mktemp("ee") / "ee"
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    env.pop("MAKEFLAGS", None)
    res = subprocess.run(["make", "--no-print-directory", "-o", "setup", "ee", f"EE_DIR={ee_dir}"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    return ee_dir / "context"


def test_context_has_a_containerfile_from_the_named_base_image(context, definition):
    containerfile = (context / "Containerfile").read_text()
    base = definition["images"]["base_image"]["name"]
    assert f'ARG EE_BASE_IMAGE="{base}"' in containerfile
    assert re.search(r"^FROM \$EE_BASE_IMAGE AS base$", containerfile, re.M)
    # the controller's Python, ansible-core as pinned for the tests, and ansible-runner for AWX
    refs = re.search(r'^ARG ANSIBLE_INSTALL_REFS="([^"]*)"$', containerfile, re.M).group(1).split()
    assert f"ansible-core=={pin('ansible-core')}" in refs
    assert any(r.startswith("ansible-runner==") for r in refs)
    assert re.search(r'^ARG PYCMD="/usr/bin/python3\.1[1-9]"$', containerfile, re.M)
    # the collections are installed, and the Python and system requirements assembled, in the image
    assert "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml" in containerfile
    assert "introspect --user-pip=requirements.txt --user-bindep=bindep.txt" in containerfile


def test_context_carries_the_python_system_and_galaxy_requirements(context):
    build = context / "_build"
    assert lines((build / "requirements.txt").read_text()) == lines(load("meta/ee-requirements.txt"))
    python_reqs = lines((build / "requirements.txt").read_text())
    assert any(re.fullmatch(r"jsonschema\s*>=\s*4\.18", r) for r in python_reqs), python_reqs
    system = lines((build / "bindep.txt").read_text())
    assert "openssh-clients [platform:rpm]" in system
    # the collections the roles call: exactly the dependencies galaxy.yml declares, same versions
    galaxy = load("galaxy.yml")["dependencies"]
    with open(build / "requirements.yml") as fh:
        wanted = {c["name"]: c["version"] for c in yaml.safe_load(fh)["collections"]}
    assert wanted == galaxy


def test_every_collection_a_role_calls_is_in_the_ee():
    """An FQCN of another collection used by a role or playbook must come with the EE."""
    wanted = {c["name"] for c in load("meta/ee-requirements.yml")["collections"]}
    used = set()
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")) + \
            glob.glob(os.path.join(ROOT, "playbooks", "*.yml")):
        with open(path) as fh:
            used.update(re.findall(r"^\s*-?\s*((?!ansible\.builtin\.)(?!launchcard\.)[a-z_]+\.[a-z_]+)\.[a-z_]+:\s*$",
                                   fh.read(), re.M))
    assert used, "no module call of another collection found: the pattern is wrong"
    assert used <= wanted, used - wanted


def test_introspection_of_the_installed_collection(tmp_path):
    """What ansible-builder takes from this collection when an image installs it (from its built tarball).

    Its Python and system dependencies, and nothing of the developer tooling in the repository's
    requirements.txt (without meta/execution-environment.yml ansible-builder would take that file).
    """
    res, tarball = built.build(tmp_path)
    assert tarball, res.stdout + res.stderr
    dest = tmp_path / "collections" / "ansible_collections" / "launchcard" / "inference"
    dest.mkdir(parents=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(dest, filter="data")
    res = subprocess.run([BUILDER, "introspect", str(tmp_path / "collections")], capture_output=True, text=True,
                         check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    found = yaml.safe_load(res.stdout)
    python = [r.split("#")[0].strip() for r in found["python"]]
    assert python == lines(load("meta/ee-requirements.txt"))
    assert all("from collection launchcard.inference" in r for r in found["python"] + found["system"])
    system = [r.split("#")[0].strip() for r in found["system"]]
    assert "openssh-clients [platform:rpm]" in system
    dev_tools = {ln.split("==")[0].lower() for ln in lines(load("requirements.txt"))}
    assert not {re.split(r"[<>=!~ \[]", r)[0].lower() for r in python} & (dev_tools - {"jsonschema"})
