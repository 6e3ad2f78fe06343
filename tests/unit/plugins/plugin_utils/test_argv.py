# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argv reader/rewriter: both option forms, nargs groups, token fidelity."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.launchcard.inference.plugins.plugin_utils._argv import Argv

ROUTER = ["python", "-m", "sglang_router.launch_router", "--pd-disaggregation", "--mini-lb",
          "--prefill", "http://127.0.0.1:31000", "8998", "--decode", "http://127.0.0.1:32000",
          "--host", "0.0.0.0", "--port", "30000"]


# -- reading -----------------------------------------------------------------
def test_space_and_equals_forms_read_the_same():
    assert Argv(["x", "--port", "30000"]).get("--port") == "30000"
    assert Argv(["x", "--port=30000"]).get("--port") == "30000"
    assert Argv(["x", "--port=30000"]).get_int("--port", 1) == 30000


def test_equals_form_keeps_everything_after_the_first_equals():
    a = Argv(["x", '--kv-transfer-config={"a":"b=c"}'])
    assert a.values("--kv-transfer-config") == ['{"a":"b=c"}']


def test_aliases_and_last_occurrence_wins():
    a = Argv(["vllm", "serve", "m", "-tp", "2", "--tensor-parallel-size", "4"])
    assert a.get(("--tensor-parallel-size", "-tp")) == "4"
    assert Argv(["vllm", "serve", "m", "-tp", "2"]).get(("--tensor-parallel-size", "-tp")) == "2"
    assert Argv(["x", "--port", "1", "--port", "2"]).get("--port") == "2"


def test_absent_flag_gives_default_and_empty_values():
    a = Argv(["x", "--a", "1"])
    assert a.get("--b") is None
    assert a.get("--b", "d") == "d"
    assert a.values("--b") == []
    assert a.get_int("--b", 7) == 7
    assert not a.has("--b")


def test_boolean_flag_is_present_without_values():
    a = Argv(["sglang", "serve", "--encoder-only", "--host", "0.0.0.0"])
    assert a.has("--encoder-only")
    assert a.values("--encoder-only") == []
    assert a.get("--encoder-only") is None


def test_prefix_of_a_flag_is_not_that_flag():
    a = Argv(["x", "--tp-size", "4", "--port-range", "5"])
    assert not a.has("--tp")
    assert a.get("--port") is None


def test_nargs_plus_takes_tokens_up_to_the_next_option():
    a = Argv(["sglang", "serve", "--encoder-urls", "http://a:1", "http://b:2", "--port", "3"])
    assert a.values("--encoder-urls") == ["http://a:1", "http://b:2"]
    # a single-dash option ends the values too (vLLM's -tp, -q)
    b = Argv(["vllm", "serve", "m", "--served-model-name", "a", "b", "-tp", "2"])
    assert b.values("--served-model-name") == ["a", "b"]
    assert b.get(("--tensor-parallel-size", "-tp")) == "2"
    # argparse's rule: a negative number, "-" and a token with a space are values
    assert Argv(["x", "--offset", "-1", "--y"]).get("--offset") == "-1"
    assert Argv(["x", "--scale", "-.5"]).get("--scale") == "-.5"
    assert Argv(["x", "--f", "-"]).get("--f") == "-"
    assert Argv(["x", "--note", "-a b"]).get("--note") == "-a b"
    # ... but an option with an inline value holding a space is still an option
    assert Argv(["x", "--urls", "u1", "--note=a b"]).values("--urls") == ["u1"]


def test_replace_groups_does_not_swallow_a_following_short_option():
    a = Argv(["x", "--encoder-urls", "http://a:1", "-q", "fp8"])
    a.replace_groups("--encoder-urls", [["http://b:2"]])
    assert a.tokens == ["x", "--encoder-urls", "http://b:2", "-q", "fp8"]
    c = Argv(["x", "--host", "-tp", "2"])
    c.set("--host", "0.0.0.0")
    assert c.tokens == ["x", "--host", "0.0.0.0", "-tp", "2"]


