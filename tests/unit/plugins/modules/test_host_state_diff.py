# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_state's record in --diff: a record that changes (upgrade.yml's untouched hosts, a new card) shows why."""

from __future__ import annotations

import json

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.modules import host_state


def call(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            host_state.main()
    return json.loads(capsys.readouterr().out)


def test_a_record_that_would_change_is_the_diff_and_an_unchanged_one_has_none(tmp_path, capsys):
    (tmp_path / "units").mkdir()
    (tmp_path / "units" / "launchcard-a.service").write_text("[Service]\nExecStart=/bin/true\n")
    args = {"state": "present", "path": str(tmp_path / "state.json"), "directory": str(tmp_path / "units"),
            "card": {"sha256": "0" * 64, "revision": "1" * 40}, "_ansible_diff": True}
    first = call(capsys, args)
    assert first["changed"] and first["diff"]["before"] == ""
    assert '"revision": "%s"' % ("1" * 40) in first["diff"]["after"]
    again = call(capsys, args)
    assert not again["changed"] and "diff" not in again
    moved = call(capsys, dict(args, card={"sha256": "0" * 64, "revision": "2" * 40}, _ansible_check_mode=True))
    assert moved["changed"] and '"revision": "%s"' % ("1" * 40) in moved["diff"]["before"]
    assert '"revision": "%s"' % ("2" * 40) in moved["diff"]["after"] and '"previous"' not in moved["diff"]["after"]
    assert json.loads((tmp_path / "state.json").read_text())["card"]["revision"] == "1" * 40  # check mode wrote nothing
