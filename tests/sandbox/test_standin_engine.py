"""Tests for the stand-in engine (TEST CODE for the launchcard sandbox).

The PD tests put the REAL sglang-router (mini load balancer and the Rust
router) in front of a stand-in prefill and decode on loopback ports and check
that one completion provably went through both. Everything runs on 127.0.0.1.
"""

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent / "standin_engine" / "src"
HOSTNAME = socket.gethostname()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 20.0, proc=None) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"process exited with {proc.returncode} before opening port {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"port {port} did not open in {timeout}s")


def http(method: str, url: str, body=None, timeout: float = 15.0):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class Procs:
    def __init__(self):
        self.procs = []

    def start(self, argv, env=None):
        full_env = dict(os.environ, PYTHONPATH=str(SRC), **(env or {}))
        proc = subprocess.Popen(argv, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.procs.append(proc)
        return proc

    def engine(self, engine, *args, env=None):
        return self.start([sys.executable, "-m", "launchcard_standin_engine", engine, *args], env=env)

    def stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stderr:
                proc.stderr.close()


@pytest.fixture
def procs():
    p = Procs()
    yield p
    p.stop()


@pytest.fixture
def pd_pair(procs):
    prefill, decode, boot = free_port(), free_port(), free_port()
    common = ["serve", "--model-path", "zai-org/GLM-5.3-Flash", "--tp-size", "2", "--host", "127.0.0.1",
              "--disaggregation-transfer-backend", "nixl", "--kv-cache-dtype", "bfloat16"]
    p1 = procs.engine("sglang", *common, "--port", str(prefill), "--disaggregation-mode", "prefill",
                      "--disaggregation-bootstrap-port", str(boot))
    p2 = procs.engine("sglang", *common, "--port", str(decode), "--base-gpu-id", "2",
                      "--disaggregation-mode", "decode", env={"LAUNCHCARD_STANDIN_KV_TIMEOUT_S": "1"})
    for port, proc in ((prefill, p1), (decode, p2), (boot, p1)):
        wait_port(port, proc=proc)
    return {"prefill": prefill, "decode": decode, "bootstrap": boot}


@pytest.mark.parametrize("mini_lb", [True, False], ids=["mini-lb", "rust-router"])
def test_pd_through_real_router(procs, pd_pair, mini_lb):
    if importlib.util.find_spec("sglang_router") is None:
        pytest.skip("sglang_router is not installed")
    router = free_port()
    argv = [sys.executable, "-m", "sglang_router.launch_router", "--pd-disaggregation",
            "--prefill", f"http://127.0.0.1:{pd_pair['prefill']}", str(pd_pair["bootstrap"]),
            "--decode", f"http://127.0.0.1:{pd_pair['decode']}", "--host", "127.0.0.1", "--port", str(router)]
    if mini_lb:
        argv.insert(4, "--mini-lb")
    else:
        argv += ["--prometheus-port", str(free_port())]
    proc = procs.start(argv)
    wait_port(router, timeout=30, proc=proc)
    deadline = time.time() + 20
    while True:  # the Rust router answers 503 until it has registered both workers
        status, body = http("POST", f"http://127.0.0.1:{router}/v1/completions",
                            {"model": "zai-org/GLM-5.3-Flash", "prompt": "Say hi", "max_tokens": 1})
        if status == 200 or time.time() > deadline:
            break
        time.sleep(0.3)
    assert status == 200, body
    answer = json.loads(body)
    text = answer["choices"][0]["text"]
    assert f"prefill={HOSTNAME}:{pd_pair['prefill']}" in text
    assert f"decode={HOSTNAME}:{pd_pair['decode']}" in text
    assert answer["launchcard_standin"]["role"] == "decode"

    status, body = http("POST", f"http://127.0.0.1:{router}/generate",
                        {"text": "Say hi", "sampling_params": {"max_new_tokens": 1}})
    assert status == 200, body
    assert f"prefill={HOSTNAME}:{pd_pair['prefill']}" in json.loads(body)["text"]

    status, body = http("POST", f"http://127.0.0.1:{router}/v1/chat/completions",
                        {"model": "zai-org/GLM-5.3-Flash", "messages": [{"role": "user", "content": "hi"}]})
    assert status == 200, body
    assert f"decode={HOSTNAME}:{pd_pair['decode']}" in json.loads(body)["choices"][0]["message"]["content"]


def test_pd_refuses_without_bootstrap_and_decode_fails_without_kv(pd_pair):
    status, body = http("POST", f"http://127.0.0.1:{pd_pair['prefill']}/v1/completions", {"prompt": "x"})
    assert status == 400 and "bootstrap" in body
    # decode pointed at a room the prefill never saw: the KV "transfer" fails with 500
    status, body = http("POST", f"http://127.0.0.1:{pd_pair['decode']}/v1/completions",
                        {"prompt": "x", "bootstrap_host": "127.0.0.1", "bootstrap_port": pd_pair["bootstrap"],
                         "bootstrap_room": 12345})
    assert status == 500
    assert "KV transfer failed" in json.loads(body)["message"]
    status, body = http("GET", f"http://127.0.0.1:{pd_pair['bootstrap']}/health")
    assert (status, body) == (200, "OK")


def test_sglang_endpoints(procs):
    port = free_port()
    proc = procs.engine("sglang", "serve", "--model-path", "org/model", "--served-model-name", "served",
                        "--tp-size", "4", "--port", str(port), "--host", "127.0.0.1", "--enable-metrics")
    wait_port(port, proc=proc)
    base = f"http://127.0.0.1:{port}"
    assert http("GET", f"{base}/health") == (200, "")
    assert http("GET", f"{base}/health_generate") == (200, "")
    models = json.loads(http("GET", f"{base}/v1/models")[1])
    assert models["object"] == "list"
    assert models["data"][0] == {**models["data"][0], "id": "served", "owned_by": "sglang", "root": "org/model"}
    info = json.loads(http("GET", f"{base}/get_server_info")[1])
    assert info["tp_size"] == 4 and info["port"] == port and info["disaggregation_mode"] == "null"
    assert json.loads(http("GET", f"{base}/get_model_info")[1])["model_path"] == "org/model"
    status, body = http("POST", f"{base}/generate", {"text": "hi"})
    assert status == 200 and f"port={port}" in json.loads(body)["text"]
    metrics = http("GET", f"{base}/metrics")[1]
    assert 'sglang:num_requests_total{model_name="served"} 1.0' in metrics
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0


def test_vllm_defaults_delay_and_sigterm(procs):
    port = free_port()
    proc = procs.engine("vllm", "serve", "zai-org/GLM-5.3-Flash", "--tokenizer-mode", "glm5_next",
                        "--tensor-parallel-size", "8", "--enable-auto-tool-choice", "--port", str(port),
                        "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}',
                        env={"LAUNCHCARD_STANDIN_STARTUP_DELAY_S": "1.5"})
    time.sleep(0.7)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    wait_port(port, proc=proc)
    base = f"http://127.0.0.1:{port}"
    assert http("GET", f"{base}/health") == (200, "")
    models = json.loads(http("GET", f"{base}/v1/models")[1])
    assert models["data"][0]["id"] == "zai-org/GLM-5.3-Flash" and models["data"][0]["owned_by"] == "vllm"
    assert "version" in json.loads(http("GET", f"{base}/version")[1])
    status, body = http("POST", f"{base}/v1/completions",
                        {"model": "zai-org/GLM-5.3-Flash", "prompt": "x", "max_tokens": 1})
    assert status == 200
    answer = json.loads(body)
    assert answer["object"] == "text_completion" and f"host={HOSTNAME} port={port}" in answer["choices"][0]["text"]
    assert http("POST", f"{base}/v1/completions", {"model": "other", "prompt": "x"})[0] == 404
    assert "vllm:request_success_total" in http("GET", f"{base}/metrics")[1]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0


def test_language_waits_for_encoder(procs):
    enc, lang = free_port(), free_port()
    lproc = procs.engine("sglang", "serve", "--model-path", "m", "--language-only", "--encoder-urls",
                         f"http://127.0.0.1:{enc}", "--host", "127.0.0.1", "--port", str(lang))
    wait_port(lang, proc=lproc)
    status, body = http("GET", f"http://127.0.0.1:{lang}/health")
    assert status == 503 and "encoder" in body
    eproc = procs.engine("sglang", "serve", "--model-path", "m", "--encoder-only", "--host", "127.0.0.1",
                         "--port", str(enc))
    wait_port(enc, proc=eproc)
    deadline = time.time() + 10
    while http("GET", f"http://127.0.0.1:{lang}/health")[0] != 200:
        assert time.time() < deadline, "language server never became healthy"
        time.sleep(0.2)
    status, body = http("POST", f"http://127.0.0.1:{lang}/v1/chat/completions",
                        {"messages": [{"role": "user", "content": "hi"}]})
    assert status == 200 and f"encoders=http://127.0.0.1:{enc}" in body


def test_cli_usage_errors():
    env = dict(os.environ, PYTHONPATH=str(SRC))
    res = subprocess.run([sys.executable, "-m", "launchcard_standin_engine", "sglang", "serve", "--port", "1"],
                         env=env, capture_output=True, text=True, timeout=20, check=False)
    assert res.returncode == 2 and "--model-path" in res.stderr
    res = subprocess.run([sys.executable, "-m", "launchcard_standin_engine", "vllm", "--version"],
                         env=env, capture_output=True, text=True, timeout=20, check=False)
    assert res.returncode == 0 and "stand-in" in res.stdout


def test_told_to_fail_health(procs):
    port = free_port()
    proc = procs.engine("sglang", "serve", "--model-path", "m", "--host", "127.0.0.1", "--port", str(port),
                        env={"LAUNCHCARD_STANDIN_FAIL_HEALTH": "1"})
    wait_port(port, proc=proc)
    status, body = http("GET", f"http://127.0.0.1:{port}/health")
    assert status == 503 and "LAUNCHCARD_STANDIN_FAIL_HEALTH" in body


def test_the_gate_waits_for_a_completion_while_health_is_already_200(procs):
    """Bug report case I (sglang #33719, vllm #15313): /health answers 200 while warm-up still blocks
    inference. The health gate's completion probe (plugins/module_utils/_health.py) must not pass on
    the 200 alone: it returns only once the held completion has answered."""
    spec = importlib.util.spec_from_file_location(
        "lc_health", Path(__file__).resolve().parents[2] / "plugins" / "module_utils" / "_health.py")
    health_mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(health_mod)  # pure standard library, no Ansible import
    wait_all = health_mod.wait_all
    port = free_port()
    hold = 3.0
    before = time.monotonic()  # the hold ends at least `hold` s after this
    proc = procs.engine("sglang", "serve", "--model-path", "zai-org/GLM-5.3-Flash", "--host", "127.0.0.1",
                        "--port", str(port), env={"LAUNCHCARD_STANDIN_HOLD_INFERENCE_S": str(hold)})
    wait_port(port, proc=proc)
    opened = time.monotonic()  # ... and at most `hold` s after this
    url = f"http://127.0.0.1:{port}/health"
    assert http("GET", url) == (200, "")
    # the trigger holds: health is green, a completion does not answer within a short wait
    with pytest.raises(OSError):
        http("POST", f"http://127.0.0.1:{port}/v1/completions",
             {"model": "zai-org/GLM-5.3-Flash", "prompt": "x", "max_tokens": 1}, timeout=0.5)
    # a health-only probe would have passed now; the completion probe waits for the real answer
    (health,) = wait_all([{"name": "h", "url": url, "probe": "health"}], timeout=30, request=http_contract,
                         interval=0.1)
    assert health["healthy"] is True and time.monotonic() - opened < hold, health
    (res,) = wait_all([{"name": "c", "url": url, "probe": "completion", "model": "zai-org/GLM-5.3-Flash"}],
                      timeout=60, request=http_contract, interval=0.1)
    assert res["healthy"] is True and res["detail"].startswith("health 200, completion "), res
    assert time.monotonic() - before >= hold, res  # it answered only once the hold was over


def http_contract(url, payload=None, timeout=10.0):
    """The health gate's request contract (_health.py) over this file's http helper."""
    return http("GET" if payload is None else "POST", url, payload, timeout=timeout)


# -- the model, resolved as the engines resolve it offline (bug-report case A) --------------------------
HUB_REPO, HUB_REV, HUB_REV2 = "launchcard-test/Resolve-Tiny", "a" * 40, "b" * 40


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory):
    """An HF_HOME whose cache holds two revisions of one repo, downloaded by commit hash from the sandbox hub with
    the real huggingface_hub, as the weights role stages them: snapshots/<sha>, no refs/main."""
    hf = pytest.importorskip("huggingface_hub")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from hub import server

    home = tmp_path_factory.mktemp("hf-home")
    # a plain hub (no Xet marks): the download goes over HTTP, as the weights role makes it (launchcard_hf_xet)
    srv = server.start(server.Hub(["%s@%s" % (HUB_REPO, HUB_REV), "%s@%s" % (HUB_REPO, HUB_REV2)], xet=False))
    try:
        url = "http://127.0.0.1:%d" % srv.server_address[1]
        for rev in (HUB_REV, HUB_REV2):
            hf.snapshot_download(HUB_REPO, revision=rev, endpoint=url, cache_dir=str(home / "hub"), token=False)
    finally:
        srv.shutdown()
        srv.server_close()
    repo_dir = home / "hub" / ("models--" + HUB_REPO.replace("/", "--"))
    assert not (repo_dir / "refs").exists()  # what makes an engine without --revision fail
    return home


