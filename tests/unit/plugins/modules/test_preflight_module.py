# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight module in-process, through its public arguments.

The accelerators are a fake ``nvidia-smi`` on the fake host's PATH (the
fixtures of tests/unit/fixtures/accelerators/) or a sysfs-shaped PCI
directory (``pci_devices_dir``); the weights disk is a temporary directory
(``weights_dir``) with a Hugging Face cache layout; peers are real sockets on
127.0.0.1.

Not injectable through the module's arguments yet, so read from this machine:
``/proc`` (listening ports and their owners: the tests listen on a port
themselves, so the owner found is this test process), ``/etc/os-release``
(the ``os`` check is switched off, its result depends on the machine),
``/dev/shm`` and the container engines' configuration files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.launchcard.inference.plugins.module_utils import _preflight_reads as preflight_reads
from ansible_collections.launchcard.inference.plugins.modules import preflight
from ansible_collections.launchcard.inference.plugins.plugin_utils import _preflight_steps as steps
from ansible_collections.launchcard.inference.tests.unit.plugins.module_utils.accel_fixtures import with_fabric

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "accelerators"))
CAT = shutil.which("cat") or "/bin/cat"
GIB = 1024 ** 3
REPO = "zai-org/GLM-5.3-Flash"
REVISION = "0123456789abcdef0123456789abcdef01234567"


def nvidia_smi(bin_dir, gpus="nvidia-smi-h100x8.csv", fabric=("nvidia-fabric-completed.csv", 0)):
    """A fake nvidia-smi answering the module's GPU query (the list and the fabric columns) from fixtures."""
    with open(os.path.join(FIXTURES, gpus)) as g, open(os.path.join(FIXTURES, fabric[0])) as fab:
        gpus_text, states = g.read(), fab.read()
    if fabric[1] == 0:  # a driver that knows the fabric fields: one row per GPU with both
        states = with_fabric(gpus_text, states)
    answer = os.path.join(bin_dir, "nvidia-smi-answer")
    with open(answer, "w") as f:
        f.write(states)
    path = os.path.join(bin_dir, "nvidia-smi")
    with open(path, "w") as f:
        f.write('#!/bin/sh\ncase "$*" in\n  *fabric.state*) %s "%s"; exit %d;;\n  *) %s "%s";;\nesac\n' % (
            CAT, answer, fabric[1], CAT, os.path.join(FIXTURES, gpus)))
    os.chmod(path, 0o755)


def pci_bus(root, functions):
    """A sysfs-shaped PCI devices directory: {bus id: (vendor, device, class)}."""
    for bus_id, (vendor, device, klass) in functions.items():
        base = os.path.join(root, bus_id)
        os.makedirs(base)
        for key, value in (("vendor", vendor), ("device", device), ("class", klass)):
            with open(os.path.join(base, key), "w") as f:
                f.write(value + "\n")
    return root


@pytest.fixture
def listener():
    """A TCP socket listening on 127.0.0.1 (closed after the test)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield sock.getsockname()[1]
    sock.close()


@pytest.fixture
def other_process_listening():
    """Another process listening on 127.0.0.1: (port, pid)."""
    child = subprocess.Popen([sys.executable, "-c", (
        "import socket, sys, time\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(8)\n"
        "print(s.getsockname()[1], flush=True); time.sleep(120)\n")], stdout=subprocess.PIPE)
    try:
        port = int(child.stdout.readline())
        yield port, child.pid
    finally:
        child.kill()
        child.wait()


@pytest.fixture
def refusing_port():
    """A port bound on 127.0.0.1 but not listening: a connect is refused (RST)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


def needs(**over):
    base = {"disk_bytes": 1024, "gpus": 8, "validated_models": ["h100", "h200"], "weights_per_gpu_mib": 40000,
            "ports": [], "images": [], "peers": []}
    base.update(over)
    return base


