# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tables of the accelerator facts: vendors and their tools, model names and ids, and
the models that need NVIDIA fabric manager, NVLink5 parts or IMEX.

Pure Python, no Ansible import.
"""

from __future__ import annotations

import re

from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import na

VENDORS = ("nvidia", "amd", "ascend")
"""Vendors in the order ``vendor: auto`` tries them."""


VENDOR_TOOLS = {
    "nvidia": ("nvidia-smi",),
    "amd": ("amd-smi", "rocm-smi"),
    "ascend": ("npu-smi",),
}
"""Which executables reveal each vendor. Any one of them is enough."""


NVSWITCH_HGX_MODELS = frozenset(("a100", "a800", "h100", "h800", "h200", "h20", "b100", "b200", "b300"))
"""Models sold on 8-GPU HGX baseboards whose GPUs talk through NVSwitch and so
need ``nvidia-fabricmanager`` at the driver's exact version (CUDA error 802
without it). See :func:`fabric_manager_required` for the full rule."""


NVLINK5_MODELS = frozenset(("b200", "b300"))
"""Blackwell HGX parts whose NVSwitch fabric (NVLink5) also needs the NVLink subnet manager
(``nvlsm``) and NSCQ beside fabric manager."""


IMEX_MODELS = frozenset(("gb200", "gb300"))
"""Grace-Blackwell superchip parts: NVLink domains span trays, managed by the
IMEX daemon instead of a local fabric manager (4 GPUs per node)."""


FABRIC_ACTIVE_STATES = frozenset(("not_started", "in_progress", "completed", "failed"))
"""``fabric_state`` values reported only by GPUs that sit on an NVLink fabric."""


# Ordered: the first match wins, so longer names come before their prefixes
# (gh200 before h200, l40s before l40, a10g before a10).
_MODEL_PATTERNS = tuple(
    (re.compile(pattern), model_id)
    for pattern, model_id in (
        (r"\bgb300\b", "gb300"),
        (r"\bgb200\b", "gb200"),
        (r"\bgb10\b", "gb10"),
        (r"\bgh200\b", "gh200"),
        (r"\bb300\b", "b300"),
        (r"\bb200\b", "b200"),
        (r"\bb100\b", "b100"),
        (r"\bh200\b", "h200"),
        (r"\bh100\b", "h100"),
        (r"\bh800\b", "h800"),
        (r"\bh20\b", "h20"),
        (r"\ba100\b", "a100"),
        (r"\ba800\b", "a800"),
        (r"\bl40s\b", "l40s"),
        (r"\bl40\b", "l40"),
        (r"\bl20\b", "l20"),
        (r"\bl4\b", "l4"),
        (r"\ba40\b", "a40"),
        (r"\ba30\b", "a30"),
        (r"\ba10g\b", "a10g"),
        (r"\ba10\b", "a10"),
        (r"\bv100\b", "v100"),
        (r"\bt4\b", "t4"),
        (r"\brtx pro 6000\b", "rtx_pro_6000"),
        # Ascend: npu-smi prints "910B3", "Ascend910B", "Ascend950PR", "310P3"... The SoC names CANN lists (torch_npu's
        # soc_version table: Ascend910B1..B4, Ascend910B2C, Ascend910B4-1, Ascend910_9391..) add a letter or a -N
        # after the variant number: the family and variant are what counts.
        (r"950\s*pr\b", "ascend_950pr"),
        (r"950\s*dt\b", "ascend_950dt"),
        (r"910\s*b\d*[a-z]?(?:-\d+)?\b", "ascend_910b"),
        (r"910\s*c\b|910_93", "ascend_910c"),
        (r"\bascend\s*910\b|\b910(?:a|proa|prob|premiuma)?\b", "ascend_910"),
        (r"310\s*p\d*[a-z]?\b", "ascend_310p"),
        (r"310\s*b\d*[a-z]?\b", "ascend_310b"),
    )
)


_AMD_MI = re.compile(r"\bmi(\d{3}[a-z]?)\b")


_VENDOR_WORDS = re.compile(r"\b(?:nvidia|amd|instinct|tesla|huawei)\b")


def normalize_model(name):
    """Map a marketing name to a short model id; never raises.

    ``"NVIDIA H100 80GB HBM3"`` -> ``"h100"``, ``"NVIDIA H200 NVL"`` -> ``"h200"``,
    ``"NVIDIA GB200"`` -> ``"gb200"``, ``"AMD Instinct MI355X"`` -> ``"mi355x"``,
    ``"Aldebaran/MI200 [Instinct MI250X]"`` (a ``pci.ids`` name) -> ``"mi250x"``, ``"910B3"`` ->
    ``"ascend_910b"``, ``"Ascend950PR"`` -> ``"ascend_950pr"``. Form factor is
    not part of the id (H100 SXM and PCIe are both ``h100``); see
    :func:`fabric_manager_required` for where it matters.

    :param name: the name as a tool prints it (``str``; anything else is
        converted with ``str()``).
    :returns: the model id (``str``); an unknown name becomes a lower-case
        slug of itself without vendor words (``"NVIDIA RTX A6000"`` ->
        ``"rtx_a6000"``); ``None`` when *name* is ``None``, blank or a bare
        PCI device id (``"0x74a1"``: a number, not a name; the AMD parser looks
        ids up in the PCI id database, see ``_accel_pci.pci_device_name``).
    """
    if name is None:
        return None
    text = na(name)
    if text is None:
        return None
    lowered = text.lower()
    if re.match(r"^0x[0-9a-f]{4}$", lowered):
        return None
    bracketed = re.search(r"\[([^\]]+)\]", lowered)
    if bracketed and bracketed.group(1).strip() != lowered.strip():
        # pci.ids puts the marketing name in brackets after the chip name
        inner = normalize_model(bracketed.group(1))
        if is_known_model(inner):
            return inner
    for pattern, model_id in _MODEL_PATTERNS:
        if pattern.search(lowered):
            return model_id
    match = _AMD_MI.search(lowered)
    if match:
        return "mi" + match.group(1)
    slug = re.sub(r"[^a-z0-9]+", "_", _VENDOR_WORDS.sub(" ", lowered)).strip("_")
    return slug or re.sub(r"[^a-z0-9]+", "_", lowered).strip("_") or "unknown"


KNOWN_MODEL_IDS = frozenset(pair[1] for pair in _MODEL_PATTERNS)

AMD_FAMILY_IDS = frozenset(("mi200", "mi300"))
"""Ids that name an AMD Instinct family, not a part: rocm-smi's ``Card Series`` on an
MI250X reads ``AMD INSTINCT MI200 (MCM) OAM ...``. The PCI device id tells the part."""


def is_known_model(model_id):
    """Whether *model_id* names a known part (not a slug, not a family like ``mi200``)."""
    if model_id in AMD_FAMILY_IDS:
        return False
    return model_id in KNOWN_MODEL_IDS or bool(re.match(r"^mi\d{3}[a-z]?$", model_id or ""))


# --------------------------------------------------------------------------
# compatibility: what a model needs from its driver stack

NVIDIA_GENERATIONS = {
    "v100": "volta", "t4": "turing",
    "a100": "ampere", "a800": "ampere", "a40": "ampere", "a30": "ampere", "a10": "ampere", "a10g": "ampere",
    "l40s": "ada", "l40": "ada", "l20": "ada", "l4": "ada",
    "h100": "hopper", "h800": "hopper", "h200": "hopper", "h20": "hopper", "gh200": "hopper",
    "b100": "blackwell", "b200": "blackwell", "gb200": "blackwell", "rtx_pro_6000": "blackwell",
    "b300": "blackwell_ultra", "gb300": "blackwell_ultra",
}
"""NVIDIA model id -> GPU generation."""

NVIDIA_MIN_DRIVER_BRANCH = {
    "volta": 418, "turing": 418, "ampere": 450, "ada": 525, "hopper": 525, "blackwell": 570,
    "blackwell_ultra": 580,
}
"""Oldest data-center driver branch that supports each generation, from the "Hardware
Supported" section of each branch's release notes (NVIDIA Data Center GPU Driver
documentation, https://docs.nvidia.com/datacenter/tesla/index.html): Hopper and Ada
from R525, Blackwell (B200, GB200) from R570, Blackwell Ultra (B300, GB300) from R580."""

ROCM_MIN_RELEASE = {
    "mi300x": (6, 2), "mi300a": (6, 2), "mi325x": (6, 2),
    "mi350x": (7, 0), "mi355x": (7, 0),
}
"""Oldest ROCm release this collection installs for each AMD Instinct model, following
AMD's compatibility matrix (https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html):
the MI300 series from 6.2 here, MI350X/MI355X from ROCm 7.0, their first release.
Models not listed are not checked."""

CANN_MIN_DRIVER = (
    ((8, 0), (24, 1)),
    ((8, 1), (25, 0)),
    ((8, 2), (25, 2)),
    ((8, 3), (25, 3)),
)
"""``(CANN major.minor, oldest Ascend HDK driver major.minor)``, from Huawei's version
compatibility table for CANN and the Ascend HDK (https://www.hiascend.com/document,
"Version Compatibility"): CANN 8.0 pairs with HDK 24.1, 8.1 with 25.0, 8.2 with 25.2,
8.3 with 25.3. A CANN release newer than the table is not checked."""


PCI_DEVICE_NAMES = {
    # pciutils/pciids pci.ids (Version 2026.08.22), vendor 1002: the MI300 series onward, which older
    # databases (Debian 12's pci.ids 2023.04.10) lack; names as that database writes them.
    "0x1002": {
        "0x74a0": "Aqua Vanjaram [Instinct MI300A]",
        "0x74a1": "Aqua Vanjaram [Instinct MI300X]",
        "0x74a2": "Aqua Vanjaram [Instinct MI308X]",
        "0x74a5": "Aqua Vanjaram [Instinct MI325X]",
        "0x74a9": "Aqua Vanjaram [Instinct MI300X HF]",
        "0x74b5": "Aqua Vanjaram [Instinct MI300X VF]",
        "0x74b9": "Aqua Vanjaram [Instinct MI325X VF]",
        "0x74bd": "Aqua Vanjaram [Instinct MI300X HF]",
        "0x75a0": "Aqua Vanjaram [Instinct MI350X]",
        "0x75a3": "Aqua Vanjaram [Instinct MI355X]",
        "0x75a8": "Aqua Vanjaram [Instinct MI350P]",
    },
    # Huawei's Ascend driver source, src/custom/dev_prod/user/npucli/inc/npu_common.h (NPU_*_DEVICE_ID) and
    # src/sdk_driver/comm/pcie/host/devdrv_pci.h (0xd803: the HCCS-connected 910 "910_93"); pci.ids names none.
    "0x19e5": {
        "0xd500": "Ascend 310P",
        "0xd801": "Ascend 910",
        "0xd802": "Ascend 910B",
        "0xd803": "Ascend 910_93",
        "0xd806": "Ascend 950",
    },
}
"""Device names by PCI vendor and device id for the accelerators a host's PCI id database may not know yet
(``_accel_pci.known_device_names`` reads the host's database first and falls back to this table); each name
normalizes (:func:`normalize_model`) to the model id the vendor tools' names give."""
