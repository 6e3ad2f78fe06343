# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The package lists of roles/nvidia, roles/rocm and roles/ascend for every supported OS, rendered for real.

One ``ansible-playbook`` run (``tests/integration/stack/package_lists.yml``, check mode, every
host ``connection: local`` with faked OS facts, nothing but set_fact/assert/include_vars/debug)
runs each role's own ``tasks/os.yml`` -- the OS check and the first_found OS vars file -- with the
role's defaults, and prints the lists under the names the package tasks use. The expected specs
below are the exact strings apt/dnf are given. Unsupported systems must be refused by the role's
OS check with its message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
PLAYBOOK = os.path.join(ROOT, "tests", "integration", "stack", "package_lists.yml")

OS = {
    "debian12": dict(distribution="Debian", distribution_major_version="12", distribution_version="12.7",
                     distribution_release="bookworm", os_family="Debian", kernel="6.1.0-26-amd64",
                     architecture="x86_64"),
    "ubuntu2204": dict(distribution="Ubuntu", distribution_major_version="22", distribution_version="22.04",
                       distribution_release="jammy", os_family="Debian", kernel="5.15.0-122-generic",
                       architecture="x86_64"),
    "ubuntu2404": dict(distribution="Ubuntu", distribution_major_version="24", distribution_version="24.04",
                       distribution_release="noble", os_family="Debian", kernel="6.8.0-45-generic",
                       architecture="aarch64"),
    "rocky9": dict(distribution="Rocky", distribution_major_version="9", distribution_version="9.6",
                   distribution_release="Blue Onyx", os_family="RedHat", kernel="5.14.0-570.12.1.el9_6.x86_64",
                   architecture="x86_64"),
    "debian11": dict(distribution="Debian", distribution_major_version="11", distribution_version="11.11",
                     distribution_release="bullseye", os_family="Debian", kernel="5.10.0-32-amd64",
                     architecture="x86_64"),
    "centos7": dict(distribution="CentOS", distribution_major_version="7", distribution_version="7.9",
                    distribution_release="Core", os_family="RedHat", kernel="3.10.0-1160.el7.x86_64",
                    architecture="x86_64"),
    # RHEL 9 family, but not one the supported-OS table names (plugins/module_utils/_platforms.py)
    "centos9": dict(distribution="CentOS", distribution_major_version="9", distribution_version="9",
                    distribution_release="Stream", os_family="RedHat", kernel="5.14.0-570.el9.x86_64",
                    architecture="x86_64"),
}

# Per host: role inputs that differ from the defaults, and a fake `rocm_installed` (the output of
# the role's rocm_installed_query) to check its parsing.
HOST_VARS = {
    "debian12": {"nvidia_fabric_manager_wanted": True,
                 "rocm_installed": {"stdout_lines": ["hi amdgpu-install 7.0.1.70001-1",
                                                     "ii rocm 7.0.1.70001-1~launchcard1",
                                                     "un amd-smi-lib <none>"]}},
    "ubuntu2204": {"nvidia_fabric_manager_wanted": False, "rocm_dkms_version": "1:6.14.14.30100200"},
    "ubuntu2404": {"nvidia_fabric_manager_wanted": False, "nvidia_imex_wanted": True, "nvidia_driver_version": "580.105.08",
                   "nvidia_container_toolkit_version": "1.17.8", "nvidia_kernel_headers": False,
                   "rocm_version": "7.0", "rocm_packages": ["rocm-hip-runtime", "amd-smi-lib"]},
    "rocky9": {"nvidia_fabric_manager_wanted": True, "nvidia_nvlink5_wanted": True, "nvidia_container_toolkit_version": "1.17.8",
               "rocm_installed": {"stdout_lines": ["amdgpu-install 7.0.2.70002-1.el9",
                                                   "package rocm is not installed"]}},
    "debian11": {"nvidia_fabric_manager_wanted": False},
    "centos7": {"nvidia_fabric_manager_wanted": False},
    "centos9": {"nvidia_fabric_manager_wanted": False},
}

