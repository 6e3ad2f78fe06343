"""Tests for the stand-in engine (TEST CODE for the launchcard sandbox).

The PD tests put the REAL sglang-router (mini load balancer and the Rust
router) in front of a stand-in prefill and decode on loopback ports and check
that one completion provably went through both. Everything runs on 127.0.0.1.
"""

import contextlib
import importlib.util
import io
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
                proc.send_signal(signal.SIGINT)  # at once; SIGTERM makes an SGLang stand-in wait for its 5 s tick
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
    assert 'sglang:num_requests_total{engine_type="unified",is_streaming="false",model_name="served"} 1.0' in metrics
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


# --- SGLang held to its own parser and loader ------------------------------------------------------------------
sys.path.insert(0, str(SRC))
from launchcard_standin_engine import sglang_args  # noqa: E402  (the stand-in's source, as the procs run it)

EXAMPLE_CARD = Path(__file__).resolve().parents[2] / "cards" / "glm-5.3-flash.json"
SANDBOX = Path(__file__).resolve().parent


def _sglang_cli(*argv, env=None):
    full = dict(os.environ, PYTHONPATH=str(SRC), **(env or {}))
    return subprocess.run([sys.executable, "-m", "launchcard_standin_engine", "sglang", *argv], env=full,
                          capture_output=True, text=True, timeout=30, check=False)


def test_sglang_refuses_a_bad_flag_and_a_bad_choice_like_sglang():
    """Unknown flags and bad choices exit 2 with argparse's message under prog ``sglang serve``
    (sglang/srt/server_args.py prepare_server_args), before anything listens."""
    res = _sglang_cli("serve", "--model-path", "m", "--port", str(free_port()), "--no-such-flag")
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines()[0].startswith("usage: sglang serve [-h] --model-path MODEL_PATH")
    assert res.stderr.splitlines()[-1] == "sglang serve: error: unrecognized arguments: --no-such-flag"
    res = _sglang_cli("serve", "--model-path", "m", "--reasoning-parser", "glm47")
    assert res.returncode == 2
    assert res.stderr.splitlines()[-1].startswith(
        "sglang serve: error: argument --reasoning-parser: invalid choice: 'glm47' (choose from 'auto', ")
    res = _sglang_cli("serve", "--model-path", "m", "--tp-size", "two")
    assert (res.returncode, res.stderr.splitlines()[-1]) == (
        2, "sglang serve: error: argument --tp-size/--tensor-parallel-size: invalid int value: 'two'")
    res = _sglang_cli("--model-path", "m")  # sglang/cli/main.py: the subcommand is required
    assert res.returncode == 2 and "argument subcommand: invalid choice: 'm'" in res.stderr


def test_the_example_cards_sglang_recipes_parse():
    card = json.loads(EXAMPLE_CARD.read_text())
    commands = [e["command"] for e in card["envs"] if e["command"].startswith("sglang serve")]
    assert len(commands) == 5
    for command in commands:
        ns = sglang_args.parse(sglang_args.serve_argv(command.split()[2:]))
        assert ns.model_path == "zai-org/GLM-5.3-Flash"


def test_the_flag_table_is_the_pinned_sglang_parser():
    """The committed table is what the pinned sglang's own ServerArgs.add_cli_args gives (its environment built in
    the sandbox cache when missing: never skipped), and the rebuilt parser refuses with the real parser's message."""
    sys.path.insert(0, str(SANDBOX))
    from sandbox_fleet import sglang_env

    python = sglang_env.ensure_env()
    assert json.loads(sglang_env.generate_table(python)) == sglang_args.load_table()
    argvs = [["--model-path", "m", "--bogus"], ["--model", "m", "--disaggregation-mode", "both"],
             ["--model-path", "m", "--prefill", "1"], ["--port", "1"]]
    # one import of the real sglang for every argv: each parse's exit code and last line of stderr
    probe = ("import argparse, contextlib, io, json, sys\nfrom sglang.srt.server_args import ServerArgs\n"
             "out = []\nfor argv in json.loads(sys.argv[1]):\n"
             "    p = argparse.ArgumentParser(prog='sglang serve'); ServerArgs.add_cli_args(p); err = io.StringIO()\n"
             "    try:\n        with contextlib.redirect_stderr(err):\n            p.parse_args(argv)\n"
             "        out.append([0, ''])\n"
             "    except SystemExit as e:\n        out.append([e.code, err.getvalue().splitlines()[-1]])\n"
             "print(json.dumps(out))\n")
    real = subprocess.run([str(python), "-c", probe, json.dumps(argvs)], capture_output=True, text=True,
                          timeout=300, check=True)
    for argv, (code, last) in zip(argvs, json.loads(real.stdout.splitlines()[-1])):
        mine = sglang_args.make_parser()
        err = io.StringIO()
        with pytest.raises(SystemExit) as exc, contextlib.redirect_stderr(err):
            mine.parse_args(argv)
        assert (exc.value.code, err.getvalue().splitlines()[-1]) == (code, last) and code == 2


