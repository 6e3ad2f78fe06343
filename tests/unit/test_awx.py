# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What AWX / AAP and ansible-navigator read from the repository: the credential types of
extensions/awx/credential_types and ansible-navigator.yml."""

from __future__ import annotations

import glob
import os
import re
import subprocess

import pytest
import yaml
from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ansible_collections.launchcard.inference.plugins.plugin_utils import _images
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CREDENTIAL_TYPES = sorted(glob.glob(os.path.join(ROOT, "extensions", "awx", "credential_types", "*.yml")))
# AWX's injector schema: an extra var's key, at any depth, before templating (awx/main/fields.py,
# CredentialTypeInjectorField, AWX 21.12.0 and newer)
AWX_KEY = re.compile(r"^[a-zA-Z_\{\}]+[a-zA-Z0-9_\{\}]*$")
# The injected values the collection keeps out of its output: the token, and each registry's password.
SECRET_PATHS = {("launchcard_hf_token",), ("launchcard_registry_credentials", "*", "password")}


def _load(path):
    with open(path) as f:
        return yaml.safe_load(f)


def _render(node, namespace):
    """The extra vars AWX injects: every key and leaf rendered in a sandbox (awx/main/models/credential.py)."""
    env = ImmutableSandboxedEnvironment(undefined=StrictUndefined)
    if isinstance(node, dict):
        return {_render(k, namespace): _render(v, namespace) for k, v in node.items()}
    if isinstance(node, list):
        return [_render(x, namespace) for x in node]
    return env.from_string(node).render(**namespace)


def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, path + (k,))
    else:
        yield path, node


def _argument_spec_mentions():
    """Every C(launchcard_*) an argument spec's description names: the variables the roles' options read."""
    text = "".join(open(p).read() for p in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")))
    return set(re.findall(r"C\((launchcard_[a-z0-9_]+)\)", text))


def test_there_are_the_two_credential_types():
    assert [os.path.basename(p) for p in CREDENTIAL_TYPES] == ["hf_token.yml", "registry.yml"]


@pytest.mark.parametrize("path", CREDENTIAL_TYPES, ids=os.path.basename)
def test_a_credential_type_is_what_awx_accepts(path):
    ct = _load(path)
    assert set(ct) == {"name", "description", "kind", "inputs", "injectors"}
    assert ct["kind"] == "cloud"  # custom types are cloud or net
    fields = ct["inputs"]["fields"]
    ids = [f["id"] for f in fields]
    assert len(set(ids)) == len(ids) and "tower" not in ids
    assert all(f.get("type", "string") == "string" and f["label"] for f in fields)
    assert set(ct["inputs"]["required"]) <= set(ids)
    assert set(ct["injectors"]) == {"extra_vars"}
    keys = list(_dict_keys(ct["injectors"]["extra_vars"]))
    assert all(AWX_KEY.match(k) for k in keys), keys
    # every template names a field (AWX renders them with StrictUndefined when the type is saved)
    _render(ct["injectors"]["extra_vars"], {i: "EXAMPLE" for i in ids})


def _dict_keys(node):
    if isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from _dict_keys(v)


@pytest.mark.parametrize("path", CREDENTIAL_TYPES, ids=os.path.basename)
def test_the_injected_variables_are_the_collections_and_every_secret_is_a_secret_input(path):
    ct = _load(path)
    fields = {f["id"]: f for f in ct["inputs"]["fields"]}
    injected = _render(ct["injectors"]["extra_vars"], {i: "<%s>" % i for i in fields})
    assert set(injected) <= _argument_spec_mentions(), "a variable no role reads"
    for where, value in _leaves(injected):
        pattern = where[:1] + ("*",) * (len(where) > 2) + where[2:]
        fed = re.findall(r"<([a-z_]+)>", value)
        assert fed, where
        for field in fed:
            assert bool(fields[field].get("secret")) == (pattern in SECRET_PATHS), (where, field)
    # a key is shown wherever the variable is: no secret in one
    assert not [k for k in _dict_keys(injected) if any(fields[f].get("secret") for f in re.findall(r"<([a-z_]+)>", k))]


def test_the_injected_values_are_what_the_collection_reads():
    token = _render(_load(CREDENTIAL_TYPES[0])["injectors"]["extra_vars"], {"hf_token": "hf_x"})
    assert _unit_options.host_secrets(token)["secrets"] == {"HF_TOKEN": "hf_x"}
    creds = _render(_load(CREDENTIAL_TYPES[1])["injectors"]["extra_vars"],
                    {"registry": "nvcr.io", "username": "$oauthtoken", "password": "p:w"})
    assert _images.registry_auth(creds["launchcard_registry_credentials"]) == \
        {"auths": {"nvcr.io": {"auth": "JG9hdXRodG9rZW46cDp3"}}}  # base64 of $oauthtoken:p:w


def test_ansible_navigator_runs_the_image_make_ee_builds_in_stdout_mode_without_artifacts():
    nav = _load(os.path.join(ROOT, "ansible-navigator.yml"))["ansible-navigator"]
    ee = nav["execution-environment"]
    tags = _load(os.path.join(ROOT, "meta", "execution-environment.yml"))["options"]["tags"]
    assert ee["enabled"] is True and ee["image"] == tags[0] and ee["pull"]["policy"] == "never"
    # the tag is the collection's version, so a release names a new image
    assert tags[0].rsplit(":", 1)[1] == _load(os.path.join(ROOT, "galaxy.yml"))["version"]
    assert nav["mode"] == "stdout" and nav["playbook-artifact"]["enable"] is False
    # what it writes goes under a path git ignores
    for path in (nav["ansible-runner"]["artifact-dir"], nav["logging"]["file"]):
        res = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, check=False)
        assert res.returncode == 0, path


def test_the_plan_apply_workflow_chains_plan_slices_and_routers_on_one_plan_file():
    """Issue 28 item 2: the workflow example runs playbooks that exist, each given the same plan file."""
    wf = _load(os.path.join(ROOT, "extensions", "awx", "workflows", "plan-apply.yml"))
    templates = dict((t["name"], t) for t in wf["job_templates"])
    documented = set(re.findall(r"^\| `(launchcard_[a-z_]+)` \|", open(os.path.join(ROOT, "docs", "inventory.md")).read(), re.M))
    for t in templates.values():
        assert os.path.isfile(os.path.join(ROOT, t["playbook"])), t["playbook"]
        assert t["extra_vars"]["launchcard_plan_file"] == wf["plan_vars"]["launchcard_plan_file"]
        assert set(t["extra_vars"]) <= documented, set(t["extra_vars"]) - documented
    nodes = wf["workflow"]["workflow_nodes"]
    order = [templates[n["unified_job_template"]["name"]] for n in nodes]
    # the final job, and only it, releases the fleet lock the slices hold (one run id: the plan file's)
    assert [t["extra_vars"].get("launchcard_plan_final") for t in order] == [None, None, True]
    assert [t["playbook"] for t in order] == ["playbooks/plan.yml", "playbooks/deploy.yml", "playbooks/deploy.yml"]
    assert [t.get("job_slice_count", 1) for t in order] == [1, 4, 1]
    assert [n.get("related", {}).get("success_nodes") for n in nodes] == [
        [{"identifier": nodes[1]["identifier"]}], [{"identifier": nodes[2]["identifier"]}], None]
    # the slices leave the routers to the last job
    assert order[1]["limit"] == "all:!" + order[2]["limit"]
