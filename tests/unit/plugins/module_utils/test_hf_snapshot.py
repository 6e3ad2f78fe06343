# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The weights logic: completeness against the Hub's listing, what gets downloaded, errors by cause.

Two kinds of tests: a recording fake client (what is asked of the Hub, exactly), and the real
huggingface_hub client against the sandbox hub endpoint (tests/sandbox/hub) on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils import _hf_progress as hp
from ansible_collections.launchcard.inference.plugins.module_utils import _hf_snapshot as hs
from ansible_collections.launchcard.inference.plugins.module_utils import _hf_verify as hv

REPO = "zai-org/GLM-5.3-Flash"
REV = "46a050bec13002ad29ee795c16e61cf4fa3c4a9c"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def listed(path, data):
    """A tree API entry as the Hub answers it: ``oid`` (git blob id), and ``lfs`` (sha256) for a safetensors file."""
    entry = {"type": "file", "path": path, "size": len(data), "oid": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()}
    if path.endswith(".safetensors"):
        entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
    return entry


class FakeClient:
    """Writes files into the cache the way huggingface_hub lays them out (blob + snapshot symlink)."""

    endpoint = "http://hub.test"

    def __init__(self, hf_home, files, short=(), flip=None):
        self.hf_home, self.files, self.short = hf_home, files, set(short)
        self.flip = dict(flip or {})  # path -> downloads left that get their last byte inverted (None: every one)
        self.listed, self.downloads = 0, []

    def list_files(self, repo, revision):
        self.listed += 1
        return [listed(p, b) for p, b in self.files.items()] + [{"type": "directory", "path": "sub"}]

    def download_snapshot(self, repo, revision, paths, max_workers):
        for path in paths:
            self.download(repo, revision, path)

    def download(self, repo, revision, path):
        self.downloads.append(path)
        data = self.files[path][:-1] if path in self.short else self.files[path]
        if self.flip.get(path, 0) != 0:
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
            self.flip[path] = None if self.flip[path] is None else self.flip[path] - 1
        blobs = os.path.join(hs.repo_dir(self.hf_home, repo), "blobs")
        os.makedirs(blobs, exist_ok=True)
        blob = os.path.join(blobs, "blob-" + path.replace("/", "_"))
        with open(blob, "wb") as f:
            f.write(data)
        link = os.path.join(hs.snapshot_dir(self.hf_home, repo, revision), path)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.relpath(blob, os.path.dirname(link)), link)


SHARD = "model-00001-of-00002.safetensors"
FILES = {"config.json": b"{}\n", SHARD: b"x" * 100, "sub/tok.json": b"[1,2]"}


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


def test_disk_and_short_transfer_errors_are_not_hub_unreachable(tmp_path):
    """Case C (bug-reports.md; huggingface/huggingface_hub#2742, #2589, padeoe/hf-mirror-site#4): the OSErrors of a
    download that are about this host's disk or a short transfer were all labelled `hub unreachable`."""
    import errno

    def cause(exc, **kw):
        return hs.describe_error(exc, "http://hub.test", REPO, REV, hf_home=str(tmp_path), **kw)

    full = cause(OSError(errno.ENOSPC, "No space left on device"), path="a.safetensors", size=100, needed=300)
    assert full.cause == "disk full"
    assert hs.mount_of(str(tmp_path)) in full.message and "needs 300 bytes" in full.message
    assert "bytes free" in full.message
    assert cause(OSError(errno.EDQUOT, "Disk quota exceeded"), path="a", size=1).cause == "disk full"
    # huggingface_hub 2.4.0's own words for a response that ended cleanly short (file_download.py http_get)
    short = cause(OSError("Consistency check failed: file should be of size 100 but has size 40 (a.safetensors).\n"
                          "This is usually due to network issues while downloading the file."),
                  path="a.safetensors", size=100)
    assert short.cause == "truncated download" and "a.safetensors" in short.message
    assert "40 of 100 bytes" in short.message
    denied = cause(PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "hub")), path="a", size=1)
    assert denied.cause == "cache error" and str(tmp_path) in denied.message
    assert cause(TimeoutError("timed out")).cause == "hub unreachable"
    assert cause(OSError(errno.EHOSTUNREACH, "No route to host")).cause == "hub unreachable"


