# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the preflight call reads for the deploy's later setup steps: paths, users, the weights' stamp."""

from __future__ import annotations

import hashlib
import os

from ansible_collections.launchcard.inference.plugins.module_utils._preflight_reads import (
    inspect_path,
    user_exists,
    weights_staged,
)


class _Named(object):
    def __init__(self, name):
        self.pw_name = self.gr_name = name


def _names(table):
    def lookup(num):
        if num not in table:
            raise KeyError(num)
        return _Named(table[num])
    return lookup


def test_a_file_reports_type_owner_group_mode_and_the_sha1_of_its_content(tmp_path):
    path = tmp_path / "wait-ready.py"
    path.write_bytes(b"print('ready')\n")
    os.chmod(str(path), 0o640)
    st = os.stat(str(path))
    found = inspect_path(str(path), getpwuid=_names({st.st_uid: "root"}), getgrgid=_names({st.st_gid: "wheel"}))
    assert found == {"exists": True, "type": "file", "owner": "root", "group": "wheel", "mode": "0640",
                     "checksum": hashlib.sha1(b"print('ready')\n").hexdigest()}


def test_a_directory_has_no_checksum_and_an_id_without_a_name_is_null(tmp_path):
    os.chmod(str(tmp_path), 0o755)
    found = inspect_path(str(tmp_path), getpwuid=_names({}), getgrgid=_names({}))
    assert found == {"exists": True, "type": "directory", "owner": None, "group": None, "mode": "0755",
                     "checksum": None}


def test_a_link_is_followed_and_an_absent_path_reports_nothing_but_its_absence(tmp_path):
    target = tmp_path / "target"
    target.write_text("x")
    link = tmp_path / "link"
    os.symlink(str(target), str(link))
    assert inspect_path(str(link))["type"] == "file"
    assert inspect_path(str(link))["checksum"] == hashlib.sha1(b"x").hexdigest()
    os.unlink(str(target))
    assert inspect_path(str(link)) == {"exists": False, "type": None, "owner": None, "group": None, "mode": None,
                                       "checksum": None}


def test_user_exists_asks_the_user_database():
    def getpwnam(name):
        if name != "launchcard":
            raise KeyError(name)
        return object()
    assert user_exists("launchcard", getpwnam=getpwnam) is True
    assert user_exists("nobody-here", getpwnam=getpwnam) is False
    assert user_exists("root") is True  # the real database


def test_weights_are_staged_only_while_the_snapshot_holds_the_bytes_the_stamp_records():
    assert weights_staged("1024\n", 1024) is True
    assert weights_staged("1024\n", 1000) is False  # a file truncated or removed since
    assert weights_staged("1024\n", 2048) is False  # something else put in the snapshot
    assert weights_staged(None, 1024) is False  # never stamped
    assert weights_staged("not a number", 1024) is False
    assert weights_staged("0\n", 0) is False  # an empty snapshot is never taken as staged


# -- hardware.min_gpus against the whole fleet ------------------------------------------------

from ansible_collections.launchcard.inference.plugins.module_utils._preflight import (  # noqa: E402
    accelerator_count,
    fleet_gpu_shortfalls,
)


def _res(devices=0, pci=0):
    return {"facts": {"accelerators": {"devices": [{"index": i} for i in range(devices)], "pci": {"count": pci}}}}


def _fleet_plan():
    return {"hosts": {
        "a": {"card": "c.json", "gpus_needed": 8},
        "b": {"card": "c.json", "gpus_needed": 2},
        "router": {"card": "c.json", "gpus_needed": 0},
    }}


def test_accelerator_count_reads_devices_then_the_pci_bus():
    assert accelerator_count(_res(devices=4)) == 4
    assert accelerator_count(_res(devices=0, pci=8)) == 8  # a bare host: no driver yet
    assert accelerator_count(None) is None
    assert accelerator_count({"skipped": True}) is None


def test_min_gpus_above_what_the_engine_hosts_hold_together_is_named():
    msgs = fleet_gpu_shortfalls(_fleet_plan(), {"c.json": {"hardware": {"min_gpus": 16}}},
                                {"a": _res(8), "b": _res(2), "router": _res(0)})
    assert msgs == ["hardware.min_gpus of c.json: one deployment needs at least 16 accelerators, but the 2 host(s) "
                    "that serve it have 10 together (a 8, b 2)"]


def test_min_gpus_met_unknown_or_unchecked_hosts_say_nothing():
    cards = {"c.json": {"hardware": {"min_gpus": 10}}}
    assert fleet_gpu_shortfalls(_fleet_plan(), cards, {"a": _res(8), "b": _res(2)}) == []
    # b outside --limit (no result): the fleet total is not known
    assert fleet_gpu_shortfalls(_fleet_plan(), {"c.json": {"hardware": {"min_gpus": 64}}}, {"a": _res(8)}) == []
    assert fleet_gpu_shortfalls(_fleet_plan(), {"c.json": {"hardware": {"min_gpus": None}}},
                                {"a": _res(0), "b": _res(0)}) == []
