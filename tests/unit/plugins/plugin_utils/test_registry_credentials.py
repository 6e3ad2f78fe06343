# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Registry credentials on the hosts: the podman auth file built from the credentials and mirrors, the salted
digest that makes a rotated password rewrite it, and the units that name the file (a path, never a secret)."""

from __future__ import annotations

import base64
import hashlib

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as im
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as uo
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import host_units
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units import (
    EX, _plan, directives, parse_exec)

PASSWORD = "s3cret-p@ss:word"
CREDS = {"docker.io": {"username": "puller", "password": PASSWORD}}
MIRRORS = {"docker.io": [{"location": "198.18.10.1:5000", "insecure": True}, "https://mirror.example:8443/hub"]}
AUTH_FILE = "/etc/launchcard/registry-auth.json"


def decoded(auth):
    return {key: base64.b64decode(value["auth"]).decode() for key, value in auth["auths"].items()}


def test_the_auth_file_gives_each_host_its_own_credentials_and_a_mirror_none_of_its_registrys():
    auth = im.registry_auth(CREDS, MIRRORS)
    assert set(auth) == {"auths"}
    # the registry's credentials are keyed by the registry only: containers/image would send an entry keyed by a
    # mirror's host to that mirror (it looks credentials up by the endpoint it contacts)
    assert decoded(auth) == {"docker.io": "puller:" + PASSWORD}
    assert im.registry_auth({}, MIRRORS) == {"auths": {}} == im.registry_auth(None)
    # a mirror gets credentials only when they are named for its own host (HOST[:PORT], not its path)
    own = dict(CREDS, **{"mirror.example:8443": {"username": "mirror-user", "password": "other"}})
    assert decoded(im.registry_auth(own, MIRRORS)) == {"docker.io": "puller:" + PASSWORD,
                                                       "mirror.example:8443": "mirror-user:other"}


def test_credentials_of_a_plain_http_mirror_are_refused_unless_the_variable_lists_its_host():
    creds = dict(CREDS, **{"198.18.10.1:5000": {"username": "mirror-user", "password": "other"}})
    with pytest.raises(im.ImageError) as err:
        im.registry_auth(creds, MIRRORS)
    assert str(err.value).startswith("launchcard_registry_credentials.198.18.10.1:5000: 198.18.10.1:5000 is reached "
                                     "over plain HTTP")
    assert "launchcard_registry_credentials_plain_http" in str(err.value) and "other" not in str(err.value)
    # listed: written, and nothing else changes
    auth = im.registry_auth(creds, MIRRORS, ["198.18.10.1:5000"])
    assert decoded(auth)["198.18.10.1:5000"] == "mirror-user:other"
    # listing another host, or only the mirror's HTTPS sibling, allows nothing here
    for other in (["198.18.10.1:5001"], ["mirror.example:8443"], "198.18.10.1"):
        with pytest.raises(im.ImageError, match="launchcard_registry_credentials_plain_http"):
            im.registry_auth(creds, MIRRORS, other)
    # the same host reached over plain HTTP as any registry's mirror is plain HTTP
    with pytest.raises(im.ImageError, match="198.18.10.1:5000 is reached over plain HTTP"):
        im.registry_auth(creds, {"quay.io": "http://198.18.10.1:5000/quay", "docker.io": "https://198.18.10.1:5000"})


@pytest.mark.parametrize("value, message", [
    (["http://198.18.10.1:5000"], r"launchcard_registry_credentials_plain_http\[0\] must be HOST\[:PORT\]"),
    (["198.18.10.1:5000/hub"], r"launchcard_registry_credentials_plain_http\[0\] must be HOST\[:PORT\]"),
    ([5000], r"launchcard_registry_credentials_plain_http\[0\] must be HOST\[:PORT\]"),
    ({"198.18.10.1:5000": True}, r"launchcard_registry_credentials_plain_http must be a list of HOST\[:PORT\]"),
])
def test_a_bad_plain_http_list_is_named(value, message):
    with pytest.raises(im.ImageError, match=message):
        im.registry_auth(CREDS, MIRRORS, value)


@pytest.mark.parametrize("creds, field", [
    ({"docker.io": "puller:" + PASSWORD}, "docker.io must be a mapping"),
    ({"docker.io": {"username": "puller"}}, "docker.io.password must be a non-empty string"),
    ({"docker.io": {"username": "", "password": PASSWORD}}, "docker.io.username must be a non-empty string"),
    ({"docker.io": {"username": "a:b", "password": PASSWORD}}, "docker.io.username must not contain ':'"),
    ({"docker.io": {"username": "a", "password": PASSWORD + "\n"}}, "docker.io.password contains a control"),
    (["docker.io"], "must be a mapping"),
])
def test_bad_credentials_name_the_field_and_never_the_password(creds, field):
    with pytest.raises(im.ImageError) as err:
        im.registry_auth(creds, MIRRORS)
    assert "launchcard_registry_credentials" in str(err.value) and field in str(err.value)
    assert PASSWORD not in str(err.value)


def test_the_digest_follows_a_rotated_password_and_is_no_plain_hash_of_it():
    before = im.registry_credentials_digest(CREDS, MIRRORS, "lc-ct-prefill")
    assert before == im.registry_credentials_digest(CREDS, MIRRORS, "lc-ct-prefill")  # stable: a no-op stays one
    rotated = {"docker.io": {"username": "puller", "password": PASSWORD + "2"}}
    assert im.registry_credentials_digest(rotated, MIRRORS, "lc-ct-prefill") != before
    # the auth file does not depend on the mirrors (runtime_container_setup_digest folds those in itself)
    assert im.registry_credentials_digest(CREDS, {}, "lc-ct-prefill") == before
    assert im.registry_credentials_digest(dict(CREDS, **{"mirror.example:8443": CREDS["docker.io"]}), MIRRORS,
                                          "lc-ct-prefill") != before  # a new host: a new file
    assert im.registry_credentials_digest(CREDS, MIRRORS, "lc-ct-decode") != before  # salted per host
    assert im.registry_credentials_digest({}, MIRRORS, "lc-ct-prefill") == ""
    assert len(before) == 64 and PASSWORD not in before
    plain = [hashlib.new(name, text.encode()).hexdigest() for name in ("md5", "sha1", "sha256", "sha512")
             for text in (PASSWORD, "puller:" + PASSWORD, base64.b64encode(("puller:" + PASSWORD).encode()).decode())]
    assert before not in plain


def test_podman_units_name_the_auth_file_only_when_credentials_are_set():
    plan = _plan(EX, [("c", "10.0.0.3", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    for quadlet in (False, True):
        hv = {"launchcard_runtime": "podman", "launchcard_podman_quadlet": quadlet,
              "launchcard_registry_credentials": CREDS}
        opts = uo.host_options(hv)
        assert opts["podman_auth_file"] == AUTH_FILE == im.REGISTRY_AUTH_FILE
        for unit in host_units(plan["hosts"]["c"], opts):
            text = unit["content"]
            assert PASSWORD not in text and "puller" not in text
            words = parse_exec(directives(text, "PodmanArgs" if quadlet else "ExecStart")[0])
            assert words[words.index("--authfile") + 1] == AUTH_FILE
            # a run option: before the image (and the entrypoint), so podman reads it
            assert words.index("--authfile") < words.index("--entrypoint")
        without = host_units(plan["hosts"]["c"], uo.host_options(dict(hv, launchcard_registry_credentials={})))
        assert all("--authfile" not in u["content"] for u in without)
    # docker reads root's ~/.docker/config.json (docker_login): its units name no file
    docker = uo.host_options({"launchcard_runtime": "docker", "launchcard_registry_credentials": CREDS})
    assert docker["podman_auth_file"] is None
    assert all("--authfile" not in u["content"] for u in host_units(plan["hosts"]["c"], docker))
