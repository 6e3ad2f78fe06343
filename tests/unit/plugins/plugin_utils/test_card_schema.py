# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/plugin_utils/_card_schema.py, _card_validate.py and _card_issues.py (schema, corpus,
paths, messages)."""

from __future__ import annotations

import copy
import json
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.launchcard.inference.plugins.plugin_utils import _card_schema as card_schema
from ansible_collections.launchcard.inference.plugins.plugin_utils import _card_validate as card_validate
from ansible_collections.launchcard.inference.plugins.plugin_utils._card_issues import Issue, ValidationReport, format_path
from ansible_collections.launchcard.inference.plugins.plugin_utils._card_schema import CARD_SCHEMA
from ansible_collections.launchcard.inference.plugins.plugin_utils._card_validate import parse_card_text, validate_card

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
EXAMPLE = os.path.join(REPO, "cards", "glm-5.3-flash.json")
CARDS = os.path.join(REPO, "tests", "unit", "cards")
MALFORMED = os.path.join(CARDS, "malformed")
VALID = os.path.join(CARDS, "valid")
DOC = os.path.join(REPO, "docs", "card-schema.md")

CONTROL = re.compile("[\x00-\x1f\x7f]")


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _example():
    with open(EXAMPLE, encoding="utf-8") as fh:
        return json.load(fh)


EXAMPLE_DOC = _example()
EXPECTED = json.loads(_read(os.path.join(MALFORMED, "expected.json")))
VALID_FILES = sorted(f for f in os.listdir(VALID) if f.endswith(".json"))


def _all_messages(report):
    return [i.message for i in report.errors + report.warnings] + [
        i.path for i in report.errors + report.warnings]


# --------------------------------------------------------------------------
# The schema itself
# --------------------------------------------------------------------------

def test_schema_is_valid_draft_2020_12():
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(CARD_SCHEMA)
    assert CARD_SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert CARD_SCHEMA["properties"]["schema"] == {"const": "onefrontier.launch-card/v1"}


def test_required_keys_are_what_the_deploy_needs():
    defs = CARD_SCHEMA["$defs"]
    assert sorted(CARD_SCHEMA["required"]) == ["envs", "hardware", "hf", "schema"]
    assert sorted(defs["hf"]["required"]) == ["repo", "revision"]
    assert sorted(defs["env"]["required"]) == ["argv", "engine", "image"]
    assert sorted(defs["hardware"]["required"]) == ["min_disk_gib", "min_gpus"]


def test_missing_library_raises_clear_runtime_error(monkeypatch):
    monkeypatch.setattr(card_validate, "jsonschema", None)
    monkeypatch.setattr(card_validate, "_VALIDATOR", [])
    with pytest.raises(RuntimeError, match="jsonschema"):
        validate_card(EXAMPLE_DOC)


# --------------------------------------------------------------------------
# Valid cards
# --------------------------------------------------------------------------

def test_example_card_is_clean():
    report = validate_card(_example())
    assert report.errors == []
    assert report.warnings == []
    assert report.ok
    doc, report = parse_card_text(_read(EXAMPLE))
    assert doc == EXAMPLE_DOC and report.ok and not report.warnings


def test_at_least_eight_valid_cards():
    assert len(VALID_FILES) >= 8


@pytest.mark.parametrize("name", VALID_FILES)
def test_valid_card_card_schema(name):
    doc, report = parse_card_text(_read(os.path.join(VALID, name)))
    assert report.errors == [], report.format()
    assert report.warnings == [], report.format()
    assert doc["schema"] == "onefrontier.launch-card/v1"


def test_valid_corpus_keeps_special_characters_verbatim():
    doc, dummy = parse_card_text(_read(os.path.join(VALID, "07-special-characters.json")))
    env = doc["envs"][0]
    assert env["env"]["PROMPT_NOTE"] == "a b $HOME 100%"
    assert any("{% for" in a for a in env["argv"])


def test_nixl_kv_transfer_config_is_one_argv_element():
    doc, dummy = parse_card_text(_read(os.path.join(VALID, "03-vllm-pd-nixl.json")))
    argv = doc["envs"][0]["argv"]
    value = argv[argv.index("--kv-transfer-config") + 1]
    assert json.loads(value) == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}


def test_nulls_mean_not_known():
    doc = _example()
    for key in list(doc["hardware"]):
        doc["hardware"][key] = None
    for key in ("license", "gated", "params_b", "modality", "weight_gib", "last_modified", "downloads"):
        doc["hf"][key] = None
    for key in ("format", "subdir", "source_repo", "resident_gib", "host_gib", "gated", "notes"):
        doc["checkpoints"][0][key] = None
    for env in doc["envs"]:
        for key in ("checkpoint", "engine_version", "command", "validated_hardware", "notes", "source"):
            env[key] = None
    doc["checkpoints"] = None
    for key in ("performance", "evidence", "gaps", "captured_at", "captured_by"):
        doc[key] = None
    assert validate_card(doc).errors == []


# --------------------------------------------------------------------------
# Malformed corpus
# --------------------------------------------------------------------------

def test_malformed_corpus_is_fully_indexed():
    files = sorted(f for f in os.listdir(MALFORMED) if f != "expected.json")
    assert files == sorted(EXPECTED)
    assert len(files) >= 32
    for name in files:
        assert re.match(r"^\d\d-[a-z0-9-]+\.json$", name), name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_card_card_schema(name):
    want = EXPECTED[name]
    text = _read(os.path.join(MALFORMED, name))
    doc, report = parse_card_text(text)
    assert not report.ok
    hits = [i for i in report.errors if i.path == want["path"]]
    assert hits, "no error at %s: %s" % (want["path"], report.format())
    assert any(want["contains"] in i.message for i in hits), report.format()
    # Hostile values are never echoed raw: no control character in any message or path.
    for item in _all_messages(report):
        assert not CONTROL.search(item), repr(item)


def test_newline_injection_is_escaped_in_message():
    dummy, report = parse_card_text(_read(os.path.join(MALFORMED, "14-argv-newline-injection.json")))
    (item,) = report.errors
    assert item.path == "envs[0].argv[6]"
    assert "\\n[Service]\\nExecStartPre" in item.message
    assert "\n" not in item.message


def test_errors_are_all_reported_and_sorted():
    doc = _example()
    doc["envs"].extend(copy.deepcopy(doc["envs"][:5]))  # 12 envs: envs[10] must sort after envs[2]
    doc["hf"]["revision"] = "main"
    doc["envs"][4]["argv"][7] = 7
    doc["envs"][2]["image"] = "Bad Image"
    doc["envs"][10]["engine"] = "tgi"
    doc["hardware"]["min_disk_gib"] = -1
    report = validate_card(doc)
    paths = [i.path for i in report.errors]
    assert paths == [
        "envs[2].image", "envs[4].argv[7]", "envs[10].engine",
        "hardware.min_disk_gib", "hf.revision",
    ]
    assert validate_card(doc).errors == report.errors  # deterministic


def test_missing_required_key_reported_at_its_own_path():
    doc = _example()
    del doc["hf"]["revision"]
    del doc["envs"][1]["argv"]
    report = validate_card(doc)
    assert [i.path for i in report.errors] == ["envs[1].argv", "hf.revision"]
    assert all("missing" in i.message for i in report.errors)


def test_found_values_are_truncated():
    doc = _example()
    doc["envs"][0]["image"] = "x" * 300 + " y"
    (item,) = validate_card(doc).errors
    assert item.path == "envs[0].image"
    assert "(302 chars)" in item.message
    assert len(item.message) < 250


def test_semantic_checkpoint_rules():
    doc = _example()
    doc["checkpoints"].append(dict(doc["checkpoints"][0]))
    doc["envs"][3]["checkpoint"] = "nvfp4"
    report = validate_card(doc)
    assert [i.path for i in report.errors] == ["checkpoints[1].name", "envs[3].checkpoint"]
    assert "first at checkpoints[0].name" in report.errors[0].message
    # No checkpoints listed: any checkpoint name is accepted (nothing to check against).
    doc = _example()
    doc["checkpoints"] = []
    doc["envs"][0]["checkpoint"] = "anything"
    assert validate_card(doc).ok


def test_anyof_branch_reports_deepest_path():
    doc = _example()
    doc["envs"][0]["source"] = {"kind": 5, "url": None}
    doc["checkpoints"][0]["source_repo"] = "not a repo"
    report = validate_card(doc)
    assert [i.path for i in report.errors] == ["checkpoints[0].source_repo", "envs[0].source.kind"]
    doc["envs"][0]["source"] = 5
    report = validate_card(doc)
    assert Issue("envs[0].source", "expected an object or null, found integer 5") in report.errors


# --------------------------------------------------------------------------
# Warnings, parsing, paths
# --------------------------------------------------------------------------

def test_unknown_keys_are_warnings_not_errors():
    doc = _example()
    doc["x_comment"] = "hi"
    doc["hf"]["sha"] = "abc"
    doc["envs"][2]["replicas"] = 2
    doc["envs"][0]["source"]["etag"] = "w/1"
    doc["hardware"]["npu"] = ["ascend_950pr_8x"]
    doc["envs"][0]["env"]["ANY_NAME"] = "env keys are data, not schema keys"
    report = validate_card(doc)
    assert report.ok
    assert [w.path for w in report.warnings] == [
        "envs[0].source.etag", "envs[2].replicas", "hardware.npu", "hf.sha", "x_comment"]
    assert all("unknown key" in w.message for w in report.warnings)


def test_top_level_not_an_object():
    for value in ([], "card", 3, None):
        report = validate_card(value)
        assert [i.path for i in report.errors] == ["$"]
    doc, report = parse_card_text("[1, 2]")
    assert doc == [1, 2] and report.errors[0].path == "$"


def test_parse_errors_give_line_and_column():
    dummy, report = parse_card_text('{\n  "schema": "onefrontier.launch-card/v1",\n  "hf": {,\n}')
    (item,) = report.errors
    assert item.path == "$"
    assert "line 3 column" in item.message


def test_parse_accepts_bytes_and_bom():
    text = _read(EXAMPLE)
    assert parse_card_text(text.encode("utf-8"))[1].ok
    assert parse_card_text("\ufeff" + text)[1].ok
    dummy, report = parse_card_text(b"\xff\xfe{}")
    assert report.errors[0].path == "$" and "UTF-8" in report.errors[0].message


def test_duplicate_keys_nested_and_top_level():
    text = '{"schema": "onefrontier.launch-card/v1", "schema": "onefrontier.launch-card/v1",' \
           ' "hf": {"repo": "a/b", "revision": "%s", "repo": "c/d"}}' % ("0" * 40)
    doc, report = parse_card_text(text)
    assert doc["hf"]["repo"] == "c/d"
    dup = [i.path for i in report.errors if "duplicate key" in i.message]
    assert dup == ["hf.repo", "schema"]


@pytest.mark.parametrize("parts, expected", [
    ([], "$"),
    (["hf", "revision"], "hf.revision"),
    (["envs", 4, "argv", 7], "envs[4].argv[7]"),
    (["envs", 2, "env", "BAD-NAME"], "envs[2].env.BAD-NAME"),
    (["envs", 0, "env", "A=B"], 'envs[0].env["A=B"]'),
    (["envs", 0, "env", "X\nY"], 'envs[0].env["X\\nY"]'),
    (["a.b", ""], '["a.b"][""]'),
    ([0], "[0]"),
])
def test_format_path(parts, expected):
    assert format_path(parts) == expected


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab9Z._-/", min_size=1, max_size=24))
def test_every_repo_id_the_schema_takes_huggingface_hub_takes(repo):
    # the Hub client's own validator (huggingface_hub, the controller's requirements) is the authority
    from huggingface_hub.utils import HFValidationError, validate_repo_id
    if re.search(card_schema.HF_REPO_PATTERN, repo):
        validate_repo_id(repo)
    else:
        # beyond HF's rules the schema wants an owner, each part starting with a letter or digit, 96 characters
        parts = repo.split("/")
        if len(parts) == 2 and all(part[:1].isalnum() for part in parts) and len(repo) <= 96:
            with pytest.raises(HFValidationError):
                validate_repo_id(repo)


@pytest.mark.parametrize("repo", ["zai-org/GLM..5.3-Flash", "zai--org/GLM", "zai-org/GLM.git", "zai-org/GLM-",
                                  "zai-org/GLM.", "zai-org-/GLM"])
def test_repo_ids_huggingface_hub_refuses_are_refused_naming_the_field(repo):
    doc = _example()
    doc["hf"]["repo"] = repo
    report = validate_card(doc)
    assert [(i.path, "no '--' or '..'" in i.message) for i in report.errors] == [("hf.repo", True)]


def test_report_helpers():
    report = ValidationReport([("b", "m2"), ("a", "m1"), ("a", "m1")], [("c", "w")])
    assert report.errors == [Issue("a", "m1"), Issue("b", "m2")]
    assert report.as_dict() == {
        "errors": [{"path": "a", "message": "m1"}, {"path": "b", "message": "m2"}],
        "warnings": [{"path": "c", "message": "w"}],
    }
    assert report.format().splitlines() == ["error: a: m1", "error: b: m2", "warning: c: w"]


# --------------------------------------------------------------------------
# Documentation stays in step with CARD_SCHEMA
# --------------------------------------------------------------------------

def _schema_paths(schema, prefix, out, seen=()):
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return
        seen = seen + (name,)
        schema = dict(CARD_SCHEMA["$defs"][name], **{k: v for k, v in schema.items() if k != "$ref"})
    for alt in schema.get("anyOf", ()):
        _schema_paths(alt, prefix, out, seen)
    for key, sub in schema.get("properties", {}).items():
        path = prefix + "." + key if prefix else key
        out.add(path)
        _schema_paths(sub, path, out, seen)
    if isinstance(schema.get("items"), dict):
        _schema_paths(schema["items"], prefix + "[]", out, seen)
    return out


def test_every_schema_property_is_documented():
    doc = _read(DOC)
    paths = _schema_paths(CARD_SCHEMA, "", set())
    assert "envs[].argv" in paths and "envs[].source.kind" in paths and "gaps[].why" in paths
    missing = sorted(p for p in paths if "`%s`" % p not in doc)
    assert missing == []


# --------------------------------------------------------------------------
# Property tests
# --------------------------------------------------------------------------

_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(max_codepoint=0x24F),
        st.sampled_from(list("\x00\t\n\r\x1b\x7f%$'\"\\; ")),
    ),
    max_size=12,
)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), text=_TEXT)
def test_argv_insertion_errors_iff_control_char(data, text):
    doc = copy.deepcopy(EXAMPLE_DOC)
    i = data.draw(st.integers(0, len(doc["envs"]) - 1), label="env")
    argv = doc["envs"][i]["argv"]
    j = data.draw(st.integers(0, len(argv) - 1), label="arg")
    pos = data.draw(st.integers(0, len(argv[j])), label="pos")
    argv[j] = argv[j][:pos] + text + argv[j][pos:]
    report = validate_card(doc)
    if CONTROL.search(text):
        assert [e.path for e in report.errors] == ["envs[%d].argv[%d]" % (i, j)]
        assert "control characters" in report.errors[0].message
    else:
        assert report.errors == []
    for item in _all_messages(report):
        assert not CONTROL.search(item)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(key=st.sampled_from(["hf", "envs", "checkpoints", "hardware", "evidence"]), value=_JSON)
def test_never_raises_on_arbitrary_json(key, value):
    doc = copy.deepcopy(EXAMPLE_DOC)
    doc[key] = value
    report = validate_card(doc)
    for item in _all_messages(report):
        assert not CONTROL.search(item)
    # Same report through the text path.
    dummy, again = parse_card_text(json.dumps(doc))
    assert again.errors == report.errors


# --------------------------------------------------------------------------
# Numbers that are not finite or absurdly large; commands too long to run
# --------------------------------------------------------------------------

@pytest.mark.parametrize("where, value, message", [
    (("hardware", "min_disk_gib"), 1e300, "expected a number <= 1048576"),
    (("hf", "weight_gib"), 1e308, "expected a number <= 1048576"),
    (("hardware", "min_gpus"), 1e300, "expected a number <= 9007199254740991"),
    (("hardware", "context_tokens"), float("inf"), "expected a finite number, found Infinity"),
    (("hardware", "min_disk_gib"), float("nan"), "expected a finite number, found NaN"),
    (("hf", "weight_gib"), float("-inf"), "expected a finite number, found -Infinity"),
    (("hf", "params_b"), 1e7, "expected a number <= 1000000"),
    (("hf", "downloads"), float("nan"), "expected a finite number, found NaN"),
])
def test_numbers_that_are_not_usable_are_refused_at_their_path(where, value, message):
    doc = copy.deepcopy(EXAMPLE_DOC)
    doc[where[0]][where[1]] = value
    report = validate_card(doc)
    assert [(i.path, message in i.message) for i in report.errors] == [(".".join(where), True)], report.format()


def test_a_nan_in_a_field_without_bounds_is_refused_too():
    doc = copy.deepcopy(EXAMPLE_DOC)
    doc["gaps"] = [{"field": "x", "why": "y", "score": float("nan")}]
    report = validate_card(doc)
    assert report.errors == [Issue("gaps[0].score", "expected a finite number, found NaN")]


def test_the_largest_sizes_and_counts_still_pass():
    doc = copy.deepcopy(EXAMPLE_DOC)
    doc["hardware"]["min_disk_gib"] = card_schema.MAX_GIB
    doc["hardware"]["min_gpus"] = card_schema.MAX_COUNT
    assert validate_card(doc).ok


@pytest.mark.parametrize("word, ok", [
    ("x" * (card_schema.MAX_ARG_STRLEN - 1), True),     # 131071 bytes + NUL = MAX_ARG_STRLEN
    ("x" * card_schema.MAX_ARG_STRLEN, False),
    ("\u00e9" * (card_schema.MAX_ARG_STRLEN // 2), False),  # 65536 characters, 131072 UTF-8 bytes
])
def test_an_argv_element_over_max_arg_strlen_is_refused_at_its_element(word, ok):
    doc = copy.deepcopy(EXAMPLE_DOC)
    doc["envs"][0]["argv"][5] = word
    report = validate_card(doc)
    assert report.ok is ok
    if not ok:
        (item,) = report.errors
        assert item.path == "envs[0].argv[5]"
        assert "MAX_ARG_STRLEN (131072 bytes)" in item.message and "found %d bytes" % len(word.encode()) in item.message


def test_an_env_string_over_max_arg_strlen_is_refused_at_its_name():
    doc = copy.deepcopy(EXAMPLE_DOC)
    doc["envs"][1]["env"] = {"BIG": "v" * card_schema.MAX_ARG_STRLEN}
    (item,) = validate_card(doc).errors
    assert item.path == "envs[1].env.BIG" and "environment string over MAX_ARG_STRLEN" in item.message


def test_a_command_line_too_big_for_a_unit_is_refused_at_the_argv():
    doc = copy.deepcopy(EXAMPLE_DOC)
    argv = doc["envs"][2]["argv"]
    base = sum(len(w.encode()) + 1 for w in argv)
    # every element is legal on its own; together they pass the limit by one byte
    room = card_schema.MAX_COMMAND_BYTES - base
    chunk = 100000
    while room > 0:
        size = min(chunk, room)
        argv.append("y" * (size - 1))
        room -= size
    assert validate_card(doc).ok
    argv.append("")  # one more NUL
    (item,) = validate_card(doc).errors
    assert item.path == "envs[2].argv"
    assert "expected at most 262144 bytes of argv and env together, found 262145" in item.message
    assert "1 MiB line limit" in item.message
