#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ascend_state
short_description: Read the installed Huawei Ascend stack and plan the .run installers to run
version_added: 1.0.0
description:
  - One read-only call per host for C(launchcard.inference.ascend). Reads the
    version each Ascend C(.run) installer recorded (driver, firmware, CANN
    toolkit, operator kernels, NNAL), the chips' health from C(npu-smi info),
    and returns the ordered installer steps that bring the host to the wanted
    versions.
  - "Order: a first install runs the driver, then the firmware; an upgrade
    runs the firmware, then the driver (it is flashed through the driver that
    is running); the CANN toolkit, kernels and NNAL come after, in that order."
  - Refuses (fails, naming the chips) when an upgrade is due while
    C(npu-smi info) reports a chip whose health is not OK, unless O(force=true).
    A first install is never refused.
  - Never changes the host; always reports C(changed=false), also in check mode.
author:
  - launchcard.inference contributors (@launchcard)
options:
  wanted:
    description:
      - Wanted version per component; keys among V(driver), V(firmware),
        V(toolkit), V(kernels), V(nnal). A component left out or set to an
        empty value is neither installed nor reported.
    type: dict
    required: true
  version_files:
    description:
      - Where each component records its installed version on the host (a
        line C(Version=<V>) or C(version=<V>)); a missing file means not
        installed. Keys left out keep their default.
      - "Defaults (CANN 8.0-8.3 layout, C(<arch>) from C(uname -m)):
        V(driver) C(/usr/local/Ascend/driver/version.info),
        V(firmware) C(/usr/local/Ascend/firmware/version.info),
        V(toolkit) C(/usr/local/Ascend/ascend-toolkit/latest/<arch>-linux/ascend_toolkit_install.info),
        V(kernels) C(/usr/local/Ascend/ascend-toolkit/latest/opp_kernel/version.info),
        V(nnal) C(/usr/local/Ascend/nnal/atb/latest/version.info)."
    type: dict
    default: {}
  package_urls:
    description: Per component, the installer's URL (http, https, file) or absolute path on the host; wins over O(package_base_url).
    type: dict
    default: {}
  package_base_url:
    description: URL (or absolute path on the host) of a directory holding the installers under the names in O(package_files).
    type: str
    default: ""
  package_files:
    description: Per component, the installer's file name (Huawei's naming).
    type: dict
    default: {}
  checksums:
    description:
      - Per component, C(sha256:<hex>) or C(sha256:<URL of a SHA256SUMS file>) (ansible.builtin.get_url's checksum).
      - Every component with a step to run needs a source and a checksum, else the module fails naming them.
    type: dict
    default: {}
  force:
    description: Upgrade even while a chip is unhealthy.
    type: bool
    default: false
extends_documentation_fragment:
  - launchcard.inference.attributes.read_only
  - launchcard.inference.attributes
notes:
  - Health comes from the C(Health) column of C(npu-smi info) (OK, Warning,
    Alarm, Critical); a host without C(npu-smi), or where it fails, has no
    known health and is not refused.
seealso:
  - module: launchcard.inference.accelerator_facts
"""

EXAMPLES = r"""
- name: Plan the Ascend installers
  launchcard.inference.ascend_state:
    wanted:
      driver: 25.2.0
      firmware: 7.7.0.6.236
      toolkit: 8.2.RC1
      kernels: 8.2.RC1
      nnal: 8.2.RC1
  register: ascend_plan

- name: Show what would run
  ansible.builtin.debug:
    msg: "{{ ascend_plan.steps | map(attribute='component') | list }}"
"""

RETURN = r"""
installed:
  description: Installed version per component (null when not installed), from O(version_files).
  returned: always
  type: dict
  sample: {driver: 24.1.0, firmware: 7.5.0.3.220, toolkit: 8.2.RC1, kernels: 8.2.RC1, nnal: null}
steps:
  description: Installers to run, in order.
  returned: always
  type: list
  elements: dict
  contains:
    component:
      description: V(driver), V(firmware), V(toolkit), V(kernels) or V(nnal).
      type: str
    action:
      description: V(install) when nothing was installed, else V(upgrade).
      type: str
    installed:
      description: The version installed now, or null.
      type: str
    wanted:
      description: The version this step installs.
      type: str
    url:
      description: Where the installer comes from (an absolute path given becomes a C(file://) URL).
      type: str
    file:
      description: The installer's file name.
      type: str
    checksum:
      description: The checksum it must match.
      type: str
  sample: [{component: firmware, action: upgrade, installed: 7.5.0.3.220, wanted: 7.7.0.6.236}]
drift:
  description: One line per managed component whose installed version is not the wanted one.
  returned: always
  type: list
  elements: str
  sample: ["driver: installed 24.1.0, wanted 25.2.0"]
unhealthy:
  description: "[index, health] of every chip npu-smi reports unhealthy."
  returned: always
  type: list
  elements: list
  sample: [[3, alarm]]
reboot_expected:
  description: A driver or firmware step is due (both take effect at the next boot on an upgrade).
  returned: always
  type: bool
accelerators:
  description: The C(launchcard.inference.accelerator_facts) summary for vendor V(ascend) (devices, health, driver versions).
  returned: always
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.launchcard.inference.plugins.module_utils import _accelerators as accelerators
from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import read_text
from ansible_collections.launchcard.inference.plugins.module_utils._ascend_installers import (
    COMPONENTS,
    AscendPlanError,
    install_plan,
    installer_sources,
    parse_version_file,
)

DEFAULT_VERSION_FILES = {
    "driver": "/usr/local/Ascend/driver/version.info",
    "firmware": "/usr/local/Ascend/firmware/version.info",
    "toolkit": "/usr/local/Ascend/ascend-toolkit/latest/%s-linux/ascend_toolkit_install.info" % os.uname()[4],
    "kernels": "/usr/local/Ascend/ascend-toolkit/latest/opp_kernel/version.info",
    "nnal": "/usr/local/Ascend/nnal/atb/latest/version.info",
}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            wanted=dict(type="dict", required=True),
            version_files=dict(type="dict", default={}),
            force=dict(type="bool", default=False),
            package_urls=dict(type="dict", default={}),
            package_base_url=dict(type="str", default=""),
            package_files=dict(type="dict", default={}),
            checksums=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    files = dict(DEFAULT_VERSION_FILES, **(module.params["version_files"] or {}))
    unknown = sorted(set(files) - set(COMPONENTS))
    if unknown:
        module.fail_json(msg="version_files: unknown component(s) %s (expected %s)" % (", ".join(unknown), ", ".join(COMPONENTS)))
    installed = dict((key, parse_version_file(read_text(files[key]))) for key in COMPONENTS)
    driver_file = dict(accelerators.FILES["ascend"])["ascend_version_info"]

    def read(path):
        # the accelerator facts read the driver's version.info where O(version_files) says it is
        return read_text(files["driver"] if path == driver_file else path)

    summary = accelerators.collect("ascend", which=module.get_bin_path, run=module.run_command, read=read)
    try:
        result = install_plan(installed, module.params["wanted"], summary["devices"], module.params["force"])
        result["steps"] = installer_sources(result["steps"], module.params["package_urls"],
                                            module.params["package_base_url"], module.params["package_files"],
                                            module.params["checksums"])
    except AscendPlanError as exc:
        module.fail_json(msg=str(exc))
    result.update(installed=installed, accelerators=summary, changed=False)
    if result["refused"]:
        module.fail_json(msg=result["refused"], **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
