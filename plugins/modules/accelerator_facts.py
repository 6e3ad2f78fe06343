#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: accelerator_facts
short_description: Gather GPU/NPU accelerator facts (NVIDIA, AMD, Huawei Ascend)
version_added: 1.0.0
description:
  - Detects the accelerator vendor of a host from the management tools it has
    (C(nvidia-smi); C(amd-smi) or C(rocm-smi); C(npu-smi)) and returns one
    uniform device list plus the host's driver state as the fact
    C(launchcard_accelerators).
  - Memory is reported in MiB for every vendor.
  - Only reads; it never changes the host, so it always reports C(changed=false).
  - A host without any of the tools is not an error; the fact then reads
    C(vendor=none), C(count=0) and explains itself in C(driver.message).
  - A tool that fails (for example C(nvidia-smi) when the driver is not
    loaded) is not a module failure either; its message is quoted in
    C(errors) and the device count is what could be read (often 0).
  - NVIDIA facts come from C(nvidia-smi --query-gpu=...) (the NVLink fabric's
    C(fabric.state) and C(fabric.status) in the same call; asked again without them
    on a driver that does not know them), C(nvidia-smi -q -x),
    C(/proc/driver/nvidia/version) (loaded kernel module) and
    C(modinfo -F version nvidia) (installed kernel module).
  - AMD facts come from C(amd-smi list --json), C(amd-smi static --asic --vram --driver --json),
    C(rocm-smi --showproductname --showmeminfo vram --showbus --json),
    C(/sys/module/amdgpu/version), C(modinfo -F version amdgpu), C(/opt/rocm/.info/version) and the PCI id
    database (C(/usr/share/misc/pci.ids) or C(/usr/share/hwdata/pci.ids)).
  - NVIDIA also C(systemctl is-active nvidia-fabricmanager.service).
  - Ascend facts come from C(npu-smi info -l), C(npu-smi info),
    C(/usr/local/Ascend/driver/version.info) and CANN's C(ascend_toolkit_install.info).
  - The C(pci) part comes from C(/sys/bus/pci/devices/*/{vendor,device,class}) (vendor ids 0x10de NVIDIA,
    0x1002 AMD, 0x19e5 Huawei; classes VGA, 3D controller, display controller, processing accelerator).
author:
  - launchcard.inference contributors (@launchcard)
options:
  vendor:
    description:
      - Which vendor's tools to query.
      - With V(auto), vendors are tried in the order NVIDIA, AMD, Ascend among
        those whose tools are present; the first one that lists at least one
        device wins, else the first one present is reported with its errors.
      - Naming a vendor whose tools are missing reports that vendor with
        C(count=0) and an C(errors) entry.
    type: str
    choices: [auto, nvidia, amd, ascend]
    default: auto
  pci_devices_dir:
    description:
      - The sysfs directory listing PCI functions; its accelerators are reported in C(pci) whether a
        driver is installed or not (how a bare host shows which vendor's stack it needs).
      - Another path when the host's sysfs is mounted elsewhere; an empty string skips the PCI bus.
    type: str
    default: /sys/bus/pci/devices
  fabric_manager:
    description:
      - Whether the NVIDIA host needs C(nvidia-fabricmanager) - V(auto) (the facts' C(driver.fabric_manager_required)),
        V(true) or V(false). Decides C(nvidia_services.fabric_manager) only; nothing is changed on the host.
    type: raw
    default: auto
  nvlink5:
    description:
      - Whether the NVLink5 parts (C(nvlsm), NSCQ) are needed beside fabric manager - V(auto)
        (C(driver.nvlink5_required)), V(true) or V(false). Decides C(nvidia_services.nvlink5).
    type: raw
    default: auto
  imex:
    description:
      - Whether the NVIDIA IMEX daemon is needed - V(auto) (C(driver.imex_required)), V(true) or V(false).
        Decides C(nvidia_services.imex).
    type: raw
    default: auto
extends_documentation_fragment:
  - launchcard.inference.attributes.read_only
  - launchcard.inference.attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  facts:
    support: full
notes:
  - Fabric manager is reported as required for 8-GPU HGX SXM boards (A100,
    A800, H100, H800, H200, H20, B100, B200, B300) and for any such GPU that
    reports an NVLink fabric state; IMEX for GB200/GB300.
  - C(driver.reboot_required) is true when the installed kernel module
    differs from the loaded one, or NVML reports a driver/library version
    mismatch; it is null when either version cannot be read.
"""

EXAMPLES = r"""
- name: Gather accelerator facts
  launchcard.inference.accelerator_facts:

- name: Require eight H100 GPUs
  ansible.builtin.assert:
    that:
      - ansible_facts.launchcard_accelerators.count >= 8
      - "'h100' in ansible_facts.launchcard_accelerators.models"
    fail_msg: "{{ ansible_facts.launchcard_accelerators.errors }}"

- name: Only look for NVIDIA GPUs
  launchcard.inference.accelerator_facts:
    vendor: nvidia

- name: Reboot when the loaded driver is older than the installed one
  ansible.builtin.reboot:
  when: ansible_facts.launchcard_accelerators.driver.reboot_required | default(false, true)
"""

RETURN = r"""
nvidia_services:
  description:
    - The NVIDIA host services the stack installs and starts, decided from O(fabric_manager), O(nvlink5) and O(imex)
      (V(auto) follows the facts' C(driver.*_required)). All false on other vendors unless forced.
  returned: always
  type: dict
  contains:
    fabric_manager:
      description: C(nvidia-fabricmanager) at the driver's exact version (8-GPU NVSwitch HGX boards).
      type: bool
      sample: true
    nvlink5:
      description: The NVLink subnet manager (C(nvlsm)) and NSCQ beside fabric manager (HGX B200/B300).
      type: bool
      sample: false
    imex:
      description: The IMEX daemon (GB200/GB300).
      type: bool
      sample: false
ansible_facts:
  description: Facts to add to the host's facts.
  returned: always
  type: dict
  contains:
    launchcard_accelerators:
      description: Accelerators found on the host, in one shape for every vendor.
      returned: always
      type: dict
      contains:
        vendor:
          description: Detected (or requested) vendor; V(none) when no tool was found.
          returned: always
          type: str
          choices: [nvidia, amd, ascend, none]
          sample: nvidia
        count:
          description: Number of devices listed (GPUs; NPU chips on Ascend).
          returned: always
          type: int
          sample: 8
        devices:
          description: One entry per device, sorted by C(index).
          returned: always
          type: list
          elements: dict
          contains:
            index:
              description:
                - Device number as the vendor tool and runtime count it (nvidia-smi index,
                  amd-smi gpu, Ascend Phy-ID or NPU ID).
              type: int
              sample: 0
            model:
              description: Marketing name as the tool prints it.
              type: str
              sample: NVIDIA H100 80GB HBM3
            model_id:
              description:
                - Normalised model id (V(h100), V(h200), V(b200), V(gb200), V(mi355x),
                  V(ascend_910b), V(ascend_950pr)...); unknown names become a lower-case slug.
                - AMD parts are named by PCI device id from the host's PCI id database (C(pci.ids), Debian/Ubuntu package
                  C(pci.ids), RHEL C(hwdata)) when it knows the id (C(0x7408) is V(mi250x) where rocm-smi names only
                  the MI200 family), else from the collection's table of current Instinct parts (MI300 series onward);
                  null, with an C(errors) entry, when no tool names the part.
              type: str
              sample: h100
            memory_mib:
              description:
                - Total device memory in MiB; null when the tool does not report it (C([N/A]) for GB10 unified memory,
                  C([Insufficient Permissions]) under MIG) - unknown, never 0.
              type: int
              sample: 81559
            uuid:
              description: Device UUID; null when not reported (Ascend).
              type: str
              sample: GPU-1b0c8cf5-3f5e-4a62-8c3a-0b7e5d1f6a11
            bus_id:
              description: PCI address, normalised to C(dddd:bb:dd.f) in lower case.
              type: str
              sample: "0000:18:00.0"
            driver_version:
              description: Driver version the tool reports for this device.
              type: str
              sample: 580.95.05
            persistence_mode:
              description: NVIDIA persistence mode; null for other vendors or when not reported.
              type: bool
              sample: true
            fabric_state:
              description:
                - NVIDIA NVLink fabric registration state (V(completed), V(in_progress),
                  V(not_started), V(not_supported), V(failed)); null when unknown or not NVIDIA.
              type: str
              sample: completed
            health:
              description:
                - NVIDIA - V(ok), V(warning) or V(error), the worst of RV(ansible_facts.launchcard_accelerators.devices[].health_issues)
                  (from C(nvidia-smi -q -x)); null when the driver did not answer that query.
                - Ascend - health as npu-smi reports it, lower case (V(ok), V(warning), V(alarm)...).
              type: str
              sample: ok
            health_issues:
              description:
                - NVIDIA - why RV(ansible_facts.launchcard_accelerators.devices[].health) is not V(ok), each
                  C({severity, what, action}) - uncorrectable volatile ECC errors, a pending or failed row remap, a
                  pending page retirement, a recovery action the driver asks for (errors); a PCIe link below its
                  maximum, hardware slowdown (warnings); AMD - uncorrectable ECC errors (errors) and deferred ones (warnings) from
                  amd-smi. Empty elsewhere.
              type: list
              elements: dict
            memory_reserved_mib:
              description:
                - NVIDIA - memory the driver and firmware reserve (C(fb_memory_usage/reserved)); Ascend - HBM in use that
                  no listed process holds; null elsewhere.
              type: int
              sample: 616
            memory_free_mib:
              description: NVIDIA - free memory now (C(fb_memory_usage/free)); Ascend - HBM capacity less HBM in use; null elsewhere.
              type: int
              sample: 143156
            processes:
              description: NVIDIA, Ascend - the processes on the device, each C({pid, name, used_mib, type}); null elsewhere.
              type: list
              elements: dict
        models:
          description: Sorted unique model ids on the host.
          returned: always
          type: list
          elements: str
          sample: [h100]
        driver:
          description: Host-level driver state.
          returned: always
          type: dict
          contains:
            installed_version:
              description: Installed driver version (kernel module on disk, NVML library, or Ascend version.info).
              type: str
              sample: 580.95.05
            loaded_version:
              description: Version of the kernel module currently loaded; null when not loaded or unknown.
              type: str
              sample: 580.95.05
            reboot_required:
              description: True when installed and loaded versions differ; null when it cannot be told.
              type: bool
              sample: false
            fabric_manager_required:
              description: Whether nvidia-fabricmanager must run (8-GPU NVSwitch HGX boards).
              type: bool
              sample: true
            fabric_manager_active:
              description:
                - NVIDIA - whether C(nvidia-fabricmanager.service) is active (C(systemctl is-active)); how the fabric
                  is judged on GPUs that report no fabric state (Ampere). Null without systemctl or on other vendors.
              type: bool
              sample: true
            runtime_version:
              description:
                - The user-space stack release - AMD the ROCm release (C(/opt/rocm/.info/version), build suffix
                  dropped), Ascend the CANN toolkit release (C(version=) of C(ascend_toolkit_install.info)); null on
                  NVIDIA or when not installed.
              type: str
              sample: 7.0.2
            imex_required:
              description: Whether the NVIDIA IMEX daemon must run (GB200/GB300).
              type: bool
              sample: false
            nvlink5_required:
              description: Whether the NVLink5 parts (nvlsm, NSCQ) must run beside fabric manager (HGX B200/B300).
              type: bool
              sample: false
            kernel_module:
              description: NVIDIA kernel module flavour, V(open) or V(proprietary); null elsewhere.
              type: str
              sample: open
            lost_gpus:
              description:
                - NVIDIA - bus ids of the GPUs nvidia-smi cannot reach (C(Unable to determine the device handle for
                  GPU...), a GPU fallen off the bus); empty elsewhere.
              type: list
              elements: str
            message:
              description: Explanation when there is nothing to report, for example no tool found.
              type: str
              sample: null
        pci:
          description: Accelerators on the PCI bus (sysfs), with or without a driver.
          returned: always
          type: dict
          contains:
            vendor:
              description: The vendor with the most accelerators on the bus (V(nvidia), V(amd), V(ascend)), or null.
              type: str
              sample: nvidia
            count:
              description: How many accelerators of that vendor.
              type: int
              sample: 8
            devices:
              description:
                - Every accelerator found, by bus id (C(bus_id), C(vendor), C(device_id), C(name)).
                - C(name) is the device's name in the host's PCI id database, else in the collection's table of
                  current AMD Instinct and Huawei Ascend parts (a database older than the part), else null.
              type: list
              elements: dict
              sample: [{bus_id: "0000:18:00.0", vendor: nvidia, device_id: "0x2330", name: "GH100 [H100 SXM5 80GB]"}]
        errors:
          description: Tool failures and output that could not be parsed, quoting the tool.
          returned: always
          type: list
          elements: str
          sample:
            - "nvidia-smi exited 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.launchcard.inference.plugins.module_utils._accel_nvidia import services_wanted
from ansible_collections.launchcard.inference.plugins.module_utils._accel_pci import PCI_DEVICES_DIR
from ansible_collections.launchcard.inference.plugins.module_utils._accel_tables import VENDORS
from ansible_collections.launchcard.inference.plugins.module_utils._accelerators import collect


def main():
    module = AnsibleModule(
        argument_spec=dict(
            vendor=dict(type="str", default="auto", choices=["auto"] + list(VENDORS)),
            pci_devices_dir=dict(type="str", default=PCI_DEVICES_DIR),
            fabric_manager=dict(type="raw", default="auto"),
            nvlink5=dict(type="raw", default="auto"),
            imex=dict(type="raw", default="auto"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    summary = collect(p["vendor"], which=module.get_bin_path, run=module.run_command, pci_dir=p["pci_devices_dir"])
    try:
        wanted = services_wanted(summary["driver"], p["fabric_manager"], p["nvlink5"], p["imex"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, nvidia_services=wanted, ansible_facts=dict(launchcard_accelerators=summary))


if __name__ == "__main__":
    main()
