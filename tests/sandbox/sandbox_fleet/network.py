"""The sandbox's network on this machine: one /24 per fleet, its bridge and its owner.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection.
"""

import contextlib
import ipaddress
from pathlib import Path

from .base import FleetError, log, run
from .procs import fleet_pids, read_pidfile


def network_for(hosts):
    nets = {ipaddress.ip_network(f"{h.address}/24", strict=False) for h in hosts}
    if len(nets) != 1:
        raise FleetError("all fleet hosts must be in one /24 subnet, found: " + ", ".join(sorted(map(str, nets))))
    net = nets.pop()
    gateway = net.network_address + 1
    for h in hosts:
        if h.address in (net.network_address, net.broadcast_address, gateway):
            raise FleetError(f"host {h.name}: {h.address} is reserved ({gateway} is the machine's bridge address)")
    return net, gateway


def bridge_name(net) -> str:
    a, b, c = net.network_address.packed[:3]
    return f"lcbr{a:02x}{b:02x}{c:02x}"  # 10 characters: fits IFNAMSIZ; distinct per /24


def link_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


def link_alias(name: str) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/sys/class/net/{name}/ifalias").read_text().strip()
    return ""


def stale_owner(alias: str, name: str) -> bool:
    """True when the bridge was made by another sandbox fleet that no longer runs anything.

    A fleet killed before `down` (a cancelled CI job, a removed checkout) leaves its bridge
    behind. It is ours to reclaim only when the alias says a launchcard sandbox made it, no
    supervisor recorded in that state dir is alive, and the fleet's cgroup holds no process.
    """
    prefix = "launchcard-sandbox:"
    if not alias.startswith(prefix):
        return False
    hosts = Path(alias[len(prefix):]) / "hosts"
    if hosts.is_dir() and any(read_pidfile(h / "supervisor.pid") for h in hosts.iterdir() if h.is_dir()):
        return False
    return not fleet_pids(f"launchcard-sandbox-{name}")


def ensure_bridge(name: str, gateway, net, owner: str) -> bool:
    """Create the bridge if needed; return True if this fleet owns it."""
    if link_exists(name) and link_alias(name) != owner and stale_owner(link_alias(name), name):
        log(f"bridge {name} was left behind by a fleet that no longer runs ({link_alias(name)}); reclaiming it")
        run(["ip", "link", "del", name])
    if link_exists(name):
        alias = link_alias(name)
        if alias != owner:
            raise FleetError(f"bridge {name} already exists and belongs to {alias or 'someone else'}, "
                             f"which still runs hosts; stop it first: tests/sandbox/fleet.py down "
                             f"--state-dir {alias.split(':', 1)[-1]}")
    else:
        run(["ip", "link", "add", name, "type", "bridge"])
        run(["ip", "link", "set", "dev", name, "alias", owner])
    addr = f"{gateway}/{net.prefixlen}"
    have = run(["ip", "-o", "-4", "addr", "show", "dev", name], capture=True).stdout
    if f" {addr} " not in have:
        run(["ip", "addr", "add", addr, "dev", name])
    run(["ip", "link", "set", "dev", name, "up"])
    return True
