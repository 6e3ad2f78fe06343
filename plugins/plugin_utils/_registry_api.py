# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Manifest digests and image sizes over the registry HTTP API, asked where and in the order the hosts' engine asks.

Pure Python, no Ansible import; runs on the controller (the ``resolve_images`` action). What the hosts then pull,
``name@sha256:...``, is ``_images.py``'s.

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

Credentials go only where they were configured: a registry's to that registry and to the token realm it names,
a mirror's own (keyed by its host) to that mirror, and none over plain HTTP to a host that
``launchcard_registry_credentials_plain_http`` does not list. The ``Authorization`` header never follows a
redirect.

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

from ansible_collections.launchcard.inference.plugins.plugin_utils._images import (
    _DIGEST,
    ImageError,
    _is_hub,
    check_plain_http_credentials,
    plain_http_allowed,
    plain_http_refusal,
    pull_sources,
)

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
# containers/image reads a manifest body of at most 4 MiB (internal/iolimits: MaxManifestBodySize)
MAX_MANIFEST_BYTES = 4 << 20
# containers/image reads a token service's answer of at most 1 MiB (internal/iolimits: MaxAuthTokenBodySize)
MAX_TOKEN_BYTES = 1 << 20


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
    :param credentials: ``{registry or mirror host: {"username", "password"}}``, sent where the runtime sends them:
        a registry's to that registry (and its token realm); podman sends a mirror the entry of its own host
        (``HOST[:PORT]``) only, as the hosts' auth file holds it (:func:`registry_auth`), docker sends a mirror none.
    :param plain_http: ``launchcard_registry_credentials_plain_http``: the hosts (``HOST[:PORT]``) that may be sent
        credentials over plain HTTP (a mirror with ``insecure``, a token realm ``http://``); none by default.
    :param runtime: ``docker`` or ``podman`` (:func:`pull_sources`).
    :param upstream: see :func:`pull_sources`.
    :param opener: a ``urllib.request.OpenerDirector`` (tests); default: ``urllib.request.build_opener()``.
    :raises ImageError: credentials for a plain-HTTP mirror host that ``plain_http`` does not list (before any
        request), naming the variable.
    """

    def __init__(self, mirrors=None, credentials=None, timeout=30.0, opener=None, runtime="podman", upstream=None,
                 plain_http=None):
        self.mirrors = dict(mirrors or {})
        self.credentials = dict(credentials or {})
        self.plain_http = plain_http_allowed(plain_http)
        check_plain_http_credentials(self.credentials, self.mirrors, self.plain_http)
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

    def _basic(self, registry, source, url):
        """The ``Authorization`` value of the credentials ``source`` is sent at ``url``, or None.

        A mirror gets its own host's entry only (containers/image docker/docker_image_src.go newImageSourceAttempt:
        the credentials "intended for the primary endpoint" are not sent to mirrors; the auth file's entry for
        the mirror's own reference is, pkg/docker/config GetCredentialsForRef); docker's, none (see :meth:`_ask`).

        :raises ImageError: the credentials would go over plain HTTP to a host ``plain_http`` does not list.
        """
        if source["mirror"]:
            key = source["host"] if self.runtime == "podman" else None
        else:
            key = registry
        cred = self.credentials.get(key) if key else None
        if not cred:
            return None
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "https" and parts.netloc not in self.plain_http:
            raise ImageError(plain_http_refusal(parts.netloc, "launchcard_registry_credentials.%s (%s, at %s)"
                                                % (key, source["label"], url)))
        raw = ("%s:%s" % (cred.get("username", ""), cred.get("password", ""))).encode()
        return "Basic " + base64.b64encode(raw).decode()

    def _open(self, method, url, headers, auth=None):
        self.requests += 1
        req = urllib.request.Request(url, method=method, headers=headers)
        if auth:
            # never after a redirect: urllib.request's redirect_request copies Request.headers to any host, not the
            # unredirected ones (Go's src/net/http/client.go, under podman and dockerd, drops it for another domain)
            req.add_unredirected_header("Authorization", auth)
        return self.opener.open(req, timeout=self.timeout)

    def _token(self, registry, source, challenge, image):
        realm = challenge.get("realm")
        if not realm:
            raise _Unanswered("image %s: %s asked for a token without a realm" % (image, source["label"]))
        parts = urllib.parse.urlsplit(realm)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise _Unanswered("image %s: %s named a token realm that is not an http(s) URL: %r"
                              % (image, source["label"], realm))
        query = urllib.parse.parse_qsl(parts.query) + [(k, challenge[k]) for k in ("service", "scope")
                                                       if challenge.get(k)]
        url = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query), fragment=""))
        # The token spec's realm is an authorization service, on another host as the registry's may be
        # (distribution docs/spec/auth/token.md: registry.docker.io's is https://auth.docker.io/token), and the
        # engines send it the registry's credentials wherever it is (containers/image docker/docker_client.go
        # getBearerToken: SetBasicAuth on the realm's request, its scheme and host unchecked): so the realm gets
        # them over HTTPS only (or to a host plain_http lists), and otherwise the run stops here, before a host pulls.
        try:
            auth = self._basic(registry, source, url)
        except ImageError as exc:
            raise ImageError("image %s: %s names the token realm %s; %s" % (image, source["label"], realm, exc))
        try:
            with self._open("GET", url, {}, auth) as resp:
                body = resp.read(MAX_TOKEN_BYTES + 1)
                if len(body) > MAX_TOKEN_BYTES:
                    raise ValueError("an answer over %d bytes" % MAX_TOKEN_BYTES)
                doc = json.loads(body or b"{}")
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
            try:
                with self._open(method, url, headers, self._auth.get(key)) as resp:
                    return resp.headers, (resp.read(MAX_MANIFEST_BYTES + 1) if method == "GET" else b""), url
            except urllib.error.HTTPError as exc:
                if exc.code == 401 and source["mirror"] and self.runtime == "docker":
                    # moby daemon/containerd/resolver.go authorizerFromAuthConfig: credentials only for the host of
                    # the pull's own registry (registry-1.docker.io), none for a mirror host
                    raise ImageError(
                        "image %s: %s asks for credentials (HTTP 401 at %s), and dockerd sends a registry mirror "
                        "none (its credentials are looked up for the image's own registry, not the mirror's host), "
                        "so the docker hosts would fall back to Docker Hub: use launchcard_runtime: podman "
                        "(it sends the mirror the launchcard_registry_credentials of its own host), a mirror that "
                        "needs none, or name the mirror's registry in the card's image with credentials for it"
                        % (image, source["label"], url))
                if exc.code == 401 and attempt == 1 and key not in self._auth:
                    scheme, challenge = _parse_challenge(exc.headers.get("WWW-Authenticate"))
                    if scheme == "bearer":
                        self._auth[key] = "Bearer " + self._token(registry, source, challenge, image)
                    elif scheme == "basic" and self._basic(registry, source, url):
                        self._auth[key] = self._basic(registry, source, url)
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
