# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which accelerator vendor an engine image serves, the image each host runs, and the native packages.

Pure Python, no Ansible import (controller side: the plan, the preflight needs, the runtime role's
package list).

How a card says which vendor its image serves
---------------------------------------------
A card (``onefrontier.launch-card/v1``) has one ``image`` per recipe and no field for its vendor;
``validated_hardware`` names where the recipe's argv was validated, not what the image was built for
(the example card's ``vllm/vllm-openai:nightly`` is a CUDA build, yet its recipe lists ``mi355x`` and
``ascend_950pr_8x``). So the vendor is read from the image reference, as the upstream projects name
their builds (:func:`image_vendors`): a repository path or tag word starting ``rocm`` serves AMD;
``ascend``, ``npu`` or a word starting ``cann`` serves Ascend; anything else is a CUDA build and serves
NVIDIA. An image whose name does not say it (a site's own build) is declared in the inventory with
``launchcard_image_vendors`` (image -> vendor or list of vendors), which wins over the name.

The image a host runs
---------------------
Each GPU instance runs the card's image where that image serves the host's vendor
(``launchcard_accelerator_vendor``; the plan has no host facts, so where it is unset the card's image stays
and preflight holds it to the vendor the host shows). Otherwise it runs ``launchcard_vendor_images[engine][vendor]``, whose defaults
(:data:`DEFAULT_IMAGES`) are the images the upstream projects document; the plan names the swap in the
instance's ``changes``. Routers use no accelerator and keep the card's image. The chosen image is then
resolved and pinned by digest like any card image (``_images.py``). Preflight refuses a host whose vendor
(found by its tools or PCI bus) the image of a placed instance does not serve (``image_vendor`` check).
"""

from __future__ import annotations

import re

from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_spec

VENDORS = ("nvidia", "amd", "ascend")
"""Vendors that have engine images (``none``, a host without accelerators, runs any image)."""

DEFAULT_IMAGES = {
    "vllm": {
        # vllm docs deployment/docker.md: official image vllm/vllm-openai (CUDA), run as vllm/vllm-openai:latest
        "nvidia": "vllm/vllm-openai:latest",
        # vllm docs/getting_started/installation/gpu.rocm.inc.md: vllm/vllm-openai-rocm:latest, stable release
        "amd": "vllm/vllm-openai-rocm:latest",
        # vllm-ascend docs getting_started/quick_start.md: quay.io/ascend/vllm-ascend:<TAG>, TAG=v0.23.0 (A2; -a3 for A3)
        "ascend": "quay.io/ascend/vllm-ascend:v0.23.0",
    },
    "sglang": {
        # sglang docs/get_started/install.md (NVIDIA GPU platforms): docker image lmsysorg/sglang:latest
        "nvidia": "lmsysorg/sglang:latest",
        # sglang docs/platforms/amd_gpu.md: images on lmsysorg/sglang; cookbook DeepSeek-V3.2: v0.5.8-rocm700-mi35x (MI350/MI355)
        "amd": "lmsysorg/sglang:v0.5.8-rocm700-mi35x",
        # sglang docs/platforms/ascend/ascend_npu_quick_start.md: quay.io/ascend/sglang, stable tag v0.5.14-cann9.0.0-a3 (A3; -910b for A2)
        "ascend": "quay.io/ascend/sglang:v0.5.14-cann9.0.0-a3",
    },
}
"""The documented default of ``launchcard_vendor_images``: engine -> vendor -> image."""

# vLLM 0.23.0 is the release the vllm-ascend default above pins (its validated stack: vLLM 0.23.0 +
# vllm-ascend 0.23.0); the native defaults install the same release on every vendor.
VLLM_VERSION = "0.23.0"
# sglang-router: the release whose worker API module_utils/_router.py was read from (the installed 0.3.2)
SGLANG_ROUTER_VERSION = "0.3.2"
# SGLang: the release whose parser the argv check was held to (tests/sandbox/sglang-lock.txt)
SGLANG_VERSION = "0.5.23"

# The one index each engine's packages come from (a lock records it and the install uses it alone:
# _native_locks.py). pip/_internal/models/index.py: PyPI's simple index, pip's default --index-url.
PYPI = "https://pypi.org/simple"
ENGINE_VERSIONS = {"vllm": VLLM_VERSION, "sglang": SGLANG_VERSION}

DEFAULT_NATIVE = {
    "nvidia": {
        # vllm docs gpu.cuda.inc.md: `pip install vllm` (PyPI wheel, CUDA build)
        "vllm": {"packages": ["vllm==%s" % VLLM_VERSION], "index_url": PYPI},
        # sglang docs/get_started/install.md (NVIDIA GPU platforms): `uv pip install "sglang"` from PyPI
        "sglang": {"packages": ["sglang==%s" % SGLANG_VERSION], "index_url": PYPI},
    },
    "amd": {
        # vllm gpu.rocm.inc.md: pip needs the exact `vllm==X+rocm700` from the index wheels.vllm.ai/rocm/X/rocm700
        # (its PyTorch and dependencies come with that wheel's index); its lock is made against that index, or
        # against a mirror serving it and PyPI as one index, never the two mixed (no --extra-index-url)
        "vllm": {"packages": ["vllm==%s+rocm700" % VLLM_VERSION],
                 "index_url": "https://wheels.vllm.ai/rocm/%s/rocm700" % VLLM_VERSION},
        # sglang docs/platforms/amd_gpu.md: no wheel, built from source (sgl-kernel setup_rocm.py, python[all_hip])
        "sglang": None,
    },
    "ascend": {
        # vllm-ascend docs installation.md: with CANN on the host, vllm and vllm-ascend of one release by pip
        "vllm": {"packages": ["vllm==%s" % VLLM_VERSION, "vllm-ascend==%s" % VLLM_VERSION], "index_url": PYPI},
        # sglang docs/platforms/ascend/ascend_npu.md: installed from source with the NPU kernels, no wheel
        "sglang": None,
    },
}
"""Native runtime: vendor -> engine -> ``{packages, index_url}`` (what its lock resolves, and from where), or None
where upstream publishes no pip install. Hosts install from the locks (``_native_locks.py``), never from these."""

# sglang rust/readme.md (the router): `pip install sglang-router`, its own PyPI package, no accelerator
ROUTER_NATIVE = {"packages": ["sglang-router==%s" % SGLANG_ROUTER_VERSION], "index_url": PYPI}

_AMD = re.compile(r"^rocm")
_ASCEND = re.compile(r"^(ascend|npu|cann)")


class VendorError(ValueError):
    """A vendor variable of the wrong shape, or no image or package for a vendor (names the variable and host)."""


def _words(image):
    name = image.split("@", 1)[0].lower()
    return [w for w in re.split(r"[/:._-]+", name) if w]


def image_vendors(image, declared=None):
    """The vendors ``image`` serves, a sorted tuple: ``declared`` (``launchcard_image_vendors``) first,
    matched with or without a digest, else read from the name (see the module docstring)."""
    declared = declared or {}
    for key in (image, image.split("@", 1)[0]):
        if key in declared:
            value = declared[key]
            values = [value] if isinstance(value, str) else list(value or ())
            bad = [v for v in values if v not in VENDORS]
            if bad or not values:
                raise VendorError("launchcard_image_vendors[%r] must name vendors among %s, found %r" % (
                    key, ", ".join(VENDORS), value))
            return tuple(sorted(set(values)))
    words = _words(image)
    if any(_AMD.match(w) for w in words):
        return ("amd",)
    if any(_ASCEND.match(w) for w in words):
        return ("ascend",)
    return ("nvidia",)


def _mapping(value, host):
    if value in (None, ""):
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise VendorError("%s: launchcard_vendor_images must map an engine to {vendor: image}, found %r" % (
            host, value))
    for engine, by_vendor in value.items():
        for vendor, image in by_vendor.items():
            if vendor not in VENDORS or not isinstance(image, str) or not image or "\n" in image:
                raise VendorError("%s: launchcard_vendor_images[%r][%r] must be an image for one of %s, found %r" % (
                    host, engine, vendor, ", ".join(VENDORS), image))
    return value


def vendor_image(engine, vendor, mapping=None):
    """The image of ``engine`` for ``vendor``: ``mapping`` (``launchcard_vendor_images``) over the defaults."""
    return ((mapping or {}).get(engine) or {}).get(vendor) or DEFAULT_IMAGES.get(engine, {}).get(vendor)


def host_vendor(value, host):
    """The vendor the plan picks images for: ``launchcard_accelerator_vendor``; None where unset (the plan
    has no host facts: the card's image stays, and preflight checks it against the vendor the host shows)."""
    if value in (None, ""):
        return None
    try:
        return _unit_spec.value("vendor", value)
    except _unit_spec.OptionError as exc:
        raise VendorError("%s: %s" % (host, exc))


def apply_vendor_images(plan, settings):
    """Give each GPU instance of ``plan`` (``_planner.plan_fleet``) the image of its host's vendor, in place.

    :param settings: host -> ``{"vendor", "vendor_images", "image_vendors"}``, the host's
        ``launchcard_accelerator_vendor``, ``launchcard_vendor_images`` and ``launchcard_image_vendors``.
    :raises VendorError: a malformed variable, or a vendor with no image for an engine (naming the host,
        the recipe and the variable), before any host changes.
    """
    errors = []
    for host, hp in sorted(plan.get("hosts", {}).items()):
        s = settings.get(host) or {}
        try:
            vendor = host_vendor(s.get("vendor"), host)
            mapping = _mapping(s.get("vendor_images"), host)
            declared = s.get("image_vendors") or {}
            for inst in hp.get("instances", []):
                if not inst.get("gpus") or vendor in (None, "none") or not inst.get("image"):
                    continue
                if vendor in image_vendors(inst["image"], declared):
                    continue
                image = vendor_image(inst["engine"], vendor, mapping)
                if not image:
                    raise VendorError("%s: recipe %s's image %s does not serve %s and launchcard_vendor_images has "
                                      "no %s image for %s" % (host, inst["recipe"], inst["image"], vendor,
                                                              inst["engine"], vendor))
                inst["changes"].append("image %s (the card's %s serves %s, this host is %s: launchcard_vendor_images)" % (
                    image, inst["image"], "/".join(image_vendors(inst["image"], declared)), vendor))
                inst["image"] = image
        except VendorError as exc:
            errors.append(str(exc))
    if errors:
        raise VendorError("\n".join(errors))
    return plan


def image_vendor_needs(host_plan, declared=None):
    """What preflight's ``image_vendor`` check compares: one entry per GPU instance with an image,
    ``{"recipe", "image", "vendors"}``."""
    out = []
    for inst in (host_plan or {}).get("instances", []):
        if inst.get("gpus") and inst.get("image"):
            out.append({"recipe": inst["recipe"], "image": inst["image"],
                        "vendors": list(image_vendors(inst["image"], declared))})
    return out


def native_requirements(vendor, engines, router=False):
    """What the lock of a host of ``vendor`` running ``engines`` (the engines of its GPU instances) and, with
    ``router``, the SGLang router resolves: ``{"packages", "index_url"}`` (``tools/native_lock.py`` reads it).

    :raises VendorError: an engine with no published pip install for the vendor (names both and the variables
        that set the install instead), or packages from two indexes (a lock has one).
    """
    packages, indexes = [], []
    vendor = vendor if vendor in VENDORS else "nvidia"
    wanted = [DEFAULT_NATIVE[vendor].get(e) for e in sorted(set(engines))]
    for engine, req in zip(sorted(set(engines)), wanted):
        if req is None:
            raise VendorError("no pip install of %s is published for %s accelerators (upstream builds it from source "
                              "or ships images): set launchcard_runtime_native_lock to a lock of your build, or "
                              "launchcard_runtime_native_packages, or run it in a container" % (engine, vendor))
    for req in [w for w in wanted if w] + ([ROUTER_NATIVE] if router else []):
        packages.extend(p for p in req["packages"] if p not in packages)
        if req["index_url"] not in indexes:
            indexes.append(req["index_url"])
    if len(indexes) > 1:
        raise VendorError("%s come from %s: one lock has one index; use a mirror that serves both "
                          "(tools/native_lock.py --index-url) and set launchcard_runtime_native_lock"
                          % (", ".join(packages), " and ".join(indexes)))
    return {"packages": packages, "index_url": indexes[0] if indexes else PYPI}