NVIDIA = {
    "debian12": {
        "nvidia_repo_url": "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/",
        "nvidia_held_packages": ["nvidia-headless-580-server", "nvidia-utils-580-server", "nvidia-fabricmanager-580"],
        "nvidia_package_specs": ["nvidia-headless-580-server=580.95.05-*", "nvidia-utils-580-server=580.95.05-*",
                                 "nvidia-fabricmanager-580=580.95.05-*", "linux-headers-6.1.0-26-amd64"],
        "nvidia_container_toolkit_spec": "nvidia-container-toolkit",
        "nvidia_repo_exclude": None,
    },
    "ubuntu2204": {
        "nvidia_repo_url": "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/",
        "nvidia_held_packages": ["nvidia-headless-580-server", "nvidia-utils-580-server"],
        "nvidia_package_specs": ["nvidia-headless-580-server=580.95.05-*", "nvidia-utils-580-server=580.95.05-*",
                                 "linux-headers-5.15.0-122-generic"],
        "nvidia_container_toolkit_spec": "nvidia-container-toolkit",
        "nvidia_repo_exclude": None,
    },
    "ubuntu2404": {
        "nvidia_repo_url": "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/sbsa/",
        "nvidia_held_packages": ["nvidia-headless-580-server", "nvidia-utils-580-server", "nvidia-imex-580"],
        "nvidia_package_specs": ["nvidia-headless-580-server=580.105.08-*", "nvidia-utils-580-server=580.105.08-*",
                                 "nvidia-imex-580=580.105.08-*"],
        "nvidia_container_toolkit_spec": "nvidia-container-toolkit=1.17.8-*",
        "nvidia_repo_exclude": None,
    },
    "rocky9": {
        "nvidia_repo_url": "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/",
        "nvidia_held_packages": ["nvidia-driver", "nvidia-driver-cuda", "kmod-nvidia-open-dkms", "nvidia-persistenced",
                                 "nvidia-fabric-manager", "libnvidia-nscq"],
        "nvidia_package_specs": ["nvidia-driver-580.95.05", "nvidia-driver-cuda-580.95.05",
                                 "kmod-nvidia-open-dkms-580.95.05", "nvidia-persistenced-580.95.05",
                                 "nvidia-fabric-manager-580.95.05", "libnvidia-nscq-580.95.05", "nvlsm",
                                 "kernel-devel-5.14.0-570.12.1.el9_6.x86_64"],
        "nvidia_container_toolkit_spec": "nvidia-container-toolkit-1.17.8",
        "nvidia_repo_exclude": ["nvidia-driver", "nvidia-driver-cuda", "kmod-nvidia-open-dkms", "nvidia-persistenced",
                                "nvidia-fabric-manager", "nvidia-imex", "libnvidia-nscq", "nvlsm"],
    },
}

DPKG_QUERY = ["dpkg-query", "--show", "--showformat", "${db:Status-Abbrev}${Package} ${Version}\n"]
RPM_QUERY = ["rpm", "--query", "--queryformat", "%{NAME} %{VERSION}-%{RELEASE}\n"]
ROCM = {
    "debian12": {
        "rocm_amdgpu_install_url":
            "https://repo.radeon.com/amdgpu-install/7.0.2/ubuntu/jammy/amdgpu-install_7.0.2.70002-1_all.deb",
        "rocm_amdgpu_install_package_version": "7.0.2.70002-1",
        "rocm_driver_package_specs": ["linux-headers-6.1.0-26-amd64", "amdgpu-dkms"],
        "rocm_package_specs": ["rocm=7.0.2.70002-*"],
        "rocm_held_packages": ["amdgpu-install", "amdgpu-dkms", "rocm"],
        "rocm_versionlock_specs": None,
        "rocm_versionlock_names": None,
        "rocm_installed_query": DPKG_QUERY,
        "rocm_installed_packages": {"amdgpu-install": "7.0.1.70001-1", "rocm": "7.0.1.70001-1~launchcard1"},
    },
    "ubuntu2204": {
        "rocm_amdgpu_install_url":
            "https://repo.radeon.com/amdgpu-install/7.0.2/ubuntu/jammy/amdgpu-install_7.0.2.70002-1_all.deb",
        "rocm_amdgpu_install_package_version": "7.0.2.70002-1",
        "rocm_driver_package_specs": ["linux-headers-5.15.0-122-generic", "amdgpu-dkms=1:6.14.14.30100200-*"],
        "rocm_package_specs": ["rocm=7.0.2.70002-*"],
        "rocm_held_packages": ["amdgpu-install", "amdgpu-dkms", "rocm"],
        "rocm_versionlock_specs": None,
        "rocm_versionlock_names": None,
        "rocm_installed_query": DPKG_QUERY,
        "rocm_installed_packages": {},
    },
    "ubuntu2404": {
        "rocm_amdgpu_install_url":
            "https://repo.radeon.com/amdgpu-install/7.0/ubuntu/noble/amdgpu-install_7.0.70000-1_all.deb",
        "rocm_amdgpu_install_package_version": "7.0.70000-1",
        "rocm_driver_package_specs": ["linux-headers-6.8.0-45-generic", "amdgpu-dkms"],
        "rocm_package_specs": ["rocm-hip-runtime=7.0.0.70000-*", "amd-smi-lib=7.0.0.70000-*"],
        "rocm_held_packages": ["amdgpu-install", "amdgpu-dkms", "rocm-hip-runtime", "amd-smi-lib"],
        "rocm_versionlock_specs": None,
        "rocm_versionlock_names": None,
        "rocm_installed_query": DPKG_QUERY,
        "rocm_installed_packages": {},
    },
    "rocky9": {
        "rocm_amdgpu_install_url":
            "https://repo.radeon.com/amdgpu-install/7.0.2/rhel/9.6/amdgpu-install-7.0.2.70002-1.el9.noarch.rpm",
        "rocm_amdgpu_install_package_version": "7.0.2.70002-1.el9",
        "rocm_driver_package_specs": ["kernel-headers-5.14.0-570.12.1.el9_6.x86_64",
                                      "kernel-devel-5.14.0-570.12.1.el9_6.x86_64", "amdgpu-dkms"],
        "rocm_package_specs": ["rocm-7.0.2.70002"],
        "rocm_held_packages": None,
        "rocm_versionlock_specs": ["amdgpu-install-7.0.2.70002-1.el9", "rocm-7.0.2.70002-*"],
        "rocm_versionlock_names": ["amdgpu-install", "rocm"],
        "rocm_installed_query": RPM_QUERY,
        "rocm_installed_packages": {"amdgpu-install": "7.0.2.70002-1.el9"},
    },
}