def run_module(capsys, host, **args):
    args.setdefault("weights_dir", str(host["tmp"] / "models"))
    args.setdefault("checks", {"os": False})
    args.setdefault("runtime", "native")
    args.setdefault("pci_devices_dir", str(host["tmp"] / "no-pci-bus"))
    args.setdefault("vendor", "auto")
    with patch_module_args(args):
        with pytest.raises(SystemExit) as info:
            preflight.main()
    result = json.loads(capsys.readouterr().out)
    assert info.value.code == 0, result  # preflight never fails a host by itself
    # the checks its action plugin makes on the controller, from what came back (unless the call took a lock)
    return steps.checked(result, args.get("needs"), args.get("lock"))


# image_disk reads this machine's container data root, container_nvidia_runtime its docker (test_preflight_containers.py)
NO_IMAGE_DISK = {"image_disk": False, "container_nvidia_runtime": False}


def by_check(result):
    return dict((r["check"], r) for r in result["checks"])


def test_a_good_host_passes_every_check(host, capsys):
    nvidia_smi(host["bin"])
    result = run_module(capsys, host, needs=needs())
    checks = by_check(result)
    assert result["changed"] is False
    assert result["failed_checks"] == []
    assert result["bare_host"] is False
    assert sorted(checks) == ["disk", "driver", "driver_branch", "fabric", "gpu_count", "gpu_model", "memory_fit"]
    assert all(r["ok"] and r["severity"] == "ok" for r in checks.values())
    assert checks["gpu_count"]["found"] == "8 nvidia GPU(s)"
    assert checks["gpu_model"]["found"] == "h100"
    assert checks["memory_fit"]["found"] == "81559 MiB"
    assert checks["fabric"]["found"] == "completed on 8 of 8 GPUs"
    assert result["facts"]["accelerators"]["count"] == 8
    # the weights directory does not exist yet: its nearest existing ancestor is measured, nothing is created
    assert result["facts"]["disk"]["path"] == str(host["tmp"])
    assert not os.path.exists(str(host["tmp"] / "models"))


def test_each_shortfall_is_reported_and_the_module_still_succeeds(host, capsys):
    nvidia_smi(host["bin"], fabric=("nvidia-fabric-mixed.csv", 0))
    result = run_module(capsys, host, needs=needs(gpus=16, validated_models=["b200"], weights_per_gpu_mib=80000))
    checks = by_check(result)
    assert result["failed_checks"] == ["gpu_count", "gpu_model", "memory_fit", "fabric"]
    assert checks["gpu_count"]["message"] == "the recipes placed here need 16 GPUs"
    assert checks["gpu_model"]["message"] == "not validated for these recipes: h100"
    assert checks["memory_fit"]["need"] == "84096 MiB per GPU (weights 80000 + headroom 4096)"
    assert checks["memory_fit"]["message"] == "the weights do not fit in device memory"
    assert checks["fabric"]["message"].startswith("NVSwitch fabric not ready")


def test_unvalidated_hardware_can_be_allowed_as_a_warning(host, capsys):
    nvidia_smi(host["bin"])
    result = run_module(capsys, host, needs=needs(validated_models=["b200"]), allow_unvalidated_hardware=True)
    gpu_model = by_check(result)["gpu_model"]
    assert result["failed_checks"] == []
    assert gpu_model["severity"] == "warning" and gpu_model["ok"] is False
    assert gpu_model["message"].endswith("(allowed by allow_unvalidated_hardware)")


def test_disk_counts_what_of_the_revision_is_already_staged(host, capsys):
    nvidia_smi(host["bin"])
    weights = host["tmp"] / "models"
    free = os.statvfs(str(host["tmp"])).f_bavail * os.statvfs(str(host["tmp"])).f_frsize
    want = free + 10 * GIB  # 10 GiB more than the disk has

    short = by_check(run_module(capsys, host, needs=needs(disk_bytes=want), weights_dir=str(weights)))["disk"]
    assert short["ok"] is False and short["message"] == "not enough free space for the weights"

    # 20 GiB of this revision already in the HF cache (sparse: it takes no space) -> 10 GiB less is needed
    snap = weights / "hub" / ("models--" + REPO.replace("/", "--")) / "snapshots" / REVISION
    os.makedirs(str(snap / "sub"))
    with open(str(snap / "sub" / "model-00001.safetensors"), "wb") as f:
        f.truncate(20 * GIB)
    result = run_module(capsys, host, needs=needs(disk_bytes=want), weights_dir=str(weights), repo=REPO,
                        revision=REVISION)
    assert result["facts"]["disk"]["present_bytes"] == 20 * GIB
    assert result["facts"]["disk"]["path"] == str(weights)
    assert by_check(result)["disk"]["ok"] is True
    # another revision's files do not count
    other = run_module(capsys, host, needs=needs(disk_bytes=want), weights_dir=str(weights), repo=REPO,
                       revision="f" * 40)
    assert other["facts"]["disk"]["present_bytes"] == 0
    assert by_check(other)["disk"]["ok"] is False


