"""TEST CODE: the stand-in engines' HTTP servers (standard library only).

What it imitates (and how far):

* vLLM (``vllm serve``): the port opens only once "loaded" (see
  ``LAUNCHCARD_STANDIN_STARTUP_DELAY_S``); ``/health`` answers 200 with an
  empty body (503 while draining); ``/v1/models``, ``/version``, ``/metrics``,
  ``/v1/completions``, ``/v1/chat/completions``.
* SGLang (``sglang serve``): the same OpenAI routes plus ``/health_generate``,
  ``/generate`` (native API), ``/get_model_info`` (``/model_info``),
  ``/get_server_info`` (``/server_info``), ``/get_load``, ``/flush_cache``.
  ``LAUNCHCARD_STANDIN_WARMUP_S`` keeps ``/health`` at 503 for that long after
  the port opens, like SGLang's warm-up.
* SGLang PD disaggregation: a prefill server (``--disaggregation-mode
  prefill``) also serves a bootstrap HTTP API on
  ``--disaggregation-bootstrap-port`` (default 8998). For every request that
  carries ``bootstrap_host/bootstrap_port/bootstrap_room`` (injected by the
  sglang router) the prefill stores a fake "KV" record for the room, served
  at ``GET /kv/<room>`` on the bootstrap port; the decode server fetches it
  from ``http://<bootstrap_host>:<bootstrap_port>/kv/<room>`` (retrying up to
  ``LAUNCHCARD_STANDIN_KV_TIMEOUT_S``, default 5 s, since both receive the
  request at the same time) and names both servers in its answer
  (``prefill=<host:port> decode=<host:port>``). If the fetch fails the decode
  answers 500 with the reason. Requests without bootstrap info are refused
  (400) by both, as a real PD pair cannot serve them.
* SGLang EPD: ``--encoder-only`` servers answer health; ``--language-only``
  servers answer 503 on ``/health`` until every ``--encoder-urls`` URL has
  answered ``GET /health`` with 200 (polled in the background).
* ``LAUNCHCARD_STANDIN_HOLD_INFERENCE_S``: ``/health`` answers 200 at once, but inference requests are held
  (they hang) until that many seconds after the port opened: a warm-up that blocks inference while health is
  green (sglang issue 33719, vllm issue 15313).
* ``LAUNCHCARD_STANDIN_FAIL_HEALTH=1``: ``/health`` answers 503 for ever (a
  new revision that never turns healthy, for the upgrade rollback test).
* ``LAUNCHCARD_STANDIN_TOKEN_S``: seconds per generated token (default 0: the
  whole answer at once). Above 0, a completion or chat answer has
  ``max_tokens`` tokens (16 when unset), a stream sends one chunk per token,
  and the request counts as running while it generates (a long generation,
  for the drain tests).
* In-flight requests are counted as the engines report them: vLLM's
  ``/metrics`` gauges ``vllm:num_requests_running`` and
  ``vllm:num_requests_waiting`` (vllm/v1/metrics/loggers.py, 0.32.0); SGLang's
  ``GET /v1/loads`` (``loads[].num_running_reqs``, ``num_waiting_reqs``;
  sglang/srt/entrypoints/v1_loads.py, 0.5.23), its older ``/get_load``, and its
  ``/metrics`` only with ``--enable-metrics`` (http_server.py). What ``/metrics`` exports: ``metrics.py``.

How each engine stops on SIGTERM/SIGINT, and how the servers start: ``lifecycle.py``.
"""

import hashlib
import json
import os
import select
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional, Tuple

from launchcard_standin_engine import STANDIN_VERSION
from launchcard_standin_engine.cli import ServerConfig
from launchcard_standin_engine.metrics import Metrics

KV_TTL_S = 600.0
KV_MAX_ROOMS = 10000


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def _log(msg: str) -> None:
    sys.stderr.write(f"[launchcard-standin] {msg}\n")
    sys.stderr.flush()


