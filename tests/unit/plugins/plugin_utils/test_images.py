# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Image digest resolution: the reference grammar, one request per distinct image, a registry's
Bearer token flow, and errors naming image and cause. The registry is a small HTTP server on
127.0.0.1 speaking the distribution API's manifest and token endpoints (test code)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as im
from ansible_collections.launchcard.inference.plugins.plugin_utils import _registry_api as rc

D1 = "sha256:" + "a" * 64


@pytest.mark.parametrize("ref, want", [
    ("vllm/vllm-openai:nightly", ("docker.io", "vllm/vllm-openai", "nightly", None, "vllm/vllm-openai")),
    ("ubuntu", ("docker.io", "library/ubuntu", "latest", None, "ubuntu")),
    ("lmsysorg/sglang", ("docker.io", "lmsysorg/sglang", "latest", None, "lmsysorg/sglang")),
    ("localhost:5000/a/b:1.0", ("localhost:5000", "a/b", "1.0", None, "localhost:5000/a/b")),
    ("ghcr.io/o/x@" + D1, ("ghcr.io", "o/x", None, D1, "ghcr.io/o/x")),
    ("nvcr.io/nvidia/x:25.01-py3@" + D1, ("nvcr.io", "nvidia/x", "25.01-py3", D1, "nvcr.io/nvidia/x")),
])
def test_references_parse_as_docker_reads_them(ref, want):
    p = im.parse_reference(ref)
    assert (p["registry"], p["repository"], p["tag"], p["digest"], p["name"]) == want


@pytest.mark.parametrize("ref", ["", "UPPER/case:1", "x@sha256:abc", "a/b:bad tag", " a/b"])
def test_bad_references_are_refused_naming_the_image(ref):
    with pytest.raises(im.ImageError):
        im.parse_reference(ref)


def test_one_resolution_per_distinct_image_and_digests_used_as_written():
    plan = {"hosts": {
        "a": {"instances": [{"image": "lmsysorg/sglang:latest"}, {"image": "vllm/vllm-openai:nightly"}]},
        "b": {"instances": [{"image": "lmsysorg/sglang:latest"}, {"image": "ghcr.io/o/x@" + D1}]},
        "r": {"instances": [{"image": None}]}}}
    asked = []

    def resolve(ref):
        asked.append(ref["name"])
        return "sha256:" + hashlib.sha256(ref["name"].encode()).hexdigest()

    refs = im.resolve_all(im.distinct_images(plan), resolve)
    assert sorted(asked) == ["lmsysorg/sglang", "vllm/vllm-openai"]
    assert refs["ghcr.io/o/x@" + D1] == "ghcr.io/o/x@" + D1
    assert refs["lmsysorg/sglang:latest"] == "lmsysorg/sglang@sha256:" + hashlib.sha256(b"lmsysorg/sglang").hexdigest()
    pinned = im.pin_plan(plan, refs)
    assert [i["image_ref"] for i in pinned["hosts"]["b"]["instances"][:2]] == [
        refs["lmsysorg/sglang:latest"], "ghcr.io/o/x@" + D1]
    assert "image_ref" not in plan["hosts"]["a"]["instances"][0]  # the input is not changed


def test_qualified_refs_name_the_registry_and_keep_a_written_digest():
    digest = "sha256:" + "c" * 64
    refs = im.resolve_all(["ubuntu:24.04", "lmsysorg/sglang:latest", "ghcr.io/o/x@" + D1, "vllm/vllm-openai@" + D1],
                          lambda ref: digest, qualified=True)
    assert refs == {
        "ubuntu:24.04": "docker.io/library/ubuntu@" + digest,
        "lmsysorg/sglang:latest": "docker.io/lmsysorg/sglang@" + digest,
        "ghcr.io/o/x@" + D1: "ghcr.io/o/x@" + D1,
        "vllm/vllm-openai@" + D1: "docker.io/vllm/vllm-openai@" + D1,
    }


def test_a_registry_answer_that_is_not_a_digest_is_refused():
    with pytest.raises(im.ImageError, match="a/b:1"):
        im.resolve_all(["a/b:1"], lambda ref: "md5:xyz")


