# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd_units: the secrets file and the units that read it; start-limit reset, queued starts.

A fake ``systemctl`` (a shell script, the only one on PATH) logs every call
and reports every named unit active and enabled; unit files and the secrets
file are real files in a temporary directory.
"""

from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.modules import systemd_units

TOKEN = "hf_unitTESTtoken0123456789abcdef"


@pytest.fixture
def box(host):
    tmp = str(host["tmp"])
    log = os.path.join(tmp, "systemctl.log")
    path = os.path.join(host["bin"], "systemctl")
    with open(path, "w") as f:
        f.write("""#!/bin/sh
PATH=/usr/bin:/bin
echo "$*" >> %s
if [ "$1" = show ]; then
  seen=0
  for a in "$@"; do
    if [ $seen = 1 ]; then
      printf 'Id=%%s\\nLoadState=loaded\\nActiveState=active\\nSubState=running\\nUnitFileState=enabled\\nNRestarts=0\\nExecMainPID=7\\n\\n' "$a"
    fi
    [ "$a" = -- ] && seen=1
  done
fi
exit 0
""" % log)
    os.chmod(path, 0o755)
    units_dir = os.path.join(tmp, "units")
    os.mkdir(units_dir)
    secrets = os.path.join(tmp, "etc", "secrets.env")
    return {"log": log, "dir": units_dir, "secrets": secrets}


def unit(name, reads_secrets, secrets_path):
    lines = ["[Service]", "ExecStart=/bin/true"]
    if reads_secrets:
        lines.insert(1, "EnvironmentFile=-%s" % secrets_path)
    return {"name": name, "content": "\n".join(lines) + "\n"}


def converge(box, capsys, check=False, **args):
    units = [unit("launchcard-a.service", True, box["secrets"]), unit("launchcard-b.service", True, box["secrets"]),
             unit("launchcard-router.service", False, box["secrets"])]
    args = dict(dict(units=units, directory=box["dir"], secrets_file=box["secrets"], verify=False), **args)
    if check:
        args["_ansible_check_mode"] = True
    if os.path.exists(box["log"]):
        os.unlink(box["log"])
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            systemd_units.main()
    captured = capsys.readouterr().out
    out = json.loads(captured)
    assert info.value.code == 0, out
    assert TOKEN not in captured
    calls = open(box["log"]).read().splitlines() if os.path.exists(box["log"]) else []
    return out, [c for c in calls if not c.startswith("show ")]


def test_first_run_starts_queued_after_a_reset_of_the_start_limit(box, capsys):
    out, calls = converge(box, capsys)
    assert out["written"] == ["launchcard-a.service", "launchcard-b.service", "launchcard-router.service"]
    # the fake reports them active: the written files restart, queued (--no-block), counter reset first
    names = "launchcard-a.service launchcard-b.service launchcard-router.service"
    assert calls == ["daemon-reload", "reset-failed -- " + names, "restart --no-block -- " + names]


def test_a_token_change_restarts_exactly_the_units_that_read_the_file(box, capsys):
    converge(box, capsys)
    out, calls = converge(box, capsys, secrets={"HF_TOKEN": TOKEN})
    assert out["changed"] and out["secrets_changed"]
    assert out["secrets_restarted"] == ["launchcard-a.service", "launchcard-b.service"]
    assert calls == ["reset-failed -- launchcard-a.service launchcard-b.service",
                     "restart --no-block -- launchcard-a.service launchcard-b.service"]
    assert open(box["secrets"]).read() == "HF_TOKEN=%s\n" % TOKEN
    assert os.stat(box["secrets"]).st_mode & 0o777 == 0o600
    # the same token again: nothing
    out, calls = converge(box, capsys, secrets={"HF_TOKEN": TOKEN})
    assert not out["changed"] and out["secrets_restarted"] == [] and calls == []
    # a new token: the same two units restart
    out, calls = converge(box, capsys, secrets={"HF_TOKEN": TOKEN + "x"})
    assert out["secrets_restarted"] == ["launchcard-a.service", "launchcard-b.service"]


def test_a_run_without_the_token_keeps_the_file_and_restarts_nothing(box, capsys):
    converge(box, capsys, secrets={"HF_TOKEN": TOKEN})
    out, calls = converge(box, capsys)
    assert not out["changed"] and not out["secrets_changed"] and calls == []
    assert open(box["secrets"]).read() == "HF_TOKEN=%s\n" % TOKEN


def test_check_mode_predicts_the_restarts_and_writes_nothing(box, capsys):
    converge(box, capsys)
    out, calls = converge(box, capsys, check=True, secrets={"HF_TOKEN": TOKEN})
    assert out["changed"] and out["actions"]["restart"] == ["launchcard-a.service", "launchcard-b.service"]
    assert calls == [] and not os.path.exists(box["secrets"])


def test_the_file_is_deleted_only_when_asked(box, capsys):
    converge(box, capsys, secrets={"HF_TOKEN": TOKEN})
    out, calls = converge(box, capsys, remove_secrets=True)
    assert out["secrets_changed"] and not os.path.exists(box["secrets"])
    assert out["secrets_restarted"] == ["launchcard-a.service", "launchcard-b.service"]
    out, calls = converge(box, capsys, remove_secrets=True)
    assert not out["changed"] and calls == []


def test_secrets_and_remove_secrets_are_exclusive(box, capsys):
    args = dict(units=[], directory=box["dir"], secrets_file=box["secrets"], secrets={"HF_TOKEN": TOKEN},
                remove_secrets=True, verify=False)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            systemd_units.main()
    out = json.loads(capsys.readouterr().out)
    assert info.value.code == 1 and "not both" in out["msg"] and TOKEN not in json.dumps(out)


def test_the_roles_call_without_a_token_and_without_removal_is_accepted(box, capsys):
    """The units role always passes both options: an empty dict and false."""
    converge(box, capsys, secrets={"HF_TOKEN": TOKEN})
    out, calls = converge(box, capsys, secrets={}, remove_secrets=False)
    assert not out["changed"] and calls == [] and os.path.exists(box["secrets"])


# -- drift: drop-ins made with systemctl edit -----------------------------------------------------
def edit(box, unit, text="[Service]\nRestart=no\n", name="override.conf"):
    d = os.path.join(box["dir"], unit + ".d")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w") as f:
        f.write(text)
    return os.path.join(d, name)


def test_a_dropin_is_reported_removed_and_its_unit_restarted(box, capsys):
    converge(box, capsys, dropin_directories=[box["dir"]])
    path = edit(box, "launchcard-a.service")
    out, calls = converge(box, capsys, dropin_directories=[box["dir"]])
    assert out["changed"] and out["dropins"] == {"kept": [], "removed": [path]}
    assert not os.path.exists(os.path.dirname(path))
    assert calls == ["daemon-reload", "reset-failed -- launchcard-a.service", "restart --no-block -- launchcard-a.service"]
    out, calls = converge(box, capsys, dropin_directories=[box["dir"]])
    assert not out["changed"] and calls == []


def test_an_allowed_dropin_is_kept_and_check_mode_only_reports(box, capsys):
    converge(box, capsys, dropin_directories=[box["dir"]])
    kept = edit(box, "launchcard-a.service", "[Service]\nNice=5\n", "nice.conf")
    drift = edit(box, "launchcard-b.service")
    out, calls = converge(box, capsys, check=True, dropin_directories=[box["dir"]],
                          allowed_dropins=["launchcard-a.service.d/nice.conf"])
    assert out["changed"] and out["dropins"] == {"kept": [kept], "removed": [drift]}
    assert out["actions"]["restart"] == ["launchcard-b.service"] and calls == []
    assert os.path.exists(drift)
    out, calls = converge(box, capsys, dropin_directories=[box["dir"]], allowed_dropins=["launchcard-a.service.d/*"])
    assert out["dropins"] == {"kept": [kept], "removed": [drift]} and os.path.exists(kept) and not os.path.exists(drift)


# -- --limit: a moved peer outside the run -------------------------------------------------------
def test_a_unit_pointed_at_a_moved_peer_outside_the_run_is_refused_before_any_write(box, capsys):
    router = {"name": "launchcard-router.service",
              "content": "[Service]\nExecStart=/v/router --decode http://198.18.0.16:32000 --port 30000\n"}
    args = dict(units=[router], directory=box["dir"], secrets_file=box["secrets"], verify=False)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            systemd_units.main()
    capsys.readouterr()
    moved = dict(router, content=router["content"].replace(":32000", ":32001"))
    with patch_module_args(dict(args, units=[moved], foreign_peers={"198.18.0.16": "lc-decode"})):
        with pytest.raises(SystemExit) as info:
            systemd_units.main()
    out = json.loads(capsys.readouterr().out)
    assert info.value.code == 1 and out["hosts_to_include"] == ["lc-decode"]
    assert "launchcard-router.service would point at 198.18.0.16:32001 (lc-decode)" in out["msg"]
    assert "Include lc-decode in --limit" in out["msg"]
    with open(os.path.join(box["dir"], "launchcard-router.service")) as f:
        assert ":32000" in f.read()  # nothing written
