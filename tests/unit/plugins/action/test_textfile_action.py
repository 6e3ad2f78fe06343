# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine_drain and http_health action plugins: the module, with the collection's textfile directory."""

from __future__ import annotations

from unittest.mock import MagicMock

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible_collections.launchcard.inference.plugins.action import engine_drain, http_health
from ansible_collections.launchcard.inference.plugins.plugin_utils._textfile import TEXTFILE_DIR


def plugin(cls, args):
    task = MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = False
    connection = MagicMock()
    connection._shell.tmpdir = None
    action = cls(task, connection, PlayContext(), DataLoader(), None, None)
    action._execute_module = MagicMock(return_value={"changed": True})
    return action


@pytest.mark.parametrize("module, name", [(engine_drain, "engine_drain"), (http_health, "http_health")])
def test_the_module_runs_with_the_collection_s_textfile_directory_unless_one_is_given(module, name):
    for given, sent in (({}, TEXTFILE_DIR), ({"directory": "/srv/prom"}, "/srv/prom")):
        action = plugin(module.ActionModule, {"endpoints": [], "textfile": given})
        assert action.run(task_vars={})["changed"] is True
        kw = action._execute_module.call_args.kwargs
        assert kw["module_name"] == "launchcard.inference." + name
        assert kw["module_args"] == {"endpoints": [], "textfile": {"directory": sent}}
    action = plugin(module.ActionModule, {"endpoints": []})
    action.run(task_vars={})
    assert action._execute_module.call_args.kwargs["module_args"] == {"endpoints": []}
