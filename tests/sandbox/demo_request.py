#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Send one completion to every router and every vLLM engine the plan places, and show the answers.

Used by ``make demo`` after the deploy: it plans the inventory's card with
the collection's own planner (no second copy of placement logic), finds the
router and vLLM instances, and POSTs ``/v1/completions`` to each one's address
from this machine, as a client of the fleet would. A vLLM engine's answer
comes with the version it reports (``/version``), the model length it loaded
(``/v1/models``) and the token ids it generated (``return_token_ids``): on the
sandbox fleet that runs the real vLLM, real tokens of the tiny checkpoint the
host staged. Then, when the inventory has a ``launchcard_monitoring`` host, it
prints ``Prometheus: http://ADDRESS:PORT`` and queries Prometheus's HTTP API for
the series of every vLLM engine and router the plan places, with the labels the
plan gave them (card, recipe, host). Exit status 1 if any answer is not a 200
with text, or a planned vLLM engine or router has no series.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card  # noqa: E402
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import (  # noqa: E402
    normalize_placement,
    plan_fleet,
)


#: Debian 12's prometheus 2.42.0 `--help`: --web.listen-address="0.0.0.0:9090" (roles/prometheus keeps it)
PROMETHEUS_PORT = 9090
#: how long the demo waits for Prometheus's first scrapes after the deploy wrote the targets
SCRAPE_WAIT_S = 90


def _inventory(inventory):
    # the virtualenv's ansible-inventory, beside this Python: the script runs by hand too, not only under make
    tool = os.path.join(os.path.dirname(sys.executable), "ansible-inventory")
    out = subprocess.run([tool if os.path.exists(tool) else "ansible-inventory", "-i", inventory, "--list"], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout
    return json.loads(out)


def prometheus_urls(inv):
    """``http://ADDRESS:9090`` of each host of the inventory group ``launchcard_monitoring``."""
    hostvars = inv["_meta"]["hostvars"]
    return ["http://%s:%d" % (hostvars.get(h, {}).get("ansible_host") or h, PROMETHEUS_PORT)
            for h in inv.get("launchcard_monitoring", {}).get("hosts", [])]


def query(prom, promql):
    """An instant query's result vector (Prometheus's HTTP API, /api/v1/query)."""
    return _get(prom + "/api/v1/query?" + urllib.parse.urlencode({"query": promql}))["data"]["result"]


def show_series(prom, instances):
    """Print each planned vLLM engine's and router's series count with the plan's labels; the ids with none."""
    ids = "|".join(sorted(i["id"] for i in instances))
    promql = 'count by (card, recipe, host, instance, role) ({job="launchcard-engines", instance=~"%s"})' % ids
    deadline = time.time() + SCRAPE_WAIT_S
    while True:
        rows = query(prom, promql)
        missing = sorted(set(i["id"] for i in instances) - set(r["metric"]["instance"] for r in rows))
        if not missing or time.time() > deadline:
            break
        time.sleep(2)
    print("query: %s" % promql)
    for r in sorted(rows, key=lambda r: r["metric"]["instance"]):
        m = r["metric"]
        fields = (m["card"], m["recipe"], m["host"], m["role"], r["value"][1])
        print("  card=%s recipe=%s host=%s role=%s: %s series" % fields)
    return missing


def inventory_plan(inventory):
    """Plan the inventory's cards exactly as the deploy does (one card per host)."""
    inv = _inventory(inventory)
    hostvars = inv["_meta"]["hostvars"]
    inventory_dir = os.path.dirname(os.path.abspath(os.path.join(ROOT, inventory)))
    by_card, seen = {}, set()

    def walk(group):
        for h in inv.get(group, {}).get("hosts", []):
            hv = hostvars.get(h, {})
            if h in seen or "launchcard_card_src" not in hv:
                continue
            seen.add(h)
            # ansible-inventory does not template; the sandbox inventories only use {{ playbook_dir }} (the
            # repo's playbooks/) or {{ inventory_dir }} in card paths.
            src = hv["launchcard_card_src"].replace("{{ playbook_dir }}", os.path.join(ROOT, "playbooks")).replace(
                "{{ inventory_dir }}", inventory_dir)
            by_card.setdefault(src, []).append((h, {
                "address": hv.get("launchcard_address") or hv.get("ansible_host") or h,
                "recipes": hv.get("launchcard_recipes") or [],
                "gpus": hv.get("launchcard_gpus")}))
        for child in inv.get(group, {}).get("children", []):
            walk(child)

    walk("all")
    cards = {}
    for src in by_card:
        with open(src, "rb") as f:
            cards[src] = load_card(f.read(), source=src)
    return plan_fleet(cards, {src: normalize_placement(e) for src, e in by_card.items()})


def _get(url):
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read())


def _complete(url, model, prompt, **extra):
    body = json.dumps(dict({"model": model, "prompt": prompt, "max_tokens": 16}, **extra)).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def ask_vllm(inst, prompt):
    """One completion from a vLLM engine, with what it reports of itself; returns the line to print."""
    version = _get(inst["url"] + "/version").get("version")
    models = _get(inst["url"] + "/v1/models")["data"]
    # vLLM's completion request: return_token_ids (vllm/entrypoints/openai/completion/protocol.py)
    choice = _complete(inst["url"], inst["served_model"], prompt, return_token_ids=True)["choices"][0]
    return "vllm %s on %s (%s, max_model_len %s) answered %r, token ids %s" % (
        version, inst["host"], inst["url"], models[0].get("max_model_len"), choice["text"], choice.get("token_ids"))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-i", "--inventory", required=True)
    ap.add_argument("--prompt", default="Say hello through prefill and decode")
    args = ap.parse_args()
    the_plan = inventory_plan(args.inventory)
    instances = [i for h in the_plan["hosts"].values() for i in h["instances"]]
    routers = [i for i in instances if i["role"] == "router"]
    engines = [i for i in instances if i["engine"] == "vllm" and i["role"] != "router"]
    if not routers and not engines:
        print("no router and no vLLM engine in this plan; nothing to ask")
        return 0
    rc = 0
    for r in routers:
        try:
            text = _complete(r["url"], r["served_model"], args.prompt)["choices"][0]["text"]
            print("router %s (%s) answered: %s" % (r["id"], r["url"], text))
        except Exception as exc:  # report every router, then fail
            print("router %s (%s) failed: %s" % (r["id"], r["url"], exc))
            rc = 1
    for inst in engines:
        try:
            print(ask_vllm(inst, args.prompt))
        except Exception as exc:  # report every engine, then fail
            print("vllm %s (%s) failed: %s" % (inst["id"], inst["url"], exc))
            rc = 1
    for prom in prometheus_urls(_inventory(args.inventory)):
        print("Prometheus: %s" % prom)
        try:
            missing = show_series(prom, routers + engines)
        except Exception as exc:  # report it, then fail
            print("Prometheus %s failed: %s" % (prom, exc))
            rc = 1
            continue
        if missing:
            print("no series from %s" % ", ".join(missing))
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
