# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The file_sd files deploy, upgrade and undeploy write on the monitoring hosts, run by ansible-playbook on local
hosts (issue 43): the same two task files those playbooks import (``playbooks/tasks/plan.yml``, then
``playbooks/tasks/file-sd.yml``), the accelerator exporters' file among them, and the prometheus role's
configuration, with its ``launchcard-gpus`` job, checked by Debian's promtool as the role checks it.

The monitoring host is a local connection whose file_sd folder is a temporary directory; the fleet hosts are
never contacted (the plan is made on the controller, the file_sd tasks are delegated to the monitoring host). The
real ``playbooks/undeploy.yml`` runs limited to the monitoring host, which no unit of the card runs on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
           ANSIBLE_RETRY_FILES_ENABLED="0", PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter@sha256:" + "ab" * 32
# tests/integration/render/monitoring.ini's fleet, its one monitoring host running no recipe
INVENTORY = """[all:vars]
launchcard_card_src=%(root)s/cards/glm-5.3-flash.json
launchcard_plan_model_configs=false
launchcard_file_sd_dir=%(sd)s

[prefill]
r-p1 ansible_host=10.20.1.11 launchcard_recipes='["sglang-prefill"]' %(p1)s
r-p2 ansible_host=10.20.1.12 launchcard_recipes='["sglang-prefill"]'

[decode]
r-d1 ansible_host=10.20.1.21 launchcard_recipes='["sglang-decode"]'

[router]
r-router ansible_host=10.20.1.30 launchcard_recipes='["sglang-router"]' launchcard_argv_overrides='{"sglang-router": {"remove": ["--mini-lb"]}}'

[launchcard_monitoring]
r-prom ansible_host=10.20.1.40 ansible_connection=local ansible_python_interpreter=%(python)s
"""
PLAY = """
- name: As deploy.yml plans, then writes the scrape targets
  hosts: all
  gather_facts: false
  tasks:
    - name: Plan
      ansible.builtin.import_tasks: %(root)s/playbooks/tasks/plan.yml
    - name: The scrape targets
      ansible.builtin.import_tasks: %(root)s/playbooks/tasks/file-sd.yml
      vars:
        file_sd_image_refs: {}
"""
# the prometheus role's own variables and its task that writes the configuration (roles/prometheus/tasks/main.yml),
# without the package install and the service it cannot run here
CONFIG_PLAY = """
- name: The prometheus role's configuration
  hosts: launchcard_monitoring
  gather_facts: false
  tasks:
    - name: The role's defaults and variables
      ansible.builtin.include_vars:
        file: "%(root)s/roles/prometheus/{{ item }}/main.yml"
      loop: [defaults, vars]
    - name: The rules, as the role writes them
      ansible.builtin.copy:
        dest: "{{ prometheus_rules_file }}"
        content: "{{ prometheus_alert_thresholds | launchcard.inference.alert_rules | to_nice_yaml(indent=2, width=200) }}"
        mode: "0644"
    - name: The configuration, checked by promtool first, as the role writes it
      ansible.builtin.copy:
        dest: "%(config)s"
        content: "{{ prometheus_config | to_nice_yaml(indent=2, width=200) }}"
        mode: "0644"
        validate: promtool check config %%s
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "sd").mkdir()
    (tmp_path / "play.yml").write_text(PLAY % {"root": ROOT})
    (tmp_path / "config.yml").write_text(CONFIG_PLAY % {"root": ROOT, "config": tmp_path / "prometheus.yml"})
    return tmp_path


def _run(project, play, p1=""):
    (project / "inventory.ini").write_text(INVENTORY % {"root": ROOT, "sd": project / "sd", "p1": p1,
                                                        "python": sys.executable})
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(project / "inventory.ini"),
                           str(project / play), "-e", "prometheus_rules_file=%s" % (project / "alerts.yml")],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600, check=False)


def _gpus(project):
    with open(str(project / "sd" / "launchcard-gpus.json")) as f:
        return json.load(f)


def test_deploy_lists_an_enabled_exporter_and_empties_the_file_once_it_is_off(project):
    on = "launchcard_gpu_exporter_enabled=true launchcard_accelerator_vendor=nvidia launchcard_gpu_exporter_image=" + IMAGE
    res = _run(project, "play.yml", p1=on)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert sorted(os.listdir(str(project / "sd"))) == [
        "launchcard-engines.json", "launchcard-gpus.json", "launchcard-nodes.json"]
    assert _gpus(project) == [{"targets": ["10.20.1.11:9400"],
                               "labels": {"card": "glm-5.3-flash", "host": "r-p1", "vendor": "nvidia"}}]
    # a second run changes nothing
    again = _run(project, "play.yml", p1=on)
    assert again.returncode == 0 and "changed=0" in again.stdout.split("PLAY RECAP", 1)[1], again.stdout[-3000:]
    # turned off (false, or the variable gone): the file stays, an empty list, so Prometheus drops the target
    off = _run(project, "play.yml", p1="launchcard_gpu_exporter_enabled=false launchcard_gpu_exporter_image=" + IMAGE)
    assert off.returncode == 0, off.stdout[-3000:] + off.stderr[-2000:]
    assert _gpus(project) == []
    assert _run(project, "play.yml").returncode == 0 and _gpus(project) == []


@pytest.mark.parametrize("p1,message", [
    ("launchcard_gpu_exporter_enabled=true launchcard_accelerator_vendor=nvidia "
     "launchcard_gpu_exporter_image=nvcr.io/nvidia/k8s/dcgm-exporter:latest",
     "r-p1: launchcard_gpu_exporter_image: 'nvcr.io/nvidia/k8s/dcgm-exporter:latest' is not pinned by digest"),
    ("launchcard_gpu_exporter_enabled=maybe", "r-p1: launchcard_gpu_exporter_enabled: The value 'maybe' is not a valid boolean"),
])
def test_a_bad_setting_fails_the_planning_naming_host_and_variable_and_writes_nothing(project, p1, message):
    res = _run(project, "play.yml", p1=p1)
    assert res.returncode != 0
    assert message in " ".join(res.stdout.split()), res.stdout[-3000:]
    # failed at planning: the file_sd tasks never ran
    assert os.listdir(str(project / "sd")) == []
    assert "Monitoring | Write the scrape targets" not in res.stdout


def test_deploy_yml_refuses_a_bad_setting_before_any_host_is_contacted(project):
    """The fleet hosts' addresses lead nowhere: a deploy that went past planning would fail on them unreachable."""
    (project / "inventory.ini").write_text(INVENTORY % {
        "root": ROOT, "sd": project / "sd", "python": sys.executable,
        "p1": "launchcard_gpu_exporter_enabled=true launchcard_gpu_exporter_vendor=amd launchcard_gpu_exporter_image=x:1"})
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(project / "inventory.ini"),
                          os.path.join(ROOT, "playbooks", "deploy.yml")],
                         cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode != 0
    assert "r-p1: launchcard_gpu_exporter_image: 'x:1' is not pinned by digest" in " ".join(res.stdout.split()), \
        res.stdout[-3000:]
    assert "UNREACHABLE" not in res.stdout and "Preflight" not in res.stdout, res.stdout[-3000:]


