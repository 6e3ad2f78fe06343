# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's record of what it runs (``/var/lib/launchcard/state.json``).

Pure Python, no Ansible import (shipped inside the ``host_state`` module).

A record (JSON object, ``version`` 1)::

    {"version": 1,
     "card": {"sha256": hex of the loaded card (its controller path left out),
              "repo": HF repo, "revision": 40-hex HF revision},
     "instances": [plan instances, trimmed: id, unit, recipe, engine, role,
                   url, health_url, probe, served_model, argv],
     "units": {unit file name: {"sha256": hex, "text": unit file text}},
     "runtime": {"kind": "native" | "docker" | "podman", ...},
     "previous": the record this one replaced, without its own "previous"
                 (or None)}

Unit texts hold no secret (the HF token lives in an EnvironmentFile the
units only name), so the record is safe to print.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex

from ansible_collections.launchcard.inference.plugins.module_utils._systemd import QUADLET_SUFFIX, TIMER_SUFFIX, read_unit_files

VERSION = 1
# Where a host's record lives: the one default of host_state, http_health, systemd_units and preflight.
RECORD_PATH = "/var/lib/launchcard/state.json"
INSTANCE_KEYS = ("id", "unit", "recipe", "engine", "role", "url", "health_url", "probe", "served_model", "argv")


