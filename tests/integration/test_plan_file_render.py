# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/plan.yml, then render.yml given its plan file (issue 28 item 2), run for real, contacting no host.

The sandbox inventory with the native runtime (its units name the virtualenv, and a native run resolves no image,
so no registry is asked): a plan written once renders, for every host of a --limit, exactly the files that the
whole run and a run that plans itself write; a card or inventory changed since is refused with what changed.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
           PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
INVENTORY = "inventories/sandbox/gpus.ini"
NATIVE = ["-e", "launchcard_runtime=native", "-e", "launchcard_runtime_native_venv=/opt/launchcard/venv"]


def playbook(name, *extra):
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "playbooks/%s" % name, "-i", INVENTORY] + NATIVE
                         + list(extra), cwd=ROOT, env=ENV, capture_output=True, text=True, check=False)
    res.text = " ".join((res.stdout + res.stderr).split())
    return res


def changed(res):
    return sum(int(n) for n in re.findall(r"\bchanged=(\d+)", res.stdout))


def same_tree(left, right, hosts):
    for host in hosts:
        a, b = os.path.join(left, host), os.path.join(right, host)
        names = sorted(os.listdir(a))
        assert names == sorted(os.listdir(b)), host
        match, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
        assert (mismatch, errors) == ([], []), (host, mismatch, errors)


def test_a_plan_file_renders_every_part_of_the_fleet_as_the_whole_run(tmp_path):
    plan = str(tmp_path / "plan.json")
    first = playbook("plan.yml", "-e", "launchcard_plan_file=" + plan)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert changed(first) == 1 and oct(os.stat(plan).st_mode & 0o777) == "0o644"
    # it says where the plan went and what it holds
    assert re.search(r"%s \(written\): \S+: \d+ recipe\(s\), \d+ instance\(s\) on 7 host\(s\); \d+ image\(s\) resolved" % re.escape(plan),
                     " ".join(first.stdout.split())), first.stdout[-3000:]
    data = open(plan, "rb").read()
    # the same inventory and card: the same bytes, and the write is ok, not changed
    again = playbook("plan.yml", "-e", "launchcard_plan_file=" + plan)
    assert again.returncode == 0 and changed(again) == 0 and open(plan, "rb").read() == data
    assert "%s (unchanged): " % plan in again.text, again.text[-2000:]

    planned = str(tmp_path / "planned")
    res = playbook("render.yml", "-e", "launchcard_render_dir=" + planned)
    assert res.returncode == 0, res.stdout[-3000:]
    whole = str(tmp_path / "whole")
    res = playbook("render.yml", "-e", "launchcard_render_dir=" + whole, "-e", "launchcard_plan_file=" + plan)
    assert res.returncode == 0, res.stdout[-3000:]
    hosts = sorted(os.listdir(whole))
    assert len(hosts) == 8  # the seven planned hosts and lc-monitor (launchcard_monitoring: its file_sd files)
    same_tree(whole, planned, hosts)
    for i, limit in enumerate(["lc-router,lc-prefill", "lc-vllm:lc-encoder:lc-decode"]):
        part = str(tmp_path / ("part%d" % i))
        res = playbook("render.yml", "-e", "launchcard_render_dir=" + part, "-e", "launchcard_plan_file=" + plan,
                       "--limit", limit)
        assert res.returncode == 0, res.stdout[-3000:]
        assert sorted(os.listdir(part)) == sorted(re.split("[,:]", limit))
        same_tree(part, whole, os.listdir(part))


def test_a_changed_card_or_inventory_is_refused_naming_what_changed(tmp_path):
    card = str(tmp_path / "card.json")
    shutil.copy(os.path.join(ROOT, "cards", "glm-5.3-flash.json"), card)
    plan = str(tmp_path / "plan.json")
    own = ["-e", "launchcard_card_src=" + card, "-e", "launchcard_plan_file=" + plan]
    assert playbook("plan.yml", *own).returncode == 0
    out = str(tmp_path / "out")

    res = playbook("render.yml", "-e", "launchcard_render_dir=" + out, "-e", "launchcard_gpus=4", "--limit",
                   "lc-router", *own)
    assert res.returncode == 2
    assert "%s no longer matches the cards or the inventory" % plan in res.text
    # one line for the hosts that changed alike, not one per host: the seven planned hosts and lc-monitor (a fleet
    # host: the planner reads its launchcard_gpus too)
    assert re.search(r"hosts lc-\S+, .* and 3 more \(8\): launchcard_gpus changed", res.text), res.text[-3000:]

    with open(card, "a") as f:
        f.write("\n")
    res = playbook("render.yml", "-e", "launchcard_render_dir=" + out, *own)
    assert res.returncode == 2
    assert re.search(r"card %s: checksum sha256:[0-9a-f]{64} in the plan, sha256:[0-9a-f]{64} now" % re.escape(card),
                     res.text), res.text[-3000:]
    assert not os.path.exists(out)


def test_render_from_a_plan_file_shows_the_digests_it_pins(tmp_path):
    plan = str(tmp_path / "plan.json")
    assert playbook("plan.yml", "-e", "launchcard_plan_file=" + plan).returncode == 0
    with open(plan) as f:
        doc = json.load(f)
    image = doc["plan"]["hosts"]["lc-vllm"]["instances"][0]["image"]
    pinned = "registry.example/vllm@sha256:" + "4" * 64
    # what plan.yml writes where it resolved the images (the registry is not reached here)
    doc["images"] = {"image_refs": {image: pinned}, "image_sizes": {image: 1}}
    with open(plan, "w") as f:
        json.dump(doc, f, sort_keys=True)
    out = str(tmp_path / "out")
    res = playbook("render.yml", "-e", "launchcard_render_dir=" + out, "-e", "launchcard_plan_file=" + plan,
                   "-e", "launchcard_runtime=podman", "-e", "launchcard_podman_quadlet=false", "--limit", "lc-vllm")
    assert res.returncode == 0, res.stdout[-3000:]
    unit = doc["plan"]["hosts"]["lc-vllm"]["instances"][0]["unit"]  # the engine's, not its liveness units
    text = open(os.path.join(out, "lc-vllm", unit)).read()
    assert pinned in text and " %s " % image not in text, text


def test_a_plan_file_in_a_missing_directory_is_refused_before_planning(tmp_path):
    res = playbook("plan.yml", "-e", "launchcard_plan_file=%s" % (tmp_path / "absent" / "fleet.json"))
    assert res.returncode != 0
    assert "the directory %s does not exist on the controller" % (tmp_path / "absent") in res.text
    # stopped at the check: the plan role's task never ran
    assert "Plan | Read the launch cards" not in res.stdout and not (tmp_path / "absent").exists()
