# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which engine release a recipe runs (issue 43, item 5): the image's tag, the native lock, the card."""

from __future__ import annotations

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _engine_version as ev
from ansible_collections.launchcard.inference.plugins.plugin_utils import _native_locks

DIGEST = "@sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize("image,engine,version", [
    ("vllm/vllm-openai:v0.32.0", "vllm", "0.32.0"),
    ("vllm/vllm-openai:v0.32.0" + DIGEST, "vllm", "0.32.0"),
    ("vllm/vllm-openai:v0.32.0-x86_64", "vllm", "0.32.0"),
    ("vllm/vllm-openai:v0.32.0-cu128", "vllm", "0.32.0"),
    ("vllm/vllm-openai:v0.11.0rc1", "vllm", "0.11.0rc1"),
    ("vllm/vllm-openai-rocm:v0.11.2", "vllm", "0.11.2"),
    ("localhost:5000/vllm/vllm-openai:v0.11.2", "vllm", "0.11.2"),  # a mirror keeps the name
    ("lmsysorg/sglang:v0.5.23-cu129", "sglang", "0.5.23"),
    ("lmsysorg/sglang:v0.5.5.post1-cu129-amd64", "sglang", "0.5.5.post1"),
    ("lmsysorg/sglang:v0.5.8-rocm700-mi35x", "sglang", "0.5.8"),
    ("docker.io/lmsysorg/sglang:v0.5.0", "sglang", "0.5.0"),
    # no release in the tag: unknown
    ("vllm/vllm-openai:latest", "vllm", None),
    ("vllm/vllm-openai:nightly", "vllm", None),
    ("vllm/vllm-openai:nightly-7f1a5398e9610d96c473931a26c0e12bbe0d0423", "vllm", None),
    ("vllm/vllm-openai:cu130-nightly", "vllm", None),
    ("vllm/vllm-openai" + DIGEST, "vllm", None),
    ("lmsysorg/sglang" + DIGEST, "sglang", None),
    ("lmsysorg/sglang", "sglang", None),
    ("lmsysorg/sglang:latest", "sglang", None),
    ("vllm/vllm-openai-rocm:0123456789abcdef0123456789abcdef01234567", "vllm", None),  # a commit, no v
    # another image, or the other engine's: its tag is not the engine's release
    ("myorg/custom-vllm:v0.32.0", "vllm", None),
    ("lmsysorg/sglang:v0.5.23", "vllm", None),
    ("vllm/vllm-openai:v0.32.0", "sglang", None),
    ("vllm/vllm-openai:vnext", "vllm", None),
    (None, "vllm", None),
])
def test_the_release_an_engine_image_names_in_its_tag(image, engine, version):
    assert ev.from_image(image, engine) == version


@pytest.mark.parametrize("text,version", [
    ("0.32.0", "0.32.0"), ("v0.32.0", "0.32.0"), ("0.32.0+cpu", "0.32.0"), ("0.5.5.post1", "0.5.5.post1"),
    ("", None), (None, None), ("latest", None), (">=0.10", None), ("../../etc/passwd", None), ("0.32.0/x", None),
    ("0.32", "0.32"), ("1", None),
])
def test_a_release_is_a_release_number_or_nothing(text, version):
    assert ev.release(text) == version


def test_the_release_a_native_lock_pins():
    assert ev.from_pins(["torch==2.9.0", "vllm==0.23.0"], "vllm") == "0.23.0"
    assert ev.from_pins(["sglang[all]==0.5.23", "sglang-router==0.3.2"], "sglang") == "0.5.23"
    assert ev.from_pins(["sglang-router==0.3.2"], "sglang") is None
    assert ev.from_pins(["vllm>=0.10"], "vllm") is None
    assert ev.from_pins(None, "vllm") is None
    # the collection's own lock
    lock = _native_locks.load(_native_locks.shipped("nvidia", ["vllm"]))
    assert ev.from_pins(lock["pins"], "vllm") == "0.23.0"


@pytest.mark.parametrize("kw,want", [
    # a container runs what its image's tag names, before the card's engine_version
    ({"image": "vllm/vllm-openai:v0.33.0", "card_version": "0.32.0"}, {"version": "0.33.0", "from": "image tag v0.33.0"}),
    ({"image": "vllm/vllm-openai:latest", "card_version": "0.32.0"},
     {"version": "0.32.0", "from": "card engine_version"}),
    ({"image": "vllm/vllm-openai:latest", "card_version": "some day"},
     {"version": None,
      "from": "image vllm/vllm-openai:latest: not a release tag of vllm's images, envs[].engine_version is no release number"}),
    ({"image": None}, {"version": None, "from": "no image named, no envs[].engine_version"}),
    # a native install runs its lock, whatever the image
    ({"image": "vllm/vllm-openai:v0.33.0", "runtime": "native", "pins": ["vllm==0.23.0"]},
     {"version": "0.23.0", "from": "native lock"}),
    ({"image": "vllm/vllm-openai:v0.33.0", "runtime": "native", "pins": None, "card_version": "v0.32.0"},
     {"version": "0.32.0", "from": "card engine_version"}),
    ({"image": "vllm/vllm-openai:v0.33.0", "runtime": "native"},
     {"version": None, "from": "native install, its lock not read, no envs[].engine_version"}),
    ({"image": None, "runtime": "native", "pins": ["sglang==0.5.23"]},
     {"version": None, "from": "native install, its lock pins no vllm, no envs[].engine_version"}),
])
def test_which_release_a_recipe_runs(kw, want):
    assert ev.resolve("vllm", **kw) == want
