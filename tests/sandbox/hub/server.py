"""A small Hugging Face Hub endpoint for the sandbox: TEST CODE, not part of the collection.

It answers the HTTP endpoints that ``huggingface_hub`` (the real client, as pinned in
requirements.txt) calls for ``snapshot_download``, ``hf_hub_download``, ``list_repo_tree`` and
``model_info``, for small generated repositories, and counts the bytes of file content it serves:

- ``GET /api/models/{repo}/tree/{revision}[/{path}]``: the files of the revision, each with
  ``size``, git blob ``oid`` and, for ``*.safetensors``, ``lfs`` ``{oid (sha256), size}``.
- ``GET /api/models/{repo}[/revision/{revision}]``: model info (``sha``, ``siblings``).
- ``HEAD``/``GET /{repo}/resolve/{revision}/{path}``: the file, with ``ETag`` (the blob's git
  oid, or sha256 for LFS files, as the Hub names them), ``X-Repo-Commit``, ``Content-Length``,
  ``Accept-Ranges: bytes``; ``Range: bytes=A-[B]`` answers 206 with ``Content-Range``.
- Errors as the Hub sends them (``X-Error-Code: RepoNotFound | RevisionNotFound | EntryNotFound``),
  which huggingface_hub turns into its typed errors.
- ``GET /_sandbox/stats``: ``{"bytes_served", "file_requests", "api_requests", "files": {path: n}}``,
  read by the tests (a no-op deploy must leave ``bytes_served`` unchanged).

A revision is the repository's commit hash, or ``main`` (which resolves to it). Repositories are
generated from ``repo@revision`` specs (:func:`generate_repo`): ``config.json``, a tokenizer
config, an index and two safetensors-shaped shards (a little-endian u64 header length, a JSON
header, then the tensor bytes), deterministic for a given repo and revision.

Run: ``python -m hub.server --bind 198.18.0.1 --port 8470 --repo zai-org/GLM-5.3-Flash@<40 hex>``
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

DEFAULT_PORT = 8470
SHARD_BYTES = 96 * 1024  # tensor bytes per shard: small, so a fleet downloads in a blink
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 (git's object id, not security)


def _safetensors(name: str, seed: bytes, nbytes: int) -> bytes:
    """A safetensors-shaped file: u64 header size, JSON header, ``nbytes`` of F16 data."""
    header = json.dumps({"__metadata__": {"format": "pt"},
                         name: {"dtype": "F16", "shape": [nbytes // 2], "data_offsets": [0, nbytes]}},
                        separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)
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
        "config.json": json.dumps({"architectures": ["SandboxForCausalLM"], "model_type": "sandbox",
                                   "_name_or_path": repo, "torch_dtype": "float16"}, indent=2).encode() + b"\n",
        "tokenizer_config.json": json.dumps({"model_max_length": 8192}, indent=2).encode() + b"\n",
        "model.safetensors.index.json": json.dumps(
            {"metadata": {"total_size": 2 * SHARD_BYTES},
             "weight_map": {"layers.%d.weight" % i: s for i, s in enumerate(shards)}}, indent=2).encode() + b"\n",
    }
    for i, shard in enumerate(shards):
        files[shard] = _safetensors("layers.%d.weight" % i, seed + shard.encode(), SHARD_BYTES)
    return files


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

    def __init__(self, specs=()):
        self.repos = {}
        self.lock = threading.Lock()
        self.stats = {"bytes_served": 0, "file_requests": 0, "api_requests": 0, "files": {}}
        for spec in specs:
            self.add(spec)

    def add(self, spec: str, files: dict | None = None) -> Repo:
        repo_id, dummy, commit = spec.partition("@")
        if not _COMMIT.match(commit):
            raise ValueError("repo spec %r: want owner/name@<40 hex commit>" % spec)
        repo = Repo(repo_id, commit, files if files is not None else generate_repo(repo_id, commit))
        self.repos.setdefault(repo_id, {})[commit] = repo
        return repo

    def count(self, key: str, n: int = 1, path: str | None = None) -> None:
        with self.lock:
            self.stats[key] += n
            if path is not None:
                self.stats["files"][path] = self.stats["files"].get(path, 0) + 1

    def snapshot(self) -> dict:
        with self.lock:
            return json.loads(json.dumps(self.stats))


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
            entries = [e for p, e in sorted(repo.meta.items()) if not prefix or p.startswith(prefix + "/")]
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
        return self._error(404, "EntryNotFound", "no route %s" % path)

    def _file(self, repo_id, revision, fname):
        repo = self._lookup(repo_id, revision)
        if repo is None:
            return None
        data = repo.files.get(fname)
        if data is None:
            return self._error(404, "EntryNotFound", "%s does not exist at %s" % (fname, revision))
        headers = {"ETag": '"%s"' % repo.etag(fname), "X-Repo-Commit": repo.commit, "Accept-Ranges": "bytes"}
        status, body = 200, data
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
            self.hub.count("bytes_served", len(body))
        return self._send(status, body, headers, "application/octet-stream")


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
    ap.add_argument("--repo", action="append", default=[], help="owner/name@<40-hex commit>, repeatable")
    args = ap.parse_args(argv)
    hub = Hub(args.repo)
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
