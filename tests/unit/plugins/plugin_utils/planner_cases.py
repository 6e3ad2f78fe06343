# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the planner tests share: the example card and its variants, the card corpus, and how a placement is
written and its plan read (test_planner.py, test_planner_properties.py, test_pd_wiring.py, and a card file read
with a change by test_rollout.py and test_outages.py)."""

from __future__ import annotations

import glob
import json
import os

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan

HERE = os.path.dirname(os.path.abspath(__file__))
UNIT = os.path.dirname(os.path.dirname(HERE))
ROOT = os.path.dirname(os.path.dirname(UNIT))
EXAMPLE = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
VALID = os.path.join(UNIT, "cards", "valid")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
SLUG = "glm-5.3-flash"


def _read(path):
    with open(path) as f:
        return f.read()


EXAMPLE_TEXT = _read(EXAMPLE)
EX = load_card(EXAMPLE_TEXT, EXAMPLE)
REV = "46a050bec13002ad29ee795c16e61cf4fa3c4a9c"
PIN_CHANGE = "--revision %s (hf.revision: the staged snapshot, loaded offline)" % REV


def _pinned(recipe, revision=REV):
    """The argv a recipe gets where nothing moves: the card's, plus --revision on an engine (routers load no weights)
    and --enable-metrics on an SGLang engine that does not write it (metrics on by default)."""
    metrics = ["--enable-metrics"] if recipe["launcher"] == "sglang" and "--enable-metrics" not in recipe["argv"] else []
    return recipe["argv"] + metrics + ([] if recipe["launcher"] == "router" else ["--revision", revision])


def _moved(inst):
    """The instance's changes besides the revision pin (which every engine gets) and the metrics flag."""
    return [c for c in inst["changes"] if not c.startswith(("--revision ", "--enable-metrics "))]


# the argv of each recipe of the example card where the placement moves nothing
CARD_ARGV = {r["name"]: _pinned(r) for r in EX["recipes"]}
CORPUS = {os.path.basename(p): load_card(_read(p), p) for p in sorted(glob.glob(os.path.join(VALID, "*.json")))}


def _variant(mutate=None):
    doc = json.loads(EXAMPLE_TEXT)
    if mutate:
        mutate(doc)
    return load_card(json.dumps(doc), "variant")


def _card(path, mutate=None):
    """The card file at ``path``, its document changed by ``mutate`` first when given."""
    with open(path) as f:
        doc = json.load(f)
    if mutate:
        mutate(doc)
    return load_card(json.dumps(doc), path)


def _h(name, address, recipes, gpus=None):
    return (name, {"address": address, "recipes": recipes, "gpus": gpus})


def _plan(card, hosts):
    return plan(card, normalize_placement(hosts))


def _insts(p):
    return [i for h in p["hosts"].values() for i in h["instances"]]


def _one(p, recipe, replica=0, rank=0):
    found = [i for i in _insts(p) if i["recipe"] == recipe and i["replica"] == replica and i["node_rank"] == rank]
    assert len(found) == 1, (recipe, replica, [i["id"] for i in _insts(p)])
    return found[0]


def _diff(a, b):
    """Indexes where two equally long token lists differ."""
    assert len(a) == len(b), (a, b)
    return [k for k, (x, y) in enumerate(zip(a, b)) if x != y]


# The sandbox fleet (inventories/sandbox/gpus.ini): one role per host.
SANDBOX = [
    _h("lc-vllm", "198.18.0.11", ["vllm-aggregated"], 8),
    _h("lc-encoder", "198.18.0.12", ["sglang-encoder"], 4),
    _h("lc-language", "198.18.0.13", ["sglang-language"], 4),
    _h("lc-cp", "198.18.0.14", ["sglang-aggregated"], 4),
    _h("lc-prefill", "198.18.0.15", ["sglang-prefill"], 2),
    _h("lc-decode", "198.18.0.16", ["sglang-decode"], 2),
    _h("lc-router", "198.18.0.17", ["sglang-router"], 0),
]


def _worker_router(doc):
    doc["envs"][6]["argv"] = ["python", "-m", "sglang_router.launch_router", "--worker-urls",
                              "http://127.0.0.1:30000", "--host", "0.0.0.0", "--port", "8080"]


WORKER_CARD = _variant(_worker_router)
