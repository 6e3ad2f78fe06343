# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine_argv module's first-deploy path, in-process: the image pulled by digest for the check, removed again
when the engine rejects the argv, kept (a change) when it accepts it; nothing pulled in check mode; the credentials
only in a root-only file, the mirrors in the registries configuration podman reads. podman is the one part
simulated (no container engine here): a script that keeps an image store in a directory and runs the parse-only
program with this Python over the sandbox's stand-in SGLang parser, as the stand-in image does
(tests/e2e/test_container_faults_sandbox.py runs the real podman)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.modules import engine_argv
from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as images

ROOT = Path(__file__).resolve().parents[4]
STANDIN_SRC = ROOT / "tests" / "sandbox" / "standin_engine" / "src"
REF = "docker.io/lmsysorg/sglang@sha256:" + "a" * 64
SECRET = "s3cret-Pa55"

FAKE_PODMAN = textwrap.dedent('''\
    #!{python}
    import json, os, stat, subprocess, sys
    state = os.environ["FAKE_PODMAN_STATE"]
    store = os.path.join(state, "images.json")
    held = json.load(open(store)) if os.path.exists(store) else []
    args = sys.argv[1:]
    with open(os.path.join(state, "calls.jsonl"), "a") as f:
        f.write(json.dumps(args) + "\\n")
    if args[:2] == ["image", "exists"]:
        sys.exit(0 if args[2] in held else 1)
    if args[0] == "pull":
        seen = {{"registries_conf": None, "auth": None, "auth_mode": None}}
        conf = os.environ.get("CONTAINERS_REGISTRIES_CONF")
        if conf:
            seen["registries_conf"] = open(conf).read()
        if "--authfile" in args:
            path = args[args.index("--authfile") + 1]
            seen["auth"], seen["auth_mode"] = json.load(open(path)), stat.S_IMODE(os.stat(path).st_mode)
        json.dump(seen, open(os.path.join(state, "pull.json"), "w"))
        if os.environ.get("FAKE_PODMAN_PULL_FAILS"):
            sys.stderr.write("Error: initializing source: manifest unknown\\n")
            sys.exit(125)
        json.dump(held + [args[-1]], open(store, "w"))
        sys.exit(0)
    if args[0] == "rmi":
        if args[1] not in held:
            sys.stderr.write("Error: %s: image not known\\n" % args[1])
            sys.exit(1)
        json.dump([i for i in held if i != args[1]], open(store, "w"))
        sys.exit(0)
    if args[0] == "run":
        conf = os.environ.get("CONTAINERS_CONF")
        json.dump({{"args": args[:args.index("--entrypoint")], "containers_conf": conf and open(conf).read()}},
                  open(os.path.join(state, "run.json"), "w"))
        image = args[args.index("python3") + 1]
        if image not in held:
            sys.stderr.write("Error: %s: image not known\\n" % image)
            sys.exit(125)
        rest = args[args.index("python3") + 2:]
        sys.exit(subprocess.call([sys.executable] + rest, env=dict(os.environ, PYTHONPATH={src!r})))
    sys.exit(2)
''')


@pytest.fixture
def podman(tmp_path, monkeypatch):
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    script = bin_dir / "podman"
    script.write_text(FAKE_PODMAN.format(python=sys.executable, src=str(STANDIN_SRC)))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bin_dir, os.environ["PATH"]))
    monkeypatch.setenv("FAKE_PODMAN_STATE", str(state))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()

    def held():
        path = state / "images.json"
        return json.loads(path.read_text()) if path.exists() else []

    def calls():
        return [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]

    def pulled():
        return json.loads((state / "pull.json").read_text())

    def ran():
        return json.loads((state / "run.json").read_text())

    return {"held": held, "calls": calls, "pulled": pulled, "ran": ran, "tmp": tmp_path / "tmp"}


def call(capsys, args, check_mode=False):
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            engine_argv.main()
    return info.value.code, json.loads(capsys.readouterr().out)


def check(tokens, pull=True, **kw):
    return dict({"key": "k", "engine": "sglang", "tokens": ["--model-path", "m"] + tokens, "runtime": "podman",
                 "image": REF, "pull": pull}, **kw)


MIRRORS = {"docker.io": [{"location": "198.18.12.1:5000", "insecure": True}]}
CREDENTIALS = {"docker.io": {"username": "ops", "password": SECRET}}


