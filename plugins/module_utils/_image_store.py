# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a host's container engine holds in its image store, read by preflight on the host.

Pure Python, no Ansible import; runs on the host inside the ``preflight`` module. :func:`image_data_root` finds
where the engine keeps its images (preflight's ``image_disk`` check measures the free room there);
:func:`stored_image_digests` asks the engine's own CLI which manifest digests its store holds, so a re-deploy that
keeps the digests the host's record names needs no room for them and pulls nothing.
"""

from __future__ import annotations

import json
import re

# Where each container engine keeps its images unless configured otherwise.
IMAGE_DATA_ROOTS = {"docker": "/var/lib/docker", "podman": "/var/lib/containers"}


def image_data_root(runtime, daemon_json=None, storage_conf=None):
    """The container engine's data root: docker's ``data-root`` in
    /etc/docker/daemon.json, podman's ``graphroot`` in
    /etc/containers/storage.conf, else the engine's default
    (:data:`IMAGE_DATA_ROOTS`); None for a runtime without images."""
    if runtime == "docker" and daemon_json:
        try:
            root = json.loads(daemon_json).get("data-root")
            if root:
                return root
        except (ValueError, AttributeError):
            pass
    if runtime == "podman" and storage_conf:
        section = None
        for line in storage_conf.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("["):
                section = line.strip("[] ")
                continue
            key, sep, value = line.partition("=")
            if sep and section == "storage" and key.strip() == "graphroot" and value.strip().strip('"\''):
                return value.strip().strip('"\'')
    return IMAGE_DATA_ROOTS.get(runtime)


# The engines' own listing of their image stores, one call each (no private file: docker 29's containerd store
# writes no image/overlay2/repositories.json, docs.docker.com/engine/storage/containerd). `--all`: docker CLI 29
# hides images without a tag unless asked (docker/cli e9a941001c, cli/command/image/list.go), and the hosts pull
# NAME@sha256:... only; `--digests`: without it docker leaves the Digest of such a row empty
# (cli/command/formatter/image.go imageFormatTaggedAndDigest); `{{json .}}` rather than `json`, which docker's
# CLI takes only from 23.0 (docker/cli eb27a94c3f; Debian 12's docker.io is 20.10). podman prints one JSON array
# (cmd/podman/images/list.go writeJSON).
IMAGE_LIST_ARGV = {
    "podman": ("image", "ls", "--all", "--format", "json"),
    "docker": ("image", "ls", "--all", "--digests", "--format", "{{json .}}"),
}
IMAGE_LIST_TIMEOUT = 60  # seconds; a hung daemon answers nothing, and the deploy then pulls (a no-op if present)
# The recorded refs hold sha256 digests (plugin_utils/_images.py); docker's "<none>" and "" never match.
_STORED_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def _digest_of(ref):
    """The digest of ``NAME@sha256:...`` or of a bare ``sha256:...``; None for anything else."""
    digest = str(ref or "").rsplit("@", 1)[-1]
    return digest if _STORED_DIGEST.match(digest) else None


def parse_podman_image_list(text):
    """The manifest digests of ``podman image ls --all --format json``.

    podman prints a JSON array of ``ImageSummary`` (pkg/domain/entities/types/images.go, podman 4.3 to 5.8):
    ``Digest``, the digest the image was pulled by (containers-storage ``Digest``: an index's when pulled by
    it), and ``RepoDigests``, ``NAME@DIGEST`` for each of its names and each of its digests (libimage
    ``RepoDigests``: an index pulled by digest lists the index's and its platform manifest's).

    :returns: set of ``sha256:...``.
    :raises ValueError: the output is not such an array.
    """
    images = json.loads(text or "[]")
    if not isinstance(images, list) or not all(isinstance(i, dict) for i in images):
        raise ValueError("not a JSON array of images")
    out = set()
    for image in images:
        for ref in [image.get("Digest")] + list(image.get("RepoDigests") or []):
            if _digest_of(ref):
                out.add(_digest_of(ref))
    return out


def parse_docker_image_list(text):
    """The manifest digests of ``docker image ls --all --digests --format '{{json .}}'``.

    docker prints one JSON object a line, one per repository, tag and digest of each image
    (cli/command/formatter/image.go); ``Digest`` is the digest of a ``RepoDigests`` entry, ``<none>`` or empty
    where the image has none. The classic store's ``RepoDigests`` are the ``NAME@DIGEST`` references pulls left
    (moby daemon/images/image_list.go); the containerd store's (docker 29's default for new installs) the
    image's own target, an index's digest when pulled by it (moby daemon/containerd/image_list.go).

    :returns: set of ``sha256:...``.
    :raises ValueError: a line is not a JSON object.
    """
    out = set()
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row, dict):
            raise ValueError("not a JSON object a line")
        if _digest_of(row.get("Digest")):
            out.add(_digest_of(row.get("Digest")))
    return out


_IMAGE_LIST_PARSERS = {"podman": parse_podman_image_list, "docker": parse_docker_image_list}


def stored_image_digests(runtime, get_bin_path, run_command, timeout=IMAGE_LIST_TIMEOUT):
    """The manifest digests of the images in the container engine's store, as the engine's CLI lists them
    (:data:`IMAGE_LIST_ARGV`).

    :param get_bin_path: ``AnsibleModule.get_bin_path``.
    :param run_command: ``AnsibleModule.run_command``.
    :returns: ``(digests, problem)``: a set of ``sha256:...`` and None; or an empty set and why nothing could be
        read (no CLI, the CLI failed or timed out, output it did not parse) - nothing is known to be in place.
    """
    if runtime not in IMAGE_LIST_ARGV:
        return set(), None
    binary = get_bin_path(runtime)
    if not binary:
        return set(), "%s is not installed (no %s on PATH)" % (runtime, runtime)
    limiter = get_bin_path("timeout")
    argv = ([limiter, str(timeout)] if limiter else []) + [binary] + list(IMAGE_LIST_ARGV[runtime])
    shown = " ".join([runtime] + list(IMAGE_LIST_ARGV[runtime]))
    try:
        rc, out, err = run_command(argv)
    except OSError as exc:
        return set(), "`%s` did not run: %s" % (shown, exc)
    if limiter and rc == 124:  # timeout(1): the command timed out
        return set(), "`%s` gave no answer within %d s" % (shown, timeout)
    if rc != 0:
        lines = [line for line in (err or out or "").splitlines() if line.strip()]
        return set(), "`%s` failed (rc %s): %s" % (shown, rc, lines[-1].strip() if lines else "no output")
    try:
        return _IMAGE_LIST_PARSERS[runtime](out), None
    except (ValueError, TypeError, AttributeError) as exc:
        return set(), "`%s` printed what is not its JSON listing (%s)" % (shown, exc)


def images_missing(recorded, in_place, needed):
    """The images this host runs (``needed``, ``needs.images``) whose recorded digest its store lacks; sorted.

    The record names every image of the fleet's run (one resolution for all hosts); an image that only other hosts
    run is never in this host's store and must not make its runtime steps run again on every deploy."""
    return sorted((set(recorded or {}) & set(needed or [])) - set(in_place or []))


def images_in_place(recorded, stored):
    """The card images whose recorded digest (``{image: NAME@sha256:...}``, the host's record) the engine's
    store holds (``stored``, the digests of :func:`stored_image_digests`); sorted."""
    return sorted(image for image, ref in (recorded or {}).items()
                  if "@" in str(ref) and str(ref).rsplit("@", 1)[1] in stored)
