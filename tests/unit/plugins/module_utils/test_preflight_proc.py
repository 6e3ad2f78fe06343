# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What preflight reads from /proc, /dev and the group database, against fake trees."""

from __future__ import annotations

import collections
import json
import os

from ansible_collections.launchcard.inference.plugins.module_utils._preflight import evaluate
from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import stack_vendor
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_reads import (
    listening_sockets,
    runtime_devices,
)

TCP_HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
CID = "3f" * 32


def _tcp_line(n, port, state, inode):
    return ("   %d: 00000000:%04X 00000000:0000 %s 00000000:00000000 00:00000000 00000000     0        0 %d 1 "
            "0000000000000000 100 0 0 10 0\n" % (n, port, state, inode))


def fake_proc(root, processes, sockets):
    """A /proc tree: net/tcp{,6} listing ``sockets`` ({port: inode}) and one directory per process
    ``{pid: {"comm", "cgroup", "inodes"}}`` whose fd links read ``socket:[inode]``."""
    net = root / "net"
    net.mkdir(parents=True)
    lines = [_tcp_line(n, port, "0A", inode) for n, (port, inode) in enumerate(sorted(sockets.items()))]
    lines.append(_tcp_line(len(lines), 40000, "01", 999))  # ESTABLISHED: not listening
    (net / "tcp").write_text(TCP_HEADER + "".join(lines))
    (net / "tcp6").write_text(TCP_HEADER)
    for pid, proc in processes.items():
        base = root / str(pid)
        (base / "fd").mkdir(parents=True)
        (base / "comm").write_text(proc["comm"] + "\n")
        (base / "cgroup").write_text(proc["cgroup"])
        os.symlink("/dev/null", str(base / "fd" / "0"))
        for n, inode in enumerate(proc["inodes"]):
            os.symlink("socket:[%d]" % inode, str(base / "fd" / str(n + 3)))
    (root / "self").mkdir()
    return str(root)


def test_the_process_holding_a_port_is_named_with_its_pid_and_unit(tmp_path):
    proc = fake_proc(tmp_path / "proc", {
        812: {"comm": "python3", "cgroup": "0::/system.slice/ssh.service\n", "inodes": [5001]},
        900: {"comm": "sshd", "cgroup": "0::/system.slice/ssh.service\n", "inodes": [5002]},
        1200: {"comm": "vllm", "cgroup": "0::/system.slice/launchcard-v.service\n", "inodes": [5003]},
    }, {30000: 5001, 22: 5002, 8000: 5003, 9000: 5004})
    owners = listening_sockets(proc)
    assert owners == {
        30000: {"unit": "ssh.service", "pid": 812, "comm": "python3"},
        22: {"unit": "ssh.service", "pid": 900, "comm": "sshd"},
        8000: {"unit": "launchcard-v.service", "pid": 1200, "comm": "vllm"},
        9000: {"unit": None, "pid": None, "comm": None},  # no readable process holds it
    }
    facts = {"os": {"id": "debian", "version_id": "12"}, "accelerators": {}, "listening": owners}
    needs = {"ports": [{"port": 30000, "owner": "launchcard-r.service"}, {"port": 8000, "owner": "launchcard-v.service"},
                       {"port": 9000, "owner": "launchcard-v.service"}]}
    ports = [r for r in evaluate(facts, needs) if r["check"] == "ports"][0]
    assert ports["ok"] is False
    assert ports["found"] == "30000 (held by python3, pid 812, in ssh.service), 9000 (held by another process)"


def test_a_container_port_is_named_by_the_container(tmp_path):
    proc = fake_proc(tmp_path / "proc", {
        4242: {"comm": "python3", "cgroup": "0::/system.slice/docker-%s.scope\n" % CID, "inodes": [7001]},
    }, {8000: 7001})
    state = tmp_path / "host" / "var/lib/docker/containers" / CID
    state.mkdir(parents=True)
    (state / "config.v2.json").write_text(json.dumps({"Name": "/jupyter"}))
    owners = listening_sockets(proc, container_root=str(tmp_path / "host"))
    assert owners == {8000: {"unit": "container jupyter", "pid": 4242, "comm": "python3"}}
    # unknown to the engines' state: the short id
    assert listening_sockets(proc, container_root=str(tmp_path / "nowhere"))[8000]["unit"] == "container " + CID[:12]


def test_the_lowest_pid_of_a_forking_server_wins_and_a_missing_proc_is_empty(tmp_path):
    proc = fake_proc(tmp_path / "proc", {
        77: {"comm": "nginx", "cgroup": "0::/system.slice/nginx.service\n", "inodes": [6001]},
        78: {"comm": "nginx", "cgroup": "0::/system.slice/nginx.service\n", "inodes": [6001]},
    }, {80: 6001})
    assert listening_sockets(proc)[80]["pid"] == 77
    assert listening_sockets(str(tmp_path / "absent")) == {}


Group = collections.namedtuple("Group", "gr_name gr_gid")


def _groups(**gids):
    def getgrnam(name):
        if name not in gids:
            raise KeyError(name)
        return Group(name, gids[name])
    return getgrnam


def test_runtime_devices(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ("davinci0", "davinci1", "davinci10", "davinci2", "davinci_manager", "devmm_svm", "hisi_hdc"):
        (dev / name).write_text("")
    assert runtime_devices(str(dev), _groups(render=110, video=44)) == {"render_gid": 110, "davinci": [0, 1, 2, 10]}
    assert runtime_devices(str(tmp_path / "none"), _groups(video=44)) == {"render_gid": None, "davinci": []}


def test_runtime_devices_reads_this_hosts_group_database():
    devices = runtime_devices()
    assert devices["render_gid"] is None or isinstance(devices["render_gid"], int)
    assert isinstance(devices["davinci"], list)


def test_stack_vendor_tools_first_then_the_pci_bus():
    assert stack_vendor({"vendor": "amd", "pci": {"vendor": "nvidia"}}) == "amd"
    assert stack_vendor({"vendor": "none", "pci": {"vendor": "ascend", "count": 8}}) == "ascend"
    assert stack_vendor({"vendor": "none", "pci": {"vendor": None}}) == "none"
    assert stack_vendor(None) == "none"