class _Registry(BaseHTTPRequestHandler):
    """Manifests need a Bearer token from /token, which needs basic auth user:secret."""

    manifests = {}  # (repo, tag) -> bytes
    no_digest_header = set()
    log = []

    def log_message(self, *args):
        pass

    def _reply(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):  # noqa: N802
        self.do_GET()

    def do_GET(self):  # noqa: N802
        url = urlsplit(self.path)
        self.log.append((self.command, url.path))
        host = "http://%s:%d" % self.server.server_address
        if url.path == "/token":
            ok = self.headers.get("Authorization") == "Basic " + base64.b64encode(b"user:secret").decode()
            scope = parse_qs(url.query).get("scope", [""])[0]
            return self._reply(200 if ok else 401, json.dumps({"token": "tok:" + scope}).encode() if ok else b"")
        m = re.match(r"^/v2/(.+)/manifests/([^/]+)$", url.path)
        if not m:
            return self._reply(404)
        scope = "repository:%s:pull" % m.group(1)
        if self.headers.get("Authorization") != "Bearer tok:" + scope:
            return self._reply(401, headers=[("WWW-Authenticate", 'Bearer realm="%s/token",service="reg",scope="%s"'
                                              % (host, scope))])
        body = self.manifests.get((m.group(1), m.group(2)))
        if body is None:
            return self._reply(404)
        doc = json.loads(body)
        # the distribution API's Content-Type is the manifest's mediaType (schema 1: its signed type)
        headers = [("Content-Type", doc.get("mediaType") or "application/vnd.docker.distribution.manifest.v1+prettyjws")]
        if m.group(2) not in self.no_digest_header:
            headers.append(("Docker-Content-Digest", "sha256:" + hashlib.sha256(body).hexdigest()))
        return self._reply(200, body, headers)


UBUNTU = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                     "config": {"digest": D1, "size": 1}, "layers": [{"digest": D1, "size": 1}]}).encode()
NIGHTLY = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                      "config": {"digest": D1, "size": 2}, "layers": [{"digest": D1, "size": 2}]}).encode()
# the hosts' engine would then ask the registry itself (registry-1.docker.io), which a test cannot reach
OFFLINE = {"docker.io": None}


@pytest.fixture
def registry():
    _Registry.manifests = {("library/ubuntu", "24.04"): UBUNTU, ("vllm/vllm-openai", "nightly"): NIGHTLY}
    _Registry.no_digest_header = {"nightly"}
    _Registry.log = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def mirror_client(registry, password="secret"):
    """A podman client whose only source is the plain-HTTP mirror ``registry``, with credentials for its host,
    which launchcard_registry_credentials_plain_http lets go over plain HTTP (a loopback test server)."""
    host = registry[len("http://"):]
    return rc.RegistryClient(upstream=OFFLINE, mirrors={"docker.io": registry}, plain_http=[host],
                             credentials={host: {"username": "user", "password": password}})


def test_the_registry_digest_through_a_bearer_token(registry):
    client = mirror_client(registry)
    refs = im.resolve_all(["ubuntu:24.04", "vllm/vllm-openai:nightly"], client.resolve)
    assert refs["ubuntu:24.04"] == "ubuntu@sha256:" + hashlib.sha256(UBUNTU).hexdigest()
    # no Docker-Content-Digest header: the manifest's own sha256
    assert refs["vllm/vllm-openai:nightly"] == "vllm/vllm-openai@sha256:" + hashlib.sha256(NIGHTLY).hexdigest()
    heads = [p for m, p in _Registry.log if m == "HEAD" and "/manifests/" in p]
    assert sorted(set(heads)) == ["/v2/library/ubuntu/manifests/24.04", "/v2/vllm/vllm-openai/manifests/nightly"]


def test_errors_name_the_image_and_the_cause(registry):
    with pytest.raises(im.ImageError, match=r"ubuntu:99\.99: no such image or tag in mirror 127\.0\.0\.1:\d+ \(HTTP 404"):
        im.resolve_all(["ubuntu:99.99"], mirror_client(registry).resolve)
    with pytest.raises(im.ImageError, match=r"ubuntu:24\.04: the token service of mirror 127\.0\.0\.1:\d+ refused"):
        im.resolve_all(["ubuntu:24.04"], mirror_client(registry, password="x").resolve)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(im.ImageError, match=r"ubuntu:24\.04: cannot reach the mirror 127\.0\.0\.1:%d at http://127\.0\.0\.1:%d/v2/" % (port, port)):
        im.resolve_all(["ubuntu:24.04"], rc.RegistryClient(upstream=OFFLINE, mirrors={"docker.io": "http://127.0.0.1:%d" % port}).resolve)


