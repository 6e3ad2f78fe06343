# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The native runtime's lock files: what the runtime role installs into the engines' virtualenv, hash-pinned.

Pure Python, no Ansible import (controller side: the runtime role's install, the units' requirements digest, the
preflight needs).

A lock is a pip requirements file in hash-checking mode: every line ``NAME==VERSION`` with one ``--hash`` or more
(pip docs, topics/secure-installs.md: with ``--require-hashes`` pip refuses a requirement not pinned with ``==``
and any file whose digest the requirement does not list). Its header records where its files come from, one
source only::

    # index-url: https://pypi.org/simple
    # find-links: /srv/launchcard-wheels        (a wheelhouse on the hosts; pip gets --no-index)

The install passes that source alone (``--index-url URL``, or ``--no-index --find-links DIR``), or the mirror
``launchcard_runtime_native_index_url`` in its place (``--index-url MIRROR``, still one index). A lock holding a
pip option line of its own (``--extra-index-url``, ``-i``, ``-f``, ``-r``, ...) is refused: pip's
req/req_file.py (``handle_option_line``) lets a file's ``--index-url`` replace the command line's and its
``--extra-index-url`` add to them, so such a lock could override the mirror or mix in another index.

Which lock: ``launchcard_runtime_native_lock`` (a path on the controller) where set; else the collection's lock
for the host's vendor and what its plan runs (:func:`lock_name`) in ``roles/runtime/files/native-locks``, made by
``tools/native_lock.py``. No such lock is an error naming the vendor, the engines and the variables: never an
install of unpinned dependencies.
"""

from __future__ import annotations

import hashlib
import os
import re

try:  # ansible-core requires packaging on the controller; ansible-test's import check runs without it
    from packaging.markers import default_environment
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # pragma: no cover
    default_environment = Requirement = canonicalize_name = None
    InvalidRequirement = ValueError

from ansible_collections.launchcard.inference.plugins.plugin_utils import _vendors

LOCK_VARIABLE = "launchcard_runtime_native_lock"
INDEX_VARIABLE = "launchcard_runtime_native_index_url"
# plugins/plugin_utils -> the collection root -> the runtime role's files
LOCK_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "roles", "runtime", "files", "native-locks")
SOURCES = ("index-url", "find-links")
_HEADER = re.compile(r"^#\s*(index-url|find-links):\s*(\S+)\s*$")
_HASH = re.compile(r"^--hash=(sha256|sha384|sha512):([0-9a-f]+)$")
_HASH_LEN = {"sha256": 64, "sha384": 96, "sha512": 128}


class LockError(ValueError):
    """A malformed lock, or no lock for a host (names the lock or the variables)."""


def canonical(name):
    """PEP 503's normalized project name (``Foo_Bar`` -> ``foo-bar``)."""
    return str(canonicalize_name(name))


def demanded_extras(requires, requested=None, environment=None):
    """The extras each distribution of a resolved set is installed with, for its lock line (``uvicorn[standard]==``).

    pip 23.0.1 (the pip a Debian 12 virtualenv gets: /usr/share/python-wheels) refuses in hash-checking mode a
    dependency asked for with an extra (``uvicorn[standard]>=0.15.0``, of fastapi-cli) that the lock pins without
    it ("all requirements must have their versions pinned with =="), and one pinned only with the extra where
    another asks for it plain (``uvicorn>=0.31.1``, of mcp). So a lock pins such a distribution twice, plain and
    with the extras the set asks of it, with the same hashes (:func:`pin_line`).

    :param requires: canonical name -> its ``Requires-Dist`` strings, for every distribution of the set.
    :param requested: canonical name -> extras asked for at the top (the lock's own packages).
    :param environment: PEP 508 marker environment of the hosts (default: this Python's).
    :returns: canonical name -> sorted extras.
    """
    env = dict(default_environment(), **(environment or {}))
    extras = dict((name, set((requested or {}).get(name, ()))) for name in requires)
    changed = True
    while changed:
        changed = False
        for name, lines in requires.items():
            for line in lines:
                req = Requirement(line)
                dep = canonical(req.name)
                if dep not in extras or not req.extras:
                    continue
                if req.marker is not None and not any(req.marker.evaluate(dict(env, extra=e))
                                                      for e in sorted(extras[name]) + [""]):
                    continue
                if set(req.extras) - extras[dep]:
                    extras[dep] |= set(req.extras)
                    changed = True
    return dict((name, sorted(e)) for name, e in extras.items())