def _fmt_hostport(host: str, port) -> str:
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, engine_state):
        self.address_family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
        self.engine_state = engine_state
        super().__init__(addr, handler)


class EngineState:
    """Everything the handlers share."""

    def __init__(self, config: ServerConfig):
        self.config = config
        self.hostname = socket.gethostname()
        self.started = time.time()
        self.lock = threading.Lock()
        self.requests_total = 0
        self.requests_by_path: Dict[str, int] = {}
        self.draining = False
        self.inflight = 0  # inference requests being answered (SGLang's rid_to_state, for its SIGTERM drain)
        self.waiting = 0  # inference requests held by LAUNCHCARD_STANDIN_HOLD_INFERENCE_S (the engines' queue)
        self.kv_tokens = 0  # prompt and output tokens of the generations in flight (the KV use gauges)
        self.metrics = Metrics(config.engine, config.role, config.served_model_names[0])
        self.warmup_until = 0.0
        self.inference_held_until = 0.0
        self.encoders_ready = config.role != "language" or not config.encoder_urls
        self.kv: Dict[str, dict] = {}  # prefill: room -> record
        self.stop = threading.Event()
        self.abort = threading.Event()  # vLLM --shutdown-timeout 0: in-flight generation stops where it is
        self.cut = threading.Event()  # vLLM: the shutdown timeout ran out, the streams still open are closed
        self.token_s = _env_float("LAUNCHCARD_STANDIN_TOKEN_S", 0.0)

    def accepting(self) -> bool:
        """Whether a new generation request is served: vLLM refuses them once SIGTERM came, SGLang does not."""
        return not (self.draining and self.config.engine == "vllm")

    # --- readiness -------------------------------------------------------
    def health_status(self) -> Tuple[int, str]:
        if self.draining:
            return 503, "server is draining (SIGTERM received)"
        if os.environ.get("LAUNCHCARD_STANDIN_FAIL_HEALTH", "") not in ("", "0"):
            return 503, "told to fail (LAUNCHCARD_STANDIN_FAIL_HEALTH)"
        if time.time() < self.warmup_until:
            return 503, "server is warming up"
        if not self.encoders_ready:
            return 503, "waiting for encoder servers: " + " ".join(self.config.encoder_urls)
        return 200, ""

    def count(self, path: str) -> int:
        with self.lock:
            self.requests_total += 1
            self.requests_by_path[path] = self.requests_by_path.get(path, 0) + 1
            return self.requests_total

    # --- PD KV bookkeeping ---------------------------------------------------
    def put_kv(self, room, record: dict) -> None:
        now = time.time()
        with self.lock:
            self.kv[str(room)] = dict(record, stored_at=now)
            if len(self.kv) > KV_MAX_ROOMS:
                for key in sorted(self.kv, key=lambda k: self.kv[k]["stored_at"])[: len(self.kv) - KV_MAX_ROOMS]:
                    del self.kv[key]
            for key in [k for k, v in self.kv.items() if now - v["stored_at"] > KV_TTL_S]:
                del self.kv[key]

    def get_kv(self, room) -> Optional[dict]:
        with self.lock:
            return self.kv.get(str(room))

    @property
    def me(self) -> str:
        return _fmt_hostport(self.hostname, self.config.port)


# --------------------------------------------------------------------------
# request helpers


def _as_list(value):
    return value if isinstance(value, list) else [value]


def _prompt_of(body: dict) -> str:
    for key in ("prompt", "text"):
        if key in body:
            return json.dumps(body[key], sort_keys=True)
    if "messages" in body:
        return json.dumps(body["messages"], sort_keys=True)
    if "input_ids" in body:
        return json.dumps(body["input_ids"])
    return ""


def _prompt_tokens(body: dict) -> int:
    return max(1, len(_prompt_of(body).split()))


