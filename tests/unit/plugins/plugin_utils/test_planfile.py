# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils._planfile: the plan file's document, its bytes, and what makes one refused."""

from __future__ import annotations

import json

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _planfile as planfile

ARGS = {"card_var": "launchcard_card_src", "checksum_var": "launchcard_card_checksum",
        "recipes_var": "launchcard_recipes", "argv_overrides_var": "launchcard_argv_overrides",
        "vendor_images_var": "launchcard_vendor_images", "image_vendors_var": "launchcard_image_vendors"}
NAMES = planfile.input_vars(ARGS, "launchcard_accelerator_vendor")
CARD = {"model": {"repo": "org/model", "revision": "a" * 40}}
PLAN = {"cards": {"c.json": {}},
        "hosts": {"gpu-a": {"card": "c.json", "instances": []}, "gpu-b": {"card": "c.json", "instances": []}}}


def inputs(**hosts):
    """``fingerprint`` of hosts given as name=vars, in the order given."""
    return planfile.fingerprint([(h, planfile.host_inputs(hv, NAMES)) for h, hv in hosts.items()], NAMES)


def doc(inventory, digest="sha256:" + "1" * 64, images=None):
    return planfile.loads(planfile.dumps(planfile.document(PLAN, {"c.json": CARD}, {"c.json": digest}, inventory,
                                                           images)))


A = {"launchcard_card_src": "c.json", "launchcard_recipes": ["vllm-aggregated"], "ansible_host": "10.0.0.1"}
B = {"launchcard_card_src": "c.json", "launchcard_recipes": ["sglang-router"], "ansible_host": "10.0.0.2"}


def test_every_input_is_read_through_its_variable_and_unset_ones_are_left_out():
    assert [v for dummy, v in NAMES] == [
        "launchcard_card_src", "launchcard_card_checksum", "launchcard_recipes", "launchcard_address", "ansible_host",
        "launchcard_gpus", "launchcard_argv_overrides", "launchcard_accelerator_vendor", "launchcard_vendor_images",
        "launchcard_image_vendors"]
    got = planfile.host_inputs(dict(A, launchcard_gpus=8, unrelated=1), NAMES)
    assert got["recipes"] == ["vllm-aggregated"] and got["gpus"] == 8 and got["address"] is None
    assert "unrelated" not in json.dumps(inputs(a=dict(A, unrelated=1)))
    assert sorted(inputs(a=A)[0][1]) == ["ansible_host", "launchcard_card_src", "launchcard_recipes"]


def test_a_digest_does_not_depend_on_key_order():
    assert planfile.digest({"x": 1, "y": [1, 2]}) == planfile.digest({"y": [1, 2], "x": 1})
    assert planfile.digest([1, 2]) != planfile.digest([2, 1])
    assert planfile.bytes_digest(b"") == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_the_same_plan_gives_the_same_bytes_and_reads_back():
    one = planfile.dumps(planfile.document(PLAN, {"c.json": CARD}, {"c.json": "sha256:x"}, inputs(a=A, b=B)))
    two = planfile.dumps(planfile.document(json.loads(json.dumps(PLAN)), {"c.json": CARD}, {"c.json": "sha256:x"},
                                           inputs(a=A, b=B)))
    assert one == two and one.endswith("}\n")
    read = planfile.loads(one)
    assert read["schema"] == "launchcard.plan/v1"
    assert read["cards"] == {"c.json": {"sha256": "sha256:x", "repo": "org/model", "revision": "a" * 40}}
    assert read["plan"] == PLAN and "images" not in read


def test_resolved_images_are_kept_and_none_resolved_leaves_them_out():
    images = {"image_refs": {"img:1": "docker.io/img@sha256:" + "2" * 64}, "image_sizes": {"img:1": 7},
              "registry_requests": 3}
    assert doc(inputs(a=A), images=images)["images"] == {"image_refs": images["image_refs"], "image_sizes": {"img:1": 7}}
    assert "images" not in doc(inputs(a=A), images={"image_refs": {}, "image_sizes": {}})


def test_a_plan_that_still_matches_has_no_differences_for_the_fleet_or_any_slice():
    d = doc(inputs(a=A, b=B))
    digests = {"c.json": "sha256:" + "1" * 64}
    assert planfile.differences(d, digests, inputs(a=A, b=B)) == []
    # a sliced job's inventory holds its own hosts only
    assert planfile.differences(d, digests, inputs(b=B)) == []
    assert planfile.differences(d, digests, []) == []