D2 = "sha256:" + "b" * 64
D3 = "sha256:" + "c" * 64


def test_the_hosts_records_hold_an_image_only_where_they_agree():
    recorded = {"h1": {"lmsysorg/sglang": "docker.io/lmsysorg/sglang@" + D1, "vllm/vllm-openai:v1": "docker.io/vllm/vllm-openai@" + D2},
                "h2": {"lmsysorg/sglang": "docker.io/lmsysorg/sglang@" + D1, "vllm/vllm-openai:v1": "docker.io/vllm/vllm-openai@" + D3},
                "h3": {}, "h4": None}
    held, split = im.held_refs(recorded)
    assert held == {"lmsysorg/sglang": "docker.io/lmsysorg/sglang@" + D1}
    assert split == {"vllm/vllm-openai:v1": sorted(["docker.io/vllm/vllm-openai@" + D2, "docker.io/vllm/vllm-openai@" + D3])}
    assert im.held_refs({}) == ({}, {})


def test_held_images_joins_the_play_hosts_preflight_reads():
    """``held_images`` (plugins/plugin_utils/_preflight_steps.py), as the preflight_fleet action calls it on the hosts'
    preflight results."""
    from ansible_collections.launchcard.inference.plugins.plugin_utils._preflight_steps import held_images as held_of

    def held_images(hostvars, hosts, result_var="preflight_result"):  # the results the action reads from hostvars
        return held_of(dict((h, hostvars[h].get(result_var)) for h in hosts if h in hostvars), hosts)
    sglang, vllm = "lmsysorg/sglang", "vllm/vllm-openai:v1"

    def read(refs):  # a host's registered preflight result
        return {"changed": False, "recorded_image_refs": refs}

    hostvars = {
        "agree-1": {"preflight_result": read({sglang: "docker.io/lmsysorg/sglang@" + D1,
                                              vllm: "docker.io/vllm/vllm-openai@" + D2})},
        "agree-2": {"preflight_result": read({sglang: "docker.io/lmsysorg/sglang@" + D1,
                                              vllm: "docker.io/vllm/vllm-openai@" + D3})},
        "no-record": {"preflight_result": read({})},
        "no-result": {},                                   # its preflight call never ran
        "skipped": {"preflight_result": {"skipped": True}},
        "null": {"preflight_result": None},
        "outside": {"preflight_result": read({sglang: "docker.io/lmsysorg/sglang@" + D3})},  # not a play host
        "other-var": {"preflight_result": read({}),
                      "second_read": read({sglang: "docker.io/lmsysorg/sglang@" + D2})},
    }
    play = ["agree-1", "agree-2", "no-record", "no-result", "skipped", "null", "other-var", "gone"]
    # sglang: every host that recorded it agrees; vllm: two digests, so held by none
    assert held_images(hostvars, play) == {sglang: "docker.io/lmsysorg/sglang@" + D1}
    # only the hosts named count: one more host that disagrees splits sglang too
    assert held_images(hostvars, play + ["outside"]) == {}
    # a host that alone recorded an image holds it; hosts without a record change nothing
    assert held_images(hostvars, ["agree-2", "no-record", "no-result"]) == {
        sglang: "docker.io/lmsysorg/sglang@" + D1, vllm: "docker.io/vllm/vllm-openai@" + D3}
    assert held_images(hostvars, ["no-record", "no-result", "skipped", "null", "gone"]) == {}
    assert held_images(hostvars, []) == {}
    # result_var names the registered result read instead of preflight_result
    assert held_images(hostvars, ["other-var"], result_var="second_read") == {sglang: "docker.io/lmsysorg/sglang@" + D2}
    assert held_images(hostvars, ["agree-1", "other-var"], result_var="second_read") == {
        sglang: "docker.io/lmsysorg/sglang@" + D2}
    assert held_images(hostvars, ["other-var"]) == {}