def test_a_port_held_by_another_process_is_named(host, capsys, other_process_listening):
    # Listening ports and their owners come from this machine's /proc.
    port, pid = other_process_listening
    nvidia_smi(host["bin"])
    result = run_module(capsys, host, needs=needs(ports=[
        {"port": port, "owner": "launchcard-demo-vllm-aggregated-0.service"}]))
    ports = by_check(result)["ports"]
    owner = result["facts"]["listening"][str(port)]
    # the process holding it, by name and PID (and its unit, where it runs under one)
    assert owner["pid"] == pid
    assert result["failed_checks"] == ["ports"]
    assert ports["found"].startswith("%d (held by %s, pid %d" % (port, owner["comm"], pid))
    assert ports["message"] == "ports in use by something else"


def test_a_free_port_passes(host, capsys, refusing_port):
    nvidia_smi(host["bin"])
    result = run_module(capsys, host, needs=needs(ports=[{"port": refusing_port, "owner": "launchcard-x.service"}]))
    assert by_check(result)["ports"]["ok"] is True
    assert str(refusing_port) not in result["facts"]["listening"]


def test_peers_open_and_refused_are_reachable_an_unresolvable_one_is_not(host, capsys, listener, refusing_port):
    nvidia_smi(host["bin"])
    peers = [{"address": "127.0.0.1", "port": listener, "why": "router -> prefill server"},
             {"address": "127.0.0.1", "port": refusing_port, "why": "decode -> prefill bootstrap"}]
    result = run_module(capsys, host, needs=needs(peers=peers), connect_timeout=2.0)
    states = dict((p["port"], p["state"]) for p in result["facts"]["peers"])
    assert states == {listener: "open", refusing_port: "refused"}
    assert by_check(result)["peers"]["found"] == "reachable: 1 listening, 1 refused (host up, port not listening yet)"
    assert result["failed_checks"] == []

    bad = peers + [{"address": "peer.invalid", "port": 8998, "why": "decode -> prefill bootstrap"}]
    result = run_module(capsys, host, needs=needs(peers=bad), connect_timeout=2.0)
    check = by_check(result)["peers"]
    assert result["failed_checks"] == ["peers"]
    assert check["found"] == "blocked: peer.invalid:8998 unresolved (decode -> prefill bootstrap)"

    # checks.peers false: no connect at all
    result = run_module(capsys, host, needs=needs(peers=bad), checks={"os": False, "peers": False})
    assert result["facts"]["peers"] == [] and "peers" not in by_check(result)


def test_bare_host_passes_on_its_pci_count_only_when_the_stack_comes_next(host, capsys):
    # no vendor tool at all; 8 Huawei NPUs (processing accelerators) and an NVSwitch-like bridge on the bus
    functions = dict(("0000:%02x:00.0" % (0x81 + i), ("0x19e5", "0xd802", "0x120000")) for i in range(8))
    functions["0000:05:00.0"] = ("0x19e5", "0x1822", "0x020000")  # a Huawei NIC: not an accelerator
    pci = pci_bus(str(host["tmp"] / "sys-bus-pci-devices"), functions)

    result = run_module(capsys, host, needs=needs(), pci_devices_dir=pci, install_driver=True)
    checks = by_check(result)
    assert result["bare_host"] is True
    assert result["failed_checks"] == []
    assert checks["gpu_count"]["found"] == "8 ascend GPU(s) on the PCI bus, no driver yet"
    assert checks["driver"]["severity"] == "warning"
    assert "gpu_model" not in checks and "memory_fit" not in checks

    result = run_module(capsys, host, needs=needs(), pci_devices_dir=pci, install_driver=False)
    assert result["bare_host"] is False
    assert result["failed_checks"] == ["gpu_count"]
    assert "the PCI bus shows 8 ascend accelerator(s) without a working driver" in by_check(result)["gpu_count"]["message"]


