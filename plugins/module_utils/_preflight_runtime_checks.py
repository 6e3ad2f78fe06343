# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's checks of the runtime the units run on: the container engine, the images, a native install, and
whether containers can reach the accelerators (``_preflight.REGISTRY`` runs them, with those of
``_preflight_checks.py``).

Pure Python, no Ansible import. Each ``check_<name>`` takes the host view (``_preflight_checks._Host``) and returns
one result, or ``None`` where it does not apply.
"""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.module_utils import _platforms
from ansible_collections.launchcard.inference.plugins.module_utils._image_store import IMAGE_DATA_ROOTS
from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import stack_vendor
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_checks import _gib, _result, _size
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_options import DEFAULT_IMAGE_UNPACK_FACTOR
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_reads import (
    ASCEND_CONTROL_DEVICES,
    CDI_SPEC_DIRS,
    DOCKER_DAEMON_JSON,
)

# Disk allowance per distinct container image on a host whose size the registry did not give: an estimate
# (vLLM / SGLang CUDA images are 10-25 GB compressed+unpacked), not a measurement.
DEFAULT_IMAGE_ALLOWANCE_BYTES = 30 << 30
# The CDI spec `nvidia-ctk cdi generate` writes: its device kind and default output.
CDI_DEFAULT_SPEC = "/etc/cdi/nvidia.yaml"
NVIDIA_CDI_KIND = "nvidia.com/gpu"


def check_container_engine(host):
    """``container_engine``: docker where the OS repositories have none (the RHEL 9 family) is installed already.

    Reported only where it matters: the docker runtime on a system whose repositories ship no Docker
    (``_platforms.engine_package``). ``engines.docker`` is the ``docker`` binary's path, or None.
    """
    options = host.options
    os_id = (host.facts.get("os") or {}).get("id")
    if options.get("runtime") != "docker" or not _platforms.is_supported(os_id, (host.facts.get("os") or {}).get(
            "version_id")) or _platforms.engine_package(os_id, "docker"):
        return None
    found = (host.facts.get("engines") or {}).get("docker")
    return _result("container_engine", bool(found),
                   "docker installed from Docker's repository (%s ships podman, not docker)" % os_id,
                   found or "no docker",
                   "docker present, installed from outside the OS repositories" if found else
                   "%s's repositories have no docker: install docker-ce from Docker's repository "
                   "(https://docs.docker.com/engine/install/rhel/) first, or set launchcard_runtime: podman" % os_id)


def check_image_disk(host):
    """``image_disk``: the container engine's data root has room for the placed images that are not in its
    store yet.

    An image is in place when the host's record names the digest it runs and the engine's own store lists that
    digest (``facts.image_disk.in_place``, :func:`images_in_place`): a re-deploy, which keeps that digest, pulls
    nothing, so it needs no room for it. Each image to pull needs its compressed size (``options.image_sizes``,
    from its manifest) times ``options.image_unpack_factor``; one of unknown size (no manifest, a registry that
    gave none) the flat ``options.image_allowance_bytes``.
    """
    options = host.options
    if not host.needs.get("images") or options.get("runtime") not in IMAGE_DATA_ROOTS:
        return None
    per = int(options.get("image_allowance_bytes", DEFAULT_IMAGE_ALLOWANCE_BYTES))
    factor = float(options.get("image_unpack_factor") or DEFAULT_IMAGE_UNPACK_FACTOR)
    sizes = options.get("image_sizes") or {}
    img = host.facts.get("image_disk") or {}
    in_place = set(img.get("in_place") or [])
    pending = [i for i in host.needs["images"] if i not in in_place]
    free = img.get("free_bytes")
    where = img.get("path") or IMAGE_DATA_ROOTS[options["runtime"]]
    if not pending:
        return _result("image_disk", True, "none: every image is in the engine's store", "%s free" % (
            _gib(free) if free is not None else "unknown"), "the images are in place (the digests the host runs)")
    known = dict((i, _bytes(sizes.get(i))) for i in pending if _bytes(sizes.get(i)) is not None)
    unknown = [i for i in pending if i not in known]
    compressed = sum(known.values())
    want = int(compressed * factor) + per * len(unknown)
    parts = []
    if known:
        parts.append("%d image(s) to pull: %s compressed x %g = %s" % (
            len(known), _size(compressed), factor, _size(int(compressed * factor))))
    if unknown:
        parts.append("%d image(s) of unknown size to pull x %s, an estimate" % (len(unknown), _gib(per)))
    ok = free is not None and free >= want
    return _result("image_disk", ok, "%s free on %s (%s)" % (_size(want), where, "; ".join(parts)),
                   "%s free" % (_size(free) if free is not None else "unknown"),
                   "enough space for the images" if ok else "not enough free space for the container images")


def _bytes(value):
    """A size in bytes (an int, or its digits as a string), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value if isinstance(value, int) and value >= 0 else None


