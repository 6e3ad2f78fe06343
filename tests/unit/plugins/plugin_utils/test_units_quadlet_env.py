# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bug report case H: Quadlet splits ``Environment=`` values and drops what it cannot parse.

Quadlet's own rules (containers/podman pkg/systemd/quadlet/quadlet.go ConvertContainer and
pkg/systemd/parser/unitfile.go): the generated service is a copy of the ``.container`` file
(``service := container.Dup()``) whose ``[Container]`` group is renamed ``X-Container`` and turned into
``podman run`` words; ``[Container] Environment=`` is read by ``LookupAllKeyVal``, which splits the
value into words and silently skips a line it cannot split (podman #26259: ``extra_params=--a --b``
became two ``--env`` words; #26542: a line skipped with no unit). ``[Service]`` lines are copied as
they are and read by systemd, for every command of the unit (podman, conmon, the readiness helper), so
card values go in neither: they are ``--env NAME=VALUE`` words of ``PodmanArgs=``, escaped as every
word there (systemd's rules, which Quadlet's word splitting follows), so podman gets each value whole.

This test fails if a card value is moved into ``[Container] Environment=`` (Quadlet's parser) or into
``[Service] Environment=`` (every command of the unit).
"""

from __future__ import annotations

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._units import render

from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units import (
    EX, _inst, container_env, directives, parse_exec)
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units_quadlet import QUADLET

# podman #26259's value, and every character that systemd or Quadlet would read as syntax
CARD_ENV = {
    "EXTRA_PARAMS": "--a=1 --b=2",
    "QUOTED": 'it\'s "quoted" \\ back',
    "DOLLARS": "$HOME ${X} $$ $(id)",
    "PERCENT": "100% %n %% %h",
    "MIXED": " lead and trail ; # = ",
}


def quadlet_service(text):
    """What Quadlet generates of a ``.container`` file, as far as the environment goes: group name ->
    its raw ``key=value`` lines (continuations joined), ``[Container]`` renamed ``X-Container``."""
    groups, current = {}, None
    for line in text.replace("\\\n", " ").splitlines():
        if line.startswith("[") and line.endswith("]"):
            name = line[1:-1]
            current = groups.setdefault("X-Container" if name == "Container" else name, [])
        elif line and not line.startswith(("#", ";")) and current is not None:
            current.append(line)
    return groups


@pytest.fixture
def rendered():
    inst = _inst(EX, "vllm-aggregated")
    inst = dict(inst, env=dict(inst["env"], **CARD_ENV))
    return render(inst, dict(QUADLET, vendor="nvidia"))


def test_card_values_never_reach_quadlets_environment_parser(rendered):
    container = quadlet_service(rendered)["X-Container"]
    keys = [line.split("=", 1)[0] for line in container]
    assert "Environment" not in keys and "EnvironmentFile" not in keys, container
    # only in PodmanArgs= (podman run words, split by systemd's rules), never a key Quadlet parses as KEY=VALUE
    others = "\n".join(line for line in container if not line.startswith("PodmanArgs="))
    for value in CARD_ENV.values():
        assert value not in others


def test_card_values_reach_the_container_intact_and_nothing_else(rendered):
    service = quadlet_service(rendered)["Service"]
    # no Environment= in [Service]: podman, conmon and the readiness helper never see a card variable
    assert not [line for line in service if line.startswith("Environment=")], service
    (args,) = directives(rendered, "PodmanArgs")
    env = container_env(parse_exec(args))
    for name, value in CARD_ENV.items():
        assert env[name] == value, name
