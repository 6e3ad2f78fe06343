"""Case N of ../shared/inputs/bug-reports.md (sglang PR #15540, sglang #3802): the router worker API of two
sglang-router generations, driven by the collection's router_workers module (test code).

The REAL sglang-router serves on loopback in front of two stand-in SGLang workers: the pinned 0.3.2 of the
project's virtualenv (workers keyed by UUID) and 0.2.4 (keyed by URL, before #15540). 0.2.4 is fetched once with
``pip download`` into the sandbox cache (as tests/sandbox/sandbox_fleet/wheelhouse.py caches its wheels) and its
pure files are put first on the router's ``PYTHONPATH``; its dependencies are the virtualenv's. Everything runs
on 127.0.0.1; each process is stopped by its handle.
"""

import importlib.util
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args

# the sandbox's cache and the stand-in engine's launcher (test code of tests/sandbox)
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "sandbox"))
from sandbox_fleet.base import CACHE_DIR, locked  # noqa: E402
from test_standin_engine import Procs, free_port, http, wait_port  # noqa: E402

from ansible_collections.launchcard.inference.plugins.module_utils import _router  # noqa: E402
from ansible_collections.launchcard.inference.plugins.modules import router_workers  # noqa: E402

OLD_ROUTER = "0.2.4"  # the last sglang-router release before sglang PR #15540 (0.3.0 lists UUIDs: measured)


def old_router_path():
    """A directory whose ``sglang_router`` is sglang-router 0.2.4, from its wheel cached under the sandbox cache."""
    root = CACHE_DIR / ("sglang-router-%s" % OLD_ROUTER)
    unpacked = root / "site"
    with locked(CACHE_DIR / ".lock"):
        if not (unpacked / "sglang_router").is_dir():
            wheels = root / "wheels"
            wheels.mkdir(parents=True, exist_ok=True)
            if not list(wheels.glob("sglang_router-%s-*.whl" % OLD_ROUTER)):
                res = subprocess.run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q",
                                      "--no-deps", "--only-binary=:all:", "-d", str(wheels),
                                      "sglang-router==%s" % OLD_ROUTER], capture_output=True, text=True, check=False)
                if res.returncode != 0:
                    pytest.skip("sglang-router %s cannot be had here: %s" % (OLD_ROUTER, res.stderr[-300:]))
            wheel = next(wheels.glob("sglang_router-%s-*.whl" % OLD_ROUTER))
            part = root / "site.part"
            with zipfile.ZipFile(wheel) as zf:
                zf.extractall(part)
            os.replace(part, unpacked)
    return str(unpacked)


@pytest.fixture
def procs():
    """The processes a test starts, stopped by their handles at its end (as tests/sandbox/test_standin_engine.py)."""
    started = Procs()
    yield started
    started.stop()


def request(url, method="GET", payload=None, timeout=10.0):
    return router_workers.request(url, method=method, payload=payload, timeout=timeout)