def container_vendor(host):
    """The vendor whose devices the units pass into containers, for the ``container_*`` checks; None where
    they do not apply: a native runtime, no accelerator placed here, a bare host, or vendor ``none``.

    The units' own choice (plugins/plugin_utils/_unit_options.py): ``launchcard_accelerator_vendor``
    (option ``container_vendor``), else the vendor preflight found (its tools, else its PCI bus).
    """
    options = host.options
    if options.get("runtime") not in IMAGE_DATA_ROOTS or not host.needs.get("gpus") or host.bare:
        # a bare host gets its driver next and is checked again (without install_driver) after it
        return None
    vendor = options.get("container_vendor") or stack_vendor(host.acc)
    return vendor if vendor in ("nvidia", "amd", "ascend") else None


def check_image_vendor(host):
    """``image_vendor``: every placed GPU instance's image serves this host's accelerator vendor.

    The host's vendor is the units' (``container_vendor`` option, ``launchcard_accelerator_vendor``), else the one
    its tools or PCI bus show (a bare host too: its stack does not change the vendor). The vendors an image serves
    come from the plan (``needs.image_vendors``, plugin_utils/_vendors.py). A CUDA image on an AMD or Ascend host
    starts no engine: refused before any host changes. Containers only (a native host installs per vendor).
    """
    options = host.options
    entries = host.needs.get("image_vendors") or []
    if options.get("runtime") not in IMAGE_DATA_ROOTS or not host.needs.get("gpus") or not entries:
        return None
    vendor = options.get("container_vendor") or stack_vendor(host.acc)
    if vendor not in ("nvidia", "amd", "ascend"):
        return None
    wrong = [e for e in entries if vendor not in (e.get("vendors") or ())]
    need = "images that serve %s" % vendor
    found = "; ".join("%s: %s (%s)" % (e["recipe"], e["image"], "/".join(e.get("vendors") or ()) or "?")
                      for e in (wrong or entries))
    if not wrong:
        return _result("image_vendor", True, need, found, "each image serves the host's %s accelerators" % vendor)
    first = wrong[0]
    return _result("image_vendor", False, need, found,
                   "%s accelerators, but recipe %s runs image %s, built for %s: set launchcard_accelerator_vendor: %s "
                   "on this host so the plan takes the %s image (launchcard_vendor_images), or name one in the card" % (
                       vendor, first["recipe"], first["image"], "/".join(first.get("vendors") or ()) or "?",
                       vendor, vendor))


def check_native_install(host):
    """``native_install``: the native runtime has a hash-pinned lock of what is placed here for the host's vendor
    (``needs.native_gaps``, empty where the inventory names a lock or the packages): the collection ships locks
    only for some vendors (SGLang publishes no pip install for AMD or Ascend), so such a host is refused before
    the weights are staged, not left to an unpinned install."""
    gaps = host.needs.get("native_gaps") or {}
    if host.options.get("runtime") != "native" or not gaps:
        return None
    vendor = host.options.get("container_vendor") or stack_vendor(host.acc)
    if vendor not in ("nvidia", "amd", "ascend"):
        return None
    missing = gaps.get(vendor) or []
    need = "a hash-pinned lock of what runs here for %s" % vendor
    if not missing:
        return _result("native_install", True, need, "shipped", "the engines install from the collection's lock")
    return _result("native_install", False, need, "none for %s" % " + ".join(missing),
                   "the collection ships no lock of %s for %s accelerators: make one with tools/native_lock.py "
                   "against your index and set launchcard_runtime_native_lock to it, set "
                   "launchcard_runtime_native_packages, or run it in a container" % (" + ".join(missing), vendor))


