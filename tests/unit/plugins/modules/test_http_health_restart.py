# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""http_health after a queued restart: the old process answering 200 does not pass the gate.

A real loopback server answers ``/health`` 200 throughout (the engine before
and after its restart). A fake ``systemctl`` reports the unit's old
InvocationID on its first readings and a new one, ``active``, from reading
``SWITCH`` on; the gate must pass only after that reading.
"""

from __future__ import annotations

import http.server
import json
import os
import threading

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.modules import http_health

UNIT = "launchcard-m-sglang-aggregated-0.service"
SWITCH = 4


class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def engine():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d/health" % server.server_address[1]
    server.shutdown()


@pytest.fixture
def restarting_unit(host):
    count = os.path.join(str(host["tmp"]), "show-count")
    path = os.path.join(host["bin"], "systemctl")
    with open(path, "w") as f:
        f.write("""#!/bin/sh
PATH=/usr/bin:/bin
n=$(cat %(c)s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %(c)s
echo "$*" >> %(c)s.args
case "$*" in *InvocationID*) ;; *) echo "Id=%(u)s"; echo LoadState=loaded; echo ActiveState=active; exit 0;; esac
if [ $n -lt %(s)d ]; then echo "Id=%(u)s"; echo ActiveState=active; echo InvocationID=old0; echo MainPID=100
else echo "Id=%(u)s"; echo ActiveState=active; echo InvocationID=new1; echo MainPID=200; fi
""" % {"c": count, "u": UNIT, "s": SWITCH})
    os.chmod(path, 0o755)
    return count


def run(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            http_health.main()
    return info.value.code, json.loads(capsys.readouterr().out)


def test_the_gate_waits_for_the_new_invocation(engine, restarting_unit, capsys):
    rc, out = run(capsys, endpoints=[{"name": UNIT, "url": engine, "unit": UNIT,
                                      "previous": {"invocation_id": "old0", "main_pid": 100}}],
                  timeout=60, interval=0.1)
    assert rc == 0 and out["unhealthy"] == [], out
    with open(restarting_unit + ".args") as f:
        reads = [c for c in f.read().splitlines() if "InvocationID" in c]
    # the gate kept reading until systemd reported the new invocation, then stopped asking
    assert len(reads) >= 2 and all(c.endswith("-- " + UNIT) for c in reads)


def test_the_old_invocation_alone_times_out(engine, restarting_unit, capsys):
    with open(restarting_unit, "w") as f:
        f.write("-1000\n")  # systemd keeps reporting the old process
    rc, out = run(capsys, endpoints=[{"name": UNIT, "url": engine, "unit": UNIT,
                                      "previous": {"invocation_id": "old0", "main_pid": 100}}],
                  timeout=1, interval=0.1)
    assert rc == 1 and out["unhealthy"] == [UNIT]
    assert "from the process before the queued restart" in out["msg"]


def test_previous_needs_a_unit(engine, host, capsys):
    rc, out = run(capsys, endpoints=[{"name": UNIT, "url": engine, "previous": {"invocation_id": "old0"}}], timeout=1)
    assert rc == 1 and out["msg"] == "endpoints[0].previous needs endpoints[0].unit (the unit whose restart was queued)"
