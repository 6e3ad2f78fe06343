# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The strict schema of a launch card (``onefrontier.launch-card/v1``).

Pure Python, no Ansible import. ``_card_validate.py`` validates a card against it (``validate_card``,
``parse_card_text``) and ``_card_issues.py`` holds the report and how paths and values are shown in it.

Public API
----------
``CARD_SCHEMA``
    The JSON Schema (draft 2020-12) of a card, as a dict.
``SAFE_STRING_PATTERN``, ``HF_REPO_PATTERN``, ``REVISION_PATTERN``, ``ENV_NAME_PATTERN``, ``IMAGE_PATTERN``
    The patterns of its strings; ``MAX_GIB``, ``MAX_COUNT``, ``MAX_ARG_STRLEN``, ``MAX_COMMAND_BYTES`` its limits.

Where the rules come from (``docs/card-schema.md`` has them field by field):

* Field shapes: the example card ``cards/glm-5.3-flash.json`` and the field
  notes section 1 (nulls are common and mean "not known", never an error).
* Required keys: only what a deploy needs: ``schema``, ``hf.repo``,
  ``hf.revision`` (offline serving pins ``--revision SHA``), ``envs`` with
  ``engine``, ``image`` and ``argv`` per recipe, and ``hardware`` with
  ``min_gpus`` and ``min_disk_gib`` present (null allowed: preflight skips the
  check). Everything else is optional; unknown keys are warnings.
