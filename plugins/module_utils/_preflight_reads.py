# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What preflight reads on a host, for its checks and the deploy's setup steps.

Pure Python, no Ansible import; runs on the host inside the ``preflight`` module. The readers
(:func:`listening_sockets`, :func:`runtime_devices`, :func:`container_name`, :func:`rdma_and_selinux`,
:func:`container_access`) take their roots (:data:`PROC_ROOT`, :data:`DEV_ROOT`, :data:`SYS_ROOT`,
:data:`CONTAINER_STATE_ROOT`) and their file access as parameters, so tests use fake trees.

The peer probes (:func:`probe`, :func:`probe_all`) open TCP sockets but take
the connect function as a parameter, so the classifier is testable without a
network.
"""

from __future__ import annotations

import errno
import grp
import hashlib
import json
import os
import pwd
import re
import socket
import stat as stat_mod
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.launchcard.inference.plugins.module_utils._image_store import IMAGE_DATA_ROOTS

DEFAULT_CONNECT_TIMEOUT = 5.0  # a dropped SYN is retried after 1 s, then 3 s
# probe() states that prove the network path works: a listener answered, or the host's
# kernel answered with a RST because nothing listens yet (preflight runs before the servers).
REACHABLE_STATES = ("open", "refused")
# How listening_sockets names a port's holder that runs in a docker/podman container: "container <name>".
CONTAINER_OWNER = "container "
# Where podman looks for CDI specs (containers.conf(5) cdi_spec_dirs: /etc/cdi, then /var/run/cdi, which
# wins); docker's daemon configuration.
CDI_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
DOCKER_DAEMON_JSON = "/etc/docker/daemon.json"
# The Ascend control devices the units pass with the /dev/davinciN (plugins/plugin_utils/_units.py).
ASCEND_CONTROL_DEVICES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")
_CDI_KIND = re.compile(r'^\s*"?kind"?\s*:\s*"?([^"\s,]+)"?', re.M)
# a driver library mounted by its version (hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05)
_CDI_DRIVER = re.compile(r"lib(?:cuda|nvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?)")
_CONTAINER_CGROUP = re.compile(r"(?:^|/)(?:docker|libpod)[-/]([0-9a-f]{64})(?:\.scope)?(?:/|$)")


def _tcp_connect(address, port, timeout):
    sock = socket.create_connection((address, port), timeout)
    sock.close()


def probe(address, port, timeout=DEFAULT_CONNECT_TIMEOUT, connect=None):
    """Classify one TCP connect to ``address:port``.

    States: ``open`` (connected), ``refused`` (RST: the path works, nothing
    listens yet), ``timeout``, ``unreachable`` (no route / host or network
    unreachable, ICMP), ``unresolved`` (name lookup failed) or ``error``.
    Only ``open`` and ``refused`` are reachable (:data:`REACHABLE_STATES`).

    :param connect: ``connect(address, port, timeout)``, raising like
        :func:`socket.create_connection`; default a real TCP connect.
    :returns: dict ``{"address", "port", "state", "reachable", "detail"}``.
    """
    connect = connect or _tcp_connect
    detail = ""
    try:
        connect(address, port, timeout)
        state = "open"
    except socket.timeout as exc:
        state, detail = "timeout", str(exc) or "timed out after %ss" % timeout
    except socket.gaierror as exc:
        state, detail = "unresolved", str(exc)
    except OSError as exc:
        detail = str(exc)
        code = exc.errno
        if isinstance(exc, ConnectionRefusedError) or code == errno.ECONNREFUSED:
            state = "refused"
        elif code == errno.ETIMEDOUT:
            state = "timeout"
        elif code in (errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN, errno.ENETDOWN):
            state = "unreachable"
        else:
            state = "error"
    return {"address": address, "port": port, "state": state, "reachable": state in REACHABLE_STATES,
            "detail": detail}


def probe_all(peers, timeout=DEFAULT_CONNECT_TIMEOUT, connect=None, workers=32):
    """:func:`probe` every ``{"address", "port"}`` of ``peers`` in parallel threads, in order."""
    if not peers:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(peers)))) as pool:
        return list(pool.map(lambda p: probe(p["address"], int(p["port"]), timeout, connect), peers))


def parse_proc_net_tcp(text):
    """Listening TCP sockets from ``/proc/net/tcp`` or ``/proc/net/tcp6``.

    Columns (proc(5)): ``sl local_address rem_address st ... inode``; ``st``
    ``0A`` is LISTEN; the port is the hex part after ``:`` in local_address.
    :returns: dict port (int) -> socket inode (str).
    """
    out = {}
    for line in text.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 10 or cols[3] != "0A":
            continue
        try:
            port = int(cols[1].rsplit(":", 1)[1], 16)
        except (IndexError, ValueError):
            continue
        out.setdefault(port, cols[9])
    return out


def unit_from_cgroup(text):
    """The systemd service owning a process, from ``/proc/PID/cgroup``.

    :returns: e.g. ``launchcard-x.service``, or None outside a service.
    """
    for line in text.splitlines():
        path = line.rsplit(":", 1)[-1]
        for part in reversed(path.split("/")):
            if part.endswith(".service"):
                return part
    return None


def container_from_cgroup(text):
    """The docker/podman container a process runs in, from ``/proc/PID/cgroup``.

    Docker's systemd cgroup driver puts it in ``docker-<id>.scope``, its
    cgroupfs driver in ``/docker/<id>``; podman in ``libpod-<id>.scope`` (or
    ``/libpod_parent/libpod-<id>``).

    :returns: the 64-hex container id, or None outside a container.
    """
    for line in text.splitlines():
        match = _CONTAINER_CGROUP.search(line.rsplit(":", 1)[-1])
        if match:
            return match.group(1)
    return None


def parse_os_release(text):
    """``ID`` and ``VERSION_ID`` from ``/etc/os-release`` (os-release(5))."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key in ("ID", "VERSION_ID"):
            out[key.lower()] = value.strip().strip('"').strip("'")
    return out


