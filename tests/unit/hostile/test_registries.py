# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostile registries: credentials go only where they were configured (docs/untrusted-input.md, "Registry
credentials").

Every party is a real HTTP(S) server on loopback, each logging the ``Authorization`` header of every request it
gets: the registry on 127.0.0.1, "another host" on 127.0.0.2, TLS from a certificate made here for both addresses
(the client trusts it through RegistryClient's opener, as a site's CA bundle). The controller's real code path asks
them (plugins/plugin_utils/_registry_api.py RegistryClient, the resolve_images action) over real sockets.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import json
import os
import ssl
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest.mock import MagicMock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.launchcard.inference.plugins.action.resolve_images import ActionModule
from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as im
from ansible_collections.launchcard.inference.plugins.plugin_utils import _registry_api as rc

USER, PASSWORD = "puller", "hunter2-registry-only"
BASIC = "Basic " + base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()
CREDS = {"username": USER, "password": PASSWORD}
OCI = "application/vnd.oci.image.manifest.v1+json"
MANIFEST = json.dumps({"schemaVersion": 2, "mediaType": OCI, "config": {"digest": "sha256:" + "1" * 64, "size": 2},
                       "layers": [{"digest": "sha256:" + "2" * 64, "size": 3}]}).encode()
DIGEST = "sha256:" + hashlib.sha256(MANIFEST).hexdigest()
IMAGE = "registry.test/team/engine:1"  # a registry of its own (a "." in the first component)
HUB_IMAGE = "team/engine:1"  # Docker Hub's, through its mirrors


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """``(server context, client opener)``: a self-signed certificate for 127.0.0.1 and 127.0.0.2, trusted by the
    opener only."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "loopback registry")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(a))
                                                        for a in ("127.0.0.1", "127.0.0.2")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder = tmp_path_factory.mktemp("tls")
    cert_path, key_path = str(folder / "cert.pem"), str(folder / "key.pem")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_path, key_path)
    client = ssl.create_default_context(cafile=cert_path)
    return server, urllib.request.build_opener(urllib.request.HTTPSHandler(context=client))


class Party(object):
    """One loopback HTTP(S) server: ``answer(party, handler) -> (status, headers, body)``; :attr:`seen` is
    ``[(method, path, Authorization or None)]`` of every request it got."""

    def __init__(self, host, answer, tls=None):
        self.seen, self.answer = [], answer
        party = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                party.seen.append((self.command, self.path, self.headers.get("Authorization")))
                status, headers, body = party.answer(party, self)
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_HEAD = do_GET  # noqa: N815

        self.server = ThreadingHTTPServer((host, 0), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.netloc = "%s:%d" % self.server.server_address
        self.url = ("https://" if tls is not None else "http://") + self.netloc
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def authorizations(self):
        return [auth for dummy, dummy2, auth in self.seen if auth]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def parties():
    started = []

    def start(host, answer, tls=None):
        started.append(Party(host, answer, tls))
        return started[-1]
    yield start
    for party in started:
        party.stop()


def manifest():
    return 200, [("Content-Type", OCI), ("Docker-Content-Digest", DIGEST)], MANIFEST


def bearer_registry(realm):
    """A registry whose manifests need a Bearer token from ``realm()`` (a callable: the realm's URL)."""
    def answer(party, handler):
        if handler.headers.get("Authorization") == "Bearer granted":
            return manifest()
        return 401, [("WWW-Authenticate", 'Bearer realm="%s",service="registry.test",scope="repository:team/'
                      'engine:pull"' % realm())], b""
    return answer


def token_service(party, handler):
    return 200, [("Content-Type", "application/json")], json.dumps({"token": "granted"}).encode()


def basic(answer=manifest):
    """A registry (or mirror) that asks for basic auth and then answers ``answer()``."""
    def serve(party, handler):
        if handler.headers.get("Authorization") == BASIC:
            return answer()
        return 401, [("WWW-Authenticate", 'Basic realm="registry"')], b""
    return serve


def own_registry(url, opener, plain_http=None, runtime="podman"):
    return rc.RegistryClient(upstream={"registry.test": url}, credentials={"registry.test": CREDS}, opener=opener,
                             plain_http=plain_http, runtime=runtime, timeout=5)


@pytest.mark.parametrize("realm_host", ["127.0.0.2", "127.0.0.1"], ids=["another-host", "the-registrys-host"])
def test_a_token_realm_over_plain_http_never_gets_the_credentials(parties, tls, realm_host):
    """A registry over HTTPS names a token realm over plain HTTP, on another host or on its own: the engines would
    send the realm the registry's password (containers/image getBearerToken checks neither scheme nor host), so the
    run stops before any request to it, naming the variable that would allow it."""
    realm = parties(realm_host, token_service)
    registry = parties("127.0.0.1", bearer_registry(lambda: realm.url + "/token"), tls[0])
    with pytest.raises(im.ImageError) as err:
        own_registry(registry.url, tls[1]).resolve(im.parse_reference(IMAGE))
    message = str(err.value)
    assert message.startswith("image %s: registry registry.test names the token realm %s/token; "
                              "launchcard_registry_credentials.registry.test" % (IMAGE, realm.url))
    assert "%s is reached over plain HTTP" % realm.netloc in message
    assert "list %s in launchcard_registry_credentials_plain_http" % realm.netloc in message
    assert PASSWORD not in message
    assert realm.seen == [] and registry.authorizations() == []
    # listed in launchcard_registry_credentials_plain_http: the realm gets them, and the digest resolves
    assert own_registry(registry.url, tls[1], [realm.netloc]).resolve(im.parse_reference(IMAGE)) == DIGEST
    assert realm.authorizations() == [BASIC] and registry.authorizations() == ["Bearer granted"]


def test_a_token_realm_over_https_on_another_host_gets_them(parties, tls):
    """The token spec's realm is an authorization service, often on another host (Docker Hub's registry-1.docker.io
    names https://auth.docker.io/token): over HTTPS it gets the registry's credentials, the registry only the token."""
    realm = parties("127.0.0.2", token_service, tls[0])
    registry = parties("127.0.0.1", bearer_registry(lambda: realm.url + "/token"), tls[0])
    assert own_registry(registry.url, tls[1]).resolve(im.parse_reference(IMAGE)) == DIGEST
    assert realm.authorizations() == [BASIC]
    assert BASIC not in registry.authorizations()


def test_a_token_realm_that_is_not_http_reads_nothing_local(parties, tls, tmp_path):
    """A realm ``file://`` (a fragment keeps the query off the path) would have the controller read a local file
    (urllib opens it) and send what it holds to the registry as the token: a realm must be an http(s) URL."""
    local = tmp_path / "token.json"
    local.write_text(json.dumps({"token": "read-from-the-controller"}))
    registry = parties("127.0.0.1", bearer_registry(lambda: "file://%s#" % local), tls[0])
    with pytest.raises(im.ImageError, match="named a token realm that is not an http\\(s\\) URL: 'file://"):
        own_registry(registry.url, tls[1]).resolve(im.parse_reference(IMAGE))
    assert all("read-from-the-controller" not in (auth or "") for dummy, dummy2, auth in registry.seen)


@pytest.mark.parametrize("mirror_tls", [False, True], ids=["http-mirror", "https-mirror"])
@pytest.mark.parametrize("challenge", ["basic", "bearer"])
def test_a_mirror_that_logs_credentials_never_sees_the_registrys(parties, tls, mirror_tls, challenge):
    """A mirror of Docker Hub asks for credentials (basic, or a token from a realm of its own) and logs what it gets.
    It is not the registry: Docker Hub's credentials are never sent to it (containers/image sends a mirror only the
    auth file's entry for its own host; dockerd sends a mirror none), and the hosts' auth file keys docker.io only.
    The pull goes on to the registry, which gets them."""
    def phish(party, handler):
        if challenge == "basic":
            return 401, [("WWW-Authenticate", 'Basic realm="mirror"')], b""
        if handler.path.startswith("/token"):
            return token_service(party, handler)
        return 401, [("WWW-Authenticate", 'Bearer realm="%s/token",service="mirror"' % party.url)], b""
    mirror = parties("127.0.0.2", phish, tls[0] if mirror_tls else None)
    hub = parties("127.0.0.1", basic(), tls[0])
    mirrors = {"docker.io": [{"location": mirror.netloc, "insecure": not mirror_tls}]}
    creds = {"docker.io": CREDS}
    client = rc.RegistryClient(mirrors=mirrors, credentials=creds, upstream={"docker.io": hub.url}, opener=tls[1],
                               timeout=5)
    assert client.resolve(im.parse_reference(HUB_IMAGE)) == DIGEST
    assert client.answered == {HUB_IMAGE: "registry docker.io"}
    # what the mirror got: nothing, or (bearer) the token its own realm gave without credentials
    assert mirror.seen and set(mirror.authorizations()) <= {"Bearer granted"}
    assert hub.authorizations() == [BASIC]
    assert list(im.registry_auth(creds, mirrors)["auths"]) == ["docker.io"]
    # docker: dockerd sends a mirror none either (a mirror that asks for them is refused, naming why)
    docker = rc.RegistryClient(mirrors=mirrors, credentials=creds, upstream={"docker.io": hub.url}, opener=tls[1],
                               runtime="docker", timeout=5)
    if challenge == "basic":
        with pytest.raises(im.ImageError, match="dockerd sends a registry mirror none"):
            docker.resolve(im.parse_reference(HUB_IMAGE))
    assert BASIC not in mirror.authorizations()


def _action(**args):
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = False
    connection = MagicMock()
    connection._shell.tmpdir = None
    return ActionModule(task, connection, PlayContext(), DataLoader(), None, None).run(task_vars={})


def test_an_insecure_mirror_with_credentials_is_refused_unless_allowed(parties):
    """Credentials for a plain-HTTP mirror (``insecure: true``) would cross the network in the clear: the
    resolve_images action stops before any request, naming the credentials' key and the variable that allows it;
    listed there, the mirror gets its own credentials and the hosts' auth file holds them."""
    mirror = parties("127.0.0.2", basic())
    mirrors = {"docker.io": [{"location": mirror.netloc, "insecure": True}]}
    creds = {mirror.netloc: CREDS}
    args = dict(images=[HUB_IMAGE], runtime="podman", mirrors=mirrors, credentials=creds, timeout=5.0)
    for runtime in ("podman", "docker"):
        with pytest.raises(AnsibleActionFail) as err:
            _action(**{**args, "runtime": runtime})
        assert str(err.value) == (
            "launchcard_registry_credentials.%s: %s is reached over plain HTTP, which would carry the credentials "
            "unencrypted: they are not sent; serve it over HTTPS, or list %s in "
            "launchcard_registry_credentials_plain_http to send them anyway" % ((mirror.netloc,) * 3))
    assert mirror.seen == []
    with pytest.raises(im.ImageError, match="launchcard_registry_credentials_plain_http"):
        im.registry_auth(creds, mirrors)
    # a native fleet pulls no image: its credentials go nowhere and stop nothing
    assert _action(**{**args, "images": [], "runtime": "native"})["image_refs"] == {}
    result = _action(**{**args, "credentials_plain_http": [mirror.netloc]})
    assert result["image_refs"] == {HUB_IMAGE: "docker.io/team/engine@" + DIGEST}
    assert mirror.authorizations() == [BASIC]
    assert list(im.registry_auth(creds, mirrors, [mirror.netloc])["auths"]) == [mirror.netloc]


def test_a_plain_http_registry_never_gets_the_credentials_unless_allowed(parties):
    """A registry reached over plain HTTP that asks for basic auth: refused, naming the variable; it never sees them."""
    registry = parties("127.0.0.2", basic())
    with pytest.raises(im.ImageError) as err:
        own_registry(registry.url, None).resolve(im.parse_reference(IMAGE))
    assert "launchcard_registry_credentials.registry.test (registry registry.test" in str(err.value)
    assert "list %s in launchcard_registry_credentials_plain_http" % registry.netloc in str(err.value)
    assert registry.seen and registry.authorizations() == []
    assert own_registry(registry.url, None, [registry.netloc]).resolve(im.parse_reference(IMAGE)) == DIGEST
    assert registry.authorizations() == [BASIC]


def test_a_redirect_never_carries_the_credentials(parties, tls):
    """The registry answers an authenticated manifest request with a redirect to another host (as it may for a
    blob store): the other host gets the request without the registry's credentials (urllib would copy them)."""
    elsewhere = parties("127.0.0.2", lambda party, handler: manifest())
    registry = parties("127.0.0.1", basic(lambda: (307, [("Location", elsewhere.url + "/v2/team/engine/manifests/1")],
                                                   b"")), tls[0])
    assert own_registry(registry.url, tls[1]).resolve(im.parse_reference(IMAGE)) == DIGEST
    assert registry.authorizations() == [BASIC]
    assert elsewhere.seen and elsewhere.authorizations() == []


def test_an_endless_token_answer_is_cut_short(parties, tls):
    """A realm that answers more than containers/image reads of a token (1 MiB) is refused, not read to the end."""
    realm = parties("127.0.0.2", lambda party, handler: (200, [("Content-Type", "application/json")],
                                                         b'{"token": "' + b"x" * (rc.MAX_TOKEN_BYTES + 10) + b'"}'),
                    tls[0])
    registry = parties("127.0.0.1", bearer_registry(lambda: realm.url + "/token"), tls[0])
    with pytest.raises(im.ImageError, match="the token service of registry registry.test at %s/token failed: an "
                                            "answer over %d bytes" % (realm.url, rc.MAX_TOKEN_BYTES)):
        own_registry(registry.url, tls[1]).resolve(im.parse_reference(IMAGE))


def test_the_sandbox_inventory_names_why_it_sends_credentials_over_plain_http():
    """The sandbox's registry is plain HTTP on its bridge: its inventory keys the credentials by that mirror's host
    and lists it in launchcard_registry_credentials_plain_http, saying why beside it."""
    import yaml
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    path = os.path.join(root, "inventories", "containers", "group_vars", "all.yml")
    with open(path) as f:
        text = f.read()
    data = yaml.safe_load(text)
    mirror = data["launchcard_registry_mirrors"]["docker.io"][0]["location"]
    assert list(data["launchcard_registry_credentials"]) == [mirror]
    assert data["launchcard_registry_credentials_plain_http"] == [mirror]
    im.registry_auth(data["launchcard_registry_credentials"], data["launchcard_registry_mirrors"],
                     data["launchcard_registry_credentials_plain_http"])
    before = text[:text.index("launchcard_registry_credentials_plain_http:")].rsplit("\n\n", 1)[-1]
    assert "plain HTTP" in before and "SANDBOX-ONLY" in before
