# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection builds into a tarball that installs and runs by FQCN."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile

import built

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
# What a Galaxy user gets: the collection's own parts, and nothing of the repository's tooling (monitoring: the
# alert rules, their promtool cases and the metric contracts).
TOP_LEVEL = {"MANIFEST.json", "FILES.json", "README.md", "LICENSE", "CHANGELOG.rst", "cards", "changelogs", "docs",
             "extensions", "meta", "monitoring", "playbooks", "plugins", "roles"}
# A credential's value in the shape the repository's sandbox and tests write them (a Jinja reference is none).
CREDENTIAL = re.compile(r"""hf_[A-Za-z0-9]{16,}|^\s*password:\s*(?!["']?\{\{)\S|sandbox-only-registry-pass""", re.M)


# What the collection needs at run time: every file of the checkout under these folders (the plugins, roles,
# playbooks, docs, the AWX files and the monitoring rules) or named here, and nothing else (galaxy.yml's manifest).
NEEDED_DIRS = ("plugins/", "roles/", "playbooks/", "docs/", "extensions/awx/", "monitoring/")
NEEDED_FILES = {"README.md", "LICENSE", "CHANGELOG.rst", "cards/glm-5.3-flash.json", "changelogs/changelog.yaml",
                "changelogs/config.yaml", "meta/runtime.yml", "meta/execution-environment.yml",
                "meta/ee-requirements.yml", "meta/ee-requirements.txt", "meta/ee-bindep.txt"}
# What an operator leaves in a checkout: a vault password, rendered units, plan files, a card of their own, an
# inventory beside the playbooks (Ansible would read its group_vars), a folder of their own.
STRAYS = {
    ".vault_pass": "sandbox-only-registry-pass\n",
    "roles/runtime/.vault_pass": "sandbox-only-registry-pass\n",
    "launchcard-glm-5.3-flash-vllm-aggregated-0.service": "[Service]\nExecStart=/bin/true\n",
    "roles/units/files/launchcard-glm-5.3-flash-vllm-aggregated-0.service": "[Service]\nExecStart=/bin/true\n",
    "docs/rendered/launchcard-glm-5.3-flash-vllm-aggregated-0.service": "[Service]\nExecStart=/bin/true\n",
    "fleet-plan.json": "{\"hosts\": {}}\n",
    "playbooks/fleet-plan.json": "{\"hosts\": {}}\n",
    "roles/plan/files/fleet-plan.json": "{\"hosts\": {}}\n",
    "cards/our-private-model.json": "{}\n",
    "docs/hosts.yml": "all: {}\n",
    "playbooks/group_vars/all.yml": "launchcard_hf_token: hf_abcdefghijklmnopqrstuv\n",
    "playbooks/host_vars/gpu-0/vault.yml": "password: hunter2\n",
    "scratch/notes.md": "mine\n",
    "scratch/inventory.yml": "all: {}\n",
}


def run(args, env=None, cwd=ROOT):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def checkout_files():
    """The files of the checkout as git sees them (tracked, and new ones not ignored), relative to ROOT."""
    res = run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"])
    assert res.returncode == 0, res.stderr
    return sorted(p for p in res.stdout.split("\0") if p and os.path.isfile(os.path.join(ROOT, p)))


def test_build_holds_the_allowlist_and_none_of_the_strays(tmp_path):
    """A copy of the checkout with strays planted in and around the collection's folders: the tarball holds every
    file the collection needs and not one stray (galaxy.yml's manifest is an allowlist, not a build_ignore list)."""
    tree = tmp_path / "tree"
    files = checkout_files()
    for rel in files:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), tree / rel)
    for rel, text in STRAYS.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    res = run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path / "out")],
              cwd=str(tree))
    assert res.returncode == 0, res.stdout + res.stderr
    (tarball,) = glob.glob(str(tmp_path / "out" / "launchcard-inference-*.tar.gz"))
    with tarfile.open(tarball) as tar:
        names = {m.name for m in tar.getmembers() if m.isfile()}
    assert not names & set(STRAYS), sorted(names & set(STRAYS))
    needed = {f for f in files if f.startswith(NEEDED_DIRS) and "/tests/" not in f and "__pycache__" not in f
              and not f.startswith("extensions/molecule/")} | NEEDED_FILES
    assert needed - names == set(), sorted(needed - names)
    assert names - needed == {"MANIFEST.json", "FILES.json"}, sorted(names - needed - {"MANIFEST.json", "FILES.json"})