def sha256_text(text):
    """sha256 hex of a str (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse(text):
    """Parse a record file.

    :returns: the record (dict), or None when ``text`` is None or empty.
    :raises ValueError: not a JSON object of a known version.
    """
    if not text or not text.strip():
        return None
    try:
        rec = json.loads(text)
    except ValueError as exc:
        raise ValueError("not JSON: %s" % exc)
    if not isinstance(rec, dict) or rec.get("version") != VERSION:
        raise ValueError("expected a JSON object with \"version\": %d" % VERSION)
    return rec


def build(units, card, instances, runtime, previous=None):
    """A new record.

    :param units: ``{unit file name: text}`` as found on the host.
    :param card: ``{"sha256", "repo", "revision"}`` (``_plan_tables.record_card`` on the controller).
    :param instances: plan instances of this host (extra keys are dropped).
    :param runtime: free-form dict describing the runtime (kind, venv, packages, image refs).
    :param previous: the record being replaced (its own ``previous`` is dropped).
    """
    prev = None
    if previous:
        prev = {k: v for k, v in previous.items() if k != "previous"}
    return {
        "version": VERSION,
        "card": dict(card or {}),
        "instances": [{k: i.get(k) for k in INSTANCE_KEYS} for i in instances or []],
        "units": {name: {"sha256": sha256_text(text), "text": text} for name, text in sorted(units.items())},
        "runtime": dict(runtime or {}),
        "previous": prev,
    }


def same_state(a, b):
    """True when two records describe the same running state (``previous`` ignored)."""
    if not a or not b:
        return False
    strip = ("previous",)
    return {k: v for k, v in a.items() if k not in strip} == {k: v for k, v in b.items() if k not in strip}


def state_sha256(record):
    """SHA-256 (hex) of the running state a record describes (``previous`` left out): equal for two records
    exactly when :func:`same_state` is true of them; None for no record."""
    if not record:
        return None
    return sha256_text(json.dumps({k: v for k, v in record.items() if k != "previous"}, sort_keys=True))


def dumps(record):
    """The file text of a record (stable: keys sorted, one trailing newline)."""
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


def record_diff(record, path):
    """What :func:`write_present` changed (or would change) in a host's record, as Ansible's ``diff``: the
    running state it replaced (the new record's ``previous``) before, the new one after, neither with ``previous``.

    A record names the card a host serves, so a card that changes none of a host's units still changes its
    record; with ``--diff`` this shows why such a host's gate reports a change.
    """
    def text(rec):
        return dumps(dict((k, v) for k, v in rec.items() if k != "previous")) if rec else ""
    return {"before": text(record.get("previous")), "after": text(record),
            "before_header": "%s (recorded)" % path, "after_header": "%s (this run)" % path}


def from_unit_files(units):
    """A stand-in record for a host deployed before records existed: only its unit files are known."""
    return {"version": VERSION, "card": None, "instances": [], "runtime": {}, "previous": None,
            "units": {name: {"sha256": sha256_text(t), "text": t} for name, t in sorted(units.items())},
            "source": "unit-files"}


def recorded_image_refs(text):
    """The pinned images a record says the host runs: ``runtime.image_refs`` (``{image: name@sha256:...}``).

    :param text: the record file's text, or None when there is none.
    :returns: dict; empty when there is no record, it holds no image (native runtime), or it does not
        parse (a record the host cannot vouch for holds nothing back).
    """
    try:
        record = parse(text)
    except ValueError:
        return {}
    refs = ((record or {}).get("runtime") or {}).get("image_refs") or {}
    return dict((k, v) for k, v in refs.items() if isinstance(k, str) and isinstance(v, str)) if isinstance(refs, dict) else {}


def record_instances(record):
    """Where each instance a record names served its peers when it was written: ``[{"unit", "url", "argv"}]`` (the
    URL gives the address and port, the argv the bootstrap and init ports), for the controller's check of a
    ``--limit`` run that would move an instance whose consumers it leaves out (plugin_utils/_limit_peers.py).

    :param record: a parsed record (:func:`parse`), or None.
    :returns: list; empty without a record or for one made up from unit files (it names no instance).
    """
    out = []
    for inst in (record or {}).get("instances") or []:
        if isinstance(inst, dict) and isinstance(inst.get("unit"), str):
            argv = inst.get("argv")
            out.append({"unit": inst["unit"], "url": inst.get("url") if isinstance(inst.get("url"), str) else None,
                        "argv": [str(w) for w in argv] if isinstance(argv, list) else []})
    return out


def _command_words(unit_text):
    """The words of a unit's command line (``ExecStart=``; a Quadlet file's ``Exec=``, the container's command),
    continuation lines joined (systemd.syntax(7)), quotes and the ``%%``/``$$`` escapes undone
    (systemd.service(5) "Command lines"); None when there is none."""
    joined = re.sub(r"\\\n\s*", " ", unit_text or "")
    for line in joined.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in ("ExecStart", "Exec"):
            try:
                return [w.replace("%%", "%").replace("$$", "$") for w in shlex.split(value)]
            except ValueError:
                return None
    return None


def recorded_argv(text):
    """What each recipe a record says the host runs runs: the words of its unit's command line, as the record
    keeps the unit (``{recipe: [word, ...]}``), so a check can tell an argv (with what the collection adds to it)
    the host already runs.

    :param text: the record file's text, or None when there is none.
    :returns: dict; empty when there is no record or it does not parse (nothing is vouched for).
    """
    try:
        record = parse(text)
    except ValueError:
        return {}
    units = (record or {}).get("units") or {}
    out = {}
    for inst in (record or {}).get("instances") or []:
        if not isinstance(inst, dict) or not isinstance(inst.get("recipe"), str) or not isinstance(inst.get("unit"), str):
            continue
        base = inst["unit"].rsplit(".", 1)[0]
        for name in (inst["unit"], base + QUADLET_SUFFIX):
            words = _command_words(((units.get(name) or {}) if isinstance(units, dict) else {}).get("text"))
            if words:
                out[inst["recipe"]] = words
                break
    return out


def recorded_runtime_setup(text):
    """The digest of the container runtime's setup a record names (``runtime.setup``), or None.

    The runtime role computes it from everything its container steps apply on the host (engine package, registry
    mirrors, keyring setting, the host's pinned images); a deploy skips those steps while the record names the
    same digest.

    :param text: the record file's text, or None when there is none.
    :returns: str, or None when there is no record, it names no setup (native runtime, an older record) or it does
        not parse.
    """
    try:
        record = parse(text)
    except ValueError:
        return None
    setup = ((record or {}).get("runtime") or {}).get("setup")
    return setup if isinstance(setup, str) and setup else None


# Where the units role writes Quadlet files (podman >= 4.4; systemd_units' quadlet_directory).
QUADLET_DIR = "/etc/containers/systemd"


def unit_files(directory, prefix, quadlet_directory=QUADLET_DIR):
    """``{file name: text}`` of the collection's unit files in ``directory`` (``<prefix>*.service`` and the liveness
    ``<prefix>*.timer``, no links) and its Quadlet files in ``quadlet_directory`` (``<prefix>*.container``): of the
    files a converge compares (``_systemd.read_unit_files``), those that are units, as the controller's record
    names them (``filter/plan.py`` units_settled builds it from every file the converge writes)."""
    found = read_unit_files(directory, quadlet_directory, prefix)
    return dict(sorted((n, t) for n, t in found.items() if n.endswith((".service", TIMER_SUFFIX, QUADLET_SUFFIX))))


def read(path):
    """``(record, problem)``: the record at ``path`` (None when there is none), and why it could not be read
    (None when it could: a record that does not parse is reported, then treated as absent)."""
    if not os.path.exists(path):
        return None, None
    try:
        with open(path) as f:
            return parse(f.read()), None
    except (ValueError, IOError, OSError) as exc:
        return None, "%s: %s" % (path, exc)


def write_present(path, directory, prefix, card, instances, runtime, check_mode, move, quadlet_directory=QUADLET_DIR):
    """Record what the host runs now (its unit files as they are on disk), keeping the replaced record as
    ``previous``; nothing is written when the running state is the same.

    :param move: ``move(tmp_path, path)``, an atomic rename (``AnsibleModule.atomic_move``).
    :returns: ``(changed, record, problem)``; ``problem`` as :func:`read` gives it for the replaced record.
    :raises OSError: the record cannot be written.
    """
    existing, problem = read(path)
    record = build(unit_files(directory, prefix, quadlet_directory), card, instances, runtime, previous=existing)
    if same_state(existing, record):
        return False, existing, problem
    if not check_mode:
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            os.makedirs(parent, 0o755)
        tmp = path + ".launchcard-tmp"
        with open(tmp, "w") as f:
            f.write(dumps(record))
        os.chmod(tmp, 0o644)
        move(tmp, path)
    return True, record, problem


def recorded_units(record_text):
    """``[(unit, instance id), ...]`` the host's record says it runs; empty without a record or one that does not
    parse (the converge's record call replaces it and says so)."""
    try:
        record = parse(record_text)
    except ValueError:
        return []
    out = []
    for inst in (record or {}).get("instances") or []:
        if isinstance(inst, dict) and isinstance(inst.get("unit"), str):
            out.append((inst["unit"], inst.get("id") if isinstance(inst.get("id"), str) else inst["unit"]))
    return out


def recorded_runtime(record_text):
    """The runtime the host's record says its instances run under (``runtime.kind``: docker, podman or native,
    written by the deploy that started them), or None without a record, one that names none or does not parse."""
    try:
        record = parse(record_text)
    except ValueError:
        return None
    kind = ((record or {}).get("runtime") or {}).get("kind")
    return kind if isinstance(kind, str) and kind else None


def recorded_card(record_text):
    """``{"repo", "revision", "previous_revision"}`` of the card the host's record says it serves
    (``previous_revision``: the card revision of the record it replaced, None without one), for the deploy's warning
    of a revision move; None without a record, one that does not parse or one that names no card."""
    try:
        record = parse(record_text)
    except ValueError:
        return None
    card = _card(record)
    if not card:
        return None
    before = _card(record.get("previous"))
    return {"repo": card["repo"], "revision": card["revision"], "previous_revision": before and before["revision"]}


def _card(record):
    """A record's ``card`` when it names a repo and a revision, else None."""
    card = record.get("card") if isinstance(record, dict) else None
    if isinstance(card, dict) and all(isinstance(card.get(k), str) and card[k] for k in ("repo", "revision")):
        return card
    return None