# --------------------------------------------------------------------------
# host facts read from /proc, /dev and the group database (roots injectable for tests)

PROC_ROOT = "/proc"
"""Where the kernel's process and socket tables are mounted; tests pass a fake tree."""

DEV_ROOT = "/dev"
"""Where the device nodes are (``/dev/davinciN`` on Ascend hosts)."""

CONTAINER_STATE_ROOT = "/"
"""Root under which docker (``var/lib/docker/containers``) and podman
(``var/lib/containers/storage``) keep their container state."""


def _read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError, UnicodeDecodeError):
        return None


def container_name(cid, root=None, read=None):
    """Name of a docker or podman (root) container from the engines' own state files.

    Sources: ``<root>/var/lib/docker/containers/<id>/config.v2.json`` (``Name``) and
    ``<root>/var/lib/containers/storage/overlay-containers/containers.json`` (``names``).
    :returns: the name, else the id's first 12 characters.
    """
    root = CONTAINER_STATE_ROOT if root is None else root
    read = read or _read_text
    try:
        doc = json.loads(read(os.path.join(root, "var/lib/docker/containers/%s/config.v2.json" % cid)) or "{}")
        if doc.get("Name"):
            return doc["Name"].lstrip("/")
        listing = read(os.path.join(root, "var/lib/containers/storage/overlay-containers/containers.json"))
        for entry in json.loads(listing or "[]"):
            if entry.get("id") == cid and entry.get("names"):
                return entry["names"][0]
    except (ValueError, AttributeError, TypeError):
        pass
    return cid[:12]