def _offline(home):
    return {"HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}


def _run_to_exit(engine, *args, env):
    res = subprocess.run([sys.executable, "-m", "launchcard_standin_engine", engine, *args],
                         env=dict(os.environ, PYTHONPATH=str(SRC), **env), capture_output=True, text=True,
                         timeout=60, check=False)
    return res.returncode, res.stderr


@pytest.mark.parametrize("engine,model", [("vllm", ["serve", HUB_REPO]), ("sglang", ["serve", "--model-path", HUB_REPO])])
def test_offline_without_revision_exits_as_the_engines_do(hf_home, engine, model):
    rc, err = _run_to_exit(engine, *model, "--port", str(free_port()), env=_offline(hf_home))
    assert rc == 1 and "LocalEntryNotFoundError" in err, err


@pytest.mark.parametrize("engine,model,rev", [("vllm", ["serve", HUB_REPO], HUB_REV),
                                              ("sglang", ["serve", "--model-path", HUB_REPO], HUB_REV2)])
def test_offline_with_revision_serves_that_snapshot(procs, hf_home, engine, model, rev):
    port = free_port()
    proc = procs.engine(engine, *model, "--revision", rev, "--host", "127.0.0.1", "--port", str(port),
                        env=_offline(hf_home))
    wait_port(port, proc=proc)
    entry = json.loads(http("GET", f"http://127.0.0.1:{port}/v1/models")[1])["data"][0]
    assert entry["root"] == HUB_REPO  # vLLM reports its model argument
    snapshot = Path(entry["launchcard_standin"]["snapshot"])
    assert snapshot == hf_home / "hub" / ("models--" + HUB_REPO.replace("/", "--")) / "snapshots" / rev
    assert (snapshot / "config.json").is_file()


def test_offline_unknown_revision_and_vllm_tokenizer_without_its_revision_exit(hf_home):
    rc, err = _run_to_exit("sglang", "serve", "--model-path", HUB_REPO, "--revision", "c" * 40, env=_offline(hf_home))
    assert rc == 1 and "LocalEntryNotFoundError" in err, err
    # vLLM resolves an explicit --tokenizer with --tokenizer-revision, not --revision
    rc, err = _run_to_exit("vllm", "serve", HUB_REPO, "--revision", HUB_REV, "--tokenizer", HUB_REPO,
                           env=_offline(hf_home))
    assert rc == 1 and "LocalEntryNotFoundError" in err, err


def test_a_model_directory_is_served_as_it_is_offline(procs, hf_home, tmp_path):
    port = free_port()
    proc = procs.engine("vllm", "serve", str(tmp_path), "--host", "127.0.0.1", "--port", str(port),
                        env=_offline(hf_home))
    wait_port(port, proc=proc)
    entry = json.loads(http("GET", f"http://127.0.0.1:{port}/v1/models")[1])["data"][0]
    assert entry["launchcard_standin"]["snapshot"] == str(tmp_path)
