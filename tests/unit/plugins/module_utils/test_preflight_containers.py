# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's container_* checks (can containers reach the accelerators?) and the readers they use."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.launchcard.inference.plugins.module_utils._preflight import evaluate
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_reads import (
    container_access,
    parse_cdi_spec,
    parse_docker_daemon_json,
    parse_docker_info,
)

NEEDS = {"gpus": 2}
CONTAINER_CHECKS = ("container_nvidia_runtime", "container_cdi_spec", "container_amd_devices",
                    "container_ascend_devices")

# The shape `nvidia-ctk cdi generate` writes (abridged): device names, then the common edits mounting the
# driver's libraries by their version.
CDI_YAML = """---
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
  - name: "0"
    containerEdits:
      deviceNodes:
        - path: /dev/nvidia0
  - name: all
    containerEdits:
      deviceNodes:
        - path: /dev/nvidia0
containerEdits:
  env:
    - NVIDIA_VISIBLE_DEVICES=void
  mounts:
    - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.%(v)s
      containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.%(v)s
    - hostPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.%(v)s
      containerPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.%(v)s
"""


def _facts(vendor="nvidia", loaded="580.95.05", access=None, devices=None):
    return {"accelerators": {"vendor": vendor, "devices": [{"index": 0, "driver_version": loaded}] * 2,
                             "driver": {"loaded_version": loaded, "installed_version": loaded}},
            "container_access": access or {}, "runtime_devices": devices or {}}


def _result(name, facts, runtime, needs=None, **options):
    options.update(runtime=runtime, checks=dict((c, c == name) for c in CONTAINER_CHECKS))
    out = [r for r in evaluate(facts, NEEDS if needs is None else needs, options) if r["check"] == name]
    assert len(out) <= 1
    return out[0] if out else None


def _spec(version, path="/etc/cdi/nvidia.yaml"):
    return parse_cdi_spec(path, CDI_YAML % {"v": version})


# --- docker + NVIDIA ---------------------------------------------------------------------------------