def listening_sockets(proc=None, read=None, listdir=None, readlink=None, container_root=None):
    """Who holds each listening TCP port: the process and its systemd unit or container.

    Sources: ``<proc>/net/tcp`` and ``<proc>/net/tcp6`` (port -> socket inode,
    :func:`parse_proc_net_tcp`), each ``<proc>/<pid>/fd/*`` link (``socket:[inode]``)
    to find the process holding the inode, its ``<proc>/<pid>/comm`` (the process
    name, at most 15 characters) and its ``<proc>/<pid>/cgroup`` (the systemd service,
    :func:`unit_from_cgroup`, or the docker/podman container, :func:`container_from_cgroup`
    named by :func:`container_name`). Processes whose fds cannot be read (another
    user's, without root) leave their ports with ``pid`` None.

    :param proc: the proc root (default :data:`PROC_ROOT`); the other callables
        default to the ``os`` functions and are there for tests.
    :returns: ``{port (int): {"unit": str | None ("ssh.service", "container
        jupyter"), "pid": int | None, "comm": str | None}}``; the lowest PID wins when
        several processes share a socket (a forking server).
    """
    proc = PROC_ROOT if proc is None else proc
    read = read or _read_text
    listdir = listdir or os.listdir
    readlink = readlink or os.readlink
    inodes = {}
    for table in ("net/tcp", "net/tcp6"):
        for port, inode in parse_proc_net_tcp(read(os.path.join(proc, table)) or "").items():
            inodes.setdefault(inode, port)
    owners = dict((port, {"unit": None, "pid": None, "comm": None}) for port in inodes.values())
    try:
        pids = sorted((name for name in listdir(proc) if name.isdigit()), key=int)
    except OSError:
        pids = []
    for pid in pids:
        fd_dir = os.path.join(proc, pid, "fd")
        try:
            links = []
            for fd in listdir(fd_dir):
                try:
                    links.append(readlink(os.path.join(fd_dir, fd)))
                except OSError:
                    continue
        except OSError:
            continue
        hits = [inodes[link[8:-1]] for link in links if link.startswith("socket:[") and link[8:-1] in inodes]
        if not hits:
            continue
        cgroup = read(os.path.join(proc, pid, "cgroup")) or ""
        unit = unit_from_cgroup(cgroup)
        cid = None if unit else container_from_cgroup(cgroup)
        if cid:
            unit = CONTAINER_OWNER + container_name(cid, container_root)
        comm = (read(os.path.join(proc, pid, "comm")) or "").strip() or None
        for port in hits:
            if owners[port]["pid"] is None:
                owners[port] = {"unit": unit, "pid": int(pid), "comm": comm}
    return owners


def runtime_devices(dev=None, getgrnam=None, listdir=None):
    """What container device flags need from the host.

    Sources: the group database (``getent group render``: ``grp.getgrnam``, so NSS
    sources such as LDAP count) for the ``render`` group that owns ``/dev/dri/renderD*``
    on AMD hosts, and the ``davinciN`` nodes in ``<dev>`` (Ascend NPUs; ``davinci_manager``
    is not one).

    :returns: ``{"render_gid": int | None (no such group), "davinci": [int, ...]}``
        (sorted N of each ``/dev/davinciN``; empty when none).
    """
    dev = DEV_ROOT if dev is None else dev
    listdir = listdir or os.listdir
    getgrnam = getgrnam or grp.getgrnam
    try:
        render_gid = int(getgrnam("render").gr_gid)
    except (KeyError, AttributeError, TypeError, ValueError):
        render_gid = None
    try:
        names = listdir(dev)
    except OSError:
        names = []
    davinci = sorted(int(match.group(1)) for match in (re.match(r"^davinci(\d+)$", n) for n in names) if match)
    return {"render_gid": render_gid, "davinci": davinci}


SYS_ROOT = "/sys"
"""Where sysfs is mounted; tests pass a fake tree."""


def rdma_and_selinux(sys_root=None, dev=None, listdir=None, read=None):
    """What the units' RDMA and SELinux options need from the host, read in the preflight call.

    - ``rdma``: the RDMA devices (``/sys/class/infiniband/<device>``, kernel Documentation/ABI/stable/
      sysfs-class-infiniband) when the verbs device directory ``/dev/infiniband`` exists too (what the containers
      are given), else an empty list;
    - ``selinux``: ``enforcing`` or ``permissive`` (the selinuxfs ``enforce`` file, ``1``/``0``: the kernel's
      security/selinux/selinuxfs.c; libselinux's is_selinux_enabled() tests that mount), else ``disabled``.
    """
    sys_root = SYS_ROOT if sys_root is None else sys_root
    dev = DEV_ROOT if dev is None else dev
    listdir = listdir or os.listdir
    read = read or _read_text
    try:
        names = sorted(listdir(os.path.join(sys_root, "class", "infiniband")))
        listdir(os.path.join(dev, "infiniband"))
    except OSError:
        names = []
    enforce = read(os.path.join(sys_root, "fs", "selinux", "enforce"))
    selinux = {"1": "enforcing", "0": "permissive"}.get((enforce or "").strip(), "disabled")
    return {"rdma": names, "selinux": selinux}


