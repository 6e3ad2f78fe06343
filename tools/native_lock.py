#!/usr/bin/env python
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make the native runtime's hash-pinned locks (roles/runtime/files/native-locks), run by a maintainer with network.

    python tools/native_lock.py --vendor nvidia --engine vllm                 one lock: nvidia-vllm-0.23.0.txt
    python tools/native_lock.py --vendor nvidia --engine vllm --router        nvidia-vllm-0.23.0+sglang-router-0.3.2.txt
    python tools/native_lock.py --router                                      sglang-router-0.3.2.txt
    python tools/native_lock.py --shipped                                     every lock the collection ships, again
    ... --index-url https://mirror.example/simple --out /srv/locks/x.txt      a site's own lock (launchcard_runtime_native_lock)

What a lock resolves (the engines' packages and their one index) is plugins/plugin_utils/_vendors.py's
DEFAULT_NATIVE and ROUTER_NATIVE; its file name is _native_locks.lock_name. pip resolves it for each ``--python``
on manylinux for ``--arch`` with glibc up to ``--glibc`` (``pip install --dry-run --report``: pip's
installation report, docs/html/reference/installation-report.md, names each file it would install with its
sha256), from that index alone: ``PIP_CONFIG_FILE`` is set to os.devnull (pip's configuration.py: then it
loads no configuration file) and the ``PIP_*`` variables that add an index or links are dropped. The pins must
be the same for every Python; each pin then lists the hash of each Python's file. pip downloads the wheels to
read their metadata where the index serves none apart (PEP 658): CUDA stacks are gigabytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.launchcard.inference.plugins.plugin_utils import _native_locks  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.launchcard.inference.plugins.plugin_utils import _vendors  # noqa: E402  pylint: disable=wrong-import-position

# The locks the collection ships (docs/development.md, Native locks): vendor, engines, router.
SHIPPED = (
    ("nvidia", ("vllm",), False),
    ("nvidia", ("vllm",), True),
    ("nvidia", ("sglang",), False),
    ("nvidia", ("sglang",), True),
    ("nvidia", (), True),
)
# PIP_* variables that would add an index, links or constraints to the one index of the lock
_INDEX_ENV = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_CONSTRAINT",
              "PIP_REQUIREMENT", "PIP_TRUSTED_HOST")


def platforms(arch, glibc):
    """The manylinux platform tags of ``arch`` for glibc 2.17 up to ``glibc`` (PEP 600; pip's --platform takes
    each tag as given, it does not add the older ones), with their PEP 599 aliases."""
    major, minor = (int(x) for x in glibc.split("."))
    tags = ["manylinux_%d_%d_%s" % (major, m, arch) for m in range(minor, 16, -1)]
    return tags + ["manylinux2014_%s" % arch]


