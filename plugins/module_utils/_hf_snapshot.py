# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make one model revision complete in a host's Hugging Face cache.

Pure Python, no Ansible import (shipped to hosts inside the ``hf_snapshot``
module). ``huggingface_hub`` is imported lazily, by :class:`HubClient` only,
so everything else unit-tests without it.

The cache layout is huggingface_hub's own (https://huggingface.co/docs/huggingface_hub/guides/manage-cache):
``<hf_home>/hub/models--<owner>--<name>/snapshots/<revision>/<path>`` is a
symlink to ``../../blobs/<etag>``. The engines read it with ``HF_HOME`` set
to the same ``hf_home`` and ``HF_HUB_OFFLINE=1``.

Completeness is judged against the Hub's listing of the revision (one
``list_repo_tree`` call): every file must be present in the snapshot with
exactly the size the Hub lists (bytes) and the content its digest names
(``_hf_verify``). :func:`ensure_snapshot` then downloads only what is missing,
of the wrong size or of other content, and checks again. The listing is
untrusted: a path that would lead outside the snapshot fails before any file
is read.

The ``peer`` source (roles/weights): one host per card (the seed) downloads;
each other host first lists the revision and compares, like a download
would (``copy_from`` names the seed), the weights role then copies the
repository's folder from the seed (rsync), and :func:`ensure_snapshot` with
``copied=True`` verifies the copy exactly as a download is verified.

The download is huggingface_hub's ``snapshot_download`` with ``max_workers``
threads, one file each (huggingface_hub 2.4.0 _snapshot_download.py:541-547
``hf_thread_map``); a file the snapshot already holds is returned without a
request (file_download.py:1099-1113: a commit-hash revision and an existing
snapshot entry), so only what is missing is fetched.

Resuming is per file: a run keeps every file already complete. Within one
file, huggingface_hub retries an interrupted transfer with a range request;
the partial file of a killed run is discarded (:func:`remove_partials`).