def test_a_moved_tag_keeps_the_digest_the_fleet_runs_and_is_reported():
    refs = {"lmsysorg/sglang": "docker.io/lmsysorg/sglang@" + D2,          # the tag moved: D1 -> D2
            "vllm/vllm-openai:v1": "docker.io/vllm/vllm-openai@" + D3,     # unchanged
            "new/image:1": "docker.io/new/image@" + D1,                    # not run yet: nothing to hold
            "pinned/x@" + D1: "docker.io/pinned/x@" + D1}                  # the card names the digest
    held = {"lmsysorg/sglang": "docker.io/lmsysorg/sglang@" + D1, "vllm/vllm-openai:v1": "docker.io/vllm/vllm-openai@" + D3,
            "pinned/x@" + D1: "docker.io/pinned/x@" + D2}
    out, drift = im.hold(refs, held)
    assert out == dict(refs, **{"lmsysorg/sglang": "docker.io/lmsysorg/sglang@" + D1})
    assert drift == [{"image": "lmsysorg/sglang", "running": D1, "registry": D2}]
    assert im.hold(refs, {}) == (refs, [])


# --- docker_daemon_config: launchcard_registry_mirrors into daemon.json ---

NVIDIA_RUNTIME = {"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}}


def test_daemon_config_names_a_plain_http_hub_mirror_in_both_keys_and_keeps_the_rest():
    mirrors = {"docker.io": [{"location": "10.0.0.5:5000", "insecure": True}]}
    config = im.docker_daemon_config(json.dumps(NVIDIA_RUNTIME), mirrors)
    wanted = {"registry-mirrors": ["http://10.0.0.5:5000"], "insecure-registries": ["10.0.0.5:5000"]}
    assert config == dict(NVIDIA_RUNTIME, **wanted)


def test_daemon_config_is_unchanged_when_the_mirrors_are_there_already():
    mirrors = {"docker.io": ["https://mirror.example.com", {"location": "10.0.0.5:5000/hub", "insecure": "yes"}]}
    once = im.docker_daemon_config("", mirrors)
    assert once["registry-mirrors"] == ["https://mirror.example.com", "http://10.0.0.5:5000/hub"]
    assert once["insecure-registries"] == ["10.0.0.5:5000"]
    assert im.docker_daemon_config(json.dumps(once), mirrors) == once
    assert im.docker_daemon_config(once, mirrors) == once


def test_daemon_config_puts_its_mirrors_first_and_keeps_the_operators():
    current = {"registry-mirrors": ["https://theirs.example.com"]}
    config = im.docker_daemon_config(current, {"docker.io": "https://ours.example.com"})
    assert config["registry-mirrors"] == ["https://ours.example.com", "https://theirs.example.com"]
    assert "insecure-registries" not in config
    assert current == {"registry-mirrors": ["https://theirs.example.com"]}  # the input is not changed


def test_daemon_config_without_mirrors_or_file_is_empty():
    assert im.docker_daemon_config(None, {}) == {}
    assert im.docker_daemon_config("  \n", None) == {}


@pytest.mark.parametrize("current, mirrors, message", [
    ("", {"quay.io": ["10.0.0.5:5000"]}, "mirrors.quay.io: docker mirrors Docker Hub only"),
    ("", {"docker.io": [{"location": "10.0.0.5:5000\nx", "insecure": True}]}, "mirrors.docker.io[0].location"),
    ("", {"docker.io": [7]}, "mirrors.docker.io[0] must be a URL"),
    ("{not json", {"docker.io": "https://m.example.com"}, "daemon.json is not valid JSON"),
    ("[1]", {"docker.io": "https://m.example.com"}, "must hold a JSON object"),
    ('{"registry-mirrors": "https://x"}', {"docker.io": "https://m.example.com"}, "registry-mirrors must be a list"),
])
def test_daemon_config_refuses_what_docker_cannot_take_naming_it(current, mirrors, message):
    with pytest.raises(im.ImageError, match=re.escape(message)):
        im.docker_daemon_config(current, mirrors)


def _put(repo, doc, tag=None):
    """Serve ``doc`` in ``repo`` by its digest (and ``tag``); returns the digest."""
    body = json.dumps(doc).encode()
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    _Registry.manifests[(repo, digest)] = body
    if tag:
        _Registry.manifests[(repo, tag)] = body
    return digest


def _image_manifest(*layers, config=300):
    return {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": D1, "size": config},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": D1, "size": n}
                       for n in layers]}