* Control characters (U+0000-U+001F and U+007F) are refused in every value
  that ends up in a systemd unit or on a command line: argv elements, env
  names and values, image, hf.repo, hf.revision, checkpoint names, subdirs
  and source repos (systemd.syntax(7): a newline in a value ends the
  directive, so a card value could otherwise add ``ExecStartPre=``). The
  schema says it with the pattern ``SAFE_STRING_PATTERN``
  (``^[^\\u0000-\\u001f\\u007f]*$(?!\\n)``); the lookahead is there because
  Python's ``re`` lets ``$`` match before a trailing newline, so ``^...$``
  patterns alone would accept ``"main\\n"``-style values. (It is inlined in
  every place rather than a ``$ref``: argv lists are long and jsonschema pays
  for each indirection.) ``command`` and ``notes`` are free text for
  humans (the example card's ``command`` holds ``\\`` + newline) and are
  never executed.
* Other characters that matter to systemd or a shell (``%``, ``$``, quotes,
  backslash, ``;``, spaces) are legal in argv and env values: escaping them is
  the unit renderer's job. Only ``image`` and env names are restricted to
  a grammar that has no room for them.
"""

from __future__ import annotations

import re


SCHEMA_ID = "onefrontier.launch-card/v1"
ENGINES = ("vllm", "sglang")

# ---------------------------------------------------------------------------
# Patterns (each named for messages in _PATTERN_EXPECT)
# ---------------------------------------------------------------------------

#: A string without control characters (C0 range and DEL). ``(?!\\n)`` after
#: ``$`` closes the gap of Python's ``re``, whose ``$`` also matches before a
#: trailing newline (ECMA 262 ``$`` does not; the lookahead is a no-op there).
SAFE_STRING_PATTERN = "^[^\\u0000-\\u001f\\u007f]*$(?!\\n)"
_CONTROL_RE = re.compile("[\x00-\x1f\x7f]")

#: Hugging Face repo id ``owner/name``, huggingface_hub 2.4.0 ``utils/_validators.py`` ``validate_repo_id``: letters,
#: digits, ``-``, ``_``, ``.``, each part ending in a word character (its ``\b``), no ``--`` or ``..``, not ending in
#: ``.git``; this pattern is stricter (an owner, a letter or digit first, at most 96 characters in all:
#: tests/unit/plugins/plugin_utils/test_card_schema.py checks that HF's validator takes what it takes).
HF_REPO_PATTERN = ("^(?!.*(?:--|\\.\\.))(?!.*\\.git$)"
                   "[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?/[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?$")

#: A folder inside the repository (``checkpoints[].subdir``): relative (no leading ``/``), parts separated by one
#: ``/``, none of them ``.``, ``..`` or empty, so the path cannot leave the repository's folder; control characters
#: are refused by SAFE_STRING_PATTERN beside it.
RELATIVE_PATH_PATTERN = "^(?!\\.\\.?(?:/|$))[^/]+(?:/(?!\\.\\.?(?:/|$))[^/]+)*$(?!\\n)"

#: A full git commit SHA as the Hub reports it: 40 lowercase hex digits.
REVISION_PATTERN = "^[0-9a-f]{40}$"

#: POSIX-portable environment variable name (also what systemd accepts).
ENV_NAME_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$"

# OCI image reference, after github.com/distribution/reference (grammar in
# reference.go): [domain[:port]/]path[:tag][@sha256:<64 hex>]. The first
# component is a registry only when it holds a "." or a ":port", or is
# "localhost" (docker's own rule), so "UPPER/Case" is a path and is refused.
_DOMAIN_COMPONENT = "(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])"
_DOMAIN = (
    "(?:localhost(?::[0-9]+)?"
    "|" + _DOMAIN_COMPONENT + "(?:\\." + _DOMAIN_COMPONENT + ")+(?::[0-9]+)?"
    "|" + _DOMAIN_COMPONENT + ":[0-9]+)"
)
_PATH_COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG = "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
IMAGE_PATTERN = (
    "^(?:" + _DOMAIN + "/)?"
    + _PATH_COMPONENT + "(?:/" + _PATH_COMPONENT + ")*"
    + "(?::" + _TAG + ")?"
    + "(?:@sha256:[0-9a-f]{64})?$"
)

_PATTERN_EXPECT = {
    HF_REPO_PATTERN: ("a Hugging Face repo id 'owner/name' (letters, digits, '-', '_', '.'; no '--' or '..', "
                      "not ending in '-', '.' or '.git')"),
    REVISION_PATTERN: "a 40-character lowercase hex commit SHA (not a branch or tag name)",
    ENV_NAME_PATTERN: "an environment variable name matching ^[A-Za-z_][A-Za-z0-9_]*$",
    RELATIVE_PATH_PATTERN: (
        "a relative path inside the repository's folder (no leading '/', no '.', '..' or empty part)"
    ),
    IMAGE_PATTERN: (
        "an OCI image reference [registry[:port]/]lowercase/path[:tag][@sha256:<64 hex>]"
    ),
}

# ---------------------------------------------------------------------------
# The schema
# ---------------------------------------------------------------------------

_NO_CONTROL = {"pattern": SAFE_STRING_PATTERN}


def _safe(**extra):
    """A string without control characters (inlined, not a $ref: argv lists are long)."""
    d = {"type": "string", "pattern": SAFE_STRING_PATTERN}
    d.update(extra)
    return d


def _nullable(type_name, **extra):
    d = {"type": [type_name, "null"]}
    d.update(extra)
    return d


#: The largest size a card may state, in GiB: 1 PiB (2^20 GiB). No model's
#: weights and no host's disk come near it; a larger value is a typo or an
#: attack (``1e300`` GiB overflows to infinity once converted to bytes).
MAX_GIB = 1 << 20
#: The largest count a card may state: 2^53 - 1, the largest integer a JSON
#: number holds exactly in every implementation (RFC 7493, I-JSON, section
#: 2.2). ``1e300`` is an integer to JSON Schema but not a usable count.
MAX_COUNT = (1 << 53) - 1
#: The largest parameter count, in billions (``hf.params_b``): 10^6 B.
MAX_PARAMS_B = 1000000

#: Linux refuses to exec a command line with an argument or an environment
#: string longer than MAX_ARG_STRLEN = 32 pages = 131072 bytes, counting the
#: terminating NUL (include/uapi/linux/binfmts.h; fs/exec.c copy_strings()
#: fails with E2BIG). Measured in UTF-8 bytes, not characters.
MAX_ARG_STRLEN = 131072
#: The most bytes (UTF-8, one NUL per string) that a recipe's argv and env
#: strings may hold together: 256 KiB. Two documented limits sit above it:
#: systemd reads a unit file's logical line (``ExecStart=`` with its
#: continuation lines joined) of at most LONG_LINE_MAX = 1 MiB
#: (src/basic/fileio.h; src/shared/conf-parser.c refuses a longer one with
#: "Line too long" / "Continuation line too long", and the unit does not
#: load), and Linux's execve() takes at most a quarter of the stack limit,
#: 2 MiB with the default 8 MiB RLIMIT_STACK, for argv and environment
#: together (fs/exec.c, bprm_stack_limits()). Escaping a word for
#: ``ExecStart=`` at most doubles it (``%%``, ``$$``, ``\\``, ``\"``) plus
#: quotes, so 256 KiB of card argv stays under 1 MiB with room for the
#: runtime's own flags (container devices, mounts, environment).
MAX_COMMAND_BYTES = 256 * 1024

_SIZE = {"type": ["number", "null"], "minimum": 0, "maximum": MAX_GIB,
         "description": "A size in GiB (2^30 bytes), at most 2^20 (1 PiB); null = not known."}
_COUNT = {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_COUNT}
_TEXT = {"type": ["string", "null"]}
_STRINGS = {"type": ["array", "null"], "items": {"type": "string"}}

CARD_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://onefrontier.ai/schemas/launch-card/v1.json",
    "title": "onefrontier launch card v1",
    "description": (
        "One model at one pinned revision, with the serving recipes (envs) "
        "published for it and the hardware it needs. Null means 'not known'. "
        "Unknown keys are allowed (validate_card warns about them)."
    ),
    "type": "object",
    "required": ["schema", "hf", "envs", "hardware"],
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "hf": {"$ref": "#/$defs/hf"},
        "checkpoints": {
            "type": ["array", "null"],
            "items": {"$ref": "#/$defs/checkpoint"},
        },
        "envs": {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": "#/$defs/env"},
        },
        "hardware": {"$ref": "#/$defs/hardware"},
        "performance": _TEXT,
        "evidence": {"type": ["array", "null"], "items": {"$ref": "#/$defs/source"}},
        "gaps": {"type": ["array", "null"], "items": {"$ref": "#/$defs/gap"}},
        "captured_at": _TEXT,
        "captured_by": _TEXT,
    },
    "$defs": {
        "hf_repo": {
            "type": "string",
            "maxLength": 96,
            "pattern": HF_REPO_PATTERN,
            "allOf": [_NO_CONTROL],
        },
        "hf": {
            "type": "object",
            "required": ["repo", "revision"],
            "properties": {
                "repo": {"$ref": "#/$defs/hf_repo"},
                "revision": {
                    "type": "string",
                    "pattern": REVISION_PATTERN,
                    "allOf": [_NO_CONTROL],
                },
                "license": _TEXT,
                "gated": _nullable("boolean"),
                "params_b": _nullable("number", minimum=0, maximum=MAX_PARAMS_B),
                "modality": _STRINGS,
                "weight_gib": _SIZE,
                "last_modified": _TEXT,
                "downloads": _COUNT,
            },
        },
        "checkpoint": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": _safe(minLength=1),
                "format": _TEXT,
                "subdir": {"type": ["string", "null"], "pattern": RELATIVE_PATH_PATTERN, "allOf": [_NO_CONTROL]},
                "source_repo": {
                    "anyOf": [{"$ref": "#/$defs/hf_repo"}, {"type": "null"}],
                },
                "resident_gib": _SIZE,
                "host_gib": _SIZE,
                "gated": _nullable("boolean"),
                "notes": _TEXT,
            },
        },
        "env": {
            "type": "object",
            "required": ["engine", "image", "argv"],
            "properties": {
                "engine": {"enum": list(ENGINES)},
                "checkpoint": {"type": ["string", "null"], "allOf": [_NO_CONTROL]},
                "engine_version": _TEXT,
                "image": {
                    "type": "string",
                    "maxLength": 512,
                    "pattern": IMAGE_PATTERN,
                    "allOf": [_NO_CONTROL],
                },
                "argv": {
                    "type": "array",
                    "minItems": 1,
                    "prefixItems": [_safe(minLength=1)],
                    "items": _safe(),
                },
                "command": _TEXT,
                "env": {
                    "type": "object",
                    "propertyNames": {"pattern": ENV_NAME_PATTERN, "allOf": [_NO_CONTROL]},
                    "additionalProperties": _safe(),
                },
                "validated_hardware": _STRINGS,
                "notes": _TEXT,
                "source": {
                    "anyOf": [{"$ref": "#/$defs/source"}, {"type": "null"}],
                },
            },
        },
        "source": {
            "type": "object",
            "properties": {
                "kind": _TEXT,
                "url": _TEXT,
                "fetched_at": _TEXT,
            },
        },
        "gap": {
            "type": "object",
            "properties": {"field": _TEXT, "why": _TEXT},
        },
        "hardware": {
            "type": "object",
            "required": ["min_gpus", "min_disk_gib"],
            "properties": {
                "gpu_models": _STRINGS,
                "gpu_arch": _STRINGS,
                "min_gpus": _COUNT,
                "tp_rule": _TEXT,
                "min_vram_per_gpu_gib": _SIZE,
                "min_total_vram_gib": _SIZE,
                "min_disk_gib": _SIZE,
                "min_host_ram_gib": _SIZE,
                "interconnect": _TEXT,
                "cuda_min": _TEXT,
                "driver_min": _TEXT,
                "context_tokens": _COUNT,
            },
        },
    },
}
