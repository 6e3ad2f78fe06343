# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight checks peers, shm and image_disk: needs, probes (real loopback sockets), pass and fail."""

from __future__ import annotations

import errno
import json
import os
import socket

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._argv import Argv
from ansible_collections.launchcard.inference.plugins.plugin_utils._card import load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.module_utils._image_store import (
    images_in_place,
    images_missing,
    image_data_root,
)
from ansible_collections.launchcard.inference.plugins.module_utils._preflight import (
    CHECKS,
    evaluate,
    failed,
    host_needs,
)
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_checks import DEFAULT_SHM_MIN_BYTES
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_reads import probe, probe_all
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_runtime_checks import (
    DEFAULT_IMAGE_ALLOWANCE_BYTES,
    DEFAULT_IMAGE_UNPACK_FACTOR,
)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
EXAMPLE = os.path.join(ROOT, "cards", "glm-5.3-flash.json")
GIB = 2 ** 30
MIB = 2 ** 20


def _text(path):
    with open(path) as f:
        return f.read()


EX_TEXT = _text(EXAMPLE)
EX = load_card(EX_TEXT, EXAMPLE)


def _plan(card, hosts):
    return plan(card, normalize_placement([(h, {"address": a, "recipes": r}) for h, a, r in hosts]))


@pytest.fixture(scope="module")
def split():
    """Every PD / EPD role on its own host, so every peer is remote."""
    return _plan(EX, [("p", "10.0.0.1", ["sglang-prefill"]), ("d", "10.0.0.2", ["sglang-decode"]),
                      ("r", "10.0.0.3", ["sglang-router"]), ("e", "10.0.0.4", ["sglang-encoder"]),
                      ("l", "10.0.0.5", ["sglang-language"]), ("v", "10.0.0.6", ["vllm-aggregated"])])


# -- host_needs: peers and images -------------------------------------------------------------------
def test_router_must_reach_prefill_server_and_bootstrap_and_decode(split):
    peers = host_needs(EX, split["hosts"]["r"], split)["peers"]
    assert [(p["address"], p["port"]) for p in peers] == [("10.0.0.1", 31000), ("10.0.0.1", 8998),
                                                          ("10.0.0.2", 32000)]
    assert peers[1]["why"] == "sglang-router -> sglang-prefill bootstrap port"
    # the same host:ports the planner wrote into the router's final argv
    a = Argv(split["hosts"]["r"]["instances"][0]["argv"])
    in_argv = {"%s:%d" % (p["address"], p["port"]) for p in peers if "bootstrap" not in p["why"]}
    assert in_argv == {u.split("//")[1] for u in a.values("--prefill") + a.values("--decode") if "//" in u}


def test_decode_must_reach_the_prefill_bootstrap_port(split):
    assert host_needs(EX, split["hosts"]["d"], split)["peers"] == [
        {"address": "10.0.0.1", "port": 8998, "why": "sglang-decode -> sglang-prefill bootstrap port"}]


def test_language_must_reach_each_encoder(split):
    assert host_needs(EX, split["hosts"]["l"], split)["peers"] == [
        {"address": "10.0.0.4", "port": 30001, "why": "sglang-language -> sglang-encoder port"}]


@pytest.mark.parametrize("host", ["p", "e", "v"])
def test_servers_that_only_listen_need_no_peers(split, host):
    assert host_needs(EX, split["hosts"][host], split)["peers"] == []