def test_a_rejected_argv_removes_the_image_pulled_for_it(podman, capsys):
    conf = images.podman_containers_conf(False)
    rc, out = call(capsys, {"checks": [check(["--tp-sise", "2"], run_args=["--cgroups=disabled"], containers_conf=conf)],
                            "registries_conf": images.podman_registries_conf(MIRRORS),
                            "auth": images.registry_auth(CREDENTIALS, MIRRORS)})
    assert rc == 0 and out["changed"] is False, out
    res = out["results"][0]
    assert (res["status"], res["flag"], res["near"][:1], res["pulled"]) == ("rejected", "--tp-sise", ["--tp-size"], True)
    assert podman["held"]() == []  # left as it was
    assert [c[0] for c in podman["calls"]()] == ["image", "pull", "run", "rmi"]
    seen = podman["pulled"]()
    # the runtime role's mirrors and the credentials, in a root-only file, never on the command line
    assert seen["registries_conf"] == images.podman_registries_conf(MIRRORS)
    assert seen["auth"] == images.registry_auth(CREDENTIALS, MIRRORS) and seen["auth_mode"] == 0o600
    assert not any(SECRET in " ".join(c) or "b3BzOnMzY3JldC1QYTU1" in " ".join(c) for c in podman["calls"]())
    assert SECRET not in json.dumps(out)
    assert list(podman["tmp"].iterdir()) == []  # the temporary files are gone
    # the container ran as the host's units run theirs, under the runtime role's containers.conf setting
    assert podman["ran"]() == {"args": ["run", "--rm", "--pull", "never", "--network", "none", "--cgroups=disabled"],
                               "containers_conf": conf}


def test_an_accepted_argv_keeps_the_image_and_reports_a_change(podman, capsys):
    rc, out = call(capsys, {"checks": [check(["--tp-size", "2"])]})
    assert rc == 0 and out["changed"] is True and out["results"][0]["status"] == "ok", out
    assert podman["held"]() == [REF]
    assert podman["pulled"]() == {"registries_conf": None, "auth": None, "auth_mode": None}
    # the next run finds it: no pull, no change
    rc, out = call(capsys, {"checks": [check(["--tp-sise", "2"])]})
    assert out["changed"] is False and out["results"][0]["pulled"] is False and podman["held"]() == [REF]
    assert [c[0] for c in podman["calls"]()][-2:] == ["image", "run"]


def test_check_mode_pulls_nothing_and_a_failed_pull_is_reported(podman, capsys, monkeypatch):
    rc, out = call(capsys, {"checks": [check(["--tp-sise", "2"])]}, check_mode=True)
    res = out["results"][0]
    assert (rc, out["changed"], res["status"]) == (0, False, "unavailable") and "check mode" in res["message"]
    assert [c[0] for c in podman["calls"]()] == ["image"]
    monkeypatch.setenv("FAKE_PODMAN_PULL_FAILS", "1")
    rc, out = call(capsys, {"checks": [check([])]})
    res = out["results"][0]
    assert (rc, out["changed"], res["status"]) == (0, False, "unavailable"), out
    assert "pulling %s for the check failed: Error: initializing source: manifest unknown" % REF in res["message"]
    assert podman["held"]() == []


def test_preflight_yml_keeps_nothing_and_a_refusal_elsewhere_removes_a_kept_pull(podman, capsys):
    rc, out = call(capsys, {"checks": [check(["--tp-size", "2"])], "keep": False})
    assert (rc, out["changed"], out["results"][0]["status"], podman["held"]()) == (0, False, "ok", [])
    call(capsys, {"checks": [check(["--tp-size", "2"])]})
    assert podman["held"]() == [REF]
    # another host's check was refused: the image this host pulled and kept goes again (twice: nothing left)
    rc, out = call(capsys, {"remove": [{"runtime": "podman", "image": REF}]})
    assert (rc, out["changed"], podman["held"]()) == (0, True, [])
    rc, out = call(capsys, {"remove": [{"runtime": "podman", "image": REF}]})
    assert (rc, out["changed"]) == (0, False)
    rc, out = call(capsys, {"remove": [{"runtime": "podman", "image": REF}]}, check_mode=True)
    assert out["changed"] is False
