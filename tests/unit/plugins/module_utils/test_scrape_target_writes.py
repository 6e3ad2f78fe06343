# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The file_sd files as the scrape_targets module writes them on a monitoring host (module_utils/_scrape_targets.py),
on real files in a temporary folder. (The name is not test_scrape_targets.py: plugin_utils' tests hold that one.)"""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils import _scrape_targets as scrape_targets

ENGINES = '[\n  {\n    "labels": {"card": "c"},\n    "targets": ["10.0.0.1:8000"]\n  }\n]\n'


def moves():
    """A stand-in for AnsibleModule.atomic_move that records its calls."""
    done = []

    def move(tmp, path):
        done.append((os.path.dirname(tmp), path))
        os.rename(tmp, path)
    move.done = done
    return move


def mode(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


@pytest.fixture(autouse=True)
def monitoring_folder(tmp_path):
    """pytest makes tmp_path 0700: these tests write into a folder already as the module leaves it."""
    os.chmod(str(tmp_path), 0o755)


def test_the_files_folder_that_was_there_is_set_0755_once(tmp_path):
    os.chmod(str(tmp_path), 0o750)
    files = [{"path": str(tmp_path / "a.json"), "content": "[]\n"}, {"path": str(tmp_path / "b.json"), "content": "[]\n"}]
    changed, results, folders, diff = scrape_targets.write(files, True, moves())
    assert changed and folders == [str(tmp_path)] and mode(tmp_path) == 0o750
    assert diff[0] == {"before": {"path": str(tmp_path), "mode": "0750"}, "after": {"path": str(tmp_path), "mode": "0755"}}
    changed, results, folders, diff = scrape_targets.write(files, False, moves())
    assert mode(tmp_path) == 0o755 and folders == [str(tmp_path)] and len(diff) == 3
    assert scrape_targets.write(files, False, moves())[:3] == (False, [dict(r, action="unchanged", changed=False) for r in results], [])


def test_for_host_keeps_the_entries_of_that_host_and_those_naming_none():
    files = [{"host": "a", "path": "/x/1"}, {"host": "b", "path": "/x/2"}, {"path": "/x/3"}]
    assert [f["path"] for f in scrape_targets.for_host(files, "a")] == ["/x/1", "/x/3"]


def test_missing_folders_are_made_and_every_file_written_through_a_rename_beside_it(tmp_path):
    folder = tmp_path / "etc" / "file_sd"
    files = [{"path": str(folder / "launchcard-engines.json"), "content": ENGINES},
             {"path": str(folder / "launchcard-gpus.json"), "content": "[]\n"}]
    move = moves()
    changed, results, folders, diff = scrape_targets.write(files, False, move)
    assert changed and folders == [str(tmp_path / "etc"), str(folder)]
    assert [(r["action"], r["changed"]) for r in results] == [("created", True), ("created", True)]
    assert (folder / "launchcard-engines.json").read_text() == ENGINES and (folder / "launchcard-gpus.json").read_text() == "[]\n"
    assert mode(folder) == 0o755 and mode(tmp_path / "etc") == 0o755
    assert mode(folder / "launchcard-engines.json") == 0o644 and mode(folder / "launchcard-gpus.json") == 0o644
    # the temporary file sat in the file's own folder (a rename, not a copy across filesystems), and none is left
    assert move.done == [(str(folder), f["path"]) for f in files]
    assert sorted(os.listdir(str(folder))) == ["launchcard-engines.json", "launchcard-gpus.json"]
    assert diff[0] == {"before": {"path": str(tmp_path / "etc"), "state": "absent"},
                       "after": {"path": str(tmp_path / "etc"), "state": "directory"}}
    assert diff[2] == {"before_header": files[0]["path"], "before": "", "after_header": files[0]["path"], "after": ENGINES}


def test_an_unchanged_file_is_not_touched_and_a_changed_one_is_replaced(tmp_path):
    same, other = tmp_path / "launchcard-nodes.json", tmp_path / "launchcard-engines.json"
    same.write_text("[]\n")
    other.write_text("[]\n")
    os.chmod(str(same), 0o644)
    os.chmod(str(other), 0o600)
    os.utime(str(same), (1000000000, 1000000000))
    move = moves()
    changed, results, folders, diff = scrape_targets.write(
        [{"path": str(same), "content": "[]\n"}, {"path": str(other), "content": ENGINES}], False, move)
    assert changed and folders == [] and move.done == [(str(tmp_path), str(other))]
    assert [r["action"] for r in results] == ["unchanged", "updated"] and not results[0]["changed"]
    assert os.stat(str(same)).st_mtime == 1000000000
    # the replaced file had 0600: it ends 0644 whatever the rename carried over
    assert other.read_text() == ENGINES and mode(other) == 0o644
    assert diff == [{"before_header": str(other), "before": "[]\n", "after_header": str(other), "after": ENGINES}]
    # a second pass changes nothing
    assert scrape_targets.write([{"path": str(same), "content": "[]\n"}, {"path": str(other), "content": ENGINES}],
                                False, move) == (False, [{"path": str(same), "action": "unchanged", "changed": False},
                                                         {"path": str(other), "action": "unchanged", "changed": False}], [], [])


def test_a_file_with_the_same_text_and_another_mode_only_gets_its_mode(tmp_path):
    path = tmp_path / "launchcard-gpus.json"
    path.write_text("[]\n")
    os.chmod(str(path), 0o600)
    os.utime(str(path), (1000000000, 1000000000))
    move = moves()
    changed, results, folders, diff = scrape_targets.write([{"path": str(path), "content": "[]\n"}], False, move)
    assert changed and results[0]["action"] == "mode" and move.done == []
    assert mode(path) == 0o644 and os.stat(str(path)).st_mtime == 1000000000
    assert diff == [{"before": {"path": str(path), "mode": "0600"}, "after": {"path": str(path), "mode": "0644"}}]


def test_check_mode_says_what_would_change_and_writes_nothing(tmp_path):
    kept = tmp_path / "kept.json"
    kept.write_text("[]\n")
    os.chmod(str(kept), 0o644)
    files = [{"path": str(kept), "content": ENGINES}, {"path": str(tmp_path / "new" / "a.json"), "content": "[]\n"},
             {"path": str(tmp_path / "new" / "b.json"), "content": "[]\n"}]
    move = moves()
    changed, results, folders, diff = scrape_targets.write(files, True, move)
    assert changed and [r["action"] for r in results] == ["updated", "created", "created"]
    assert folders == [str(tmp_path / "new")] and move.done == []
    assert kept.read_text() == "[]\n" and sorted(os.listdir(str(tmp_path))) == ["kept.json"]
    assert [d.get("before") for d in diff] == ["[]\n", {"path": str(tmp_path / "new"), "state": "absent"}, "", ""]


@pytest.mark.parametrize("path,message", [
    ("file_sd/launchcard-engines.json", "files[1].path: 'file_sd/launchcard-engines.json' is relative"),
    ("~/launchcard-engines.json", "files[1].path: '~/launchcard-engines.json' is relative"),
    ("/etc/prometheus/../shadow", "files[1].path: '/etc/prometheus/../shadow' has a '..' segment"),
    ("/etc/prometheus/file_sd/", "files[1].path: '/etc/prometheus/file_sd/' names a folder"),
    ("", "files[1].path: a path is required"),
    ("/TMP/a.json", "files[1].path: '/TMP/a.json' is given twice (files[0].path)"),
])
def test_a_bad_path_is_refused_naming_its_entry_before_anything_is_written(tmp_path, path, message):
    first = str(tmp_path / "a.json")
    files = [{"path": first, "content": "[]\n"}, {"path": path.replace("/TMP", str(tmp_path)), "content": "[]\n"}]
    with pytest.raises(ValueError) as info:
        scrape_targets.write(files, False, moves())
    assert str(info.value).startswith(message.replace("/TMP", str(tmp_path))), str(info.value)
    assert not os.path.exists(first)


def test_a_folder_where_a_file_goes_fails_and_a_dot_in_a_name_is_a_name(tmp_path):
    (tmp_path / "launchcard-engines.json").mkdir()
    with pytest.raises(OSError, match="is there and is not a file"):
        scrape_targets.write([{"path": str(tmp_path / "launchcard-engines.json"), "content": "[]\n"}], False, moves())
    dotted = str(tmp_path / "..sd" / "a..json")
    assert scrape_targets.write([{"path": dotted, "content": "[]\n"}], False, moves())[1][0]["action"] == "created"
