"""TEST CODE: how the stand-in engines start and stop (standard library only); their HTTP APIs are ``server.py``.

The port opens after ``LAUNCHCARD_STANDIN_STARTUP_DELAY_S`` (the model "loading"); a prefill also opens its
bootstrap port; a language-only server polls its encoders until each answers ``/health``.

SIGTERM/SIGINT, as each engine does it:

* vLLM (``--shutdown-timeout N``, vllm/entrypoints/launchers/launcher.py and
  vllm/v1/engine/core.py ``_handle_shutdown``, 0.32.0): ``0`` (the default)
  aborts what is in flight, and, as measured on vLLM 0.32, a stream then hangs:
  no more tokens, no error, no ``[DONE]``, and the server exits only when the
  client gives up. ``N > 0``: new requests are refused (503), in-flight ones go
  on for up to N s (a stream still running then is cut: no ``[DONE]``), then it
  exits 0.
* SGLang on SIGTERM does as its tokenizer manager (sglang/srt/managers/tokenizer_manager.py, 0.5.23:
  SignalHandler.sigterm_handler sets ``gracefully_exit``; ``sigterm_watchdog`` notices it within 5 s, then waits,
  polling every 5 s, until no request is in flight, without a bound of its own, and exits 0; at once when the
  health check had failed or ``SGL_FORCE_SHUTDOWN`` is set): it keeps serving meanwhile, new requests included
  (only ``/health`` reads ``gracefully_exit``), with ``/health`` 503 (sglang/srt/entrypoints/http_server.py
  health_generate: 503 while ``gracefully_exit`` and while the server is still ``Starting``). SIGINT: it stops.
"""

import os
import signal
import threading
import time
import urllib.error
import urllib.request
from typing import List

from launchcard_standin_engine.cli import ServerConfig
from launchcard_standin_engine.server import (
    BootstrapHandler,
    EngineHandler,
    EngineState,
    _env_float,
    _fmt_hostport,
    _log,
    _Server,
)


def _poll_encoders(st: EngineState) -> None:
    urls = [u.rstrip("/") for u in st.config.encoder_urls]
    while not st.stop.is_set():
        ok = True
        for url in urls:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                    ok = ok and resp.status == 200
            except (urllib.error.URLError, OSError, ValueError):
                ok = False
        if ok:
            st.encoders_ready = True
            _log("all encoder servers answer /health: language server is ready")
            return
        st.stop.wait(1.0)


# sglang/srt/managers/tokenizer_manager.py sigterm_watchdog: asyncio.sleep(5) before and between drain checks
SGLANG_SIGTERM_POLL_S = 5.0


def _sglang_sigterm_watchdog(st: EngineState, stop_all) -> None:
    """SGLang's SIGTERM drain (tokenizer_manager.py sigterm_watchdog): notice the flag on a 5 s tick, then exit once
    no request is in flight; at once when the health check had failed or SGL_FORCE_SHUTDOWN is set."""
    while not st.draining:
        time.sleep(SGLANG_SIGTERM_POLL_S)
    while True:
        if os.environ.get("LAUNCHCARD_STANDIN_FAIL_HEALTH", "") not in ("", "0"):
            _log("Signal SIGTERM received while health check failed. Force exiting.")
            break
        if os.environ.get("SGL_FORCE_SHUTDOWN", "").lower() in ("1", "true", "yes", "on"):
            _log("Signal SIGTERM received while force shutdown flag set. Force exiting.")
            break
        with st.lock:
            remaining = st.inflight
        _log(f"Gracefully exiting... Remaining number of requests {remaining}.")
        if remaining == 0:
            break
        time.sleep(SGLANG_SIGTERM_POLL_S)
    stop_all()


def serve(config: ServerConfig) -> int:
    st = EngineState(config)
    servers: List[_Server] = []

    def stop_all():
        st.stop.set()
        for srv in list(servers):
            threading.Thread(target=srv.shutdown, daemon=True).start()

    def wait_idle(deadline=None, step=0.1):
        while st.inflight > 0 and (deadline is None or time.time() < deadline):
            time.sleep(step if deadline is None else max(0.0, min(step, deadline - time.time())))
        return st.inflight == 0

    def vllm_shut_down():
        if config.shutdown_timeout == 0:
            _log(f"shutdown mode=abort: {st.inflight} in-flight request(s) aborted")
            st.abort.set()
            wait_idle()  # a hanging stream holds the server until its client leaves
        else:
            _log(f"shutdown mode=drain timeout={config.shutdown_timeout}s: {st.inflight} in-flight request(s)")
            if not wait_idle(time.time() + config.shutdown_timeout):
                _log(f"shutdown timeout: {st.inflight} request(s) still running are cut")
                st.cut.set()
                wait_idle(time.time() + 5)
        stop_all()

    def on_signal(signum, _frame):
        if config.engine == "vllm" and st.draining:
            return  # vLLM: the shutdown under way goes on
        st.draining = True
        if config.engine == "sglang" and signum == signal.SIGTERM and servers:
            # SignalHandler.sigterm_handler only sets gracefully_exit; the watchdog drains and exits
            _log("SIGTERM received. Draining requests and shutting down...")
            return
        _log(f"received signal {signum}: draining and shutting down")
        if config.engine == "vllm" and servers:
            threading.Thread(target=vllm_shut_down, daemon=True).start()
            return
        stop_all()  # still "loading": the startup wait ends and nothing serves

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    _log(f"TEST CODE: stand-in {config.engine} role={config.role} model={config.model} snapshot={config.snapshot} "
         f"on {_fmt_hostport(config.host, config.port)} (no model is loaded; this is not the real engine)")
    delay = _env_float("LAUNCHCARD_STANDIN_STARTUP_DELAY_S", 0.0)
    if delay > 0:
        _log(f"simulating model load: port opens in {delay:g}s")
        if st.stop.wait(delay):
            return 0
    try:
        main_srv = _Server((config.host, config.port), EngineHandler, st)
        servers.append(main_srv)
        if config.role == "prefill":
            boot = _Server((config.host, config.bootstrap_port), BootstrapHandler, st)
            servers.append(boot)
            threading.Thread(target=boot.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
            _log(f"bootstrap server on {_fmt_hostport(config.host, config.bootstrap_port)}")
    except OSError as exc:
        _log(f"cannot listen: {exc}")
        for srv in servers:
            srv.server_close()
        return 1
    if st.stop.is_set():
        return 0
    warmup = _env_float("LAUNCHCARD_STANDIN_WARMUP_S", 0.0)
    if config.engine == "sglang" and warmup > 0:
        st.warmup_until = time.time() + warmup
    hold = _env_float("LAUNCHCARD_STANDIN_HOLD_INFERENCE_S", 0.0)
    if hold > 0:
        st.inference_held_until = time.time() + hold
    if not st.encoders_ready:
        threading.Thread(target=_poll_encoders, args=(st,), daemon=True).start()
    if config.engine == "sglang":
        threading.Thread(target=_sglang_sigterm_watchdog, args=(st, stop_all), daemon=True).start()
    _log(f"ready: listening on {_fmt_hostport(config.host, config.port)}")
    try:
        main_srv.serve_forever(poll_interval=0.2)
    finally:
        st.stop.set()
        for srv in servers:
            if srv is not main_srv:
                srv.shutdown()
            srv.server_close()
    _log("stopped")
    return 0