def _stack_fixes(host, what):
    """Severity and a note when the accelerator stack role installed next fixes ``what`` (nvidia only: its
    ``container-toolkit.yml``), else ``("error", "")``."""
    if host.options.get("install_driver") and host.options.get("container_toolkit", True):
        return "warning", " (the nvidia stack role, installed next, %s)" % what
    return "error", ""


def _loaded_nvidia_driver(host):
    """The NVIDIA driver the host runs now: the loaded kernel module's version, else what nvidia-smi
    reports, else the installed module's."""
    for version in [host.driver.get("loaded_version")] + [d.get("driver_version") for d in host.devices] + [
            host.driver.get("installed_version")]:
        if version:
            return str(version)
    return None


def check_container_nvidia_runtime(host):
    """``container_nvidia_runtime``: docker can hand NVIDIA GPUs to containers (``--gpus``).

    Either the ``nvidia`` runtime is registered with the daemon, as ``nvidia-ctk runtime configure
    --runtime=docker`` leaves it (``"runtimes": {"nvidia": {...}}`` in ``/etc/docker/daemon.json``; the
    running daemon's ``docker info`` ``Runtimes``), or the daemon has CDI on (``"features": {"cdi": true}``;
    ``docker info`` lists ``CDISpecDirs``). What the running daemon says wins over the file.
    """
    if container_vendor(host) != "nvidia" or host.options.get("runtime") != "docker":
        return None
    docker = (host.facts.get("container_access") or {}).get("docker") or {}
    info, conf = docker.get("info"), docker.get("daemon_json") or {}
    source = "docker info" if info is not None else (conf.get("path") or DOCKER_DAEMON_JSON)
    seen = info if info is not None else conf
    runtimes = sorted(seen.get("runtimes") or [])
    cdi = bool(seen.get("cdi"))
    ok = "nvidia" in runtimes or cdi
    found = "%s: runtimes %s, CDI %s" % (source, ", ".join(runtimes) or "none", "on" if cdi else "off")
    if conf.get("error"):
        found += " (%s)" % conf["error"]
    if ok:
        return _result("container_nvidia_runtime", True, "docker's nvidia runtime or CDI", found,
                       "containers can reach the GPUs")
    severity, note = _stack_fixes(host, "registers it")
    return _result("container_nvidia_runtime", False, "docker's nvidia runtime or CDI", found,
                   "docker cannot pass the GPUs into containers: run `nvidia-ctk runtime configure --runtime=docker` "
                   "and restart docker" + note, severity)


def check_container_cdi_spec(host):
    """``container_cdi_spec``: podman finds a CDI spec for ``nvidia.com/gpu`` that names the loaded driver.

    podman reads CDI specs from ``/etc/cdi`` and ``/var/run/cdi`` (``cdi_spec_dirs`` in containers.conf(5));
    ``nvidia-ctk cdi generate`` writes one whose mounts name the driver's libraries by version
    (``libcuda.so.580.95.05``). After a driver upgrade the old spec mounts files that are gone: regenerate it.
    """
    if container_vendor(host) != "nvidia" or host.options.get("runtime") != "podman":
        return None
    specs = [s for s in (host.facts.get("container_access") or {}).get("cdi_specs") or []
             if s.get("kind") == NVIDIA_CDI_KIND]
    loaded = _loaded_nvidia_driver(host)
    need = "a CDI spec of %s in %s naming driver %s" % (NVIDIA_CDI_KIND, " or ".join(CDI_SPEC_DIRS), loaded or "?")
    fix = "nvidia-ctk cdi generate --output=%s" % (specs[0]["path"] if specs else CDI_DEFAULT_SPEC)
    if not specs:
        severity, note = _stack_fixes(host, "generates it")
        return _result("container_cdi_spec", False, need, "no CDI spec of %s" % NVIDIA_CDI_KIND,
                       "podman cannot pass the GPUs into containers: run `%s`%s" % (fix, note), severity)
    named = sorted({v for s in specs for v in s.get("driver_versions") or []})
    found = "; ".join("%s: driver %s" % (s["path"], ", ".join(s.get("driver_versions") or []) or "not named")
                      for s in specs)
    stale = [s for s in specs if s.get("driver_versions") and loaded not in s["driver_versions"]]
    if loaded and stale:
        severity, note = _stack_fixes(host, "regenerates it")
        return _result("container_cdi_spec", False, need, found,
                       "stale CDI spec: %s names driver %s, the loaded driver is %s (a driver upgrade since): "
                       "run `nvidia-ctk cdi generate --output=%s`%s" % (
                           stale[0]["path"], ", ".join(stale[0]["driver_versions"]), loaded, stale[0]["path"], note),
                       severity)
    if not named or not loaded:
        return _result("container_cdi_spec", False, need, found,
                       "cannot tell which driver the CDI spec was generated for: if the driver changed since, "
                       "run `%s`" % fix, "warning")
    return _result("container_cdi_spec", True, need, found, "the CDI spec names the loaded driver")