def parse_cdi_spec(path, text):
    """What the ``container_cdi_spec`` check reads of one CDI spec (YAML or JSON, as
    ``nvidia-ctk cdi generate`` writes it): ``{"path", "kind", "driver_versions"}``.

    ``kind`` is the spec's device kind (``nvidia.com/gpu``), None when there is none; ``driver_versions``
    the sorted versions of the driver libraries its mounts name (``libcuda.so.580.95.05``,
    ``libnvidia-ml.so.580.95.05``), empty when it names none. Read as text, so no YAML parser is needed
    on the host.
    """
    kind = None
    if path.endswith(".json"):
        try:
            kind = (json.loads(text) or {}).get("kind")
        except (ValueError, AttributeError):
            kind = None
    else:
        match = _CDI_KIND.search(text)
        kind = match.group(1) if match else None
    return {"path": path, "kind": kind, "driver_versions": sorted(set(_CDI_DRIVER.findall(text)))}


def parse_docker_daemon_json(text, path=DOCKER_DAEMON_JSON):
    """The runtimes and CDI switch of docker's ``daemon.json`` (dockerd(8)): ``{"path", "runtimes": [names],
    "cdi": bool, "error": str or None}``; no file: no runtime, CDI off."""
    out = {"path": path, "runtimes": [], "cdi": False, "error": None}
    if not (text or "").strip():
        return out
    try:
        doc = json.loads(text)
        out["runtimes"] = sorted(doc.get("runtimes") or {})
        out["cdi"] = bool((doc.get("features") or {}).get("cdi"))
    except (ValueError, AttributeError, TypeError) as exc:
        out["error"] = "%s does not parse: %s" % (path, exc)
    return out


def parse_docker_info(text):
    """The runtimes and CDI state of the running docker daemon, from ``docker info --format '{{json .}}'``
    (``Runtimes``: name -> runtime; ``CDISpecDirs``: listed when CDI is on): ``{"runtimes", "cdi"}``, or
    None when the output is not that (no daemon answering)."""
    try:
        doc = json.loads(text or "")
    except ValueError:
        return None
    if not isinstance(doc, dict) or "Runtimes" not in doc:
        return None
    return {"runtimes": sorted(doc.get("Runtimes") or {}), "cdi": bool(doc.get("CDISpecDirs"))}


def container_access(runtime, vendor, dev=None, read=None, listdir=None, stat_path=None, docker_info=None,
                     cdi_dirs=None, daemon_json=None):
    """What the ``container_*`` checks need to tell whether containers can reach the accelerators.

    Read only for what applies (``runtime`` docker/podman, ``vendor`` nvidia/amd/ascend): docker + NVIDIA
    the daemon's configuration (``daemon_json``, default :data:`DOCKER_DAEMON_JSON`;
    :func:`parse_docker_daemon_json`) and, when ``docker_info`` returns text, the running daemon's view
    (:func:`parse_docker_info`); podman + NVIDIA every CDI spec (``*.yaml``, ``*.yml``, ``*.json``) in
    ``cdi_dirs`` (default :data:`CDI_SPEC_DIRS`; :func:`parse_cdi_spec`); AMD ``/dev/kfd``, ``/dev/dri``
    and the group id of each ``/dev/dri/renderD*``; Ascend the control devices
    (:data:`ASCEND_CONTROL_DEVICES`).

    :param docker_info: callable returning ``docker info --format '{{json .}}'`` output, or None.
    :returns: ``{"docker": {"daemon_json", "info"} | None, "cdi_specs": [...], "devices": {path: bool,
        "render_nodes": {path: gid}}}``.
    """
    dev = DEV_ROOT if dev is None else dev
    cdi_dirs = CDI_SPEC_DIRS if cdi_dirs is None else cdi_dirs
    daemon_json = DOCKER_DAEMON_JSON if daemon_json is None else daemon_json
    read = read or _read_text
    listdir = listdir or os.listdir
    stat_path = stat_path or os.stat
    out = {"docker": None, "cdi_specs": [], "devices": {}}
    if runtime not in IMAGE_DATA_ROOTS or vendor not in ("nvidia", "amd", "ascend"):
        return out

    def exists(path):
        try:
            stat_path(path)
            return True
        except OSError:
            return False

    def in_dev(path):
        return os.path.join(dev, path[len("/dev/"):])

    if vendor == "nvidia" and runtime == "docker":
        out["docker"] = {"daemon_json": parse_docker_daemon_json(read(daemon_json), daemon_json),
                         "info": parse_docker_info(docker_info()) if docker_info else None}
    elif vendor == "nvidia":
        for directory in cdi_dirs:
            try:
                names = sorted(listdir(directory))
            except OSError:
                continue
            for name in names:
                if name.endswith((".yaml", ".yml", ".json")):
                    text = read(os.path.join(directory, name))
                    if text is not None:
                        out["cdi_specs"].append(parse_cdi_spec(os.path.join(directory, name), text))
    elif vendor == "amd":
        for path in ("/dev/kfd", "/dev/dri"):
            out["devices"][path] = exists(in_dev(path))
        nodes = {}
        try:
            names = listdir(in_dev("/dev/dri"))
        except OSError:
            names = []
        for name in sorted(names):
            if name.startswith("renderD"):
                try:
                    nodes["/dev/dri/" + name] = stat_path(os.path.join(in_dev("/dev/dri"), name)).st_gid
                except OSError:
                    continue
        out["devices"]["render_nodes"] = nodes
    else:
        for path in ASCEND_CONTROL_DEVICES:
            out["devices"][path] = exists(in_dev(path))
    return out


