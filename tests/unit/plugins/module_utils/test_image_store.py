# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container engines' listings of their image stores (tests/unit/fixtures/image_store/README.md says where each
listing comes from): the digests they name, and what the host's record finds in place from them."""

from __future__ import annotations

import os

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils._image_store import (
    IMAGE_LIST_ARGV,
    images_in_place,
    parse_docker_image_list,
    parse_podman_image_list,
    stored_image_digests,
)

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "image_store"))
SGLANG = "sha256:a71af71d3de851a5c62c8dd059f9ba8f30501dc0fdc908d57b60f1032a86f7de"
VLLM_INDEX = "sha256:0a46e3ca24b4e815e4fdbfefcef9d478dd680668460daf70cf435eb124e9ec0d"
VLLM_AMD64 = "sha256:246b2a42f322315ea0923b77632681c2ee7e387f139f1e92b8934eeacd49dbc2"
STANDIN = "sha256:36e496758c94c27e579b0d9a3658a80e4f1e9a8109b8dff535d34d6106e08a53"
# the host's record, as the runtime role pulls: each card image by the digest resolved for the fleet
RECORDED = {"lmsysorg/sglang:v0.5.23": "docker.io/lmsysorg/sglang@" + SGLANG,
            "vllm/vllm-openai:v0.11": "docker.io/vllm/vllm-openai@" + VLLM_INDEX}


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def test_podman_lists_the_digest_pulled_by_and_each_name_with_each_digest():
    # recorded from podman 4.3.1: the index pulled by digest is listed by it and by its amd64 manifest
    stored = parse_podman_image_list(fixture("podman-4.3.1-image-ls.json"))
    assert stored == {SGLANG, VLLM_INDEX, VLLM_AMD64}
    assert images_in_place(RECORDED, stored) == sorted(RECORDED)
    # the config digests (podman's image Id) are no manifest digest
    assert "sha256:d3879e8524a07c37084f25c56ec6ad5aff1d111584a844647c392e563650f081" not in stored


def test_docker_29_containerd_store_lists_each_image_by_its_target_digest():
    stored = parse_docker_image_list(fixture("docker-29-containerd-image-ls.jsonl"))
    assert stored == {SGLANG, VLLM_INDEX, STANDIN}
    assert images_in_place(RECORDED, stored) == sorted(RECORDED)


def test_docker_classic_store_lists_the_references_pulls_left_and_none_for_the_rest():
    stored = parse_docker_image_list(fixture("docker-29-classic-image-ls.jsonl"))
    assert stored == {SGLANG, VLLM_INDEX}  # the local build and the intermediate image print <none>
    assert images_in_place(RECORDED, stored) == sorted(RECORDED)
    # an image removed by hand (`docker rmi`): its row is gone, the other image stays in place
    rows = [line for line in fixture("docker-29-classic-image-ls.jsonl").splitlines() if SGLANG not in line]
    assert images_in_place(RECORDED, parse_docker_image_list("\n".join(rows))) == ["vllm/vllm-openai:v0.11"]


def test_empty_stores_hold_nothing_and_output_that_is_no_listing_is_refused():
    assert parse_podman_image_list("[]\n") == set()
    assert parse_docker_image_list("") == set()
    with pytest.raises(ValueError):
        parse_podman_image_list("Error: something\n")
    with pytest.raises(ValueError):
        parse_podman_image_list('{"Id": "x"}')
    # what docker's CLI before 23.0 prints for `--format json`: the template's text, once a row
    with pytest.raises(ValueError):
        parse_docker_image_list("json\njson\n")
    with pytest.raises(ValueError):
        parse_docker_image_list('["sha256:x"]\n')


class Host(object):
    """``get_bin_path`` and ``run_command`` of a host with ``tools`` in /usr/bin; each command gets ``answer``."""

    def __init__(self, tools, answer=(0, "", "")):
        self.tools, self.answer, self.calls = tools, answer, []

    def get_bin_path(self, name):
        return "/usr/bin/" + name if name in self.tools else None

    def run_command(self, argv):
        self.calls.append(list(argv))
        return self.answer


def test_each_engine_is_asked_through_its_own_cli_for_every_image_and_its_digests():
    host = Host(["podman", "timeout"], (0, fixture("podman-4.3.1-image-ls.json"), ""))
    stored = stored_image_digests("podman", host.get_bin_path, host.run_command)
    assert stored == ({SGLANG, VLLM_INDEX, VLLM_AMD64}, None)
    assert host.calls == [["/usr/bin/timeout", "60", "/usr/bin/podman", "image", "ls", "--all", "--format", "json"]]
    host = Host(["docker"], (0, fixture("docker-29-containerd-image-ls.jsonl"), ""))
    assert stored_image_digests("docker", host.get_bin_path, host.run_command) == ({SGLANG, VLLM_INDEX, STANDIN}, None)
    # --all: docker 29 hides untagged images (the hosts' pulls by digest) without it; the template, not `json`
    assert host.calls == [["/usr/bin/docker", "image", "ls", "--all", "--digests", "--format", "{{json .}}"]]
    assert IMAGE_LIST_ARGV["docker"][-1] == "{{json .}}"
    host = Host([])
    assert stored_image_digests("native", host.get_bin_path, host.run_command) == (set(), None)
    assert host.calls == []


@pytest.mark.parametrize("tools, answer, why", [
    ([], (0, "", ""), "docker is not installed (no docker on PATH)"),
    (["docker"], (1, "", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
                         "Is the docker daemon running?\n"),
     "`docker image ls --all --digests --format {{json .}}` failed (rc 1): Cannot connect to the Docker daemon at "
     "unix:///var/run/docker.sock. Is the docker daemon running?"),
    (["docker", "timeout"], (124, "", ""), "`docker image ls --all --digests --format {{json .}}` gave no answer "
                                           "within 60 s"),
    (["docker"], (0, "json\n", ""), "`docker image ls --all --digests --format {{json .}}` printed what is not its "
                                    "JSON listing (Expecting value: line 1 column 1 (char 0))"),
])
def test_a_store_the_cli_cannot_list_holds_nothing_known_and_says_why(tools, answer, why):
    host = Host(tools, answer)
    assert stored_image_digests("docker", host.get_bin_path, host.run_command) == (set(), why)


def test_a_failing_podman_is_named_by_its_last_error_line():
    host = Host(["podman"], (125, "", "time=x level=warning msg=\"...\"\nError: database is locked\n"))
    digests, why = stored_image_digests("podman", host.get_bin_path, host.run_command)
    assert digests == set()
    assert why == "`podman image ls --all --format json` failed (rc 125): Error: database is locked"