def _hf_cache(root: Path, repo: str, sha: str) -> Path:
    """A Hub cache as snapshot_download(revision=<sha>) leaves it: blobs and snapshots/<sha>, no refs/."""
    repo_dir = root / "hub" / ("models--" + repo.replace("/", "--"))
    snap = repo_dir / "snapshots" / sha
    snap.mkdir(parents=True)
    (snap / "config.json").write_text('{"model_type": "llama"}')
    return snap


def test_sglang_finds_the_staged_revision_offline_as_sglang_does(procs, tmp_path):
    """SGLang's loader: snapshot_download(repo, revision=--revision, local_files_only=HF_HUB_OFFLINE)
    (sglang/srt/model_loader/weight_utils.py). A cache staged by commit hash has no refs/main: without
    --revision the engine does not start; with it, it serves that snapshot."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    snap = _hf_cache(tmp_path, "org/model", sha)
    env = {"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    res = _sglang_cli("serve", "--model-path", "org/model", "--port", str(free_port()), env=env)
    assert res.returncode == 1 and "LocalEntryNotFoundError" in res.stderr, res.stderr
    port = free_port()
    proc = procs.engine("sglang", "serve", "--model-path", "org/model", "--revision", sha, "--host", "127.0.0.1",
                        "--port", str(port), env=env)
    wait_port(port, proc=proc)
    info = json.loads(http("GET", f"http://127.0.0.1:{port}/get_server_info")[1])
    assert info["revision"] == sha and info["launchcard_standin"]["snapshot"] == str(snap)
    entry = json.loads(http("GET", f"http://127.0.0.1:{port}/v1/models")[1])["data"][0]
    assert entry["launchcard_standin"]["snapshot"] == str(snap) and entry["root"] == "org/model"


def test_sglang_sigterm_drains_in_flight_requests(procs):
    """SGLang on SIGTERM (tokenizer_manager.py sigterm_handler/sigterm_watchdog): /health turns 503, the
    request in flight is answered, then the server exits 0. The decode's KV wait holds a request in flight."""
    port, dead = free_port(), free_port()
    proc = procs.engine("sglang", "serve", "--model-path", "m", "--host", "127.0.0.1", "--port", str(port),
                        "--disaggregation-mode", "decode", env={"LAUNCHCARD_STANDIN_KV_TIMEOUT_S": "6"})
    wait_port(port, proc=proc)
    answer = {}

    def request():
        answer["res"] = http("POST", f"http://127.0.0.1:{port}/generate",
                             {"text": "x", "bootstrap_host": "127.0.0.1", "bootstrap_port": dead,
                              "bootstrap_room": 7}, timeout=30)

    import threading
    worker = threading.Thread(target=request)
    worker.start()
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    status, body = http("GET", f"http://127.0.0.1:{port}/health")
    assert status == 503 and "draining" in body
    worker.join(timeout=30)
    status, body = answer["res"]
    assert status == 500 and "KV transfer failed" in body  # the request's own answer, not a dropped connection
    assert proc.wait(timeout=20) == 0


# -- SIGTERM and in-flight requests, as vLLM 0.32 and SGLang 0.5.23 do them (bug-report case J) ---------------------
ROOT = Path(__file__).resolve().parents[2]


