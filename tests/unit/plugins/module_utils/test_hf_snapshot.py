# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The weights logic: completeness against the Hub's listing, what gets downloaded, errors by cause.

Two kinds of tests: a recording fake client (what is asked of the Hub, exactly), and the real
huggingface_hub client against the sandbox hub endpoint (tests/sandbox/hub) on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.request

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils import _hf_snapshot as hs

REPO = "zai-org/GLM-5.3-Flash"
REV = "46a050bec13002ad29ee795c16e61cf4fa3c4a9c"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


class FakeClient:
    """Writes files into the cache the way huggingface_hub lays them out (blob + snapshot symlink)."""

    endpoint = "http://hub.test"

    def __init__(self, hf_home, files, short=()):
        self.hf_home, self.files, self.short = hf_home, files, set(short)
        self.listed, self.downloads = 0, []

    def list_files(self, repo, revision):
        self.listed += 1
        return [{"type": "file", "path": p, "size": len(b)} for p, b in self.files.items()] + [
            {"type": "directory", "path": "sub"}]

    def download(self, repo, revision, path):
        self.downloads.append(path)
        data = self.files[path][:-1] if path in self.short else self.files[path]
        blobs = os.path.join(hs.repo_dir(self.hf_home, repo), "blobs")
        os.makedirs(blobs, exist_ok=True)
        blob = os.path.join(blobs, "blob-" + path.replace("/", "_"))
        with open(blob, "wb") as f:
            f.write(data)
        link = os.path.join(hs.snapshot_dir(self.hf_home, repo, revision), path)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.relpath(blob, os.path.dirname(link)), link)


FILES = {"config.json": b"{}\n", "model-00001-of-00002.safetensors": b"x" * 100, "sub/tok.json": b"[1,2]"}


def test_a_fresh_cache_gets_every_file_and_the_sizes_add_up(tmp_path):
    c = FakeClient(str(tmp_path), FILES)
    res = hs.ensure_snapshot(c, str(tmp_path), REPO, REV)
    assert res["changed"] and res["complete"]
    assert sorted(c.downloads) == sorted(FILES)
    assert res["bytes_done"] == res["bytes_total"] == sum(len(b) for b in FILES.values())
    assert res["bytes_present"] == 0 and res["files_total"] == 3
    assert (tmp_path / "hub" / "models--zai-org--GLM-5.3-Flash" / "snapshots" / REV / "sub" / "tok.json").read_bytes() == b"[1,2]"


def test_a_complete_snapshot_is_one_listing_and_no_download(tmp_path):
    hs.ensure_snapshot(FakeClient(str(tmp_path), FILES), str(tmp_path), REPO, REV)
    c = FakeClient(str(tmp_path), FILES)
    res = hs.ensure_snapshot(c, str(tmp_path), REPO, REV)
    assert c.listed == 1 and c.downloads == []
    assert not res["changed"] and res["complete"] and res["bytes_done"] == 0


def test_only_missing_and_wrong_size_files_are_fetched_again(tmp_path):
    hs.ensure_snapshot(FakeClient(str(tmp_path), FILES), str(tmp_path), REPO, REV)
    snap = tmp_path / "hub" / "models--zai-org--GLM-5.3-Flash" / "snapshots" / REV
    blob = os.path.realpath(snap / "model-00001-of-00002.safetensors")
    with open(blob, "r+b") as f:
        f.truncate(40)
    os.unlink(snap / "config.json")
    status = hs.local_status(str(tmp_path), REPO, REV, hs.normalize_listing(FakeClient("", FILES).list_files(REPO, REV)))
    found = {m["path"]: m["found"] for m in status["missing"]}
    assert found == {"config.json": None, "model-00001-of-00002.safetensors": 40}
    c = FakeClient(str(tmp_path), FILES)
    res = hs.ensure_snapshot(c, str(tmp_path), REPO, REV)
    assert sorted(c.downloads) == ["config.json", "model-00001-of-00002.safetensors"]
    assert res["bytes_done"] == 3 + 100 and res["complete"]
    assert not os.path.exists(blob) or os.path.getsize(blob) == 100


def test_a_killed_runs_partial_file_is_removed_before_downloading(tmp_path):
    blobs = tmp_path / "hub" / "models--zai-org--GLM-5.3-Flash" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / "abc.1a2b3c4d.incomplete").write_bytes(b"half")
    hs.ensure_snapshot(FakeClient(str(tmp_path), FILES), str(tmp_path), REPO, REV)
    assert not (blobs / "abc.1a2b3c4d.incomplete").exists()


