"""Reading the sandbox hosts from an Ansible inventory (``ansible-inventory --list``).

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection. The ``sandbox_*`` host
variables are read here only; the collection's roles never read them.
"""

import ipaddress
import json
import re

from .base import FleetError, find_tool, run
from .rootfs import VARIANTS as ROOTFS_VARIANTS

# PCI bus ids of the eight GPUs on an HGX H100 baseboard; GPUs past eight get PCI domains 1-3
PCI_BUS_IDS = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]

DEFAULTS = {
    "sandbox_gpus": 0,
    "sandbox_gpu_model": "NVIDIA H100 80GB HBM3",
    "sandbox_gpu_memory_mib": 81559,
    "sandbox_driver_version": "580.95.05",
    "sandbox_disk_gib": 500,
    "launchcard_weights_dir": "/var/lib/launchcard/models",
    "sandbox_default_route": False,
    # "": Completed on SXM/HBM parts, [N/A] otherwise; e.g. "In Progress" (fabric manager down)
    "sandbox_fabric_state": "",
    # > 0: a service that is not launchcard's listens on this TCP port from boot
    "sandbox_busy_port": 0,
    # > 0: a bare Ascend host: this many NPUs on a simulated PCI bus (SANDBOX_PCI_DIR), no driver
    # installed; the stand-in npu-smi the stand-in driver installer brings reports them as
    # sandbox_npu_model with sandbox_npu_hbm_mib of HBM each (tests/sandbox/pkgrepo/ascend_runs.py)
    "sandbox_bare_npus": 0,
    "sandbox_npu_model": "910B3",
    "sandbox_npu_hbm_mib": 65536,
    # the host's root filesystem (rootfs.VARIANTS): "base", "podman" (Debian 12's podman and crun, with
    # /var/lib/containers on the machine's disk, and the fleet's container registry started beside the hub)
    # or "podman-trixie" (the same on Debian 13, podman 5 with Quadlet), or "vllm" (Debian 12 with libnuma1, which the
    # real vLLM links: a native host that runs it)
    "sandbox_rootfs": "base",
    # a driver version: /etc/cdi/nvidia.yaml as `nvidia-ctk cdi generate` writes it for this host's GPUs and that
    # driver (sandbox_driver_version: a current spec; another: one left by an earlier driver); "": no CDI spec
    "sandbox_cdi_spec": "",
    # true: the fleet's registry asks for basic auth, with the credentials the inventory gives the collection for
    # it, keyed by its host as the first Docker Hub mirror names it (launchcard_registry_credentials["HOST:PORT"],
    # literal values); set on every host of the fleet
    "sandbox_registry_auth": False,
    # true: the fleet runs the real vLLM (realvllm.py): its registry holds the real vLLM image under the cards' vLLM
    # image names, its wheelhouse the real vLLM's wheels, its hub the tiny real checkpoint as the example card's
    # repository; set on every host of the fleet
    "sandbox_real_vllm": False,
    # a JSON object merged into GPU 0's gpus.json entry: the state the stand-in nvidia-smi's -q -x reports
    # (tests/sandbox/nvidia_smi_standin.py: "memory.used", "processes", "remapped_rows.pending", ...)
    "sandbox_gpu0_state": "",
}


