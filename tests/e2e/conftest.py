# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The e2e files' scheduling: one fleet's files on one pytest-xdist worker, the longest fleets first."""

from __future__ import annotations

import os


# Each file boots its own fleet on its own subnet, so `make e2e` runs them on pytest-xdist workers side by side: one
# fleet's files on one worker, never split, the longest fleets first. (xdist's own --dist loadgroup reads a node id layout that pytest 9
# changed, so the grouping is this scheduler's: xdist's LoadScopeScheduling, its scope the fleet.)
FLEETS = (("sandbox", ("test_deploy_sandbox.py",)),
          ("operations", ("test_operations_sandbox.py",)),
          ("upgrade", ("test_upgrade_sandbox.py",)),
          ("upgrade-containers", ("test_upgrade_containers_sandbox.py",)),
          ("realvllm-native", ("test_real_vllm_native_sandbox.py",)),
          ("containers", ("test_containers_sandbox.py",)),
          ("bare-host", ("test_bare_host_sandbox.py",)),
          ("preflight", ("test_preflight_sandbox.py",)),
          ("container-faults", ("test_container_faults_sandbox.py",)),
          ("pd-split", ("test_pd_split_sandbox.py",)),
          ("slices", ("test_plan_slices_sandbox.py",)),
          ("hostile", ("test_hostile_sandbox.py",)),
          ("liveness", ("test_liveness_sandbox.py",)))


def _fleet_of(path):
    """``(rank, fleet)`` of a test file (a path or a node id)."""
    name = os.path.basename(str(path).split("::", 1)[0])
    for rank, (group, files) in enumerate(FLEETS):
        if name in files:
            return rank, group
    return len(FLEETS), name


def pytest_configure(config):
    # `make e2e` leaves these out: `make e2e-slices` runs them (a fleet of 24 hosts, two full deploys)
    config.addinivalue_line("markers", "fleet24: on the 24-host bench fleet (inventories/bench24), outside make e2e")


def pytest_collection_modifyitems(config, items):
    # sorted() is stable: the tests of a file keep their order (later cases build on earlier ones)
    items[:] = sorted(items, key=lambda item: _fleet_of(item.fspath)[0])


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class FleetScheduling(LoadScopeScheduling):
        """Every test of one fleet on one worker (xdist hands out whole scopes)."""

        def _split_scope(self, nodeid):
            return _fleet_of(nodeid)[1]

    return FleetScheduling(config, log)