class Stream:
    """A streaming completion read from a raw socket, event by event, so that a stream that hangs or is cut is seen
    as such (each chunk of the stand-in's chunked body is one ``data: ...`` event)."""

    def __init__(self, port, max_tokens, path="/v1/completions"):
        body = json.dumps({"prompt": "p", "max_tokens": max_tokens, "stream": True}).encode()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body))
        self.tokens, self.done, self.buf, self.status = 0, False, b"", None

    def read(self, timeout):
        """Read events for up to ``timeout`` s; how the read ended: done | timeout | closed."""
        deadline = time.time() + timeout
        while not self.done:
            left = deadline - time.time()
            if left <= 0:
                return "timeout"
            self.sock.settimeout(left)
            try:
                piece = self.sock.recv(65536)
            except socket.timeout:
                return "timeout"
            except OSError:
                return "closed"
            if not piece:
                return "closed"
            self.buf += piece
            if self.status is None and b"\r\n" in self.buf:
                self.status = int(self.buf.split(b" ", 2)[1])
            while b"data: " in self.buf and b"\n\n" in self.buf[self.buf.index(b"data: "):]:
                self.buf = self.buf[self.buf.index(b"data: ") + len(b"data: "):]
                data, self.buf = self.buf.split(b"\n\n", 1)
                if data == b"[DONE]":
                    self.done = True
                else:
                    self.tokens += 1
        return "done"

    def wait_tokens(self, n, timeout=20.0):
        deadline = time.time() + timeout
        while self.tokens < n and time.time() < deadline and self.read(0.2) != "closed":
            pass
        assert self.status == 200 and self.tokens >= n, (self.status, self.tokens)

    def close(self):
        self.sock.close()


def running(port, engine):
    if engine == "vllm":
        text = http("GET", f"http://127.0.0.1:{port}/metrics")[1]
        line = [x for x in text.splitlines() if x.startswith("vllm:num_requests_running")][0]
        return int(float(line.split()[-1]))
    return json.loads(http("GET", f"http://127.0.0.1:{port}/v1/loads")[1])["loads"][0]["num_running_reqs"]


def slow_engine(procs, engine, *args):
    port = free_port()
    argv = ["serve", "m", "--port", str(port), "--host", "127.0.0.1"] if engine == "vllm" else \
        ["serve", "--model-path", "m", "--port", str(port), "--host", "127.0.0.1"]
    proc = procs.engine(engine, *(argv + list(args)), env={"LAUNCHCARD_STANDIN_TOKEN_S": "0.1"})
    wait_port(port, proc=proc)
    return proc, port


def test_vllm_default_shutdown_timeout_leaves_a_stream_hanging_until_its_client_leaves(procs):
    proc, port = slow_engine(procs, "vllm")
    stream = Stream(port, 200)
    stream.wait_tokens(3)
    assert running(port, "vllm") == 1
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    got = stream.tokens
    # no more tokens, no error, no [DONE]: the stream just hangs, and the server with it
    assert stream.read(2.0) == "timeout" and not stream.done and stream.tokens <= got + 1
    assert proc.poll() is None
    stream.close()
    assert proc.wait(timeout=15) == 0


def test_vllm_shutdown_timeout_finishes_in_flight_refuses_new_then_exits(procs):
    proc, port = slow_engine(procs, "vllm", "--shutdown-timeout", "30")
    stream = Stream(port, 30)
    stream.wait_tokens(2)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    status, body = http("POST", f"http://127.0.0.1:{port}/v1/completions", {"prompt": "new", "max_tokens": 1})
    assert status == 503 and "shutting down" in body
    assert http("GET", f"http://127.0.0.1:{port}/health")[0] == 503
    assert running(port, "vllm") == 1
    assert stream.read(20) == "done" and stream.tokens == 30
    assert proc.wait(timeout=15) == 0


def test_vllm_shutdown_timeout_cuts_what_outlasts_it(procs):
    proc, port = slow_engine(procs, "vllm", "--shutdown-timeout=1")
    stream = Stream(port, 500)
    stream.wait_tokens(2)
    proc.send_signal(signal.SIGTERM)
    assert stream.read(20) == "closed" and not stream.done and stream.tokens < 500
    assert proc.wait(timeout=15) == 0