def test_an_images_size_is_its_config_and_layers_as_its_manifest_lists_them(registry):
    repo = "lmsysorg/sglang"
    amd = _put(repo, _image_manifest(1000, 2000))
    arm = _put(repo, _image_manifest(7000))
    _put(repo, {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": arm, "size": 1,
         "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": amd, "size": 1,
         "platform": {"os": "linux", "architecture": "amd64"}}]}, tag="latest")
    _put("vllm/vllm-openai", dict(_image_manifest(50, 60), mediaType="application/vnd.docker.distribution.manifest.v2+json"),
         tag="v1")
    client = mirror_client(registry)
    refs = im.resolve_all(["lmsysorg/sglang", "vllm/vllm-openai:v1"], client.resolve, qualified=True)
    sizes, warnings = im.measure_all(refs, client.image_size)
    # the index is followed to its linux/amd64 manifest: config 300 + layers 1000 + 2000
    assert sizes == {"lmsysorg/sglang": 3300, "vllm/vllm-openai:v1": 410} and warnings == []
    # by digest: what the hosts pull; one token per repository, kept for its next requests
    gets = [p for m, p in _Registry.log if m == "GET" and "/manifests/" in p]
    assert "/v2/lmsysorg/sglang/manifests/" + refs["lmsysorg/sglang"].rsplit("@", 1)[1] in gets
    assert "/v2/lmsysorg/sglang/manifests/" + amd in gets and "/v2/lmsysorg/sglang/manifests/" + arm not in gets
    assert len([p for m, p in _Registry.log if p == "/token"]) == 2
    index = refs["lmsysorg/sglang"].rsplit("@", 1)[1]
    assert client.image_size(im.parse_reference("lmsysorg/sglang"), index, "linux/arm64/v8") == 7300
    with pytest.raises(im.ImageError, match=r"lmsysorg/sglang@sha256:\w+: its index lists no linux/s390x manifest"):
        client.image_size(im.parse_reference("lmsysorg/sglang"), index, "linux/s390x")


def test_an_image_whose_size_the_registry_does_not_give_is_left_out_with_a_warning(registry):
    client = mirror_client(registry)
    schema1 = _put("library/ubuntu", {"schemaVersion": 1, "fsLayers": [{"blobSum": D1}]})
    sizes, warnings = im.measure_all({"ubuntu:24.04": "docker.io/library/ubuntu@" + schema1,
                                      "ubuntu:gone": "docker.io/library/ubuntu@" + D2}, client.image_size)
    assert sizes == {}
    assert warnings == [
        "image ubuntu@%s: %s/v2/library/ubuntu/manifests/%s answered 200 with Content-Type "
        "'application/vnd.docker.distribution.manifest.v1+prettyjws', not a manifest media type (%s): is this the "
        "registry API? A mirror with a path must be one the runtime reaches at that URL; preflight counts the flat "
        "allowance per image for it" % (schema1, registry, schema1, ", ".join(rc.MANIFEST_TYPES)),
        "image ubuntu@%s: no such image or tag in mirror %s (HTTP 404 at %s/v2/library/ubuntu/manifests/%s); preflight "
        "counts the flat allowance per image for it" % (D2, registry[len("http://"):], registry, D2)]


@pytest.mark.parametrize("doc, message", [
    ({"layers": [{"size": 10}], "config": {"size": -1}}, "no valid size"),
    ({"layers": [{"size": "10"}]}, "no valid size"),
    ({"layers": []}, "lists no layers"),
])
def test_manifest_size_refuses_what_is_not_a_size(doc, message):
    with pytest.raises(im.ImageError, match=message):
        rc.manifest_size(doc, "x")