def test_xet_is_allowed_on_the_public_hub_only_unless_told():
    assert hs.xet_allowed("https://huggingface.co") is None  # huggingface_hub decides
    assert hs.xet_allowed("https://hf.co/") is None
    assert hs.xet_allowed("http://hub-mirror.internal:8080") is False
    assert hs.xet_allowed("http://hub-mirror.internal:8080", "always") is True
    assert hs.xet_allowed("https://huggingface.co", "never") is False
    with pytest.raises(hs.WeightsError) as err:
        hs.xet_allowed("https://huggingface.co", "sometimes")
    assert "xet must be one of auto, always, never" in err.value.message


# --- the real client against the sandbox hub endpoint ------------------------------------------------

@pytest.fixture(scope="module")
def hub():
    pytest.importorskip("huggingface_hub")
    sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
    from hub import server
    h = server.Hub(["%s@%s" % (REPO, REV)])
    srv = server.start(h)
    url = "http://127.0.0.1:%d" % srv.server_address[1]
    _HUBS[url] = h
    yield server, url
    srv.shutdown()
    srv.server_close()


_HUBS = {}


def hub_of(url):
    """The sandbox hub object serving ``url`` (its switches: ``truncate``)."""
    return _HUBS[url]


def stats(url):
    with urllib.request.urlopen(url + "/_sandbox/stats", timeout=5) as resp:
        return json.loads(resp.read())


def served(url):
    return stats(url)["bytes_served"]


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


# --- case B: an internal mirror that passes the Hub's Xet headers ----------------------------------------------

def test_case_b_a_mirror_passing_the_hubs_xet_headers_serves_every_byte_over_plain_http(hub, tmp_path):
    """Case B (bug-reports.md; artifact-keeper/artifact-keeper#3334, huggingface/xet-core#470,
    huggingface_hub#4475): the sandbox hub marks its safetensors Xet-backed as huggingface.co does and, like a plain
    proxy, answers xet-read-token 404. huggingface_hub 2.4.0 with hf_xet took the Xet path and failed on that 404;
    the endpoint is not the public Hub, so every byte must come over plain HTTP from it."""
    server, url = hub
    files = server.generate_repo(REPO, REV)
    before = stats(url)
    res = hs.ensure_snapshot(hs.HubClient(url, "", str(tmp_path)), str(tmp_path), REPO, REV)
    after = stats(url)
    assert res["complete"] and sorted(res["downloaded"]) == sorted(files)
    assert after["xet_token_requests"] == before["xet_token_requests"]
    assert after["bytes_served"] - before["bytes_served"] == sum(len(b) for b in files.values())
    for path, data in files.items():
        with open(os.path.join(res["snapshot"], path), "rb") as f:
            assert f.read() == data


def test_case_b_xet_forced_on_a_mirror_fails_naming_the_file_the_step_and_the_remedy(hub, tmp_path):
    """Case B (bug-reports.md; artifact-keeper/artifact-keeper#3334): with xet=always the Xet path is taken and
    the mirror's bare 404 on xet-read-token is named as such, with the remedy, not as `hub error`."""
    pytest.importorskip("hf_xet")
    server, url = hub
    before = stats(url)
    with pytest.raises(hs.WeightsError) as err:
        hs.ensure_snapshot(hs.HubClient(url, "", str(tmp_path), xet="always"), str(tmp_path), REPO, REV)
    e = err.value
    assert e.cause == "xet unavailable", e.message
    # both shards are Xet-backed and download at once: the message names the one whose failure came first
    assert re.match(r"model-0000[12]-of-00002\.safetensors of %s at %s is Xet-backed on %s" % (REPO, REV, re.escape(url)),
                    e.message), e.message
    assert "GET %s/api/models/%s/xet-read-token/%s answered HTTP 404" % (url, REPO, REV) in e.message
    assert "launchcard_hf_xet: never" in e.message
    assert stats(url)["xet_token_requests"] > before["xet_token_requests"]
    blobs = os.path.join(hs.repo_dir(str(tmp_path), REPO), "blobs")
    assert not [n for n in os.listdir(blobs) if n.endswith(".incomplete")]


# --- case C: a short transfer or a full disk partway through a download --------------------------------------

def _plant_stamp(hf_home):
    os.makedirs(hs.repo_dir(hf_home, REPO), exist_ok=True)
    with open(hs.stamp_path(hf_home, REPO, REV), "w") as f:
        f.write("1\n")  # a stale stamp: the snapshot it vouched for is gone


def _no_partial_blob_nor_stamp(hf_home):
    blobs = os.path.join(hs.repo_dir(hf_home, REPO), "blobs")
    assert not [n for n in os.listdir(blobs) if n.endswith(".incomplete")]
    assert not os.path.exists(hs.stamp_path(hf_home, REPO, REV))