def check_container_amd_devices(host):
    """``container_amd_devices``: ``/dev/kfd`` and ``/dev/dri`` exist, and the group the units add
    (``--group-add``: ``launchcard_amd_render_gid``, else the id of the host's ``render`` group) owns the
    render nodes ``/dev/dri/renderD*`` (ROCm's Docker guide: the container user must be in it)."""
    if container_vendor(host) != "amd":
        return None
    access = (host.facts.get("container_access") or {}).get("devices") or {}
    gid = host.options.get("amd_render_gid")
    if gid is None:
        gid = (host.facts.get("runtime_devices") or {}).get("render_gid")
    nodes = access.get("render_nodes") or {}
    missing = [p for p in ("/dev/kfd", "/dev/dri") if not access.get(p)]
    found = "%s; render nodes %s; units add group %s" % (
        ", ".join("%s %s" % (p, "present" if access.get(p) else "missing") for p in ("/dev/kfd", "/dev/dri")),
        ", ".join("%s gid %s" % kv for kv in sorted(nodes.items())) or "none", "none" if gid is None else gid)
    need = "/dev/kfd, /dev/dri and the render nodes' group id"
    if missing:
        return _result("container_amd_devices", False, need, found,
                       "%s missing: the amdgpu driver is not loaded (install ROCm's amdgpu-dkms, reboot)"
                       % " and ".join(missing))
    wrong = sorted(node for node, node_gid in nodes.items() if node_gid != gid)
    if not nodes or wrong:
        what = ", ".join(wrong) or "a render node (none in /dev/dri)"
        return _result("container_amd_devices", False, need, found,
                       "containers cannot open %s: the units add group %s; set launchcard_amd_render_gid to the "
                       "group id that owns the render nodes" % (what, "none" if gid is None else gid))
    return _result("container_amd_devices", True, need, found, "containers can reach the GPUs")


def check_container_ascend_devices(host):
    """``container_ascend_devices``: every ``/dev/davinciN`` the units pass exists, with ``davinci_manager``,
    ``devmm_svm`` and ``hisi_hdc`` (what Ascend's container guide passes), and they cover the NPUs placed here.

    The units pass ``launchcard_ascend_devices``, else the ``/dev/davinciN`` preflight found on the host.
    """
    if container_vendor(host) != "ascend":
        return None
    present = sorted((host.facts.get("runtime_devices") or {}).get("davinci") or [])
    stated = host.options.get("ascend_devices")
    passed = sorted(int(n) for n in stated) if stated else present
    access = (host.facts.get("container_access") or {}).get("devices") or {}
    missing = ["/dev/davinci%d" % n for n in passed if n not in present]
    missing += [p for p in ASCEND_CONTROL_DEVICES if not access.get(p)]
    want = int(host.needs.get("gpus") or 0)
    need = "%d NPU(s): /dev/davinciN for each, %s" % (want, ", ".join(ASCEND_CONTROL_DEVICES))
    found = "/dev/davinci%s present; units pass %s" % (
        "{%s}" % ",".join(str(n) for n in present) if present else "N: none",
        ", ".join(str(n) for n in passed) or "none")
    if missing:
        return _result("container_ascend_devices", False, need, found,
                       "missing on the host: %s (the NPU driver is not loaded%s)" % (
                           ", ".join(missing), ", or launchcard_ascend_devices names NPUs the host does not have"
                           if stated else ""))
    if len(passed) < want:
        return _result("container_ascend_devices", False, need, found,
                       "the units pass %d NPU(s), the recipes placed here need %d" % (len(passed), want))
    return _result("container_ascend_devices", True, need, found, "containers can reach the NPUs")