def test_groups_of_a_repeated_option():
    a = Argv(["r", "--prefill", "http://p1:1", "8998", "--prefill", "http://p2:1", "--decode", "http://d:2"])
    assert a.groups("--prefill") == [["http://p1:1", "8998"], ["http://p2:1"]]
    assert a.groups("--decode") == [["http://d:2"]]
    assert a.groups("--worker-urls") == []
    assert Argv(ROUTER).groups("--prefill") == [["http://127.0.0.1:31000", "8998"]]


def test_get_int_error_names_the_flag_as_written():
    with pytest.raises(ValueError) as exc:
        Argv(["sglang", "serve", "--tp", "x"]).get_int(("--tp-size", "--tp"), 1, "envs[1].argv")
    assert str(exc.value) == "envs[1].argv[3]: --tp expects an integer, found 'x'"
    with pytest.raises(ValueError, match=r"^argv\[2\]: --tp-size expects an integer, found '4\.0'"):
        Argv(["sglang", "serve", "--tp-size=4.0"]).get_int(("--tp-size", "--tp"), 1)


@pytest.mark.parametrize("value", ["-30000", "0", "70000"])
def test_get_port_refuses_what_is_not_a_tcp_port(value):
    with pytest.raises(ValueError) as exc:
        Argv(["vllm", "serve", "m", "--port", value]).get_port("--port", 8000, "envs[0].argv")
    assert str(exc.value) == "envs[0].argv[4]: --port expects a TCP port from 1 to 65535, found %d" % int(value)
    assert Argv(["vllm", "serve", "m", "--port=65535"]).get_port("--port", 8000) == 65535
    assert Argv(["vllm", "serve", "m"]).get_port("--port", 8000) == 8000


@pytest.mark.parametrize("value", ["99999999999999999999", "-" + "9" * 30])
def test_get_port_names_a_long_integer_as_a_port_not_as_an_integer(value):
    with pytest.raises(ValueError) as exc:
        Argv(["vllm", "serve", "m", "--port", value]).get_port("--port", 8000, "envs[0].argv")
    assert str(exc.value) == ("envs[0].argv[4]: --port is out of range: a TCP port from 1 to 65535 is expected, "
                              "found an integer of %d digits" % len(value.lstrip("-")))


def test_positionals_after():
    a = Argv(["vllm", "serve", "org/model", "--port", "1"])
    assert a.positionals_after(1) == "org/model"
    assert Argv(["vllm", "serve", "--port", "1"]).positionals_after(1) is None
    assert Argv(["vllm", "serve"]).positionals_after(1) is None


# -- rewriting ----------------------------------------------------------------
def test_set_keeps_the_space_form():
    a = Argv(["x", "--port", "30000", "--y"])
    a.set("--port", 30001)
    assert a.tokens == ["x", "--port", "30001", "--y"]


def test_set_keeps_the_equals_form():
    a = Argv(["x", "--port=30000", "--y"])
    a.set("--port", 30001)
    assert a.tokens == ["x", "--port=30001", "--y"]


def test_set_rewrites_only_the_last_occurrence_and_keeps_the_alias():
    a = Argv(["x", "-tp", "2", "--a", "-tp", "4"])
    a.set(("--tensor-parallel-size", "-tp"), 8)
    assert a.tokens == ["x", "-tp", "2", "--a", "-tp", "8"]


def test_set_appends_the_first_name_when_absent():
    a = Argv(["x", "--a"])
    a.set(("--base-gpu-id", "--bgi"), 2)
    assert a.tokens == ["x", "--a", "--base-gpu-id", "2"]


def test_set_inserts_a_value_after_a_bare_flag():
    a = Argv(["x", "--host", "--y"])
    a.set("--host", "0.0.0.0")
    assert a.tokens == ["x", "--host", "0.0.0.0", "--y"]