def test_case_c_a_shard_cut_short_by_the_mirror_is_a_truncated_download_and_a_rerun_fetches_only_the_rest(
        hub, tmp_path):
    """Case C (bug-reports.md; huggingface/huggingface_hub#2589, padeoe/hf-mirror-site#4): the hub sends the shard's
    full Content-Length and closes after half of it, every time (huggingface_hub 2.4.0 retries the whole file, 1 s
    apart, five times). It was labelled `hub unreachable`; the cause is the file, with both sizes."""
    server, url = hub
    files = server.generate_repo(REPO, REV)
    shard = "model-00002-of-00002.safetensors"
    hf_home = str(tmp_path)
    _plant_stamp(hf_home)
    client = hs.HubClient(url, "", hf_home)
    server_hub = hub_of(url)
    server_hub.truncate.add(shard)
    try:
        with pytest.raises(hs.WeightsError) as err:
            hs.ensure_snapshot(client, hf_home, REPO, REV)
    finally:
        server_hub.truncate.discard(shard)
    assert err.value.cause == "truncated download", err.value.message
    assert "%s of %s at %s from %s: %d of %d bytes arrived" % (
        shard, REPO, REV, url, len(files[shard]) // 2, len(files[shard])) in err.value.message
    _no_partial_blob_nor_stamp(hf_home)
    first = stats(url)["files"]
    kept = set(files) - {shard}  # the other workers finished their files while the shard's retries ran
    res = hs.ensure_snapshot(client, hf_home, REPO, REV)
    assert res["complete"] and sorted(res["downloaded"]) == sorted(set(files) - kept)
    assert res["bytes_present"] == sum(len(files[p]) for p in kept)
    again = stats(url)["files"]
    assert {p: again.get(p, 0) - first.get(p, 0) for p in files} == {p: int(p not in kept) for p in files}


@pytest.fixture
def small_disk(tmp_path):
    """A 512 KiB tmpfs mounted for the test (root only): the weights filesystem, small enough to fill."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "weights"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k,mode=0755", "launchcard-test", str(mnt)],
                      capture_output=True, check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield str(mnt)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def _fill(path, leave):
    """Another writer: a file that leaves ``leave`` bytes free on the filesystem holding ``path``."""
    with open(path, "wb") as f:
        f.write(b"\0" * (hs.free_bytes(os.path.dirname(path)) - leave))


def test_case_c_a_revision_larger_than_the_free_space_is_refused_before_any_download(hub, small_disk):
    """Case C (bug-reports.md; huggingface/huggingface_hub#2742: huggingface_hub only warns when the space is
    short, then fails partway): the bytes still missing are compared with the mount's free space first."""
    server, url = hub
    files = server.generate_repo(REPO, REV)
    hf_home = os.path.join(small_disk, "models")
    _fill(os.path.join(small_disk, "other-writer"), 64 * 1024)
    before = served(url)
    with pytest.raises(hs.WeightsError) as err:
        hs.ensure_snapshot(hs.HubClient(url, "", hf_home), hf_home, REPO, REV)
    assert err.value.cause == "disk full"
    assert err.value.message.startswith("%s (the filesystem holding %s) has %d bytes free; " % (
        small_disk, hf_home, 64 * 1024))
    assert "needs %d bytes" % sum(len(b) for b in files.values()) in err.value.message
    assert served(url) == before


def test_case_c_a_disk_that_fills_during_the_download_is_disk_full_and_a_rerun_fetches_only_the_rest(
        hub, small_disk):
    """Case C (bug-reports.md; huggingface/huggingface_hub#2742): another writer fills the weights disk after the
    first file (ENOSPC mid-shard). It was labelled `hub unreachable`; the cause is the disk, with the mount, the
    bytes needed and free; nothing partial is left, and once space is freed only the missing files are fetched.
    One worker, so the files come in listing order and the disk fills as the first shard's body starts."""
    server, url = hub
    files = server.generate_repo(REPO, REV)
    hf_home = os.path.join(small_disk, "models")
    _plant_stamp(hf_home)
    filler = os.path.join(small_disk, "other-writer")
    client = hs.HubClient(url, "", hf_home)
    server_hub = hub_of(url)
    server_hub.before_body = lambda path: path == "model-00001-of-00002.safetensors" and (
        os.path.exists(filler) or _fill(filler, 16 * 1024))
    try:
        with pytest.raises(hs.WeightsError) as err:
            hs.ensure_snapshot(client, hf_home, REPO, REV, max_workers=1)
    finally:
        server_hub.before_body = None
    e = err.value
    missing = sum(len(b) for p, b in files.items() if p != "config.json")
    assert e.cause == "disk full", e.message
    assert e.message.startswith("%s (the filesystem holding %s) has " % (small_disk, hf_home))
    assert "model-00001-of-00002.safetensors and what is still missing of the revision) needs %d bytes" % missing \
        in e.message
    _no_partial_blob_nor_stamp(hf_home)
    os.unlink(filler)
    first = stats(url)["files"]
    res = hs.ensure_snapshot(client, hf_home, REPO, REV)
    assert res["complete"] and sorted(res["downloaded"]) == sorted(set(files) - {"config.json"})
    again = stats(url)["files"]
    assert {p: again.get(p, 0) - first.get(p, 0) for p in files} == {p: int(p != "config.json") for p in files}


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


# --- untrusted listings and copies: paths inside the snapshot, content by the listing's digests (issue #42) ---

@pytest.mark.parametrize("path, why", [
    ("/etc/shadow", "it is an absolute path"), ("../../../../etc/x", "it climbs out with '..'"),
    ("sub/../../x", "it climbs out with '..'"), ("sub//x", "it has an empty or '.' part"),
    ("./x", "it has an empty or '.' part"), ("x\0y", "it holds a NUL byte"), ("", "it is not a file name")])
def test_a_listed_path_that_is_not_inside_the_snapshot_is_refused_before_anything_is_read(tmp_path, path, why):
    c = FakeClient(str(tmp_path), dict(FILES, **{path: b"x"}))
    with pytest.raises(hs.WeightsError) as err:
        hs.ensure_snapshot(c, str(tmp_path), REPO, REV)
    assert err.value.cause == "unsafe listing" and "the hub listed the file %r" % path in err.value.message
    assert "(%s)" % why in err.value.message and c.downloads == [] and not (tmp_path / "hub").exists()


def test_a_listing_without_a_digest_is_refused_and_real_repofiles_give_theirs():
    with pytest.raises(hs.WeightsError) as err:
        hs.normalize_listing([{"type": "file", "path": "a.json", "size": 3}])
    assert err.value.cause == "hub error" and "a.json without a digest of its content" in err.value.message
    from huggingface_hub.hf_api import RepoFile  # the tree API's fields as huggingface_hub 2.4.0 reads them
    lfs = listed(SHARD, b"x" * 100)
    small = listed("config.json", b"{}\n")
    got = hs.normalize_listing([RepoFile(**lfs), RepoFile(**small)])
    assert [f["digest"] for f in got] == [("git-sha1", small["oid"]), ("sha256", lfs["lfs"]["oid"])]
    assert hs.normalize_listing([lfs, small]) == got


def test_the_git_blob_id_is_gits_own(tmp_path):
    """git hash-object prints a file's blob id (gitformat-loose(5)): what the Hub lists as oid."""
    import shutil
    if not shutil.which("git"):
        pytest.skip("no git")
    data = b'{"a": 1}\n\0tail'
    (tmp_path / "f").write_bytes(data)
    want = subprocess.run(["git", "hash-object", str(tmp_path / "f")], capture_output=True, text=True, check=True).stdout.strip()
    assert hv.mismatches(str(tmp_path), [{"path": "f", "size": len(data), "digest": ("git-sha1", want)}]) == {}
    assert hv.mismatches(str(tmp_path), [{"path": "f", "size": len(data), "digest": ("sha256", "0" * 64)}]) == {
        "f": hashlib.sha256(data).hexdigest()}


def test_a_file_altered_once_in_transit_is_fetched_again_and_always_altered_fails_naming_it(tmp_path):
    c = FakeClient(str(tmp_path), FILES, flip={"config.json": 1, SHARD: 1})
    res = hs.ensure_snapshot(c, str(tmp_path), REPO, REV)
    assert res["complete"] and res["refetched"] == ["config.json", SHARD] and sorted(c.downloads) == sorted(
        list(FILES) + ["config.json", SHARD])
    assert (_snap(tmp_path) / SHARD).read_bytes() == FILES[SHARD]
    other = tmp_path / "other"
    c = FakeClient(str(other), FILES, flip={"sub/tok.json": None})
    with pytest.raises(hs.WeightsError) as err:
        hs.ensure_snapshot(c, str(other), REPO, REV)
    assert err.value.cause == "checksum mismatch" and c.downloads.count("sub/tok.json") == 2
    assert err.value.message.startswith("sub/tok.json of %s at %s, downloaded from http://hub.test" % (REPO, REV))
    assert "git-sha1 %s listed" % listed("sub/tok.json", FILES["sub/tok.json"])["oid"] in err.value.message


def test_check_mode_finds_a_stampless_snapshot_of_other_content_and_reads_a_stamped_one_by_size(tmp_path):
    hs.ensure_snapshot(FakeClient(str(tmp_path), FILES), str(tmp_path), REPO, REV)
    _alter(_snap(tmp_path) / "config.json")
    res = hs.ensure_snapshot(FakeClient(str(tmp_path), FILES), str(tmp_path), REPO, REV, check_mode=True)
    assert res["would_download"] == ["config.json"] and not res["complete"] and res["files_verified"] == 2
    _plant_stamp(str(tmp_path))
    res = hs.ensure_snapshot(FakeClient(str(tmp_path), FILES), str(tmp_path), REPO, REV, check_mode=True)
    assert res["complete"] and res["files_verified"] == 0


def test_a_copy_of_other_content_is_fetched_from_the_hub_and_a_copied_link_out_is_refused(tmp_path):
    """A seed's bytes are checked like the Hub's: a copied file of the right size and other content comes from the
    Hub once (the seed is not asked again); an entry the copy made a link outside the cache fails, read by nobody."""
    import shutil
    seed, peer = _seed_and_copy(tmp_path)
    _alter(_snap(seed) / SHARD)
    shutil.copytree(seed / "hub", peer / "hub", symlinks=True)
    c = FakeClient(str(peer), FILES)
    res = hs.ensure_snapshot(c, str(peer), REPO, REV, copy_from="w1", copied=True)
    assert res["complete"] and res["changed"] and res["refetched"] == [SHARD] and c.downloads == [SHARD]
    assert (_snap(peer) / SHARD).read_bytes() == FILES[SHARD]
    secret = tmp_path / "secret"
    secret.write_bytes(b"{}\n")  # the size, even the bytes, of config.json
    os.unlink(_snap(peer) / "config.json")
    os.symlink(str(secret), _snap(peer) / "config.json")
    with pytest.raises(hs.WeightsError) as err:
        hs.ensure_snapshot(FakeClient(str(peer), FILES), str(peer), REPO, REV, copy_from="w1", copied=True)
    assert err.value.cause == "unsafe listing" and "points at %s, outside" % secret in err.value.message
    assert secret.read_bytes() == b"{}\n"
    blob = os.path.realpath(_snap(peer) / "sub" / "tok.json")  # a blob the copy made a link out: never read
    os.unlink(blob)
    os.symlink(str(secret), blob)
    os.unlink(_snap(peer) / "config.json")
    with pytest.raises(hs.WeightsError) as err:
        hs.ensure_snapshot(FakeClient(str(peer), FILES), str(peer), REPO, REV, copy_from="w1", copied=True)
    assert err.value.cause == "unsafe listing" and "%s, the blob of %s, is a symlink" % (
        blob, _snap(peer) / "sub" / "tok.json") in err.value.message


def test_a_token_goes_to_plain_http_only_when_allowed():
    assert hv.plain_http_token("https://hub.internal", "hf_x") is None
    assert hv.plain_http_token("http://hub.internal", "") is None
    assert hv.plain_http_token("http://hub.internal", "hf_x", allowed=True) is None
    why = hv.plain_http_token("HTTP://me:pw@hub.internal:8080/", "hf_x")
    assert why.startswith("the Hub endpoint http://hub.internal:8080 is plain HTTP") and "pw" not in why


def _snap(hf_home):
    return hf_home / "hub" / "models--zai-org--GLM-5.3-Flash" / "snapshots" / REV


def _alter(entry):
    """Invert the first byte of the blob ``entry`` points at: same size, other content."""
    with open(os.path.realpath(entry), "r+b") as f:
        first = f.read(1)
        f.seek(0)
        f.write(bytes([first[0] ^ 0xFF]))


# --- snapshot_download: parallel workers, and the progress another module call reads -------------------------

def test_files_download_in_parallel_with_max_workers_and_one_at_a_time_with_one(hub, tmp_path):
    """Issue #29 item 6: snapshot_download's workers. The hub holds each file GET open a while, so downloads that
    run at once overlap there; the old client fetched one file after another (never two GETs at once)."""
    server, url = hub
    files = server.generate_repo(REPO, REV)
    server_hub = hub_of(url)
    server_hub.delay = 1.0  # long enough for every worker to reach its GET while the first is held
    try:
        server_hub.stats["max_file_gets_at_once"] = 0
        res = hs.ensure_snapshot(hs.HubClient(url, "", str(tmp_path / "eight")), str(tmp_path / "eight"), REPO, REV)
        parallel = stats(url)["max_file_gets_at_once"]
        assert parallel == len(files)  # 5 files, 8 workers (huggingface_hub's default): all at once
        server_hub.stats["max_file_gets_at_once"] = 0
        one = hs.ensure_snapshot(hs.HubClient(url, "", str(tmp_path / "one")), str(tmp_path / "one"), REPO, REV,
                                 max_workers=1)
        serial = stats(url)["max_file_gets_at_once"]
    finally:
        server_hub.delay = 0.0
    assert res["complete"] and one["complete"] and sorted(res["downloaded"]) == sorted(files)
    assert serial == 1
    assert hs.DEFAULT_MAX_WORKERS == 8


def test_the_progress_file_counts_the_bytes_on_disk_while_the_download_runs(hub, tmp_path):
    """Issue #29 item 6: while snapshot_download runs, the progress file says how many bytes of the revision are
    on disk and how many there are; another process reads it (read_progress) while the lock says it runs."""
    server, url = hub
    files = server.generate_repo(REPO, REV)
    total = sum(len(b) for b in files.values())
    server_hub = hub_of(url)
    server_hub.delay = 0.3
    path = str(tmp_path / "progress.json")
    seen = []

    def watch():
        while True:
            doc = hp.read_progress(path, wait=0.1, poll=0.02)
            seen.append(doc)
            if doc["state"] in ("done", "failed", "killed"):
                return

    reader = threading.Thread(target=watch)
    try:
        with hp.ProgressFile(path, REPO, REV) as report:
            reader.start()
            res = hs.ensure_snapshot(hs.HubClient(url, "hf_secretTOKEN", str(tmp_path)), str(tmp_path), REPO, REV,
                                     max_workers=1, progress=report, progress_interval=0.05)
    finally:
        server_hub.delay = 0.0
    reader.join(30)
    assert res["complete"]
    running = [d for d in seen if d["running"] and d["state"] == "downloading"]
    assert running and all(d["bytes_total"] == total and d["files_total"] == len(files) for d in running)
    assert any(0 < d["bytes_done"] < total for d in running)
    assert [d["bytes_done"] for d in running] == sorted(d["bytes_done"] for d in running)
    assert "of %s" % hp._size(total) in running[-1]["msg"] and "files" in running[-1]["msg"]
    final = seen[-1]
    assert final["state"] == "done" and not final["running"] and final["bytes_done"] == total
    assert final["files_done"] == len(files) and final["msg"].startswith("done: %s of %s (100%%), 5 of 5 files" % (
        hp._size(total), hp._size(total)))
    assert os.stat(path).st_mode & 0o777 == 0o600
    with open(path) as f:
        text = f.read()
    assert "hf_secretTOKEN" not in text and url not in text
    assert not [n for n in os.listdir(str(tmp_path)) if n.startswith(".progress-")]  # no temporary file left


def test_a_killed_download_reads_as_killed_and_a_missing_file_is_waited_for(tmp_path):
    """A download whose process died without a final state (the async time limit kills it) is not running,
    whatever its file last said; a file not written yet is waited for, then reported as not started."""
    path = str(tmp_path / "progress.json")
    child = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; sys.path[:0] = %r\n"
        "from ansible_collections.launchcard.inference.plugins.module_utils import _hf_progress as hp\n"
        "p = hp.ProgressFile(%r, 'o/n', 'r').__enter__()\n"
        "p({'state': 'downloading', 'bytes_done': 5, 'bytes_total': 10, 'files_done': 0, 'files_total': 2})\n"
        "print('ready', flush=True); time.sleep(60)\n") % (sys.path, path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        doc = hp.read_progress(path, wait=0.2)
        assert doc["running"] and doc["state"] == "downloading" and doc["msg"] == "5 bytes of 10 bytes (50%), 0 of 2 files"
    finally:
        child.kill()
        child.wait()
    doc = hp.read_progress(path, wait=5)
    assert not doc["running"] and doc["state"] == "killed" and doc["msg"].startswith("killed: 5 bytes of 10 bytes")
    start = time.time()
    doc = hp.read_progress(str(tmp_path / "absent.json"), wait=0.3)
    assert time.time() - start >= 0.3 and not doc["running"] and doc["state"] is None and doc["msg"] == "not started"
