# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make compat`: the built collection and the unit tests on every supported ansible-core.

The supported cores are the .venv's (requirements.txt) and one file per other core here,
tests/compat/ansible-core-X.Y.txt, whose `# python: X.Y` line names the controller Python it runs on.
For each of those files: a virtualenv of its lines on that Python under the cache directory (rebuilt only
when what it installs changes), the tarball `make build` wrote installed into an empty collections path,
`ansible-doc` of every documented plugin and every role (any output on stderr, a deprecation warning
included, fails), then the tests/unit files that reach ansible-core (core_facing_tests) under that core. The .venv's
core gets the ansible-doc check only: `make units` runs all its unit tests. Arguments: the X.Y of the cores to run (default: all); `--venvs` before them
only builds their virtualenvs and prints their paths (`make sanity-compat` runs tests/sanity/run.sh in each).
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml
from ansible.release import __version__ as ansible_version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "compat")
CACHE = os.environ.get("LAUNCHCARD_COMPAT_CACHE", "/var/cache/launchcard-compat")
PYENV = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
# plugins/<dir> that ansible-doc documents by that type name (action plugins share their module's docs)
DOC_TYPES = ("module", "filter", "lookup", "test", "callback", "inventory", "connection", "become", "cache",
             "strategy", "vars")
COLLECTION = "launchcard.inference"
# ansible-core's own internal collection, not this one: ansible-doc -t role warns about it on 2.20 and 2.21 (runs here),
# ansible/ansible#85689; the only stderr line the check lets through
CORE_NOISE = re.compile(r"^\[WARNING\]: Collection at '[^']*/ansible/_internal/ansible_collections/ansible/_protomatter'"
                        r" does not have a MANIFEST\.json file, nor has it galaxy\.yml: cannot detect version\.$")


class CompatError(Exception):
    pass


def cores():
    """[(X.Y, its file, the X.Y of its Python, its ansible-core==pin)] of tests/compat/ansible-core-*.txt."""
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "ansible-core-*.txt"))):
        with open(path) as f:
            text = f.read()
        python = re.search(r"^# python: (3\.\d+)$", text, re.M)
        pin = re.search(r"^ansible-core==((\d+\.\d+)\.\d+)\s*$", text, re.M)
        if not python or not pin or os.path.basename(path) != "ansible-core-%s.txt" % pin.group(2):
            raise CompatError("%s: needs a '# python: 3.N' line and an ansible-core==X.Y.Z pin matching its name" % path)
        out.append((pin.group(2), path, python.group(1), pin.group(0).strip()))
    return out


def find_python(version):
    """A working interpreter of X.Y: a pyenv build, else pythonX.Y on PATH (as tests/sanity/run.sh looks)."""
    candidates = sorted(glob.glob(os.path.join(PYENV, "versions", version + ".*", "bin", "python" + version)), reverse=True)
    candidates.append(shutil.which("python" + version))
    for path in filter(None, candidates):
        res = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=False)
        if res.returncode == 0 and res.stdout.strip() == version:
            return path
    return None


def constraints():
    """requirements.txt less its ansible-core pin: the versions of everything else a compat virtualenv installs."""
    with open(os.path.join(ROOT, "requirements.txt")) as f:
        return "".join(ln for ln in f if not ln.startswith("ansible-core=="))


def virtualenv(core, req, python):
    """The cached virtualenv of `req` on `python`, built again only when its inputs changed."""
    venv = os.path.join(CACHE, "ansible-core-%s" % core)
    with open(req) as f, open(os.path.join(HERE, "units.txt")) as g:
        inputs = f.read() + g.read() + constraints()
    version = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True,
                             check=True).stdout
    stamp = hashlib.sha256((inputs + python + version).encode()).hexdigest()
    stamp_file = os.path.join(venv, ".launchcard-compat")
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two checkouts building the same virtualenv at once
        if os.path.exists(stamp_file) and open(stamp_file).read() == stamp:
            return venv
        print("compat: building %s (%s)" % (venv, python), file=sys.stderr, flush=True)
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([python, "-m", "venv", venv], check=True)
        with open(os.path.join(venv, "constraints.txt"), "w") as f:
            f.write(constraints())
        res = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "-r", req,
                              "-c", os.path.join(venv, "constraints.txt")], capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise CompatError("pip install -r %s failed:\n%s" % (req, (res.stdout + res.stderr)[-4000:]))
        with open(stamp_file, "w") as f:
            f.write(stamp)
    return venv


def documented(tree, kind):
    """What ansible-doc must list for `kind`, read from the tree (None: no such plugin directory)."""
    if kind == "role":
        paths = glob.glob(os.path.join(tree, "roles", "*", "meta", "argument_specs.yml"))
        return {os.path.basename(os.path.dirname(os.path.dirname(p))) for p in paths}
    if kind == "module":
        return {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(tree, "plugins", "modules", "*.py"))}
    folder = os.path.join(tree, "plugins", kind)
    if not os.path.isdir(folder):
        return None
    # a filter's or test's documentation is a .yml of its name; other plugins carry it in their .py
    ext = ".yml" if kind in ("filter", "test") else ".py"
    return {os.path.basename(p)[:-len(ext)] for p in glob.glob(os.path.join(folder, "*" + ext))}