def pin_line(name, version, extras, hashes):
    """A lock entry: ``name==version``, then each hash on a continuation line; with ``extras`` a second line
    ``name[extras]==version`` with the same hashes (see :func:`demanded_extras`)."""
    tail = "".join(" \\\n    --hash=sha256:%s" % h for h in hashes)
    lines = ["%s==%s%s" % (name, version, tail)]
    if extras:
        lines.append("%s[%s]==%s%s" % (name, ",".join(extras), version, tail))
    return "\n".join(lines)


def _good_hash(word):
    match = _HASH.match(word)
    return bool(match) and len(match.group(2)) == _HASH_LEN[match.group(1)]


def lock_name(vendor, engines, router=False):
    """The file name of the collection's lock for a host of ``vendor`` running ``engines`` (and the SGLang
    router): ``nvidia-vllm-0.23.0.txt``, ``nvidia-vllm-0.23.0+sglang-router-0.3.2.txt``; a host running the
    router alone has no vendor in it (the router uses no accelerator): ``sglang-router-0.3.2.txt``."""
    parts = ["%s-%s" % (e, _vendors.ENGINE_VERSIONS[e]) for e in sorted(set(engines))]
    if router:
        parts.append("sglang-router-%s" % _vendors.SGLANG_ROUTER_VERSION)
    return ("%s-" % vendor if engines else "") + "+".join(parts) + ".txt"


