# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scrape_targets module in-process, with AnsibleModule's own atomic_move: one call writes a monitoring host's
file_sd files, a second changes nothing, check mode and --diff say what would change, a bad path fails the call."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.modules import scrape_targets


def call(capsys, args, check_mode=False, diff=False):
    with patch_module_args(dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)):
        with pytest.raises(SystemExit) as info:
            scrape_targets.main()
    return info.value.code, json.loads(capsys.readouterr().out)


def test_one_call_writes_every_file_and_a_second_changes_nothing(tmp_path, capsys):
    folder = tmp_path / "file_sd"
    args = {"files": [{"path": str(folder / "launchcard-engines.json"), "content": "[]\n"},
                      {"path": str(folder / "launchcard-nodes.json"), "content": '[{"targets": ["10.0.0.1:9100"]}]\n'}]}
    # a strict umask: the files still end 0644 and the folder 0755, as copy's and file's mode gave them
    old = os.umask(0o077)
    try:
        rc, res = call(capsys, args, diff=True)
    finally:
        os.umask(old)
    assert rc == 0 and res["changed"] and res["folders"] == [str(folder)]
    assert [f["action"] for f in res["files"]] == ["created", "created"]
    assert stat.S_IMODE(os.stat(str(folder)).st_mode) == 0o755
    assert [stat.S_IMODE(os.stat(f["path"]).st_mode) for f in args["files"]] == [0o644, 0o644]
    assert [d.get("after") for d in res["diff"]] == [{"path": str(folder), "state": "directory"}, "[]\n",
                                                     '[{"targets": ["10.0.0.1:9100"]}]\n']
    rc, res = call(capsys, args, diff=True)
    assert rc == 0 and not res["changed"] and "diff" not in res and res["folders"] == []
    assert [f["action"] for f in res["files"]] == ["unchanged", "unchanged"]


def test_check_mode_with_diff_shows_the_text_before_and_after_and_writes_nothing(tmp_path, capsys):
    os.chmod(str(tmp_path), 0o755)
    path = tmp_path / "launchcard-gpus.json"
    path.write_text('[{"targets": ["10.0.0.1:9400"]}]\n')
    os.chmod(str(path), 0o644)
    rc, res = call(capsys, {"files": [{"path": str(path), "content": "[]\n"}]}, check_mode=True, diff=True)
    assert rc == 0 and res["changed"] and res["files"] == [{"path": str(path), "action": "updated", "changed": True}]
    assert res["diff"] == [{"before_header": str(path), "before": '[{"targets": ["10.0.0.1:9400"]}]\n',
                            "after_header": str(path), "after": "[]\n"}]
    assert path.read_text() == '[{"targets": ["10.0.0.1:9400"]}]\n'


def test_a_relative_path_fails_the_call_naming_its_entry_and_nothing_is_written(tmp_path, capsys):
    rc, res = call(capsys, {"files": [{"path": str(tmp_path / "a.json"), "content": "[]\n"},
                                      {"path": "file_sd/b.json", "content": "[]\n"}]})
    assert rc == 1 and res["failed"] and res["msg"].startswith("files[1].path: 'file_sd/b.json' is relative")
    assert os.listdir(str(tmp_path)) == []


def test_with_host_only_its_entries_are_written_and_its_folder_is_set_0755(tmp_path, capsys):
    folder = tmp_path / "file_sd"
    folder.mkdir(mode=0o700)
    entries = [{"host": "prom-a", "path": str(folder / "a.json"), "content": "[]\n"},
               {"host": "prom-b", "path": str(folder / "b.json"), "content": "[]\n"}]
    rc, res = call(capsys, {"files": entries, "host": "prom-a"}, diff=True)
    assert rc == 0 and res["changed"] and [f["path"] for f in res["files"]] == [entries[0]["path"]]
    assert sorted(os.listdir(str(folder))) == ["a.json"] and res["folders"] == [str(folder)]
    assert stat.S_IMODE(os.stat(str(folder)).st_mode) == 0o755
    assert res["diff"][0] == {"before": {"path": str(folder), "mode": "0700"}, "after": {"path": str(folder), "mode": "0755"}}
    rc, res = call(capsys, {"files": entries, "host": "prom-a"})
    assert rc == 0 and not res["changed"] and res["folders"] == []