def doc_check(label, bindir, tarball):
    """Install the tarball alone into an empty collections path and read every plugin's and role's docs."""
    with tempfile.TemporaryDirectory(prefix="launchcard-compat-") as tmp:
        coll = os.path.join(tmp, "collections")
        cfg = os.path.join(tmp, "ansible.cfg")
        with open(cfg, "w") as f:
            f.write("[defaults]\ncollections_path = %s\ncollections_scan_sys_path = False\n" % coll)
        env = dict(os.environ, ANSIBLE_CONFIG=cfg, ANSIBLE_HOME=os.path.join(tmp, "home"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_DEPRECATION_WARNINGS="1", PATH=bindir + os.pathsep + os.environ["PATH"])
        env.pop("ANSIBLE_COLLECTIONS_PATH", None)

        def run(*args):
            res = subprocess.run([os.path.join(bindir, args[0])] + list(args[1:]), cwd=tmp, env=env,
                                 capture_output=True, text=True, check=False)
            said = [ln for ln in res.stderr.splitlines() if ln.strip() and not CORE_NOISE.match(ln)]
            if res.returncode != 0 or said:
                raise CompatError("%s: %s: rc %d\n%s" % (label, " ".join(args[:6]), res.returncode,
                                                         "\n".join(said)[-4000:] or res.stdout[-4000:]))
            return res.stdout

        # --no-deps: galaxy.yml's dependencies are not needed to read docs, and there is no Galaxy here
        run("ansible-galaxy", "collection", "install", "--no-deps", "-p", coll, tarball)
        tree = os.path.join(coll, "ansible_collections", *COLLECTION.split("."))
        counts = []
        for kind in DOC_TYPES + ("role",):
            want = documented(tree, kind)
            if want is None:
                continue
            listed = json.loads(run("ansible-doc", "-t", kind, "-l", COLLECTION, "--json"))
            # a filter file may hold helpers without docs (ansible-doc lists them UNDOCUMENTED): not read
            names = sorted(n for n, d in listed.items() if kind == "role" or d != "UNDOCUMENTED")
            short = {n.rsplit(".", 1)[1] for n in names}
            if short != want:
                raise CompatError("%s: ansible-doc -t %s lists %s, the collection has %s"
                                  % (label, kind, sorted(short), sorted(want)))
            if names:
                out = run("ansible-doc", "-t", kind, *names)
                missing = [n for n in names if n not in out]
                if missing:
                    raise CompatError("%s: ansible-doc -t %s printed nothing for %s" % (label, kind, missing))
            counts.append("%d %s" % (len(names), kind))
        print("compat: %s: ansible-doc read %s, no warning" % (label, ", ".join(counts)), flush=True)


# a test reaches ansible-core when it imports it, the collection's plugins that do (filters, actions, modules), or runs
# its commands
CORE_FACING = re.compile(r"^\s*(from|import)\s+ansible\b|\bplugins\.(filter|action|modules|callback)\b"
                         r"|\bansible-(playbook|doc|galaxy|inventory)\b", re.M)
SIBLING = re.compile(r"^\s*(?:from|import)\s+(test_\w+)", re.M)


def core_facing_tests(root=ROOT):
    """The tests/unit files that reach ansible-core: the rest test the pure core, whose code no ansible-core
    version changes, and run once, under .venv's core (`make units`)."""
    texts = {}
    for path in sorted(glob.glob(os.path.join(root, "tests", "unit", "**", "test_*.py"), recursive=True)):
        with open(path) as f:
            texts[path] = f.read()
    facing = set(p for p, text in texts.items() if CORE_FACING.search(text))
    # a test that imports a sibling test module reaches whatever that one reaches
    grew = True
    while grew:
        grew = False
        for path, text in texts.items():
            siblings = set(os.path.join(os.path.dirname(path), m + ".py") for m in SIBLING.findall(text))
            if path not in facing and siblings & facing:
                facing.add(path)
                grew = True
    return [os.path.relpath(p, root) for p in sorted(facing)]


def units(label, venv):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), PYTHONDONTWRITEBYTECODE="1",
               PATH=os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"])
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    tests = core_facing_tests()
    print("compat: %s: the %d tests/unit files that reach ansible-core" % (label, len(tests)), flush=True)
    res = subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider"]
                         + tests, cwd=ROOT, env=env, check=False)
    if res.returncode != 0:
        raise CompatError("%s: tests/unit failed (rc %d)" % (label, res.returncode))


def main(argv):
    with open(os.path.join(ROOT, "galaxy.yml")) as f:
        tarball = os.path.join(ROOT, "build", "launchcard-inference-%s.tar.gz" % yaml.safe_load(f)["version"])
    only_venvs = argv[:1] == ["--venvs"]
    if not only_venvs and not os.path.exists(tarball):
        raise CompatError("no %s: run `make build` first" % tarball)
    chosen = set(argv[1:] if only_venvs else argv)
    todo = [c for c in cores() if not chosen or c[0] in chosen]
    missing = [(c[0], c[2]) for c in todo if not find_python(c[2])]
    if missing:
        raise CompatError("no interpreter for " + "; ".join(
            "ansible-core %s needs Python %s (python%s on PATH or a pyenv build under %s/versions)"
            % (core, python, python, PYENV) for core, python in missing))
    if only_venvs:
        for core, req, python, dummy in todo:
            print(virtualenv(core, req, find_python(python)), flush=True)
        return
    if not chosen:
        doc_check("ansible-core==%s of .venv" % ansible_version, os.path.dirname(sys.executable), tarball)
    for core, req, python, pin in todo:
        start = time.monotonic()
        venv = virtualenv(core, req, find_python(python))
        label = "%s on Python %s" % (pin, python)
        doc_check(label, os.path.join(venv, "bin"), tarball)
        units(label, venv)
        print("compat: %s passed in %.0f s" % (label, time.monotonic() - start), flush=True)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except CompatError as e:
        sys.exit("compat: %s" % e)
