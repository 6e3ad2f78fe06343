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

The registry is asked over its HTTP API by ``_registry_api.py`` (manifest digests and sizes); this file holds
the references, the pinning of a plan, what the hosts run, and the mirror and credential files the hosts get.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re

from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_spec

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"
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


def pull_groups(refs, concurrency=0):
    """A host's images by the registry each is pulled from, with the most hosts that may pull from it at once.

    :param refs: the references the host pulls (pinned or not).
    :param concurrency: an int for every registry, or ``{registry: int}`` (a registry not named: no bound); 0: no bound.
    :returns: ``{registry: {"images": [ref, ...], "throttle": n}}`` (``registry`` as :func:`parse_reference` names it).
    :raises ImageError: a reference is not valid, or a bound is not a whole number of hosts (0 or more).
    """
    def bound(value, what):
        if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).isdigit():
            raise ImageError("launchcard_image_pull_concurrency%s must be a whole number of hosts (0: no bound), "
                             "found %r" % (what, value))
        return int(value)

    per_registry = isinstance(concurrency, dict)
    if not per_registry:
        everywhere = bound(concurrency or 0, "")
    groups = {}
    for ref in refs or []:
        registry = parse_reference(ref)["registry"]
        if registry not in groups:
            throttle = (bound(concurrency.get(registry, 0), "[%s]" % registry) if per_registry else everywhere)
            groups[registry] = {"images": [], "throttle": throttle}
        groups[registry]["images"].append(ref)
    return groups


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
# launchcard_runtime's values (its spec's): the two container engines, and native (pip into a virtualenv; no image)
LAUNCHCARD_RUNTIMES = _unit_spec.RUNTIMES


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

    :raises ImageError: a value its spec refuses (``_unit_spec.value``), naming the variable.
    """
    try:
        runtime = _unit_spec.value("runtime", launchcard_runtime or "docker")
    except _unit_spec.OptionError as exc:
        raise ImageError(str(exc))
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


# The inventory variable that lets credentials go over plain HTTP, to the hosts it lists (HOST[:PORT]).
PLAIN_HTTP_VAR = "launchcard_registry_credentials_plain_http"


def plain_http_allowed(value):
    """The hosts (``HOST[:PORT]``) of :data:`PLAIN_HTTP_VAR` that may receive credentials over plain HTTP.

    :param value: a list of ``HOST[:PORT]`` (a single string is one host); None or empty: none.
    :raises ImageError: an entry that is not ``HOST[:PORT]``, naming the variable.
    """
    if value is None or value == "":
        return frozenset()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise ImageError("%s must be a list of HOST[:PORT], found %r" % (PLAIN_HTTP_VAR, value))
    hosts = set()
    for n, host in enumerate(value):
        if not isinstance(host, str) or not re.match(r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?$", host):
            raise ImageError("%s[%d] must be HOST[:PORT] (no scheme, no path), found %r" % (PLAIN_HTTP_VAR, n, host))
        hosts.add(host)
    return frozenset(hosts)


def plain_http_refusal(host, what):
    """The sentence that refuses to send credentials to ``host`` over plain HTTP, naming :data:`PLAIN_HTTP_VAR`."""
    # RFC 7617 section 4: basic auth sends the password in the clear unless the connection (TLS) protects it
    return ("%s: %s is reached over plain HTTP, which would carry the credentials unencrypted: "
            "they are not sent; serve it over HTTPS, or list %s in %s to send them anyway"
            % (what, host, host, PLAIN_HTTP_VAR))


def check_plain_http_credentials(credentials, mirrors=None, plain_http=None):
    """Refuse credentials for a host the hosts reach over plain HTTP (a mirror with ``insecure``) that
    :data:`PLAIN_HTTP_VAR` does not list: podman reads them from the auth file for that host and docker logs in to it.

    :raises ImageError: naming the credentials' key and :data:`PLAIN_HTTP_VAR`, never a password.
    """
    allowed = plain_http_allowed(plain_http)
    plain = set()
    for registry in sorted(mirrors or {}, key=str):
        plain.update(location.split("/", 1)[0] for location, insecure in _mirror_entries(registry, mirrors[registry])
                     if insecure)
    for key in sorted(str(k) for k in (credentials or {})):
        if key in plain and key not in allowed:
            raise ImageError(plain_http_refusal(key, "launchcard_registry_credentials.%s" % key))


def _auths(credentials, mirrors):
    if credentials is None:
        credentials = {}
    if not hasattr(credentials, "items"):
        raise ImageError("launchcard_registry_credentials must be a mapping {registry: {username, password}}")
    for registry in sorted(mirrors or {}, key=str):
        _mirror_entries(registry, mirrors[registry])  # a bad location is named here too
    pairs = {str(registry): _credential(registry, value) for registry, value in credentials.items()}
    return {"auths": {key: {"auth": base64.b64encode(("%s:%s" % pairs[key]).encode("utf-8")).decode("ascii")}
                      for key in sorted(pairs)}}


def registry_auth(credentials, mirrors=None, plain_http=None):
    """The hosts' auth file (containers-auth.json(5)) for ``credentials``: each key of them, with its own credentials.

    A mirror gets the credentials named for its own host (``HOST[:PORT]``) only, never its registry's:
    containers/image looks credentials up by the endpoint it contacts (docker/docker_image_src.go
    newImageSourceAttempt builds a mirror's client from its own reference; pkg/docker/config GetCredentialsForRef
    reads the auth file's entry for that reference, then its parents, down to its host), so an entry keyed by a
    mirror host is sent to that mirror.

    :param credentials: ``launchcard_registry_credentials``: ``{registry or mirror host: {"username", "password"}}``.
    :param mirrors: ``launchcard_registry_mirrors`` (the shapes :func:`pull_sources` takes): which hosts are plain HTTP.
    :param plain_http: :data:`PLAIN_HTTP_VAR`, the plain-HTTP hosts that may have credentials.
    :returns: ``{"auths": {key: {"auth": base64("user:password")}}}``; ``{"auths": {}}`` without credentials.
    :raises ImageError: an entry without a username or password, a bad mirror location, or credentials for a
        plain-HTTP mirror host not in :data:`PLAIN_HTTP_VAR` (names the key and the variable, never a password).
    """
    auth = _auths(credentials, mirrors)
    check_plain_http_credentials(credentials, mirrors, plain_http)
    return auth


def registry_credentials_digest(credentials, mirrors=None, salt=""):
    """A salted, slow digest of the hosts' auth file, for the runtime role's setup digest.

    The runtime role skips its container steps while the digest the host's record keeps
    (``runtime.setup`` of ``/var/lib/launchcard/state.json``) is unchanged; folding this in makes a new password
    (or a new user or host) run them again, which rewrites the auth file. The record and Ansible's
    output must not let anyone test password guesses cheaply, so this is PBKDF2-HMAC-SHA256
    (:data:`CREDENTIALS_DIGEST_ROUNDS` rounds), salted with ``salt`` (the role passes the host's name), not a
    plain hash of the password.

    :returns: 64 hex digits; ``""`` without credentials.
    :raises ImageError: as :func:`registry_auth`, but for plain HTTP (the resolve_images action and the auth file
        refuse that; the digest only follows the file's content).
    """
    auths = _auths(credentials, mirrors)["auths"]
    if not auths:
        return ""
    text = json.dumps(auths, sort_keys=True).encode("utf-8")
    salt = ("launchcard.inference registry credentials " + str(salt)).encode("utf-8")
    return hashlib.pbkdf2_hmac("sha256", text, salt, CREDENTIALS_DIGEST_ROUNDS).hex()
