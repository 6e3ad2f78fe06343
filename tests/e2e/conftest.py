# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One boot of the 7-host sandbox fleet (inventories/sandbox/gpus.ini) for every e2e file that uses it.

``sandbox_fleet`` is session-scoped so test_deploy_sandbox.py and
test_operations_sandbox.py share one boot; the fleet goes down as soon as the
next test does not use it (not at the end of the session), so it never runs
beside the preflight and bare-host fleets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INVENTORY = "inventories/sandbox/gpus.ini"
BIN = os.path.dirname(sys.executable)
_STATE = {"up": False}


def _run(args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=False)


def _down():
    if _STATE["up"] and not os.environ.get("LAUNCHCARD_KEEP_FLEET"):
        _run([sys.executable, "tests/sandbox/fleet.py", "down"])
    _STATE["up"] = False


@pytest.fixture(scope="session")
def sandbox_fleet():
    """Boot the sandbox fleet; returns ``{host: address}``."""
    up = _run([sys.executable, "tests/sandbox/fleet.py", "up", "-i", INVENTORY])
    _STATE["up"] = True
    assert up.returncode == 0, up.stdout + up.stderr
    inv = json.loads(_run([os.path.join(BIN, "ansible-inventory"), "-i", INVENTORY, "--list"]).stdout)
    hostvars = inv["_meta"]["hostvars"]
    yield {h: hv["ansible_host"] for h, hv in hostvars.items() if "ansible_host" in hv}
    _down()


@pytest.fixture(scope="module")
def fleet(sandbox_fleet):
    """The sandbox fleet for the files that use it (test_deploy_sandbox.py, test_operations_sandbox.py)."""
    return sandbox_fleet


@pytest.fixture(scope="module")
def plan():
    """The sandbox inventory's plan, from the same planner call the demo uses."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
    import demo_request
    return demo_request.inventory_plan(INVENTORY)


def pytest_runtest_teardown(item, nextitem):
    if "sandbox_fleet" in item.fixturenames and (nextitem is None or "sandbox_fleet" not in nextitem.fixturenames):
        _down()


# Each file boots its own fleet on its own subnet (test_deploy_sandbox.py and test_operations_sandbox.py
# share one), so `make e2e` runs them on two pytest-xdist workers: one fleet's files on one worker, never
# split, the longest fleets first. (xdist's own --dist loadgroup reads a node id layout that pytest 9
# changed, so the grouping is this scheduler's: xdist's LoadScopeScheduling, its scope the fleet.)
FLEETS = (("sandbox", ("test_deploy_sandbox.py", "test_operations_sandbox.py")),
          ("upgrade", ("test_upgrade_sandbox.py",)),
          ("upgrade-containers", ("test_upgrade_containers_sandbox.py",)),
          ("realvllm-native", ("test_real_vllm_native_sandbox.py",)),
          ("containers", ("test_containers_sandbox.py",)),
          ("bare-host", ("test_bare_host_sandbox.py",)),
          ("preflight", ("test_preflight_sandbox.py",)),
          ("container-faults", ("test_container_faults_sandbox.py",)),
          ("pd-split", ("test_pd_split_sandbox.py",)))


def _fleet_of(path):
    """``(rank, fleet)`` of a test file (a path or a node id)."""
    name = os.path.basename(str(path).split("::", 1)[0])
    for rank, (group, files) in enumerate(FLEETS):
        if name in files:
            return rank, group
    return len(FLEETS), name


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