def fetch_kv(bootstrap_host: str, bootstrap_port, room, timeout_s: float) -> dict:
    """Decode side: fetch the prefill's KV record for ``room`` (retrying)."""
    host = bootstrap_host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    url = f"http://{host}:{bootstrap_port}/kv/{room}"
    deadline = time.time() + timeout_s
    last = "no attempt made"
    while True:
        try:
            with urllib.request.urlopen(url, timeout=max(0.2, min(2.0, deadline - time.time()))) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code} from {url}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            last = f"{url}: {getattr(exc, 'reason', exc)}"
        if time.time() >= deadline:
            raise RuntimeError(last)
        time.sleep(0.05)


def info_of(st: "EngineState", pd: dict) -> dict:
    cfg = st.config
    return {"engine": cfg.engine, "role": cfg.role, "hostname": st.hostname, "port": cfg.port,
            "server": st.me, "prefill": pd["prefill"], "decode": pd["decode"],
            "bootstrap_room": pd["bootstrap_room"], "snapshot": cfg.snapshot}


# --------------------------------------------------------------------------
# the engine's HTTP API


class EngineHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "launchcard-standin"
    sys_version = ""

    @property
    def st(self) -> EngineState:
        return self.server.engine_state  # type: ignore[attr-defined]

    # --- plumbing ----------------------------------------------------------
    def log_message(self, fmt, *args):  # noqa: N802 (stdlib name)
        _log(f"{self.st.config.engine} {self.st.config.role} {self.address_string()} {fmt % args}")

    def _send(self, status: int, body: bytes = b"", ctype: str = "application/json") -> None:
        self.send_response(status)
        if body or ctype != "application/json":
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"))

    def _error(self, status: int, message: str, etype: str = "BadRequestError") -> None:
        self._json(status, {"object": "error", "message": message, "type": etype, "param": None, "code": status,
                            "error": {"message": message, "type": etype, "code": status}})

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _json_body(self) -> Optional[dict]:
        raw = self._read_body()
        try:
            body = json.loads(raw.decode("utf-8") or "{}")
        except ValueError as exc:
            self._error(400, f"request body is not valid JSON: {exc}")
            return None
        if not isinstance(body, dict):
            self._error(400, "request body must be a JSON object")
            return None
        return body

    # --- dispatch ----------------------------------------------------------
    def do_GET(self):  # noqa: N802
        path = self.path.split("?", 1)[0]
        self.st.count(path)
        cfg = self.st.config
        routes = {
            "/health": self._health,
            "/v1/models": self._models,
            "/version": self._version,
            "/metrics": self._metrics,
        }
        if cfg.engine == "vllm":
            routes["/ping"] = self._health
        else:
            routes.update({
                "/health_generate": self._health,
                "/get_model_info": self._model_info,
                "/model_info": self._model_info,
                "/get_server_info": self._server_info,
                "/server_info": self._server_info,
                "/get_load": self._load,
                "/v1/loads": self._loads,
            })
            if not cfg.enable_metrics:
                del routes["/metrics"]
        handler = routes.get(path)
        if handler is None:
            self._json(404, {"detail": "Not Found"})
        else:
            handler()

    do_HEAD = do_GET

    def do_POST(self):  # noqa: N802
        path = self.path.split("?", 1)[0]
        self.received = time.time()  # the engines time a request's first token from its arrival
        self.st.count(path)
        cfg = self.st.config
        if path == "/flush_cache" and cfg.engine == "sglang":
            self._read_body()
            self._send(200, b"Cache flushed.\n", "text/plain; charset=utf-8")
            return
        kinds = {"/v1/completions": "completion", "/v1/chat/completions": "chat"}
        if cfg.engine == "sglang":
            kinds["/generate"] = "generate"
            kinds["/encode"] = "encode"
        kind = kinds.get(path)
        if kind is None:
            self._read_body()
            self._json(404, {"detail": "Not Found"})
            return
        body = self._json_body()
        held = self.st.inference_held_until - time.time()
        if held > 0 and body is not None:
            with self.st.lock:
                self.st.waiting += 1
            try:
                time.sleep(held)  # blocked by the warm-up while /health is already 200
            finally:
                with self.st.lock:
                    self.st.waiting -= 1
        if body is not None:
            if os.environ.get("LAUNCHCARD_STANDIN_LOG_BODIES"):
                _log(f"{cfg.role} POST {path} body={json.dumps(body, sort_keys=True)}")
            if not self.st.accepting():
                self._error(503, "server is shutting down (SIGTERM received)", "ServiceUnavailableError")
                return
            with self.st.lock:
                self.st.inflight += 1
            try:
                self._generate(kind, body)
            finally:
                with self.st.lock:
                    self.st.inflight -= 1

    # --- GET endpoints ------------------------------------------------------
    def _health(self):
        status, reason = self.st.health_status()
        if status == 200:
            self._send(200)
        else:
            self._send(status, reason.encode("utf-8"), "text/plain; charset=utf-8")

    def _models(self):
        cfg = self.st.config
        data = [{
            "id": name,
            "object": "model",
            "created": int(self.st.started),
            "owned_by": cfg.engine,
            "root": cfg.model,  # what vLLM reports (its model argument, vllm/entrypoints/openai/models/serving.py)
            "parent": None,
            "max_model_len": 131072,
            # the stand-in's own: the directory the model argument resolved to at start (weights.resolve)
            "launchcard_standin": {"snapshot": cfg.snapshot, "revision": cfg.revision},
        } for name in cfg.served_model_names]
        self._json(200, {"object": "list", "data": data})

    def _version(self):
        self._json(200, {"version": STANDIN_VERSION})

    def _model_info(self):
        cfg = self.st.config
        self._json(200, {
            "model_path": cfg.model,
            "tokenizer_path": cfg.model,
            "is_generation": cfg.role != "encoder",
            "preferred_sampling_params": None,
            "weight_version": "default",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": None,
            "architectures": None,
        })

    def _server_info(self):
        cfg = self.st.config
        self._json(200, {
            "model_path": cfg.model,
            "served_model_name": cfg.served_model_names[0],
            "host": cfg.host,
            "port": cfg.port,
            "tp_size": cfg.tp_size,
            "dp_size": 1,
            "disaggregation_mode": cfg.role if cfg.role in ("prefill", "decode") else "null",
            "disaggregation_bootstrap_port": cfg.bootstrap_port if cfg.bootstrap_port is not None else 8998,
            "disaggregation_transfer_backend": "launchcard-standin",
            "encoder_only": cfg.role == "encoder",
            "language_only": cfg.role == "language",
            "encoder_urls": cfg.encoder_urls,
            "version": STANDIN_VERSION,
            "status": "ready" if self.st.health_status()[0] == 200 else "starting",
            "internal_states": [{"last_gen_throughput": 0.0, "avg_spec_accept_length": None}],
            "revision": cfg.revision,
            "download_dir": cfg.download_dir,
            "launchcard_standin": {"role": cfg.role, "hostname": self.st.hostname, "argv": cfg.argv,
                                   "snapshot": cfg.snapshot},
        })

    def _load(self):
        self._json(200, [{"dp_rank": 0, "num_reqs": self.st.inflight, "num_waiting_reqs": 0, "num_tokens": 0}])

    def _loads(self):
        cfg = self.st.config
        self._json(200, {"timestamp": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
                         "version": STANDIN_VERSION, "accelerator": None, "num_accelerators": cfg.tp_size,
                         "loads": [{"timestamp": time.time(), "dp_rank": 0, "num_running_reqs": self.st.inflight,
                                    "num_waiting_reqs": 0, "num_used_tokens": 0, "num_total_tokens": 0}]})

    def _metrics(self):
        st, cfg = self.st, self.st.config
        with st.lock:
            running, waiting, kv_tokens = st.inflight, st.waiting, st.kv_tokens
        lines = st.metrics.render(running, waiting, kv_tokens) + [
            "# HELP launchcard_standin_info TEST CODE: this server is the launchcard sandbox stand-in.",
            "# TYPE launchcard_standin_info gauge",
            f'launchcard_standin_info{{engine="{cfg.engine}",role="{cfg.role}"}} 1.0',
        ]
        self._send(200, ("\n".join(lines) + "\n").encode("utf-8"), "text/plain; version=0.0.4; charset=utf-8")

    # --- POST: the "inference" -----------------------------------------------
    def _generate(self, kind: str, body: dict) -> None:
        st, cfg = self.st, self.st.config
        status, reason = st.health_status()
        if status != 200 and not (st.draining and cfg.engine == "sglang"):
            self._error(503, reason, "ServiceUnavailableError")
            return
        if kind == "encode":
            if cfg.role != "encoder":
                self._error(400, "this server is not an encoder (--encoder-only)")
            else:
                self._json(200, {"embedding": [0.0], "served_by": st.me, "role": cfg.role})
            return
        if cfg.role == "encoder":
            self._error(400, "encoder-only server: send generation requests to the language server")
            return
        requested = body.get("model")
        if cfg.engine == "vllm" and requested and requested not in cfg.served_model_names:
            self._error(404, f"The model `{requested}` does not exist.", "NotFoundError")
            return

        rooms = body.get("bootstrap_room")
        pd = {"prefill": None, "decode": None, "bootstrap_room": rooms}
        if cfg.role in ("prefill", "decode"):
            if rooms is None or body.get("bootstrap_host") is None:
                self._error(400, f"sglang {cfg.role} server ({st.me}) needs bootstrap_host/bootstrap_port/"
                                 "bootstrap_room: send requests through the PD router")
                return
            hosts = _as_list(body.get("bootstrap_host"))
            ports = _as_list(body.get("bootstrap_port"))
            room_list = _as_list(rooms)
            if not (len(hosts) == len(ports) == len(room_list)):
                self._error(400, "bootstrap_host, bootstrap_port and bootstrap_room differ in length")
                return
            if cfg.role == "prefill":
                for host, port, room in zip(hosts, ports, room_list):
                    if port is not None and int(port) != cfg.bootstrap_port:
                        _log(f"warning: request names bootstrap port {port}, this prefill bootstraps on "
                             f"{cfg.bootstrap_port}; the decode will not find the KV")
                    st.put_kv(room, {
                        "room": room,
                        "prefill": st.me,
                        "prefill_hostname": st.hostname,
                        "prefill_port": cfg.port,
                        "bootstrap_port": cfg.bootstrap_port,
                        "prompt_sha256": hashlib.sha256(_prompt_of(body).encode()).hexdigest(),
                        "kv": f"standin-kv:{room}",
                    })
                pd["prefill"] = st.me
            else:
                timeout = _env_float("LAUNCHCARD_STANDIN_KV_TIMEOUT_S", 5.0)
                sources = []
                for host, port, room in zip(hosts, ports, room_list):
                    if port is None:
                        self._error(500, f"decode {st.me}: request for room {room} carries no bootstrap_port "
                                         "(router started without the prefill's bootstrap port?)",
                                    "InternalServerError")
                        return
                    try:
                        rec = fetch_kv(str(host), port, room, timeout)
                    except RuntimeError as exc:
                        msg = (f"decode {st.me}: KV transfer failed: no KV for bootstrap_room {room} from prefill "
                               f"bootstrap server {_fmt_hostport(str(host), port)} within {timeout:g}s ({exc})")
                        _log(msg)
                        self._error(500, msg, "InternalServerError")
                        return
                    sources.append(rec.get("prefill", "?"))
                pd["prefill"] = ",".join(sorted(set(sources)))
                pd["decode"] = st.me
        text = self._answer_text(pd)
        prompt_tokens = _prompt_tokens(body)
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens") or (
            (body.get("sampling_params") or {}).get("max_new_tokens")) or 16
        completion_tokens = max(1, min(int(max_tokens), len(text.split())))
        if st.token_s > 0 and kind in ("completion", "chat"):
            self._slow(kind, body, text, int(max_tokens), prompt_tokens, info_of(st, pd))
            return
        # the whole answer at once: its first token now, the others with no time between them
        ttft = time.time() - getattr(self, "received", time.time())
        for _i in range(self._items(kind, body)):
            st.metrics.finished(prompt_tokens, completion_tokens, ttft, [0.0] * (completion_tokens - 1),
                                bool(body.get("stream")))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        info = info_of(st, pd)
        created = int(time.time())
        model = requested or cfg.served_model_names[0]
        if kind == "generate":
            batch = self._batch(kind, body)
            n = self._items(kind, body)
            meta = {"id": uuid.uuid4().hex, "finish_reason": {"type": "length", "length": completion_tokens},
                    "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                    "cached_tokens": 0, "e2e_latency": 0.0}
            if body.get("return_logprob"):
                meta["input_token_logprobs"] = []
                meta["output_token_logprobs"] = []
            one = {"text": text, "meta_info": meta, "launchcard_standin": info}
            result = [dict(one) for _i in range(n)] if batch else one
            if body.get("stream"):
                self._sse([result])
            else:
                self._json(200, result)
            return
        if kind == "chat":
            obj = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": created,
                   "model": model,
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text,
                                                        "reasoning_content": None, "tool_calls": []},
                                "logprobs": None, "finish_reason": "length", "stop_reason": None}],
                   "usage": usage, "launchcard_standin": info}
            chunk = {"id": obj["id"], "object": "chat.completion.chunk", "created": created, "model": model,
                     "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                  "finish_reason": "length"}]}
        else:
            obj = {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": created,
                   "model": model,
                   "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": "length",
                                "stop_reason": None}],
                   "usage": usage, "launchcard_standin": info}
            chunk = {"id": obj["id"], "object": "text_completion", "created": created, "model": model,
                     "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": "length"}]}
        if body.get("stream"):
            self._sse([chunk])
        else:
            self._json(200, obj)

    @staticmethod
    def _items(kind: str, body: dict) -> int:
        """How many generations a request asks for: SGLang's /generate takes a batch of prompts."""
        return len(body.get("text") or body.get("input_ids") or []) if EngineHandler._batch(kind, body) else 1

    @staticmethod
    def _batch(kind: str, body: dict) -> bool:
        return kind == "generate" and (isinstance(body.get("text"), list) or bool(
            isinstance(body.get("input_ids"), list) and body["input_ids"] and isinstance(body["input_ids"][0], list)))

    def _slow(self, kind: str, body: dict, text: str, n: int, prompt_tokens: int, info: dict) -> None:
        """One token every ``token_s`` seconds; what SIGTERM does to it is the engine's (see the module doc)."""
        held = prompt_tokens + max(1, n)  # the KV a real engine holds for it while it generates
        with self.st.lock:
            self.st.kv_tokens += held
        try:
            self._tokens(kind, body, text, n, prompt_tokens, info)
        finally:
            with self.st.lock:
                self.st.kv_tokens -= held

    def _tokens(self, kind: str, body: dict, text: str, n: int, prompt_tokens: int, info: dict) -> None:
        st = self.st
        words = text.split()
        tokens = [(" " if i else "") + words[i % len(words)] for i in range(max(1, n))]
        rid, created = uuid.uuid4().hex, int(time.time())
        model = body.get("model") or st.config.served_model_names[0]

        def chunk(piece, finish):
            if kind == "chat":
                return {"id": f"chatcmpl-{rid}", "object": "chat.completion.chunk", "created": created, "model": model,
                        "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": finish}]}
            return {"id": f"cmpl-{rid}", "object": "text_completion", "created": created, "model": model,
                    "choices": [{"index": 0, "text": piece, "logprobs": None, "finish_reason": finish}]}

        stream = bool(body.get("stream"))
        if stream:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
        sent, stamps = [], []
        for i, piece in enumerate(tokens):
            if i:
                time.sleep(st.token_s)
            if st.abort.is_set():
                break
            if st.cut.is_set():
                self.close_connection = True
                return  # the stream ends without its last chunk: the client reads an incomplete answer
            sent.append(piece)
            stamps.append(time.time())
            if stream:
                last = i == len(tokens) - 1
                self._chunk(f"data: {json.dumps(chunk(piece, 'length' if last else None))}\n\n")
        if st.abort.is_set() and len(sent) < len(tokens):
            if stream:
                # vLLM 0.32 with --shutdown-timeout 0 (measured): no more tokens, no error, no [DONE], until the
                # client gives up
                self._hang_until_client_leaves()
                self.close_connection = True
                return
            finish = "abort"
        else:
            finish = "length"
        if stamps:
            st.metrics.finished(prompt_tokens, len(sent), stamps[0] - getattr(self, "received", stamps[0]),
                                [b - a for a, b in zip(stamps, stamps[1:])], stream, finish)
        if stream:
            self._chunk("data: [DONE]\n\n")
            self._chunk("")
            return
        obj = chunk("".join(sent), finish)
        obj["object"] = "chat.completion" if kind == "chat" else "text_completion"
        if kind == "chat":
            obj["choices"] = [{"index": 0, "message": {"role": "assistant", "content": "".join(sent)},
                               "finish_reason": finish}]
        obj["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": len(sent),
                        "total_tokens": prompt_tokens + len(sent)}
        obj["launchcard_standin"] = info
        self._json(200, obj)

    def _chunk(self, text: str) -> None:
        data = text.encode("utf-8")
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _hang_until_client_leaves(self) -> None:
        while True:
            try:
                readable = select.select([self.connection], [], [], 0.5)[0]
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    return
            except (OSError, ValueError):
                return

    def _answer_text(self, pd: dict) -> str:
        st, cfg = self.st, self.st.config
        parts = [f"[launchcard stand-in {cfg.engine} {cfg.role}]"]
        if cfg.role == "decode":
            parts.append(f"prefill={pd['prefill']} decode={pd['decode']}")
        else:
            parts.append(f"server={st.me}")
        if cfg.role == "language":
            parts.append("encoders=" + ",".join(cfg.encoder_urls))
        parts.append(f"host={st.hostname} port={cfg.port} model={cfg.served_model_names[0]}")
        return " ".join(parts)

    def _sse(self, events: List[dict]) -> None:
        payload = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self._send(200, payload.encode("utf-8"), "text/event-stream")


# --------------------------------------------------------------------------
# the prefill's bootstrap server


class BootstrapHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "launchcard-standin-bootstrap"
    sys_version = ""

    def log_message(self, fmt, *args):  # noqa: N802
        _log(f"bootstrap {self.address_string()} {fmt % args}")

    def _json(self, status: int, obj) -> None:
        body = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        st: EngineState = self.server.engine_state  # type: ignore[attr-defined]
        path = self.path.split("?", 1)[0]
        if path == "/health":
            body = b"OK"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif path == "/route":
            self._json(200, {"prefill": st.me, "tp_size": st.config.tp_size, "dp_size": 1,
                             "bootstrap_port": st.config.bootstrap_port, "transfer_backend": "launchcard-standin"})
        elif path.startswith("/kv/"):
            rec = st.get_kv(path[len("/kv/"):])
            if rec is None:
                self._json(404, {"error": f"no KV for room {path[len('/kv/'):]} on prefill {st.me}"})
            else:
                self._json(200, rec)
        else:
            self._json(404, {"error": "Not Found"})

    def do_PUT(self):  # noqa: N802  (real bootstrap servers take PUT /route registrations)
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self._json(200, {"status": "ok"})
