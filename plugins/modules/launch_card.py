#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# This file only documents the module; the work happens on the controller in
# plugins/action/launch_card.py.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: launch_card
short_description: Read launch cards on the controller and plan them onto the play's hosts
version_added: 1.0.0
description:
  - Reads C(onefrontier.launch-card/v1) JSON cards from local paths or C(https://) URLs on the
    controller, validates them against the collection's schema and returns the card models and one
    per-host plan as facts.
  - Each host serves the card its O(card_var) variable names (or O(src) for all), so several cards
    (several models) can share one fleet on different host groups.
  - The plan says which recipe instances run on which host, with which GPU ids, ports and peer URLs;
    see docs/deploy.md, "The plan".
  - Placement comes from each host's O(recipes_var) variable (a list of recipe names, indexes or
    C({name, replicas}) dicts), its address from C(launchcard_address), C(ansible_host) or its name,
    and, when set, its GPU count from C(launchcard_gpus).
  - A host's O(argv_overrides_var) variable changes its card's recipes' argv on that host (remove a flag, set its
    values, append it) and their environment (set or remove a variable); the plan is made from the effective argv, and every instance's C(changes) lists them.
  - Never contacts a managed host. Run it once (C(run_once=true)); the facts reach every host of the play.
  - Hosts without a card variable and without recipes are left out of the plan. An inventory whose hosts name a
    card but where no host names a recipe fails, saying so.
  - A port that a host's O(argv_overrides_var) sets (C(--port), C(--disaggregation-bootstrap-port),
    C(--prometheus-port)) is never moved - one another instance on the host already holds fails the task,
    naming the override; a card's own port that collides is moved to the next free one (the instance's
    C(changes) say so).
  - Each GPU instance runs an image built for its host's accelerator vendor (C(launchcard_accelerator_vendor); unset - the card's image
    stays, preflight holds it to the vendor the host shows) - the card's where its name says it serves that vendor (a word starting C(rocm) - AMD; C(ascend),
    C(npu) or starting C(cann) - Ascend; else NVIDIA) or O(image_vendors_var) declares it, else the host's
    O(vendor_images_var) image for the engine and vendor; the instance's C(changes) names the swap. Routers keep
    the card's image.
