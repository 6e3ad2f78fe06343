# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""End to end (issue #25 item 2): PD with the prefill beside the router and the decode on another host.

Fleet: inventories/pd-split/gpus.ini (lc-pds-*, 198.18.17.0/24, state dir .sandbox-pd-split/). Card:
tests/e2e/cards/pd-split.json, written for one host: a prefill without --host (SGLang binds 127.0.0.1) and
a MiniLB router listing loopback URLs. The real sglang-router (0.3.2) sends the prefill URL's host to the
decode as bootstrap_host; the decode's stand-in fetches the request's "KV" from that host's bootstrap port
(as SGLang's decode registers with the prefill's bootstrap server), so a routed completion works only when
the router names the prefill by its routable address and the prefill listens on the network.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from sandbox_cli import Fleet
from router_load import http

INVENTORY = "inventories/pd-split/gpus.ini"
STATE = ".sandbox-pd-split"
FLEET = Fleet(INVENTORY, STATE)
A, B = "198.18.17.11", "198.18.17.12"
ROUTER = "http://%s:30000" % A
MODEL = "launchcard-test/PD-Tiny"
UNITS = "launchcard-pd-tiny-sglang-%s-0.service"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("systemd-nspawn"),
                                reason="the sandbox fleet needs root and systemd-nspawn")


@pytest.fixture(scope="module")
def deployed():
    up = FLEET.up()
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        # the deploy's gate sends a real completion through the router: it passes only if KV moves
        res = FLEET.playbook("deploy")
        assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
        yield res
    finally:
        if not os.environ.get("LAUNCHCARD_KEEP_FLEET"):
            FLEET.down()


def test_the_router_names_the_prefill_by_its_routable_address(deployed):
    out = FLEET.ssh(A, "systemctl show -p ExecStart --value %s %s" % (UNITS % "router", UNITS % "prefill"))
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "--prefill http://%s:31000 8998" % A in text
    assert "127.0.0.1:31000" not in text
    # the prefill's bootstrap server listens where the remote decode dials it
    assert "--host 0.0.0.0" in text
    listening = FLEET.ssh(A, "ss -Hltn 'sport = :8998'")
    assert "0.0.0.0:8998" in listening.stdout or "*:8998" in listening.stdout, listening.stdout


def test_a_routed_completion_moves_kv_from_the_prefill_host_to_the_decode_host(deployed):
    status, body = http("POST", ROUTER + "/v1/completions",
                        {"model": MODEL, "prompt": "hello", "max_tokens": 4}, timeout=30)
    assert status == 200, body
    info = json.loads(body)["launchcard_standin"]
    # served by the decode on lc-pds-b, with the KV its prefill on lc-pds-a put on the bootstrap server
    assert (info["role"], info["decode"], info["prefill"]) == ("decode", "lc-pds-b:32000", "lc-pds-a:31000")


# Issue 46: the decode's port moves under --limit lc-pds-b, which leaves its router (on lc-pds-a) out.
MOVED = json.dumps({"launchcard_argv_overrides": {"sglang-decode": {"set": {"--port": "32100"}}}})
REFUSAL = ("%s on lc-pds-b: its port moves from %s:32000 to %s:32100; %s on lc-pds-a still points at %s:32000"
           % (UNITS % "decode", B, B, UNITS % "router", B))


def test_a_limited_run_that_would_move_the_decode_its_router_names_is_refused(deployed):
    show = "systemctl show -p ExecStart,ActiveState,InvocationID %s" % (UNITS % "decode")
    before = FLEET.ssh(B, show)
    assert before.returncode == 0 and "ActiveState=active" in before.stdout, before.stderr
    res = FLEET.playbook("deploy", "--limit", "lc-pds-b", "-e", MOVED)
    out = " ".join(res.stdout.split())
    assert res.returncode != 0, out[-3000:]
    assert "refusing this --limit run before any host changes" in out, out[-6000:]
    assert REFUSAL in out and "Add lc-pds-a to --limit" in out, out[-6000:]
    # nothing changed: the same unit, still the same process
    assert FLEET.ssh(B, show).stdout == before.stdout
    # check mode lists the same, in the task and the summary, and goes on
    check = FLEET.playbook("deploy", "--limit", "lc-pds-b", "-e", MOVED, "--check")
    out = " ".join(check.stdout.split())
    assert check.returncode == 0, out[-6000:]
    assert out.count(REFUSAL) == 2, out[-6000:]
    assert FLEET.ssh(B, show).stdout == before.stdout
    # the router still reaches the decode where it runs
    status, body = http("POST", ROUTER + "/v1/completions", {"model": MODEL, "prompt": "hello", "max_tokens": 4},
                        timeout=30)
    assert status == 200, body
