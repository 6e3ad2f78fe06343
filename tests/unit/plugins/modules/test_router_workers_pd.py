"""The PD router's worker API (issue 26, items 1 and 2), driven by the collection's router_workers helpers (test code).

The REAL sglang-router 0.3.2 of the project's virtualenv runs in PD mode (``--pd-disaggregation``, no
``--mini-lb``) on loopback in front of stand-in SGLang prefill and decode servers (tests/sandbox/standin_engine),
as a surge does it: a second pair joins (a prefill with its bootstrap port, a decode), the first pair leaves, and
completions go through the second. Everything runs on 127.0.0.1; each process is stopped by its handle.
"""

import importlib.util
import json
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "sandbox"))
from test_standin_engine import Procs, free_port, http, wait_port  # noqa: E402

from ansible_collections.launchcard.inference.plugins.module_utils import _router  # noqa: E402
from ansible_collections.launchcard.inference.plugins.modules import router_workers  # noqa: E402

MODEL = "org/model"


def request(url, method="GET", payload=None, timeout=10.0):
    return router_workers.request(url, method=method, payload=payload, timeout=timeout)


@pytest.fixture
def procs():
    started = Procs()
    yield started
    started.stop()


def _pair(procs):
    prefill, decode, boot = free_port(), free_port(), free_port()
    common = ["serve", "--model-path", MODEL, "--tp-size", "2", "--host", "127.0.0.1",
              "--disaggregation-transfer-backend", "nixl"]
    p1 = procs.engine("sglang", *common, "--port", str(prefill), "--disaggregation-mode", "prefill",
                      "--disaggregation-bootstrap-port", str(boot))
    p2 = procs.engine("sglang", *common, "--port", str(decode), "--disaggregation-mode", "decode",
                      env={"LAUNCHCARD_STANDIN_KV_TIMEOUT_S": "1"})
    for port, proc in ((prefill, p1), (decode, p2), (boot, p1)):
        wait_port(port, proc=proc)
    return "http://127.0.0.1:%d" % prefill, "http://127.0.0.1:%d" % decode, boot


def test_a_pd_router_takes_a_second_pair_in_and_the_first_out(procs):
    if importlib.util.find_spec("sglang_router") is None:
        pytest.skip("sglang_router is not installed")
    (p1, d1, b1), (p2, d2, b2) = _pair(procs), _pair(procs)
    port = free_port()
    proc = procs.start([sys.executable, "-m", "sglang_router.launch_router", "--pd-disaggregation",
                        "--prefill", p1, str(b1), "--decode", d1, "--host", "127.0.0.1", "--port", str(port),
                        "--prometheus-port", str(free_port())])
    wait_port(port, timeout=90, proc=proc)  # a loaded machine starts the router slowly
    api = "http://127.0.0.1:%d" % port
    deadline = time.time() + 30
    while set(_router.read(api, request)[0]) != {p1, d1} and time.time() < deadline:
        time.sleep(0.3)
    # the twin pair in: the prefill names its bootstrap port, the decode none
    out = _router.converge(api, [], [p2], request, timeout=30, interval=0.2, worker_type="prefill", bootstrap_port=b2)
    assert out["added"] == [p2] and out["api"] == "uuid"
    out = _router.converge(api, [], [d2], request, timeout=30, interval=0.2, worker_type="decode")
    assert out["workers"] == sorted([p1, d1, p2, d2])
    listed = json.loads(http("GET", api + "/workers")[1])["workers"]
    assert dict((w["url"], (w["worker_type"], w.get("bootstrap_port"))) for w in listed) == {
        p1: ("prefill", b1), d1: ("decode", None), p2: ("prefill", b2), d2: ("decode", None)}
    # the first pair out: every completion goes through the second
    out = _router.converge(api, [p1, d1], [], request, timeout=30, interval=0.2)
    assert out["removed"] == [p1, d1] and out["workers"] == sorted([p2, d2])
    for dummy in range(3):
        status, body = http("POST", api + "/v1/completions", {"model": MODEL, "prompt": "hi", "max_tokens": 1})
        assert status == 200, body
        text = json.loads(body)["choices"][0]["text"]
        assert "prefill=" in text and text.split("prefill=")[1].split()[0].endswith(":" + p2.rsplit(":", 1)[1])
        assert "port=" + d2.rsplit(":", 1)[1] in text