@pytest.fixture(params=["0.3.2", OLD_ROUTER])
def fleet(request, procs):
    """Two stand-in SGLang workers behind a real sglang-router of the parametrized release."""
    if importlib.util.find_spec("sglang_router") is None:
        pytest.skip("sglang_router is not installed")
    workers = []
    for dummy in range(2):
        port = free_port()
        proc = procs.engine("sglang", "serve", "--model-path", "org/model", "--port", str(port), "--host", "127.0.0.1")
        wait_port(port, proc=proc)
        workers.append("http://127.0.0.1:%d" % port)
    # sglang_router of 0.2.4 first on the path, its compiled router (abi3) included
    env = {"PYTHONPATH": old_router_path()} if request.param == OLD_ROUTER else {}
    port = free_port()
    argv = [sys.executable, "-m", "sglang_router.launch_router", "--worker-urls", *workers, "--host", "127.0.0.1",
            "--port", str(port), "--prometheus-port", str(free_port()),
            # check the workers every second (the defaults wait ~10 s before the first is listed as healthy)
            "--worker-startup-check-interval", "1", "--health-check-interval-secs", "1"]
    proc = subprocess.Popen(argv, env=dict(os.environ, **env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.procs.append(proc)
    wait_port(port, timeout=30, proc=proc)
    api = "http://127.0.0.1:%d" % port
    deadline = time.time() + 30
    while True:  # the router lists its workers once it has checked them
        status, body = http("GET", api + "/workers")
        listed = json.loads(body).get("workers", []) if status == 200 else []
        if len([w for w in listed if w.get("is_healthy")]) == 2 or time.time() > deadline:
            break
        time.sleep(0.3)
    return {"version": request.param, "api": api, "workers": workers}


def test_n_the_module_drives_both_router_worker_apis(fleet):
    """Case N (sglang PR #15540): ``DELETE /workers/{url}`` (URL-encoded) before it, ``DELETE /workers/{uuid}``
    after. The module reads which one from ``GET /workers`` and takes a worker out and puts it back on both."""
    api, (a, b) = fleet["api"], fleet["workers"]
    out = _router.converge(api, [a], [], request, timeout=30, interval=0.2)
    assert out["removed"] == [a] and out["workers"] == [b]
    assert out["api"] == ("url" if fleet["version"] == OLD_ROUTER else "uuid")
    out = _router.converge(api, [], [a], request, timeout=30, interval=0.2)
    assert out["added"] == [a] and out["workers"] == sorted([a, b])
    assert _router.read(api, request)[1] == out["api"]


def run_module(capsys, check_mode=False, **args):
    if check_mode:
        args["_ansible_check_mode"] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            router_workers.main()
    return info.value.code, json.loads(capsys.readouterr().out)


def test_n_probe_and_check_mode_refuse_a_router_without_the_worker_api(procs, capsys):
    """Case N: a router whose ``GET /workers`` is not the worker API (the real ``--mini-lb`` answers 404) was read in
    check mode as a router without workers, and the real run failed at the first batch after staging. Probe and
    check mode now fail naming the router and what it answered; a router that is not running is reported, not
    failed."""
    if importlib.util.find_spec("sglang_router") is None:
        pytest.skip("sglang_router is not installed")
    port, worker = free_port(), free_port()
    wait_port(worker, proc=procs.engine("sglang", "serve", "--model-path", "org/model", "--port", str(worker),
                                        "--host", "127.0.0.1"))
    proc = procs.start([sys.executable, "-m", "sglang_router.launch_router", "--pd-disaggregation", "--mini-lb",
                        "--prefill", "http://127.0.0.1:%d" % worker, "--decode", "http://127.0.0.1:%d" % worker,
                        "--host", "127.0.0.1", "--port", str(port)])
    wait_port(port, timeout=30, proc=proc)
    api = "http://127.0.0.1:%d" % port
    rc, out = run_module(capsys, check_mode=True, api=api, remove=["http://127.0.0.1:%d" % worker])
    assert rc == 1, out
    assert out["msg"].startswith("router %s: GET %s/workers answered 404" % (api, api))
    rc, out = run_module(capsys, api=api, probe=True)
    assert rc == 1 and "not the worker API of sglang-router 0.2 or 0.3" in out["msg"]
    closed = "http://127.0.0.1:%d" % free_port()
    rc, out = run_module(capsys, api=closed, probe=True)
    assert rc == 0 and out["answering"] is False and out["api"] is None


@pytest.mark.parametrize("body, message", [
    ('{"workers": [{"id": "w1", "url": "http://a:1"}]}', "neither its URL"),
    ('{"detail": "Not Found"}', "JSON without a workers list"),
    ("<html>", "not JSON"),
])
def test_n_a_workers_answer_the_module_cannot_read_is_an_error(body, message):
    """Case N: never read an answer the module does not know as "no workers"."""
    with pytest.raises(RuntimeError, match=message):
        _router.read("http://rt:9", lambda url, **kw: (200, body))


def test_n_ids_are_percent_encoded_in_the_path():
    """Case N: a URL-keyed worker (before sglang PR #15540) is deleted by its URL-encoded URL."""
    calls, gone = [], []

    def fake(url, method="GET", payload=None, timeout=10.0):
        calls.append((method, url))
        listed = [] if gone else [{"id": "http://h:1", "url": "http://h:1", "is_healthy": True}]
        if method == "DELETE":
            gone.append(url)
            return 202, "{}"
        return 200, json.dumps({"workers": listed})
    _router.converge("http://rt:9", ["http://h:1"], [], fake, sleep=lambda s: None)
    assert ("DELETE", "http://rt:9/workers/http%3A%2F%2Fh%3A1") in calls


def test_n_upgrade_probes_the_regular_mode_routers_only():
    """Case N: upgrade.yml probes each router whose workers its batches drive (regular mode), before staging."""
    from ansible_collections.launchcard.inference.plugins.plugin_utils._upgrade_fleet import routers as upgrade_routers

    def router(unit, *argv):
        return {"role": "router", "unit": unit, "argv": ["python", "-m", "sglang_router.launch_router"] + list(argv),
                "health_url": "http://127.0.0.1:30000/health"}
    plan = {"hosts": {
        "r1": {"instances": [router("a.service", "--worker-urls", "http://w:1"), {"role": "aggregated", "unit": "e"}]},
        "r2": {"instances": [router("b.service", "--pd-disaggregation", "--mini-lb", "--prefill", "http://p:1",
                                    "--decode", "http://d:1")]},
        "r3": {"instances": [router("c.service", "--mini-lb", "--worker-urls", "http://w:1")]}}}
    assert upgrade_routers(plan) == [{"host": "r1", "unit": "a.service", "api": "http://127.0.0.1:30000"}]