def _without_free_space(checks):
    return [dict(c, found=None) if c["check"] == "disk" else c for c in checks]


def test_check_mode_gives_the_same_report_and_changes_nothing(host, capsys):
    nvidia_smi(host["bin"])
    before = sorted(os.listdir(str(host["tmp"])))
    args = dict(needs=needs(disk_bytes=10 ** 18))
    normal = run_module(capsys, host, **args)
    checked = run_module(capsys, host, _ansible_check_mode=True, **args)
    assert checked["changed"] is False
    # the free space is read live, and other processes write to the same disk between the two calls
    assert _without_free_space(checked["checks"]) == _without_free_space(normal["checks"])
    assert checked["failed_checks"] == normal["failed_checks"] == ["disk"]
    assert sorted(os.listdir(str(host["tmp"]))) == before


def test_checks_can_be_switched_off(host, capsys):
    nvidia_smi(host["bin"])
    result = run_module(capsys, host, needs=needs(gpus=16), checks={"os": False, "gpu_count": False, "fabric": False})
    assert "gpu_count" not in by_check(result) and "fabric" not in by_check(result)
    assert result["failed_checks"] == []


def test_the_same_call_reports_paths_users_and_whether_the_weights_are_staged(host, capsys):
    nvidia_smi(host["bin"])
    weights = host["tmp"] / "models"
    helper = host["tmp"] / "wait-ready.py"
    helper.write_bytes(b"#!/usr/bin/python3\n")
    result = run_module(capsys, host, needs=needs(), weights_dir=str(weights), repo=REPO, revision=REVISION,
                        inspect=[str(helper), str(weights)], users=["root", "no-such-user-here"])
    assert result["inspected"][str(helper)]["checksum"] == hashlib.sha1(b"#!/usr/bin/python3\n").hexdigest()
    assert result["inspected"][str(helper)]["type"] == "file"
    assert result["inspected"][str(weights)]["exists"] is False
    assert result["users"] == {"root": True, "no-such-user-here": False}
    assert result["weights_staged"] is False  # no snapshot, no stamp

    # a complete snapshot of 3000 bytes and the weights role's stamp recording them
    repo_dir = weights / "hub" / ("models--" + REPO.replace("/", "--"))
    snap = repo_dir / "snapshots" / REVISION
    os.makedirs(str(snap))
    (snap / "config.json").write_bytes(b"x" * 1000)
    (snap / "model.safetensors").write_bytes(b"y" * 2000)
    stamp = repo_dir / (".launchcard-complete-" + REVISION)
    stamp.write_text("3000\n")
    staged = run_module(capsys, host, needs=needs(), weights_dir=str(weights), repo=REPO, revision=REVISION)
    assert staged["weights_staged"] is True
    assert staged["inspected"] == {} and staged["users"] == {}
    # a file lost since the stamp: the weights role runs again
    os.unlink(str(snap / "config.json"))
    assert run_module(capsys, host, needs=needs(), weights_dir=str(weights), repo=REPO,
                      revision=REVISION)["weights_staged"] is False
    # another revision has no stamp
    assert run_module(capsys, host, needs=needs(), weights_dir=str(weights), repo=REPO,
                      revision="f" * 40)["weights_staged"] is False