def test_add_flag_once_and_remove():
    a = Argv(["vllm", "serve", "m"])
    a.add_flag("--headless")
    a.add_flag("--headless")
    assert a.tokens == ["vllm", "serve", "m", "--headless"]
    b = Argv(["vllm", "serve", "m", "--headless", "--node-rank", "1", "--headless"])
    b.remove("--headless")
    assert b.tokens == ["vllm", "serve", "m", "--node-rank", "1"]


def test_replace_groups_removes_all_and_inserts_at_the_first_position():
    a = Argv(["r", "--prefill", "http://a:1", "8998", "--x", "--prefill", "http://b:1", "--decode", "http://d:2"])
    a.replace_groups("--prefill", [["http://p:31000", "8998"], ["http://q:31001", "8999"]])
    assert a.tokens == ["r", "--prefill", "http://p:31000", "8998", "--prefill", "http://q:31001", "8999",
                        "--x", "--decode", "http://d:2"]


def test_replace_groups_on_the_router_keeps_every_other_token():
    a = Argv(ROUTER)
    a.replace_groups("--decode", [["http://10.0.0.2:32000"], ["http://10.0.0.3:32000"]])
    assert a.tokens == ROUTER[:8] + ["--decode", "http://10.0.0.2:32000", "--decode", "http://10.0.0.3:32000",
                                     "--host", "0.0.0.0", "--port", "30000"]


def test_replace_groups_single_nargs_group_and_equals_form():
    a = Argv(["s", "--encoder-urls=http://a:1", "--port", "1"])
    a.replace_groups("--encoder-urls", [["http://e1:30001", "http://e2:30002"]])
    assert a.tokens == ["s", "--encoder-urls", "http://e1:30001", "http://e2:30002", "--port", "1"]


def test_replace_groups_appends_when_absent_and_removes_when_empty():
    a = Argv(["r", "--port", "1"])
    a.replace_groups("--decode", [["http://d:2"]])
    assert a.tokens == ["r", "--port", "1", "--decode", "http://d:2"]
    a.replace_groups("--decode", [])
    assert a.tokens == ["r", "--port", "1"]


def test_the_input_list_is_copied():
    src = ["x", "--port", "1"]
    a = Argv(src)
    a.set("--port", 2)
    assert src == ["x", "--port", "1"]


# -- properties ----------------------------------------------------------------
_names = st.sampled_from(["--a", "--bb", "--port", "--tp-size", "-q"])
# values as argparse accepts them after an option (no "-x" option look-alikes)
_values = st.sampled_from(["a", "0", "-1", "8998", "http://h:1", "a=b", '{"k":"v"}', "x y", "-a b", "=", ""])
_items = st.lists(st.tuples(_names, st.lists(_values, max_size=2), st.booleans()), max_size=6)


def _tokens(items):
    toks = ["prog"]
    for name, vals, eq in items:
        if eq and len(vals) == 1:
            toks.append("%s=%s" % (name, vals[0]))
        else:
            toks.append(name)
            toks.extend(vals)
    return toks


@settings(max_examples=80, deadline=None)
@given(_items, _names, _values)
def test_set_changes_one_value_and_nothing_else(items, flag, value):
    toks = _tokens(items)
    a = Argv(toks)
    a.set(flag, value)
    assert a.get(flag) == value
    other = [f for f in ("--a", "--bb", "--port", "--tp-size", "-q") if f != flag]
    for f in other:
        assert a.groups(f) == Argv(toks).groups(f)
    # only the flag's own tokens changed: at most one replaced, or two appended
    assert len(a.tokens) - len(toks) in (0, 1, 2)


@settings(max_examples=80, deadline=None)
@given(_items, st.lists(st.lists(_values, min_size=1, max_size=3), max_size=3))
def test_replace_groups_then_groups_reads_them_back(items, groups):
    toks = _tokens(items)
    a = Argv(toks)
    a.replace_groups("--bb", groups)
    assert a.groups("--bb") == groups
    assert a.groups("--port") == Argv(toks).groups("--port")