Progress (``_hf_progress``): the bytes of the
revision on disk (complete files plus huggingface_hub's ``.incomplete`` files)
are sampled while the download runs and written, atomically and readable by
the owner only, to a file another module call reads between polls.

Xet: huggingface_hub downloads a file the endpoint marks Xet-backed from Xet
storage (a token from the endpoint's ``xet-read-token`` route, then the CAS
host that token names), not from the endpoint. An internal mirror rarely
offers either, so by default (``xet="auto"``) only the public Hub is read that
way; any other endpoint serves every byte over plain HTTP (:func:`xet_allowed`).
"""

from __future__ import annotations

import errno
import importlib.util
import os
import re
import shutil
import socket
import stat
import threading
import time
from contextlib import contextmanager
from urllib.parse import urlsplit

# the cache's layout and the completion stamp (also read by preflight, which ships without this file)
from ansible_collections.launchcard.inference.plugins.module_utils._hf_paths import repo_dir, snapshot_dir, stamp_path
from ansible_collections.launchcard.inference.plugins.module_utils._hf_verify import (
    escape, expected_digest, mismatches, unsafe_path)

CAUSES = ("wrong revision", "repository not found", "hub unreachable", "incomplete", "truncated download",
          "incomplete copy", "disk full", "cache error", "xet unavailable", "hub error", "unsafe listing",
          "checksum mismatch", "token over http")
XET_CHOICES = ("auto", "always", "never")
# huggingface_hub 2.4.0 _snapshot_download.py:139: snapshot_download(..., max_workers: int = 8)
DEFAULT_MAX_WORKERS = 8
# huggingface_hub constants.py: _HF_DEFAULT_ENDPOINT is https://huggingface.co, HF_URL_HOSTS adds hf.co
PUBLIC_HUB_HOSTS = ("huggingface.co", "hf.co")
# errnos of a connection that failed (refused, reset, no route, timed out): the endpoint, not this host's disk
_NET_ERRNOS = {getattr(errno, n) for n in ("ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "EHOSTUNREACH", "EHOSTDOWN",
                                           "ENETUNREACH", "ENETDOWN", "ETIMEDOUT", "EPIPE") if hasattr(errno, n)}
_FULL_ERRNOS = {getattr(errno, n) for n in ("ENOSPC", "EDQUOT") if hasattr(errno, n)}
# huggingface_hub 2.4.0 file_download.py:491 (http_get): "Consistency check failed: file should be of size X but has size Y"
_CONSISTENCY = re.compile(r"should be of size (\d+) but has size (\d+)")
# h11 _readers.py read_eof (httpx's RemoteProtocolError): "(received X bytes, expected Y)" of the last response
_PEER_CLOSED = re.compile(r"received (\d+) bytes, expected (\d+)")


class WeightsError(Exception):
    """A failure with a short ``cause`` (one of :data:`CAUSES`) and a message naming what failed."""

    def __init__(self, cause, message):
        super().__init__(message)
        self.cause = cause
        self.message = message


def normalize_listing(entries):
    """``[{"path": str, "size": int, "digest": (kind, hex)}]`` sorted by path, files only.

    Accepts huggingface_hub ``RepoFile``/``RepoFolder`` objects or the tree
    API's dicts (``{"type": "file", "path", "size", "oid", "lfs"}``); ``digest``: ``_hf_verify.expected_digest``.
    Every path is checked before anything uses it (``unsafe listing``, naming the first bad one).
    """
    out = []
    for e in entries:
        if isinstance(e, dict):
            if e.get("type", "file") != "file":
                continue
            path, size = e["path"], e.get("size")
        else:
            if not hasattr(e, "size") or type(e).__name__ == "RepoFolder":
                continue
            path, size = e.path, e.size
        why = unsafe_path(path)
        if why:
            raise WeightsError("unsafe listing", "the hub listed the file %r, which is not a path inside the snapshot "
                               "(%s); nothing was read, removed or downloaded" % (path, why))
        if size is None:
            raise WeightsError("hub error", "the hub listed %s without a size" % path)
        digest = expected_digest(e)
        if digest is None:
            raise WeightsError("hub error", "the hub listed %s without a digest of its content (oid, or lfs.oid for an "
                               "LFS file), so it cannot be verified" % path)
        out.append({"path": path, "size": int(size), "digest": digest})
    return sorted(out, key=lambda f: f["path"])


def local_status(hf_home, repo, revision, listing):
    """Compare the cache with ``listing``.

    :returns: ``{"complete": bool, "bytes_total": int, "bytes_present": int,
        "missing": [{"path", "size", "found"}]}``; ``found`` is the size on
        disk in bytes, or ``None`` when the file (or its blob) is absent.
    """
    snap = snapshot_dir(hf_home, repo, revision)
    missing, present, total = [], 0, 0
    for f in listing:
        total += f["size"]
        try:
            found = os.stat(os.path.join(snap, f["path"])).st_size
        except OSError:
            found = None
        if found == f["size"]:
            present += found
        else:
            missing.append({"path": f["path"], "size": f["size"], "found": found})
    return {"complete": not missing, "bytes_total": total, "bytes_present": present, "missing": missing}


def remove_broken(hf_home, repo, revision, paths):
    """Remove each snapshot entry in ``paths`` and the blob it points at, so a download fetches it again.

    Only a blob inside this repository's ``blobs`` folder is removed.
    """
    blobs = os.path.realpath(os.path.join(repo_dir(hf_home, repo), "blobs"))
    snap = snapshot_dir(hf_home, repo, revision)
    for path in paths:
        entry = os.path.join(snap, path)
        if os.path.islink(entry):
            target = os.path.realpath(entry)
            if os.path.dirname(target) == blobs and os.path.isfile(target):
                os.unlink(target)
            os.unlink(entry)
        elif os.path.isfile(entry):
            os.unlink(entry)


def remove_partials(hf_home, repo):
    """Remove ``blobs/*.incomplete``: what a killed download left (huggingface_hub 2.4.0 writes
    ``<etag>.<8 hex>.incomplete``, unique per transfer, file_download.py:2004, and unlinks it itself unless
    killed, :2046, so a later run never resumes it). Returns the bytes freed."""
    blobs = os.path.join(repo_dir(hf_home, repo), "blobs")
    freed = 0
    if os.path.isdir(blobs):
        for name in os.listdir(blobs):
            path = os.path.join(blobs, name)
            if name.endswith(".incomplete") and os.path.isfile(path) and not os.path.islink(path):
                freed += os.path.getsize(path)
                os.unlink(path)
    return freed


def remove_stamp(hf_home, repo, revision):
    """Remove the completion stamp of ``revision``: called before downloading into a snapshot found incomplete."""
    try:
        os.unlink(stamp_path(hf_home, repo, revision))
    except FileNotFoundError:
        pass


def make_readable(hf_home, repo):
    """Give everyone read access to the repository's cache (dirs ``a+rx``, files ``a+r``).

    The engines may run as a dedicated user: they must read what root downloaded.
    ``hf_home`` and ``hf_home/hub`` get ``a+x`` at least, so the path can be walked.
    """
    for d in (hf_home, os.path.join(hf_home, "hub")):
        if os.path.isdir(d):
            mode = os.stat(d).st_mode
            os.chmod(d, stat.S_IMODE(mode) | 0o555)
    for root, dirs, files in os.walk(repo_dir(hf_home, repo)):
        for name in dirs:
            p = os.path.join(root, name)
            os.chmod(p, stat.S_IMODE(os.lstat(p).st_mode) | 0o555)
        for name in files:
            p = os.path.join(root, name)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                os.chmod(p, stat.S_IMODE(st.st_mode) | 0o444)
    top = repo_dir(hf_home, repo)
    if os.path.isdir(top):
        os.chmod(top, stat.S_IMODE(os.stat(top).st_mode) | 0o555)


def _class_names(exc):
    return {c.__name__ for c in type(exc).__mro__}


def mount_of(path):
    """The mount point holding ``path`` (its nearest existing ancestor when ``path`` does not exist yet)."""
    path = os.path.realpath(path)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    while not os.path.ismount(path):
        path = os.path.dirname(path)
    return path


def free_bytes(path):
    """Bytes an unprivileged writer may still use on the filesystem holding ``path`` (``statvfs`` ``f_bavail``)."""
    return shutil.disk_usage(mount_of(path)).free


def disk_full(hf_home, needed, what):
    """The ``disk full`` error: the mount holding ``hf_home``, the bytes ``what`` needs and the bytes free."""
    mount = mount_of(hf_home)
    return WeightsError("disk full", "%s (the filesystem holding %s) has %d bytes free; %s needs %d bytes"
                        % (mount, hf_home, shutil.disk_usage(mount).free, what, needed))


def _network_oserror(exc):
    return isinstance(exc, (ConnectionError, TimeoutError, socket.gaierror, socket.herror)) or \
        getattr(exc, "errno", None) in _NET_ERRNOS


def _truncated(exc, path, size):
    """``(received, expected)`` bytes of ``path`` when ``exc`` is a transfer that ended short, else None.

    huggingface_hub 2.4.0 raises ``OSError("Consistency check failed: ...")`` when a response ends cleanly
    short of the size the Hub announced (file_download.py:490-495), and lets httpx's ``RemoteProtocolError``
    through when the peer closes before the ``Content-Length`` it sent, after five retries 1 s apart, each
    asking for the rest with a ``Range`` header (file_download.py:468-486, :378).
    A retry asks for the rest only when some bytes reached the file, so that message counts the last
    response, which began where the file stood: received = size - expected + received.
    """
    text = str(exc)
    m = _CONSISTENCY.search(text)
    if m and isinstance(exc, OSError):
        return int(m.group(2)), int(m.group(1))
    m = _PEER_CLOSED.search(text)
    if m and "RemoteProtocolError" in _class_names(exc) and size is not None:
        got, promised = int(m.group(1)), int(m.group(2))
        return size - promised + got if promised <= size else got, size
    return None


def describe_error(exc, endpoint, repo, revision, path=None, size=None, hf_home=None, needed=None):
    """Turn an exception of huggingface_hub (or the network or disk below it) into a :class:`WeightsError`.

    Matched by class name so this module needs no huggingface_hub import:
    ``RevisionNotFoundError`` -> ``wrong revision``; ``RepositoryNotFoundError``,
    ``GatedRepoError`` -> ``repository not found``; a transfer of ``path`` that
    ended short -> ``truncated download``; ``ENOSPC``/``EDQUOT`` -> ``disk full``;
    connection errors and timeouts (httpx's, or an ``OSError`` of the network)
    -> ``hub unreachable``; any other ``OSError`` with an errno (the cache under
    ``hf_home``) -> ``cache error``; else ``hub error``.

    :param path: the repository path being downloaded, ``size`` its listed size
        in bytes, ``needed`` the bytes still missing of the revision, this file included.
    """
    if isinstance(exc, WeightsError):
        return exc
    names = _class_names(exc)
    detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    if "RevisionNotFoundError" in names:
        return WeightsError("wrong revision", "revision %s of %s does not exist on %s" % (revision, repo, endpoint))
    if names & {"RepositoryNotFoundError", "GatedRepoError"}:
        return WeightsError("repository not found",
                            "%s is not on %s or needs a token that can read it (%s)" % (repo, endpoint, detail))
    short = _truncated(exc, path, size) if path else None
    if short:
        return WeightsError("truncated download", "%s of %s at %s from %s: %d of %d bytes arrived before the transfer "
                            "ended (huggingface_hub retried it) and nothing of it was kept; a mirror or proxy that "
                            "keeps cutting this file holds a short copy of it" % (path, repo, revision, endpoint,
                                                                                  short[0], short[1]))
    if isinstance(exc, OSError) and getattr(exc, "errno", None) in _FULL_ERRNOS and hf_home:
        return disk_full(hf_home, needed if needed is not None else size or 0,
                         "%s at %s (%s and what is still missing of the revision)" % (repo, revision, path or "the files"))
    if names & {"ConnectError", "ConnectTimeout", "TimeoutException", "NetworkError", "ConnectionError",
                "LocalEntryNotFoundError", "OfflineModeIsEnabled", "ProxyError"} or (
            isinstance(exc, OSError) and _network_oserror(exc)):
        return WeightsError("hub unreachable", "cannot reach the hub endpoint %s: %s" % (endpoint, detail))
    if isinstance(exc, OSError) and getattr(exc, "errno", None) and not names & {"HfHubHTTPError"}:
        return WeightsError("cache error", "cannot write the cache under %s: %s" % (hf_home or "HF_HOME", detail))
    return WeightsError("hub error", "%s from %s: %s" % (type(exc).__name__, endpoint, detail))


def _gib(n):
    return "%.2f GiB" % (n / 2.0 ** 30) if n >= 2 ** 30 else "%d bytes" % n


def describe_missing(status, limit=5):
    """One line: ``3 file(s) missing or of the wrong size, ...: a (absent), b (10 of 20 bytes), c (content differs ...)``."""
    items = []
    for m in status["missing"][:limit]:
        items.append("%s (%s)" % (m["path"], "absent" if m["found"] is None else "content differs from the hub's "
                                  "listing" if "digest" in m else "%d of %d bytes" % (m["found"], m["size"])))
    more = len(status["missing"]) - limit
    return "%d file(s) missing or of the wrong size, %s present of %s: %s%s" % (
        len(status["missing"]), _gib(status["bytes_present"]), _gib(status["bytes_total"]), ", ".join(items),
        ", and %d more" % more if more > 0 else "")


def failed_path(exc):
    """The repository path whose download raised ``exc`` inside ``snapshot_download``, or None.

    A worker's exception reaches the caller with the worker's frames (concurrent.futures re-raises the
    exception object, huggingface_hub utils/tqdm.py:441 ``future.result()``); the frame of
    ``hf_hub_download`` holds the file it was called for (``filename``, _snapshot_download.py:521-523).
    """
    tb = getattr(exc, "__traceback__", None)
    found = None
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "hf_hub_download" and isinstance(frame.f_locals.get("filename"), str):
            found = frame.f_locals["filename"]
        tb = tb.tb_next
    if found is None and exc.__context__ is not None and exc.__context__ is not exc:
        return failed_path(exc.__context__)
    return found


def disk_bytes(hf_home, repo, revision, listing):
    """``(bytes, files)`` of ``listing`` on disk now: complete snapshot entries, plus the bytes of the
    ``blobs/*.incomplete`` files huggingface_hub is writing (file_download.py:2004, one per transfer)."""
    snap = snapshot_dir(hf_home, repo, revision)
    done, files = 0, 0
    for f in listing:
        try:
            size = os.stat(os.path.join(snap, f["path"])).st_size
        except OSError:
            continue
        if size == f["size"]:
            done += size
            files += 1
    blobs = os.path.join(repo_dir(hf_home, repo), "blobs")
    try:
        names = os.listdir(blobs)
    except OSError:
        names = []
    for name in names:
        if name.endswith(".incomplete"):
            try:
                done += os.stat(os.path.join(blobs, name)).st_size
            except OSError:
                pass  # renamed into place between the listing and the stat
    return min(done, sum(f["size"] for f in listing)), files


class _Sampler(threading.Thread):
    """Calls ``report(doc)`` every ``interval`` seconds with the bytes of the revision on disk, until stopped."""

    def __init__(self, report, hf_home, repo, revision, listing, interval):
        super().__init__(name="launchcard-weights-progress", daemon=True)
        self.report, self.interval = report, interval
        self.args = (hf_home, repo, revision, listing)
        self.stop = threading.Event()
        self.started_at = time.time()
        self.first = None

    def sample(self):
        done, files = disk_bytes(*self.args)
        if self.first is None:
            self.first = done
        elapsed = time.time() - self.started_at
        listing = self.args[3]
        return {"state": "downloading", "bytes_done": done, "bytes_total": sum(f["size"] for f in listing),
                "files_done": files, "files_total": len(listing),
                "bytes_per_s": int((done - self.first) / elapsed) if elapsed > 0 else 0}

    def run(self):
        while not self.stop.wait(self.interval):
            try:
                self.report(self.sample())
            except OSError:
                pass  # a progress file that cannot be written never stops the download


def check_contained(hf_home, repo, revision, listing):
    """Fail (``unsafe listing``) when a file of ``listing`` would reach outside the repository's folder through a
    symlink in the cache (``_hf_verify.escape``), before any file is read, removed or downloaded."""
    top, snap = repo_dir(hf_home, repo), snapshot_dir(hf_home, repo, revision)
    for f in listing:
        why = escape(top, snap, f["path"])
        if why:
            raise WeightsError("unsafe listing", "%s of %s at %s leads outside the cache: %s; nothing was read, removed "
                               "or downloaded" % (f["path"], repo, revision, why))


def _with_mismatches(status, listing, bad):
    """``status`` with the files of ``bad`` (``{path: digest found}``) counted missing, their ``digest`` given."""
    if not bad:
        return status
    missing = status["missing"] + [{"path": f["path"], "size": f["size"], "found": f["size"], "digest": bad[f["path"]]}
                                   for f in listing if f["path"] in bad]
    return dict(status, complete=False, missing=sorted(missing, key=lambda m: m["path"]),
                bytes_present=status["bytes_present"] - sum(m["size"] for m in missing if "digest" in m))


def ensure_snapshot(client, hf_home, repo, revision, check_mode=False, verify_only=False, progress=None,
                    copy_from=None, copied=False, max_workers=DEFAULT_MAX_WORKERS, progress_interval=1.0):
    """Make ``repo`` at ``revision`` complete under ``hf_home``.

    :param client: has ``list_files(repo, revision)`` (the Hub's listing, as
        accepted by :func:`normalize_listing`) and ``download_snapshot(repo, revision, paths, max_workers)``
        (``paths``: what is missing); see :class:`HubClient`.
    :param verify_only: never download (the ``path`` source: a shared
        filesystem already holds the weights); an incomplete snapshot fails.
    :param progress: called as ``progress(doc)`` every ``progress_interval`` seconds while files download, ``doc``
        holding ``bytes_done`` and ``bytes_total`` (the revision's bytes on disk, and all of them), ``files_done``,
        ``files_total``, ``bytes_per_s`` (:func:`disk_bytes`).
    :param max_workers: files downloaded at once (``snapshot_download``'s threads).
    :param copy_from: the ``peer`` source: the host (the seed) this one copies the revision from; nothing is
        downloaded. Before the copy (``copied`` false) an incomplete snapshot is reported, not an error: its
        files are listed in ``would_copy`` (``changed`` only in check mode: the copy itself is the change).
    :param copied: the copy from ``copy_from`` is done: a short file fails (``incomplete copy``); a file whose
        content differs from the listing is fetched from the Hub.
    :returns: ``{"changed", "complete", "bytes_total", "bytes_present" (before),
        "bytes_done" (downloaded now), "files_total", "downloaded": [paths], "refetched": [paths] (their content
        differed), "files_verified" (files whose content was checked), "would_download": [paths] (check mode),
        "would_copy": [paths] (``copy_from``), "seed"}``.
    :raises WeightsError: the cause and what failed (the revision, the endpoint, each short or altered file).

    Paths are checked before anything is read (:func:`normalize_listing`, :func:`check_contained`). Content is
    checked by the listing's digests (``_hf_verify``) before the snapshot counts as complete: every file after a
    download or a copy, and a snapshot whose sizes match unless the completion stamp (:func:`stamp_path`, written
    once it was verified) is there; the ``path`` source (a shared filesystem, read on every run) by size only.
    A file that differs is fetched again once; if it differs again it fails (``checksum mismatch``).
    """
    endpoint = getattr(client, "endpoint", "the hub")
    try:
        listing = normalize_listing(client.list_files(repo, revision))
    except Exception as exc:  # pylint: disable=broad-except  # every failure becomes a named cause
        raise describe_error(exc, endpoint, repo, revision) from exc
    if not listing:
        raise WeightsError("hub error", "the hub lists no file in %s at %s" % (repo, revision))
    check_contained(hf_home, repo, revision, listing)
    snap = snapshot_dir(hf_home, repo, revision)
    before = local_status(hf_home, repo, revision, listing)
    verified = set()
    if before["complete"] and (copied or not (verify_only or os.path.exists(stamp_path(hf_home, repo, revision)))):
        bad = mismatches(snap, listing)
        verified = {f["path"] for f in listing} - set(bad)
        before = _with_mismatches(before, listing, bad)
    result = {"changed": False, "complete": before["complete"], "bytes_total": before["bytes_total"],
              "bytes_present": before["bytes_present"], "bytes_done": 0, "files_total": len(listing),
              "downloaded": [], "refetched": [], "files_verified": len(verified), "would_download": [],
              "would_copy": [], "seed": copy_from, "snapshot": snap}
    if before["complete"]:
        return result
    if copy_from:
        if copied and not check_mode:
            if any("digest" not in m for m in before["missing"]):
                raise WeightsError("incomplete copy", "after copying %s at %s from the seed %s: %s"
                                   % (repo, revision, copy_from, describe_missing(before)))
            # the right sizes, other bytes: the seed's copy is not the Hub's; those files come from the Hub
            return _refetch(client, hf_home, repo, revision, listing, before, result, max_workers, progress,
                            progress_interval, "copied from the seed %s" % copy_from)
        result["would_copy"] = [m["path"] for m in before["missing"]]
        result["changed"] = bool(check_mode)
        return result
    if verify_only:
        raise WeightsError("incomplete", "the snapshot of %s at %s in %s is incomplete and the source only verifies: %s"
                           % (repo, revision, hf_home, describe_missing(before)))
    todo = [m["path"] for m in before["missing"]]
    result["changed"] = True
    if check_mode:
        result["would_download"] = todo
        return result
    _download(client, hf_home, repo, revision, listing, before["missing"], max_workers, progress, progress_interval)
    result["downloaded"] = todo
    result["bytes_done"] = sum(m["size"] for m in before["missing"])
    # every file not verified yet: those just downloaded, and those a stamp-less snapshot held already
    bad = mismatches(snap, listing, {f["path"] for f in listing} - verified)
    status = _with_mismatches(local_status(hf_home, repo, revision, listing), listing, bad)
    return _refetch(client, hf_home, repo, revision, listing, status, result, max_workers, progress, progress_interval,
                    "downloaded from %s" % endpoint)


def _refetch(client, hf_home, repo, revision, listing, status, result, max_workers, progress, interval, origin):
    """Fetch once more the files of ``status`` whose content differs (``digest``), verify them, and finish ``result``."""
    bad = [m for m in status["missing"] if "digest" in m]
    if bad:
        result["changed"] = True
        _download(client, hf_home, repo, revision, listing, bad, max_workers, progress, interval)
        result["refetched"] = [m["path"] for m in bad]
        result["bytes_done"] += sum(m["size"] for m in bad)
        again = mismatches(snapshot_dir(hf_home, repo, revision), listing, set(result["refetched"]))
        if again:
            digests = dict((f["path"], f["digest"]) for f in listing)
            raise WeightsError("checksum mismatch", "%s of %s at %s, %s and fetched again from %s, differs from the "
                               "hub's listing both times: %s; a mirror, proxy or disk that alters it serves a corrupt "
                               "copy, and the snapshot is not marked complete" % (
                                   ", ".join(sorted(again)), repo, revision, origin, getattr(client, "endpoint", "the hub"),
                                   "; ".join("%s: %s %s listed, %s found" % (p, digests[p][0], digests[p][1], again[p])
                                             for p in sorted(again))))
    make_readable(hf_home, repo)
    result["complete"] = True
    result["files_verified"] = len(listing)
    if progress:
        progress({"state": "verified"})
    return result


def _download(client, hf_home, repo, revision, listing, missing, max_workers, progress, interval):
    """Download the files of ``missing`` (``local_status`` entries), after removing what stands in their place;
    fails naming each file that is still short."""
    sizes = {f["path"]: f["size"] for f in listing}
    remove_broken(hf_home, repo, revision, [m["path"] for m in missing if m["found"] is not None])
    remove_partials(hf_home, repo)
    remove_stamp(hf_home, repo, revision)
    needed = sum(m["size"] for m in missing)
    if needed > free_bytes(hf_home):  # huggingface_hub only warns (file_download.py:758-773), then fails mid-file
        raise disk_full(hf_home, needed, "%s at %s (%d missing file(s))" % (repo, revision, len(missing)))
    sampler = _Sampler(progress, hf_home, repo, revision, listing, interval) if progress else None
    if sampler:
        progress(sampler.sample())
        sampler.start()
    try:
        client.download_snapshot(repo, revision, [m["path"] for m in missing], max_workers)
    except Exception as exc:  # pylint: disable=broad-except
        remove_partials(hf_home, repo)
        path = failed_path(exc)
        still = sum(m["size"] for m in local_status(hf_home, repo, revision, listing)["missing"])
        raise describe_error(exc, getattr(client, "endpoint", "the hub"), repo, revision, path=path,
                             size=sizes.get(path), hf_home=hf_home, needed=still) from exc
    finally:
        if sampler:
            sampler.stop.set()
            sampler.join()
    after = local_status(hf_home, repo, revision, listing)
    if progress:
        progress(dict(sampler.sample(), state="verifying" if after["complete"] else "incomplete"))
    if not after["complete"]:
        make_readable(hf_home, repo)
        raise WeightsError("truncated download", "after downloading %s at %s: %s"
                           % (repo, revision, describe_missing(after)))


def xet_allowed(endpoint, xet="auto"):
    """Whether downloads from ``endpoint`` may take huggingface_hub's Xet path.

    ``never``: False; ``always``: True; ``auto``: None (huggingface_hub decides, ``HF_HUB_DISABLE_XET``
    included) on the public Hub, False on any other endpoint: the token route and the CAS host the
    Xet path needs are the Hub's own (huggingface_hub#4475), which a mirror does not serve (artifact-keeper#3334).
    """
    if xet not in XET_CHOICES:
        raise WeightsError("hub error", "xet must be one of %s, found %r" % (", ".join(XET_CHOICES), xet))
    if xet != "auto":
        return xet == "always"
    host = (urlsplit(endpoint).hostname or "").lower()
    return None if host in PUBLIC_HUB_HOSTS else False


class HubClient:
    """The Hub through ``huggingface_hub`` (imported here, lazily).

    ``endpoint`` is the Hub's base URL (``HF_ENDPOINT``); ``token`` may be
    empty. Downloads go into ``<hf_home>/hub`` with huggingface_hub's own
    locking, ``.incomplete`` files and HTTP range retries. ``xet``: see :func:`xet_allowed`.
    """

    def __init__(self, endpoint, token, hf_home, timeout=30.0, xet="auto"):
        # The module may inherit the engines' environment: never run offline, never draw bars.
        os.environ.pop("HF_HUB_OFFLINE", None)
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
        os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
        os.environ["HF_HOME"] = hf_home
        self.xet = xet_allowed(endpoint, xet)
        import huggingface_hub  # pylint: disable=import-outside-toplevel
        from huggingface_hub import constants  # pylint: disable=import-outside-toplevel

        self._hf = huggingface_hub
        self._constants = constants
        self.endpoint = endpoint.rstrip("/")
        self.token = token or False  # False: never read a token file from the host
        self.cache_dir = os.path.join(hf_home, "hub")
        self.timeout = timeout
        self.api = huggingface_hub.HfApi(endpoint=self.endpoint, token=self.token)

    @contextmanager
    def _xet_setting(self):
        """Apply :attr:`xet` to huggingface_hub for one call, then restore what it had.

        huggingface_hub reads ``constants.HF_HUB_DISABLE_XET`` at each decision (utils/_runtime.py
        is_xet_available, file_download.py _download_to_tmp_and_move); it is set from the environment at
        import, which may have happened before this client was made.
        """
        if self.xet is None:
            yield
            return
        saved = self._constants.HF_HUB_DISABLE_XET
        self._constants.HF_HUB_DISABLE_XET = not self.xet
        try:
            yield
        finally:
            self._constants.HF_HUB_DISABLE_XET = saved

    def reachable(self):
        """Fail fast (``OSError``) when nothing accepts a TCP connection at the endpoint.

        huggingface_hub retries a refused connection with backoff for about
        half a minute; a deploy should say at once that the endpoint is down.
        """
        url = urlsplit(self.endpoint)
        port = url.port or (443 if url.scheme == "https" else 80)
        socket.create_connection((url.hostname, port), timeout=min(self.timeout, 10.0)).close()

    def list_files(self, repo, revision):
        self.reachable()
        return list(self.api.list_repo_tree(repo, revision=revision, recursive=True))

    def download_snapshot(self, repo, revision, paths, max_workers=DEFAULT_MAX_WORKERS):
        """Download what the cache lacks of ``repo`` at ``revision`` with ``snapshot_download``.

        ``paths`` (what is missing) is not passed on: snapshot_download walks every file of the revision and
        a file the snapshot holds costs no request (see the module's docstring); no pattern filters the
        revision, as before. huggingface_hub lists the revision again unless its tree cache
        (``trees/<commit>.json``) holds it (_snapshot_download.py:282-298).
        """
        with self._xet_setting():
            try:
                return self._hf.snapshot_download(repo, revision=revision, cache_dir=self.cache_dir,
                                                  endpoint=self.endpoint, token=self.token,
                                                  etag_timeout=self.timeout, max_workers=max_workers)
            except Exception as exc:  # pylint: disable=broad-except  # re-raised, named when the Xet path failed
                path = failed_path(exc)
                failed = self.xet_failure(exc, repo, revision, path) if path else None
                if failed is None:
                    raise
                raise failed from exc

    def xet_failure(self, exc, repo, revision, path):
        """A ``xet unavailable`` :class:`WeightsError` when ``path`` failed on the Xet path, else None.

        The endpoint's ``resolve`` headers say whether the file took it (``X-Xet-Hash`` and the ``xet-auth``
        link: huggingface_hub utils/_xet.py parse_xet_file_data_from_response); the failed step is the token
        request to that link when ``exc`` answers its URL, else the transfer from the CAS host the token names.
        """
        if isinstance(exc, OSError) and getattr(exc, "errno", None):
            return None  # this host's disk or network: describe_error names it
        # huggingface_hub utils/_runtime.py is_xet_available: not HF_HUB_DISABLE_XET and hf_xet importable
        if self._constants.HF_HUB_DISABLE_XET or importlib.util.find_spec("hf_xet") is None:
            return None
        try:
            meta = self._hf.get_hf_file_metadata(
                self._hf.hf_hub_url(repo, path, revision=revision, endpoint=self.endpoint),
                token=self.token, timeout=self.timeout, endpoint=self.endpoint)
        except Exception:  # pylint: disable=broad-except  # the original error stands
            return None
        data = getattr(meta, "xet_file_data", None)
        if data is None:
            return None
        response = getattr(exc, "response", None)
        url = str(getattr(response, "url", "") or "")
        if url and url.split("?", maxsplit=1)[0] == data.refresh_route:
            step = "the Xet token request GET %s answered HTTP %s" % (url, response.status_code)
        else:
            step = "the transfer from the Xet storage (CAS) host that %s names failed: %s" % (
                data.refresh_route, str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__)
        return WeightsError("xet unavailable", "%s of %s at %s is Xet-backed on %s and huggingface_hub took the Xet "
                            "path: %s; set launchcard_hf_xet: never (weights_hf_xet) to read every file over plain "
                            "HTTP from %s, or let the mirror serve Xet (its xet-read-token route and a CAS host "
                            "this host can reach)" % (path, repo, revision, self.endpoint, step, self.endpoint))
