# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory mistakes (docs/untrusted-input.md, "Inventory mistakes"): each is named at planning, on the
controller, before any host is contacted; none is ignored or silently changed.

The launch_card action runs in-process on the sandbox inventory written out as hostvars
(tests/unit/plugins/action/test_launch_card_action.py), its connection a mock that proves no host was contacted.
"""

from __future__ import annotations

import io
import json

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import MAX_CARD_BYTES, CardError, load_card
from ansible_collections.launchcard.inference.tests.unit.plugins.action.test_launch_card_action import (
    CARD,
    action,
    assert_no_host_contacted,
    failure,
    task_vars,
)


def plan(tv, args=None):
    plugin, connection = action(args)
    result = plugin.run(task_vars=tv)
    assert_no_host_contacted(connection)
    return result


# --- an explicit port that collides --------------------------------------------------------------------------------
def test_an_overridden_port_that_collides_is_an_error_naming_the_override():
    tv = task_vars()
    tv["hostvars"]["lc-vllm"]["launchcard_recipes"] = ["vllm-aggregated", "sglang-aggregated"]
    tv["hostvars"]["lc-cp"]["launchcard_recipes"] = []
    vllm_port = plan(tv)["ansible_facts"]["launchcard_plan"]["hosts"]["lc-vllm"]["instances"][0]["port"]
    tv["hostvars"]["lc-vllm"]["launchcard_argv_overrides"] = {"sglang-aggregated": {"set": {"--port": vllm_port}}}
    message = failure(plan(tv))
    assert "lc-vllm: launchcard_argv_overrides['sglang-aggregated'].set['--port']: --port %d is taken on this host " \
           "by glm-5.3-flash-vllm-aggregated-0; an overridden port is not moved" % vllm_port in message


def test_a_card_port_that_collides_is_still_moved():
    tv = task_vars()
    tv["hostvars"]["lc-vllm"]["launchcard_recipes"] = ["sglang-aggregated", "sglang-aggregated"]
    tv["hostvars"]["lc-cp"]["launchcard_recipes"] = []
    first, second = plan(tv)["ansible_facts"]["launchcard_plan"]["hosts"]["lc-vllm"]["instances"]
    assert second["port"] == first["port"] + 1


# --- oversized cards -----------------------------------------------------------------------------------------------
def _huge(tmp_path):
    """A well-formed card padded past the limit (a long description): only its size is wrong."""
    doc = json.load(open(CARD))
    doc["description"] = "x" * MAX_CARD_BYTES
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_card_file_over_the_limit_is_refused_unparsed(tmp_path, monkeypatch):
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _card_validate

    parsed = []
    monkeypatch.setattr(_card_validate, "parse_card_text", lambda *a: parsed.append(a))
    path = _huge(tmp_path)
    message = failure(plan(task_vars(card=str(path))))
    assert message == "launchcard_card_src: %s holds more than %d bytes (4 MiB), the most a card may hold; it was " \
                      "not read further" % (path, MAX_CARD_BYTES)
    assert parsed == []
    message = failure(plan(task_vars(card=None), {"src": str(path)}))
    assert message.startswith("src: %s holds more than" % path)


def test_a_card_url_over_the_limit_is_refused_after_one_byte_more(tmp_path, monkeypatch):
    from ansible_collections.launchcard.inference.plugins.action import launch_card

    body = _huge(tmp_path).read_bytes()
    reads = []

    class Response(io.BytesIO):
        def read(self, size=-1):
            reads.append(size)
            return super().read(size)

    monkeypatch.setattr(launch_card, "open_url", lambda *a, **k: Response(body))
    message = failure(plan(task_vars(card="https://cards.invalid/huge.json")))
    assert message.startswith("launchcard_card_src: https://cards.invalid/huge.json holds more than %d bytes"
                              % MAX_CARD_BYTES)
    assert reads == [MAX_CARD_BYTES + 1]


def test_the_card_parser_refuses_text_over_the_limit_itself():
    with pytest.raises(CardError) as exc:
        load_card(b" " * (MAX_CARD_BYTES + 1), "big.json")
    assert "over the %d a card may hold" % MAX_CARD_BYTES in str(exc.value)
