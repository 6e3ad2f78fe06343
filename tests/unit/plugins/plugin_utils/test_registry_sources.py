# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller asks registries where and as the hosts' engine does: public bug reports D, E, F and G(b) of
../shared/inputs/bug-reports.md as tests.

The registry is the real Debian ``docker-registry`` (distribution 2.8, ``make host-deps``) on a free loopback
port, filled over its own HTTP API; a Harbor-style front (a small loopback server that serves a proxy project
under ``/v2/hubproxy/...`` and its HTML UI for anything else) stands in for what cannot run here. Each server
is stopped by its own handle at the end of the test."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as im
from ansible_collections.launchcard.inference.plugins.plugin_utils import _registry_api as rc

REGISTRY_BIN = "/usr/bin/docker-registry"
needs_registry = pytest.mark.skipif(not os.path.exists(REGISTRY_BIN),
                                    reason="docker-registry is not installed (Debian package; make host-deps)")
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
# the hosts' engine would fall back to the registry itself (registry-1.docker.io): not reachable from a test
OFFLINE = {"docker.io": None}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Registry:
    """One real docker-registry on loopback (``auth``: htpasswd basic auth for ``(user, password)``)."""

    def __init__(self, tmp, auth=None):
        self.port, self.dir = free_port(), tempfile.mkdtemp(dir=str(tmp))
        self.auth = auth
        config = ("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"
                  "storage:\n  filesystem:\n    rootdirectory: %s/data\n  delete:\n    enabled: true\n"
                  "http:\n  addr: 127.0.0.1:%d\n" % (self.dir, self.port))
        if auth:
            import bcrypt  # the sandbox's own dependency (tests/sandbox/sandbox_fleet/registry.py)
            hashed = bcrypt.hashpw(auth[1].encode(), bcrypt.gensalt(rounds=4)).decode()
            with open(os.path.join(self.dir, "htpasswd"), "w") as f:
                f.write("%s:%s\n" % (auth[0], hashed))
            config += "auth:\n  htpasswd:\n    realm: test\n    path: %s/htpasswd\n" % self.dir
        with open(os.path.join(self.dir, "config.yml"), "w") as f:
            f.write(config)
        self.proc = subprocess.Popen([REGISTRY_BIN, "serve", os.path.join(self.dir, "config.yml")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _attempt in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if self.proc.poll() is not None:
                    raise AssertionError("docker-registry exited with %s" % self.proc.returncode)
                time.sleep(0.05)
        self.url = "http://127.0.0.1:%d" % self.port

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)

    def _call(self, method, path, body=None, headers=None):
        headers = dict(headers or {})
        if self.auth:
            headers["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % self.auth).encode()).decode()
        req = urllib.request.Request(path if path.startswith("http") else self.url + path, data=body,
                                     method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.headers, resp.read()

    def _blob(self, repo, data):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        headers, dummy = self._call("POST", "/v2/%s/blobs/uploads/" % repo)
        location = headers["Location"]
        location = location if location.startswith("http") else self.url + location
        self._call("PUT", location + ("&" if "?" in location else "?") + "digest=" + digest, data,
                   {"Content-Type": "application/octet-stream"})
        return {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest, "size": len(data)}

    def push(self, repo, tag, label):
        """An OCI image manifest (one layer, a config naming ``label``) under ``repo:tag``; returns its digest."""
        config = self._blob(repo, json.dumps({"architecture": "amd64", "os": "linux",
                                              "config": {"Labels": {"v": label}}}).encode())
        config["mediaType"] = "application/vnd.oci.image.config.v1+json"
        layer = self._blob(repo, b"layer of " + label.encode())
        body = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config,
                           "layers": [layer]}).encode()
        self._call("PUT", "/v2/%s/manifests/%s" % (repo, tag), body, {"Content-Type": OCI_MANIFEST})
        return "sha256:" + hashlib.sha256(body).hexdigest()

    def delete(self, repo, digest):
        self._call("DELETE", "/v2/%s/manifests/%s" % (repo, digest))


@pytest.fixture
def registries(tmp_path):
    started = []

    def start(auth=None):
        started.append(Registry(tmp_path, auth))
        return started[-1]
    yield start
    for reg in started:
        reg.stop()


HARBOR_UI = b"<!doctype html><html><head><title>Harbor</title></head><body><harbor-app></harbor-app></body></html>"


class _HarborFront(BaseHTTPRequestHandler):
    """A Harbor-style front: the proxy project ``hubproxy`` at ``/v2/hubproxy/<repo>/...`` (passed to the real
    registry's ``/v2/<repo>/...``), and ``200 text/html`` (its UI) for any other path, as moby/moby#47144 shows."""

    backend = None
    asked = []

    def log_message(self, *args):
        pass

    def do_HEAD(self):  # noqa: N802
        self.do_GET()

    def do_GET(self):  # noqa: N802
        self.asked.append(self.path)
        if self.path.startswith("/v2/hubproxy/"):
            req = urllib.request.Request(self.backend + "/v2/" + self.path[len("/v2/hubproxy/"):], method=self.command,
                                         headers={"Accept": self.headers.get("Accept", "")})
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    status, headers, body = resp.status, resp.headers, resp.read()
            except urllib.error.HTTPError as exc:
                status, headers, body = exc.code, exc.headers, exc.read()
            self.send_response(status)
            for key in ("Content-Type", "Docker-Content-Digest", "Content-Length"):
                if headers.get(key):
                    self.send_header(key, headers[key])
            self.end_headers()
            if self.command == "GET":
                self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(HARBOR_UI)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(HARBOR_UI)


@pytest.fixture
def harbor(registries):
    reg = registries()
    _HarborFront.backend, _HarborFront.asked = reg.url, []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _HarborFront)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield reg, "127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def client(mirrors, runtime="podman", credentials=None, plain_http=None):
    return rc.RegistryClient(mirrors=mirrors, credentials=credentials, runtime=runtime, upstream=OFFLINE, timeout=5,
                             plain_http=plain_http)


