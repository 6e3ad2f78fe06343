"""Unit tests for the sandbox fleet's pure parts (no root, no containers).

Covers the stand-in nvidia-smi (TEST CODE) against gpus.json as fleet.py
writes it, and fleet.py's inventory/network/mirror helpers.
"""

import ipaddress
import os
import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fleet  # noqa: E402

SMI = HERE / "nvidia_smi_standin.py"


@pytest.fixture
def gpus_file(tmp_path):
    host = fleet.Host("lc-test", {"ansible_host": "198.18.0.11", "sandbox_gpus": 8})
    path = tmp_path / "gpus.json"
    path.write_text(json.dumps(fleet.gpus_json(host)))
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
    h = fleet.Host("lc-x", {"ansible_host": "198.18.0.20"})
    assert (h.gpus, h.gpu_memory_mib, h.disk_gib, h.weights_dir) == (0, 81559, 500, "/var/lib/launchcard/models")
    assert fleet.gpus_json(h)["gpus"] == []
    with pytest.raises(fleet.FleetError):
        fleet.Host("lc-x", {"ansible_host": "lc-x.example"})
    with pytest.raises(fleet.FleetError):
        fleet.Host("lc-x", {"ansible_host": "198.18.0.20", "launchcard_weights_dir": "relative"})


def test_network_and_bridge_name():
    hosts = [fleet.Host(f"h{i}", {"ansible_host": f"198.18.0.{i}"}) for i in (11, 12)]
    net, gw = fleet.network_for(hosts)
    assert (str(net), str(gw), fleet.bridge_name(net)) == ("198.18.0.0/24", "198.18.0.1", "lcbrc61200")
    assert fleet.bridge_name(ipaddress.ip_network("198.18.1.0/24")) != "lcbrc61200"
    with pytest.raises(fleet.FleetError):
        fleet.network_for(hosts + [fleet.Host("h3", {"ansible_host": "198.18.1.5"})])
    with pytest.raises(fleet.FleetError):
        fleet.network_for([fleet.Host("h1", {"ansible_host": "198.18.0.1"})])


def test_mirror_rank_prefers_main_archive():
    main = fleet._mirror_rank("http://mirror.example/debian", "bookworm", "main")
    assert main > fleet._mirror_rank("http://mirror.example/debian", "bookworm-updates", "main")
    assert fleet._mirror_rank("http://mirror.example/debian-security", "bookworm-security", "main") == 0
    assert fleet._mirror_rank("http://mirror.example/debian", "bookworm", "contrib") == 0


def test_fabric_state_and_busy_port(tmp_path):
    plain = fleet.Host("lc-x", {"ansible_host": "198.18.0.20", "sandbox_gpus": 8})
    assert "fabric_state" not in plain.config() and "busy_port" not in plain.config()  # old boot.json still matches
    assert {(g["fabric.state"], g["fabric.status"]) for g in fleet.gpus_json(plain)["gpus"]} == {("Completed", "Success")}
    down = fleet.Host("lc-x", {"ansible_host": "198.18.0.20", "sandbox_gpus": 8, "sandbox_fabric_state": "In Progress",
                               "sandbox_busy_port": "30000"})
    assert (down.config()["fabric_state"], down.config()["busy_port"]) == ("In Progress", 30000)
    path = tmp_path / "gpus.json"
    path.write_text(json.dumps(fleet.gpus_json(down)))
    out = smi(path, "--query-gpu=index,fabric.state,fabric.status", "--format=csv,noheader").stdout.splitlines()
    assert out[0] == "0, In Progress, [N/A]" and len(out) == 8
    with pytest.raises(fleet.FleetError):
        fleet.Host("lc-x", {"ansible_host": "198.18.0.20", "sandbox_busy_port": 22})


def test_stale_owner_only_for_dead_launchcard_fleets(tmp_path):
    hosts = tmp_path / "hosts"
    (hosts / "lc-a").mkdir(parents=True)
    alias = f"launchcard-sandbox:{tmp_path}"
    unused = "lcbrtest0"  # no cgroup by that name exists
    # no pid file at all, and a pid file of a process that has gone: reclaimable
    assert fleet.stale_owner(alias, unused)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    (hosts / "lc-a" / "supervisor.pid").write_text(f"{dead} 1\n")
    assert fleet.stale_owner(alias, unused)
    # a live supervisor recorded in the owner's state dir: never
    fleet.write_pidfile(hosts / "lc-a" / "supervisor.pid", os.getpid())
    assert not fleet.stale_owner(alias, unused)
    # bridges someone else made are never reclaimed, whatever state they are in
    assert not fleet.stale_owner("", unused)
    assert not fleet.stale_owner(f"other-tool:{tmp_path}", unused)