def podman_version(get_bin_path, run_command):
    """The installed podman's version (``5.4.2``), from ``podman --version`` (``podman version 5.4.2``).

    The units role writes Quadlet ``.container`` files where it is 4.4 or newer (podman-systemd.unit(5)).

    :param get_bin_path: ``AnsibleModule.get_bin_path``.
    :param run_command: ``AnsibleModule.run_command``.
    :returns: the version (str), or None when podman is not installed or does not say.
    """
    binary = get_bin_path("podman")
    if not binary:
        return None
    rc, out, dummy = run_command([binary, "--version"])
    match = re.search(r"(\d+\.\d+(?:\.\d+)?)", out or "") if rc == 0 else None
    return match.group(1) if match else None


def inspect_path(path, stat_path=None, getpwuid=None, getgrgid=None, opener=open):
    """What a setup step needs to know of ``path`` to tell that it has nothing to do, read only.

    The deploy's setup steps (the engines' user and its weights directory, the
    units' readiness helper) are skipped on a host whose preflight read shows
    them in place; their own ``ansible.builtin`` tasks make any change.

    :param path: absolute path; a symbolic link is followed (as
        ``ansible.builtin.file`` and ``ansible.builtin.copy`` do with their
        ``path``/``dest``).
    :returns: ``{"exists": bool, "type": "file" | "directory" | "other" | None,
        "owner": str | None, "group": str | None, "mode": "0755" | None,
        "checksum": str | None}``: ``owner`` and ``group`` are names from the
        host's user and group databases (None when the id has no name),
        ``mode`` the permission bits as four octal digits, ``checksum`` the
        SHA-1 (hex) of a regular file's content, as ``ansible.builtin.stat``
        and ``copy`` compute it; everything None when the path is absent or
        unreadable.
    """
    stat_path = stat_path or os.stat
    getpwuid = getpwuid or pwd.getpwuid
    getgrgid = getgrgid or grp.getgrgid
    out = {"exists": False, "type": None, "owner": None, "group": None, "mode": None, "checksum": None}
    try:
        st = stat_path(path)
    except OSError:
        return out
    out["exists"] = True
    out["type"] = ("directory" if stat_mod.S_ISDIR(st.st_mode)
                   else "file" if stat_mod.S_ISREG(st.st_mode) else "other")
    out["mode"] = "%04o" % stat_mod.S_IMODE(st.st_mode)
    try:
        out["owner"] = getpwuid(st.st_uid).pw_name
    except KeyError:
        pass
    try:
        out["group"] = getgrgid(st.st_gid).gr_name
    except KeyError:
        pass
    if out["type"] == "file":
        digest = hashlib.sha1()
        try:
            with opener(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 16), b""):
                    digest.update(chunk)
            out["checksum"] = digest.hexdigest()
        except (IOError, OSError):
            pass
    return out


