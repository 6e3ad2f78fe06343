# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch_card action with plan_file (issue 28 item 2): a plan made once, applied to the fleet or a part of it.

The action is plugins.action.launch_card as test_launch_card_action builds it: this file reaches ansible-core through
it (tests/compat/run.py reads that from this docstring, not from the sibling test's imports).

The plan file is written as playbooks/plan.yml writes it (plugin_utils._planfile over the action's facts=false
result); the inventory and card are test_launch_card_action's (the sandbox fleet, the example card).
"""

from __future__ import annotations

import copy
import os
import shutil

from test_launch_card_action import CARD, FLEET, action, assert_no_host_contacted, failure, task_vars

from ansible_collections.launchcard.inference.plugins.plugin_utils import _planfile as planfile
from ansible_collections.launchcard.inference.plugins.plugin_utils import _report as report
from ansible_collections.launchcard.inference.plugins.plugin_utils._weights import HUB_TOKEN_VARS

ORDER = sorted(FLEET)


def write_plan(path, tv, images=None):
    plugin, dummy = action({"facts": False})
    planned = plugin.run(task_vars=tv)
    assert "failed" not in planned, planned
    with open(path, "w") as f:
        inputs = planned["launchcard_plan_inputs"]
        f.write(planfile.dumps(planfile.document(planned["launchcard_plan"], planned["launchcard_cards"],
                                                 inputs["cards"], inputs["inventory"], images)))
    return planned


def apply(path, tv):
    plugin, connection = action({"plan_file": str(path), "facts": False})
    result = plugin.run(task_vars=tv)
    assert_no_host_contacted(connection)
    return result


def sliced(tv, hosts):
    """A sliced job's task_vars: its inventory holds its own hosts only."""
    out = copy.deepcopy(tv)
    out["hostvars"] = dict((h, out["hostvars"][h]) for h in hosts)
    out["groups"] = {"all": list(hosts), "ungrouped": []}
    out["ansible_play_hosts"] = out["ansible_play_batch"] = list(hosts)
    return out


def test_the_plan_file_gives_every_part_of_the_fleet_what_the_whole_run_gives(tmp_path):
    path = tmp_path / "plan.json"
    planned = write_plan(path, task_vars())
    whole = apply(path, task_vars())
    assert "failed" not in whole, whole
    for key in ("launchcard_plan", "launchcard_cards"):
        assert whole[key] == planned[key]
    assert whole["launchcard_run"]["anchor"] == planned["launchcard_run"]["anchor"]
    # AWX slices (every fourth host) and a --limit: the same fleet-wide plan, cards, gates and anchor
    for part in (sliced(task_vars(), ORDER[i::4]) for i in range(4)):
        got = apply(path, part)
        assert got["launchcard_plan"] == planned["launchcard_plan"]
        assert got["launchcard_cards"] == planned["launchcard_cards"]
        assert report.gate_table(got["launchcard_plan"]) == report.gate_table(planned["launchcard_plan"])
        assert got["launchcard_run"]["anchor"] == planned["launchcard_run"]["anchor"]
    limited = apply(path, task_vars(play_hosts=["lc-router"]))
    assert limited["launchcard_plan"] == planned["launchcard_plan"]
    assert limited["launchcard_plan_images"] == {}


def test_the_same_inventory_and_card_write_the_same_bytes(tmp_path):
    write_plan(tmp_path / "one.json", task_vars())
    write_plan(tmp_path / "two.json", task_vars())
    assert (tmp_path / "one.json").read_bytes() == (tmp_path / "two.json").read_bytes()


def test_the_images_it_resolved_reach_the_run(tmp_path):
    path = tmp_path / "plan.json"
    images = {"image_refs": {"lmsysorg/sglang:latest": "docker.io/lmsysorg/sglang@sha256:" + "3" * 64},
              "image_sizes": {"lmsysorg/sglang:latest": 123}}
    write_plan(path, task_vars(), images)
    assert apply(path, task_vars())["launchcard_plan_images"] == images


def test_a_changed_card_is_refused_naming_both_checksums(tmp_path):
    card = tmp_path / "card.json"
    shutil.copy(CARD, str(card))
    path = tmp_path / "plan.json"
    planned = write_plan(path, task_vars(card=str(card)))
    before = planned["launchcard_plan_inputs"]["cards"][str(card)]
    card.write_bytes(card.read_bytes() + b"\n")
    message = failure(apply(path, task_vars(card=str(card))))
    now = planfile.bytes_digest(card.read_bytes())
    assert message.splitlines()[1:] == ["  card %s: checksum %s in the plan, %s now" % (card, before, now)]
    assert message.startswith("%s no longer matches the cards or the inventory" % path)


def test_a_changed_inventory_is_refused_naming_the_host_and_variable(tmp_path):
    path = tmp_path / "plan.json"
    write_plan(path, task_vars())
    tv = task_vars()
    tv["hostvars"]["lc-cp"]["launchcard_recipes"] = ["sglang-aggregated", "sglang-router"]
    tv["hostvars"]["lc-decode"]["launchcard_gpus"] = 4
    tv["hostvars"]["gpu-z"] = dict(tv["hostvars"]["lc-router"], ansible_host="10.9.9.9")
    tv["groups"]["all"] = tv["groups"]["all"] + ["gpu-z"]
    assert failure(apply(path, tv)).splitlines()[1:] == [
        "  host lc-cp: launchcard_recipes changed",
        "  host lc-decode: launchcard_gpus changed",
        "  host gpu-z: not in the plan",
    ]
    # a slice holding the new host is refused as well: it would plan a fleet the plan file does not hold
    assert failure(apply(path, sliced(tv, ["gpu-z"]))).splitlines()[1:] == ["  host gpu-z: not in the plan"]


def test_an_unreadable_or_foreign_file_is_refused(tmp_path):
    assert "plan_file: cannot read %s" % (tmp_path / "none.json") in failure(apply(tmp_path / "none.json", task_vars()))
    (tmp_path / "other.json").write_text('{"schema": "onefrontier.launch-card/v1"}')
    assert "not a plan file: schema 'onefrontier.launch-card/v1'" in failure(apply(tmp_path / "other.json", task_vars()))


class Recording(dict):
    """A host's variables that remember which were read."""

    def __init__(self, data, seen):
        super().__init__(data)
        self.seen = seen

    def get(self, key, default=None):
        self.seen.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.seen.add(key)
        return super().__getitem__(key)


def test_the_planner_reads_no_host_variable_the_fingerprint_leaves_out():
    """One home: every host variable the plan depends on is one of input_vars, so the plan file checks it."""
    seen = set()
    tv = task_vars(launchcard_gpus=8, launchcard_argv_overrides={}, launchcard_accelerator_vendor="nvidia")
    tv["hostvars"] = dict((h, Recording(hv, seen)) for h, hv in tv["hostvars"].items())
    plugin, dummy = action()
    assert "failed" not in plugin.run(task_vars=tv)
    names = planfile.input_vars({"card_var": "launchcard_card_src", "checksum_var": "launchcard_card_checksum",
                                 "recipes_var": "launchcard_recipes", "argv_overrides_var": "launchcard_argv_overrides",
                                 "vendor_images_var": "launchcard_vendor_images",
                                 "image_vendors_var": "launchcard_image_vendors"}, "launchcard_accelerator_vendor")
    # the Hub token check and the inventory's mistakes read their variables too: they refuse a run or warn, never
    # shape a plan (plugin_utils/_weights.py, _inventory_check.py; the card path is fingerprinted resolved)
    refused_only = set(HUB_TOKEN_VARS) | {"inventory_dir", "launchcard_registry_credentials", "launchcard_hf_endpoint",
                                          "launchcard_liveness_recipes"}
    assert seen - refused_only == set(v for dummy, v in names)


def test_a_relative_plan_file_is_read_from_the_working_directory(tmp_path):
    path = tmp_path / "plan.json"
    write_plan(path, task_vars())
    cwd = os.getcwd()
    try:
        os.chdir(str(tmp_path))
        assert "failed" not in apply("plan.json", task_vars())
    finally:
        os.chdir(cwd)


def test_with_plan_run_every_job_of_one_plan_file_is_one_run(tmp_path):
    path = tmp_path / "plan.json"
    write_plan(path, task_vars())
    digest = planfile.bytes_digest(path.read_bytes())
    runs = []
    for part in [sliced(task_vars(), ORDER[i::4]) for i in range(4)] + [task_vars()]:
        plugin, dummy = action({"plan_file": str(path), "facts": False, "plan_run": True})
        runs.append(plugin.run(task_vars=part)["launchcard_run"])
    assert set(r["id"] for r in runs) == {planfile.run_id(digest)} and set(r["plan"] for r in runs) == {digest}
    # without plan_run (upgrade.yml, undeploy.yml): a run id of its own, no plan
    alone = apply(path, task_vars())["launchcard_run"]
    assert "plan" not in alone and not alone["id"].startswith("plan-")
