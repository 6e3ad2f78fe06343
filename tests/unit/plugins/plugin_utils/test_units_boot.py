# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bug report case M: after a reboot the engines start before the GPUs are usable.

Two defences, both read from the rendered files: the engines that use GPUs are ordered after the
vendor's readiness units, and the restart policy rides out a slow boot that no unit covers, while a
genuine crash loop still ends in ``failed``. The restart policy is checked against a model of
systemd's start rate limit (src/basic/ratelimit.c ratelimit_below: the window opens at the first
start and resets once a start comes more than the interval after it; a start is refused when the
window already holds the burst) and of ``Restart=on-failure`` with a fixed ``RestartSec=``.
"""

from __future__ import annotations

import re

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _units as units
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import render

from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units_hardening import (
    INST, _directives)

GPU_RECIPES = ("vllm-aggregated", "sglang-prefill", "sglang-decode")
OPTIONS = ({"runtime": "native"}, {"runtime": "docker"}, {"runtime": "podman"},
           {"runtime": "podman", "podman_quadlet": True})


def _values(text, section, key):
    return [line.split("=", 1)[1] for line in _directives(text, section) if line.startswith(key + "=")]


@pytest.mark.parametrize("opts", OPTIONS)
def test_gpu_engines_start_after_the_nvidia_readiness_units(opts):
    for recipe in GPU_RECIPES:
        text = render(INST[recipe], dict(opts, vendor="nvidia"))
        after = " ".join(_values(text, "Unit", "After")).split()
        for name in ("nvidia-persistenced.service", "nvidia-fabricmanager.service", "nvidia-cdi-refresh.service",
                     units.CDI_REFRESH_UNIT):
            assert name in after, (recipe, opts, after)
        # ordering only: a disabled fabric manager (no NVSwitch) must not be started by an engine
        pulled = " ".join(_values(text, "Unit", "Wants") + _values(text, "Unit", "Requires")).split()
        assert not [u for u in pulled if u.startswith("nvidia")], pulled


@pytest.mark.parametrize("opts", OPTIONS)
def test_a_router_without_gpus_waits_for_no_gpu(opts):
    text = render(INST["sglang-router"], dict(opts, vendor="nvidia"))
    assert "nvidia" not in " ".join(_values(text, "Unit", "After"))


# -- the restart policy against systemd's start rate limit --------------------------------------------
def policy(text):
    """(RestartSec, StartLimitBurst, StartLimitIntervalSec) as the rendered unit sets them."""
    service = dict(line.split("=", 1) for line in _directives(text, "Service"))
    unit = dict(line.split("=", 1) for line in _directives(text, "Unit"))
    assert service["Restart"] == "on-failure"
    return int(service["RestartSec"]), int(unit["StartLimitBurst"]), int(unit["StartLimitIntervalSec"])


def boot(restart_sec, burst, interval, gpu_ready_at, fails_in=1.0, horizon=3600.0):
    """Simulate the boot: the engine's start fails ``fails_in`` s after it began while the GPUs are not
    usable (before ``gpu_ready_at`` s; None: never), succeeds once they are. Returns ``("active", t,
    starts)`` or ``("failed", t, starts)`` (the start limit refused a start)."""
    begin, num, t, starts = None, 0, 0.0, 0
    while t < horizon:
        if begin is None or t - begin > interval:  # a new window
            begin, num = t, 0
        elif num >= burst:
            return "failed", t, starts
        num += 1
        starts += 1
        if gpu_ready_at is not None and t >= gpu_ready_at:
            return "active", t, starts
        t += fails_in + restart_sec  # exit, then RestartSec before the next start
    return "failed", t, starts


def test_the_model_reproduces_the_report_with_the_old_policy():
    # RestartSec=10, 5 starts in 300 s: a fabric manager that needs ~60 s (nvtrust #128) leaves it failed
    assert boot(10, 5, 300, gpu_ready_at=60)[0] == "failed"


@pytest.mark.parametrize("ready_at", [47, 60, 120, 240])
def test_a_slow_boot_ends_with_the_engine_active(ready_at):
    text = render(INST["vllm-aggregated"], {"runtime": "podman", "vendor": "nvidia"})
    state = boot(*policy(text), gpu_ready_at=ready_at)[0]
    assert state == "active", (ready_at, policy(text))


@pytest.mark.parametrize("opts", OPTIONS)
def test_a_genuine_crash_loop_still_ends_failed(opts):
    restart_sec, burst, interval = policy(render(INST["sglang-decode"], opts))
    state, t, starts = boot(restart_sec, burst, interval, gpu_ready_at=None)
    assert state == "failed" and starts == burst, (t, starts)
    # the limit is reachable: the whole burst of fast failures fits in one interval
    assert (burst - 1) * (restart_sec + 1) < interval
    # and nothing needs systemd >= 254 (RestartSteps=, RestartMaxDelaySec=): Debian 12 and RHEL 9 run 252
    assert not re.search(r"^Restart(Steps|MaxDelaySec)=", render(INST["sglang-decode"], opts), re.M)


# -- case L: the CDI spec is rewritten at boot, before the engines start --------------------------------
def test_the_engines_wait_for_the_unit_the_nvidia_role_installs():
    import os
    import yaml
    root = os.path.dirname(os.path.abspath(units.__file__)).rsplit(os.sep + "plugins", 1)[0]
    template = os.path.join(root, "roles", "nvidia", "templates", units.CDI_REFRESH_UNIT + ".j2")
    with open(template) as f:
        text = f.read()
    # a oneshot that regenerates the spec the role manages, wanted at boot
    assert "Type=oneshot" in text and "WantedBy=multi-user.target" in text
    assert "ExecStart=/usr/bin/nvidia-ctk cdi generate --output={{ nvidia_cdi_spec }}" in text
    with open(os.path.join(root, "roles", "nvidia", "tasks", "main.yml")) as f:
        tasks = yaml.safe_load(f)
    names = [t.get("name", "") for t in tasks]
    installed = [t for t in tasks if (t.get("ansible.builtin.template") or {}).get("src") == units.CDI_REFRESH_UNIT + ".j2"]
    enabled = [t for t in tasks if (t.get("ansible.builtin.systemd_service") or {}).get("name") == units.CDI_REFRESH_UNIT]
    assert installed and installed[0]["ansible.builtin.template"]["dest"] == "/etc/systemd/system/" + units.CDI_REFRESH_UNIT
    assert enabled and enabled[0]["ansible.builtin.systemd_service"]["enabled"] is True
    # installed and enabled before the reboot onto the new driver, whose gate waits for the engines
    reboot = names.index("Nvidia | Reboot onto the installed driver")
    assert tasks.index(installed[0]) < reboot and tasks.index(enabled[0]) < reboot
    # the name the engines wait for is not the units' prefix, which the converge prunes
    assert not units.CDI_REFRESH_UNIT.startswith("launchcard-")
