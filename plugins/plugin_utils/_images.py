# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resolve each distinct image of a plan to its manifest digest, once, on the controller.

Pure Python, no Ansible import. Every host then pulls ``name@sha256:...``, so
two hosts can never run different bytes for one tag, and a tag that moves
in the registry does not move a running fleet.

References follow the Docker reference grammar
(https://github.com/distribution/reference/blob/main/reference.go): a first
path component with a ``.`` or ``:``, or ``localhost``, names the registry;
otherwise the registry is Docker Hub (``docker.io``, API host
``registry-1.docker.io``) and a one-component name gets ``library/``. The tag
defaults to ``latest``.

The digest is the registry's ``Docker-Content-Digest`` for
``HEAD /v2/<name>/manifests/<tag>`` (OCI distribution spec, "Pulling
manifests": https://github.com/opencontainers/distribution-spec/blob/main/spec.md),
asking for the OCI index, Docker manifest list, OCI manifest and Docker v2
manifest media types, so a multi-architecture image resolves to its index.
Without that header the manifest is fetched with ``GET`` and its sha256 taken.
A ``401`` with ``WWW-Authenticate: Bearer realm=...,service=...,scope=...``
is answered with a token from the realm (Docker's token protocol:
https://distribution.github.io/distribution/spec/auth/token/), sending the
registry's credentials, when given, as HTTP basic auth.

The image's size, for preflight's ``image_disk`` check, is read from its
manifest, fetched by digest (``GET /v2/<name>/manifests/<digest>``): the
config blob's ``size`` plus each layer's ``size``, the compressed bytes a
pull downloads (OCI image-spec manifest.md:
https://github.com/opencontainers/image-spec/blob/main/manifest.md). An
index is followed to one platform's manifest, ``linux/amd64`` unless told
otherwise (image-index.md). Docker Hub counts up to two manifest ``GET``
requests as one pull against its rate limit (``HEAD`` is not counted):
``launchcard_registry_image_sizes: false`` leaves the sizes out.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import urllib.error
import urllib.parse
import urllib.request

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"
MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
INDEX_TYPES = MANIFEST_TYPES[:2]
# The platform whose manifest an index is followed to for the image's size (the engines' CUDA/ROCm images
# are built for it first); see resolve_images' platform option.
DEFAULT_PLATFORM = "linux/amd64"
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_NAME_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


class ImageError(ValueError):
    """An image that cannot be resolved: names the image and the cause."""


def parse_reference(ref):
    """Split an image reference.

    :returns: ``{"registry", "repository", "tag", "digest", "name"}``; ``name``
        is the reference without tag or digest as written (``vllm/vllm-openai``);
        ``tag`` is ``None`` when only a digest is given.
    :raises ImageError: the reference is not valid.
    """
    if not isinstance(ref, str) or not ref or ref != ref.strip():
        raise ImageError("image %r is not a reference" % (ref,))
    rest, digest = ref, None
    if "@" in rest:
        rest, digest = rest.split("@", 1)
        if not _DIGEST.match(digest):
            raise ImageError("image %s: digest must be sha256:<64 hex>, found %s" % (ref, digest))
    tag = None
    last = rest.rsplit("/", 1)[-1]
    if ":" in last:
        rest, tag = rest.rsplit(":", 1)
        if not _TAG.match(tag):
            raise ImageError("image %s: invalid tag %r" % (ref, tag))
    parts = rest.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        registry, path = parts[0], parts[1:]
    else:
        registry, path = DOCKER_HUB, parts
        if len(path) == 1:
            path = ["library"] + path
    if not path or not all(_NAME_COMPONENT.match(p) for p in path):
        raise ImageError("image %s: invalid repository name %r" % (ref, "/".join(path)))
    if tag is None and digest is None:
        tag = "latest"
    return {"registry": registry, "repository": "/".join(path), "tag": tag, "digest": digest, "name": rest}


def pinned(ref, digest, qualified=False):
    """``name@digest``: the reference as written, without its tag, pinned to ``digest``.

    With ``qualified``, the name is fully qualified (``docker.io/lmsysorg/sglang@sha256:...``): podman
    refuses a short name without a TTY to ask which registry is meant (its ``short-name-mode``), and
    docker reads the qualified name as it reads the short one.
    """
    parsed = parse_reference(ref)
    name = "%s/%s" % (parsed["registry"], parsed["repository"]) if qualified else parsed["name"]
    return "%s@%s" % (name, digest)


def distinct_images(plan):
    """Sorted distinct images of every instance of ``plan`` (``plan["hosts"][h]["instances"][i]["image"]``)."""
    return sorted({i["image"] for hp in plan.get("hosts", {}).values() for i in hp.get("instances", [])
                   if i.get("image")})


def resolve_all(images, resolve, qualified=False):
    """``{image: name@sha256:...}`` for each distinct image.

    ``resolve(parsed_reference) -> "sha256:..."`` is called once per image
    that names no digest; an image that names one is used as written (with
    ``qualified``, its name fully qualified, its digest unchanged).
    """
    refs = {}
    for image in sorted(set(images)):
        ref = parse_reference(image)
        if ref["digest"]:
            refs[image] = pinned(image, ref["digest"], qualified=True) if qualified else image
            continue
        digest = resolve(ref)
        if not _DIGEST.match(digest or ""):
            raise ImageError("image %s: the registry answered digest %r" % (image, digest))
        refs[image] = pinned(image, digest, qualified)
    return refs


def held_refs(recorded):
    """The pinned reference the fleet runs for each image, from the hosts' records.

    :param recorded: ``{host: {image: name@sha256:...}}``, each host's record
        (``runtime.image_refs`` of ``/var/lib/launchcard/state.json``, as the
        preflight call read it); a host without a record maps to ``{}`` or None.
    :returns: ``(held, split)``: ``held`` is ``{image: ref}`` for each image
        every host that recorded it agrees on; ``split`` is ``{image: sorted
        refs}`` for each image the hosts recorded with different digests (held
        by none: the fleet converges to what the registry says).
    """
    seen = {}
    for refs in (recorded or {}).values():
        for image, ref in (refs or {}).items():
            if isinstance(ref, str) and ref:
                seen.setdefault(image, set()).add(ref)
    held = dict((image, refs.pop()) for image, refs in seen.items() if len(refs) == 1)
    split = dict((image, sorted(refs)) for image, refs in seen.items() if len(refs) > 1)
    return held, split


def hold(refs, held):
    """Keep the digest the fleet runs for each image whose tag moved in the registry.

    A no-op deploy never changes what runs: when a tag now resolves to
    another digest than the one the hosts recorded, the recorded one stays,
    and the move is reported (only ``playbooks/upgrade.yml`` follows it).
    An image the card names by digest is never held (the card decides).

    :param refs: ``{image: name@sha256:...}`` as :func:`resolve_all` returned them.
    :param held: ``{image: name@sha256:...}`` the fleet runs (:func:`held_refs`).
    :returns: ``(refs, drift)``: the references to use, and one dict per moved
        tag: ``image``, ``running`` and ``registry`` (the two digests).
    """
    out, drift = dict(refs), []
    for image in sorted(refs):
        if parse_reference(image)["digest"] or image not in (held or {}):
            continue
        running, now = held[image].rsplit("@", 1)[-1], refs[image].rsplit("@", 1)[-1]
        if running != now and _DIGEST.match(running):
            out[image] = held[image]
            drift.append({"image": image, "running": running, "registry": now})
    return out, drift


def pullers(plan, found):
    """``{image: sorted hosts}``: the hosts of ``plan`` that run each image and do not hold the digest they recorded.

    :param found: ``{host: preflight result}``: ``recorded_image_refs`` (the record's images; a host without
        one, a new host, holds none) and ``recorded_images_missing`` (recorded, but not in the engine's store).
    """
    out = {}
    for host, hp in sorted((plan.get("hosts") or {}).items()):
        if host not in found:
            continue
        recorded = found[host].get("recorded_image_refs") or {}
        missing = set(found[host].get("recorded_images_missing") or [])
        for inst in hp.get("instances") or []:
            image = inst.get("image")
            if image and (image not in recorded or image in missing):
                out.setdefault(image, set()).add(host)
    return dict((image, sorted(hosts)) for image, hosts in out.items())


def gone_error(image, ref, causes, pullers):
    """The sentence for a digest the fleet keeps (:func:`hold`) that no source gives any more, and whether it stops.

    A registry with retention or garbage collection deletes the old manifest of a moved tag; a host that must
    pull it then fails at its pull with the engine's ``manifest unknown``. It stops the run (before any host
    changes) when a host must pull it (``pullers``); otherwise every host holds it, and it is a warning.

    :param causes: ``[(source label, cause)]`` as :meth:`RegistryClient.exists` returned them.
    :returns: ``(sentence, stops)``.
    """
    digest = str(ref).rsplit("@", 1)[-1]
    where = "; ".join("[%s]" % re.sub(r"^image \S+: ", "", str(cause)) for dummy, cause in causes)
    remedy = ("run playbooks/upgrade.yml to move the fleet to the digest the tag names now, or deploy with "
              "-e launchcard_images_hold=false")
    if pullers:
        return ("image %s: the digest the fleet runs (%s) is gone from the registry (%s), and %s must pull it: %s"
                % (image, digest, where, ", ".join(sorted(pullers)), remedy), True)
    return ("image %s: the digest the fleet runs (%s) is gone from the registry (%s); every host holds it, but a "
            "host that joins or loses it cannot pull it: %s" % (image, digest, where, remedy), False)


def drift_warning(moved):
    """The sentence that reports one moved tag (an item of :func:`hold`'s drift)."""
    return ("image %s: the registry now resolves it to %s; the fleet runs %s and keeps it (a deploy never follows "
            "a moved tag; playbooks/upgrade.yml does)" % (moved["image"], moved["registry"], moved["running"]))


_MIRROR_LOCATION = re.compile(r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[a-z0-9._/-]*)?$")
RUNTIMES = ("docker", "podman")
# launchcard_runtime's values: the two container engines, and native (pip into a virtualenv; no image to pull)
LAUNCHCARD_RUNTIMES = RUNTIMES + ("native",)
# containers/image reads a manifest body of at most 4 MiB (internal/iolimits: MaxManifestBodySize)
MAX_MANIFEST_BYTES = 4 << 20


def _mirror_entries(registry, value):
    """``[(location, insecure)]`` of one registry's mirrors, in order.

    :param value: a URL (``http://10.0.0.5:5000``), or a list of URLs or of ``{"location": "10.0.0.5:5000",
        "insecure": bool}``, the shape of podman's ``registries.conf`` mirror entries
        (containers-registries.conf(5)): ``insecure`` means plain HTTP.
    :raises ImageError: an entry or location that is not a host name (and port, and path), naming it.
    """
    entries = []
    if value is None:
        return entries
    if not isinstance(value, (str, list, tuple)) or not value:
        raise ImageError("launchcard_registry_mirrors.%s must be a URL or a list of {location, insecure}, found %r"
                         % (registry, value))
    for n, mirror in enumerate([value] if isinstance(value, str) else list(value)):
        if isinstance(mirror, str):
            location, insecure = re.sub(r"^https?://", "", mirror).rstrip("/"), mirror.startswith("http://")
        elif hasattr(mirror, "get"):
            location, insecure = str(mirror.get("location") or ""), mirror.get("insecure", False)
            if isinstance(insecure, str):
                insecure = insecure.strip().lower() in ("1", "true", "yes", "on")
        else:
            raise ImageError("launchcard_registry_mirrors.%s[%d] must be a URL or {location, insecure}, found %r"
                             % (registry, n, mirror))
        if not _MIRROR_LOCATION.match(location):
            raise ImageError("launchcard_registry_mirrors.%s[%d].location must be HOST[:PORT][/PATH], found %r"
                             % (registry, n, location))
        entries.append((location.rstrip("/"), bool(insecure)))
    return entries


def _is_hub(registry):
    return registry in (DOCKER_HUB, "registry-1.docker.io", "index.docker.io")


def _docker_hub_only(registry):
    return ImageError("launchcard_registry_mirrors.%s: docker mirrors Docker Hub only (daemon.json registry-mirrors); "
                      "pull %s images from the mirror by name in the card, or use launchcard_runtime: podman"
                      % (registry, registry))


def registry_client(launchcard_runtime):
    """The container engine whose way of asking registries resolve_images follows for a fleet of
    ``launchcard_runtime`` (docker, podman or native): podman's for podman, else docker's (a native fleet pulls no
    image; resolve_images is given none).

    :raises ImageError: a value outside ``LAUNCHCARD_RUNTIMES``, naming the variable.
    """
    runtime = launchcard_runtime or "docker"
    if runtime not in LAUNCHCARD_RUNTIMES:
        raise ImageError("launchcard_runtime must be one of %s, found %r" % (", ".join(LAUNCHCARD_RUNTIMES), runtime))
    return "podman" if runtime == "podman" else "docker"


def pull_sources(registry, mirrors=None, runtime="podman", upstream=None):
    """Where the hosts' engine asks for an image of ``registry``, in the order it asks.

    podman (containers/image pkg/sysregistriesv2 ``PullSourcesFromReference``): each mirror of the registry in
    order, then the registry itself; a mirror's location replaces the registry's name in the reference
    (``rewriteReference``), so a path of the location is the first components of the repository, after
    ``/v2/``: ``harbor.corp/hubproxy`` asks ``https://harbor.corp/v2/hubproxy/library/ubuntu/manifests/TAG``
    (docker/docker_client.go ``fetchManifest``: ``/v2/<reference.Path>/manifests/<tag>`` on the reference's host).

    docker (moby daemon/pkg/registry/service_v2.go ``lookupV2Endpoints``): the ``registry-mirrors`` of Docker Hub in
    order, then ``registry-1.docker.io``; no mirrors for other registries. A mirror's path comes before ``/v2``:
    the classic image store resolves ``v2/<name>/manifests/<tag>`` against the mirror URL with its trailing ``/``
    (daemon/pkg/registry/config.go ``ValidateMirror``, distribution registry/api/v2/urls.go), and the containerd image
    store joins ``<path>/v2`` (daemon/hosts.go ``mirrorsToRegistryHosts``), so ``harbor.corp/hubproxy`` asks
    ``https://harbor.corp/hubproxy/v2/library/ubuntu/manifests/TAG``.

    :param mirrors: ``launchcard_registry_mirrors`` (``{registry: URL | [URL | {location, insecure}]}``).
    :param runtime: ``docker`` or ``podman``.
    :param upstream: ``{registry: base URL or None}``: where the registry itself is (tests); None: the engine
        never asks it. Default ``https://REGISTRY`` (``https://registry-1.docker.io`` for Docker Hub).
    :returns: ``[{"label", "host", "base", "namespace", "mirror"}]``: a manifest is at
        ``base + "/v2/" + namespace + repository + "/manifests/" + reference``.
    :raises ImageError: a mirror the runtime cannot use as written, naming the variable.
    """
    if runtime not in RUNTIMES:
        raise ImageError("launchcard_runtime %r has no registry client (docker or podman)" % (runtime,))
    sources = []
    value = (mirrors or {}).get(registry)
    if value is not None:
        if runtime == "docker" and not _is_hub(registry):
            raise _docker_hub_only(registry)
        for n, (location, insecure) in enumerate(_mirror_entries(registry, value)):
            host, dummy, path = location.partition("/")
            scheme = "http://" if insecure else "https://"
            if runtime == "docker":
                if path.rstrip("/").endswith("v2"):
                    # classic store: <path>/v2/v2/...; containerd store (daemon/hosts.go): <path> kept as the /v2
                    raise ImageError("launchcard_registry_mirrors.%s[%d].location %s ends in /v2, which docker's two "
                                     "image stores read differently; name the mirror without it"
                                     % (registry, n, location))
                base, namespace = scheme + location, ""
            else:
                base, namespace = scheme + host, (path + "/" if path else "")
            sources.append({"label": "mirror %s" % location, "host": host, "base": base, "namespace": namespace,
                            "mirror": True})
    own = (upstream or {}).get(registry, "https://" + (DOCKER_HUB_API if _is_hub(registry) else registry))
    if own is not None:
        sources.append({"label": "registry %s" % registry, "host": registry, "base": own.rstrip("/"),
                        "namespace": "", "mirror": False})
    return sources


def podman_registries_conf(mirrors):
    """The podman hosts' ``registries.conf`` drop-in for ``mirrors`` (containers-registries.conf(5)): each
    registry's mirrors, tried in order before the registry itself (``insecure``: plain HTTP). The runtime role writes
    it to ``registries.conf.d``; preflight's first-deploy argv check pulls with it before that role has run.

    :raises ImageError: a bad mirror entry, naming it.
    """
    lines = ["# Managed by launchcard.inference (roles/runtime, launchcard_registry_mirrors); changes are overwritten.",
             "# containers-registries.conf(5): pulls from each registry try its mirrors first, in this order."]
    for registry in sorted(mirrors or {}, key=str):
        lines += ["", "[[registry]]", "prefix = %s" % json.dumps(str(registry)),
                  "location = %s" % json.dumps(str(registry))]
        for location, insecure in _mirror_entries(registry, mirrors[registry]):
            lines += ["", "[[registry.mirror]]", "location = %s" % json.dumps(location),
                      "insecure = %s" % json.dumps(bool(insecure))]
    return "\n".join(lines) + "\n"


def podman_containers_conf(keyring):
    """The podman hosts' ``containers.conf.d`` drop-in (containers.conf(5) ``[containers] keyring``): with ``keyring``
    false, no session keyring per container (hosts whose seccomp filter refuses keyctl); None with it true (podman's
    default, nothing written). The runtime role writes it; preflight's first-deploy argv check runs podman with it.
    """
    if keyring:
        return None
    return ("# Managed by launchcard.inference (roles/runtime, launchcard_podman_keyring: false)\n"
            "[containers]\nkeyring = false\n")


def docker_daemon_config(current, mirrors):
    """The Docker daemon's ``daemon.json`` with the mirrors of ``mirrors`` merged in.

    Docker mirrors Docker Hub only (``registry-mirrors``: https://docs.docker.com/docker-hub/image-library/mirror/);
    a plain-HTTP mirror (``insecure``) must also be in ``insecure-registries``. Both keys are among those
    ``dockerd`` reloads on ``SIGHUP`` without stopping containers ("Configuration reload behavior",
    https://docs.docker.com/reference/cli/dockerd/). Every other key of the file (``runtimes`` from
    ``nvidia-ctk runtime configure``, ``data-root``, ...) is kept; the mirrors go first, in order, before any
    the file named already.

    :param current: the file's text (empty or None when it does not exist), or its parsed object.
    :param mirrors: ``launchcard_registry_mirrors``: ``{registry: URL | [URL | {location, insecure}]}``.
    :returns: the new content as a dict (equal to the current one when nothing changes).
    :raises ImageError: a mirror of a registry other than Docker Hub, a bad location, or a ``daemon.json`` that
        is not a JSON object (naming it).
    """
    if isinstance(current, dict):
        config = json.loads(json.dumps(current))
    else:
        try:
            config = json.loads(current) if current and str(current).strip() else {}
        except ValueError as exc:
            raise ImageError("/etc/docker/daemon.json is not valid JSON (%s): fix or remove it" % exc)
        if not isinstance(config, dict):
            raise ImageError("/etc/docker/daemon.json must hold a JSON object")
    wanted, insecure = [], []
    for registry, value in sorted((mirrors or {}).items()):
        if not _is_hub(registry):
            raise _docker_hub_only(registry)
        for location, plain in _mirror_entries(registry, value):
            wanted.append(("http://" if plain else "https://") + location)
            if plain:
                insecure.append(location.split("/", 1)[0])
    for key, values in (("registry-mirrors", wanted), ("insecure-registries", insecure)):
        if not values:
            continue
        present = config.get(key) or []
        if not isinstance(present, list):
            raise ImageError("/etc/docker/daemon.json: %s must be a list" % key)
        config[key] = values + [v for v in present if v not in values]
    return config


def is_index(doc):
    """Whether a manifest document is an index (OCI image index or Docker manifest list): its
    ``mediaType``, else a ``manifests`` list and no ``layers``."""
    media = doc.get("mediaType")
    if media:
        return media in INDEX_TYPES
    return isinstance(doc.get("manifests"), list) and "layers" not in doc


def platform_manifest(index, platform=DEFAULT_PLATFORM):
    """The digest of ``index``'s manifest for ``platform`` (``os/architecture[/variant]``), or None.

    OCI image-spec image-index.md: each ``manifests[]`` entry names ``platform.os``, ``platform.architecture``
    and, for some architectures, ``platform.variant``; a variant in ``platform`` must match, none matches any.
    """
    parts = (platform or DEFAULT_PLATFORM).split("/")
    want_os, want_arch, want_variant = parts[0], parts[1] if len(parts) > 1 else "", parts[2] if len(parts) > 2 else None
    for entry in index.get("manifests") or []:
        plat = (entry or {}).get("platform") or {}
        if plat.get("os") == want_os and plat.get("architecture") == want_arch and (
                want_variant is None or plat.get("variant") == want_variant):
            if _DIGEST.match(str(entry.get("digest") or "")):
                return entry["digest"]
    return None


def manifest_size(manifest, image="image"):
    """Compressed bytes of an image manifest: its config blob's ``size`` plus each layer's ``size``.

    OCI image-spec manifest.md (and Docker's image manifest v2, schema 2) give every descriptor a ``size`` in
    bytes: for a layer, the blob as stored and pulled (a gzip or zstd tarball), not what it unpacks to.

    :raises ImageError: a manifest without ``layers`` or with a size that is not a non-negative integer
        (a schema 1 manifest, an index), naming ``image``.
    """
    layers = manifest.get("layers")
    if not isinstance(layers, list) or not layers:
        raise ImageError("%s: the manifest lists no layers with sizes" % image)
    total = 0
    for blob in [manifest.get("config") or {"size": 0}] + layers:
        size = blob.get("size") if isinstance(blob, dict) else None
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ImageError("%s: a manifest descriptor has no valid size (%r)" % (image, size))
        total += size
    return total


def measure_all(refs, measure):
    """``({image: compressed bytes}, [warning])`` for the pinned references ``refs`` (``{image: name@sha256:...}``).

    ``measure(parsed_reference, digest) -> bytes`` is called once per image; one that raises
    :class:`ImageError` is left out (the caller falls back to an estimate) and its cause returned as a warning.
    """
    sizes, warnings = {}, []
    for image in sorted(refs):
        try:
            sizes[image] = int(measure(parse_reference(image), refs[image].rsplit("@", 1)[1]))
        except ImageError as exc:
            warnings.append("%s; preflight counts the flat allowance per image for it" % exc)
    return sizes, warnings


def pin_plan(plan, refs):
    """A copy of ``plan`` with ``image_refs`` (``{image: ref}``) and each instance's ``image_ref``."""
    out = json.loads(json.dumps(plan))
    out["image_refs"] = dict(refs)
    for hp in out.get("hosts", {}).values():
        for inst in hp.get("instances", []):
            if inst.get("image"):
                inst["image_ref"] = refs[inst["image"]]
    return out


def check_manifest(headers, body, image, url, reference=None):
    """The manifest document of a ``200`` answer to ``GET .../manifests/REFERENCE``; refuses anything else.

    A registry front that is not the distribution API (a Harbor UI page, a proxy's login form) can answer
    ``200`` with HTML. The answer must carry one of the manifest media types asked for (OCI distribution spec:
    the ``Content-Type`` is the manifest's ``mediaType``), parse as a JSON object of ``schemaVersion`` 2 with
    the fields of its type (an index lists ``manifests``, an image manifest ``config`` and ``layers``), and its
    sha256 must equal ``Docker-Content-Digest`` when that is given, and ``reference`` when that is a digest.

    :returns: ``(document, "sha256:<hex of the body>")``.
    :raises ImageError: naming the image, the URL and what is wrong.
    """
    media = (headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
    # containers/image manifest.NormalizedMIMEType reads any other type (application/json included) as schema 1
    if media not in MANIFEST_TYPES:
        raise ImageError("image %s: %s answered 200 with Content-Type %r, not a manifest media type (%s): is this "
                         "the registry API? A mirror with a path must be one the runtime reaches at that URL"
                         % (image, url, media or "none", ", ".join(MANIFEST_TYPES)))
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or doc.get("schemaVersion") != 2:
        raise ImageError("image %s: %s answered 200 with a body that is not a JSON manifest of schemaVersion 2"
                         % (image, url))
    if doc.get("mediaType") not in (None, media):
        raise ImageError("image %s: %s answered Content-Type %s for a manifest whose mediaType is %r"
                         % (image, url, media, doc.get("mediaType")))
    if media in INDEX_TYPES:
        shaped = isinstance(doc.get("manifests"), list)
    else:
        shaped = isinstance(doc.get("config"), dict) and isinstance(doc.get("layers"), list)
    if not shaped:
        raise ImageError("image %s: %s answered a %s without its %s" % (
            image, url, media, "manifests" if media in INDEX_TYPES else "config and layers"))
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    for what, claimed in (("Docker-Content-Digest", (headers.get("Docker-Content-Digest") or "").strip()),
                          ("the digest asked for", reference if _DIGEST.match(reference or "") else "")):
        if claimed.startswith("sha256:") and claimed != digest:
            raise ImageError("image %s: %s answered a manifest whose sha256 is %s, not %s (%s)"
                             % (image, url, digest, claimed, what))
    return doc, digest


class _Unanswered(ImageError):
    """One source did not give the manifest (unreachable, 401/403, 404, another HTTP error): the runtime
    asks the next source."""


class _Gone(ImageError):
    """No source gave the manifest: :attr:`causes` is ``[(label, cause)]`` of each, in order."""

    def __init__(self, message, causes):
        super().__init__(message)
        self.causes = causes


def _parse_challenge(header):
    scheme, dummy, params = (header or "").partition(" ")
    return scheme.lower(), dict(re.findall(r'(\w+)="([^"]*)"', params))


class RegistryClient:
    """Manifest digests over the registry HTTP API, asked where and in the order the hosts' engine asks.

    :param mirrors: ``launchcard_registry_mirrors`` (see :func:`pull_sources`).
    :param credentials: ``{registry: {"username", "password"}}``, sent where the runtime sends them: podman to the
        registry and to its mirrors (keyed by the mirror's host in the hosts' auth file, :func:`registry_auth`;
        a mirror host the credentials name itself gets its own), docker to the registry itself only.
    :param runtime: ``docker`` or ``podman`` (:func:`pull_sources`).
    :param upstream: see :func:`pull_sources`.
    :param opener: a ``urllib.request.OpenerDirector`` (tests); default: ``urllib.request.build_opener()``.
    """

    def __init__(self, mirrors=None, credentials=None, timeout=30.0, opener=None, runtime="podman", upstream=None):
        self.mirrors = dict(mirrors or {})
        self.credentials = dict(credentials or {})
        self.timeout = timeout
        self.runtime = runtime
        self.upstream = upstream
        self.opener = opener or urllib.request.build_opener()
        self.requests = 0
        self.answered = {}  # image -> label of the source that gave its manifest
        self.skipped = {}  # image -> ["label: cause"] of the sources asked before it
        self._auth = {}  # (source base, repository) -> Authorization header that source accepted

    def check_mirrors(self):
        """Refuse a mirror the runtime cannot use as written, of any registry (:func:`pull_sources`)."""
        for registry in sorted(self.mirrors):
            pull_sources(registry, self.mirrors, self.runtime, upstream={registry: None})

    def sources(self, registry):
        hub_key = [k for k in self.mirrors if _is_hub(k)] if _is_hub(registry) else []
        key = hub_key[0] if hub_key else registry
        mirrors = {registry: self.mirrors[key]} if key in self.mirrors else {}
        return pull_sources(registry, mirrors, self.runtime, self.upstream)

    def _basic(self, registry, source):
        if source["mirror"] and self.runtime == "docker":
            return None
        cred = self.credentials.get(source["host"]) if source["mirror"] else None
        cred = cred or self.credentials.get(registry)
        if not cred:
            return None
        raw = ("%s:%s" % (cred.get("username", ""), cred.get("password", ""))).encode()
        return "Basic " + base64.b64encode(raw).decode()

    def _open(self, method, url, headers):
        self.requests += 1
        req = urllib.request.Request(url, method=method, headers=headers)
        return self.opener.open(req, timeout=self.timeout)

    def _token(self, registry, source, challenge, image):
        realm = challenge.get("realm")
        if not realm:
            raise _Unanswered("image %s: %s asked for a token without a realm" % (image, source["label"]))
        query = {k: challenge[k] for k in ("service", "scope") if challenge.get(k)}
        url = realm + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = {}
        if self._basic(registry, source):
            headers["Authorization"] = self._basic(registry, source)
        try:
            with self._open("GET", url, headers) as resp:
                doc = json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raise _Unanswered("image %s: the token service of %s refused (HTTP %d): check the registry credentials"
                              % (image, source["label"], exc.code))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise _Unanswered("image %s: the token service of %s at %s failed: %s"
                              % (image, source["label"], realm, getattr(exc, "reason", exc)))
        token = doc.get("token") or doc.get("access_token") if isinstance(doc, dict) else None
        if not token:
            raise _Unanswered("image %s: the token service of %s returned no token" % (image, source["label"]))
        return token

    def _ask(self, method, ref, source, reference, image):
        """``(headers, body, url)`` of ``method`` on one source's manifest URL (``body`` empty for HEAD); None for a
        HEAD the source does not allow (405). A ``401`` challenge is answered once per source and repository.

        :raises _Unanswered: the source does not give it (404, 401/403, unreachable, another HTTP error).
        :raises ImageError: docker's mirror asks for credentials (dockerd sends a mirror none).
        """
        url = "%s/v2/%s%s/manifests/%s" % (source["base"], source["namespace"], ref["repository"], reference)
        registry = ref["registry"]
        key = (source["base"], source["namespace"] + ref["repository"])
        for attempt in (1, 2):
            headers = {"Accept": ", ".join(MANIFEST_TYPES)}
            if key in self._auth:
                headers["Authorization"] = self._auth[key]
            try:
                with self._open(method, url, headers) as resp:
                    return resp.headers, (resp.read(MAX_MANIFEST_BYTES + 1) if method == "GET" else b""), url
            except urllib.error.HTTPError as exc:
                if exc.code == 401 and source["mirror"] and self.runtime == "docker":
                    # moby daemon/containerd/resolver.go authorizerFromAuthConfig: credentials only for the host of
                    # the pull's own registry (registry-1.docker.io), none for a mirror host
                    raise ImageError(
                        "image %s: %s asks for credentials (HTTP 401 at %s), and dockerd sends a registry mirror "
                        "none (its credentials are looked up for the image's own registry, not the mirror's host), "
                        "so the docker hosts would fall back to Docker Hub: use launchcard_runtime: podman "
                        "(it sends launchcard_registry_credentials to the mirror), a mirror that needs none, or name "
                        "the mirror's registry in the card's image with credentials for it"
                        % (image, source["label"], url))
                if exc.code == 401 and attempt == 1 and key not in self._auth:
                    scheme, challenge = _parse_challenge(exc.headers.get("WWW-Authenticate"))
                    if scheme == "bearer":
                        self._auth[key] = "Bearer " + self._token(registry, source, challenge, image)
                    elif scheme == "basic" and self._basic(registry, source):
                        self._auth[key] = self._basic(registry, source)
                    else:
                        raise _Unanswered("image %s: %s needs credentials (HTTP 401)" % (image, source["label"]))
                    continue
                if exc.code in (401, 403):
                    raise _Unanswered("image %s: %s refused the credentials (HTTP %d)"
                                      % (image, source["label"], exc.code))
                if exc.code == 404:
                    raise _Unanswered("image %s: no such image or tag in %s (HTTP 404 at %s)"
                                      % (image, source["label"], url))
                if method == "HEAD" and exc.code == 405:
                    return None
                raise _Unanswered("image %s: %s answered HTTP %d at %s" % (image, source["label"], exc.code, url))
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise _Unanswered("image %s: cannot reach the %s at %s: %s" % (image, source["label"], url, reason))
        raise _Unanswered("image %s: %s asked for credentials twice" % (image, source["label"]))

    def _first(self, ref, image, ask):
        """``ask(source)`` on each source in the runtime's order until one answers (its result, its label).

        :raises ImageError: every source failed, naming each with its cause (a single source: its own error).
        """
        failed = []
        for source in self.sources(ref["registry"]):
            try:
                return ask(source), source["label"], failed
            except _Unanswered as exc:
                failed.append((source["label"], str(exc)))
        if len(failed) == 1:
            raise _Gone(failed[0][1], failed)
        raise _Gone("image %s: no source gave it, in the order the %s hosts ask: %s" % (
            image, self.runtime, "; ".join("[%s]" % cause.replace("image %s: " % image, "") for dummy, cause in failed)),
            failed)

    def _get(self, ref, source, reference, image):
        headers, body, url = self._ask("GET", ref, source, reference, image)
        if len(body) > MAX_MANIFEST_BYTES:
            raise ImageError("image %s: %s answered a manifest over %d bytes" % (image, url, MAX_MANIFEST_BYTES))
        return check_manifest(headers, body, image, url, reference)

    def resolve(self, ref):
        """``sha256:...`` of the manifest ``ref``'s tag points at, from the first source that has it.

        ``HEAD`` first (Docker Hub does not count it as a pull): its ``Docker-Content-Digest`` is taken when it
        comes with a manifest media type. Otherwise the manifest is fetched, checked (:func:`check_manifest`) and
        its own sha256 taken. A source that does not answer is followed by the next, as the runtime does
        (:func:`pull_sources`; containers/image docker/docker_image_src.go ``newImageSource`` tries each pull source
        until one gives the manifest; moby daemon/internal/distribution/pull.go ``pullEndpoints`` falls back to the
        next endpoint). :attr:`answered` names the source that answered, :attr:`skipped` those that did not.

        :raises ImageError: as :meth:`_first`, or a ``200`` that is not a manifest.
        """
        image = "%s:%s" % (ref["name"], ref["tag"])

        def ask(source):
            got = self._ask("HEAD", ref, source, ref["tag"], image)
            if got is not None:
                media = (got[0].get("Content-Type") or "").split(";", 1)[0].strip().lower()
                digest = (got[0].get("Docker-Content-Digest") or "").strip()
                if digest and media in MANIFEST_TYPES:
                    return digest
            return self._get(ref, source, ref["tag"], image)[1]

        digest, label, failed = self._first(ref, image, ask)
        self.answered[image] = label
        self.skipped[image] = ["%s: %s" % (lbl, cause.replace("image %s: " % image, "")) for lbl, cause in failed]
        return digest

    def exists(self, ref, digest):
        """Whether a source the hosts pull from still gives the manifest ``digest`` of ``ref``'s repository.

        :returns: ``(True, label)`` of the first source that gives it, else ``(False, [each source's cause])``.
        :raises ImageError: a ``200`` that is not that manifest.
        """
        image = "%s@%s" % (ref["name"], digest)
        try:
            return True, self._first(ref, image, lambda source: self._get(ref, source, digest, image))[1]
        except _Gone as exc:
            return False, exc.causes

    def image_size(self, ref, digest, platform=DEFAULT_PLATFORM):
        """Compressed bytes of the image ``digest`` names in ``ref``'s repository (:func:`manifest_size`).

        An index (OCI image index, Docker manifest list) is followed to its ``platform`` manifest (one more
        ``GET``). Manifests are fetched by digest, from the first source that gives them, so the answer is the
        same on every run.

        :raises ImageError: as :meth:`_first`, or a manifest that gives no size (naming the image and why).
        """
        image = "%s@%s" % (ref["name"], digest)
        doc = self._manifest_doc(ref, digest, image)
        if is_index(doc):
            child = platform_manifest(doc, platform)
            if child is None:
                raise ImageError("image %s: its index lists no %s manifest" % (image, platform))
            doc = self._manifest_doc(ref, child, image)
        return manifest_size(doc, image)

    def _manifest_doc(self, ref, reference, image):
        return self._first(ref, image, lambda source: self._get(ref, source, reference, image)[0])[0]


# --- the hosts' registry credentials -----------------------------------------------------------------
# Where the runtime role writes the podman hosts' auth file and the units name it (--authfile): a path, never a
# secret, in a unit. roles/runtime/defaults/main.yml (runtime_registry_auth_file) names the same path.
REGISTRY_AUTH_FILE = "/etc/launchcard/registry-auth.json"
# The credentials' digest (registry_credentials_digest): PBKDF2-HMAC-SHA256, salted, this many rounds.
CREDENTIALS_DIGEST_ROUNDS = 20000


def _credential(registry, value, var="launchcard_registry_credentials"):
    """``(username, password)`` of one entry, checked; errors name the field, never the password's value."""
    if not hasattr(value, "get"):
        raise ImageError("%s.%s must be a mapping with username and password" % (var, registry))
    out = []
    for field in ("username", "password"):
        item = value.get(field)
        if not isinstance(item, str) or not item:
            raise ImageError("%s.%s.%s must be a non-empty string" % (var, registry, field))
        if re.search(r"[\x00-\x1f\x7f]", item):
            raise ImageError("%s.%s.%s contains a control character" % (var, registry, field))
        out.append(item)
    if ":" in out[0]:
        # HTTP basic auth (RFC 7617) splits user-id and password at the first colon
        raise ImageError("%s.%s.username must not contain ':'" % (var, registry))
    return out[0], out[1]


def registry_auth(credentials, mirrors=None):
    """The hosts' auth file (containers-auth.json(5)) for ``credentials``, keyed by every endpoint they contact.

    Each credentialed registry is a key, and so is the host (``HOST[:PORT]``) of each of its mirrors
    (``launchcard_registry_mirrors``): containers/image looks credentials up by the endpoint it contacts,
    the mirror's own reference when it pulls through a mirror (containers/image docker/docker_image_src.go,
    newImageSourceAttempt: the client is built from the mirror's ``physicalRef``, and credentials meant for the
    primary registry are explicitly not passed on to a mirror). A mirror host that ``credentials`` names itself
    keeps its own entry.

    :param credentials: ``launchcard_registry_credentials``: ``{registry: {"username", "password"}}``.
    :param mirrors: ``launchcard_registry_mirrors`` (the shapes :func:`pull_sources` takes).
    :returns: ``{"auths": {endpoint: {"auth": base64("user:password")}}}``; ``{"auths": {}}`` without credentials.
    :raises ImageError: an entry without a username or password, a bad mirror location, or one mirror host
        that two registries' different credentials would share (names the registries, never a password).
    """
    if credentials is None:
        credentials = {}
    if not hasattr(credentials, "items"):
        raise ImageError("launchcard_registry_credentials must be a mapping {registry: {username, password}}")
    pairs = {str(registry): _credential(registry, value) for registry, value in credentials.items()}
    auths, via = {}, {}
    for registry in sorted(pairs):
        auths[registry] = pairs[registry]
    for registry in sorted(pairs):
        for location, dummy in _mirror_entries(registry, (mirrors or {}).get(registry)):
            host = location.split("/", 1)[0]
            if host in pairs:
                continue  # named in the credentials: its own entry
            if host in via and auths[host] != pairs[registry]:
                raise ImageError("launchcard_registry_credentials: %s and %s give different credentials to their "
                                 "shared mirror %s; name %s in launchcard_registry_credentials"
                                 % (via[host], registry, host, host))
            auths[host], via[host] = pairs[registry], registry
    return {"auths": {key: {"auth": base64.b64encode(("%s:%s" % auths[key]).encode("utf-8")).decode("ascii")}
                      for key in sorted(auths)}}


def registry_credentials_digest(credentials, mirrors=None, salt=""):
    """A salted, slow digest of the hosts' auth file, for the runtime role's setup digest.

    The runtime role skips its container steps while the digest the host's record keeps
    (``runtime.setup`` of ``/var/lib/launchcard/state.json``) is unchanged; folding this in makes a new password
    (or a new user, registry or mirror) run them again, which rewrites the auth file. The record and Ansible's
    output must not let anyone test password guesses cheaply, so this is PBKDF2-HMAC-SHA256
    (:data:`CREDENTIALS_DIGEST_ROUNDS` rounds), salted with ``salt`` (the role passes the host's name), not a
    plain hash of the password.

    :returns: 64 hex digits; ``""`` without credentials.
    :raises ImageError: as :func:`registry_auth`.
    """
    auths = registry_auth(credentials, mirrors)["auths"]
    if not auths:
        return ""
    text = json.dumps(auths, sort_keys=True).encode("utf-8")
    salt = ("launchcard.inference registry credentials " + str(salt)).encode("utf-8")
    return hashlib.pbkdf2_hmac("sha256", text, salt, CREDENTIALS_DIGEST_ROUNDS).hex()
