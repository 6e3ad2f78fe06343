"""A small Hugging Face Hub endpoint for the sandbox: TEST CODE, not part of the collection.

It answers the HTTP endpoints that ``huggingface_hub`` (the real client, as pinned in
requirements.txt) calls for ``snapshot_download``, ``hf_hub_download``, ``list_repo_tree`` and
``model_info``, for small generated repositories, and counts the bytes of file content it serves:

- ``GET /api/models/{repo}/tree/{revision}[/{path}]``: the files of the revision, each with
  ``size``, git blob ``oid`` and, for ``*.safetensors``, ``lfs`` ``{oid (sha256), size, pointerSize}``: the shape
  huggingface_hub 2.4.0 reads (hf_api.py ``RepoFile.__init__``: ``blob_id`` from ``oid``, ``BlobLfsInfo`` from
  ``lfs["size"]``, ``lfs["oid"]`` as ``sha256`` and ``lfs["pointerSize"]``).
- ``GET /api/models/{repo}[/revision/{revision}]``: model info (``sha``, ``siblings``).
- ``HEAD``/``GET /{repo}/resolve/{revision}/{path}``: the file, with ``ETag`` (the blob's git
  oid, or sha256 for LFS files, as the Hub names them), ``X-Repo-Commit``, ``Content-Length``,
  ``Accept-Ranges: bytes``; ``Range: bytes=A-[B]`` answers 206 with ``Content-Range``.
- Errors as the Hub sends them (``X-Error-Code: RepoNotFound | RevisionNotFound | EntryNotFound``),
  which huggingface_hub turns into its typed errors.
- ``GET /_sandbox/stats``: ``{"bytes_served", "file_requests", "api_requests", "xet_token_requests",
  "files": {path: n}, "max_file_gets_at_once"}``, read by the tests (a no-op deploy must leave ``bytes_served``
  unchanged; ``max_file_gets_at_once`` is the most file ``GET``s this hub answered at the same time).
- In-process switches for the tests: ``Hub.delay`` (seconds each file ``GET`` waits before its body, so
  parallel downloads overlap) and ``Hub.before_body`` (called with the path before each file ``GET``'s body).
  ``bytes_served`` counts the file bytes sent over plain HTTP (the only way this hub can send them).
- Xet, as huggingface.co marks its Xet-backed files (on by default, ``Hub(xet=False)`` /
  ``--no-xet`` turns it off): ``*.safetensors`` carry ``xetHash`` in the tree listing and, on
  ``HEAD``/``GET resolve``, ``X-Xet-Hash`` and ``Link: <https://huggingface.co/api/models/{repo}/xet-read-token/{commit}>;
  rel="xet-auth", <https://cas-server.xethub.hf.co/...>; rel="xet-reconstruction-info"``, the headers an
  internal mirror that proxies the Hub passes through. ``GET /api/models/{repo}/xet-read-token/{rev}``
  answers a bare 404, as such a mirror does: it holds no Xet storage (:func:`xet_headers`).
- A shard cut short (``Hub.truncate = {path}`` / ``--truncate PATH``): every ``GET`` of that file sends the
  full ``Content-Length`` of what it answers but only the bytes of the file's first half, then closes the
  connection, as a proxy holding a truncated copy does (:func:`cut_body`).
- Hostile answers (tests/unit/hostile, the hostile fleet's e2e): ``Hub.list_extra = [path]`` / ``--list-path PATH``
  lists a file the repository does not hold at that path, as given (``../../x``, ``/abs/x``), with a size no file
  there has (:func:`hostile_entries`); ``Hub.flip = {path: n}`` / ``--flip PATH`` (every ``GET``) /
  ``--flip-once PATH`` serves the file with its middle byte inverted, the first ``n`` ``GET``s (``None``: every one),
  same size, same headers (:func:`flip_body`); ``stats["flipped"]`` counts them.

A revision is the repository's commit hash, or ``main`` (which resolves to it). Repositories are
generated from ``repo@revision`` specs (:func:`generate_repo`): ``config.json``, a tokenizer
config, an index and two safetensors-shaped shards (a little-endian u64 header length, a JSON
header, then the tensor bytes), deterministic for a given repo and revision; each shard holds 96 KiB of
tensor bytes, or ``SANDBOX_HUB_SHARD_BYTES`` from the environment (bench/weights_fanout.py: a revision big enough
that copying it, not Ansible's per-task work, takes the time).

A spec may name a directory (``repo@revision=DIR``): that revision serves the files of ``DIR`` instead (the
sandbox's tiny real checkpoint, ``tinymodel.py``, for the fleets that run the real vLLM).

Run: ``python -m hub.server --bind 198.18.0.1 --port 8470 --repo zai-org/GLM-5.3-Flash@<40 hex>[=DIR]``
(from tests/sandbox), or :func:`start` in-process (unit tests).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

DEFAULT_PORT = 8470
# tensor bytes per shard: small, so a fleet downloads in a blink; SANDBOX_HUB_SHARD_BYTES makes a bench's bigger
SHARD_BYTES = int(os.environ.get("SANDBOX_HUB_SHARD_BYTES") or 96 * 1024)
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 (git's object id, not security)


def _safetensors(name: str, seed: bytes, nbytes: int) -> bytes:
    """A safetensors-shaped file: u64 header size, JSON header, ``nbytes`` of F16 data."""
    header = json.dumps({"__metadata__": {"format": "pt"},
                         name: {"dtype": "F16", "shape": [nbytes // 2], "data_offsets": [0, nbytes]}},
                        separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)
    if nbytes > 96 * 1024:  # a bench's big shard (SANDBOX_HUB_SHARD_BYTES): one C call, not a Python loop
        return struct.pack("<Q", len(header)) + header + hashlib.shake_256(seed).digest(nbytes)
    body = bytearray()
    block = seed
    while len(body) < nbytes:
        block = hashlib.sha256(block).digest()
        body += block
    return struct.pack("<Q", len(header)) + header + bytes(body[:nbytes])


def generate_repo(repo: str, revision: str) -> dict:
    """The files (path -> bytes) of the sandbox repository ``repo`` at ``revision``."""
    seed = ("%s@%s" % (repo, revision)).encode()
    shards = ["model-%05d-of-00002.safetensors" % i for i in (1, 2)]
    files = {
        # the shape fields preflight's memory_budget reads (a two-layer model's: its KV cache is a few MiB)
        "config.json": json.dumps({"architectures": ["SandboxForCausalLM"], "model_type": "sandbox",
                                   "_name_or_path": repo, "torch_dtype": "float16", "num_hidden_layers": 2,
                                   "num_attention_heads": 4, "num_key_value_heads": 4, "hidden_size": 64,
                                   "max_position_embeddings": 8192}, indent=2).encode() + b"\n",
        "tokenizer_config.json": json.dumps({"model_max_length": 8192}, indent=2).encode() + b"\n",
        "model.safetensors.index.json": json.dumps(
            {"metadata": {"total_size": 2 * SHARD_BYTES},
             "weight_map": {"layers.%d.weight" % i: s for i, s in enumerate(shards)}}, indent=2).encode() + b"\n",
    }
    for i, shard in enumerate(shards):
        files[shard] = _safetensors("layers.%d.weight" % i, seed + shard.encode(), SHARD_BYTES)
    return files


def load_dir(path: str) -> dict:
    """The files (relative path -> bytes) under the directory ``path``, for a repository revision."""
    files = {}
    for top, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted(names):
            full = os.path.join(top, name)
            with open(full, "rb") as f:
                files[os.path.relpath(full, path).replace(os.sep, "/")] = f.read()
    if not files:
        raise ValueError("repo directory %r holds no files" % path)
    return files


def spec_files(spec: str) -> dict:
    """The files a spec serves: ``repo@revision=DIR``: DIR's; ``repo@revision``: :func:`generate_repo`'s."""
    spec, dummy, directory = spec.partition("=")
    repo_id, dummy, commit = spec.partition("@")
    return load_dir(directory) if directory else generate_repo(repo_id, commit)


class Repo:
    def __init__(self, repo_id: str, commit: str, files: dict):
        self.repo_id = repo_id
        self.commit = commit
        self.files = files
        self.meta = {}
        for path, data in files.items():
            entry = {"type": "file", "oid": _git_blob_oid(data), "size": len(data), "path": path}
            if path.endswith(".safetensors"):
                entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            self.meta[path] = entry

    def etag(self, path: str) -> str:
        m = self.meta[path]
        return m["lfs"]["oid"] if "lfs" in m else m["oid"]


class Hub:
    """Repositories and counters, shared by the request handler threads."""

    def __init__(self, specs=(), xet=True):
        self.repos = {}
        self.lock = threading.Lock()
        self.stats = {"bytes_served": 0, "file_requests": 0, "api_requests": 0, "xet_token_requests": 0, "files": {},
                      "max_file_gets_at_once": 0, "flipped": 0}
        self.gets_now = 0  # file GETs being answered now
        self.delay = 0.0  # seconds each file GET waits before its body
        self.before_body = None  # called with the path before each file GET's body
        self.xet = xet  # mark the safetensors Xet-backed, as huggingface.co does (xet_headers)
        self.truncate = set()  # repository paths whose GET is cut short (cut_body)
        self.list_extra = []  # hostile paths the tree listing names (hostile_entries)
        self.flip = {}  # repository path -> GETs left that get one byte inverted, None: every one (flip_body)
        for spec in specs:
            self.add(spec)

    def add(self, spec: str, files: dict | None = None) -> Repo:
        repo_id, commit = spec.partition("=")[0].split("@", 1) if "@" in spec else (spec, "")
        if not _COMMIT.match(commit):
            raise ValueError("repo spec %r: want owner/name@<40 hex commit>" % spec)
        repo = Repo(repo_id, commit, files if files is not None else spec_files(spec))
        self.repos.setdefault(repo_id, {})[commit] = repo
        return repo

    def count(self, key: str, n: int = 1, path: str | None = None) -> None:
        with self.lock:
            self.stats[key] += n
            if path is not None:
                self.stats["files"][path] = self.stats["files"].get(path, 0) + 1

    def get_started(self) -> None:
        with self.lock:
            self.gets_now += 1
            self.stats["max_file_gets_at_once"] = max(self.stats["max_file_gets_at_once"], self.gets_now)

    def get_ended(self) -> None:
        with self.lock:
            self.gets_now -= 1

    def snapshot(self) -> dict:
        with self.lock:
            return json.loads(json.dumps(self.stats))


# --- Xet, as the Hub marks its Xet-backed files --------------------------------------------------------

XET_TOKEN_ROUTE = re.compile(r"^/api/models/([^/]+/[^/]+)/xet-read-token/([^/]+)$")


def is_xet_file(hub: Hub, path: str) -> bool:
    """Whether ``hub`` marks ``path`` Xet-backed: the safetensors shards, when ``hub.xet`` is on."""
    return hub.xet and path.endswith(".safetensors")


def xet_hash(data: bytes) -> str:
    """64 hex digits standing in for the Xet content hash (huggingface_hub only checks the form: utils/_xet.py
    is_valid_xet_hash); no Xet storage can be reached from the sandbox, so nothing reconstructs from it."""
    return hashlib.blake2b(data, digest_size=32).hexdigest()


def xet_tree_fields(hub: Hub, repo: Repo, path: str) -> dict:
    """The tree listing's ``xetHash`` of a Xet-backed file (huggingface_hub hf_api.py RepoFile reads ``xetHash``)."""
    return {"xetHash": xet_hash(repo.files[path])} if is_xet_file(hub, path) else {}