def resolve(packages, index_url, python, arch, glibc, pip_config=False):
    """``{pin: (name, version, extras, sha256)}`` of what pip installs for ``packages`` on ``python``, from
    ``index_url`` alone (with ``pip_config``: through the machine's pip configuration, a local mirror of that index);
    the extras are those the set asks of each (_native_locks.demanded_extras)."""
    env = dict(os.environ)
    if not pip_config:
        env = dict((k, v) for k, v in env.items() if k not in _INDEX_ENV)
        env["PIP_CONFIG_FILE"] = os.devnull
    with tempfile.TemporaryDirectory(prefix="lc-native-lock-") as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--dry-run", "--ignore-installed",
               "--quiet", "--only-binary=:all:", "--implementation", "cp", "--python-version", python,
               "--target", os.path.join(tmp, "target"), "--report", report] + ([] if pip_config else ["--index-url", index_url])
        if glibc:
            for tag in platforms(arch, glibc):
                cmd += ["--platform", tag]
        res = subprocess.run(cmd + list(packages), env=env, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise SystemExit("pip could not resolve %s for Python %s from %s:\n%s" % (
                " ".join(packages), python, index_url, (res.stdout + res.stderr)[-3000:]))
        with open(report, encoding="utf-8") as f:
            items = json.load(f)["install"]
    requires = dict((_native_locks.canonical(i["metadata"]["name"]), i["metadata"].get("requires_dist") or [])
                    for i in items)
    requested = dict((_native_locks.canonical(i["metadata"]["name"]), i.get("requested_extras") or [])
                     for i in items if i.get("requested"))
    extras = _native_locks.demanded_extras(requires, requested, {"python_version": python, "platform_machine": arch,
                                                                 "python_full_version": python + ".0"})
    out = {}
    for item in items:
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        digest = (item.get("download_info", {}).get("archive_info", {}).get("hashes") or {}).get("sha256")
        if not digest:
            raise SystemExit("pip's report gives no sha256 for %s" % name)
        out["%s==%s" % (name, version)] = (name, version, extras[_native_locks.canonical(name)], digest)
    return out


def make(vendor, engines, router, pythons, arch, glibc, index_url=None, out=None, pip_config=False):
    """Write one lock; returns its path."""
    req = _vendors.native_requirements(vendor, engines, router)
    index_url = index_url or req["index_url"]
    by_python = dict((py, resolve(req["packages"], index_url, py, arch, glibc, pip_config)) for py in pythons)
    pins = set(by_python[pythons[0]])
    for py, found in by_python.items():
        if set(found) != pins:
            raise SystemExit("the pins differ between Python %s and %s (%s): make one lock per Python" % (
                pythons[0], py, ", ".join(sorted(pins ^ set(found)))))
    name = _native_locks.lock_name(vendor, engines, router)
    path = out or os.path.join(_native_locks.LOCK_DIR, name)
    lines = [
        "# launchcard.inference native lock: %s%s (roles/runtime installs it: pip install --require-hashes -r)"
        % (" ".join(req["packages"]), " for %s accelerators" % vendor if engines else ""),
        "# index-url: %s" % index_url,
        "# made by tools/native_lock.py on %s for CPython %s on manylinux %s (%s)%s" % (
            time.strftime("%Y-%m-%d", time.gmtime()), ", ".join(pythons), arch,
            "glibc 2.17 to %s" % glibc if glibc else "the platform tags of the machine that made it",
            ", resolved through the pip configuration of a machine that mirrors that index" if pip_config else ""),
    ]
    for pin in sorted(pins, key=lambda p: _native_locks.canonical(p.split("==")[0])):
        name, version, extras, _digest = by_python[pythons[0]][pin]
        extras = sorted(set().union(*(by_python[py][pin][2] for py in pythons)))
        lines.append(_native_locks.pin_line(name, version, extras, sorted({by_python[py][pin][3] for py in pythons})))
    text = "\n".join(lines) + "\n"
    _native_locks.parse(text, path)  # what the runtime role will accept
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--vendor", choices=_vendors.VENDORS, default="nvidia")
    parser.add_argument("--engine", action="append", choices=sorted(_vendors.ENGINE_VERSIONS), default=[])
    parser.add_argument("--router", action="store_true", help="with the SGLang router")
    parser.add_argument("--shipped", action="store_true", help="every lock the collection ships")
    parser.add_argument("--python", action="append", help="the hosts' Python (repeat); default: this one's")
    parser.add_argument("--arch", default="x86_64")
    parser.add_argument("--glibc", help="the oldest glibc of the hosts (RHEL 9: 2.34); unset: this machine's own "
                                        "platform tags (pip's default), for --python of this machine alone")
    parser.add_argument("--index-url", help="one index in place of the packages' own (a mirror)")
    parser.add_argument("--out", help="the lock's path (default: roles/runtime/files/native-locks/NAME)")
    parser.add_argument("--use-pip-config", action="store_true",
                        help="resolve through this machine's pip configuration (its mirror of the index), not the "
                             "index alone; the lock still names the index, and its hashes hold the files to it")
    args = parser.parse_args(argv)
    pythons = args.python or ["%d.%d" % sys.version_info[:2]]
    here = "%d.%d" % sys.version_info[:2]
    if not args.glibc and (pythons != [here] or args.arch != os.uname().machine):
        parser.error("--glibc is needed for a Python or an arch other than this machine's (%s, %s)"
                     % (here, os.uname().machine))
    todo = SHIPPED if args.shipped else [(args.vendor, tuple(args.engine), args.router)]
    if not args.shipped and not args.engine and not args.router:
        parser.error("name an --engine, --router, or --shipped")
    for vendor, engines, router in todo:
        path = make(vendor, engines, router, pythons, args.arch, args.glibc, args.index_url,
                    None if args.shipped else args.out, args.use_pip_config)
        print(os.path.relpath(os.path.realpath(path), ROOT))


if __name__ == "__main__":
    main()
