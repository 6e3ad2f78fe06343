# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin for launchcard.inference.launch_card; documented in plugins/modules/launch_card.py."""

from __future__ import annotations

import datetime
import getpass
import json
import os
import re
import socket

from ansible import context
from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible.module_utils.urls import open_url
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.launchcard.inference.plugins.module_utils import _hf_paths as hf_paths
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import MAX_CARD_BYTES, CardError, load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils import _inventory_check as inventory_check
from ansible_collections.launchcard.inference.plugins.plugin_utils import _memory_budget as memory_budget
from ansible_collections.launchcard.inference.plugins.plugin_utils import _plan_tables as plan_tables
from ansible_collections.launchcard.inference.plugins.plugin_utils import _planfile as planfile
from ansible_collections.launchcard.inference.plugins.plugin_utils._outages import mini_lb_notes
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import (
    PlanError,
    normalize_placement,
    plan_fleet,
)
from ansible_collections.launchcard.inference.plugins.plugin_utils._rollout import card_sha256
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_spec import VARIABLES
from ansible_collections.launchcard.inference.plugins.plugin_utils._vendors import VendorError, apply_vendor_images
from ansible_collections.launchcard.inference.plugins.plugin_utils._weights import http_token_refusal


display = Display()


def run_identity(cards, plan, now=None, plan_digest=None):
    """Who runs this play, for the run lock (plugins/module_utils/_lock.py): one id per run, the same on every host.

    ``{"id": "<UTC time>-<8 hex>", "user": controller login user, "controller": controller host name,
    "playbook": the playbook file name(s) given to ansible-playbook, "cards": {source: "sha256:<hex>"} (the
    same digest a host's record holds), "anchor": the first host of the plan in sorted order (holds the fleet
    lock, whatever --limit says)}``.

    :param plan_digest: the plan file's digest (``sha256:<hex>``) when the jobs applying it share one run: the id is
        ``plan-<hex>`` (plugins/plugin_utils/_planfile.py run_id), and ``plan`` names the digest.
    """
    now = now or datetime.datetime.now(datetime.timezone.utc)
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    playbooks = [os.path.basename(str(p)) for p in (context.CLIARGS.get("args") or ())]
    run = {
        "id": planfile.run_id(plan_digest) if plan_digest else "%s-%s" % (now.strftime("%Y%m%dT%H%M%SZ"), os.urandom(4).hex()),
        "user": user,
        "controller": socket.gethostname(),
        "playbook": ",".join(playbooks) or "?",
        "cards": dict((src, "sha256:" + card_sha256(card)) for src, card in cards.items()),
        "anchor": min(plan["hosts"]) if plan.get("hosts") else None,
    }
    if plan_digest:
        run["plan"] = plan_digest
    return run


_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def hub_config_fetch(endpoint, token):
    """``fetch(repo, revision)`` of a model's ``config.json`` through huggingface_hub: from its cache when a run
    read that revision before, else one metadata request without retries (an unreachable Hub fails at once, not
    after hf_hub_download's five backoffs), then the download into the cache."""
    def fetch(repo, revision):
        # the cache's place as huggingface_hub reads it from the environment (its constants import nothing else)
        from huggingface_hub import constants
        # a commit's snapshot never changes: one in the cache is read without importing the download code (0.09 s)
        path = os.path.join(hf_paths.hub_repo_dir(constants.HF_HUB_CACHE, repo), "snapshots", revision or "", "config.json")
        if not (_COMMIT.match(revision or "") and os.path.isfile(path)):
            # the controller's requirements.txt; imported only when asked for
            from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url, try_to_load_from_cache
            path = try_to_load_from_cache(repo, "config.json", revision=revision)
            if not isinstance(path, str):
                get_hf_file_metadata(hf_hub_url(repo, "config.json", revision=revision, endpoint=endpoint or None),
                                     token=token or False, timeout=10, endpoint=endpoint or None, retry_on_errors=False)
                path = hf_hub_download(repo_id=repo, filename="config.json", revision=revision,
                                       endpoint=endpoint or None, token=token or False)
        with open(path, "rb") as handle:
            return json.loads(handle.read(1 << 20).decode("utf-8"))
    return fetch