def xet_headers(hub: Hub, repo: Repo, path: str) -> dict:
    """The ``resolve`` headers of a Xet-backed file as huggingface.co sends them and a proxying mirror passes on.

    huggingface_hub 2.4.0 takes the Xet path when ``X-Xet-Hash`` and the ``xet-auth`` link are both present
    (utils/_xet.py parse_xet_file_data_from_response) and rewrites the link's https://huggingface.co to its
    endpoint, so the token request comes back to this hub; the reconstruction link names the Hub's CAS host
    (the Link header as hf-mirror-site#50 and #51 quote it)."""
    if not is_xet_file(hub, path):
        return {}
    digest = xet_hash(repo.files[path])
    return {"X-Xet-Hash": digest,
            "Link": '<https://huggingface.co/api/models/%s/xet-read-token/%s>; rel="xet-auth", '
                    '<https://cas-server.xethub.hf.co/v1/reconstructions/%s>; rel="xet-reconstruction-info"'
                    % (repo.repo_id, repo.commit, digest)}


def cut_body(hub: Hub, path: str, size: int, start: int, body: bytes) -> bytes | None:
    """What a proxy holding only the first half of ``path`` sends of ``body`` (the file's bytes from ``start``),
    or None when ``path`` is not cut: the bytes below ``size // 2``."""
    if path not in hub.truncate:
        return None
    return body[:max(0, size // 2 - start)]


def hostile_entries(hub: Hub) -> list:
    """The tree entries of ``hub.list_extra``: each path as given, 4096 bytes long, the blob id of that many zeros."""
    return [{"type": "file", "oid": _git_blob_oid(bytes(4096)), "size": 4096, "path": p} for p in hub.list_extra]


def flip_body(hub: Hub, path: str, size: int, start: int, body: bytes) -> bytes:
    """``body`` (the bytes of ``path`` from ``start``) with the file's middle byte inverted while ``hub.flip`` says so."""
    with hub.lock:
        if path not in hub.flip or hub.flip[path] == 0 or not start <= size // 2 < start + len(body):
            return body
        if hub.flip[path] is not None:
            hub.flip[path] -= 1
        hub.stats["flipped"] += 1
    out = bytearray(body)
    out[size // 2 - start] ^= 0xFF
    return bytes(out)


class _Handler(BaseHTTPRequestHandler):
    server_version = "launchcard-sandbox-hub/1"
    protocol_version = "HTTP/1.1"
    hub: Hub = None  # set per server

    def log_message(self, fmt, *args):  # quiet: the tests read /_sandbox/stats instead
        if os.environ.get("LAUNCHCARD_HUB_LOG"):
            sys.stderr.write("hub: " + (fmt % args) + "\n")

    # --- helpers ---
    def _send(self, status, body=b"", headers=None, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, doc, status=200):
        self._send(status, json.dumps(doc).encode())

    def _error(self, status, code, message):
        self._send(status, json.dumps({"error": message}).encode(),
                   {"X-Error-Code": code, "X-Error-Message": message})

    def _lookup(self, repo_id, revision):
        revs = self.hub.repos.get(repo_id)
        if revs is None:
            self._error(404, "RepoNotFound", "Repository %s not found" % repo_id)
            return None
        if revision == "main":
            return list(revs.values())[-1]
        repo = revs.get(revision)
        if repo is None:
            self._error(404, "RevisionNotFound", "Invalid rev id: %s" % revision)
        return repo

    # --- routes ---
    def do_HEAD(self):  # noqa: N802 (http.server's naming)
        self.do_GET()

    def do_GET(self):  # noqa: N802
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        if path == "/_sandbox/stats":
            return self._json(self.hub.snapshot())
        m = re.match(r"^/api/models/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?$", path)
        if m:
            self.hub.count("api_requests")
            repo = self._lookup(m.group(1), m.group(2))
            if repo is None:
                return None
            prefix = (m.group(3) or "").strip("/")
            entries = [dict(e, **xet_tree_fields(self.hub, repo, p))
                       for p, e in sorted(repo.meta.items()) if not prefix or p.startswith(prefix + "/")]
            entries += hostile_entries(self.hub) if not prefix else []
            return self._json(entries)
        m = re.match(r"^/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?$", path)
        if m:
            self.hub.count("api_requests")
            repo = self._lookup(m.group(1), m.group(2) or "main")
            if repo is None:
                return None
            siblings = [{"rfilename": p, "size": e["size"], "blobId": e["oid"],
                         **({"lfs": {"sha256": e["lfs"]["oid"], "size": e["size"], "pointerSize": 134}}
                            if "lfs" in e else {})} for p, e in sorted(repo.meta.items())]
            return self._json({"id": repo.repo_id, "modelId": repo.repo_id, "sha": repo.commit,
                               "private": False, "gated": False, "disabled": False, "tags": [],
                               "siblings": siblings})
        m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
        if m:
            return self._file(m.group(1), m.group(2), m.group(3))
        if XET_TOKEN_ROUTE.match(path):
            self.hub.count("xet_token_requests")
            return self._send(404, b"Not Found", ctype="text/plain")  # a bare 404: no Hub error code
        return self._error(404, "EntryNotFound", "no route %s" % path)

    def _file(self, repo_id, revision, fname):
        repo = self._lookup(repo_id, revision)
        if repo is None:
            return None
        data = repo.files.get(fname)
        if data is None:
            return self._error(404, "EntryNotFound", "%s does not exist at %s" % (fname, revision))
        headers = {"ETag": '"%s"' % repo.etag(fname), "X-Repo-Commit": repo.commit, "Accept-Ranges": "bytes"}
        headers.update(xet_headers(self.hub, repo, fname))
        status, body, start = 200, data, 0
        rng = re.match(r"^bytes=(\d+)-(\d*)$", self.headers.get("Range", "").strip())
        if rng:
            start = int(rng.group(1))
            end = int(rng.group(2)) if rng.group(2) else len(data) - 1
            if start >= len(data) or end < start:
                headers["Content-Range"] = "bytes */%d" % len(data)
                return self._send(416, b"", headers, "application/octet-stream")
            end = min(end, len(data) - 1)
            status, body = 206, data[start:end + 1]
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, end, len(data))
        if self.command == "GET":
            self.hub.count("file_requests", path=fname)
            self.hub.get_started()
            try:
                if self.hub.before_body:
                    self.hub.before_body(fname)
                time.sleep(self.hub.delay)
                body = flip_body(self.hub, fname, len(data), start, body)
                cut = cut_body(self.hub, fname, len(data), start, body)
                if cut is not None:
                    return self._send_cut(status, body, cut, headers)
                self.hub.count("bytes_served", len(body))
                return self._send(status, body, headers, "application/octet-stream")
            finally:
                self.hub.get_ended()
        return self._send(status, body, headers, "application/octet-stream")

    def _send_cut(self, status, body, cut, headers):
        """Promise ``len(body)`` bytes, send ``cut``, close the connection (see :func:`cut_body`)."""
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(cut)
        self.wfile.flush()
        self.hub.count("bytes_served", len(cut))
        self.close_connection = True


def start(hub: Hub, bind: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """Serve ``hub`` on ``bind:port`` (0: any free port) in a daemon thread; returns the server."""
    handler = type("Handler", (_Handler,), {"hub": hub})
    server = ThreadingHTTPServer((bind, port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="sandbox-hub", daemon=True).start()
    return server


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Sandbox Hugging Face Hub endpoint (test code)")
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT)
    ap.add_argument("--repo", action="append", default=[],
                    help="owner/name@<40-hex commit>[=DIR] (DIR: serve its files), repeatable")
    ap.add_argument("--no-xet", action="store_true", help="serve the safetensors as plain (non-Xet) files")
    ap.add_argument("--truncate", action="append", default=[], help="a repository path whose GETs are cut short")
    ap.add_argument("--list-path", action="append", default=[], help="a (hostile) path the tree listing names too")
    ap.add_argument("--flip", action="append", default=[], help="a repository path served with one byte inverted")
    ap.add_argument("--flip-once", action="append", default=[], help="the same, for its first GET only")
    args = ap.parse_args(argv)
    hub = Hub(args.repo, xet=not args.no_xet)
    hub.truncate.update(args.truncate)
    hub.list_extra.extend(args.list_path)
    hub.flip.update(dict.fromkeys(args.flip_once, 1))
    hub.flip.update(dict.fromkeys(args.flip))
    handler = type("Handler", (_Handler,), {"hub": hub})
    server = ThreadingHTTPServer((args.bind, args.port), handler)
    server.daemon_threads = True
    print("sandbox hub on http://%s:%d serving %s" % (args.bind, args.port, ", ".join(args.repo) or "nothing"),
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
