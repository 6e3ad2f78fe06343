# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a monitoring host's Prometheus file_sd files in one pass (the ``scrape_targets`` module).

The controller makes the files' text (``plugin_utils/_scrape_targets.py``, the ``file_sd_files`` filter); this side
only puts it on the host: each missing folder made (``0755``), each file whose bytes differ replaced through a
temporary file in its own folder and an atomic rename, each file left ``0644``. A file whose bytes and mode are
already right is not opened for writing, so a run that changes nothing keeps its mtime and Prometheus rereads nothing.

Pure Python, no Ansible import: the module passes ``AnsibleModule.atomic_move`` as ``move``.
"""

from __future__ import annotations

import os
import stat
import tempfile

FILE_MODE = 0o644
DIR_MODE = 0o755

#: What :func:`write` did (or, in check mode, would do) to one file.
CREATED, UPDATED, MODE, UNCHANGED = "created", "updated", "mode", "unchanged"


def check_files(files):
    """``[(path, content bytes)]`` from ``[{path, content}]``, in their order.

    :raises ValueError: naming ``files[i].path`` for a path that is not absolute, has a ``..`` segment, names a
        folder (a final ``/``) or is given twice, and ``files[i].content`` for content that is not text.
    """
    checked, seen = [], {}
    for index, entry in enumerate(files):
        path, content = entry.get("path"), entry.get("content")
        name = "files[%d].path" % index
        if not isinstance(path, str) or not path:
            raise ValueError("%s: a path is required" % name)
        if not os.path.isabs(path):
            raise ValueError("%s: %r is relative; an absolute path is required" % (name, path))
        if ".." in path.split("/"):
            raise ValueError("%s: %r has a '..' segment; give the path without it" % (name, path))
        if path.endswith("/"):
            raise ValueError("%s: %r names a folder, not a file" % (name, path))
        if path in seen:
            raise ValueError("%s: %r is given twice (files[%d].path)" % (name, path, seen[path]))
        if not isinstance(content, str):
            raise ValueError("files[%d].content: text is required" % index)
        seen[path] = index
        checked.append((path, content.encode("utf-8")))
    return checked


def read(path):
    """``(bytes, mode)`` of the file at ``path``, ``(None, None)`` when there is none.

    :raises OSError: ``path`` is there but is not a regular file, or cannot be read.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None, None
    if not stat.S_ISREG(info.st_mode):
        raise OSError("%s is there and is not a file" % path)
    with open(path, "rb") as f:
        return f.read(), stat.S_IMODE(info.st_mode)


def missing_folders(path):
    """The folders above ``path`` that do not exist, outermost first."""
    missing, folder = [], os.path.dirname(path)
    while folder and not os.path.isdir(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return missing[::-1]


def _replace(path, data, move):
    """Put ``data`` at ``path`` through a temporary file beside it and ``move``, then give it :data:`FILE_MODE`."""
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        move(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    # atomic_move gives a replaced file the old file's mode and a new one the umask's
    os.chmod(path, FILE_MODE)


def _text(data):
    return data.decode("utf-8", "replace")


def for_host(files, host):
    """The entries of ``files`` for ``host``: those whose ``host`` is it or that name none."""
    return [f for f in files if f.get("host") in (None, host)]


def write(files, check_mode, move):
    """Write ``files`` (``[{path, content}]``), each only where its bytes or mode differ.

    :param move: ``move(tmp, path)``, an atomic rename (``AnsibleModule.atomic_move``).
    :returns: ``(changed, results, folders, diff)``: ``results`` one ``{path, action, changed}`` per file, in
        their order, ``action`` one of :data:`CREATED`, :data:`UPDATED`, :data:`MODE`, :data:`UNCHANGED` (in
        check mode what would be done); ``folders`` the folders made and the files' folders set to :data:`DIR_MODE` (or that would be); ``diff`` one entry per
        folder made and per changed file, as ``ansible.builtin.file`` and ``ansible.builtin.copy`` give them.
    :raises ValueError: as :func:`check_files`, before anything is written.
    :raises OSError: a path that is not a file, a folder or file that cannot be made or written.
    """
    checked = check_files(files)
    results, folders, diff, moded = [], [], [], []
    for path, data in checked:
        new = [f for f in missing_folders(path) if f not in folders]
        for folder in new:
            if not check_mode:
                os.mkdir(folder)
                # mkdir's mode is cut by the umask
                os.chmod(folder, DIR_MODE)
            diff.append({"before": {"path": folder, "state": "absent"}, "after": {"path": folder, "state": "directory"}})
        folders.extend(new)
        parent = os.path.dirname(path)
        # the files' own folder is kept 0755 where it was there already, as the file task before this module did
        dir_mode = None if parent in folders or parent in moded else stat.S_IMODE(os.stat(parent).st_mode)
        if dir_mode not in (None, DIR_MODE):
            if not check_mode:
                os.chmod(parent, DIR_MODE)
            diff.append({"before": {"path": parent, "mode": "%04o" % dir_mode}, "after": {"path": parent, "mode": "%04o" % DIR_MODE}})
            moded.append(parent)
        before, mode = (None, None) if new else read(path)
        if before is None:
            action = CREATED
        elif before != data:
            action = UPDATED
        elif mode != FILE_MODE:
            action = MODE
        else:
            action = UNCHANGED
        if action == MODE:
            if not check_mode:
                os.chmod(path, FILE_MODE)
            diff.append({"before": {"path": path, "mode": "%04o" % mode}, "after": {"path": path, "mode": "%04o" % FILE_MODE}})
        elif action != UNCHANGED:
            if not check_mode:
                _replace(path, data, move)
            diff.append({"before_header": path, "before": "" if before is None else _text(before),
                         "after_header": path, "after": _text(data)})
        results.append({"path": path, "action": action, "changed": action != UNCHANGED})
    changed = bool(folders) or bool(moded) or any(r["changed"] for r in results)
    return changed, results, folders + moded, diff