class ActionModule(ActionBase):
    """Controller-side card parser and planner (no remote execution)."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def _read(self, src, validate_certs, var="src"):
        # a card over the limit is refused unparsed: at most one byte more than the limit is read
        over = "%s: %s holds more than %d bytes (%d MiB), the most a card may hold; it was not read further" % (
            var, src, MAX_CARD_BYTES, MAX_CARD_BYTES >> 20)
        if src.startswith("https://") or src.startswith("http://"):
            if not src.startswith("https://"):
                raise AnsibleActionFail("%s: only https:// URLs are fetched, found %s" % (var, src))
            try:
                raw = open_url(src, validate_certs=validate_certs, timeout=30).read(MAX_CARD_BYTES + 1)
            except Exception as exc:
                raise AnsibleActionFail("%s: could not fetch %s: %s" % (var, src, to_native(exc)))
            if len(raw) > MAX_CARD_BYTES:
                raise AnsibleActionFail(over)
            return raw
        path = self._find_needle("files", src) if not os.path.isabs(src) else src
        try:
            with open(path, "rb") as f:
                raw = f.read(MAX_CARD_BYTES + 1)
        except (IOError, OSError) as exc:
            raise AnsibleActionFail("%s: cannot read %s: %s" % (var, src, to_native(exc)))
        if len(raw) > MAX_CARD_BYTES:
            raise AnsibleActionFail(over)
        return raw

    def _card(self, src, checksum, validate_certs, var):
        raw = self._read(src, validate_certs, var)
        # one digest of the bytes: checked against the card's checksum, and what a plan file records
        got = planfile.bytes_digest(raw)
        if checksum:
            algo, dummy, want = checksum.partition(":")
            if algo != "sha256" or not want:
                raise AnsibleActionFail("checksum: expected sha256:<hex>, found %s" % checksum)
            if got != "sha256:" + want.lower():
                raise AnsibleActionFail("checksum: %s has %s, expected sha256:%s" % (src, got, want))
        try:
            return load_card(raw, source=src), got
        except CardError as exc:
            raise AnsibleActionFail(to_text(exc))

    def _plan_file(self, path):
        """The plan file's document (playbooks/plan.yml wrote it) and the digest of its bytes."""
        try:
            with open(path, "rb") as f:
                raw = f.read()
            text = raw.decode("utf-8")
        except (IOError, OSError, UnicodeDecodeError) as exc:
            raise AnsibleActionFail("plan_file: cannot read %s: %s" % (path, to_native(exc)))
        try:
            return planfile.loads(text, path), planfile.bytes_digest(raw)
        except planfile.PlanFileError as exc:
            raise AnsibleActionFail(to_text(exc))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        try:
            return self._plan(result, task_vars or {})
        except AnsibleError as exc:
            # Returned as the task's result, not raised: ansible-core 2.19 prints a raised failure as an error
            # summary that repeats its message under "caused by", and then the task's "fatal:" line with the
            # message once more, so a bad card's error was printed three times. The "fatal:" line alone names it.
            result.update(changed=False, failed=True, msg=to_text(exc.message))
            return result

    def _plan(self, result, task_vars):
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            src=dict(type="str"),
            checksum=dict(type="str"),
            card_var=dict(type="str", default="launchcard_card_src"),
            checksum_var=dict(type="str", default="launchcard_card_checksum"),
            hosts=dict(type="list", elements="str"),
            recipes_var=dict(type="str", default="launchcard_recipes"),
            argv_overrides_var=dict(type="str", default="launchcard_argv_overrides"),
            vendor_images_var=dict(type="str", default="launchcard_vendor_images"),
            image_vendors_var=dict(type="str", default="launchcard_image_vendors"),
            validate_certs=dict(type="bool", default=True),
            facts=dict(type="bool", default=True),
            plan_file=dict(type="path"),
            plan_run=dict(type="bool", default=False),
            strict_variables=dict(type="bool", default=False),
            model_configs=dict(type="bool", default=False),
            hf_endpoint=dict(type="str", default=""),
            hf_token=dict(type="str", default="", no_log=True),
            plan_final=dict(type="raw"),
        ))
        hostvars = task_vars.get("hostvars", {})
        # The fleet is the inventory: plan every host, also those outside
        # this run's --limit, so peer URLs never depend on the limit.
        names = args["hosts"] or (task_vars.get("groups") or {}).get("all") or []
        # every variable of a host the planner reads, read here only: the plan file's fingerprint holds them all
        input_vars = planfile.input_vars(args, VARIABLES["vendor"])
        # each host's variables read once (HostVars computes them per lookup)
        host_vars = dict((name, hostvars.get(name) or {}) for name in names)
        self._check_inventory(result, host_vars, args["strict_variables"])
        by_card, checksums, inputs = {}, {}, []
        for name in names:
            hv = planfile.host_inputs(host_vars[name], input_vars)
            recipes = hv["recipes"] or []
            src = args["src"] or hv["card"]
            if src and not args["src"]:
                # a relative card path is the inventory's, not a file of the installed collection's roles
                src, problem = inventory_check.card_path(src, host_vars[name].get("inventory_dir"),
                                                         "%s of %s" % (args["card_var"], name))
                if problem:
                    raise AnsibleActionFail(problem)
            if src and "://" not in src:
                src = os.path.normpath(src)
            if not src:
                if recipes:
                    raise AnsibleActionFail("%s lists %s but has no %s" % (name, args["recipes_var"], args["card_var"]))
                continue
            hv["card"] = src
            inputs.append((name, hv))
            checksums[src] = args["checksum"] or hv["checksum"] or checksums.get(src)
            by_card.setdefault(src, []).append((name, {
                "address": hv["address"] or hv["ansible_host"] or name,
                "recipes": recipes,
                "gpus": hv["gpus"],
                # the host's site overrides of its card's argv, checked against the card by the planner
                "argv_overrides": hv["argv_overrides"],
            }))
        inventory = planfile.fingerprint(inputs, input_vars)
        # the Hub token never goes to a plain-HTTP endpoint unless the inventory says so: refused here, before any host
        refused = http_token_refusal([(name, host_vars[name].get) for name, dummy in inputs])
        if refused:
            raise AnsibleActionFail(refused)
        var = "src" if args["src"] else args["card_var"]
        if args["plan_file"]:
            # apply a plan made before (playbooks/plan.yml), every card of it read again: also those no host of a
            # sliced job's inventory names, so launchcard_cards is the whole run's
            doc, doc_digest = self._plan_file(args["plan_file"])
            loaded = dict((src, self._card(src, checksums.get(src), args["validate_certs"], var)) for src in doc["cards"])
            digests = dict((src, d) for src, (dummy, d) in loaded.items())
            diffs = planfile.differences(doc, digests, inventory, args["card_var"])
            if diffs:
                raise AnsibleActionFail(planfile.refusal(args["plan_file"], diffs))
            cards = dict((src, card) for src, (card, dummy) in loaded.items())
            the_plan = doc["plan"]
        else:
            if not by_card:
                raise AnsibleActionFail("no card: set src or the %s variable" % args["card_var"])
            if not any(hv["recipes"] for dummy, hv in inputs):
                raise AnsibleActionFail(inventory_check.no_recipe([n for n, dummy in inputs], args["recipes_var"],
                                                                  var))
            loaded = dict((src, self._card(src, checksums[src], args["validate_certs"], var)) for src in by_card)
            digests = dict((src, d) for src, (dummy, d) in loaded.items())
            cards = dict((src, card) for src, (card, dummy) in loaded.items())
            the_plan = self._plan_cards(cards, by_card, dict(inputs))
            if args["model_configs"]:
                # the models' config.json facts ride in the plan (and its file): preflight's memory_budget reads them
                the_plan["model_configs"] = memory_budget.model_configs(
                    cards, hub_config_fetch(args["hf_endpoint"], args["hf_token"]))
        for msg in the_plan.get("deprecations", ()):
            display.deprecated(msg, version="2.0.0", collection_name="launchcard.inference")
        warnings = result.pop("warnings", []) + ["%s: %s" % (src, w) for src, card in cards.items() for w in card["warnings"]]
        # what a --mini-lb router costs at each upgrade, and how to run the regular one instead
        warnings += mini_lb_notes(the_plan)
        # a per-recipe unit option naming no recipe of the host's card (a typo leaves the recipe's liveness on)
        warnings += inventory_check.unknown_recipe_keys(
            dict((name, host_vars[name].get(VARIABLES["liveness_recipes"])) for name, dummy in inputs),
            dict((name, [r["name"] for r in cards[hv["card"]]["recipes"]]) for name, hv in inputs if hv["card"] in cards),
            VARIABLES["liveness_recipes"])
        if warnings:
            result["warnings"] = warnings
        result["changed"] = False
        planned = {"launchcard_cards": cards, "launchcard_plan": the_plan, "launchcard_run": run_identity(
            cards, the_plan, plan_digest=doc_digest if args["plan_file"] and args["plan_run"] else None)}
        if args["plan_file"]:
            # the digests the plan file's images were resolved to, for tasks/resolve-images.yml
            planned["launchcard_plan_images"] = doc.get("images") or {}
        if args["facts"]:
            result["ansible_facts"] = planned
        else:
            result.update(planned)
            # the tables every host reads of the whole plan, once for the fleet (the caller's set_fact shares them)
            play_hosts = task_vars.get("ansible_play_hosts_all")
            try:
                result.update(plan_tables.fleet_tables(cards, the_plan, planned["launchcard_run"],
                                                       the_plan["hosts"] if play_hosts is None else play_hosts,
                                                       args["plan_final"]))
            except ValueError as exc:
                raise AnsibleActionFail(to_text(exc))
        # what playbooks/plan.yml writes beside the plan: the cards' checksums and the inventory's fingerprint
        result["launchcard_plan_inputs"] = {"cards": digests, "inventory": inventory}
        result["msg"] = "; ".join("%s@%s: %d recipe(s), %d instance(s) on %d host(s)" % (
            card["model"]["repo"], card["model"]["revision"][:12], len(card["recipes"]),
            sum(len(h["instances"]) for h in the_plan["hosts"].values() if h["card"] == src),
            sum(1 for h in the_plan["hosts"].values() if h["card"] == src)) for src, card in sorted(cards.items()))
        return result

    @staticmethod
    def _check_inventory(result, host_vars, strict):
        """Name the inventory's mistakes before planning: unknown ``launchcard_*`` variables (warnings, errors
        with ``strict``), and the registry credentials and Hub endpoint the hosts would use."""
        unknown = inventory_check.unknown_variables(
            dict((name, list(hv)) for name, hv in host_vars.items()), inventory_check.known_variables())
        if unknown and strict:
            raise AnsibleActionFail("\n".join(unknown + ["(%s is true: an unknown variable is an error)" % (
                inventory_check.STRICT_VARIABLE)]))
        problems, seen = [], set()
        for hv in host_vars.values():
            for var, check in (("launchcard_registry_credentials", inventory_check.registry_credentials),
                               ("launchcard_hf_endpoint", inventory_check.hub_endpoint)):
                for line in check(hv.get(var), var):
                    if line not in seen:
                        seen.add(line)
                        problems.append(line)
        if problems:
            raise AnsibleActionFail("\n".join(problems))
        if unknown:
            result["warnings"] = unknown

    @staticmethod
    def _plan_cards(cards, by_card, inputs):
        """Plan the cards onto their hosts, each GPU instance on an image built for its host's vendor."""
        try:
            the_plan = plan_fleet(cards, {src: normalize_placement(e) for src, e in by_card.items()})
        except PlanError as exc:
            # a card's unknown key (a misspelt env) is often why an override or a placement does not fit it
            notes = ["(note) %s: %s" % (src, w) for src, card in sorted(cards.items()) for w in card["warnings"]]
            raise AnsibleActionFail("\n".join([to_text(exc)] + notes))
        # each GPU instance runs an image built for its host's vendor (the card's, else launchcard_vendor_images)
        try:
            apply_vendor_images(the_plan, dict((name, {
                "vendor": inputs[name]["vendor"],
                "vendor_images": inputs[name]["vendor_images"],
                "image_vendors": inputs[name]["image_vendors"],
            }) for name in the_plan["hosts"]))
        except VendorError as exc:
            raise AnsibleActionFail(to_text(exc))
        return the_plan