@needs_registry
def test_d_podman_resolves_a_mirror_with_a_path_where_podman_pulls(harbor):
    """Case D (moby/moby#47144, moby/moby PR #46594, containerd/containerd#6634): a Harbor proxy project as the
    mirror (``launchcard_registry_mirrors: {docker.io: [{location: HOST/hubproxy}]}``). podman puts the path after
    ``/v2/``; the controller must ask that URL and pin the registry's real digest, not the hash of the HTML page."""
    reg, front = harbor
    real = reg.push("vllm/vllm-openai", "nightly", "one")
    c = client({"docker.io": [{"location": front + "/hubproxy", "insecure": True}]})
    refs = im.resolve_all(["vllm/vllm-openai:nightly"], c.resolve, qualified=True)
    assert refs == {"vllm/vllm-openai:nightly": "docker.io/vllm/vllm-openai@" + real}
    assert c.answered == {"vllm/vllm-openai:nightly": "mirror %s/hubproxy" % front}
    assert set(_HarborFront.asked) <= {"/v2/hubproxy/vllm/vllm-openai/manifests/nightly"}, _HarborFront.asked
    # the size is read by digest through the same mirror, from the real manifest
    assert c.image_size(im.parse_reference("vllm/vllm-openai:nightly"), real) > 0


@needs_registry
def test_d_docker_asks_the_path_before_v2_and_refuses_the_html_page(harbor):
    """Case D (moby/moby#47144): dockerd puts a mirror's path before ``/v2``, where a Harbor front serves its HTML
    UI with ``200``. The controller asks that same URL and refuses the page (naming image, mirror and URL) instead
    of pinning ``sha256(<html>)``, a digest that exists nowhere."""
    reg, front = harbor
    reg.push("vllm/vllm-openai", "nightly", "one")
    c = client({"docker.io": [{"location": front + "/hubproxy", "insecure": True}]}, runtime="docker")
    with pytest.raises(im.ImageError) as exc:
        im.resolve_all(["vllm/vllm-openai:nightly"], c.resolve)
    msg = str(exc.value)
    assert "vllm/vllm-openai:nightly" in msg and "text/html" in msg
    assert "http://%s/hubproxy/v2/vllm/vllm-openai/manifests/nightly" % front in msg
    assert "/hubproxy/v2/vllm/vllm-openai/manifests/nightly" in _HarborFront.asked
    assert "sha256:" + hashlib.sha256(HARBOR_UI).hexdigest() not in msg


