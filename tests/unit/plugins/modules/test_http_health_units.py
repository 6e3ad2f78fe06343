# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""http_health watching the endpoints' systemd units: a crash loop ends the wait at once.

A fake ``systemctl`` (a shell script on an otherwise empty PATH) reports the
unit running on its first ``show`` and waiting for its automatic restart from
the second on; a fake ``journalctl`` prints the engine's last words. The
endpoint is a real loopback port that refuses connections, as a crashed
engine's does.
"""

from __future__ import annotations

import json
import os
import socket
import time

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.modules import http_health

UNIT = "launchcard-m-sglang-decode-0.service"


def refused_url():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens: connect() is refused
    return "http://127.0.0.1:%d/health" % port


def script(path, text):
    with open(path, "w") as f:
        f.write("#!/bin/sh\nPATH=/usr/bin:/bin\n" + text)
    os.chmod(path, 0o755)


@pytest.fixture
def crashing_unit(host):
    count = os.path.join(str(host["tmp"]), "show-count")
    script(os.path.join(host["bin"], "systemctl"), """
n=$(cat %(c)s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %(c)s
echo "$*" >> %(c)s.args
if [ $n -le 1 ]; then state="ActiveState=active SubState=running NRestarts=0 Result=success ExecMainCode=0 ExecMainStatus=0"
else state="ActiveState=activating SubState=auto-restart NRestarts=1 Result=exit-code ExecMainCode=1 ExecMainStatus=3"; fi
echo "Id=%(u)s"; echo LoadState=loaded; for kv in $state; do echo "$kv"; done
""" % {"c": count, "u": UNIT})
    script(os.path.join(host["bin"], "journalctl"),
           'echo "Fatal Python error: init_fs_encoding: failed to get the Python codec"\n'
           'echo "ModuleNotFoundError: No module named \'encodings\'"\n')
    return count


def run(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            http_health.main()
    return info.value.code, json.loads(capsys.readouterr().out)


def test_a_crash_loop_fails_fast_with_the_exit_status_and_the_journal(crashing_unit, capsys):
    url = refused_url()
    started = time.monotonic()
    rc, out = run(capsys, endpoints=[{"name": UNIT, "url": url, "unit": UNIT}], timeout=120, interval=0.2)
    assert time.monotonic() - started < 30  # the unit's state ended the wait, not the 120 s timeout
    assert rc == 1 and out["failed"] is True
    assert out["crashed"] == [UNIT] and out["unhealthy"] == [UNIT]
    detail = out["endpoints"][0]["detail"]
    assert detail.startswith("engine exited, systemd restarts it (Result=exit-code, exit status 3, NRestarts=1)")
    assert "No module named 'encodings'" in detail
    assert "exit status 3" in out["msg"] and "No module named 'encodings'" in out["msg"]
    # one systemctl show for the host's units per reading, with the crash properties
    with open(crashing_unit + ".args") as f:
        calls = f.read().splitlines()
    assert calls and all(c.startswith("show -p ") and "Result" in c and c.endswith("-- " + UNIT) for c in calls)


def test_endpoints_without_a_unit_are_not_watched(crashing_unit, capsys):
    rc, out = run(capsys, endpoints=[{"name": UNIT, "url": refused_url()}], timeout=2, interval=0.5)
    assert rc == 1 and out["crashed"] == []
    assert out["endpoints"][0]["detail"].startswith("no answer yet")
    assert not os.path.exists(crashing_unit)  # systemctl never ran