def test_peers_on_the_same_host_are_not_probed():
    p = _plan(EX, [("pd", "10.0.0.4", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    assert host_needs(EX, p["hosts"]["pd"], p)["peers"] == []


def test_without_the_plan_there_are_no_peers(split):
    assert host_needs(EX, split["hosts"]["r"])["peers"] == []


def test_worker_urls_router_must_reach_every_aggregated_worker():
    doc = json.loads(EX_TEXT)
    doc["envs"][6]["argv"] = ["python", "-m", "sglang_router.launch_router", "--worker-urls",
                              "http://127.0.0.1:30000", "--host", "0.0.0.0", "--port", "8080"]
    card = load_card(json.dumps(doc), "variant")
    p = _plan(card, [("c1", "10.9.1.1", ["sglang-aggregated"]), ("c2", "10.9.1.2", ["sglang-aggregated"]),
                     ("r", "10.9.1.3", ["sglang-router"])])
    assert [(x["address"], x["port"], x["why"]) for x in host_needs(card, p["hosts"]["r"], p)["peers"]] == [
        ("10.9.1.1", 30000, "sglang-router -> sglang-aggregated port"),
        ("10.9.1.2", 30000, "sglang-router -> sglang-aggregated port")]


def test_images_are_the_distinct_images_placed(split):
    p = _plan(EX, [("el", "10.0.0.2", ["sglang-encoder", "sglang-language"])])
    assert host_needs(EX, p["hosts"]["el"])["images"] == ["lmsysorg/sglang:latest"]
    assert host_needs(EX, split["hosts"]["v"])["images"] == ["vllm/vllm-openai:nightly"]


# -- probe: the reachability classifier ------------------------------------------------------------
def test_probe_a_closed_loopback_port_is_refused_and_reachable():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # bound then closed: nothing listens, the kernel answers RST
    res = probe("127.0.0.1", port, 2)
    assert (res["state"], res["reachable"]) == ("refused", True), res


def test_probe_a_listening_loopback_port_is_open_and_reachable():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        res = probe("127.0.0.1", s.getsockname()[1], 2)
    finally:
        s.close()
    assert (res["state"], res["reachable"]) == ("open", True), res


def _raise(exc):
    def connect(address, port, timeout):
        raise exc
    return connect


@pytest.mark.parametrize("exc,state", [
    (socket.timeout("timed out"), "timeout"),
    (OSError(errno.ETIMEDOUT, "Connection timed out"), "timeout"),
    (OSError(errno.EHOSTUNREACH, "No route to host"), "unreachable"),
    (OSError(errno.ENETUNREACH, "Network is unreachable"), "unreachable"),
    (socket.gaierror(-2, "Name or service not known"), "unresolved"),
    (OSError(errno.EACCES, "Permission denied"), "error"),
    (ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), "refused"),
])
def test_probe_classifies_failures(exc, state):
    res = probe("10.0.0.9", 8998, 0.5, connect=_raise(exc))
    assert res["state"] == state and res["reachable"] is (state == "refused"), res
    assert res["detail"]


def test_probe_all_runs_in_parallel_and_keeps_the_order():
    seen = []

    def connect(address, port, timeout):
        seen.append((address, port, timeout))
        if port == 2:
            raise socket.timeout("timed out")

    peers = [{"address": "10.0.0.%d" % i, "port": i, "why": "x"} for i in range(1, 6)]
    res = probe_all(peers, 0.25, connect=connect)
    assert [(r["address"], r["port"], r["state"]) for r in res] == [
        ("10.0.0.1", 1, "open"), ("10.0.0.2", 2, "timeout"), ("10.0.0.3", 3, "open"), ("10.0.0.4", 4, "open"),
        ("10.0.0.5", 5, "open")]
    assert sorted(seen) == [("10.0.0.%d" % i, i, 0.25) for i in range(1, 6)]
    assert probe_all([], 1) == []


# -- evaluate ---------------------------------------------------------------------------------------
PEERS = [{"address": "10.0.0.1", "port": 31000, "why": "sglang-router -> sglang-prefill port"},
         {"address": "10.0.0.1", "port": 8998, "why": "sglang-router -> sglang-prefill bootstrap port"}]
NEEDS = {"disk_bytes": None, "gpus": 2, "validated_models": [], "weights_per_gpu_mib": None, "ports": [],
         "images": ["lmsysorg/sglang:latest"], "peers": PEERS}


def _probes(*states):
    return [{"address": p["address"], "port": p["port"], "state": s, "reachable": s in ("open", "refused"),
             "detail": ""} for p, s in zip(PEERS, states)]


def _facts(**over):
    facts = {"os": {"id": "debian", "version_id": "12"}, "accelerators": {}, "listening": {},
             "peers": _probes("refused", "open"),
             "shm": {"path": "/dev/shm", "size_bytes": 64 * 2 ** 20},
             "image_disk": {"path": "/var/lib/docker", "data_root": "/var/lib/docker", "free_bytes": 100 * GIB}}
    facts.update(over)
    return facts


def _one(results, check):
    hits = [r for r in results if r["check"] == check]
    assert len(hits) <= 1
    return hits[0] if hits else None


def test_new_checks_are_switchable_checks():
    assert {"peers", "shm", "image_disk"} <= set(CHECKS)
    opts = {"host_ipc": False, "runtime": "docker",
            "checks": {"peers": False, "shm": False, "image_disk": False}}
    bad = _facts(peers=_probes("timeout", "unreachable"), image_disk={"path": "/", "free_bytes": 0})
    res = evaluate(bad, NEEDS, opts)
    assert not {"peers", "shm", "image_disk"} & {r["check"] for r in res}


def test_peers_pass_when_refused_or_open():
    r = _one(evaluate(_facts(), NEEDS), "peers")
    assert r["ok"] and r["severity"] == "ok", r
    assert r["need"] == "TCP from here to 10.0.0.1:31000, 10.0.0.1:8998"
    assert r["found"] == "reachable: 1 listening, 1 refused (host up, port not listening yet)"


def test_peers_fail_on_timeout_unreachable_or_unprobed():
    res = evaluate(_facts(peers=_probes("timeout")), NEEDS)
    r = _one(res, "peers")
    assert not r["ok"] and r["severity"] == "error"
    assert r["found"] == ("blocked: 10.0.0.1:31000 timeout (sglang-router -> sglang-prefill port), "
                          "10.0.0.1:8998 not probed (sglang-router -> sglang-prefill bootstrap port)")
    assert "firewall" in r["message"]
    assert "peers" in [x["check"] for x in failed(res)]
    r = _one(evaluate(_facts(peers=_probes("refused", "unreachable")), NEEDS), "peers")
    assert not r["ok"] and "8998 unreachable" in r["found"]


def test_peers_check_only_with_peers():
    assert _one(evaluate(_facts(), dict(NEEDS, peers=[])), "peers") is None


def test_shm_is_not_checked_with_host_ipc():
    # 64 MB would fail, but with --ipc host /dev/shm is the host's: no row
    assert _one(evaluate(_facts(), NEEDS), "shm") is None
    assert _one(evaluate(_facts(), NEEDS, {"host_ipc": True}), "shm") is None


def test_shm_fails_below_the_floor_without_host_ipc():
    r = _one(evaluate(_facts(), NEEDS, {"host_ipc": False}), "shm")
    assert not r["ok"] and r["severity"] == "error"
    assert r["need"] == "1.0 GiB on /dev/shm (container without host IPC)" and DEFAULT_SHM_MIN_BYTES == GIB
    assert r["found"] == "0.1 GiB on /dev/shm"
    assert "--ipc host" in r["message"]


def test_shm_passes_at_the_floor_and_honours_the_option():
    big = _facts(shm={"path": "/dev/shm", "size_bytes": 16 * GIB})
    assert _one(evaluate(big, NEEDS, {"host_ipc": False}), "shm")["ok"]
    r = _one(evaluate(big, NEEDS, {"host_ipc": False, "shm_min_bytes": 32 * GIB}), "shm")
    assert not r["ok"] and r["need"].startswith("32.0 GiB")
    r = _one(evaluate(_facts(shm=None), NEEDS, {"host_ipc": False}), "shm")
    assert not r["ok"] and r["found"] == "no /dev/shm"


def test_shm_only_for_gpu_hosts():
    assert _one(evaluate(_facts(), dict(NEEDS, gpus=0), {"host_ipc": False}), "shm") is None


@pytest.mark.parametrize("runtime", ["docker", "podman"])
def test_image_disk_passes_with_room_for_each_image(runtime):
    r = _one(evaluate(_facts(), NEEDS, {"runtime": runtime}), "image_disk")
    assert r["ok"], r
    assert r["need"] == "30.0 GiB free on /var/lib/docker (1 image(s) of unknown size to pull x 30.0 GiB, an estimate)"
    assert r["found"] == "100.0 GiB free"
    assert DEFAULT_IMAGE_ALLOWANCE_BYTES == 30 * GIB


def test_image_disk_fails_per_distinct_image():
    needs = dict(NEEDS, images=["a", "b", "c", "d"])
    r = _one(evaluate(_facts(), needs, {"runtime": "podman"}), "image_disk")
    assert not r["ok"] and r["severity"] == "error"
    assert r["need"].startswith("120.0 GiB free on /var/lib/docker (4 image(s)")
    r = _one(evaluate(_facts(), NEEDS, {"runtime": "docker", "image_allowance_bytes": 200 * GIB}), "image_disk")
    assert not r["ok"] and "not enough" in r["message"]
    r = _one(evaluate(_facts(image_disk=None), NEEDS, {"runtime": "docker"}), "image_disk")
    assert not r["ok"] and r["found"] == "unknown free"


def test_image_disk_asks_for_the_real_compressed_size_times_the_unpack_factor():
    needs = dict(NEEDS, images=["a:1", "b:1"])
    sizes = {"a:1": 1 * GIB, "b:1": 1 * GIB // 5, "c:1": 500 * GIB}  # c is placed elsewhere: not counted
    disk = {"path": "/var/lib/containers", "free_bytes": 4 * GIB}
    r = _one(evaluate(_facts(image_disk=disk), needs, {"runtime": "podman", "image_sizes": sizes,
                                                       "image_unpack_factor": 2.5}), "image_disk")
    assert r["ok"] and r["need"] == "3.0 GiB free on /var/lib/containers (2 image(s) to pull: 1.2 GiB compressed x 2.5 = 3.0 GiB)"
    # the factor decides: x 4 needs 4.8 GiB, more than the 4 GiB free
    r = _one(evaluate(_facts(image_disk=disk), needs, {"runtime": "podman", "image_sizes": sizes,
                                                       "image_unpack_factor": 4}), "image_disk")
    assert not r["ok"] and "1.2 GiB compressed x 4 = 4.8 GiB" in r["need"] and r["found"] == "4.0 GiB free"
    # an image in the store is not counted; one of unknown size gets the flat allowance
    r = _one(evaluate(_facts(image_disk=dict(disk, in_place=["a:1"], free_bytes=40 * GIB)), dict(needs, images=["a:1", "b:1", "x:1"]),
                      {"runtime": "podman", "image_sizes": sizes}), "image_disk")
    assert DEFAULT_IMAGE_UNPACK_FACTOR == 4  # the default
    assert r["ok"] and r["need"] == ("30.8 GiB free on /var/lib/containers (1 image(s) to pull: 204.8 MiB compressed x 4 = "
                                     "819.2 MiB; 1 image(s) of unknown size to pull x 30.0 GiB, an estimate)")
    # a small image fails for its real size on a small disk, in MiB
    small = {"path": "/var/lib/containers", "free_bytes": 64 * MIB}
    r = _one(evaluate(_facts(image_disk=small), dict(needs, images=["a:1"]),
                      {"runtime": "podman", "image_sizes": {"a:1": 40 * MIB}}), "image_disk")
    assert not r["ok"] and r["need"] == "160.0 MiB free on /var/lib/containers (1 image(s) to pull: 40.0 MiB compressed x 4 = 160.0 MiB)"
    assert r["found"] == "64.0 MiB free"
    # sizes that are not byte counts count as unknown
    r = _one(evaluate(_facts(image_disk=small), dict(needs, images=["a:1"]),
                      {"runtime": "podman", "image_sizes": {"a:1": True}}), "image_disk")
    assert "unknown size" in r["need"]


@pytest.mark.parametrize("runtime", ["native", None])
def test_image_disk_skipped_without_a_container_engine(runtime):
    assert _one(evaluate(_facts(image_disk={"free_bytes": 0}), NEEDS, {"runtime": runtime}), "image_disk") is None


def test_image_data_root():
    assert image_data_root("docker") == "/var/lib/docker"
    assert image_data_root("podman") == "/var/lib/containers"
    assert image_data_root("native") is None
    assert image_data_root("docker", '{"data-root": "/data/docker"}') == "/data/docker"
    assert image_data_root("docker", "not json") == "/var/lib/docker"
    conf = '[storage]\ndriver = "overlay"\n# graphroot = "/nope"\ngraphroot = "/srv/containers/storage"\n'
    assert image_data_root("podman", None, conf) == "/srv/containers/storage"
    assert image_data_root("podman", None, "[storage.options]\ngraphroot = '/x'\n") == "/var/lib/containers"


def test_the_filter_takes_the_plan_optionally(split):
    from ansible_collections.launchcard.inference.plugins.plugin_utils._preflight_steps import host_needs as preflight_needs

    assert preflight_needs(EX, split["hosts"]["d"])["peers"] == []
    assert [p["port"] for p in preflight_needs(EX, split["hosts"]["d"], split)["peers"]] == [8998]


def test_a_router_only_host_needs_no_weights_disk():
    the_plan = plan(EX, normalize_placement([("p", {"address": "10.0.0.1", "recipes": ["sglang-prefill"]}),
                                             ("d", {"address": "10.0.0.2", "recipes": ["sglang-decode"]}),
                                             ("r", {"address": "10.0.0.3", "recipes": ["sglang-router"]})]))
    assert host_needs(EX, the_plan["hosts"]["r"], the_plan)["disk_bytes"] is None
    assert host_needs(EX, the_plan["hosts"]["p"], the_plan)["disk_bytes"] == 417 * GIB


@pytest.mark.parametrize("os_id", ["rhel", "rocky", "almalinux"])
def test_docker_on_the_rhel_family_needs_docker_from_dockers_repository(os_id):
    rhel = {"id": os_id, "version_id": "9.4"}
    r = _one(evaluate(_facts(os=rhel, engines={"docker": None}), NEEDS, {"runtime": "docker"}), "container_engine")
    assert not r["ok"] and r["severity"] == "error" and r["found"] == "no docker"
    assert "docker-ce" in r["message"] and "launchcard_runtime: podman" in r["message"]
    r = _one(evaluate(_facts(os=rhel, engines={"docker": "/usr/bin/docker"}), NEEDS, {"runtime": "docker"}),
             "container_engine")
    assert r["ok"] and r["found"] == "/usr/bin/docker"
    # podman comes from the OS; the native runtime needs no engine
    for runtime in ("podman", "native"):
        assert _one(evaluate(_facts(os=rhel, engines={"docker": None}), NEEDS, {"runtime": runtime}),
                    "container_engine") is None


def test_docker_where_the_os_ships_it_is_not_a_row():
    for os_release in ({"id": "debian", "version_id": "12"}, {"id": "ubuntu", "version_id": "24.04"}):
        assert _one(evaluate(_facts(os=os_release, engines={"docker": None}), NEEDS, {"runtime": "docker"}),
                    "container_engine") is None


D1, D2 = "sha256:" + "1" * 64, "sha256:" + "2" * 64


def test_image_disk_asks_no_room_for_the_images_the_engine_holds_at_the_recorded_digest():
    needs = dict(NEEDS, images=["lmsysorg/sglang:latest", "vllm/vllm-openai:v0.11.0"])
    tight = {"path": "/var/lib/containers", "free_bytes": 40 * GIB, "in_place": ["lmsysorg/sglang:latest"]}
    r = _one(evaluate(_facts(image_disk=tight), needs, {"runtime": "podman"}), "image_disk")
    want = "30.0 GiB free on /var/lib/containers (1 image(s) of unknown size to pull x 30.0 GiB, an estimate)"
    assert r["ok"] and r["need"] == want
    full = dict(tight, free_bytes=1 * GIB, in_place=needs["images"])
    r = _one(evaluate(_facts(image_disk=full), needs, {"runtime": "podman"}), "image_disk")
    assert r["ok"] and r["message"] == "the images are in place (the digests the host runs)"
    r = _one(evaluate(_facts(image_disk=dict(full, in_place=[])), needs, {"runtime": "podman"}), "image_disk")
    assert not r["ok"] and "(2 image(s) of unknown size to pull" in r["need"]


def test_images_in_place_need_the_recorded_digest_in_the_store():
    recorded = {"lmsysorg/sglang:latest": "docker.io/lmsysorg/sglang@" + D1,
                "vllm/vllm-openai:nightly": "docker.io/vllm/vllm-openai@" + D2}
    assert images_in_place(recorded, {D1}) == ["lmsysorg/sglang:latest"]
    assert images_in_place(recorded, set()) == []
    assert images_in_place({}, {D1}) == []


def test_only_an_image_this_host_runs_can_be_missing_from_its_store():
    """The record names every image of the fleet: an SGLang host lacks the vLLM image by design, and counting it
    would clear recorded_runtime_setup, so every no-op deploy ran the runtime role there again."""
    recorded = {"lmsysorg/sglang:latest": "docker.io/lmsysorg/sglang@" + D1,
                "vllm/vllm-openai:nightly": "docker.io/vllm/vllm-openai@" + D2}
    in_place = images_in_place(recorded, {D1})
    assert images_missing(recorded, in_place, ["lmsysorg/sglang:latest"]) == []
    assert images_missing(recorded, in_place, ["lmsysorg/sglang:latest", "vllm/vllm-openai:nightly"]) == [
        "vllm/vllm-openai:nightly"]
    assert images_missing(recorded, [], ["lmsysorg/sglang:latest"]) == ["lmsysorg/sglang:latest"]
    assert images_missing({}, [], ["lmsysorg/sglang:latest"]) == []
