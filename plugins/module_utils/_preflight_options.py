# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the collection: the options of the preflight module that its action plugin reads on the controller
(plugins/action/preflight.py) and the module accepts and ignores, documented in plugins/doc_fragments/preflight_action.py;
and the options of the checks (``_preflight.evaluate``) as the module's options give them, which the module hands
the action plugin (the checks run on the controller, ``plugin_utils/_preflight_steps.py`` checked)."""

from __future__ import annotations

GIB = 1 << 30
# Room an image takes per compressed byte its manifest lists (plugins/plugin_utils/_registry_api.py manifest_size):
# its layers unpacked, plus the compressed blob of the layer being unpacked, which the engine holds meanwhile.
# Measured on the sandbox's stand-in image (Python 3.11 and shared libraries, one gzip layer): 49.8 MiB
# compressed, 153.2 MiB in podman's store (`podman image inspect` Size), 3.1x; with its blob, 4.1x at the peak
# of the pull. An image of many layers holds one layer's blob at a time, so 4 is a floor of the peak for
# those, not a sizing of everything the engine keeps (docs/deploy.md, "2. Preflight").
DEFAULT_IMAGE_UNPACK_FACTOR = 4.0

CONTROLLER_SPEC = dict(
    image_vendors=dict(type="dict", default={}),
    native_packages=dict(type="raw"),
    native_lock=dict(type="raw"),
    read_units=dict(type="bool", default=False),
    recheck=dict(type="bool", default=False),
    take_lock=dict(type="bool", default=False),
    lock_defer=dict(type="bool", default=False),
    lock_dir=dict(type="path", default="/var/lib/launchcard"),
    break_lock=dict(type="bool", default=False),
    host_step=dict(type="dict"),
    from_role=dict(type="bool", default=False),
)


def evaluate_options(params):
    """``_preflight.evaluate``'s options from the module's validated options."""
    return {
        "checks": params["checks"],
        "allow_unvalidated_hardware": params["allow_unvalidated_hardware"],
        "headroom_mib": params["headroom_mib"],
        "host_ipc": params["host_ipc"],
        "shm_min_bytes": int(params["shm_min_gib"] * GIB),
        "runtime": params["runtime"],
        "image_allowance_bytes": int(params["image_allowance_gib"] * GIB),
        "image_sizes": params["image_sizes"],
        "image_unpack_factor": params["image_unpack_factor"],
        "install_driver": params["install_driver"],
        "gpu_memory_mib": params["gpu_memory_mib"],
        "stack_versions": dict((k, v) for k, v in (params["stack_versions"] or {}).items() if v),
        "container_vendor": params["container_vendor"],
        "container_toolkit": params["container_toolkit"],
        "amd_render_gid": params["amd_render_gid"],
        "ascend_devices": params["ascend_devices"],
        "allow_removal": params["allow_removal"],
        "allow_runtime_change": params["allow_runtime_change"],
        "misspelt": params["misspelt"],
        "misspelt_recipes": params["misspelt_recipes"],
        "placed": params["placed"],
    }