def test_check_mode_reports_what_it_would_download_and_writes_nothing(tmp_path):
    c = FakeClient(str(tmp_path), FILES)
    res = hs.ensure_snapshot(c, str(tmp_path), REPO, REV, check_mode=True)
    assert res["changed"] and sorted(res["would_download"]) == sorted(FILES)
    assert c.downloads == [] and res["bytes_done"] == 0 and not (tmp_path / "hub").exists()


def test_verify_only_names_each_short_file_and_downloads_nothing(tmp_path):
    hs.ensure_snapshot(FakeClient(str(tmp_path), FILES), str(tmp_path), REPO, REV)
    snap = tmp_path / "hub" / "models--zai-org--GLM-5.3-Flash" / "snapshots" / REV
    with open(os.path.realpath(snap / "model-00001-of-00002.safetensors"), "r+b") as f:
        f.truncate(7)
    c = FakeClient(str(tmp_path), FILES)
    with pytest.raises(hs.WeightsError) as err:
        hs.ensure_snapshot(c, str(tmp_path), REPO, REV, verify_only=True)
    assert err.value.cause == "incomplete"
    assert "model-00001-of-00002.safetensors (7 of 100 bytes)" in err.value.message
    assert c.downloads == []


def test_a_download_that_ends_short_is_a_truncated_download(tmp_path):
    c = FakeClient(str(tmp_path), FILES, short={"sub/tok.json"})
    with pytest.raises(hs.WeightsError) as err:
        hs.ensure_snapshot(c, str(tmp_path), REPO, REV)
    assert err.value.cause == "truncated download"
    assert "sub/tok.json (4 of 5 bytes)" in err.value.message


def test_the_snapshot_is_readable_by_every_user(tmp_path):
    os.umask(0o077)
    try:
        hs.ensure_snapshot(FakeClient(str(tmp_path), FILES), str(tmp_path), REPO, REV)
    finally:
        os.umask(0o022)
    for root, dirs, files in os.walk(hs.repo_dir(str(tmp_path), REPO)):
        for d in dirs:
            assert os.stat(os.path.join(root, d)).st_mode & 0o555 == 0o555
        for f in files:
            p = os.path.join(root, f)
            if not os.path.islink(p):
                assert os.stat(p).st_mode & 0o444 == 0o444, p


def test_a_listing_without_sizes_is_refused():
    with pytest.raises(hs.WeightsError) as err:
        hs.normalize_listing([{"type": "file", "path": "a.bin"}])
    assert "a.bin" in err.value.message


def test_errors_are_classified_by_cause():
    pytest.importorskip("huggingface_hub")
    import httpx2
    from huggingface_hub import errors

    def cause(exc):
        return hs.describe_error(exc, "http://hub.test", REPO, REV)

    req = httpx2.Request("GET", "http://hub.test/x")
    resp = httpx2.Response(404, request=req)
    wrong = cause(errors.RevisionNotFoundError("no", response=resp))
    assert wrong.cause == "wrong revision" and REV in wrong.message and "http://hub.test" in wrong.message
    assert cause(errors.RepositoryNotFoundError("no", response=resp)).cause == "repository not found"
    assert cause(httpx2.ConnectError("refused")).cause == "hub unreachable"
    assert cause(ConnectionRefusedError(111, "Connection refused")).cause == "hub unreachable"
    assert cause(ValueError("odd")).cause == "hub error"


# --- the real client against the sandbox hub endpoint ------------------------------------------------

@pytest.fixture(scope="module")
def hub():
    pytest.importorskip("huggingface_hub")
    sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
    from hub import server
    h = server.Hub(["%s@%s" % (REPO, REV)])
    srv = server.start(h)
    yield server, "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def served(url):
    with urllib.request.urlopen(url + "/_sandbox/stats", timeout=5) as resp:
        return json.loads(resp.read())["bytes_served"]


