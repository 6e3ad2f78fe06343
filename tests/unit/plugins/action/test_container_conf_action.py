# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container_conf action: which files it writes through ansible.builtin.copy, with what, and what it returns."""

from __future__ import annotations

import base64
import json
from unittest.mock import MagicMock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible_collections.launchcard.inference.plugins.action.container_conf import ActionModule
from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as images
from ansible_collections.launchcard.inference.plugins.plugin_utils import _runtime_files as runtime_files

HUB_MIRROR = {"docker.io": [{"location": "mirror.example:5000", "insecure": True}]}
QUAY_MIRROR = {"quay.io": ["quay-mirror.example"]}
PINNED = "docker.io/vllm/vllm-openai@sha256:" + "1" * 64
CREDS = {"quay.io": {"username": "robot", "password": "s3cret-pw"}}


class Host(object):
    """What the action asks of the host: module calls (answered from ``answers``) and copies (changed unless equal)."""

    def __init__(self, files=None, fail_copy=False):
        self.files, self.calls, self.fail_copy = dict(files or {}), [], fail_copy

    def module(self, module_name, module_args, task_vars=None, **kwargs):
        self.calls.append((module_name.rsplit(".", 1)[-1], dict(module_args)))
        if module_name.endswith("slurp"):
            if module_args["src"] not in self.files:
                return {"failed": True, "msg": "file not found"}
            return {"content": base64.b64encode(self.files[module_args["src"]].encode()).decode()}
        return {"changed": True, "diff": {"before": {"path": module_args["path"]}, "after": {"state": module_args["state"]}}}

    def copy_action(self, name, task, **kwargs):
        action = MagicMock()

        def run(task_vars=None):
            args = dict(task.args)
            self.calls.append(("copy", args))
            if self.fail_copy:
                return {"failed": True, "msg": "Destination directory does not exist"}
            changed = self.files.get(args["dest"]) != args["content"]
            return {"changed": changed, "dest": args["dest"], "diff": {"after": args["content"]} if changed else {}}
        action.run = run
        assert name == "ansible.legacy.copy"
        return action


def run(host, **args):
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = False
    task.copy.side_effect = lambda: MagicMock(args={"stale": 1})
    connection = MagicMock()
    connection._shell.tmpdir = None
    shared = MagicMock()
    shared.action_loader.get.side_effect = host.copy_action
    action = ActionModule(task, connection, PlayContext(), DataLoader(), None, None)
    action._shared_loader_obj = shared  # ActionBase takes the global plugin loader (ansible-core 2.19)
    action._execute_module = host.module
    return action.run(task_vars={})


