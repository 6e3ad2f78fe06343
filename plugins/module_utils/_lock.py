# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run lock: one JSON file per lock on a host, so two runs never change the same fleet at once.

Pure Python, no Ansible import (shipped inside the ``preflight``, ``host_state`` and ``run_lock`` modules).

A lock file (default ``/var/lib/launchcard/lock.json`` for a host, ``/var/lib/launchcard/fleet-lock.json``
on the fleet's anchor host) holds its holder, a JSON object::

    {"version": 1,
     "run_id": "20261130T130055Z-1a2b3c4d",   # one id per ansible-playbook run, the same on every host
     "user": "alice",                          # who ran it (the controller's login user)
     "controller": "ops-laptop",               # the controller's host name
     "playbook": "deploy.yml",
     "card": "sha256:<hex>",                   # the card (or cards, comma separated) the run applies
     "scope": "host" | "fleet",
     "since": "2026-11-30T13:00:56Z"}          # UTC, when the lock was taken

Every operation on a lock file holds an exclusive ``flock`` on ``<path>.guard`` for its few milliseconds, so
two runs that reach one host at the same moment are serialised: one takes the lock, the other finds it
held. The lock file itself is created with ``O_CREAT | O_EXCL`` (an existing file is never overwritten by
an acquire), replaced atomically (``os.replace``) only when a stale lock is broken on request, and removed
only by the run that holds it. ``flock`` is advisory and local: the directory must be on a local
filesystem (``/var/lib`` is).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os

VERSION = 1
HOLDER_KEYS = ("run_id", "user", "controller", "playbook", "card", "scope", "since")


class LockError(Exception):
    """A lock file that cannot be read or written (permissions, a file that is not a lock)."""


def utc_now():
    """The current UTC time as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def describe(holder):
    """One line naming a holder, for messages.

    ``alice@ops-laptop, deploy.yml, run 20261130T130055Z-1a2b3c4d, card sha256:0f1e2d3c4b5a, since
    2026-11-30 13:00:56 UTC``; a file that is not a lock reads ``an unreadable lock file (...)``.
    """
    if not holder:
        return "nobody"
    if holder.get("unreadable"):
        return "an unreadable lock file (%s)" % holder["unreadable"]
    card = str(holder.get("card") or "?")
    if card.startswith("sha256:"):
        card = ",".join(c[:19] for c in card.split(","))
    since = str(holder.get("since") or "?").replace("T", " ").replace("Z", " UTC")
    return "%s@%s, %s, run %s, card %s, since %s" % (
        holder.get("user") or "?", holder.get("controller") or "?", holder.get("playbook") or "?",
        holder.get("run_id") or "?", card, since)


def _holder(holder, scope, now):
    run_id = str((holder or {}).get("run_id") or "")
    if not run_id:
        raise ValueError("holder.run_id is required")
    out = dict((k, holder.get(k)) for k in HOLDER_KEYS if holder.get(k) is not None)
    out.update(version=VERSION, run_id=run_id, scope=scope or holder.get("scope") or "host", since=now or utc_now())
    return out


@contextlib.contextmanager
def _guard(path):
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd = os.open(path + ".guard", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor drops the flock


def _read(path):
    """The holder in ``path``; None when there is no lock; ``{"unreadable": why}`` for a damaged file."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except (IOError, OSError) as exc:
        raise LockError("%s: %s" % (path, exc))
    try:
        holder = json.loads(text)
    except ValueError as exc:
        return {"unreadable": "not JSON: %s" % exc}
    if not isinstance(holder, dict) or not holder.get("run_id"):
        return {"unreadable": "no run_id"}
    return holder


def _write_new(path, holder):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(holder, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read(path):
    """The holder of the lock at ``path`` (dict), or None when nobody holds it. Takes the guard, changes nothing.

    :raises LockError: the file exists but cannot be read.
    """
    if not os.path.exists(path):
        return None
    with _guard(path):
        return _read(path)


def acquire(path, holder, scope="host", break_stale=False, check_mode=False, now=None):
    """Take the lock at ``path`` for ``holder`` (a dict with at least ``run_id``).

    - Nobody holds it: it is created (``O_EXCL``) with ``holder`` and ``since`` = now (UTC).
    - The same run holds it (same ``run_id``): nothing changes (re-entrant; the first ``since`` stays).
    - Another run holds it: refused, unless ``break_stale``; then it is replaced and the broken holder returned.
    - ``check_mode``: nothing is written and nothing is acquired; ``would_acquire`` says what a real run would do.

    :returns: ``{"path", "scope", "acquired": bool, "would_acquire": bool, "changed": bool, "reentrant": bool,
        "held_by": holder or None (another run's, when refused), "broken": holder or None, "holder": the holder
        now on file (or that would be)}``.
    :raises ValueError: ``holder`` has no ``run_id``.
    :raises LockError: the lock file cannot be read or written.
    """
    mine = _holder(holder, scope, now)
    result = {"path": path, "scope": mine["scope"], "acquired": False, "would_acquire": False, "changed": False,
              "reentrant": False, "held_by": None, "broken": None, "holder": None}
    if check_mode and not os.path.isdir(os.path.dirname(path) or "."):
        result.update(would_acquire=True, changed=True, holder=mine)
        return result
    with (_guard(path) if not check_mode else contextlib.nullcontext()):
        current = _read(path)
        if current is not None and current.get("run_id") == mine["run_id"]:
            result.update(acquired=not check_mode, would_acquire=True, reentrant=True, holder=current)
            return result
        if current is not None and not break_stale:
            result.update(held_by=current, holder=current)
            return result
        result.update(changed=True, broken=current, holder=mine, would_acquire=True)
        if check_mode:
            return result
        result["acquired"] = True
        try:
            if current is None:
                _write_new(path, mine)
            else:
                tmp = "%s.%d.tmp" % (path, os.getpid())
                if os.path.exists(tmp):
                    os.unlink(tmp)
                _write_new(tmp, mine)
                os.replace(tmp, path)
        except (IOError, OSError) as exc:
            raise LockError("%s: %s" % (path, exc))
    return result


def release(path, run_id, check_mode=False):
    """Drop the lock at ``path`` if (and only if) the run ``run_id`` holds it.

    :returns: ``{"path", "released": bool, "changed": bool, "held_by": holder or None}``; ``held_by`` names
        another run's lock, which is left in place (a run never releases a lock it does not hold).
    :raises LockError: the lock file cannot be read or removed.
    """
    result = {"path": path, "released": False, "changed": False, "held_by": None}
    if not os.path.exists(path):
        return result
    with (_guard(path) if not check_mode else contextlib.nullcontext()):
        current = _read(path)
        if current is None:
            return result
        if current.get("run_id") != run_id:
            result["held_by"] = current
            return result
        result.update(released=True, changed=True)
        if not check_mode:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except (IOError, OSError) as exc:
                raise LockError("%s: %s" % (path, exc))
    return result


def apply_all(state, paths, holder, break_stale=False, check_mode=False):
    """Take (``state="present"``) or release (``"absent"``) each lock of ``paths`` (``[{"path", "scope"}]``).

    :returns: ``(results, held_by, broken, changed)``: the result of :func:`acquire` or :func:`release` per
        path; ``"<path> held by <holder>"`` for each lock another run holds; the same for each lock broken
        on request; whether any file changed.
    :raises ValueError: no ``holder["run_id"]`` when taking, or a path that is not absolute.
    :raises LockError: a lock file cannot be read or written.
    """
    results, held, broken, changed = [], [], [], False
    for n, item in enumerate(paths or ()):
        path = (item or {}).get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError("paths[%d].path: an absolute path is required, found %r" % (n, path))
        if state == "present":
            res = acquire(path, holder, scope=item.get("scope") or "host", break_stale=break_stale,
                          check_mode=check_mode)
            if res["broken"]:
                broken.append("%s held by %s" % (path, describe(res["broken"])))
        else:
            res = release(path, (holder or {}).get("run_id"), check_mode=check_mode)
        if res["held_by"]:
            held.append("%s held by %s" % (path, describe(res["held_by"])))
        changed = changed or res["changed"]
        results.append(res)
    return results, held, broken, changed


def release_all(spec, check_mode=False):
    """Release this run's locks as a record call is given them: ``spec`` is ``{"run_id", "paths": [{"path",
    "scope"}]}`` (None: nothing to do).

    :returns: None without ``spec``, else ``{"released": [paths released], "held_by": ["<path> held by
        <holder>"]}`` (a lock another run holds is left in place).
    :raises ValueError: a path that is not absolute.
    :raises LockError: a lock file cannot be read or written.
    """
    if not spec:
        return None
    results, held, dummy, dummy2 = apply_all("absent", spec.get("paths") or [], {"run_id": spec.get("run_id")},
                                             check_mode=check_mode)
    return {"released": [r["path"] for r in results if r["released"]], "held_by": held}


def refusal(conflicts):
    """The refusal message for ``[(host or None, path, holder)]``: who holds which lock, and how to break a stale one."""
    lines = ["another run holds the lock of this fleet; nothing was changed:"]
    for host, path, holder in conflicts:
        lines.append("  %s%s held by %s" % ("%s:" % host if host else "", path, describe(holder)))
    lines.append("Wait for that run to end. If it is no longer running (killed, or its controller lost), "
                 "break its locks with -e launchcard_lock_break=true.")
    return "\n".join(lines)


def takes_now(spec):
    """Whether the preflight call's ``lock`` option has a lock to take in the call (one not deferred): the call
    then makes its checks on the host, to take it only where they pass."""
    return bool(spec) and any(not (p or {}).get("defer") for p in spec.get("paths") or [])


def not_taken(spec, reason):
    """The preflight call's lock result where it takes nothing (``reason`` says why)."""
    paths = spec.get("paths") or []
    deferred = [{"path": p.get("path"), "scope": p.get("scope") or "host"} for p in paths if (p or {}).get("defer")]
    return {"taken": False, "reason": reason, "held_by": [], "broken": [], "locks": [], "deferred": deferred}


FAILED_CHECK = "not taken: a check of this host failed"


def preflight_lock(module, spec, failed_checks):
    """The preflight module's run lock of its host (its ``lock`` option), taken after the checks; see that option."""
    if not spec:
        return None
    if failed_checks:
        return not_taken(spec, FAILED_CHECK)
    out = not_taken(spec, "")
    paths = spec.get("paths") or []
    deferred = out["deferred"]
    try:
        # the deferred paths in check mode: a lock another run holds is reported, nothing is written
        results, held, broken, dummy = apply_all(
            "present", [p for p in paths if not (p or {}).get("defer")], spec.get("holder") or {},
            bool(spec.get("break_stale")), module.check_mode)
        later = apply_all("present", deferred, spec.get("holder") or {}, False, True)
    except (ValueError, LockError) as exc:
        module.fail_json(msg="lock: %s" % exc)
    results, held = results + later[0], held + later[1]
    for line in broken:
        module.warn("run lock broken on request: %s" % line)
    if held and module.check_mode:
        for line in held:
            module.warn("run lock: %s (check mode: nothing is changed, a real run would be refused)" % line)
    out.update(taken=not held and not module.check_mode and not deferred, held_by=held, broken=broken, locks=results,
               reason="held by another run" if held else ("check mode" if module.check_mode else (
                   "deferred: checked here, taken where the run changes the host" if deferred else "")))
    return out