def test_docker_daemon_json_as_nvidia_ctk_runtime_configure_leaves_it():
    text = json.dumps({"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}, "log-driver": "local"})
    assert parse_docker_daemon_json(text) == {"path": "/etc/docker/daemon.json", "runtimes": ["nvidia"],
                                              "cdi": False, "error": None}
    assert parse_docker_daemon_json(json.dumps({"features": {"cdi": True}}))["cdi"] is True
    assert parse_docker_daemon_json(None)["runtimes"] == []
    assert "does not parse" in parse_docker_daemon_json("{not json")["error"]


def test_docker_info_runtimes_and_cdi_spec_dirs():
    info = json.dumps({"Runtimes": {"io.containerd.runc.v2": {"path": "runc"}, "nvidia": {"path": "nvidia-container-runtime"},
                                    "runc": {"path": "runc"}}, "CDISpecDirs": ["/etc/cdi", "/var/run/cdi"]})
    assert parse_docker_info(info) == {"runtimes": ["io.containerd.runc.v2", "nvidia", "runc"], "cdi": True}
    assert parse_docker_info(json.dumps({"Runtimes": {"runc": {}}})) == {"runtimes": ["runc"], "cdi": False}
    assert parse_docker_info("") is None
    assert parse_docker_info("Cannot connect to the Docker daemon") is None


@pytest.mark.parametrize("conf, info, ok", [
    ({"runtimes": ["nvidia"], "cdi": False}, None, True),
    ({"runtimes": [], "cdi": True}, None, True),
    ({"runtimes": [], "cdi": False}, None, False),
    # the running daemon wins over the file: not restarted since nvidia-ctk wrote it
    ({"runtimes": ["nvidia"], "cdi": False}, {"runtimes": ["runc"], "cdi": False}, False),
    ({"runtimes": [], "cdi": False}, {"runtimes": ["nvidia", "runc"], "cdi": False}, True),
])
def test_docker_nvidia_runtime(conf, info, ok):
    access = {"docker": {"daemon_json": dict(conf, path="/etc/docker/daemon.json"), "info": info}}
    r = _result("container_nvidia_runtime", _facts(access=access), "docker")
    assert (r["ok"], r["severity"]) == (ok, "ok" if ok else "error")
    if not ok:
        assert "nvidia-ctk runtime configure --runtime=docker" in r["message"]
        assert ("docker info" if info else "/etc/docker/daemon.json") in r["found"]


def test_docker_nvidia_runtime_missing_is_a_warning_when_the_stack_role_configures_it_next():
    access = {"docker": {"daemon_json": {"runtimes": [], "cdi": False}, "info": None}}
    r = _result("container_nvidia_runtime", _facts(access=access), "docker", install_driver=True)
    assert (r["ok"], r["severity"]) == (False, "warning") and "stack role" in r["message"]
    r = _result("container_nvidia_runtime", _facts(access=access), "docker", install_driver=True,
                container_toolkit=False)
    assert r["severity"] == "error"


# --- podman + NVIDIA: the CDI spec ---------------------------------------------------------------------

def test_parse_cdi_spec_yaml_and_json():
    spec = _spec("580.95.05")
    assert spec == {"path": "/etc/cdi/nvidia.yaml", "kind": "nvidia.com/gpu", "driver_versions": ["580.95.05"]}
    doc = {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [], "containerEdits": {"mounts": [
        {"hostPath": "/usr/lib64/libcuda.so.570.86.15", "containerPath": "/usr/lib64/libcuda.so.570.86.15"}]}}
    assert parse_cdi_spec("/var/run/cdi/nvidia.json", json.dumps(doc))["driver_versions"] == ["570.86.15"]
    assert parse_cdi_spec("/var/run/cdi/x.json", json.dumps(doc))["kind"] == "nvidia.com/gpu"
    assert parse_cdi_spec("/etc/cdi/other.yaml", "cdiVersion: 0.6.0\nkind: vendor.example/fpga\n")["kind"] == \
        "vendor.example/fpga"
    assert parse_cdi_spec("/etc/cdi/bad.json", "{")["kind"] is None


def test_cdi_spec_naming_the_loaded_driver_passes():
    r = _result("container_cdi_spec", _facts(access={"cdi_specs": [_spec("580.95.05")]}), "podman")
    assert (r["ok"], r["severity"]) == (True, "ok")
    assert r["found"] == "/etc/cdi/nvidia.yaml: driver 580.95.05"


def test_no_cdi_spec_fails_with_the_command_that_writes_one():
    other = parse_cdi_spec("/etc/cdi/fpga.yaml", "kind: vendor.example/fpga\n")
    r = _result("container_cdi_spec", _facts(access={"cdi_specs": [other]}), "podman")
    assert (r["ok"], r["severity"]) == (False, "error")
    assert r["found"] == "no CDI spec of nvidia.com/gpu"
    assert "nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml" in r["message"]


def test_stale_cdi_spec_after_a_driver_upgrade_names_both_versions_and_the_fix():
    facts = _facts(loaded="580.95.05", access={"cdi_specs": [_spec("570.86.15", "/var/run/cdi/nvidia.yaml")]})
    r = _result("container_cdi_spec", facts, "podman")
    assert (r["ok"], r["severity"]) == (False, "error")
    assert "570.86.15" in r["message"] and "580.95.05" in r["message"]
    assert "nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml" in r["message"]
    # one current spec does not help while a stale one still defines the same devices
    facts["container_access"]["cdi_specs"].insert(0, _spec("580.95.05"))
    assert _result("container_cdi_spec", facts, "podman")["ok"] is False
    # the stack role regenerates it when it installs the stack
    r = _result("container_cdi_spec", facts, "podman", install_driver=True)
    assert r["severity"] == "warning" and "regenerates" in r["message"]


def test_cdi_spec_without_driver_libraries_is_a_warning():
    spec = parse_cdi_spec("/etc/cdi/nvidia.yaml", "kind: nvidia.com/gpu\ndevices: []\n")
    r = _result("container_cdi_spec", _facts(access={"cdi_specs": [spec]}), "podman")
    assert (r["ok"], r["severity"]) == (False, "warning")


def test_the_loaded_driver_is_what_nvidia_smi_reports_when_proc_is_not_readable():
    facts = _facts(access={"cdi_specs": [_spec("570.86.15")]})
    facts["accelerators"]["driver"] = {"installed_version": "580.95.05"}  # installed, not loaded yet
    facts["accelerators"]["devices"] = [{"index": 0, "driver_version": "570.86.15"}]
    assert _result("container_cdi_spec", facts, "podman")["ok"] is True


# --- AMD and Ascend ----------------------------------------------------------------------------------

def _amd(kfd=True, dri=True, nodes=None, render_gid=110):
    access = {"devices": {"/dev/kfd": kfd, "/dev/dri": dri,
                          "render_nodes": {"/dev/dri/renderD128": 110} if nodes is None else nodes}}
    return _facts("amd", access=access, devices={"render_gid": render_gid})


def test_amd_devices_and_the_render_group_from_the_host():
    r = _result("container_amd_devices", _amd(), "docker")
    assert (r["ok"], r["severity"]) == (True, "ok") and "units add group 110" in r["found"]
    r = _result("container_amd_devices", _amd(kfd=False), "podman")
    assert r["ok"] is False and "/dev/kfd missing" in r["message"]
    # the nodes belong to another group than the one the units add
    r = _result("container_amd_devices", _amd(nodes={"/dev/dri/renderD128": 992}), "docker")
    assert r["ok"] is False and "launchcard_amd_render_gid" in r["message"] and "renderD128" in r["message"]
    # ... which the variable fixes
    assert _result("container_amd_devices", _amd(nodes={"/dev/dri/renderD128": 992}), "docker",
                   amd_render_gid=992)["ok"] is True
    r = _result("container_amd_devices", _amd(render_gid=None), "docker")
    assert r["ok"] is False and "units add group none" in r["found"]


def _ascend(davinci, control=True):
    access = {"devices": dict((p, control) for p in ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"))}
    return _facts("ascend", access=access, devices={"davinci": davinci})


def test_ascend_devices_are_the_ones_the_host_has():
    r = _result("container_ascend_devices", _ascend([0, 1, 2, 3]), "docker", needs={"gpus": 4})
    assert (r["ok"], r["found"]) == (True, "/dev/davinci{0,1,2,3} present; units pass 0, 1, 2, 3")
    r = _result("container_ascend_devices", _ascend([0, 1]), "docker", needs={"gpus": 4})
    assert r["ok"] is False and "need 4" in r["message"]
    r = _result("container_ascend_devices", _ascend([0, 1, 2, 3]), "docker", needs={"gpus": 2}, ascend_devices=[6, 7])
    assert r["ok"] is False and "/dev/davinci6, /dev/davinci7" in r["message"]
    r = _result("container_ascend_devices", _ascend([0, 1], control=False), "podman")
    assert r["ok"] is False and "/dev/davinci_manager" in r["message"]
    r = _result("container_ascend_devices", _ascend([]), "podman")
    assert r["ok"] is False and "N: none" in r["found"]


# --- when they apply ---------------------------------------------------------------------------------

def test_the_container_checks_skip_native_vendor_none_routers_and_bare_hosts():
    spec_missing = _facts(access={"cdi_specs": []})
    assert _result("container_cdi_spec", spec_missing, "native") is None
    assert _result("container_cdi_spec", spec_missing, "podman", container_vendor="none") is None
    assert _result("container_cdi_spec", spec_missing, "podman", needs={"gpus": 0}) is None
    # the vendor the units use (launchcard_accelerator_vendor) picks the check, not the one found
    assert _result("container_amd_devices", spec_missing, "podman", container_vendor="amd")["ok"] is False
    bare = {"accelerators": {"devices": [], "pci": {"vendor": "nvidia", "count": 8}}, "container_access": {}}
    assert _result("container_cdi_spec", bare, "podman", install_driver=True) is None


# --- the host reader (fake trees) --------------------------------------------------------------------

def test_container_access_reads_only_what_applies(tmp_path):
    for d in ("etc/cdi", "var/run/cdi", "dev/dri"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "etc/cdi/nvidia.yaml").write_text(CDI_YAML % {"v": "580.95.05"})
    (tmp_path / "etc/cdi/README").write_text("not a spec")
    (tmp_path / "var/run/cdi/nvidia.json").write_text(json.dumps({"kind": "nvidia.com/gpu"}))
    (tmp_path / "dev/kfd").write_text("")
    (tmp_path / "dev/dri/renderD128").write_text("")
    (tmp_path / "dev/davinci_manager").write_text("")
    dirs = (str(tmp_path / "etc/cdi"), str(tmp_path / "var/run/cdi"))
    out = container_access("podman", "nvidia", dev=str(tmp_path / "dev"), cdi_dirs=dirs)
    assert [(os.path.basename(s["path"]), s["driver_versions"]) for s in out["cdi_specs"]] == [
        ("nvidia.yaml", ["580.95.05"]), ("nvidia.json", [])]
    assert out["docker"] is None and out["devices"] == {}
    amd = container_access("docker", "amd", dev=str(tmp_path / "dev"))
    assert amd["devices"] == {"/dev/kfd": True, "/dev/dri": True,
                              "render_nodes": {"/dev/dri/renderD128": os.stat(tmp_path / "dev/dri/renderD128").st_gid}}
    ascend = container_access("podman", "ascend", dev=str(tmp_path / "dev"))
    assert ascend["devices"] == {"/dev/davinci_manager": True, "/dev/devmm_svm": False, "/dev/hisi_hdc": False}
    daemon = tmp_path / "daemon.json"
    daemon.write_text(json.dumps({"runtimes": {"nvidia": {}}}))
    docker = container_access("docker", "nvidia", daemon_json=str(daemon), docker_info=lambda: None)["docker"]
    assert docker == {"daemon_json": {"path": str(daemon), "runtimes": ["nvidia"], "cdi": False, "error": None},
                      "info": None}
    assert container_access("native", "nvidia") == {"docker": None, "cdi_specs": [], "devices": {}}
    assert container_access("podman", "none") == {"docker": None, "cdi_specs": [], "devices": {}}
