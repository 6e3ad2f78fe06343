# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostile and mistaken Hub input (issue #42): the real huggingface_hub client against the sandbox hub endpoint
(tests/sandbox/hub) in its hostile modes on 127.0.0.1, and the planning step on the controller.

A listing that names a path outside the snapshot removes nothing and fails naming it; a byte the endpoint alters
is caught by the listing's digest, fetched again once, and named when it stays wrong; a token never goes to a
plain-HTTP endpoint unless the inventory says so.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from unittest.mock import MagicMock

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext

from ansible_collections.launchcard.inference.plugins.action.launch_card import ActionModule
from ansible_collections.launchcard.inference.plugins.module_utils import _hf_snapshot as hs
from ansible_collections.launchcard.inference.plugins.modules import hf_snapshot

pytest.importorskip("huggingface_hub")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
REPO = "zai-org/GLM-5.3-Flash"
REV = "46a050bec13002ad29ee795c16e61cf4fa3c4a9c"
SHARD = "model-00001-of-00002.safetensors"
TOKEN = "hf_hostileTESTtoken42"


@pytest.fixture(scope="module")
def served():
    sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
    from hub import server
    h = server.Hub(["%s@%s" % (REPO, REV)], xet=False)
    srv = server.start(h)
    yield h, "http://127.0.0.1:%d" % srv.server_address[1], server.generate_repo(REPO, REV)
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def hub(served):
    """The hub, its hostile switches off again after each test."""
    h, url, files = served
    yield h, url, files
    h.list_extra[:] = []
    h.flip.clear()


def stats(url):
    with urllib.request.urlopen(url + "/_sandbox/stats", timeout=5) as resp:
        return json.loads(resp.read())


def stage(url, hf_home, **kw):
    return hs.ensure_snapshot(hs.HubClient(url, "", str(hf_home)), str(hf_home), REPO, REV, **kw)


def snap(hf_home):
    return hf_home / "hub" / "models--zai-org--GLM-5.3-Flash" / "snapshots" / REV


# --- a listing that names paths outside the snapshot ----------------------------------------------------

@pytest.mark.parametrize("where", ["relative", "absolute"])
def test_a_listed_path_outside_the_snapshot_removes_nothing_and_is_named(hub, tmp_path, where):
    """Before: each listed path was joined to the snapshot folder, stat'ed, and a file of another size unlinked (as
    root, on a host): ``../../../../planted`` is ``<hf_home>/planted`` once the snapshot folder exists (an earlier
    run), ``/abs`` is itself."""
    h, url, dummy = hub
    hf_home = tmp_path / "models"
    stage(url, hf_home)
    planted = (hf_home if where == "relative" else tmp_path) / "planted"
    planted.write_bytes(b"keep me")
    listed = "../../../../planted" if where == "relative" else str(planted)
    h.list_extra.append(listed)
    before = stats(url)["file_requests"]
    with pytest.raises(hs.WeightsError) as err:
        stage(url, hf_home)
    assert planted.read_bytes() == b"keep me"
    assert err.value.cause == "unsafe listing"
    assert repr(listed) in err.value.message and "nothing was read, removed or downloaded" in err.value.message
    assert stats(url)["file_requests"] == before


def test_a_snapshot_folder_that_is_a_symlink_out_of_the_cache_removes_nothing(hub, tmp_path):
    """A peer's copy, or a mistaken hand, made the revision's folder a link elsewhere: a file there of another size
    than listed was unlinked before."""
    dummy, url, files = hub
    hf_home, outside = tmp_path / "models", tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "config.json").write_bytes(b"not the hub's")
    snap(hf_home).parent.mkdir(parents=True)
    os.symlink(outside, snap(hf_home))
    with pytest.raises(hs.WeightsError) as err:
        stage(url, hf_home)
    assert (outside / "config.json").read_bytes() == b"not the hub's"
    assert err.value.cause == "unsafe listing" and "%s is a symlink" % snap(hf_home) in err.value.message


# --- bytes the endpoint alters ---------------------------------------------------------------------------

@pytest.mark.parametrize("path", [SHARD, "config.json"])
def test_one_flipped_byte_once_is_caught_and_fetched_again(hub, tmp_path, path):
    """huggingface_hub 2.4.0 checks the size only: before, the altered file was kept and the revision called
    complete. The shard is checked by its sha256 (lfs.oid), config.json by its git blob id (oid)."""
    h, url, files = hub
    h.flip[path] = 1
    got = stats(url)["files"].get(path, 0)
    res = stage(url, tmp_path)
    assert res["complete"] and res["refetched"] == [path] and res["files_verified"] == len(files)
    assert (snap(tmp_path) / path).read_bytes() == files[path]
    assert stats(url)["files"][path] == got + 2 and h.flip[path] == 0


