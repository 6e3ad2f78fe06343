# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hf_snapshot module end to end in-process: the real huggingface_hub client against the sandbox
hub endpoint (tests/sandbox/hub) on 127.0.0.1; check mode, a download, a no-op, refused input."""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.modules import hf_snapshot

pytest.importorskip("huggingface_hub")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
REPO = "zai-org/GLM-5.3-Flash"
REV = "46a050bec13002ad29ee795c16e61cf4fa3c4a9c"
TOKEN = "hf_moduleTESTtoken42"


@pytest.fixture(scope="module")
def hub():
    sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
    from hub import server
    srv = server.start(server.Hub(["%s@%s" % (REPO, REV)]))
    yield "http://127.0.0.1:%d" % srv.server_address[1], server.generate_repo(REPO, REV)
    srv.shutdown()
    srv.server_close()


def run(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            hf_snapshot.main()
    out = capsys.readouterr().out
    assert TOKEN not in out
    return info.value.code, json.loads(out)


def test_check_mode_then_download_then_no_op(hub, tmp_path, capsys):
    url, files = hub
    args = dict(repo=REPO, revision=REV, hf_home=str(tmp_path), endpoint=url, token=TOKEN,
                allow_http_token=True)  # the hub on 127.0.0.1 is plain HTTP
    rc, out = run(capsys, _ansible_check_mode=True, **args)
    assert rc == 0 and out["changed"] and sorted(out["would_download"]) == sorted(files)
    assert out["bytes_done"] == 0 and not (tmp_path / "hub" / "models--zai-org--GLM-5.3-Flash" / "snapshots").exists()
    rc, out = run(capsys, **args)
    assert rc == 0 and out["changed"] and out["complete"]
    assert out["bytes_done"] == out["bytes_total"] == sum(len(b) for b in files.values())
    rc, out = run(capsys, **args)
    assert rc == 0 and not out["changed"] and out["bytes_done"] == 0


def test_refused_input_names_the_field(hub, tmp_path, capsys):
    url, dummy = hub
    rc, out = run(capsys, repo=REPO, revision="main", hf_home=str(tmp_path), endpoint=url)
    assert rc == 1 and out["cause"] == "wrong revision" and "revision must be a commit hash" in out["msg"]
    rc, out = run(capsys, repo=REPO, revision=REV, hf_home=str(tmp_path), endpoint=url, venv=str(tmp_path / "novenv"))
    assert rc == 1 and "was not made with this Python" in out["msg"]


def test_peer_source_lists_then_verifies_the_copy_and_failures_name_seed_and_copies(hub, tmp_path, capsys):
    import shutil
    url, files = hub
    seed, peer = tmp_path / "seed", tmp_path / "peer"
    rc, out = run(capsys, repo=REPO, revision=REV, hf_home=str(seed), endpoint=url, copies=["w2", "w3"])
    assert rc == 0 and out["complete"]
    args = dict(repo=REPO, revision=REV, hf_home=str(peer), endpoint=url, source="peer", seed="w1")
    rc, out = run(capsys, **args)
    assert rc == 0 and not out["complete"] and not out["changed"] and out["seed"] == "w1"
    assert sorted(out["would_copy"]) == sorted(files) and out["bytes_done"] == 0
    rc, out = run(capsys, copied=True, **args)
    assert rc == 1 and out["cause"] == "incomplete copy"
    assert "from the seed w1" in out["msg"] and "(this host copies the revision from the seed w1)" in out["msg"]
    shutil.copytree(seed / "hub", peer / "hub", symlinks=True)
    rc, out = run(capsys, copied=True, **args)
    assert rc == 0 and out["complete"] and not out["changed"]
    # a seed that cannot stage the revision says whose copies it stops; source=peer needs its seed
    wrong = dict(repo=REPO, revision="0" * 40, hf_home=str(seed), endpoint=url, copies=["w2", "w3"])
    rc, out = run(capsys, **wrong)
    assert rc == 1 and out["cause"] == "wrong revision"
    assert out["msg"].endswith("(this host is the seed of its card: w2, w3 copy the revision from it)"), out["msg"]
    rc, out = run(capsys, repo=REPO, revision=REV, hf_home=str(peer), endpoint=url, source="peer")
    assert rc == 1 and "seed" in out["msg"]


def test_case_b_xet_option_plain_http_from_a_mirror_by_default_and_a_named_failure_when_forced(hub, tmp_path, capsys):
    """Case B (bug-reports.md; artifact-keeper/artifact-keeper#3334, huggingface/xet-core#470): the sandbox hub passes
    the Hub's Xet headers and has no Xet storage. By default (xet=auto) the module reads every byte over plain HTTP
    from it; with xet=always the failure names the file, the Xet step and the remedy."""
    pytest.importorskip("hf_xet")
    url, files = hub
    rc, out = run(capsys, repo=REPO, revision=REV, hf_home=str(tmp_path / "auto"), endpoint=url)
    assert rc == 0 and out["complete"] and out["bytes_done"] == sum(len(b) for b in files.values())
    rc, out = run(capsys, repo=REPO, revision=REV, hf_home=str(tmp_path / "always"), endpoint=url, xet="always")
    assert rc == 1 and out["cause"] == "xet unavailable"
    # both shards are Xet-backed and download at once: the message names the one whose failure came first
    assert re.match(r"xet unavailable: model-0000[12]-of-00002\.safetensors of %s at %s is Xet-backed" % (REPO, REV),
                    out["msg"]), out["msg"]
    assert "xet-read-token/%s answered HTTP 404" % REV in out["msg"] and "launchcard_hf_xet: never" in out["msg"]


def test_progress_file_is_owner_only_holds_no_secret_and_the_progress_module_reads_it(hub, tmp_path, capsys):
    """Issue #29 item 6: the module writes its progress where hf_snapshot_progress reads it; the token and the
    endpoint never reach that file; check mode writes none."""
    from ansible_collections.launchcard.inference.plugins.modules import hf_snapshot_progress
    url, files = hub
    progress = tmp_path / "progress.json"
    args = dict(repo=REPO, revision=REV, hf_home=str(tmp_path / "models"), endpoint=url, token=TOKEN, allow_http_token=True,
                progress_file=str(progress), max_workers=2)
    rc, out = run(capsys, _ansible_check_mode=True, **args)
    assert rc == 0 and out["changed"] and not progress.exists()
    rc, out = run(capsys, **args)
    assert rc == 0 and out["complete"]
    assert progress.stat().st_mode & 0o777 == 0o600
    text = progress.read_text()
    assert TOKEN not in text and url not in text
    doc = json.loads(text)
    total = sum(len(b) for b in files.values())
    assert doc["state"] == "done" and doc["bytes_done"] == doc["bytes_total"] == total
    assert doc["files_done"] == doc["files_total"] == len(files) and doc["repo"] == REPO and doc["revision"] == REV
    with patch_module_args(dict(path=str(progress), wait=0)):
        with pytest.raises(SystemExit):
            hf_snapshot_progress.main()
    read = json.loads(capsys.readouterr().out)
    assert not read["changed"] and not read["running"] and read["state"] == "done"
    assert read["msg"].startswith("done: ") and "(100%%), %d of %d files" % (len(files), len(files)) in read["msg"]
    # a failure leaves the final state failed, with the cause
    wrong = dict(args)
    wrong["revision"] = "0" * 40
    rc, out = run(capsys, **wrong)
    assert rc == 1 and out["cause"] == "wrong revision"
    doc = json.loads(progress.read_text())
    assert doc["state"] == "failed" and doc["cause"] == "wrong revision" and doc["revision"] == "0" * 40


def test_max_workers_below_one_is_refused_and_a_missing_progress_folder_is_made_owner_only(hub, tmp_path, capsys):
    url, dummy = hub
    args = dict(repo=REPO, revision=REV, hf_home=str(tmp_path / "models"), endpoint=url)
    rc, out = run(capsys, max_workers=0, **args)
    assert rc == 1 and "max_workers must be 1 or more" in out["msg"]
    rc, out = run(capsys, progress_file=str(tmp_path / "run" / "p.json"), **args)
    assert rc == 0 and out["complete"] and (tmp_path / "run").stat().st_mode & 0o777 == 0o700
    assert json.loads((tmp_path / "run" / "p.json").read_text())["state"] == "done"
    assert not (tmp_path / "run" / "p.json.lock").exists()
