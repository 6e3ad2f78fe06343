# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The accelerator vendors' exporters (issue 43, item 2): their units, checked at render level (no accelerator
here), and their scrape targets."""

from __future__ import annotations

import json
import shlex
import shutil
import stat
import subprocess

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _gpu_exporter as ge
from ansible_collections.launchcard.inference.plugins.plugin_utils import _scrape_targets as st
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import normalize_placement, plan_fleet
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.planner_cases import EX, SANDBOX

DIGEST = "sha256:" + "ab" * 32
IMAGES = {"nvidia": "nvcr.io/nvidia/k8s/dcgm-exporter@" + DIGEST, "amd": "rocm/device-metrics-exporter@" + DIGEST,
          "ascend": "registry.example/npu-exporter@" + DIGEST}


def _exec_start(text):
    """The ExecStart= words, continuation lines joined as systemd joins them (systemd.syntax(7))."""
    joined = text.replace(" \\\n    ", " ")
    line = [ln for ln in joined.splitlines() if ln.startswith("ExecStart=")][0]
    return shlex.split(line[len("ExecStart="):])


@pytest.mark.parametrize("vendor,runtime,want", [
    ("nvidia", "docker", ["--gpus", "all", "--cap-add", "SYS_ADMIN", "--publish", "9400:9400", IMAGES["nvidia"]]),
    ("nvidia", "podman", ["--device", "nvidia.com/gpu=all", "--cap-add", "SYS_ADMIN", "--publish", "9400:9400"]),
    ("amd", "docker", ["--device", "/dev/dri", "--device", "/dev/kfd", "--publish", "5000:5000", IMAGES["amd"]]),
    ("ascend", "docker", ["--privileged", "-v", "/usr/local/Ascend/driver:/usr/local/Ascend/driver:ro",
                          "-v", "/usr/local/dcmi:/usr/local/dcmi:ro", "-v", "/etc/localtime:/etc/localtime:ro",
                          "--publish", "8082:8082",
                          "--entrypoint", "npu-exporter", IMAGES["ascend"], "-port=8082", "-ip=0.0.0.0"]),
])
def test_each_vendor_runs_its_exporter_as_upstream_documents(vendor, runtime, want):
    text = ge.render(ge.settings(vendor, IMAGES[vendor], runtime))
    words = _exec_start(text)
    # podman: no --rm, its client would exit 127 if conmon removed the container first, and its lines go to the
    # unit's own journal stream once (_unit_spec.container_run)
    head = ["--rm"] if runtime == "docker" else ["--log-driver=passthrough"]
    assert words[:5] == ["/usr/bin/%s" % runtime, "run"] + head + ["--name", ge.CONTAINER]
    assert "ExecStopPost=-/usr/bin/%s rm -f %s" % (runtime, ge.CONTAINER) in text
    joined = " ".join(words)
    assert " ".join(want) in joined
    assert ("Requires=docker.service" in text) == (runtime == "docker")
    assert "ExecStop=/usr/bin/%s stop -t 10 %s" % (runtime, ge.CONTAINER) in text
    assert text.endswith("WantedBy=multi-user.target\n")


def test_a_port_moves_the_published_port_and_the_ascend_listener():
    assert "9500:9400" in _exec_start(ge.render(ge.settings("nvidia", IMAGES["nvidia"], port=9500)))
    words = _exec_start(ge.render(ge.settings("ascend", IMAGES["ascend"], port="9100")))
    assert "9100:9100" in words and "-port=9100" in words


@pytest.mark.parametrize("args,variable", [
    (("none", IMAGES["nvidia"]), "launchcard_gpu_exporter_vendor"),
    ((None, IMAGES["nvidia"]), "launchcard_gpu_exporter_vendor"),
    (("nvidia", "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.0-4.5.0-ubuntu22.04"), "launchcard_gpu_exporter_image"),
    (("nvidia", ""), "launchcard_gpu_exporter_image"),
    (("nvidia", IMAGES["nvidia"] + "\nExecStartPre=/bin/sh"), "launchcard_gpu_exporter_image"),
    (("nvidia", IMAGES["nvidia"], "cri-o"), "launchcard_gpu_exporter_runtime"),
    (("nvidia", IMAGES["nvidia"], "docker", "http"), "launchcard_gpu_exporter_port"),
    (("ascend", IMAGES["ascend"], "docker", 80), "launchcard_gpu_exporter_port"),
    (("amd", IMAGES["amd"], "docker", 70000), "launchcard_gpu_exporter_port"),
])
def test_bad_settings_are_named_by_their_variable(args, variable):
    with pytest.raises(ge.ExporterError, match="^%s: " % variable):
        ge.settings(*args)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verifies_every_vendors_unit(tmp_path):
    clients = {}
    for runtime in ge.RUNTIMES:
        path = tmp_path / runtime
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        clients[runtime] = str(path)
    paths = []
    for vendor in sorted(ge.EXPORTERS):
        for runtime in ge.RUNTIMES:
            unit = tmp_path / ("%s-%s-%s" % (vendor, runtime, ge.UNIT))
            unit.write_text(ge.render(ge.settings(vendor, IMAGES[vendor], runtime), clients["docker"],
                                      clients["podman"]))
            paths.append(str(unit))
    res = subprocess.run(["systemd-analyze", "verify", "--man=no"] + paths, capture_output=True, text=True,
                         timeout=60, check=False)
    out = res.stdout + res.stderr
    # docker.service is not installed here: the Requires= on it is the one thing systemd-analyze may name
    out = "\n".join(ln for ln in out.splitlines() if "docker.service" not in ln)
    for word in ("Ignoring", "Unbalanced", "Unknown", "bad unit file", "not executable", "Invalid"):
        assert word not in out, out


def test_the_exporters_are_scrape_targets_labelled_by_host_card_and_vendor():
    fleet = plan_fleet({"c.json": EX}, {"c.json": normalize_placement(SANDBOX)})
    hosts = sorted(fleet["hosts"])
    on = {hosts[0]: ge.settings("nvidia", IMAGES["nvidia"]), hosts[1]: ge.settings("amd", IMAGES["amd"], port=5001)}
    files, dummy = st.file_sd_files(fleet, monitor=hosts[0], gpu_exporters=on)
    groups = json.loads(files[st.GPUS_FILE])
    assert groups == [
        {"targets": ["127.0.0.1:9400"], "labels": {"card": EX["model"]["slug"], "host": hosts[0], "vendor": "nvidia"}},
        {"targets": ["%s:5001" % fleet["hosts"][hosts[1]]["address"]],
         "labels": {"card": EX["model"]["slug"], "host": hosts[1], "vendor": "amd"}},
    ]
    # none enabled: the file is an empty list, so one written before loses its targets (Prometheus drops them)
    files, dummy = st.file_sd_files(fleet, monitor=hosts[0])
    assert sorted(files) == [st.ENGINES_FILE, st.GPUS_FILE, st.NODES_FILE] and files[st.GPUS_FILE] == "[]\n"
    # a host outside the plan is no target
    files, dummy = st.file_sd_files(fleet, gpu_exporters={"elsewhere": ge.settings("amd", IMAGES["amd"])})
    assert files[st.GPUS_FILE] == "[]\n"


def test_the_hosts_that_run_one_are_read_from_their_inventory_variables_as_the_role_reads_them():
    hostvars = {
        "a": {"launchcard_gpu_exporter_enabled": "yes", "launchcard_accelerator_vendor": "amd",
              "launchcard_gpu_exporter_image": IMAGES["amd"], "launchcard_runtime": "podman"},
        "b": {"launchcard_gpu_exporter_enabled": True, "launchcard_gpu_exporter_vendor": "nvidia",
              "launchcard_accelerator_vendor": "amd", "launchcard_gpu_exporter_image": IMAGES["nvidia"],
              "launchcard_runtime": "podman", "launchcard_gpu_exporter_runtime": "docker",
              "launchcard_gpu_exporter_port": "9500"},
        # off, or never set: not read any further (its bad image is no error)
        "c": {"launchcard_gpu_exporter_enabled": "false", "launchcard_gpu_exporter_image": "x:latest"},
        "d": {"launchcard_gpu_exporter_image": "x:latest"},
    }
    assert ge.host_settings(["d", "c", "b", "a", "not-in-hostvars"], hostvars) == {
        "a": ge.settings("amd", IMAGES["amd"], "podman"),
        "b": {"vendor": "nvidia", "image_ref": IMAGES["nvidia"], "runtime": "docker", "port": 9500}}
    assert ge.host_settings([], hostvars) == {}


@pytest.mark.parametrize("var,value,message", [
    ("launchcard_gpu_exporter_enabled", "maybe", "b: launchcard_gpu_exporter_enabled: The value 'maybe' is not a valid boolean"),
    ("launchcard_gpu_exporter_image", "rocm/device-metrics-exporter:v1", "b: launchcard_gpu_exporter_image: "),
    ("launchcard_gpu_exporter_vendor", "none", "b: launchcard_gpu_exporter_vendor: 'none' is none of amd, ascend, nvidia"),
    ("launchcard_gpu_exporter_port", "70000", "b: launchcard_gpu_exporter_port: 70000 is outside 1-65535"),
])
def test_a_setting_it_cannot_run_with_names_the_host_and_the_variable(var, value, message):
    good = {"launchcard_gpu_exporter_enabled": True, "launchcard_gpu_exporter_vendor": "amd",
            "launchcard_gpu_exporter_image": IMAGES["amd"]}
    with pytest.raises(ge.ExporterError) as err:
        ge.host_settings(["a", "b"], {"a": good, "b": dict(good, **{var: value})})
    assert str(err.value).startswith(message)


def test_the_filters_check_at_planning_and_list_the_targets_or_an_empty_file():
    from ansible.errors import AnsibleFilterError

    from ansible_collections.launchcard.inference.plugins.filter.gpu_exporter import gpu_exporters
    from ansible_collections.launchcard.inference.plugins.filter.monitoring import file_sd_files

    fleet = plan_fleet({"c.json": EX}, {"c.json": normalize_placement(SANDBOX)})
    host = sorted(fleet["hosts"])[0]
    on = {host: {"launchcard_gpu_exporter_enabled": True, "launchcard_accelerator_vendor": "nvidia",
                 "launchcard_gpu_exporter_image": IMAGES["nvidia"]},
          "outside-the-plan": {"launchcard_gpu_exporter_enabled": "maybe"}}
    exporters = gpu_exporters(fleet, on)
    assert exporters == {host: ge.settings("nvidia", IMAGES["nvidia"])}
    with pytest.raises(AnsibleFilterError, match="gpu_exporters: %s: launchcard_gpu_exporter_image: 'x:1'" % host):
        gpu_exporters(fleet, {host: dict(on[host], launchcard_gpu_exporter_image="x:1")})

    def gpus(exporters, without=None):
        writes = file_sd_files(fleet, {}, ["prom"], "/sd", without, exporters)
        return [json.loads(w["content"]) for w in writes if w["path"] == "/sd/" + st.GPUS_FILE]

    address = fleet["hosts"][host]["address"]
    assert gpus(exporters) == [[{"targets": ["%s:9400" % address],
                                 "labels": {"card": EX["model"]["slug"], "host": host, "vendor": "nvidia"}}]]
    # turned off, or the host undeployed: the same file, empty
    assert gpus({}) == [[]] and gpus(exporters, without=[host]) == [[]]


def test_the_settings_name_the_variable_they_refuse():
    with pytest.raises(ValueError, match="launchcard_gpu_exporter_image: 'rocm/device-metrics-exporter:v1"):
        ge.render(ge.settings("amd", "rocm/device-metrics-exporter:v1.3.0"))


def test_the_runtime_defaults_as_the_engines_do_and_a_native_host_runs_docker():
    # one default: launchcard_runtime's (the unit options), not a second copy in the role or the render action
    from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_spec import DEFAULTS
    assert ge.settings("nvidia", IMAGES["nvidia"])["runtime"] == DEFAULTS["runtime"]
    assert ge.settings("nvidia", IMAGES["nvidia"], "native")["runtime"] == "docker"
    assert ge.settings("nvidia", IMAGES["nvidia"], "podman")["runtime"] == "podman"
