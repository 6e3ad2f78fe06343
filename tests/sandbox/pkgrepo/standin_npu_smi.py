#!/usr/bin/env python
"""TEST CODE: stand-in ``npu-smi`` for the launchcard sandbox. NOT HUAWEI SOFTWARE.

Installed by the stand-in Ascend driver ``.run`` (tests/sandbox/pkgrepo/ascend_runs.py)
as /usr/local/sbin/npu-smi. Prints ``npu-smi info -l`` and ``npu-smi info`` in the
shapes of the real tool (Huawei's npu-smi command reference; the fixtures in
tests/unit/fixtures/accelerators), for chips described by
/etc/launchcard-sandbox/ascend.json (optional)::

    {"count": 8, "name": "910B3", "hbm_mib": 65536, "health": {"3": "Alarm"}}

The header's driver version is the "loaded" driver, /run/launchcard-sandbox/ascend/
loaded_version (written when the stand-in driver is first installed, and at boot).
With no driver loaded it fails as the real tool does when DCMI cannot initialise.
"""

import json
import os
import sys

# the environment overrides are for the unit tests that run this file on the build machine
RUN = os.environ.get("LAUNCHCARD_SANDBOX_ASCEND_LOADED", "/run/launchcard-sandbox/ascend/loaded_version")
CONFIG = os.environ.get("LAUNCHCARD_SANDBOX_ASCEND_JSON", "/etc/launchcard-sandbox/ascend.json")
BAR = "+" + "-" * 96 + "+"
SEP = "+" + "-" * 27 + "+" + "-" * 15 + "+" + "-" * 52 + "+"
EQ = "+" + "=" * 27 + "+" + "=" * 15 + "+" + "=" * 52 + "+"


def row(a, b, c):
    return "| %-26s| %-14s| %-51s|" % (a, b, c)


def main(argv):
    try:
        with open(RUN) as handle:
            loaded = handle.read().strip()
    except OSError:
        loaded = ""
    if not loaded:
        print("dcmi module initialize failed. ret is -8005")
        return 255
    try:
        with open(CONFIG) as handle:
            config = json.load(handle)
    except (OSError, ValueError):
        config = {}
    count = int(config.get("count", 8))
    name = config.get("name", "910B3")
    hbm = int(config.get("hbm_mib", 65536))
    health = {str(k): v for k, v in (config.get("health") or {}).items()}
    if argv == ["info", "-l"]:
        print("\tTotal Count                    : %d\n" % count)
        for npu in range(count):
            print("\tNPU ID                         : %d\n\tChip Count                     : 1\n" % npu)
        return 0
    if argv == ["info"]:
        print(BAR)
        print("| %-95s|" % ("npu-smi %-24s Version: %s" % (loaded, loaded)))
        print(SEP)
        print(row("NPU   Name", "Health", "Power(W)    Temp(C)           Hugepages-Usage(page)"))
        print(row("Chip", "Bus-Id", "AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)"))
        print(EQ)
        for npu in range(count):
            print(row("%-5d %s" % (npu, name), health.get(str(npu), "OK"), "95.0        35                0    / 0"))
            print(row("0", "0000:%02X:00.0" % (0xC1 + npu), "0           0    / 0          3373 / %d" % hbm))
            print(EQ)
        print(row("NPU     Chip", "Process id", "Process name             | Process memory(MB)"))
        print(EQ)
        return 0
    print("Usage: npu-smi info [-l]  (launchcard sandbox stand-in)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