def _decode(procs, port):
    proc = procs.engine("sglang", "serve", "--model-path", MODEL, "--tp-size", "2", "--host", "127.0.0.1",
                        "--disaggregation-transfer-backend", "nixl", "--port", str(port), "--disaggregation-mode",
                        "decode", env={"LAUNCHCARD_STANDIN_KV_TIMEOUT_S": "1"})
    wait_port(port, proc=proc)
    return proc


def test_a_decode_restarts_beside_its_twin_under_load_and_no_request_fails(procs):
    """The surge's router steps (playbooks/tasks/upgrade-batch-hosts.yml) for the decode of a single-host PD pair,
    behind the real PD router without retries, under a steady client: twin in, decode out, decode stopped and
    started again, decode back, twin out. Not one completion fails, and the twin served some meanwhile."""
    if importlib.util.find_spec("sglang_router") is None:
        pytest.skip("sglang_router is not installed")
    prefill, boot = free_port(), free_port()
    wait_port(boot, proc=procs.engine(
        "sglang", "serve", "--model-path", MODEL, "--tp-size", "2", "--host", "127.0.0.1",
        "--disaggregation-transfer-backend", "nixl", "--port", str(prefill), "--disaggregation-mode", "prefill",
        "--disaggregation-bootstrap-port", str(boot)))
    d_port, t_port = free_port(), free_port()
    old = _decode(procs, d_port)
    decode, twin = "http://127.0.0.1:%d" % d_port, "http://127.0.0.1:%d" % t_port
    port = free_port()
    proc = procs.start([sys.executable, "-m", "sglang_router.launch_router", "--pd-disaggregation",
                        "--prefill", "http://127.0.0.1:%d" % prefill, str(boot), "--decode", decode,
                        "--host", "127.0.0.1", "--port", str(port), "--prometheus-port", str(free_port()),
                        "--disable-retries"])
    wait_port(port, timeout=90, proc=proc)  # a loaded machine starts the router slowly
    api = "http://127.0.0.1:%d" % port
    deadline = time.time() + 30
    while len(_router.read(api, request)[0]) < 2 and time.time() < deadline:
        time.sleep(0.3)
    results, stop = [], threading.Event()

    def client():
        while not stop.is_set():
            status, body = http("POST", api + "/v1/completions", {"model": MODEL, "prompt": "hi", "max_tokens": 1})
            results.append((status, body if status != 200 else json.loads(body)["choices"][0]["text"]))
    thread = threading.Thread(target=client)
    thread.start()
    try:
        time.sleep(1)
        _decode(procs, t_port)
        _router.converge(api, [], [twin], request, timeout=30, interval=0.2, worker_type="decode")
        _router.converge(api, [decode], [], request, timeout=30, interval=0.2)
        time.sleep(1)  # what the old decode runs finishes (the batch's engine_drain)
        old.send_signal(signal.SIGINT)
        old.wait(timeout=20)
        _decode(procs, d_port)
        _router.converge(api, [], [decode], request, timeout=30, interval=0.2, worker_type="decode")
        _router.converge(api, [twin], [], request, timeout=30, interval=0.2)
        time.sleep(1)
    finally:
        stop.set()
        thread.join(timeout=30)
    failed = [r for r in results if r[0] != 200]
    by_twin = [r for r in results if r[0] == 200 and "port=%d" % t_port in r[1]]
    print("surge under load: %d completions, %d failed, %d through the twin" % (len(results), len(failed),
                                                                                len(by_twin)))
    assert len(results) > 20 and failed == [] and by_twin


def test_the_payload_names_a_pd_workers_kind():
    assert _router.payload("http://a:1") == {"url": "http://a:1"}
    assert _router.payload("http://a:1", "prefill", "8998") == {
        "url": "http://a:1", "worker_type": "prefill", "bootstrap_port": 8998}
    assert _router.payload("http://a:1", "decode", 8998) == {"url": "http://a:1", "worker_type": "decode"}
    with pytest.raises(ValueError, match="worker_type must be"):
        _router.payload("http://a:1", "encode")