def test_each_change_is_named():
    d = doc(inputs(a=A, b=B))
    now = {"c.json": "sha256:" + "2" * 64}
    changed = dict(A, launchcard_recipes=["sglang-decode"], launchcard_gpus=4)
    assert planfile.differences(d, now, inputs(a=changed, b=B, z=A)) == [
        "card c.json: checksum sha256:%s in the plan, sha256:%s now" % ("1" * 64, "2" * 64),
        "host a: launchcard_gpus, launchcard_recipes changed",
        "host z: not in the plan",
    ]
    # a variable the plan was made without, or one unset since
    assert planfile.differences(d, {"c.json": "sha256:" + "1" * 64}, inputs(a=dict(A, ansible_host=None))) == [
        "host a: ansible_host changed"]
    assert planfile.differences(d, {}, inputs(a=A))[0] == "card c.json: checksum sha256:%s in the plan, None now" % (
        "1" * 64)


def test_hosts_that_changed_alike_share_a_line_that_names_the_plans_cards():
    hosts = dict(("h%d" % i, A) for i in range(7))
    d = doc(inputs(**hosts))
    moved = dict((h, dict(A, launchcard_card_src="other.json")) for h in hosts)
    assert planfile.differences(d, {"c.json": "sha256:" + "1" * 64}, inputs(**moved), "launchcard_card_src") == [
        "hosts h0, h1, h2, h3, h4 and 2 more (7): launchcard_card_src changed (the plan was made from c.json)"]
    assert planfile.differences(d, {"c.json": "sha256:" + "1" * 64}, inputs(h0=moved["h0"], h1=A, z=A, y=A)) == [
        "host h0: launchcard_card_src changed", "hosts z, y (2): not in the plan"]


def test_the_hosts_order_is_part_of_the_plan():
    d = doc(inputs(a=A, b=B))
    assert planfile.differences(d, {"c.json": "sha256:" + "1" * 64}, inputs(b=B, a=A)) == [
        "inventory: the hosts' order changed (the planner places hosts in inventory order)"]


def test_a_refusal_lists_at_most_twenty_differences():
    text = planfile.refusal("/p.json", ["host h%d: launchcard_gpus changed" % i for i in range(25)])
    lines = text.splitlines()
    assert lines[0] == ("/p.json no longer matches the cards or the inventory; plan again (playbooks/plan.yml) or "
                        "undo the change:")
    assert len(lines) == 22 and lines[-1] == "  ... and 5 more"


@pytest.mark.parametrize("text, message", [
    ("{", "p: not a plan file (not JSON: "),
    ("[]", "p: not a plan file: schema 'list', expected 'launchcard.plan/v1'"),
    ('{"schema": "launchcard.plan/v0"}', "p: not a plan file: schema 'launchcard.plan/v0', expected"),
    ('{"schema": "launchcard.plan/v1", "cards": {}, "inventory": {}, "plan": {}}', "p: inventory is missing or not a list"),
    ('{"schema": "launchcard.plan/v1", "cards": {}, "inventory": [], "plan": {}}', "p: plan.hosts is missing"),
    ('{"schema": "launchcard.plan/v1", "cards": {}, "inventory": [["a"]], "plan": {"hosts": {}}}',
     "p: inventory entry ['a'] is not [host, {variable: digest}]"),
])
def test_a_file_that_is_not_a_plan_file_is_refused(text, message):
    with pytest.raises(planfile.PlanFileError) as err:
        planfile.loads(text, "p")
    assert str(err.value).startswith(message)


def test_the_jobs_of_one_plan_file_share_a_run_id_and_another_file_has_another():
    text = planfile.dumps(doc(inputs(**{"gpu-a": A, "gpu-b": B})))
    one = planfile.run_id(planfile.bytes_digest(text.encode("utf-8")))
    assert one == planfile.run_id(planfile.bytes_digest(text.encode("utf-8")))
    assert one.startswith("plan-") and len(one) == len("plan-") + planfile.RUN_ID_DIGITS
    other = planfile.dumps(doc(inputs(**{"gpu-a": A, "gpu-b": dict(B, ansible_host="10.0.0.9")})))
    assert planfile.run_id(planfile.bytes_digest(other.encode("utf-8"))) != one
    with pytest.raises(planfile.PlanFileError):
        planfile.run_id("md5:abc")


def test_only_the_plans_final_job_releases_the_fleet_lock():
    plan_run, own_run = {"id": "plan-0123456789abcdef", "plan": "sha256:" + "0" * 64}, {"id": "20261203T000000Z-1"}
    everyone = ["gpu-a", "gpu-b", "rtr"]
    # a run of its own releases it as always; so does an unsliced run of the file (its own final job)
    assert not planfile.keeps_fleet_lock(own_run, everyone, ["gpu-a"])
    assert not planfile.keeps_fleet_lock(plan_run, everyone, everyone)
    # a slice keeps it for the final job, which releases it whatever its hosts
    assert planfile.keeps_fleet_lock(plan_run, everyone, ["gpu-a"])
    assert not planfile.keeps_fleet_lock(plan_run, everyone, ["rtr"], final=True)
    assert planfile.keeps_fleet_lock(plan_run, everyone, everyone, final=False)