def test_promtool_accepts_the_role_config_with_the_gpus_job_before_and_after_a_deploy(project):
    assert shutil.which("promtool"), "promtool is missing: make host-deps installs Debian's prometheus package"
    # before any deploy: no file_sd file yet (the role may run first), promtool still accepts the config
    res = _run(project, "config.yml")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    import yaml

    with open(str(project / "prometheus.yml")) as f:
        config = yaml.safe_load(f)
    jobs = dict((j["job_name"], j) for j in config["scrape_configs"])
    assert sorted(jobs) == ["launchcard-engines", "launchcard-gpus", "launchcard-monitor-node", "launchcard-nodes",
                            "prometheus"]
    # the monitoring host's own node exporter (it runs no recipe, so the nodes file does not list it)
    assert jobs["launchcard-monitor-node"]["static_configs"] == [{"targets": ["127.0.0.1:9100"],
                                                                  "labels": {"host": "r-prom"}}]
    assert jobs["launchcard-gpus"]["file_sd_configs"] == [{"files": [str(project / "sd" / "launchcard-gpus.json")]}]
    # after a deploy with an exporter: promtool reads the three files (check config checks each file_sd file)
    on = "launchcard_gpu_exporter_enabled=true launchcard_accelerator_vendor=nvidia launchcard_gpu_exporter_image=" + IMAGE
    assert _run(project, "play.yml", p1=on).returncode == 0
    assert _gpus(project)
    check = subprocess.run(["promtool", "check", "config", str(project / "prometheus.yml")],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0 and "WARNING" not in check.stdout, check.stdout + check.stderr
    # a file promtool cannot read fails it: the check reads the gpus file, it does not pass whatever it holds
    (project / "sd" / "launchcard-gpus.json").write_text('[{"targets": "not a list"}]')
    bad = subprocess.run(["promtool", "check", "config", str(project / "prometheus.yml")],
                         capture_output=True, text=True, check=False)
    assert bad.returncode != 0, bad.stdout + bad.stderr


def test_an_undeploy_keeps_the_digest_labels_of_the_targets_it_keeps_without_asking_a_registry(project):
    """The real undeploy.yml, limited to the monitoring host (no unit of it to remove; every host is local so that
    the run lock it takes on the plan's anchor host lands in a temporary folder): it resolves no image, and used to
    rewrite launchcard-engines.json with every kept target's image_digest gone, a new series for each in Prometheus."""
    refs = {"lmsysorg/sglang:latest": "docker.io/lmsysorg/sglang@sha256:" + "cd" * 32}
    extra = "launchcard_lock_dir=%s" % (project / "locks")
    (project / "inventory.ini").write_text(INVENTORY.replace("[prefill]", "ansible_connection=local\n%s\n\n[prefill]" % extra)
                                           % {"root": ROOT, "sd": project / "sd", "p1": "", "python": sys.executable})

    def play(*args):
        return subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(project / "inventory.ini")] + list(args),
                              cwd=ROOT, env=dict(ENV, ANSIBLE_PYTHON_INTERPRETER=sys.executable),
                              capture_output=True, text=True, timeout=600, check=False)

    deployed = play(str(project / "play.yml"), "-e", json.dumps({"file_sd_image_refs": refs}))
    assert deployed.returncode == 0, deployed.stdout[-3000:] + deployed.stderr[-2000:]
    with open(str(project / "sd" / "launchcard-engines.json")) as f:
        before = f.read()
    groups = json.loads(before)
    assert len(groups) == 4 and all(g["labels"]["image_digest"] == "sha256:" + "cd" * 32 for g in groups), before
    res = play(os.path.join(ROOT, "playbooks", "undeploy.yml"), "--limit", "r-prom")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    with open(str(project / "sd" / "launchcard-engines.json")) as f:
        assert f.read() == before
    recap = res.stdout.split("PLAY RECAP", 1)[1]
    assert "failed=0" in recap and "unreachable=0" in recap, recap
    # a file that is not the collection's (garbled, or a digest that is not one) keeps no label, and fails nothing
    (project / "sd" / "launchcard-engines.json").write_text(before.replace("sha256:" + "cd" * 32, "sha256:$(reboot)"))
    res = play(os.path.join(ROOT, "playbooks", "undeploy.yml"), "--limit", "r-prom")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    with open(str(project / "sd" / "launchcard-engines.json")) as f:
        after = json.load(f)
    assert [g["labels"]["instance"] for g in after] == [g["labels"]["instance"] for g in groups]
    assert not [g for g in after if "image_digest" in g["labels"]], after
