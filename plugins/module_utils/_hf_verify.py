# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Hub's listing and the bytes it names are untrusted: paths that stay in the snapshot, content by digest.

Pure Python (shipped to hosts with ``_hf_snapshot``). A listing comes from the endpoint (the Hub, a mirror, or
whatever answers at that address) and a snapshot may come from a peer (rsync): every path is checked before any
file is looked at (:func:`unsafe_path`, :func:`escape`), and every file by its content (:func:`content_digest`).

The digests are the ones the Hub's tree API lists (huggingface_hub 2.4.0 hf_api.py ``RepoFile.__init__``:
``blob_id`` from ``oid``, ``lfs.sha256`` from ``lfs["oid"]``): an LFS file is named by the SHA-256 of its bytes
(the LFS pointer's ``oid sha256:...``, git-lfs docs/spec.md), any other file by its git blob id, the SHA-1 of
``blob <size>\\0`` followed by its bytes (git's gitformat-loose(5) "Object format", ``git hash-object``). For an
LFS file ``oid`` is the blob id of the pointer, not of the content, so only ``lfs.oid`` is used for it.
huggingface_hub checks only the size of what it downloads (file_download.py http_get's consistency check;
huggingface_hub#3643 asks for more), so this is where a wrong byte is caught.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from urllib.parse import urlsplit

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SHA1 = re.compile(r"^[0-9a-f]{40}$")
CHUNK = 8 * 1024 * 1024


def expected_digest(entry):
    """``("sha256", hex)`` for an LFS file, ``("git-sha1", hex)`` for any other, or None when the listing has neither.

    ``entry`` is a tree API dict (``oid``, ``lfs.oid``) or a huggingface_hub ``RepoFile`` (``blob_id``,
    ``lfs.sha256``).
    """
    if isinstance(entry, dict):
        lfs, oid = entry.get("lfs"), entry.get("oid")
        sha = lfs.get("oid") if isinstance(lfs, dict) else None
    else:
        lfs, oid = getattr(entry, "lfs", None), getattr(entry, "blob_id", None)
        sha = (lfs.get("sha256") if isinstance(lfs, dict) else getattr(lfs, "sha256", None)) if lfs else None
    if lfs:
        sha = str(sha or "").lower()
        return ("sha256", sha) if _SHA256.match(sha) else None
    oid = str(oid or "").lower()
    return ("git-sha1", oid) if _SHA1.match(oid) else None


def unsafe_path(path):
    """Why the listed ``path`` cannot name a file inside a snapshot folder, or None when it can.

    A repository path is relative, ``/``-separated, without empty, ``.`` or ``..`` parts, and without NUL (which no
    file name may hold).
    """
    if not isinstance(path, str) or not path:
        return "it is not a file name"
    if "\0" in path:
        return "it holds a NUL byte"
    if path.startswith("/"):
        return "it is an absolute path"
    parts = path.split("/")
    if ".." in parts:
        return "it climbs out with '..'"
    if "" in parts or "." in parts:
        return "it has an empty or '.' part"
    return None


def escape(repo_dir, snapshot, path):
    """Why ``snapshot/path`` would reach outside the repository's folder, or None.

    Read with ``lstat`` only (no link is followed): the folders of the repository and each folder of ``path`` must
    not be symlinks; the entry itself may be one, huggingface_hub's layout (``../../blobs/<etag>``), when its target
    is a file (not another link) in the repository's ``blobs`` folder.
    """
    blobs = os.path.join(repo_dir, "blobs")
    for folder in (repo_dir, os.path.dirname(snapshot), snapshot, blobs):
        if _is_link(folder):
            return "%s is a symlink" % folder
    parts = path.split("/")
    here = snapshot
    for part in parts[:-1]:
        here = os.path.join(here, part)
        if _is_link(here):
            return "%s is a symlink" % here
    entry = os.path.join(here, parts[-1])
    if _is_link(entry):
        target = os.path.normpath(os.path.join(os.path.dirname(entry), os.readlink(entry)))
        if os.path.dirname(target) != os.path.normpath(blobs):
            return "%s points at %s, outside %s" % (entry, target, blobs)
        if _is_link(target):
            return "%s, the blob of %s, is a symlink" % (target, entry)
    return None


def _is_link(path):
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def content_digest(path, kind, size):
    """The digest of the file at ``path`` (``size`` bytes) of the ``kind`` :func:`expected_digest` names."""
    if kind == "sha256":
        h = hashlib.sha256()
    else:
        h = hashlib.sha1(b"blob %d\0" % size)  # git's object id, not a security use: the sha256 covers LFS files
    with open(path, "rb") as f:
        while True:
            block = f.read(CHUNK)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def mismatches(snapshot, listing, paths=None):
    """``{path: found digest}`` of the files of ``listing`` (those in ``paths``, or all) whose bytes differ from the
    digest the listing gives (``entry["digest"]``, :func:`expected_digest`); a file that cannot be read is one."""
    out = {}
    for f in listing:
        if paths is not None and f["path"] not in paths:
            continue
        kind, want = f["digest"]
        try:
            found = content_digest(os.path.join(snapshot, f["path"]), kind, f["size"])
        except OSError as exc:
            found = "unreadable (%s)" % exc.strerror
        if found != want:
            out[f["path"]] = found
    return out


# the inventory's word that a token may cross plain HTTP (a mirror on a trusted network); the weights role's own name
ALLOW_HTTP_TOKEN = "launchcard_hf_allow_http_token"
ALLOW_HTTP_TOKEN_ROLE = "weights_hf_allow_http_token"


def plain_http_token(endpoint, token, allowed=False):
    """Why ``token`` must not go to ``endpoint``, or None: a token goes to an ``http://`` endpoint only when
    ``allowed`` (:data:`ALLOW_HTTP_TOKEN`); anyone on the path reads what plain HTTP carries (RFC 9110 section 4.2.1:
    "http" URIs have no protection of their own; "https" ones are secured by TLS, section 4.2.2)."""
    url = urlsplit(str(endpoint or "").strip())
    if not token or allowed or url.scheme.lower() != "http":
        return None
    endpoint = "http://%s%s" % (url.hostname or "", ":%d" % url.port if url.port else "")  # never a userinfo part
    return ("the Hub endpoint %s is plain HTTP and a token is set (launchcard_hf_token): it would travel unencrypted; "
            "use an https:// endpoint, or set %s: true (%s) where the network to that endpoint is trusted"
            % (endpoint, ALLOW_HTTP_TOKEN, ALLOW_HTTP_TOKEN_ROLE))
