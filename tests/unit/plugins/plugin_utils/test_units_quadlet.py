# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Quadlet ``.container`` files (podman >= 4.4): hostile card values parse back to the card's argv and env
the way Quadlet and systemd read them, nothing adds a key, secrets stay out of the file, and the host's podman
decides which kind of unit is written.

Quadlet splits ``Exec=`` and ``PodmanArgs=`` into words by systemd's rules and writes them into the generated
``ExecStart=`` as they are (podman 5.4's ``quadlet -dryrun`` of the special-characters card's file keeps every
word's quoting and ``%%``/``$$``, tested by hand on the sandbox's Debian 13 root filesystem): so the reference
parser of test_units.py, systemd's, is the one that applies.
"""

from __future__ import annotations

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as uo
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import (
    UnsafeValue,
    host_units,
    render,
    unit_file_name,
)

# the reference parsers of systemd lines and the cards, shared with test_units.py
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units import (
    EX, SPECIAL, TOKEN, _inst, _load, _plan, directives, engine_environment, parse_exec)

QUADLET = {"runtime": "podman", "podman_quadlet": True, "secrets_env_file": "/etc/launchcard/secrets.env"}


def sections(text):
    """Section name -> its lines (comments and blank lines dropped)."""
    out, current = {}, None
    for line in text.replace("\\\n", " ").splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = out.setdefault(line[1:-1], [])
        elif line and not line.startswith("#") and current is not None:
            current.append(line)
    return out


def test_a_hostile_card_reaches_the_engine_as_written():
    card = _load(SPECIAL)
    recipe = card["recipes"][0]
    inst = _inst(card, recipe["name"])
    text = render(inst, dict(QUADLET, podman_cgroups="disabled", extra_container_args=["--label", 'a b$x%y"z']))
    (exec_value,) = directives(text, "Exec")
    assert parse_exec(exec_value) == recipe["argv"][1:] + ["--revision", card["model"]["revision"], "--shutdown-timeout", "30"]
    (args,) = directives(text, "PodmanArgs")
    words = parse_exec(args)
    assert words[-2:] == ["--entrypoint", recipe["argv"][0]]
    assert words[words.index("--label") + 1] == 'a b$x%y"z'
    assert "--cgroups=disabled" in words and words[words.index("--stop-timeout") + 1] == "60"
    # card variables: the container's --env NAME=VALUE in PodmanArgs= (escaped as every word there), never an
    # Environment= of the unit, which would reach podman, conmon and the readiness helper too
    assert directives(text, "Environment") == []
    env = engine_environment(text)
    for name, value in recipe["env"].items():
        assert env[name] == value
    # the sections Quadlet knows and no other: no value opened a section or a key of its own
    assert set(sections(text)) == {"Unit", "Container", "Service", "Install"}
    assert [line.split("=", 1)[0] for line in sections(text)["Container"]] == [
        "Image", "ContainerName", "Network", "Volume", "Volume", "PodmanArgs", "Exec"]


@pytest.mark.parametrize("image", ["registry/x:1 --privileged", "x:%h", "x:$HOME", '"x:1"', "x:1;y"])
def test_single_value_keys_take_plain_references_only(image):
    # Image= and ContainerName= are taken literally by Quadlet (quotes included): anything that would need quoting
    # or expand as a specifier is refused, naming the field
    inst = dict(_inst(EX, "vllm-aggregated"))
    with pytest.raises(UnsafeValue, match="image"):
        render(inst, dict(QUADLET, image_refs={inst["image"]: image}))


def test_the_pinned_digest_is_the_image_and_the_secrets_file_is_named_not_read():
    p = _plan(EX, [("c", "10.0.0.3", ["sglang-prefill", "sglang-decode", "sglang-router"])])
    digest = "docker.io/lmsysorg/sglang@sha256:" + "b" * 64
    hv = {"launchcard_runtime": "podman", "launchcard_podman_quadlet": True, "launchcard_hf_token": TOKEN,
          "runtime_image_refs": {"lmsysorg/sglang:latest": digest}, "launchcard_hf_offline": False}
    settings = uo.host_settings(hv)
    assert settings["secrets"] == {"HF_TOKEN": TOKEN}  # the converge writes it to the 0600 file, not a unit
    units = host_units(p["hosts"]["c"], settings["options"])
    assert [u["name"] for u in units] == ["launchcard-glm-5.3-flash-sglang-%s-0.container" % r
                                          for r in ("prefill", "decode", "router")]
    for u in units:
        assert TOKEN not in u["content"] and "HF_TOKEN=" not in u["content"]
        assert directives(u["content"], "Image") == [digest]
        assert directives(u["content"], "EnvironmentFile") == ["-/etc/launchcard/secrets.env"]
        assert "-e HF_TOKEN" in directives(u["content"], "PodmanArgs")[0]
        assert "[Install]\nWantedBy=multi-user.target\n" in u["content"]
        assert "ExecStart=" not in u["content"]  # the generator writes it


def test_docker_and_older_podman_keep_their_service_units():
    inst = _inst(EX, "vllm-aggregated")
    assert unit_file_name(inst["unit"], QUADLET) == "launchcard-glm-5.3-flash-vllm-aggregated-0.container"
    for opts in ({"runtime": "podman"}, {"runtime": "docker", "podman_quadlet": True},
                 {"runtime": "native", "podman_quadlet": True}):
        assert unit_file_name(inst["unit"], opts) == inst["unit"]
        assert "[Container]" not in render(inst, opts) and directives(render(inst, opts), "ExecStart")


def _facts(podman=None, os_id="debian", version="13"):
    facts = {"os": {"id": os_id, "version_id": version}, "engines": {"docker": None}}
    if podman is not None:
        facts["engines"]["podman_version"] = podman
    return {"launchcard_runtime": "podman", "preflight_result": {"facts": facts}}


@pytest.mark.parametrize("hv, quadlet", [
    (_facts("5.4.2"), True),
    (_facts("4.4.0", version="12"), True),  # an installed podman counts before the OS's own
    (_facts("4.3.1", version="13"), False),
    (_facts(None, version="13"), True),  # no podman yet: the runtime role installs Debian 13's 5.4
    (_facts(None, version="12"), False),  # Debian 12's 4.3
    (_facts(None, os_id="rocky", version="9.6"), False),  # the RHEL 9 family: only the installed podman tells
    (dict(_facts("5.4.2"), launchcard_podman_quadlet=False), False),  # the variable wins
    (dict(_facts("4.3.1"), launchcard_podman_quadlet="yes"), True),
    ({"launchcard_runtime": "podman"}, False),  # render.yml: no facts, no variable
])
def test_the_hosts_podman_decides_quadlet(hv, quadlet):
    assert uo.host_options(hv)["podman_quadlet"] is quadlet
