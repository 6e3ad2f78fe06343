#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: resolve_images
short_description: Resolve each distinct image of a plan to its manifest digest, once, on the controller
version_added: 1.0.0
description:
  - Runs on the controller (an action plugin). For each distinct image of O(plan) (or O(images)) that names no
    digest, asks the registry for the manifest digest of its tag (C(HEAD /v2/NAME/manifests/TAG), OCI index and
    Docker manifest list media types first, so a multi-architecture image resolves to its index) and returns
    C(NAME@sha256:...). An image that already names a digest is used as written and costs no request.
  - Answers a registry's C(401) Bearer challenge with a token from its realm, sending O(credentials) for that
    registry as basic auth.
  - Credentials go only where they were configured - a registry's to that registry and its token realm, a mirror
    the entry of its own host only (podman; docker sends a mirror none), never over plain HTTP (an C(insecure)
    mirror, an C(http://) realm) to a host that O(credentials_plain_http) does not list (the run stops, naming
    C(launchcard_registry_credentials_plain_http)), never after a redirect.
  - With O(sizes), also reads each image's manifest by its digest (C(GET /v2/NAME/manifests/DIGEST); an index is
    followed to its O(platform) manifest) and returns its compressed size, the C(size) of its config and layers
    (OCI image-spec manifest.md), in RV(image_sizes). Docker Hub counts up to two manifest C(GET)s as one pull
    against its rate limit (a C(HEAD) is not counted). A size the registry does not give is left out, with a
    warning; the digests are unaffected.
  - Asks where and in the order the hosts' engine pulls (O(runtime)) - each mirror of O(mirrors) in order, then the
    registry itself, the next one when one does not give the image (unreachable, no such tag, refused
    credentials), as podman (containers/image) and dockerd do; RV(image_sources) and a warning say which answered.
    A mirror's path goes where the runtime puts it - podman after C(/v2/) (C(harbor.corp/hubproxy) asks
    C(https://harbor.corp/v2/hubproxy/REPO/manifests/TAG)), docker before it
    (C(https://harbor.corp/hubproxy/v2/REPO/manifests/TAG)).
  - A C(200) answer that is not a manifest - a Content-Type that is not one of the manifest media types asked for
    (a registry front's HTML page), a body that is not a JSON manifest of schemaVersion 2 with the fields of its
    type, or one whose sha256 is not its C(Docker-Content-Digest) - is refused, naming the image and the URL; a
    digest is never taken from it.
  - With O(runtime=docker), a Docker Hub mirror that asks for credentials is refused - dockerd sends a mirror no
    credentials, so the hosts would fall back to Docker Hub.
  - With O(verify), checks that each kept digest is still in the registry (C(GET /v2/NAME/manifests/DIGEST) from
    the same sources); one that is gone stops the run when O(pullers) names a host that must pull it, and is a
    warning otherwise.
  - Errors name the image and the cause (no such image or tag, refused credentials, unreachable registry), and each
    source asked.
  - C(playbooks/deploy.yml) calls it once per run (C(run_once)) before preflight, whose C(image_disk) check reads the
    sizes; every host then pulls and runs exactly the digests it returns.
options:
  plan:
    description: The plan (C(launchcard_plan)); every instance's C(image) is resolved.
    type: dict
  images:
    description: Image references to resolve, instead of O(plan).
    type: list
    elements: str
  sizes:
    description: Also read each image's compressed size from its manifest (RV(image_sizes)).
    type: bool
    default: false
  platform:
    description:
      - C(os/architecture[/variant]) of the manifest whose size an index (multi-architecture image) stands for. The
        engines' CUDA and ROCm images are C(linux/amd64) first; set C(linux/arm64) for Grace hosts.
    type: str
    default: linux/amd64
  mirrors:
    description:
      - >-
        Registry (as in the reference, C(docker.io) for Docker Hub) to the URL of a mirror serving the same names,
        for example C({"docker.io": "http://10.0.0.5:5000"}), or to a list of URLs or C({location, insecure}) as
        C(launchcard_registry_mirrors) gives them (C(location) is C(HOST[:PORT][/PATH]); C(insecure) means plain
        HTTP), asked in order before the registry itself, which is reached at C(https://REGISTRY).
    type: dict
    default: {}
  runtime:
    description:
      - The hosts' runtime (C(launchcard_runtime)), whose container engine's way of asking registries is followed
        (where a mirror's path goes, which credentials a mirror gets) - podman's for C(podman), docker's otherwise
        (C(native) pulls no image). C(docker) mirrors Docker Hub only.
    type: str
    choices: [docker, podman, native]
    default: docker
  verify:
    description:
      - Image to a pinned C(name@sha256:...) that must still be in the registry (the digests a deploy keeps for a
        moved tag). O(pin) computes it.
    type: dict
    default: {}
  pullers:
    description:
      - Image to the hosts that must pull it; a digest of O(verify) that is gone stops the run when its image has
        any. O(pin) computes it.
    type: dict
    default: {}
  pin:
    description:
      - Image to the pinned reference an earlier call resolved (its RV(image_refs)), to pin the fleet to after
        preflight (C(playbooks/tasks/pin-images.yml)); asks the registry for no tag.
      - With O(hold_recorded), an image whose tag moved keeps the digest the records of O(pin_hosts) agree on
        (C(runtime.image_refs) of C(/var/lib/launchcard/state.json), read by each host's
        M(launchcard.inference.preflight) call, registered as C(preflight_result)); each kept digest is checked as
        O(verify) checks it, stopping the run when a host that must pull it (one whose record or store lacks it, for
        the play's C(launchcard_plan)) would find it gone. RV(image_refs) is the result, RV(drift) the moved tags;
        the moved tags are preflight's report, not warned about again here.
    type: dict
  pin_hosts:
    description: The hosts whose preflight results O(pin) reads (C(ansible_play_hosts)).
    type: list
    elements: str
    default: []
  hold_recorded:
    description: With O(pin), hold a moved tag at the recorded digest (a deploy); C(false) follows the registry
      (C(playbooks/upgrade.yml)).
    type: bool
    default: true
  resolved:
    description:
      - Images already resolved, C({image_refs - {image - ref}, image_sizes - {image - bytes}}) (a plan file's
        C(images), written by C(playbooks/plan.yml)) - those of O(images) are taken as written, the registry is
        not asked for them, so every job applying one plan file pins the same digests.
    type: dict
    default: {}
  qualified:
    description:
      - Return fully qualified names (C(docker.io/lmsysorg/sglang@sha256:...)). podman refuses a short name
        without a TTY to ask which registry is meant; docker reads both alike.
    type: bool
    default: true
  credentials:
    description:
      - Registry, or a mirror's C(HOST[:PORT]), to C({username, password}) (C(launchcard_registry_credentials)).
        Never returned or logged. Ignored with O(runtime=native).
    type: dict
    default: {}
  credentials_plain_http:
    description:
      - The hosts (C(HOST[:PORT])) that may be sent O(credentials) over plain HTTP
        (C(launchcard_registry_credentials_plain_http)); none by default.
    type: list
    elements: str
    default: []
  hold:
    description:
      - Image to the pinned reference (C(name@sha256:...)) the fleet runs now, as the hosts recorded it
        (C(runtime.image_refs) of C(/var/lib/launchcard/state.json), read by M(launchcard.inference.preflight)'s
        O(launchcard.inference.preflight#module:record)); O(pin) joins the hosts' records itself.
      - An image whose tag now resolves to another digest keeps the held one and is reported (a warning, and
        RV(drift)); a deploy never moves a running fleet to a moved tag, C(playbooks/upgrade.yml) passes no
        O(hold) and follows it. An image the card names by digest is never held.
    type: dict
    default: {}
  timeout:
    description: Seconds to wait for one registry request.
    type: float
    default: 30
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.attributes.controller
  - launchcard.inference.attributes.action
  - launchcard.inference.attributes.read_only
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.flow
"""

EXAMPLES = r"""
- name: Resolve every image of the plan once
  launchcard.inference.resolve_images:
    plan: "{{ launchcard_plan }}"
    credentials:
      docker.io: {username: "{{ registry_user }}", password: "{{ registry_password }}"}
  run_once: true
  register: resolved
"""

RETURN = r"""
image_refs:
  description: Image as the card wrote it to C(NAME@sha256:...) (fully qualified unless O(qualified=false)).
  returned: always
  type: dict
  sample: {"vllm/vllm-openai:v0.11.0": "docker.io/vllm/vllm-openai@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
plan:
  description: With O(plan), a copy of it with C(image_refs) and each instance's C(image_ref).
  returned: when plan is given
  type: dict
drift:
  description: The images whose tag moved away from the digest of O(hold), each kept at that digest.
  returned: always
  type: list
  elements: dict
  contains:
    image:
      description: The image as the card wrote it.
      type: str
    running:
      description: The digest the fleet runs (and keeps).
      type: str
    registry:
      description: The digest the tag resolves to now.
      type: str
  sample: [{"image": "lmsysorg/sglang:latest", "running": "sha256:0a1b...", "registry": "sha256:9f8e..."}]
image_sizes:
  description:
    - With O(sizes), image as the card wrote it to the compressed bytes of the image its reference in RV(image_refs)
      names (config and layers; for an index, its O(platform) manifest's). An image whose size the registry did
      not give is missing.
  returned: always
  type: dict
  sample: {"vllm/vllm-openai:v0.11.0": 9876543210}
image_sources:
  description: Image (C(NAME:TAG)) to the source that gave its digest (C(mirror LOCATION) or C(registry REGISTRY)).
  returned: always
  type: dict
  sample: {"vllm/vllm-openai:v0.11.0": "mirror harbor.corp/hubproxy"}
registry_requests:
  description: HTTP requests made (tokens included).
  returned: always
  type: int
"""
