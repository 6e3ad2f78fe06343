# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The progress of a download running async, in a file the module calls that poll it read (``hf_snapshot``,
``hf_snapshot_progress``). Pure Python, shipped to hosts with those modules."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time

PROGRESS_FINAL = ("done", "failed")


def _lock_path(path):
    return path + ".lock"


class ProgressFile:
    """The progress of one run of the module, in the JSON file ``path`` (owner-only, ``0600``).

    Every write replaces the file whole (a temporary file in the same folder, then ``os.replace``), so a
    reader sees one complete document or the previous one. While the run lasts it holds an exclusive
    ``flock`` on ``path.lock`` (removed at the end); the kernel drops it when the process ends, however it ends, so a reader
    tells a running download from one that was killed (:func:`read_progress`). The document holds
    counts, the repository and the revision: never the token or the endpoint (a URL may carry credentials).
    """

    def __init__(self, path, repo, revision):
        self.path, self.repo, self.revision = path, repo, revision
        self.lock_fd = None
        self.last = {}

    def __enter__(self):
        self.lock_fd = os.open(_lock_path(self.path), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
        self.write({"state": "listing"})
        return self

    def __call__(self, doc):
        self.write(doc)

    def write(self, doc):
        self.last = dict(self.last, **doc)
        out = dict(self.last, repo=self.repo, revision=self.revision, pid=os.getpid(), updated=time.time())
        fd, tmp = tempfile.mkstemp(prefix=".progress-", dir=os.path.dirname(self.path) or ".")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(out, f)
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def finish(self, state, **extra):
        self.write(dict(extra, state=state))

    def __exit__(self, exc_type, exc, tb):
        try:
            if self.last.get("state") not in PROGRESS_FINAL:
                self.write({"state": "failed" if exc_type else "done"})
        finally:
            try:
                os.unlink(_lock_path(self.path))  # a reader without the file reads "not running", as with a free lock
            except OSError:
                pass
            os.close(self.lock_fd)  # releases the flock
        return False


def _running(path):
    """Whether a process holds the lock of the progress file ``path``."""
    try:
        fd = os.open(_lock_path(path), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _size(n):
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= scale:
            return "%.2f %s" % (n / float(scale), unit)
    return "%d bytes" % n


def describe_progress(doc):
    """One line for the run's output: ``1.20 GiB of 3.40 GiB (35%), 4 of 9 files, 52.30 MiB/s``."""
    state = doc.get("state")
    if doc.get("bytes_total") is None:
        return {"listing": "listing the revision on the hub", None: "not started"}.get(state, state or "not started")
    total, done = doc["bytes_total"], doc.get("bytes_done", 0)
    line = "%s of %s (%d%%), %d of %d files" % (_size(done), _size(total), 100 * done // total if total else 100,
                                                doc.get("files_done", 0), doc.get("files_total", 0))
    if doc.get("bytes_per_s"):
        line += ", %s/s" % _size(doc["bytes_per_s"])
    return line if state in (None, "downloading") else "%s: %s" % (state, line)


def read_progress(path, wait=0.0, poll=0.25):
    """The progress of the run writing ``path``, waiting up to ``wait`` seconds for it to end.

    Returns the document (:class:`ProgressFile`) with ``running`` (a process holds its lock and it is not
    final) and ``msg`` (:func:`describe_progress`). It returns at once when the run ends, and waits for a
    file that does not exist yet (the async run may not have started). A run whose process is gone without a
    final state (killed) is reported with ``state`` ``killed``.
    """
    deadline = time.time() + wait
    while True:
        doc = _load(path)
        alive = _running(path)
        if doc is not None and doc.get("state") not in PROGRESS_FINAL and not alive:
            doc = dict(_load(path) or doc)  # it may have ended between the two reads
            if doc.get("state") not in PROGRESS_FINAL:
                doc["state"] = "killed"
        done = doc is not None and (doc.get("state") in PROGRESS_FINAL or doc.get("state") == "killed")
        if done or time.time() >= deadline:
            doc = dict(doc or {"state": None})
            doc["running"] = not done and doc["state"] is not None
            doc["msg"] = describe_progress(doc)
            return doc
        time.sleep(min(poll, max(0.0, deadline - time.time())))