def test_real_client_downloads_once_and_repairs_a_truncated_blob(hub, tmp_path):
    server, url = hub
    files = server.generate_repo(REPO, REV)
    client = hs.HubClient(url, "", str(tmp_path))
    start = served(url)
    res = hs.ensure_snapshot(client, str(tmp_path), REPO, REV)
    assert res["complete"] and res["bytes_done"] == sum(len(b) for b in files.values())
    assert served(url) - start == res["bytes_done"]
    # no-op: nothing served
    again = hs.ensure_snapshot(client, str(tmp_path), REPO, REV)
    assert not again["changed"] and served(url) - start == res["bytes_done"]
    # a truncated shard: fetched again, and only it
    shard = "model-00002-of-00002.safetensors"
    blob = os.path.realpath(os.path.join(res["snapshot"], shard))
    with open(blob, "r+b") as f:
        f.truncate(1000)
    mark = served(url)
    fixed = hs.ensure_snapshot(client, str(tmp_path), REPO, REV)
    assert fixed["downloaded"] == [shard] and served(url) - mark == len(files[shard])
    with open(os.path.join(res["snapshot"], shard), "rb") as f:
        assert f.read() == files[shard]


def test_real_client_wrong_revision_and_unreachable_endpoint(hub, tmp_path):
    server, url = hub
    with pytest.raises(hs.WeightsError) as err:
        hs.ensure_snapshot(hs.HubClient(url, "", str(tmp_path)), str(tmp_path), REPO, "f" * 40)
    assert err.value.cause == "wrong revision" and "f" * 40 in err.value.message
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # a port nothing listens on
    with pytest.raises(hs.WeightsError) as err:
        hs.ensure_snapshot(hs.HubClient("http://127.0.0.1:%d" % port, "", str(tmp_path)), str(tmp_path), REPO, REV)
    assert err.value.cause == "hub unreachable" and str(port) in err.value.message
    assert not os.path.exists(os.path.join(str(tmp_path), "hub", "models--zai-org--GLM-5.3-Flash", "snapshots"))


# The peer source: a host that copies from its seed lists the revision, downloads nothing, and after the
# copy (here: the seed's repository folder copied over, as rsync does) is verified as a download is.

def _seed_and_copy(tmp_path):
    seed, peer = tmp_path / "seed", tmp_path / "peer"
    hs.ensure_snapshot(FakeClient(str(seed), FILES), str(seed), REPO, REV)
    return seed, peer


def test_a_copy_lists_what_it_needs_and_downloads_nothing(tmp_path):
    dummy, peer = _seed_and_copy(tmp_path)
    c = FakeClient(str(peer), FILES)
    res = hs.ensure_snapshot(c, str(peer), REPO, REV, copy_from="w1")
    assert c.listed == 1 and c.downloads == []
    assert not res["complete"] and not res["changed"] and res["seed"] == "w1"
    assert sorted(res["would_copy"]) == sorted(FILES) and res["bytes_done"] == 0
    checked = hs.ensure_snapshot(FakeClient(str(peer), FILES), str(peer), REPO, REV, copy_from="w1", check_mode=True)
    assert checked["changed"] and sorted(checked["would_copy"]) == sorted(FILES) and checked["would_download"] == []
    assert not (peer / "hub").exists()


def test_a_complete_copy_verifies_and_a_short_one_fails_naming_the_seed_and_file(tmp_path):
    import shutil
    seed, peer = _seed_and_copy(tmp_path)
    shutil.copytree(seed / "hub", peer / "hub", symlinks=True)
    c = FakeClient(str(peer), FILES)
    res = hs.ensure_snapshot(c, str(peer), REPO, REV, copy_from="w1", copied=True)
    assert res["complete"] and not res["changed"] and c.downloads == [] and c.listed == 1
    snap = peer / "hub" / "models--zai-org--GLM-5.3-Flash" / "snapshots" / REV
    os.unlink(os.path.realpath(snap / "sub" / "tok.json"))
    with pytest.raises(hs.WeightsError) as err:
        hs.ensure_snapshot(FakeClient(str(peer), FILES), str(peer), REPO, REV, copy_from="w1", copied=True)
    assert err.value.cause == "incomplete copy"
    assert "from the seed w1" in err.value.message and "sub/tok.json (absent)" in err.value.message


def test_a_copy_of_a_revision_the_hub_does_not_have_fails_like_a_download(tmp_path):
    class Missing(FakeClient):
        def list_files(self, repo, revision):
            raise type("RevisionNotFoundError", (Exception,), {})("404")
    with pytest.raises(hs.WeightsError) as err:
        hs.ensure_snapshot(Missing(str(tmp_path), FILES), str(tmp_path), REPO, REV, copy_from="w1")
    assert err.value.cause == "wrong revision"