def user_exists(name, getpwnam=None):
    """Whether the host's user database (NSS, as ``getent passwd``) knows the user ``name``."""
    try:
        (getpwnam or pwd.getpwnam)(name)
    except KeyError:
        return False
    return True


def weights_staged(stamp_text, present_bytes):
    """Whether a revision's completion stamp still matches what its snapshot holds.

    The weights role writes the stamp (the revision's size in bytes, as
    ``hf_snapshot`` listed it, in decimal) once ``hf_snapshot`` found the
    revision complete. The snapshot is taken as still complete when the stamp
    is there and the bytes now under the snapshot (``present_bytes``, every
    file's size through its link) are exactly that many: a file removed or
    truncated since changes the sum, and then the role checks against the Hub
    again.

    :param stamp_text: the stamp's content, or None when there is no stamp.
    :returns: bool.
    """
    if stamp_text is None:
        return False
    try:
        recorded = int(stamp_text.strip())
    except ValueError:
        return False
    return recorded > 0 and recorded == present_bytes


# --------------------------------------------------------------------------
# room on the host's file systems, and the native virtualenv's stamps

def existing_ancestor(path):
    """``path``, or its nearest ancestor that exists (``/`` at the last)."""
    while not os.path.exists(path) and path not in ("/", ""):
        path = os.path.dirname(path)
    return path or "/"


def native_stamps(venv):
    """Names of the requirement stamps (``.launchcard-*``) in the virtualenv ``venv``; [] when it is absent."""
    try:
        return sorted(n for n in os.listdir(venv) if n.startswith(".launchcard-"))
    except OSError:
        return []


def shm_size():
    """``{"path", "size_bytes"}`` of ``/dev/shm`` (statvfs), or None where there is none."""
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return {"path": "/dev/shm", "size_bytes": st.f_blocks * st.f_frsize}


def image_disk(root, in_place):
    """Free bytes where the container engine keeps its images (``root``, `_image_store.image_data_root`; its nearest
    existing ancestor), with the images in place (``in_place``); None without a data root."""
    if not root:
        return None
    path = existing_ancestor(root)
    st = os.statvfs(path)
    return {"path": path, "data_root": root, "free_bytes": st.f_bavail * st.f_frsize, "in_place": in_place}


def weights_disk(weights_dir, repo, revision):
    """Free and total bytes of the weights file system, and the bytes of ``repo``'s ``revision`` already staged
    under ``weights_dir`` (the Hub cache's ``snapshots/<revision>``, every file's size through its link)."""
    path = existing_ancestor(weights_dir)
    st = os.statvfs(path or "/")
    present = 0
    if repo and revision:
        snap = os.path.join(weights_dir, "hub", "models--" + repo.replace("/", "--"), "snapshots", revision)
        for root, _dirs, files in os.walk(snap):
            for name in files:
                try:
                    present += os.stat(os.path.join(root, name)).st_size
                except OSError:
                    pass
    return {"path": path, "free_bytes": st.f_bavail * st.f_frsize, "total_bytes": st.f_blocks * st.f_frsize,
            "present_bytes": present}


def gpu_owners(accelerators, proc="/proc", read=None):
    """``{pid: owner}`` for the processes nvidia-smi lists on the GPUs: the systemd service
    (``unit_from_cgroup``) or ``container <name>``; a process outside both is left out."""
    def _read(path):
        try:
            with open(path) as handle:
                return handle.read()
        except (IOError, OSError):
            return None
    read = read or _read
    out = {}
    for device in (accelerators or {}).get("devices") or ():
        for p in device.get("processes") or ():
            cgroup = read(os.path.join(proc, str(p["pid"]), "cgroup")) or ""
            unit = unit_from_cgroup(cgroup)
            cid = None if unit else container_from_cgroup(cgroup)
            owner = unit or ("%s%s" % (CONTAINER_OWNER, container_name(cid) or cid) if cid else None)
            if owner:
                out[str(p["pid"])] = owner
    return out