def test_the_same_call_reads_the_images_the_host_record_says_it_runs(host, capsys):
    nvidia_smi(host["bin"])
    record = host["tmp"] / "state.json"
    ref = "docker.io/lmsysorg/sglang@sha256:" + "a" * 64
    assert run_module(capsys, host, needs=needs())["recorded_image_refs"] == {}
    assert run_module(capsys, host, needs=needs(), record=str(record))["recorded_image_refs"] == {}  # no record yet
    record.write_text(json.dumps({"version": 1, "card": {}, "instances": [], "units": {}, "previous": None,
                                  "runtime": {"kind": "podman", "image_refs": {"lmsysorg/sglang": ref}}}))
    result = run_module(capsys, host, needs=needs(), record=str(record))
    assert result["recorded_image_refs"] == {"lmsysorg/sglang": ref} and result["recorded_argv"] == {}
    unit = ("[Service]\nExecStart=/usr/bin/podman run --rm %s \\\n    --tp-size 2 \\\n"
            "    --chat-template \"{%%%% x %%%%}\" \\\n    --api-key $$K\nExecStop=/usr/bin/podman stop x\n" % ref)
    record.write_text(json.dumps({"version": 1, "card": {}, "previous": None,
                                  "units": {"launchcard-p-0.service": {"sha256": "0", "text": unit}},
                                  "instances": [{"recipe": "sglang-prefill", "unit": "launchcard-p-0.service",
                                                 "argv": ["sglang", "serve", "--tp-size", "2"]},
                                                {"recipe": "gone", "unit": "launchcard-g-0.service", "argv": []}],
                                  "runtime": {"kind": "podman", "image_refs": {"lmsysorg/sglang": ref}}}))
    # what each recipe's unit runs, as systemd reads its command line: the engine argv check skips what runs already
    assert run_module(capsys, host, needs=needs(), record=str(record))["recorded_argv"] == {
        "sglang-prefill": ["/usr/bin/podman", "run", "--rm", ref, "--tp-size", "2", "--chat-template", "{% x %}",
                           "--api-key", "$K"]}
    assert result["recorded_runtime_setup"] is None  # a record from before the runtime recorded its setup
    record.write_text(json.dumps({"version": 1, "card": {}, "instances": [], "units": {}, "previous": None,
                                  "runtime": {"kind": "podman", "image_refs": {}, "setup": "3f78" * 10}}))
    assert run_module(capsys, host, needs=needs(), record=str(record))["recorded_runtime_setup"] == "3f78" * 10
    record.write_text("{not json")  # a record the host cannot vouch for holds nothing
    result = run_module(capsys, host, needs=needs(), record=str(record))
    assert result["recorded_image_refs"] == {} and result["recorded_runtime_setup"] is None
    assert result["recorded_argv"] == {}
    assert run_module(capsys, host, needs=needs())["recorded_runtime_setup"] is None  # no record asked for