def test_docker_merges_the_hub_mirror_into_the_daemon_json_it_read_and_keeps_its_other_keys():
    host = Host({"/etc/docker/daemon.json": json.dumps({"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}})})
    result = run(host, runtime="docker", mirrors=HUB_MIRROR, images=[PINNED])
    assert [c[0] for c in host.calls] == ["slurp", "copy"]
    written = host.calls[1][1]
    assert written["dest"] == "/etc/docker/daemon.json" and written["mode"] == "0644" and "stale" not in written
    assert json.loads(written["content"]) == {"registry-mirrors": ["http://mirror.example:5000"],
                                              "insecure-registries": ["mirror.example:5000"],
                                              "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}}
    # byte for byte what `to_nice_json` wrote before: a host deployed earlier sees no change
    assert written["content"] == json.dumps(json.loads(written["content"]), indent=4, sort_keys=True, separators=(",", ": "))
    assert result["changed"] and result["daemon_changed"] and result["diff"] == {"after": written["content"]}
    assert result["pull_groups"] == {"docker.io": {"images": [PINNED], "throttle": 0}}


def test_docker_without_a_daemon_json_writes_a_new_one_and_an_unchanged_one_reloads_nothing():
    host = Host()
    first = run(host, runtime="docker", mirrors=HUB_MIRROR)
    assert first["daemon_changed"] and json.loads(host.calls[1][1]["content"])["registry-mirrors"]
    again = Host({"/etc/docker/daemon.json": host.calls[1][1]["content"]})
    assert run(again, runtime="docker", mirrors=HUB_MIRROR)["daemon_changed"] is False


def test_docker_without_mirrors_touches_nothing_but_still_groups_the_pulls():
    host = Host()
    result = run(host, runtime="docker", images=[PINNED, "quay.io/x/y:1"], pull_concurrency={"quay.io": 2})
    assert host.calls == [] and result["changed"] is False and result["daemon_changed"] is False
    assert result["pull_groups"] == {"docker.io": {"images": [PINNED], "throttle": 0},
                                     "quay.io": {"images": ["quay.io/x/y:1"], "throttle": 2}}


def test_a_docker_mirror_of_another_registry_fails_before_anything_is_read():
    host = Host()
    with pytest.raises(AnsibleActionFail, match="quay.io"):
        run(host, runtime="docker", mirrors=QUAY_MIRROR)
    assert host.calls == []


def test_a_bad_pull_bound_fails_naming_the_variable_before_anything_changes():
    host = Host()
    with pytest.raises(AnsibleActionFail, match="launchcard_image_pull_concurrency"):
        run(host, runtime="podman", mirrors=QUAY_MIRROR, keyring=False, images=[PINNED], pull_concurrency="two")
    assert host.calls == []


def test_podman_writes_the_mirrors_then_the_keyring_drop_in_after_its_folder_and_lists_every_diff():
    host = Host()
    result = run(host, runtime="podman", mirrors=QUAY_MIRROR, keyring=False, conf_dir="/etc/containers")
    assert [(c[0], c[1].get("dest", c[1].get("path"))) for c in host.calls] == [
        ("copy", "/etc/containers/registries.conf.d/50-launchcard-mirrors.conf"),
        ("file", "/etc/containers/containers.conf.d"),
        ("copy", "/etc/containers/containers.conf.d/50-launchcard.conf")]
    assert host.calls[0][1]["content"] == images.podman_registries_conf(QUAY_MIRROR)
    assert host.calls[1][1] == {"path": "/etc/containers/containers.conf.d", "state": "directory", "mode": "0755"}
    assert host.calls[2][1]["content"] == images.podman_containers_conf(False)
    assert result["changed"] and len(result["diff"]) == 3 and result["daemon_changed"] is False


def test_a_failed_copy_fails_the_task_with_its_message_and_stops_there():
    host = Host(fail_copy=True)
    result = run(host, runtime="podman", mirrors=QUAY_MIRROR, keyring=False)
    assert result["failed"] and "Destination directory" in result["msg"]
    assert [c[0] for c in host.calls] == ["copy"]


def test_the_auth_file_holds_each_registrys_credentials_and_the_result_holds_no_password():
    host = Host()
    result = run(host, part="auth", runtime="podman", credentials=CREDS, auth_file="/etc/launchcard/registry-auth.json")
    assert [c[0] for c in host.calls] == ["file", "copy"]
    assert host.calls[0][1] == {"path": "/etc/launchcard", "state": "directory", "mode": "0700"}
    written = host.calls[1][1]
    assert (written["owner"], written["group"], written["mode"]) == ("root", "root", "0600")
    assert written["content"] == runtime_files.nice_json(images.registry_auth(CREDS))
    assert "pull_groups" not in result and "s3cret-pw" not in json.dumps(
        dict((k, v) for k, v in result.items() if k != "diff"))


def test_emptied_credentials_remove_the_auth_file_and_docker_writes_none():
    host = Host()
    run(host, part="auth", runtime="podman", credentials={})
    assert host.calls == [("file", {"path": images.REGISTRY_AUTH_FILE, "state": "absent"})]
    docker = Host()
    assert run(docker, part="auth", runtime="docker", credentials=CREDS)["changed"] is False and docker.calls == []


def test_credentials_for_a_plain_http_mirror_not_allowed_fail_naming_the_variable_before_anything_changes():
    host = Host()
    mirrors = {"quay.io": [{"location": "plain.example:5000", "insecure": True}]}
    creds = {"plain.example:5000": {"username": "u", "password": "s3cret-pw"}}
    with pytest.raises(AnsibleActionFail, match="launchcard_registry_credentials_plain_http") as err:
        run(host, part="auth", runtime="podman", mirrors=mirrors, credentials=creds)
    assert "s3cret-pw" not in str(err.value) and host.calls == []
    run(host, part="auth", runtime="podman", mirrors=mirrors, credentials=creds, credentials_plain_http=["plain.example:5000"])
    assert [c[0] for c in host.calls] == ["file", "copy"]
