# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runtime role's decisions (plugin_utils/_runtime_host.py) from already rendered variables: what a native host
installs, the record's runtime, and the refusals that name their variable. The role's own defaults, rendered by
Ansible: tests/unit/test_noop_upgrade.py; the digest a rotated password changes: tests/integration/
test_runtime_setup_digest.py."""

from __future__ import annotations

import json

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as images
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as unit_options
from ansible_collections.launchcard.inference.plugins.plugin_utils._runtime_host import RuntimeHost, digest

HOST_PLAN = {"instances": [{"role": "aggregated", "engine": "vllm", "unit": "launchcard-x.service"}]}
PLAN = {"hosts": {"h": HOST_PLAN}}
REFS = {"docker.io/vllm/vllm-openai:v0.32.0": "docker.io/vllm/vllm-openai@sha256:" + "a" * 64}


def host(kind="podman", own=None, **role):
    """RuntimeHost over the runtime role's variables as rendered (its defaults, the play's), for host h."""
    tv = dict(inventory_hostname="h", launchcard_plan=PLAN, hostvars={"h": dict(own or {})}, runtime_kind=kind,
              runtime_engine_package="podman", runtime_registry_mirrors={}, runtime_podman_keyring=True,
              runtime_podman_conf_dir="/etc/containers", runtime_pull_images=True,
              runtime_host_images=list(REFS.values()), runtime_registry_credentials={},
              runtime_registry_auth_file=images.REGISTRY_AUTH_FILE, runtime_image_refs=REFS)
    tv.update(role)
    return RuntimeHost(None, tv)


def test_a_container_host_records_its_kind_images_and_the_digest_of_its_setup():
    here = host()
    want = digest(["podman", "podman", {}, True, "/etc/containers", True, sorted(REFS.values())])
    assert here.setup_digest() == want and len(want) == 40
    assert here.record() == {"kind": "podman", "packages": [], "image_refs": REFS, "setup": want}
    # the record names this digest: nothing to do; another, or none read: the container steps run
    assert host(runtime_setup_recorded=want).needed() is False
    assert host(runtime_setup_recorded="0" * 40).needed() is True and host().needed() is True
    # a host the plan gives nothing is left alone
    assert host(launchcard_plan={"hosts": {}}, runtime_setup_recorded=None).needed() is False


def test_credentials_enter_as_their_salted_digest_never_the_password():
    creds = {"docker.io": {"username": "puller", "password": "s3cret-pw"}}
    here = host(runtime_registry_credentials=creds)
    settings = here.settings()
    assert "s3cret-pw" not in json.dumps(settings)
    assert settings["setup"] == digest(["podman", "podman", {}, True, "/etc/containers", True, sorted(REFS.values()),
                                        images.registry_credentials_digest(creds, {}, "h"), images.REGISTRY_AUTH_FILE])
    with pytest.raises(ValueError, match="^runtime_registry_credentials: "):
        host(runtime_registry_credentials={"docker.io": {"username": "puller"}}).setup_digest()


def test_a_native_host_installs_the_collection_s_lock_or_the_operator_s_list():
    here = host("native")
    install = here.native_install()
    assert install == unit_options.native_install({}, HOST_PLAN) and install["lock"]["text"]
    stamp = digest(install["packages"] + [install["pip_args"], install["lock"]["sha256"]])
    assert here.native_stamp() == stamp and here.setup_digest() is None
    assert here.record() == {"kind": "native", "packages": install["packages"], "image_refs": REFS, "setup": None}
    # the stamp among those preflight listed: nothing to do; not listed, or none read: the install runs
    assert host("native", runtime_native_stamps_found=[".launchcard-" + stamp]).needed() is False
    assert host("native", runtime_native_stamps_found=[]).needed() is True and host("native").needed() is True
    settings = host("native", runtime_native_stamps_found=[]).settings()
    assert settings["native"]["installed"] is False and settings["native"]["stamp"] == stamp
    # the operator's own list (the inventory's, or the role's variables where the play sets them): no lock
    own = host("native", own={"launchcard_runtime_native_packages": ["vllm==0.32.0"],
                              "launchcard_runtime_native_pip_extra_args": "--no-index --find-links /w"})
    assert own.native_install() == {"packages": ["vllm==0.32.0"], "pip_args": "--no-index --find-links /w", "lock": None}
    role = host("native", runtime_native_packages=["x==1"], runtime_native_pip_extra_args=None)
    assert role.native_install() == {"packages": ["x==1"], "pip_args": "", "lock": None}
    assert role.native_stamp() == digest(["x==1", ""])


def test_a_malformed_list_or_lock_is_refused_naming_its_variable():
    with pytest.raises(ValueError, match="runtime_native_packages"):
        host("native", runtime_native_packages="vllm").native_install()
    with pytest.raises(ValueError, match="launchcard_runtime_native_lock"):
        host("native", own={"launchcard_runtime_native_lock": "relative/lock.txt"}).native_install()