def test_a_byte_flipped_on_every_fetch_fails_naming_the_file_and_is_not_complete(hub, tmp_path):
    h, url, files = hub
    h.flip[SHARD] = None
    with pytest.raises(hs.WeightsError) as err:
        stage(url, tmp_path)
    assert err.value.cause == "checksum mismatch"
    assert err.value.message.startswith("%s of %s at %s, downloaded from %s and fetched again" % (SHARD, REPO, REV, url))
    assert "sha256 %s listed" % h.repos[REPO][REV].meta[SHARD]["lfs"]["oid"] in err.value.message
    assert not os.path.exists(hs.stamp_path(str(tmp_path), REPO, REV))


def test_a_stampless_snapshot_of_the_right_sizes_is_checked_by_content(hub, tmp_path):
    """A snapshot a killed run, an older release or a hand left, with one byte changed: fetched again; once stamped
    (the weights role, after a verified run) sizes are enough and nothing is read."""
    dummy, url, files = hub
    stage(url, tmp_path)
    blob = os.path.realpath(snap(tmp_path) / SHARD)
    with open(blob, "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 1]))
    res = stage(url, tmp_path)
    assert res["downloaded"] == [SHARD] and (snap(tmp_path) / SHARD).read_bytes() == files[SHARD]
    with open(hs.stamp_path(str(tmp_path), REPO, REV), "w") as f:
        f.write("%d\n" % res["bytes_total"])
    res = stage(url, tmp_path)
    assert not res["changed"] and res["files_verified"] == 0


# --- a token bound for plain HTTP -------------------------------------------------------------------------

def run_module(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            hf_snapshot.main()
    out = capsys.readouterr().out
    assert TOKEN not in out
    return json.loads(out)


def test_the_module_sends_no_token_over_plain_http_unless_allowed(hub, tmp_path, capsys):
    dummy, url, dummy = hub
    before = stats(url)["api_requests"]
    out = run_module(capsys, repo=REPO, revision=REV, hf_home=str(tmp_path), endpoint=url, token=TOKEN,
                     _ansible_check_mode=True)
    assert out["failed"] and out["cause"] == "token over http"
    assert "launchcard_hf_allow_http_token: true (weights_hf_allow_http_token)" in out["msg"]
    assert stats(url)["api_requests"] == before
    out = run_module(capsys, repo=REPO, revision=REV, hf_home=str(tmp_path), endpoint=url, token=TOKEN,
                     allow_http_token=True, _ansible_check_mode=True)
    assert not out.get("failed") and stats(url)["api_requests"] == before + 1


def plan(**host_vars):
    """The planning step (the launch_card action, on the controller) over one host with ``host_vars``."""
    task = MagicMock()
    task.args, task.async_val, task.check_mode = {}, 0, False
    task.action = "launchcard.inference.launch_card"
    task.get_search_path.return_value = [ROOT]
    connection = MagicMock()
    connection._shell.tmpdir = None
    hv = dict({"inventory_hostname": "gpu-01", "ansible_host": "10.0.0.1", "launchcard_recipes": ["vllm-aggregated"],
               "launchcard_card_src": os.path.join(ROOT, "cards", "glm-5.3-flash.json")}, **host_vars)
    result = ActionModule(task, connection, PlayContext(), DataLoader(), None, None).run(task_vars={
        "hostvars": {"gpu-01": hv}, "groups": {"all": ["gpu-01"]}, "ansible_play_hosts": ["gpu-01"],
        "ansible_play_batch": ["gpu-01"], "inventory_hostname": "gpu-01"})
    assert not connection.exec_command.called
    return result


def test_planning_refuses_a_token_for_a_plain_http_endpoint_unless_the_inventory_allows_it():
    res = plan(launchcard_hf_endpoint="http://user:pw@mirror.internal:8080", launchcard_hf_token=TOKEN)
    assert res["failed"] and "launchcard_plan" not in res
    assert res["msg"].startswith("gpu-01: the Hub endpoint http://mirror.internal:8080 is plain HTTP and a token is set")
    assert "launchcard_hf_allow_http_token: true" in res["msg"] and TOKEN not in res["msg"] and "pw" not in res["msg"]
    for ok in ({"launchcard_hf_allow_http_token": True}, {"launchcard_hf_token": ""},
               {"launchcard_hf_endpoint": "https://mirror.internal"}):
        res = plan(**dict({"launchcard_hf_endpoint": "http://mirror.internal:8080", "launchcard_hf_token": TOKEN}, **ok))
        assert not res.get("failed") and "launchcard_plan" in res["ansible_facts"], res
