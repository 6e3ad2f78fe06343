# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TEST CODE: the sandbox registry as the container e2e files read and change it (its HTTP API, skopeo)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import urllib.request

import pytest

from sandbox_cli import run

# The container e2e files' marker: they boot podman hosts and a real registry on the bridge.
CONTAINER_SANDBOX = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("systemd-nspawn") or not os.path.exists("/usr/bin/docker-registry")
    or not shutil.which("skopeo"),
    reason="the container sandbox needs root, systemd-nspawn, docker-registry and skopeo (make host-deps)")

MANIFEST_TYPES = ("application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "
                  "application/vnd.docker.distribution.manifest.v2+json")


def creds_args(flag, auth):
    """skopeo's ``--src-creds``/``--dest-creds USER:PASSWORD`` for a registry that asks for ``auth`` (or nothing)."""
    return [flag, "%s:%s" % auth] if auth else []


def registry_digest(registry, image, auth=None):
    """The manifest digest the sandbox registry serves for a Docker Hub ``repository:tag``.

    ``auth``: ``(username, password)`` of a registry that asks for basic auth (``sandbox_registry_auth``)."""
    repo, tag = image.rsplit(":", 1)
    headers = {"Accept": MANIFEST_TYPES}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % auth).encode()).decode()
    req = urllib.request.Request("http://%s/v2/%s/manifests/%s" % (registry, repo, tag), method="HEAD",
                                 headers=headers)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.headers["Docker-Content-Digest"]


def push_variant(registry, src, dest, label, tmp, auth=None):
    """Push the image the registry holds as ``src`` again as ``dest``, with one more config label.

    The layer is shared; the config, so the manifest and its digest, differ. Deterministic: the same
    label gives the same digest on every run. Returns ``dest``'s digest."""
    layout = os.path.join(str(tmp), "variant")
    res = run(["skopeo", "copy", "--quiet", "--src-tls-verify=false"] + creds_args("--src-creds", auth)
              + ["docker://%s/%s" % (registry, src), "oci:%s:variant" % layout])
    assert res.returncode == 0, res.stderr

    def path(digest):
        return os.path.join(layout, "blobs", "sha256", digest.split(":", 1)[1])

    def store(obj):
        data = json.dumps(obj, sort_keys=True).encode()
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        with open(path(digest), "wb") as f:
            f.write(data)
        return digest, len(data)

    with open(os.path.join(layout, "index.json")) as f:
        index = json.load(f)
    entry = index["manifests"][0]
    with open(path(entry["digest"])) as f:
        manifest = json.load(f)
    with open(path(manifest["config"]["digest"])) as f:
        config = json.load(f)
    config.setdefault("config", {}).setdefault("Labels", {})["launchcard.sandbox.variant"] = label
    manifest["config"]["digest"], manifest["config"]["size"] = store(config)
    entry["digest"], entry["size"] = store(manifest)
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump(index, f)
    res = run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false"] + creds_args("--dest-creds", auth)
              + ["oci:%s:variant" % layout, "docker://%s/%s" % (registry, dest)])
    assert res.returncode == 0, res.stderr
    return registry_digest(registry, dest, auth)
