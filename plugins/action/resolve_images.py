# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin for launchcard.inference.resolve_images; documented in plugins/modules/resolve_images.py."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.launchcard.inference.plugins.plugin_utils._images import (
    LAUNCHCARD_RUNTIMES,
    ImageError,
    distinct_images,
    drift_warning,
    gone_error,
    hold,
    held_refs,
    measure_all,
    parse_reference,
    pin_plan,
    pullers,
    registry_client,
    resolve_all,
)
from ansible_collections.launchcard.inference.plugins.plugin_utils._play_vars import results, variable
from ansible_collections.launchcard.inference.plugins.plugin_utils._registry_api import DEFAULT_PLATFORM, RegistryClient


class ActionModule(ActionBase):
    """Controller-side: one registry resolution per distinct image (no remote execution)."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            images=dict(type="list", elements="str"),
            plan=dict(type="dict"),
            sizes=dict(type="bool", default=False),
            platform=dict(type="str", default=DEFAULT_PLATFORM),
            mirrors=dict(type="dict", default={}),
            credentials=dict(type="dict", default={}, no_log=True),
            credentials_plain_http=dict(type="list", elements="str", default=[]),
            timeout=dict(type="float", default=30.0),
            qualified=dict(type="bool", default=True),
            hold=dict(type="dict", default={}),
            runtime=dict(type="str", default="docker", choices=list(LAUNCHCARD_RUNTIMES)),
            verify=dict(type="dict", default={}),
            pullers=dict(type="dict", default={}),
            resolved=dict(type="dict", default={}),
            pin=dict(type="dict"),
            pin_hosts=dict(type="list", elements="str", default=[]),
            hold_recorded=dict(type="bool", default=True),
        ), mutually_exclusive=[("images", "plan", "pin"), ("pin", "verify"), ("pin", "hold")],
            required_one_of=[("images", "plan", "pin")])
        pinned = None
        if args["pin"] is not None:
            pinned, args["verify"], args["pullers"] = self._pin(args, task_vars or {})
            images = []
        else:
            images = args["images"] if args["images"] is not None else distinct_images(args["plan"])
        try:
            # a native fleet pulls no image: its credentials go nowhere
            client = RegistryClient(mirrors=args["mirrors"], timeout=args["timeout"], runtime=registry_client(args["runtime"]),
                                    credentials=args["credentials"] if args["runtime"] != "native" else {},
                                    plain_http=args["credentials_plain_http"])
            # a plan file's digests (playbooks/plan.yml): every slice of one plan pins the same, whatever a tag does
            known = args["resolved"].get("image_refs") or {}
            asked = [image for image in images if image not in known]
            if asked or args["verify"]:
                client.check_mirrors()
            refs = resolve_all(asked, client.resolve, qualified=args["qualified"])
            refs.update((image, known[image]) for image in images if image in known)
            gone, warnings = [], []
            for image, ref in sorted(args["verify"].items()):
                # a digest the fleet keeps (a moved tag) that a host must pull: the registry must still give it
                present, where = client.exists(parse_reference(image), str(ref).rsplit("@", 1)[-1])
                if not present:
                    gone.append(gone_error(image, ref, where, args["pullers"].get(image) or []))
            stop = [g for g in gone if g[1]]
            if stop:
                raise ImageError("\n".join(message for message, dummy in stop))
            warnings += [message for message, dummy in gone]
        except ImageError as exc:
            raise AnsibleActionFail(to_text(exc))
        refs, drift = hold(refs, args["hold"])
        warnings += [drift_warning(moved) for moved in drift]
        # podman and docker try the next source when one does not give the image: say which answered
        warnings += ["image %s: resolved through the %s after %s" % (image, client.answered[image], "; ".join(skipped))
                     for image, skipped in sorted(client.skipped.items()) if skipped]
        sizes = {}
        if args["sizes"]:
            # by digest: the size of exactly what the hosts pull
            known_sizes = args["resolved"].get("image_sizes") or {}
            sizes, unknown = measure_all(dict((i, r) for i, r in refs.items() if i not in known_sizes or r != known.get(i)),
                                         lambda ref, digest: client.image_size(ref, digest, args["platform"]))
            sizes.update((i, known_sizes[i]) for i in refs if i not in sizes and i in known_sizes)
            warnings += unknown
        if warnings:
            result.setdefault("warnings", []).extend(warnings)
        result.update(changed=False, image_refs=refs, image_sizes=sizes, drift=drift, registry_requests=client.requests,
                      image_sources=dict(client.answered))
        if args["plan"] is not None:
            result["plan"] = pin_plan(args["plan"], refs)
        if pinned is not None:
            # the moved tags' warnings are preflight's report (roles/preflight), not repeated here
            result.update(image_refs=pinned[0], drift=pinned[1])
        return result

    def _pin(self, args, task_vars):
        """O(pin) held where a tag moved (the hosts' records agree on another digest), the held digests to verify,
        and the hosts that must pull each image (those whose store lacks the digest they recorded)."""
        hostvars = task_vars.get("hostvars") or {}
        found = dict((h, r.get("preflight_result") or {})
                     for h, r in results(hostvars, args["pin_hosts"], ["preflight_result"]).items())
        held = held_refs(dict((h, r.get("recorded_image_refs") or {}) for h, r in found.items()))[0] if args["hold_recorded"] else {}
        refs, drift = hold(args["pin"], held)
        verify = dict((m["image"], refs[m["image"]]) for m in drift)
        plan = variable(self._templar, task_vars, "launchcard_plan") or {}
        return (refs, drift), verify, (pullers(plan, found) if verify else {})