def test_hold_pins_and_reports_a_moved_tag():
    from ansible_collections.launchcard.inference.plugins.plugin_utils._preflight_steps import drift_warnings

    resolved = {"a/x:1": "docker.io/a/x@" + D1, "b/y:1": "docker.io/b/y@" + D2}
    refs, drift = im.hold(resolved, {"a/x:1": "docker.io/a/x@" + D3})
    assert refs == {"a/x:1": "docker.io/a/x@" + D3, "b/y:1": "docker.io/b/y@" + D2}
    assert drift == [{"image": "a/x:1", "running": D3, "registry": D1}]
    assert drift_warnings(resolved, {"a/x:1": "docker.io/a/x@" + D3}) == [
        "image a/x:1: the registry now resolves it to %s; the fleet runs %s and keeps it (a deploy "
        "never follows a moved tag; playbooks/upgrade.yml does)" % (D1, D3)]
    assert im.hold(resolved, {}) == (resolved, []) and drift_warnings(resolved, {}) == []


def test_the_recorded_image_refs_filter_reads_a_record_or_its_slurp():
    from ansible_collections.launchcard.inference.plugins.filter.plan import recorded_image_refs

    text = json.dumps({"version": 1, "card": {}, "instances": [], "units": {}, "previous": None, "runtime": {
        "kind": "podman", "image_refs": {"a/x:1": "docker.io/a/x@" + D1, "b/y:1": "docker.io/b/y@" + D2}}})
    slurp = {"content": base64.b64encode(text.encode()).decode(), "encoding": "base64", "changed": False}
    assert recorded_image_refs(text) == recorded_image_refs(slurp) == {"a/x:1": "docker.io/a/x@" + D1,
                                                                       "b/y:1": "docker.io/b/y@" + D2}
    assert recorded_image_refs(slurp, ["b/y:1", "c/z:1"]) == {"b/y:1": "docker.io/b/y@" + D2}
    # no record: a failed or skipped slurp, none at all, or one that does not parse
    for nothing in ({"failed": True, "msg": "file not found"}, {"skipped": True, "changed": False}, None,
                    {"content": base64.b64encode(b"{not json").decode()}, {"content": "%%%"}):
        assert recorded_image_refs(nothing) == {} and recorded_image_refs(nothing, ["a/x:1"]) == {}


def test_podman_registries_conf_names_each_registrys_mirrors_in_order():
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as img

    text = img.podman_registries_conf({"docker.io": [{"location": "198.18.12.1:5000", "insecure": True},
                                                     "https://m.corp/hub/"], "quay.io": "http://q:5000"})
    body = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert body == ['[[registry]]', 'prefix = "docker.io"', 'location = "docker.io"',
                    '[[registry.mirror]]', 'location = "198.18.12.1:5000"', 'insecure = true',
                    '[[registry.mirror]]', 'location = "m.corp/hub"', 'insecure = false',
                    '[[registry]]', 'prefix = "quay.io"', 'location = "quay.io"',
                    '[[registry.mirror]]', 'location = "q:5000"', 'insecure = true']
    with pytest.raises(img.ImageError, match=r"launchcard_registry_mirrors.docker.io\[0\]"):
        img.podman_registries_conf({"docker.io": [{"location": "bad host"}]})


def test_the_registry_client_follows_the_fleets_runtime_in_one_place():
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as img

    assert [img.registry_client(r) for r in ("podman", "docker", "native", None)] == [
        "podman", "docker", "docker", "docker"]
    with pytest.raises(img.ImageError, match="launchcard_runtime must be one of docker, podman, native, found 'Podman'"):
        img.registry_client("Podman")


def test_pull_groups_by_registry_each_with_its_bound_of_hosts():
    refs = ["lmsysorg/sglang@sha256:" + "a" * 64, "registry.example.com/team/engine:1", "vllm/vllm-openai:v1"]
    assert im.pull_groups(refs, 4) == {
        "docker.io": {"images": [refs[0], refs[2]], "throttle": 4},
        "registry.example.com": {"images": [refs[1]], "throttle": 4}}
    # per registry; one not named has no bound
    assert {r: g["throttle"] for r, g in im.pull_groups(refs, {"registry.example.com": 8}).items()} == {
        "docker.io": 0, "registry.example.com": 8}
    assert im.pull_groups([], 3) == {} and im.pull_groups(refs[:1], None)["docker.io"]["throttle"] == 0
    for bad in (-1, "many", True, {"docker.io": -2}):
        with pytest.raises(im.ImageError, match="launchcard_image_pull_concurrency"):
            im.pull_groups(refs, bad)
