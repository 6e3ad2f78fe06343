# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resolve_images action with resolved (a plan file's images): those are not asked of the registry."""

from __future__ import annotations

from unittest.mock import MagicMock

from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
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

    def image_size(self, ref, digest, platform):
        self.asked.append("size " + ref["repository"])
        return 5


def run(monkeypatch, **args):
    Registry.asked = []
    monkeypatch.setattr(resolve_images, "RegistryClient", Registry)
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = False
    connection = MagicMock()
    connection._shell.tmpdir = None
    return ActionModule(task, connection, PlayContext(), DataLoader(), None, None).run(task_vars={})


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