def parse(text, where):
    """The lock ``text`` (read from ``where``, named in errors): ``{"source": {"index-url"|"find-links": value},
    "pins": ["name==version", ...], "sha256": digest of the text, "text": text}``.

    :raises LockError: no source or two, a pip option line, a requirement not pinned with ``==`` or without a
        hash, a project pinned twice.
    """
    source, pins, seen = {}, [], set()
    logical, lines = [], text.splitlines()
    for number, raw in enumerate(lines, 1):
        header = _HEADER.match(raw.strip())
        if header:
            source.setdefault(header.group(1), []).append(header.group(2))
            continue
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        if logical and logical[-1][1].endswith("\\"):
            logical[-1] = (logical[-1][0], logical[-1][1][:-1].rstrip() + " " + line)
        else:
            logical.append((number, line))
    for number, line in logical:
        words = line.split()
        if words[0].startswith("-"):
            raise LockError("%s line %d: %s: a lock holds pinned requirements and their hashes only; its one "
                            "source is its '# index-url:' or '# find-links:' line" % (where, number, words[0]))
        hashes = [w for w in words if w.startswith("--hash=")]
        pin = " ".join(w for w in words if not w.startswith("--hash="))
        try:
            req = Requirement(pin)  # PEP 508: a name, extras, one specifier, a marker; no URL
        except InvalidRequirement:
            req = None
        specs = list(req.specifier) if req is not None and not req.url else []
        if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
            raise LockError("%s line %d: %r is not pinned with == (hash-checking mode needs NAME==VERSION)"
                            % (where, number, pin))
        bad = [h for h in hashes if not _good_hash(h)]
        if not hashes or bad:
            raise LockError("%s line %d: %s has %s (each requirement needs --hash=sha256:<64 hex digits> or more)"
                            % (where, number, pin, "a malformed hash %s" % bad[0] if bad else "no hash"))
        key = (canonical(req.name), tuple(sorted(req.extras)), str(req.marker or ""))
        if key in seen:
            raise LockError("%s line %d: %s is pinned twice" % (where, number, req.name))
        seen.add(key)
        pin = "%s==%s" % (req.name, specs[0].version)
        if pin not in pins:
            pins.append(pin)
    if sorted(source) != [k for k in SOURCES if k in source] or len(source) != 1 or len(list(source.values())[0]) != 1:
        found = ", ".join("%s: %s" % (k, v) for k, vs in sorted(source.items()) for v in vs)
        raise LockError("%s: a lock names exactly one source, a '# index-url: URL' or a '# find-links: DIR' line; "
                        "found %s" % (where, found or "none"))
    if not pins:
        raise LockError("%s: no pinned requirement" % where)
    kind, values = next(iter(source.items()))
    value = values[0]
    return {"source": {kind: value}, "pins": pins, "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "text": text}


def load(path, where=None):
    """The lock at ``path`` on the controller (:func:`parse`)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise LockError("%s: cannot read the lock %s: %s" % (where or path, path, exc))
    return parse(text, where or path)


def shipped(vendor, engines, router=False):
    """The path of the collection's lock for the host, or None where it ships none."""
    path = os.path.join(LOCK_DIR, lock_name(vendor, engines, router))
    return path if os.path.isfile(path) else None


def host_lock(vendor, engines, router=False, path=None):
    """The lock a host installs from (:func:`parse`, with its ``name``: ``path`` or the file's name):
    ``path`` (``launchcard_runtime_native_lock``) where given, else the collection's lock for its vendor (one
    without accelerators: ``nvidia``'s, the PyPI builds), engines and router.

    :raises LockError: a malformed lock; no lock for the host (naming the vendor, what it runs and the variables).
    """
    if path not in (None, ""):
        if not isinstance(path, str) or not os.path.isabs(os.path.expanduser(path)):
            raise LockError("%s must be an absolute path on the controller, found %r" % (LOCK_VARIABLE, path))
        return dict(load(os.path.expanduser(path), "%s (%s)" % (LOCK_VARIABLE, path)), name=path)
    vendor = vendor if vendor in _vendors.VENDORS else "nvidia"  # no accelerator: the PyPI builds, as pip gives them
    try:
        _vendors.native_requirements(vendor, engines, router)  # an engine with no pip install at all: its own message
    except _vendors.VendorError as exc:
        raise LockError(str(exc))
    found = shipped(vendor, engines, router)
    if found is None:
        raise LockError("no hash-pinned lock of %s for %s accelerators ships with this collection (%s in "
                        "roles/runtime/files/native-locks): make one with tools/native_lock.py against your index and "
                        "set %s to its path, set launchcard_runtime_native_packages to install your own, or run it "
                        "in a container" % (" + ".join(_what(engines, router)), vendor,
                                            lock_name(vendor, engines, router), LOCK_VARIABLE))
    return dict(load(found, "roles/runtime/files/native-locks/%s" % os.path.basename(found)),
                name=os.path.basename(found))


def _what(engines, router):
    return ["%s %s" % (e, _vendors.ENGINE_VERSIONS[e]) for e in sorted(set(engines))] + (
        ["sglang-router %s" % _vendors.SGLANG_ROUTER_VERSION] if router else [])


def pip_args(lock, mirror=None):
    """pip's arguments for an install from ``lock``: hash-checking, and one source (the lock's, or ``mirror``)."""
    if mirror not in (None, ""):
        if not isinstance(mirror, str) or not re.match(r"^(https?|file)://[^\s]+$", mirror):
            raise LockError("%s must be one index URL (http, https or file), found %r" % (INDEX_VARIABLE, mirror))
        return "--require-hashes --index-url %s" % mirror
    kind, value = list(lock["source"].items())[0]
    if kind == "find-links":
        return "--require-hashes --no-index --find-links %s" % value
    return "--require-hashes --index-url %s" % value


def native_gaps(host_plan):
    """Vendor -> what ``host_plan`` runs (engines, the router) that has no lock here for that vendor, for
    preflight's ``native_install`` check (the vendor the host shows is known only there)."""
    instances = (host_plan or {}).get("instances", [])
    engines = sorted({i["engine"] for i in instances if i.get("role") != "router"})
    router = any(i.get("role") == "router" for i in instances)
    if not instances:
        return {}
    gaps = {}
    for vendor in _vendors.VENDORS:
        if shipped(vendor, engines, router) is None:
            gaps[vendor] = engines + (["sglang-router"] if router else [])
    return gaps