def test_vllm_refuses_a_negative_shutdown_timeout():
    env = dict(os.environ, PYTHONPATH=str(SRC))
    res = subprocess.run([sys.executable, "-m", "launchcard_standin_engine", "vllm", "serve", "m",
                          "--shutdown-timeout", "-1"], env=env, capture_output=True, text=True, timeout=20, check=False)
    assert res.returncode == 2 and "shutdown_timeout" in res.stderr


def test_sglang_drains_in_flight_without_a_bound_and_still_serves(procs):
    proc, port = slow_engine(procs, "sglang")
    assert http("GET", f"http://127.0.0.1:{port}/metrics")[0] == 404  # no --enable-metrics
    stream = Stream(port, 70)  # 7 s: longer than the watchdog's 5 s
    stream.wait_tokens(2)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert http("GET", f"http://127.0.0.1:{port}/health")[0] == 503
    status, body = http("POST", f"http://127.0.0.1:{port}/v1/completions", {"prompt": "new", "max_tokens": 2})
    assert status == 200 and json.loads(body)["choices"][0]["finish_reason"] == "length"
    assert running(port, "sglang") == 1 and proc.poll() is None
    assert stream.read(30) == "done" and stream.tokens == 70
    assert proc.wait(timeout=15) == 0


def test_the_drain_module_waits_for_a_real_stream(procs):
    """plugins/module_utils/_drain.py against the stand-in over HTTP: the wait ends when the stream has ended."""
    sys.path.insert(0, str(ROOT / ".collections"))
    from ansible_collections.launchcard.inference.plugins.module_utils._drain import run_drain
    from ansible_collections.launchcard.inference.plugins.module_utils._gate import request

    procs_ports = [slow_engine(procs, "vllm", "--shutdown-timeout", "30"), slow_engine(procs, "sglang")]
    streams = [Stream(port, 20) for dummy, port in procs_ports]
    for s in streams:
        s.wait_tokens(1)
    eps = [{"name": "v", "url": "http://127.0.0.1:%d/health" % procs_ports[0][1], "engine": "vllm"},
           {"name": "s", "url": "http://127.0.0.1:%d" % procs_ports[1][1], "engine": "sglang"}]
    res = run_drain({"endpoints": eps, "timeout": 60, "interval": 0.2}, False, request)
    assert res["busy"] == [] and res["unreadable"] == [] and res["warnings"] == []
    assert [r["in_flight"] for r in res["endpoints"]] == [0, 0]
    for s in streams:  # they finished on their own, before any signal
        assert s.read(5) == "done" and s.tokens == 20
    # bounded: a stream that outlasts the wait is reported, not waited for
    long = Stream(procs_ports[0][1], 400)
    long.wait_tokens(1)
    res = run_drain({"endpoints": eps[:1], "timeout": 1, "interval": 0.2}, False, request)
    assert res["busy"] == ["v"] and "1 request(s) in flight" in res["warnings"][0]
    long.close()


# -- /metrics: the pinned releases' metrics the alert rules and dashboards read (monitoring/contracts/) ---------------

CONTRACTS = Path(__file__).resolve().parents[2] / "monitoring" / "contracts"
REAL_VLLM_SCRAPE = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "metrics" / "vllm-0.32.0.prom"


def contract(name):
    """``{name as the text format declares it: type}`` of a contract file: a histogram by the name it is defined
    as (its series are NAME_bucket, _count, _sum), a counter by its ``_total`` name."""
    import yaml
    doc = yaml.safe_load((CONTRACTS / name).read_text())
    return {(spec.get("defined_as", key) if spec["type"] == "histogram" else key): spec["type"]
            for key, spec in doc["metrics"].items()}


def scrape(port):
    """``({declared name: type}, {series with labels: value})`` of a stand-in's /metrics, its own info left out."""
    status, text = http("GET", f"http://127.0.0.1:{port}/metrics")
    assert status == 200
    declared = dict(line.split()[2:4] for line in text.splitlines() if line.startswith("# TYPE "))
    samples = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    declared.pop("launchcard_standin_info")
    return declared, {k: float(v) for k, v in samples.items() if not k.startswith("launchcard_standin_info")}


def total(samples, name):
    return sum(v for k, v in samples.items() if k.split("{")[0] == name)