def _answer(status, body, headers):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802
            if self.command == "HEAD" and any(k == "Docker-Content-Digest" for k, v in headers):
                self.send_response(405)  # the digest is then read from the GET's body, and checked
                self.send_header("Content-Length", "0")
                return self.end_headers()
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command == "GET":
                self.wfile.write(body)

        do_HEAD = do_GET  # noqa: N815
    return Handler


GOOD = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                   "config": {"digest": "sha256:" + "1" * 64, "size": 2}, "layers": []}).encode()


@pytest.mark.parametrize("body, headers, message", [
    (HARBOR_UI, [("Content-Type", "text/html")], "Content-Type 'text/html', not a manifest media type"),
    (b"<html>", [("Content-Type", OCI_MANIFEST)], "not a JSON manifest of schemaVersion 2"),
    (json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST}).encode(), [("Content-Type", OCI_MANIFEST)],
     "without its config and layers"),
    (GOOD, [("Content-Type", OCI_MANIFEST), ("Docker-Content-Digest", "sha256:" + "f" * 64)],
     "sha256 is sha256:%s, not sha256:%s" % (hashlib.sha256(GOOD).hexdigest(), "f" * 64)),
    (GOOD, [("Content-Type", rc.MANIFEST_TYPES[0])], "mediaType is"),
], ids=["html", "not-json", "no-layers", "digest-mismatch", "type-mismatch"])
def test_d_a_200_that_is_not_the_manifest_is_refused(body, headers, message):
    """Case D: any ``200`` body was hashed as the digest. Content-Type, the JSON schema and Docker-Content-Digest
    are checked; a Docker-Content-Digest of HEAD is trusted only beside a manifest media type."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _answer(200, body, headers))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        c = client({"docker.io": "http://127.0.0.1:%d" % srv.server_address[1]})
        with pytest.raises(im.ImageError, match="image ubuntu:24.04: http://127.0.0.1:%d/v2/library/ubuntu/manifests/"
                           % srv.server_address[1]) as exc:
            c.resolve(im.parse_reference("ubuntu:24.04"))
        assert message in str(exc.value)
    finally:
        srv.shutdown()
        srv.server_close()


@needs_registry
def test_f_a_dead_or_partial_first_mirror_falls_through_to_the_next(registries):
    """Case F (podman #19409, #20374): several mirrors, the first dead or lacking the tag. podman (containers/image
    newImageSource) and dockerd try the next; the controller used only the first. It must resolve as the hosts
    pull, say which mirror answered, and name every one when none does."""
    full, partial = registries(), registries()
    real = full.push("lmsysorg/sglang", "latest", "one")
    partial.push("other/image", "1", "x")  # a mirror that lacks the tag
    dead = "127.0.0.1:%d" % free_port()
    mirrors = {"docker.io": [{"location": dead, "insecure": True},
                             {"location": partial.url[len("http://"):], "insecure": True},
                             {"location": full.url[len("http://"):], "insecure": True}]}
    for runtime in ("podman", "docker"):
        c = client(mirrors, runtime)
        assert c.resolve(im.parse_reference("lmsysorg/sglang:latest")) == real
        assert c.answered["lmsysorg/sglang:latest"] == "mirror " + full.url[len("http://"):]
        skipped = c.skipped["lmsysorg/sglang:latest"]
        assert [s.split(":")[0] for s in skipped] == ["mirror 127.0.0.1", "mirror 127.0.0.1"]
        assert "cannot reach" in skipped[0] and "HTTP 404" in skipped[1]
    # the registry itself comes last (podman: PullSourcesFromReference appends the registry's own endpoint)
    sources = im.pull_sources("docker.io", mirrors, "podman")
    assert [s["label"] for s in sources][-1] == "registry docker.io"
    assert sources[-1]["base"] == "https://registry-1.docker.io"
    with pytest.raises(im.ImageError) as exc:
        client(mirrors).resolve(im.parse_reference("lmsysorg/sglang:nope"))
    msg = str(exc.value)
    assert msg.startswith("image lmsysorg/sglang:nope: no source gave it, in the order the podman hosts ask")
    assert msg.index(dead) < msg.index(partial.url) < msg.index(full.url)


@needs_registry
def test_e_a_held_digest_the_registry_deleted_stops_the_run_naming_the_hosts(registries):
    """Case E (parca-dev/parca-agent PR #2319): the tag moved and the registry deleted the old manifest the fleet
    holds. A host that must pull it (new, or its store lost it) would fail late with ``manifest unknown``; the
    controller checks the held digest and stops, naming image, digest, hosts and remedy; with every host holding it,
    a warning."""
    reg = registries()
    old = reg.push("lmsysorg/sglang", "latest", "old")
    new = reg.push("lmsysorg/sglang", "latest", "new")
    c = client({"docker.io": [{"location": reg.url[len("http://"):], "insecure": True}]})
    refs = im.resolve_all(["lmsysorg/sglang:latest"], c.resolve, qualified=True)
    assert refs["lmsysorg/sglang:latest"].endswith(new)
    held = {"lmsysorg/sglang:latest": "docker.io/lmsysorg/sglang@" + old}
    kept, drift = im.hold(refs, held)
    assert kept == held and [m["image"] for m in drift] == ["lmsysorg/sglang:latest"]
    ref = im.parse_reference("lmsysorg/sglang:latest")
    assert c.exists(ref, old) == (True, "mirror " + reg.url[len("http://"):])
    reg.delete("lmsysorg/sglang", old)
    present, causes = c.exists(ref, old)
    assert present is False and "HTTP 404" in causes[0][1]

    plan = {"hosts": {"h1": {"instances": [{"image": "lmsysorg/sglang:latest"}]},
                      "h2": {"instances": [{"image": "lmsysorg/sglang:latest"}]},
                      "h3": {"instances": [{"image": "lmsysorg/sglang:latest"}]}}}
    found = {"h1": {"preflight_result": {"recorded_image_refs": held}},
             "h2": {"preflight_result": {"recorded_image_refs": held,
                                         "recorded_images_missing": ["lmsysorg/sglang:latest"]}},
             "h3": {"preflight_result": {}}}
    pullers = im.pullers(plan, dict((h, found[h]["preflight_result"]) for h in ["h1", "h2", "h3"]))
    assert pullers == {"lmsysorg/sglang:latest": ["h2", "h3"]}
    message, stops = im.gone_error("lmsysorg/sglang:latest", held["lmsysorg/sglang:latest"], causes,
                                   pullers["lmsysorg/sglang:latest"])
    assert stops
    assert message.startswith("image lmsysorg/sglang:latest: the digest the fleet runs (%s) is gone from the "
                              "registry" % old)
    assert "h2, h3 must pull it" in message and "playbooks/upgrade.yml" in message
    assert "launchcard_images_hold=false" in message
    message, stops = im.gone_error("lmsysorg/sglang:latest", held["lmsysorg/sglang:latest"], causes, [])
    assert not stops and "every host holds it" in message


@needs_registry
def test_g_docker_refuses_a_hub_mirror_that_needs_credentials(registries):
    """Case G(b) (moby/moby#30880, docker/for-linux#570): a Docker Hub mirror that asks for basic auth. podman sends
    a mirror the credentials of its own host (the hosts' auth file keys it), never the registry's; dockerd sends a
    mirror none and falls back to Docker Hub, so the controller refuses it for docker, naming the limitation and
    the alternatives, where it used to resolve through the mirror with credentials no docker host would send."""
    reg = registries(auth=("puller", "s3cret"))
    real = reg.push("lmsysorg/sglang", "latest", "one")
    host = reg.url[len("http://"):]
    mirrors = {"docker.io": [{"location": host, "insecure": True}]}
    creds = {host: {"username": "puller", "password": "s3cret"}}
    # a plain-HTTP mirror: its credentials go there only as launchcard_registry_credentials_plain_http allows
    assert client(mirrors, "podman", creds, [host]).resolve(im.parse_reference("lmsysorg/sglang:latest")) == real
    assert list(im.registry_auth(creds, mirrors, [host])["auths"]) == [host]  # the podman hosts' auth file
    # Docker Hub's credentials are not the mirror's: podman sends it none, and the mirror refuses
    with pytest.raises(im.ImageError, match="mirror %s needs credentials" % host):
        client(mirrors, "podman", {"docker.io": creds[host]}).resolve(im.parse_reference("lmsysorg/sglang:latest"))
    with pytest.raises(im.ImageError) as exc:
        client(mirrors, "docker", {"docker.io": creds[host]}).resolve(im.parse_reference("lmsysorg/sglang:latest"))
    msg = str(exc.value)
    assert "mirror %s asks for credentials (HTTP 401" % host in msg
    assert "dockerd sends a registry mirror none" in msg and "launchcard_runtime: podman" in msg
    # the credentials keyed by the mirror's own host do not help docker either (its pull asks for docker.io's)
    with pytest.raises(im.ImageError, match="dockerd sends a registry mirror none"):
        client(mirrors, "docker", creds, [host]).resolve(im.parse_reference("lmsysorg/sglang:latest"))


def test_d_the_url_of_a_mirror_with_a_path_per_runtime():
    """Case D: where each runtime puts a mirror's path (containers/image rewriteReference; moby ValidateMirror and
    mirrorsToRegistryHosts), and the forms a runtime cannot take are refused naming the variable."""
    mirrors = {"docker.io": [{"location": "harbor.corp/hubproxy"}], "ghcr.io": ["http://10.0.0.5:5000/ghcr/"]}
    podman = im.pull_sources("docker.io", mirrors, "podman")[0]
    assert (podman["base"], podman["namespace"]) == ("https://harbor.corp", "hubproxy/")
    docker = im.pull_sources("docker.io", mirrors, "docker")[0]
    assert (docker["base"], docker["namespace"]) == ("https://harbor.corp/hubproxy", "")
    assert im.pull_sources("ghcr.io", mirrors, "podman")[0]["base"] == "http://10.0.0.5:5000"
    assert im.pull_sources("ghcr.io", mirrors, "podman")[0]["namespace"] == "ghcr/"
    with pytest.raises(im.ImageError, match="launchcard_registry_mirrors.ghcr.io: docker mirrors Docker Hub only"):
        im.pull_sources("ghcr.io", mirrors, "docker")
    with pytest.raises(im.ImageError, match=r"launchcard_registry_mirrors.docker.io\[0\].location harbor.corp/v2 "
                                            "ends in /v2"):
        im.pull_sources("docker.io", {"docker.io": ["https://harbor.corp/v2"]}, "docker")
    with pytest.raises(im.ImageError, match=r"launchcard_registry_mirrors.docker.io\[0\].location must be HOST"):
        im.pull_sources("docker.io", {"docker.io": [{"location": "a b\ninsecure = true"}]}, "podman")
    with pytest.raises(im.ImageError, match="launchcard_registry_mirrors.docker.io must be a URL or a list"):
        im.pull_sources("docker.io", {"docker.io": []}, "podman")


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PIN_PLAY = """
- hosts: all
  gather_facts: false
  vars:
    launchcard_runtime: podman
    launchcard_registry_mirrors: {"registry.invalid": [{location: "%(mirror)s", insecure: true}]}
    launchcard_plan: {hosts: {h1: {instances: [{image: "%(image)s"}]}, h2: {instances: [{image: "%(image)s"}]},
                              h3: {instances: [{image: "%(image)s"}]}}}
    launchcard_resolved_images: {image_refs: {"%(image)s": "%(new)s"}}
  tasks:
    - name: What each host's preflight call read (its record, its engine's store)
      ansible.builtin.set_fact:
        preflight_result: "{{ results[inventory_hostname] }}"
      vars:
        results: %(results)s
    - name: The deploy's pin step
      ansible.builtin.import_tasks: %(root)s/playbooks/tasks/pin-images.yml
    - name: Pinned
      ansible.builtin.debug:
        msg: "PINNED {{ runtime_image_refs | to_json }}"
      run_once: true
"""


def _pin_play(tmp_path, reg, old, new, results):
    image = "registry.invalid/lmsysorg/sglang:latest"  # .invalid never resolves (RFC 6761): no request leaves
    (tmp_path / "inventory.ini").write_text("".join("%s ansible_connection=local ansible_python_interpreter=%s\n"
                                                    % (h, os.sys.executable) for h in ("h1", "h2", "h3")))
    (tmp_path / "play.yml").write_text(PIN_PLAY % {
        "mirror": reg.url[len("http://"):], "image": image, "new": "registry.invalid/lmsysorg/sglang@" + new,
        "root": ROOT, "results": json.dumps(dict((h, dict(r, recorded_image_refs={
            image: "registry.invalid/lmsysorg/sglang@" + old} if r.get("recorded") else {})) for h, r in results.items()))})
    bindir = os.path.dirname(os.sys.executable)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([os.path.join(bindir, "ansible-playbook"), "-i", str(tmp_path / "inventory.ini"),
                           str(tmp_path / "play.yml")], cwd=ROOT, env=env, capture_output=True, text=True, check=False)


@needs_registry
def test_e_the_deploys_pin_step_stops_before_any_host_changes(registries, tmp_path):
    """Case E (parca-dev/parca-agent PR #2319) through playbooks/tasks/pin-images.yml, the step deploy.yml runs
    after preflight and before any host changes: a kept digest the registry deleted stops the run naming the
    hosts that must pull it; when every host holds it, the run goes on with a warning and keeps it."""
    reg = registries()
    old = reg.push("lmsysorg/sglang", "latest", "old")
    new = reg.push("lmsysorg/sglang", "latest", "new")
    reg.delete("lmsysorg/sglang", old)
    res = _pin_play(tmp_path, reg, old, new, {"h1": {"recorded": True}, "h2": {"recorded": True,
                    "recorded_images_missing": ["registry.invalid/lmsysorg/sglang:latest"]}, "h3": {}})
    assert res.returncode == 2, res.stdout + res.stderr
    assert ("image registry.invalid/lmsysorg/sglang:latest: the digest the fleet runs (%s) is gone from the "
            "registry" % old) in res.stdout
    assert "h2, h3 must pull it" in res.stdout and "PINNED" not in res.stdout
    res = _pin_play(tmp_path, reg, old, new, {h: {"recorded": True} for h in ("h1", "h2", "h3")})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "every host holds it" in res.stdout + res.stderr
    assert 'PINNED {"registry.invalid/lmsysorg/sglang:latest": "registry.invalid/lmsysorg/sglang@%s"}' % old in res.stdout


def test_d_a_mirror_docker_cannot_take_is_refused_before_any_request():
    """Case D/G: the whole of launchcard_registry_mirrors is checked for the runtime when there is an image to
    resolve, not only the mirrors of the images' registries."""
    c = client({"nvcr.io": [{"location": "mirror.corp/nvcr"}]}, runtime="docker")
    with pytest.raises(im.ImageError, match="launchcard_registry_mirrors.nvcr.io: docker mirrors Docker Hub only"):
        c.check_mirrors()
    assert c.requests == 0
    client({"nvcr.io": [{"location": "mirror.corp/nvcr"}]}, runtime="podman").check_mirrors()
