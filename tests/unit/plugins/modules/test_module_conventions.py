# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Conventions every module keeps: the shared attributes fragment and the action group.

The docs are read through ``ansible-doc --json`` (the same fragment merging
``ansible-doc`` and ``ansible-test sanity`` do), and the action group is used
through ``module_defaults`` in a real ``ansible-playbook`` run on localhost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULES = sorted(n[:-3] for n in os.listdir(os.path.join(REPO_ROOT, "plugins", "modules"))
                 if n.endswith(".py") and not n.startswith("_"))
GROUP = "launchcard"
BIN = os.path.dirname(sys.executable)

# What each module supports; what the fragment gives unless the module says otherwise.
CHECK_MODE = dict.fromkeys(MODULES, "full")
DIFF_MODE = dict(dict.fromkeys(MODULES, "N/A"), systemd_units="full", render_fleet="none", hf_snapshot="none", host_state="full", router_workers="none",
                 http_health="full", engine_drain="full", write_plan_file="full",
                 gpu_exporter_unit="full", container_conf="full", peer_receive="full", scrape_targets="full")
PLATFORMS = dict(dict.fromkeys(MODULES, "posix"), launch_card="all", render_fleet="all", resolve_images="all",
                 run_lock_status="all", validate_role_vars="all", units_summary="all", upgrade_fleet="all",
                 reboot_batches="all", reboot_drains="all", weights_plan="all", deploy_fleet="all", runtime_settings="all")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ansible")
    namespace = tmp / "collections" / "ansible_collections" / "launchcard"
    namespace.mkdir(parents=True)
    os.symlink(REPO_ROOT, str(namespace / "inference"))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"), ANSIBLE_HOME=str(tmp / "home"),
               ANSIBLE_LOCAL_TEMP=str(tmp / "tmp"), ANSIBLE_NOCOLOR="1", ANSIBLE_DEPRECATION_WARNINGS="0")
    env.pop("ANSIBLE_CONFIG", None)  # no ansible.cfg: the commands run in a scratch directory
    return env


@pytest.fixture(scope="module")
def docs(env):
    out = subprocess.run([os.path.join(BIN, "ansible-doc"), "--json"] + ["launchcard.inference." + m for m in MODULES],
                         env=env, cwd=env["ANSIBLE_HOME"].rsplit("/", 1)[0], capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    return dict((k.rsplit(".", 1)[1], v["doc"]) for k, v in json.loads(out.stdout).items())


# the preflight role's fleet step runs on the controller only
PLATFORMS.update(preflight_fleet="all")


def runtime():
    with open(os.path.join(REPO_ROOT, "meta", "runtime.yml")) as f:
        return yaml.safe_load(f)


def test_the_action_group_names_every_module_and_nothing_else():
    assert sorted(runtime()["action_groups"][GROUP]) == MODULES


@pytest.mark.parametrize("module", MODULES)
def test_every_module_uses_the_shared_attributes_fragment(module, docs):
    import ast

    with open(os.path.join(REPO_ROOT, "plugins", "modules", module + ".py")) as f:
        tree = ast.parse(f.read())
    text = [n.value.value for n in tree.body if isinstance(n, ast.Assign)
            and getattr(n.targets[0], "id", None) == "DOCUMENTATION"][0]
    assert "launchcard.inference.attributes" in yaml.safe_load(text)["extends_documentation_fragment"]

    attributes = docs[module]["attributes"]
    assert attributes["check_mode"]["support"] == CHECK_MODE[module]
    assert attributes["diff_mode"]["support"] == DIFF_MODE[module]
    assert attributes["platform"]["platforms"] == PLATFORMS[module]
    assert attributes["action_group"]["membership"] == ["launchcard.inference." + GROUP]
    for name, attribute in attributes.items():
        assert attribute.get("description"), name
        assert attribute.get("support") in ("full", "partial", "none", "N/A"), name


def test_module_defaults_reach_the_modules_through_the_group(env, tmp_path):
    # vendor=ascend comes only from the group defaults; without them the module would pick auto
    playbook = tmp_path / "play.yml"
    saved = tmp_path / "result.json"
    # the result is written by a task, not read from the json callback: ansible.builtin.json redirects to
    # ansible.posix (ansible-core's ansible_builtin_runtime.yml), which a bare ansible-core (make compat) lacks
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "module_defaults": {"group/launchcard.inference." + GROUP: {"vendor": "ascend"}},
        "tasks": [{"name": "Read the accelerators", "launchcard.inference.accelerator_facts": {}, "register": "read"},
                  {"name": "Save the result", "ansible.builtin.copy": {"content": "{{ read | to_json }}", "dest": str(saved)}}],
    }]))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    run_env = dict(env, PATH=os.pathsep.join([str(bin_dir), BIN, "/usr/bin", "/bin"]))
    out = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-c", "local", "-i", "localhost,",
                          "-e", "ansible_python_interpreter=%s" % sys.executable, str(playbook)],
                         env=run_env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(saved.read_text())
    # a registered result carries no invocation: the facts show which vendor the module was given
    assert result["ansible_facts"]["launchcard_accelerators"]["vendor"] == "ascend"


def documentation(module):
    import ast

    with open(os.path.join(REPO_ROOT, "plugins", "modules", module + ".py")) as f:
        tree = ast.parse(f.read())
    return tree, yaml.safe_load([n.value.value for n in tree.body if isinstance(n, ast.Assign)
                                 and getattr(n.targets[0], "id", None) == "DOCUMENTATION"][0])


# the variants that document a module as its action plugin's (plugins/doc_fragments/attributes.py)
ACTION_ONLY = [m for m in MODULES if "launchcard.inference.attributes.action" in documentation(m)[1]["extends_documentation_fragment"]]


def test_async_and_the_host_loop_are_said_once_in_the_fragments():
    # issue 45: the documentation-only modules repeated action/async/bypass_host_loop; their one home is the fragments
    assert ACTION_ONLY
    assert [m for m in MODULES if {"async", "bypass_host_loop"} & set(documentation(m)[1].get("attributes") or {})] == []


@pytest.mark.parametrize("module", ACTION_ONLY)
def test_what_the_action_fragment_says_is_true_of_the_plugin(module, docs):
    import ast

    # the file holds only its documentation
    tree, dummy = documentation(module)
    names = [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets]
    assert sorted(names) == ["DOCUMENTATION", "EXAMPLES", "RETURN"], module
    assert all(isinstance(n, (ast.Assign, ast.ImportFrom)) or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
               for n in tree.body), module
    # the action plugin of the same name keeps ActionBase's refusal of async (its run() calls ActionBase.run first)
    # and its host loop (ansible-core plugins/action/__init__.py: _supports_async and BYPASS_HOST_LOOP False)
    with open(os.path.join(REPO_ROOT, "plugins", "action", module + ".py")) as f:
        plugin = [n for n in ast.parse(f.read()).body if isinstance(n, ast.ClassDef) and n.name == "ActionModule"][0]
    set_here = [t.id for n in plugin.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    assert not {"_supports_async", "BYPASS_HOST_LOOP"} & set(set_here), module
    run = [n for n in plugin.body if isinstance(n, ast.FunctionDef) and n.name == "run"][0]
    first_super = [n for n in ast.walk(run) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "run"
                   and isinstance(n.func.value, ast.Call) and getattr(n.func.value.func, "id", None) == "super"]
    assert first_super, module
    rendered = docs[module]["attributes"]
    assert (rendered["action"]["support"], rendered["async"]["support"], rendered["bypass_host_loop"]["support"]) == ("full", "none", "none")