def test_docker_on_rhel_needs_docker_installed_and_names_no_package_to_install(host, capsys, monkeypatch):
    real_read = preflight._read
    monkeypatch.setattr(preflight, "_read", lambda path: 'ID="rocky"\nVERSION_ID="9.4"\n' if path == "/etc/os-release"
                        else real_read(path))
    nvidia_smi(host["bin"])
    result = run_module(capsys, host, needs=needs(), runtime="docker", checks=NO_IMAGE_DISK)
    assert result["container_package"] is None
    assert result["failed_checks"] == ["container_engine"]
    assert "docker-ce" in by_check(result)["container_engine"]["message"]
    docker = os.path.join(host["bin"], "docker")
    with open(docker, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(docker, 0o755)
    result = run_module(capsys, host, needs=needs(), runtime="docker", checks=NO_IMAGE_DISK)
    assert result["failed_checks"] == [] and by_check(result)["container_engine"]["found"] == docker
    result = run_module(capsys, host, needs=needs(), runtime="podman", checks=NO_IMAGE_DISK)
    assert result["container_package"] == "podman" and "container_engine" not in by_check(result)


def test_podman_with_nvidia_gpus_needs_a_cdi_spec_naming_the_loaded_driver(host, capsys, monkeypatch, tmp_path):
    cdi = tmp_path / "cdi"
    cdi.mkdir()
    monkeypatch.setattr(preflight_reads, "CDI_SPEC_DIRS", (str(cdi),))
    nvidia_smi(host["bin"])
    result = run_module(capsys, host, needs=needs(), runtime="podman", checks={"image_disk": False})
    assert result["failed_checks"] == ["container_cdi_spec"]
    assert result["facts"]["container_access"]["cdi_specs"] == []
    driver = result["facts"]["accelerators"]["devices"][0]["driver_version"]
    (cdi / "nvidia.yaml").write_text("kind: nvidia.com/gpu\ncontainerEdits:\n  mounts:\n"
                                     "    - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.%s\n" % driver)
    result = run_module(capsys, host, needs=needs(), runtime="podman", checks={"image_disk": False})
    assert result["failed_checks"] == [] and by_check(result)["container_cdi_spec"]["ok"] is True
    (cdi / "nvidia.yaml").write_text("kind: nvidia.com/gpu\ncontainerEdits:\n  mounts:\n"
                                     "    - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.470.57.02\n")
    result = run_module(capsys, host, needs=needs(), runtime="podman", checks={"image_disk": False},
                        container_vendor="nvidia")
    assert result["failed_checks"] == ["container_cdi_spec"]
    assert "470.57.02" in by_check(result)["container_cdi_spec"]["message"]
    # vendor none (the units pass no device): not checked
    result = run_module(capsys, host, needs=needs(), runtime="podman", checks={"image_disk": False},
                        container_vendor="none")
    assert "container_cdi_spec" not in by_check(result)


STORES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "image_store"))
SGLANG = "sha256:a71af71d3de851a5c62c8dd059f9ba8f30501dc0fdc908d57b60f1032a86f7de"
VLLM = "sha256:0a46e3ca24b4e815e4fdbfefcef9d478dd680668460daf70cf435eb124e9ec0d"


def engine(host, name, listing, rc=0, stderr=""):
    """A fake ``podman``/``docker`` on the host's PATH: ``image ls`` prints the file ``listing`` (the recorded or
    source-built listings of tests/unit/fixtures/image_store, or a copy) and exits ``rc``; anything else exits 2.
    Each call's arguments go to ``calls``, one line each. Returns ``(listing path, calls path)``."""
    calls = host["tmp"] / (name + "-calls")
    path = os.path.join(host["bin"], name)
    with open(path, "w") as f:
        f.write('#!/bin/sh\necho "$*" >> "%s"\nif [ "$1 $2" = "image ls" ]; then\n  printf %%s "%s" >&2\n'
                '  %s "%s"\n  exit %d\nfi\nexit 2\n' % (calls, stderr, CAT, listing, rc))
    os.chmod(path, 0o755)
    return listing, calls


def warnings_of(host):
    """The module's warnings, as it gives them: in-process, ansible-core 2.19 sends them to the controller's display
    instead of the result once any controller code was imported (ansible.module_utils.common.warnings)."""
    warned = []
    host["monkeypatch"].setattr(AnsibleModule, "warn", lambda self, warning, **kw: warned.append(warning))
    return warned


def record_of(host, kind, refs, setup=None):
    record = host["tmp"] / "state.json"
    runtime = {"kind": kind, "image_refs": refs}
    if setup:
        runtime["setup"] = setup
    record.write_text(json.dumps({"version": 1, "card": {}, "instances": [], "units": {}, "previous": None,
                                  "runtime": runtime}))
    return str(record)


def test_image_disk_needs_no_room_for_an_image_podman_lists_at_the_recorded_digest(host, capsys):
    nvidia_smi(host["bin"])
    warned = warnings_of(host)
    listing = host["tmp"] / "podman-image-ls.json"
    listing.write_text("[]\n")  # podman's answer for an empty store
    dummy, calls = engine(host, "podman", listing)
    record = record_of(host, "podman", {"lmsysorg/sglang:latest": "docker.io/lmsysorg/sglang@" + SGLANG})
    args = dict(needs=needs(images=["lmsysorg/sglang:latest"]), runtime="podman", record=record,
                checks={"container_cdi_spec": False}, image_allowance_gib=1.0e9)  # more than any disk
    result = run_module(capsys, host, **args)
    assert result["facts"]["image_disk"]["in_place"] == [] and result["failed_checks"] == ["image_disk"]
    assert not [w for w in warned if "image store" in w]  # an empty store is an answer
    with open(os.path.join(STORES, "podman-4.3.1-image-ls.json")) as f:
        listing.write_text(f.read())  # recorded after `podman pull` by digest
    result = run_module(capsys, host, **args)
    assert result["facts"]["image_disk"]["in_place"] == ["lmsysorg/sglang:latest"]
    assert result["failed_checks"] == [] and by_check(result)["image_disk"]["ok"] is True
    assert [c for c in calls.read_text().splitlines() if c.startswith("image")] == [
        "image ls --all --format json"] * 2
    assert not os.path.exists(os.path.join(str(host["tmp"]), "containers"))  # no private file read or written