def _ascend(kernel_headers, hdk_arch, cann_arch, shell):
    return {
        "ascend_prerequisite_packages": ["gcc", "make", "dkms", "net-tools", "pciutils"] + kernel_headers,
        "ascend_package_files": {
            "driver": "Ascend-hdk-910b-npu-driver_25.2.0_linux-%s.run" % hdk_arch,
            "firmware": "Ascend-hdk-910b-npu-firmware_7.7.0.6.236.run",
            "toolkit": "Ascend-cann-toolkit_8.2.RC1_linux-%s.run" % cann_arch,
            "kernels": "Ascend-cann-kernels-910b_8.2.RC1_linux-%s.run" % cann_arch,
            "nnal": "Ascend-cann-nnal_8.2.RC1_linux-%s.run" % cann_arch,
        },
        "ascend_toolkit_version_file": "/usr/local/Ascend/ascend-toolkit/latest/%s-linux/ascend_toolkit_install.info" % cann_arch,
        "ascend_nologin_shell": shell,
    }


ASCEND = {
    "debian12": _ascend(["linux-headers-6.1.0-26-amd64"], "x86-64", "x86_64", "/usr/sbin/nologin"),
    "ubuntu2204": _ascend(["linux-headers-5.15.0-122-generic"], "x86-64", "x86_64", "/usr/sbin/nologin"),
    "ubuntu2404": _ascend(["linux-headers-6.8.0-45-generic"], "aarch64", "aarch64", "/usr/sbin/nologin"),
    "rocky9": _ascend(["kernel-devel-5.14.0-570.12.1.el9_6.x86_64", "kernel-headers-5.14.0-570.12.1.el9_6.x86_64"],
                      "x86-64", "x86_64", "/sbin/nologin"),
}

REFUSED = {
    "debian11": ("Debian", "11.11"),
    "centos7": ("CentOS", "7.9"),
    "centos9": ("CentOS", "9"),
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """{role: {host: debug msg}} of one check-mode run over every OS."""
    tmp = tmp_path_factory.mktemp("stack")
    hosts = {}
    for name, facts in OS.items():
        hosts[name] = dict(HOST_VARS[name], lc_test_os=facts, ansible_connection="local",
                           ansible_python_interpreter=sys.executable)
    inventory = tmp / "inventory.json"
    # a JSON inventory is valid YAML
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp / "tmp"), PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    res = subprocess.run([os.path.join(BIN, "ansible-playbook"), PLAYBOOK, "-i", str(inventory), "--check"],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    out = {"nvidia": {}, "rocm": {}, "ascend": {}}
    for task in json.loads(res.stdout)["plays"][0]["tasks"]:
        name = task["task"]["name"]
        for role in out:
            if name in ("Package lists | %s lists" % role, "Package lists | %s refusal" % role):
                for host, result in task["hosts"].items():
                    if not result.get("skipped"):
                        out[role][host] = result["msg"]
        for host, result in task["hosts"].items():
            assert not result.get("changed"), (name, host, result)
    return out


def test_faked_facts_reach_the_roles(rendered):
    for host, facts in OS.items():
        if host not in REFUSED:
            assert {key: rendered["nvidia"][host]["facts"][key] for key in facts} == facts


@pytest.mark.parametrize("host", sorted(NVIDIA))
def test_nvidia_package_lists(rendered, host):
    got = rendered["nvidia"][host]
    assert {key: got[key] for key in NVIDIA[host]} == NVIDIA[host]


@pytest.mark.parametrize("host", sorted(ROCM))
def test_rocm_package_lists(rendered, host):
    assert rendered["rocm"][host] == ROCM[host]


@pytest.mark.parametrize("host", sorted(ASCEND))
def test_ascend_package_lists(rendered, host):
    assert rendered["ascend"][host] == ASCEND[host]


@pytest.mark.parametrize("host", sorted(REFUSED))
@pytest.mark.parametrize("role, supported", [
    (role, "The %s role supports Debian 12/13, Ubuntu 22.04/24.04, RHEL/Rocky/Alma 9" % role)
    for role in ("nvidia", "rocm", "ascend")
])
def test_unsupported_os_is_refused(rendered, host, role, supported):
    distribution, version = REFUSED[host]
    assert rendered[role][host] == {
        "refused_by": "%s | Refuse an unsupported OS" % role.capitalize(),
        "message": "%s; this host runs %s %s" % (supported, distribution, version),
    }