@pytest.mark.parametrize("engine,contract_file", [("vllm", "vllm-0.32.0.yml"), ("sglang", "sglang-0.5.23.yml")])
def test_metrics_are_the_contracts_and_grow_with_each_generation(procs, engine, contract_file):
    proc, port = slow_engine(procs, engine, *(["--enable-metrics"] if engine == "sglang" else []))
    declared, before = scrape(port)
    assert declared == contract(contract_file)  # no metric the release does not export, none missing
    stream = Stream(port, 4)
    stream.wait_tokens(2)
    dummy, during = scrape(port)
    running = "vllm:num_requests_running" if engine == "vllm" else "sglang:num_running_reqs"
    usage = "vllm:kv_cache_usage_perc" if engine == "vllm" else "sglang:token_usage"
    assert total(during, running) == 1 and 0 < total(during, usage) < 1
    assert stream.read(10) == "done" and stream.tokens == 4
    stream.close()
    # the handler leaves the running count after its last bytes reach the client, so the gauge may lag a moment
    deadline = time.time() + 10
    while True:
        dummy, after = scrape(port)
        if total(after, running) == 0 or time.time() > deadline:
            break
        time.sleep(0.05)
    assert total(after, running) == 0 and total(after, usage) == 0
    p = engine + ":"
    assert total(after, p + "prompt_tokens_total") > total(before, p + "prompt_tokens_total")
    assert total(after, p + "time_to_first_token_seconds_count") == total(before, p + "time_to_first_token_seconds_count") + 1
    assert total(after, p + "generation_tokens_total") - total(before, p + "generation_tokens_total") == 4
    # three gaps of 0.1 s between four tokens (LAUNCHCARD_STANDIN_TOKEN_S)
    assert total(after, p + "inter_token_latency_seconds_count") - total(before, p + "inter_token_latency_seconds_count") == 3
    assert 0.2 < total(after, p + "inter_token_latency_seconds_sum") < 1.0
    requests = "vllm:request_success_total" if engine == "vllm" else "sglang:num_requests_total"
    assert total(after, requests) == total(before, requests) + 1
    # every series the dashboards read now has a sample, but SGLang's retractions: its collector creates that series
    # on the first retraction (metrics_collector.py:1519), which the stand-in never makes
    present = {k.split("{")[0] for k in after}
    want = {n + "_bucket" if t == "histogram" else n for n, t in declared.items()}
    assert want - present == ({"sglang:num_retracted_requests_total"} if engine == "sglang" else set())


def test_vllm_series_have_the_real_scrapes_labels_and_buckets(procs):
    proc, port = slow_engine(procs, "vllm")
    Stream(port, 2).read(10)
    status, text = http("GET", f"http://127.0.0.1:{port}/metrics")
    real = REAL_VLLM_SCRAPE.read_text()

    def shapes(scrape_text, name):
        """each series of ``name`` as its label names, with the ``le`` and ``finished_reason`` values"""
        out = set()
        for line in scrape_text.splitlines():
            if line.split("{")[0] == name:
                labels = dict(kv.split("=", 1) for kv in line.split("{", 1)[1].rsplit("}", 1)[0].split(","))
                out.add(tuple(sorted((k, v if k in ("le", "finished_reason") else "") for k, v in labels.items())))
        return out
    for name in contract("vllm-0.32.0.yml"):
        series = name + "_bucket" if name.endswith("_seconds") else name
        assert shapes(text, series) == shapes(real, series), series


def test_an_sglang_pd_prefill_observes_its_latency_but_no_time_to_first_token_and_an_encoder_none():
    sys.path.insert(0, str(SRC))
    from launchcard_standin_engine.metrics import Metrics
    prefill = Metrics("sglang", "prefill", "m")
    prefill.finished(3, 1, 0.3, [], stream=False)
    text = "\n".join(prefill.render(0, 0, 0))
    assert "sglang:time_to_first_token_seconds_count" not in text and "sglang:inter_token_latency_seconds_count" not in text
    assert 'sglang:e2e_request_latency_seconds_bucket{engine_type="prefill",is_streaming="false",le="0.4",model_name="m"} 1.0' in text
    assert 'sglang:e2e_request_latency_seconds_bucket{engine_type="prefill",is_streaming="false",le="0.2",model_name="m"} 0.0' in text
    encoder = Metrics("sglang", "encoder", "m")
    assert encoder.render(0, 0, 0) == []