@pytest.mark.parametrize("listing", ["docker-29-containerd-image-ls.jsonl", "docker-29-classic-image-ls.jsonl"])
def test_docker_29_lists_the_recorded_digests_in_either_image_store(host, capsys, listing):
    nvidia_smi(host["bin"])
    dummy, calls = engine(host, "docker", os.path.join(STORES, listing))
    record = record_of(host, "docker", {"lmsysorg/sglang:v0.5.23": "docker.io/lmsysorg/sglang@" + SGLANG,
                                        "vllm/vllm-openai:v0.11": "docker.io/vllm/vllm-openai@" + VLLM}, "3f78" * 10)
    result = run_module(capsys, host, needs=needs(images=["lmsysorg/sglang:v0.5.23", "vllm/vllm-openai:v0.11"]),
                        runtime="docker", record=record, checks={"container_nvidia_runtime": False},
                        image_allowance_gib=1.0e9)
    assert result["facts"]["image_disk"]["in_place"] == ["lmsysorg/sglang:v0.5.23", "vllm/vllm-openai:v0.11"]
    assert result["recorded_images_missing"] == [] and result["recorded_runtime_setup"] == "3f78" * 10
    assert result["failed_checks"] == []
    assert "image ls --all --digests --format {{json .}}" in calls.read_text().splitlines()


def test_an_image_of_the_record_missing_from_the_store_clears_the_recorded_runtime_setup(host, capsys):
    """An image removed from the host by hand: the deploy's runtime role runs its pull steps again for this host."""
    nvidia_smi(host["bin"])
    with open(os.path.join(STORES, "podman-4.3.1-image-ls.json")) as f:
        both = json.load(f)
    listing = host["tmp"] / "podman-image-ls.json"
    engine(host, "podman", listing)
    record = record_of(host, "podman", {"a/x:1": "docker.io/a/x@" + SGLANG, "b/y:1": "docker.io/b/y@" + VLLM},
                       "3f78" * 10)
    # with the image_disk check off too: the store is read for the record all the same
    for checks in ({"container_cdi_spec": False}, {"container_cdi_spec": False, "image_disk": False}):
        args = dict(needs=needs(images=["a/x:1", "b/y:1"]), runtime="podman", record=record, checks=checks)
        listing.write_text(json.dumps(both))
        result = run_module(capsys, host, **args)
        assert result["recorded_runtime_setup"] == "3f78" * 10 and result["recorded_images_missing"] == []
        listing.write_text(json.dumps(both[:1]))  # `podman rmi` of b/y
        result = run_module(capsys, host, **args)
        assert result["recorded_runtime_setup"] is None and result["recorded_images_missing"] == ["b/y:1"]
        assert result["recorded_image_refs"]["b/y:1"] == "docker.io/b/y@" + VLLM  # still held at its digest


