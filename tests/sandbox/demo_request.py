#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Send one completion to every router the plan places, and show the answer.

Used by ``make demo`` after the deploy: it plans the inventory's card with
the collection's own planner (no second copy of placement logic), finds the
router instances, and POSTs ``/v1/completions`` to each router's address from
this machine, as a client of the fleet would. Exit status 1 if any answer is
not a 200 with text.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card  # noqa: E402
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import (  # noqa: E402
    normalize_placement,
    plan_fleet,
)


def inventory_plan(inventory):
    """Plan the inventory's cards exactly as the deploy does (one card per host)."""
    out = subprocess.run(["ansible-inventory", "-i", inventory, "--list"], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout
    inv = json.loads(out)
    hostvars = inv["_meta"]["hostvars"]
    inventory_dir = os.path.dirname(os.path.abspath(os.path.join(ROOT, inventory)))
    by_card, seen = {}, set()

    def walk(group):
        for h in inv.get(group, {}).get("hosts", []):
            hv = hostvars.get(h, {})
            if h in seen or "launchcard_card_src" not in hv:
                continue
            seen.add(h)
            # ansible-inventory does not template; the sandbox inventories
            # only use {{ inventory_dir }} in card paths.
            src = hv["launchcard_card_src"].replace("{{ inventory_dir }}", inventory_dir)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-i", "--inventory", required=True)
    ap.add_argument("--prompt", default="Say hello through prefill and decode")
    args = ap.parse_args()
    the_plan = inventory_plan(args.inventory)
    routers = [i for h in the_plan["hosts"].values() for i in h["instances"] if i["role"] == "router"]
    if not routers:
        print("no router in this plan; nothing to ask")
        return 0
    rc = 0
    for r in routers:
        body = json.dumps({"model": r["served_model"], "prompt": args.prompt, "max_tokens": 16}).encode()
        req = urllib.request.Request(r["url"] + "/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                answer = json.loads(resp.read())
            text = answer["choices"][0]["text"]
            print("router %s (%s) answered: %s" % (r["id"], r["url"], text))
        except Exception as exc:  # report every router, then fail
            print("router %s (%s) failed: %s" % (r["id"], r["url"], exc))
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
