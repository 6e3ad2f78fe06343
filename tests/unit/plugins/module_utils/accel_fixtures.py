# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the accelerator tests share: the tools' recorded outputs (tests/unit/fixtures/accelerators/) and the
shape every summary has.

Fixtures under tests/unit/fixtures/accelerators/ are written from the
documented output shapes (the tools' documentation, upstream tool sources and
public bug reports); serial numbers and UUIDs in them are made up.
"""

from __future__ import annotations

import os

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "accelerators")


PCI_IDS_EXCERPT = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "pci.ids-excerpt")
with open(PCI_IDS_EXCERPT) as _handle:
    PCI_IDS = _handle.read()


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def with_fabric(gpus, fabric):
    """The answer to the GPU query that also asks the fabric fields: each row of the list query's text *gpus*
    followed by the state and status of the fabric query's text *fabric* (``index, state, status`` per GPU)."""
    states = [line.split(",", 1)[1] for line in fabric.splitlines()]
    return "".join("%s,%s\n" % (row, state) for row, state in zip(gpus.splitlines(), states))


def ok(name):
    """A successful run_command result printing the fixture."""
    return (0, fixture(name), "")


DEVICE_KEYS = {
    "index", "model", "model_id", "memory_mib", "uuid", "bus_id", "driver_version",
    "persistence_mode", "fabric_state", "health", "health_issues", "memory_reserved_mib", "memory_free_mib",
    "processes",
}
DRIVER_KEYS = {
    "installed_version", "loaded_version", "reboot_required", "fabric_manager_required",
    "imex_required", "nvlink5_required", "fabric_manager_active", "runtime_version", "kernel_module", "message",
    "lost_gpus",
}


def assert_shape(summary):
    assert set(summary) == {"vendor", "count", "devices", "models", "driver", "pci", "errors"}
    assert set(summary["pci"]) == {"vendor", "count", "devices"}
    assert summary["count"] == len(summary["devices"])
    assert set(summary["driver"]) == DRIVER_KEYS
    for device in summary["devices"]:
        assert set(device) == DEVICE_KEYS
    assert [d["index"] for d in summary["devices"]] == sorted(d["index"] for d in summary["devices"])
    assert summary["models"] == sorted(set(d["model_id"] for d in summary["devices"] if d["model_id"]))
    assert all(isinstance(error, str) for error in summary["errors"])