@pytest.mark.parametrize("setup, why", [
    (None, "docker is not installed (no docker on PATH)"),
    ((1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n"),
     "`docker image ls --all --digests --format {{json .}}` failed (rc 1): Cannot connect to the Docker daemon at "
     "unix:///var/run/docker.sock. Is the docker daemon running?"),
])
def test_a_store_the_engine_cannot_list_holds_nothing_known_and_a_warning_says_why(host, capsys, setup, why):
    nvidia_smi(host["bin"])
    warned = warnings_of(host)
    if setup:
        engine(host, "docker", os.path.join(STORES, "docker-29-classic-image-ls.jsonl"), rc=setup[0], stderr=setup[1])
    record = record_of(host, "docker", {"lmsysorg/sglang:v0.5.23": "docker.io/lmsysorg/sglang@" + SGLANG}, "3f78" * 10)
    result = run_module(capsys, host, needs=needs(images=["lmsysorg/sglang:v0.5.23"]), runtime="docker",
                        record=record, checks={"container_nvidia_runtime": False, "container_engine": False})
    assert result["facts"]["image_disk"]["in_place"] == []
    assert result["recorded_images_missing"] == ["lmsysorg/sglang:v0.5.23"] and result["recorded_runtime_setup"] is None
    assert warned == ["image store not read: %s; no image of the host's record counts as in place (image_disk asks "
                      "room for each, the runtime role's pull steps run again)" % why]


def _lock_option(tmp, defer):
    holder = {"run_id": "run-1", "user": "ops", "controller": "ctl", "playbook": "deploy.yml", "card": "c"}
    return {"holder": holder, "paths": [{"path": str(tmp / "locks" / "host.lock"), "scope": "host", "defer": defer}],
            "break_stale": False}


@pytest.mark.parametrize("defer", [False, True])
def test_a_lock_is_taken_or_checked_only_where_every_check_passed(host, capsys, defer):
    """A lock the call takes (upgrade.yml) waits on the checks, made on the host; a deferred one (deploy.yml) is only
    checked there, the checks made on the controller; either way a host that failed one takes and reports no lock."""
    nvidia_smi(host["bin"])
    (host["tmp"] / "locks").mkdir()
    lock = _lock_option(host["tmp"], defer)
    with patch_module_args(dict(weights_dir=str(host["tmp"] / "models"), checks={"os": False}, runtime="native",
                                pci_devices_dir=str(host["tmp"] / "no-pci-bus"), needs=needs(), lock=lock)):
        with pytest.raises(SystemExit):
            preflight.main()
    raw = json.loads(capsys.readouterr().out)
    # the checks were made on the host exactly where a lock is taken in the call
    assert (raw["checks"] is not None) is (not defer) and (raw["checks_options"] is None) is (not defer)
    result = run_module(capsys, host, needs=needs(), lock=_lock_option(host["tmp"], defer))
    assert result["failed_checks"] == [] and "checks_options" not in result
    assert result["lock"]["taken"] is (not defer) and result["lock"]["held_by"] == []
    assert os.path.exists(str(host["tmp"] / "locks" / "host.lock")) is (not defer)
    if not defer:
        os.remove(str(host["tmp"] / "locks" / "host.lock"))
    failing = run_module(capsys, host, needs=needs(disk_bytes=10 ** 18), lock=_lock_option(host["tmp"], defer))
    assert failing["failed_checks"] == ["disk"]
    assert failing["lock"]["taken"] is False and failing["lock"]["reason"] == "not taken: a check of this host failed"
    assert failing["lock"]["locks"] == [] and not os.path.exists(str(host["tmp"] / "locks" / "host.lock"))
    # what the record says the host runs is read for the removal check, not returned
    assert not set(failing["facts"]) & {"recorded_units", "recorded_runtime"}


def test_the_call_compiles_no_check_and_no_other_vendors_parsers_on_the_host():
    """Each preflight call compiles what it imports (an AnsiballZ payload carries no bytecode): the checks run on the
    controller, and AMD's and Ascend's parsers load only on their hosts."""
    code = ("import sys; import ansible_collections.launchcard.inference.plugins.modules.preflight; "
            "print(' '.join(sorted(m.rsplit('.', 1)[-1] for m in sys.modules if m.startswith('ansible_collections.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))).stdout.split()
    assert "_accelerators" in out and "_preflight_reads" in out and "_gate" in out
    for heavy in ("_preflight", "_preflight_checks", "_preflight_gpu_checks", "_preflight_runtime_checks",
                  "_preflight_removal", "_accel_amd", "_accel_ascend"):
        assert heavy not in out, heavy
