# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resolve_images action with resolved (a plan file's images): those are not asked of the registry."""

from __future__ import annotations

from unittest.mock import MagicMock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible.template import Templar
from ansible_collections.launchcard.inference.plugins.action import resolve_images
from ansible_collections.launchcard.inference.plugins.action.resolve_images import ActionModule

SGLANG = "lmsysorg/sglang:latest"
VLLM = "vllm/vllm-openai:latest"
PINNED = "docker.io/lmsysorg/sglang@sha256:" + "1" * 64


class Registry(object):
    """A registry that records what it is asked: every tag resolves to sha256:22..., every image is 5 bytes."""

    asked = []

    def __init__(self, **kwargs):
        self.requests, self.answered, self.skipped = 0, {}, {}

    def check_mirrors(self):
        self.asked.append("mirrors")

    def resolve(self, ref):
        self.asked.append(ref["repository"])
        return "sha256:" + "2" * 64

    def exists(self, ref, digest):
        self.asked.append("exists " + digest[-4:])
        return True, []

    def image_size(self, ref, digest, platform):
        self.asked.append("size " + ref["repository"])
        return 5


def run(monkeypatch, task_vars=None, **args):
    Registry.asked = []
    monkeypatch.setattr(resolve_images, "RegistryClient", Registry)
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = False
    connection = MagicMock()
    connection._shell.tmpdir = None
    templar = Templar(loader=DataLoader(), variables=task_vars or {})
    return ActionModule(task, connection, PlayContext(), DataLoader(), templar, None).run(task_vars=task_vars or {})


def test_a_resolved_image_is_taken_as_written_and_the_others_are_asked(monkeypatch):
    result = run(monkeypatch, images=[SGLANG, VLLM], sizes=True,
                 resolved={"image_refs": {SGLANG: PINNED}, "image_sizes": {SGLANG: 7}})
    assert result["image_refs"] == {SGLANG: PINNED, VLLM: "docker.io/vllm/vllm-openai@sha256:" + "2" * 64}
    assert result["image_sizes"] == {SGLANG: 7, VLLM: 5}
    assert Registry.asked == ["mirrors", "vllm/vllm-openai", "size vllm/vllm-openai"]


def test_every_image_resolved_asks_no_registry(monkeypatch):
    result = run(monkeypatch, images=[SGLANG], sizes=True,
                 resolved={"image_refs": {SGLANG: PINNED, VLLM: "unused"}, "image_sizes": {SGLANG: 7}})
    assert result["image_refs"] == {SGLANG: PINNED} and result["image_sizes"] == {SGLANG: 7}
    assert Registry.asked == []


def test_a_held_digest_is_measured_not_the_resolved_one(monkeypatch):
    held = "docker.io/lmsysorg/sglang@sha256:" + "3" * 64
    result = run(monkeypatch, images=[SGLANG], sizes=True, hold={SGLANG: held},
                 resolved={"image_refs": {SGLANG: PINNED}, "image_sizes": {SGLANG: 7}})
    assert result["image_refs"] == {SGLANG: held} and result["image_sizes"] == {SGLANG: 5}


class Gone(Registry):
    """A registry that deleted every digest it is asked to confirm."""

    def exists(self, ref, digest):
        self.asked.append("exists " + digest[-4:])
        return False, [("registry", "image %s: manifest unknown" % ref["repository"])]


def test_pin_holds_a_moved_tag_at_the_recorded_digest_and_checks_it_for_the_hosts_that_must_pull_it(monkeypatch):
    held = "docker.io/lmsysorg/sglang@sha256:" + "3" * 64
    plan = {"hosts": dict((h, {"instances": [{"image": SGLANG}]}) for h in ("h1", "h2", "h3"))}
    hostvars = {"h1": {"preflight_result": {"recorded_image_refs": {SGLANG: held}}},
                "h2": {"preflight_result": {"recorded_image_refs": {SGLANG: held}, "recorded_images_missing": [SGLANG]}},
                "h3": {"preflight_result": {}}}
    tv = {"hostvars": hostvars, "launchcard_plan": plan}
    vllm = "docker.io/vllm/vllm-openai@sha256:" + "2" * 64
    result = run(monkeypatch, tv, pin={SGLANG: PINNED, VLLM: vllm}, pin_hosts=["h1", "h2", "h3"])
    assert result["image_refs"] == {SGLANG: held, VLLM: vllm} and result["drift"][0]["running"] == "sha256:" + "3" * 64
    # the moved tag is preflight's report: no warning here; the kept digest is confirmed with the registry
    assert "warnings" not in result and Registry.asked == ["mirrors", "exists 3333"]
    # a kept digest the registry deleted stops the run, naming the hosts that must pull it (h2 lost it, h3 is new)
    monkeypatch.setattr(Registry, "exists", Gone.exists, raising=False)
    with pytest.raises(AnsibleActionFail, match="h2, h3 must pull it"):
        run(monkeypatch, tv, pin={SGLANG: PINNED}, pin_hosts=["h1", "h2", "h3"])
    # upgrade.yml follows the registry: nothing held, nothing to confirm
    result = run(monkeypatch, tv, pin={SGLANG: PINNED}, pin_hosts=["h1", "h2", "h3"], hold_recorded=False)
    assert result["image_refs"] == {SGLANG: PINNED} and result["drift"] == [] and Registry.asked == []