class Host:
    def __init__(self, name: str, hv: dict):
        self.name = name
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]{0,62}", name):
            raise FleetError(f"host {name!r}: name must be a valid host name (letters, digits, '-')")
        addr = hv.get("ansible_host")
        try:
            self.address = ipaddress.IPv4Address(str(addr))
        except ValueError:
            raise FleetError(f"host {name}: ansible_host must be an IPv4 address, got {addr!r}")

        def get(key, conv):
            val = hv.get(key, DEFAULTS[key])
            if isinstance(val, str) and "{{" in val:
                raise FleetError(f"host {name}: {key} is a template ({val!r}); fleet.py needs a literal value")
            try:
                return conv(val)
            except (TypeError, ValueError):
                raise FleetError(f"host {name}: {key}={val!r} is not valid")

        self.gpus = get("sandbox_gpus", int)
        self.gpu_model = get("sandbox_gpu_model", str)
        self.gpu_memory_mib = get("sandbox_gpu_memory_mib", int)
        self.driver_version = get("sandbox_driver_version", str)
        self.disk_gib = get("sandbox_disk_gib", int)
        self.weights_dir = get("launchcard_weights_dir", str)
        self.default_route = get("sandbox_default_route", _bool)
        self.fabric_state = get("sandbox_fabric_state", str)
        self.busy_port = get("sandbox_busy_port", int)
        self.bare_npus = get("sandbox_bare_npus", int)
        self.npu_model = get("sandbox_npu_model", str)
        self.npu_hbm_mib = get("sandbox_npu_hbm_mib", int)
        self.rootfs = get("sandbox_rootfs", str)
        self.cdi_spec = get("sandbox_cdi_spec", str)
        self.real_vllm = get("sandbox_real_vllm", _bool)
        self.gpu0_state = get("sandbox_gpu0_state", _json_object)
        self.registry_auth = None
        if get("sandbox_registry_auth", _bool):
            creds, mirror = hv.get("launchcard_registry_credentials"), _hub_mirror_host(hv)
            cred = creds.get(mirror) if isinstance(creds, dict) and mirror else None
            user, password = (cred.get("username"), cred.get("password")) if isinstance(cred, dict) else (None, None)
            if not all(isinstance(v, str) and v and "{{" not in v for v in (user, password)) or ":" in user:
                raise FleetError(f"host {name}: sandbox_registry_auth needs launchcard_registry_credentials with a "
                                 "literal username and password for the host of the first docker.io mirror of "
                                 "launchcard_registry_mirrors (the fleet's registry; its htpasswd)")
            self.registry_auth = (user, password)
        if self.rootfs not in ROOTFS_VARIANTS:
            raise FleetError(f"host {name}: sandbox_rootfs={self.rootfs!r} must be one of {', '.join(sorted(ROOTFS_VARIANTS))}")
        if not 0 <= self.bare_npus <= 16 or (self.bare_npus and self.gpus):
            raise FleetError(f"host {name}: sandbox_bare_npus={self.bare_npus} must be 0-16, on a host without sandbox_gpus")
        if self.gpus < 0 or self.gpus > len(PCI_BUS_IDS) * 4:
            raise FleetError(f"host {name}: sandbox_gpus={self.gpus} out of range")
        if self.cdi_spec and (not self.gpus or not re.fullmatch(r"\d+\.\d+(\.\d+)?", self.cdi_spec)):
            raise FleetError(f"host {name}: sandbox_cdi_spec={self.cdi_spec!r} must be a driver version, on a host "
                             "with sandbox_gpus")
        if self.disk_gib < 1:
            raise FleetError(f"host {name}: sandbox_disk_gib must be >= 1")
        if not 0 <= self.busy_port <= 65535 or self.busy_port == 22:
            raise FleetError(f"host {name}: sandbox_busy_port={self.busy_port} must be a TCP port (not 22), or 0")
        if not self.weights_dir.startswith("/") or ".." in self.weights_dir.split("/") or ":" in self.weights_dir:
            raise FleetError(f"host {name}: launchcard_weights_dir must be an absolute path: {self.weights_dir!r}")

    def config(self) -> dict:
        cfg = {"name": self.name, "address": str(self.address), "gpus": self.gpus, "gpu_model": self.gpu_model,
               "gpu_memory_mib": self.gpu_memory_mib, "driver_version": self.driver_version,
               "disk_gib": self.disk_gib, "weights_dir": self.weights_dir, "default_route": self.default_route}
        # only when set, so that hosts booted before these settings existed are not restarted by `up`
        if self.fabric_state:
            cfg["fabric_state"] = self.fabric_state
        if self.busy_port:
            cfg["busy_port"] = self.busy_port
        if self.rootfs != "base":
            cfg["rootfs"] = self.rootfs
        if self.cdi_spec:
            cfg["cdi_spec"] = self.cdi_spec
        if self.gpu0_state:
            cfg["gpu0_state"] = self.gpu0_state
        if self.bare_npus:
            cfg["bare_npus"] = {"count": self.bare_npus, "model": self.npu_model, "hbm_mib": self.npu_hbm_mib}
        return cfg


def _hub_mirror_host(hv):
    """HOST[:PORT] of the first Docker Hub mirror of ``launchcard_registry_mirrors`` (the fleet's registry), or None."""
    mirrors = (hv.get("launchcard_registry_mirrors") or {}).get("docker.io") if isinstance(
        hv.get("launchcard_registry_mirrors"), dict) else None
    first = (mirrors[0] if isinstance(mirrors, list) and mirrors else mirrors) or None
    location = first.get("location") if isinstance(first, dict) else first
    if not isinstance(location, str) or not location:
        return None
    return location.split("://", 1)[-1].split("/", 1)[0]


def _json_object(value) -> dict:
    if isinstance(value, dict):
        return value
    if not str(value).strip():
        return {}
    parsed = json.loads(str(value))
    if not isinstance(parsed, dict):
        raise ValueError("not a JSON object")
    return parsed


def _bool(value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(value)


def read_inventory(inventory: str):
    res = run([find_tool("ansible-inventory"), "-i", inventory, "--list"], capture=True)
    data = json.loads(res.stdout)
    hostvars = data.get("_meta", {}).get("hostvars", {})
    names = set(hostvars)
    for group, body in data.items():
        if group != "_meta" and isinstance(body, dict):
            names.update(body.get("hosts", []))
    if not names:
        raise FleetError(f"inventory {inventory} has no hosts")
    hosts = [Host(n, hostvars.get(n, {})) for n in sorted(names, key=lambda n: (str(hostvars.get(n, {}).get("ansible_host")), n))]
    seen = {}
    for h in hosts:
        if h.address in seen:
            raise FleetError(f"hosts {seen[h.address]} and {h.name} share the address {h.address}")
        seen[h.address] = h.name
    if len({h.registry_auth for h in hosts}) > 1:
        raise FleetError("sandbox_registry_auth and the registry's credentials must be the same on every host "
                         "(one registry per fleet)")
    if len({h.real_vllm for h in hosts}) > 1:
        raise FleetError("sandbox_real_vllm must be the same on every host (one registry, wheelhouse and hub per fleet)")
    return hosts