def test_build_install_and_run_by_fqcn(tmp_path):
    res, built_tarball = built.build(tmp_path)
    assert built_tarball, res.stdout + res.stderr
    tarball = [built_tarball]
    unpacked = tmp_path / "unpacked"
    with tarfile.open(tarball[0]) as tar:
        names = set(tar.getnames())
        tar.extractall(unpacked, filter="data")
    for must in ("MANIFEST.json", "LICENSE", "changelogs/changelog.yaml", "plugins/modules/systemd_units.py",
                 "playbooks/deploy.yml", "roles/units/meta/argument_specs.yml", "cards/glm-5.3-flash.json"):
        assert must in names, must
    # of extensions/, only what docs/operations.md gives an AWX admin: the credential types, the workflow example
    assert {n for n in names if n.startswith("extensions/") and "." in n} == \
        {"extensions/awx/credential_types/hf_token.yml", "extensions/awx/credential_types/registry.yml",
         "extensions/awx/workflows/plan-apply.yml"}
    assert {n.split("/", 1)[0] for n in names} <= TOP_LEVEL, sorted({n.split("/", 1)[0] for n in names} - TOP_LEVEL)
    assert not [n for n in names if re.search(r"(^|/)(molecule|tests|__pycache__|fragments)(/|$)|\.pyc$", n)]
    with open("/usr/share/common-licenses/GPL-3", "rb") as f:  # Debian's base-files: the GPL-3.0 text
        assert (unpacked / "LICENSE").read_bytes() == f.read()
    leaked = []
    for path in unpacked.rglob("*"):
        if path.is_file() and CREDENTIAL.search(path.read_text(errors="replace")):
            leaked.append(str(path.relative_to(unpacked)))
    assert not leaked

    # Install and run the collection from outside the checkout, with a
    # configuration that knows only the freshly installed copy.
    coll = tmp_path / "collections"
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("[defaults]\ncollections_path = %s\n" % coll)
    env = dict(os.environ, ANSIBLE_CONFIG=str(cfg), PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    # --no-deps: the dependencies (galaxy.yml) are the ones pip's ansible package brings; no Galaxy here
    res = run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--no-deps", "-p", str(coll), tarball[0]],
              env=env, cwd=str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert (coll / "ansible_collections" / "launchcard" / "inference" / "playbooks" / "deploy.yml").exists()
    out = tmp_path / "render"
    res = run([os.path.join(BIN, "ansible-playbook"), "launchcard.inference.render",
               "-i", os.path.join(ROOT, "tests", "integration", "render", "card-own.ini"),
               "-e", "launchcard_render_dir=%s" % out], env=env, cwd=str(tmp_path))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert os.path.exists(out / "r-pd" / "launchcard-glm-5.3-flash-sglang-router-0.service")
    # The installed deploy playbook checks its roles' variables (their argument specs, read next to the
    # playbook) before it contacts any host: the wrong value is named, no host is reached.
    res = run([os.path.join(BIN, "ansible-playbook"), "launchcard.inference.deploy",
               "-i", os.path.join(ROOT, "tests", "integration", "render", "card-own.ini"),
               "-e", "units_health_timeout_s=soon", "-e", "launchcard_runtime=dokcer"], env=env, cwd=str(tmp_path))
    assert res.returncode != 0
    said = " ".join(res.stdout.split())
    assert "argument 'units_health_timeout_s' is of type str and we were unable to convert to int" in said, res.stdout[-3000:]
    assert "value of runtime_kind must be one of: docker, podman, native, got: dokcer" in said
    assert "TASK [launchcard.inference.preflight" not in res.stdout and "UNREACHABLE" not in res.stdout