options:
  vendor_images_var:
    description:
      - Host variable mapping an engine to C({vendor - image}) (C(nvidia), C(amd), C(ascend)), over the defaults,
        the images upstream documents - vLLM C(vllm/vllm-openai:latest), C(vllm/vllm-openai-rocm:latest),
        C(quay.io/ascend/vllm-ascend:v0.23.0); SGLang C(lmsysorg/sglang:latest),
        C(lmsysorg/sglang:v0.5.8-rocm700-mi35x), C(quay.io/ascend/sglang:v0.5.14-cann9.0.0-a3)
        (C(plugins/plugin_utils/_vendors.py)). Pinned by digest like the card's images.
    type: str
    default: launchcard_vendor_images
  image_vendors_var:
    description:
      - Host variable mapping an image (as the card or O(vendor_images_var) names it) to the vendor or list of
        vendors it serves, for images whose name does not say it; it wins over the name.
    type: str
    default: launchcard_image_vendors
  hosts:
    description:
      - Hosts to plan for. Defaults to every host of the inventory (C(groups.all)), so a run with
        C(--limit) or a narrower play plans the same fleet and renders the same peer URLs.
    type: list
    elements: str
  plan_file:
    description:
      - A plan file (C(launchcard.plan/v1)) that C(playbooks/plan.yml) wrote - its plan is returned instead of planning
        again, with the cards read again from the sources it names (all of them, also those no host of a sliced
        inventory names) and the images it resolved as C(launchcard_plan_images).
      - Refused when it no longer matches - a card whose bytes changed (C(card SRC - checksum sha256:... in the plan,
        sha256:... now)), a host whose planner variables changed (C(host NAME - launchcard_recipes changed)), a host
        of the inventory it does not hold (C(host NAME - not in the plan)), the hosts' order changed. Hosts of the
        plan missing from the inventory are allowed - a sliced job's inventory holds its own hosts only.
    type: path
  plan_run:
    description:
      - With O(plan_file) - every job applying the file is one run for the run lock - the run id is
        C(plan-<16 hex>) of the file's sha256 (the same for every slice of the plan, another for another plan) and
        C(launchcard_run.plan) names that digest. V(false) - one run id per C(ansible-playbook) run.
      - C(playbooks/deploy.yml) sets it (docs/operations.md, "A workflow - plan, sliced apply, routers").
    type: bool
    default: false
    version_added: 1.0.0
  strict_variables:
    description:
      - Before planning, every C(launchcard_*) variable of the inventory's hosts (inventory, group, host and extra
        variables) that no role or playbook of the collection reads is named, with the variable it most likely
        means (C(launchcard_recipe) - did you mean C(launchcard_recipes)?). V(false) - warnings; V(true) - the task
        fails. The known names are read from the collection's roles (C(meta/argument_specs.yml),
        C(defaults/main.yml)) and playbooks.
      - Checked in the same step, whatever this option - an entry of C(launchcard_registry_credentials) with an
        empty or missing C(username) or C(password), and a C(launchcard_hf_endpoint) that is not an C(http://)
        or C(https://) URL with a host, fail the task naming the variable (never a secret's value).
    type: bool
    default: false
    version_added: 1.0.0
  model_configs:
    description:
      - Read each card's model C(config.json) at the card's revision from the Hub (O(hf_endpoint), O(hf_token), with
        C(huggingface_hub)'s C(hf_hub_download) and its cache) and keep the fields the KV cache is computed from in
        the plan's C(model_configs) (so a plan file carries them), for preflight's C(memory_budget) check.
      - One that cannot be read is recorded with the error and makes that check warn; planning goes on.
      - Not read again when applying a plan file (O(plan_file)).
    type: bool
    default: false
    version_added: 1.0.0
  hf_endpoint:
    description: The Hub or an internal mirror of it; empty - C(huggingface_hub)'s default.
    type: str
    default: ''
    version_added: 1.0.0
  hf_token:
    description: Token for a gated or private model's C(config.json); never logged.
    type: str
    default: ''
    version_added: 1.0.0
  facts:
    description:
      - Return the card models, the plan and the run identity as facts (V(true)), or as the result's own keys
        C(launchcard_cards), C(launchcard_plan) and C(launchcard_run) (V(false)), for O(ignore:register) and
        M(ansible.builtin.set_fact) with C(run_once).
      - Why V(false) - Ansible keeps a module's facts in its fact cache, and every task on every host then
        deep-copies that cache twice to build the task's variables (C(namespace_facts) and C(clean_facts) in
        ansible-core's C(ansible/vars/manager.py)), so a fleet-wide plan held as a fact costs time that grows
        with hosts x plan size. M(ansible.builtin.set_fact) keeps them as host variables, which are shared, not
        copied. The C(launchcard.inference.plan) role uses V(false).
    type: bool
    default: true
  plan_final:
    description:
      - With O(facts=false) - C(launchcard_plan_final), whether this job of a plan file is the plan's final one
        (see RV(launchcard_keep_fleet_lock)); a boolean or its string, empty or null when unset.
    type: raw
    version_added: 1.0.0
author:
  - launchcard.inference contributors (@launchcard)
notes:
  - The card is untrusted input. Errors name the JSON path of the offending value, for example
    C(envs[4].argv[7]), and the task fails before any host is touched.
extends_documentation_fragment:
  - launchcard.inference.card_source
  - launchcard.inference.attributes.controller
  - launchcard.inference.attributes.action
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  diff_mode:
    support: N/A
    details: Plans on the controller and changes nothing.
"""

EXAMPLES = r"""
- name: Plan each host's card (its launchcard_card_src) onto the play's hosts
  launchcard.inference.launch_card:
  run_once: true

- name: Plan, then give every host the plan as host variables (what the plan role does)
  launchcard.inference.launch_card:
    facts: false
  run_once: true
  register: planned

- name: Give every host the plan
  ansible.builtin.set_fact:
    launchcard_cards: "{{ planned.launchcard_cards }}"
    launchcard_plan: "{{ planned.launchcard_plan }}"
    launchcard_run: "{{ planned.launchcard_run }}"
  run_once: true

- name: Plan a card fetched over HTTPS, pinned by checksum
  launchcard.inference.launch_card:
    src: https://cards.example.com/glm-5.3-flash.json
    checksum: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  run_once: true
"""

RETURN = r"""
ansible_facts:
  description: >-
    The card model and the plan. With O(facts=false) the same three keys are returned at the top level of the
    result instead.
  returned: success
  type: dict
  contains:
    launchcard_cards:
      description: >-
        Card source to card model: C(model) (repo, revision, weight_gib, weight_bytes), C(hardware)
        (min_gpus, min_disk_gib, min_disk_bytes with GiB = 2**30 bytes, gpu_models),
        C(checkpoints) and C(recipes) (one per card C(envs) entry, each with name, engine,
        role, tensor_parallel_size, gpus, port, image, argv, env).
      type: dict
    launchcard_plan:
      description: >-
        C(cards) (source to repo, revision, slug) and C(hosts), a dict from host name to C(card)
        (its card source), C(address), C(gpus_needed) and C(instances) (id, unit, recipe, role,
        gpu_ids, port, bootstrap_port, url, health_url, probe, argv, env, changes). C(argv) is the effective argv,
        with the host's site overrides applied; an instance whose recipe the host overrides also carries
        C(recipe_facts), what its effective argv says of the recipe (tensor and pipeline parallel sizes,
        quantization, peer lists) for preflight.
      type: dict
    launchcard_run:
      description: >-
        Who runs this play, for the run lock: C(id) (UTC time and 8 random hex digits, one per run, the
        same on every host; with O(plan_run), C(plan-) and 16 hex digits of the plan file's sha256, and C(plan)
        that C(sha256:<hex>)), C(user) and C(controller) (the controller's login user and host name),
        C(playbook) (the playbook file name given to ansible-playbook), C(cards) (card source to
        C(sha256:<hex>) of the loaded card, as a host's record holds it) and C(anchor) (the first host of
        the plan in sorted order, which holds the fleet lock).
      type: dict
    launchcard_plan_images:
      description: >-
        With O(plan_file) only - the images the plan file holds resolved (C(image_refs), C(image_sizes)), for
        M(launchcard.inference.resolve_images)'s O(launchcard.inference.resolve_images#module:resolved); empty when it holds none.
      type: dict
launchcard_gates:
  description: >-
    With O(facts=false) - every planned host's health gate, C({host - [{name, url, probe, model, unit, peers}]}),
    C(peers) the planned instances whose endpoint the instance's argv names; the units role reads it.
  returned: success and O(facts=false)
  type: dict
launchcard_peer_ports:
  description: >-
    With O(facts=false) - every planned host's peer ports on other hosts, C({host - [{address, port, why}]}), for its
    M(launchcard.inference.preflight) call.
  returned: success and O(facts=false)
  type: dict
launchcard_foreign_peers:
  description: >-
    With O(facts=false) - the planned instances on the plan's hosts outside the play (a C(--limit) run),
    C({address - host}); empty on a full run. The units role checks no unit inside the run is left pointing at one
    the plan moved.
  returned: success and O(facts=false)
  type: dict
launchcard_keep_fleet_lock:
  description: >-
    With O(facts=false) - whether this job leaves the fleet lock held for a later job of its plan file - true for a
    job of a plan file (O(plan_run)) that is not its final one - O(plan_final) false, or unset and the play
    holds a part of the plan's hosts.
  returned: success and O(facts=false)
  type: bool
launchcard_record_cards:
  description: >-
    With O(facts=false) - each loaded card as a host's record names it, C({source - {sha256, repo, revision}}):
    C(sha256) of the card's model (its source left out, so the same card read from another path is no change).
  returned: success and O(facts=false)
  type: dict
launchcard_plan_inputs:
  description: >-
    What the plan was made from, for the plan file - C(cards) (source to C(sha256:<hex>) of the card's bytes) and
    C(inventory) (C([host, {variable - sha256:<hex>}]) in inventory order, for each variable the planner read that
    the host sets).
  returned: success
  type: dict
warnings:
  description:
    - Unknown card keys, reported and ignored.
    - One per router the plan runs with C(--mini-lb) (SGLang's debug balancer, no worker API) - every upgrade of
      its workers is an outage - naming the C(launchcard_argv_overrides) that runs the regular PD router instead.
  returned: when present
  type: list
  elements: str
"""
