# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 42, "A card's environment": a card's (or an override's) variables reach the engine's process only, a name
that changes what a process loads or where it connects is refused on the controller naming the field, and the Hub
token reaches only an engine that may download. docs/untrusted-input.md lists these cases."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.launchcard.inference.plugins.plugin_utils._card import CardError, load_card
from ansible_collections.launchcard.inference.plugins.plugin_utils._planner import PlanError, normalize_placement, plan
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_escape import UnsafeValue
from ansible_collections.launchcard.inference.plugins.plugin_utils._units import render
from ansible_collections.launchcard.inference.tests.unit.plugins.plugin_utils.test_units import (
    directives, engine_environment, parse_exec)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
with open(os.path.join(ROOT, "cards", "glm-5.3-flash.json")) as _f:
    DOC = json.load(_f)
VLLM = [i for i, e in enumerate(DOC["envs"]) if e["engine"] == "vllm"][0]
SECRETS = "/etc/launchcard/secrets.env"
FLAVOURS = ({"runtime": "native"}, {"runtime": "docker"}, {"runtime": "podman"},
            {"runtime": "podman", "podman_quadlet": True})
# one name per family _env_policy refuses, with the manual it comes from
REFUSED = ["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "GCONV_PATH", "GLIBC_TUNABLES", "PATH", "PYTHONPATH",
           "PYTHONHOME", "PYTHONSTARTUP", "DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "CONTAINERS_CONF",
           "CONTAINER_HOST", "REGISTRY_AUTH_FILE", "BASH_ENV", "ENV", "SHELLOPTS", "HF_TOKEN", "HF_ENDPOINT"]


def _card(**env):
    doc = copy.deepcopy(DOC)
    doc["envs"][VLLM].setdefault("env", {}).update(env)
    return doc


def _load(doc):
    return load_card(json.dumps(doc), "card.json")


def _inst(card, overrides=None):
    recipe = card["recipes"][VLLM]["name"]
    p = plan(card, normalize_placement([("h", {"address": "10.0.0.1", "recipes": [recipe],
                                               "argv_overrides": overrides})]))
    return p["hosts"]["h"]["instances"][0]


@pytest.mark.parametrize("name", REFUSED)
def test_a_card_variable_that_changes_what_a_process_loads_or_reaches_is_refused_naming_the_field(name):
    # the card's own snapshot path: where LD_PRELOAD would point to run the card's code as root
    with pytest.raises(CardError) as exc:
        _load(_card(**{name: "/var/lib/launchcard/models/hub/evil.so"}))
    paths = [p for p, dummy in exc.value.errors]
    assert paths == ["envs[%d].env.%s" % (VLLM, name)], exc.value.errors
    assert "reaches the engine only" in str(exc.value)


@pytest.mark.parametrize("name", ["LD_PRELOAD", "PYTHONPATH", "DOCKER_HOST", "BASH_ENV"])
def test_an_override_cannot_add_such_a_variable(name):
    card = _load(DOC)
    recipe = card["recipes"][VLLM]["name"]
    with pytest.raises(PlanError) as exc:
        _inst(card, {recipe: {"env": {name: "/tmp/x"}}})
    (host, text), = exc.value.errors
    assert host == "h" and text.startswith("launchcard_argv_overrides['%s'].env['%s']: " % (recipe, name)), text


def test_engine_variables_the_engines_read_pass():
    card = _load(_card(NCCL_SOCKET_IFNAME="eth0", OMP_NUM_THREADS="8", VLLM_USE_V1="1"))
    assert card["recipes"][VLLM]["env"]["NCCL_SOCKET_IFNAME"] == "eth0"


@pytest.mark.parametrize("options", FLAVOURS, ids=lambda o: "-".join(str(v) for v in o.values()))
def test_card_variables_reach_the_engine_and_no_other_command_of_the_unit(options):
    marker = "/srv/card-marker-value"
    inst = _inst(_load(_card(CARD_MARKER=marker)))
    text = render(inst, dict(options, vendor="nvidia", secrets_env_file=SECRETS))
    # systemd.exec(5): Environment= reaches every command of the unit (the docker/podman client, conmon,
    # nvidia-modprobe, the readiness helper): the unit has none
    assert directives(text, "Environment") == []
    assert engine_environment(text)["CARD_MARKER"] == marker
    for key in ("ExecStartPre", "ExecStartPost", "ExecStop", "ExecStopPost"):
        for line in directives(text, key):
            assert marker not in line, (key, line)
    if options["runtime"] == "native":
        # env(1) sets it on the engine's process and execs the engine: the program after the NAME=VALUE words
        words = parse_exec(directives(text, "ExecStart")[0])
        assert words[0] == "/usr/bin/env" and "CARD_MARKER=%s" % marker in words
        assert words[words.index("CARD_MARKER=%s" % marker):].index("/opt/launchcard/venv/bin/vllm") > 0


def test_a_plan_that_skipped_the_card_checks_is_refused_at_render():
    inst = _inst(_load(DOC))
    inst = dict(inst, env=dict(inst["env"], LD_PRELOAD="/var/lib/launchcard/models/evil.so"))
    for options in FLAVOURS:
        with pytest.raises(UnsafeValue, match="^env.LD_PRELOAD: LD_PRELOAD may not be set"):
            render(inst, options)


@pytest.mark.parametrize("options", FLAVOURS, ids=lambda o: "-".join(str(v) for v in o.values()))
def test_the_hub_token_reaches_only_an_engine_that_may_download(options):
    inst = _inst(_load(DOC))
    # launchcard_hf_offline (the default): HF_HUB_OFFLINE=1, the engine never downloads, so no token
    offline = render(inst, dict(options, secrets_env_file=SECRETS))
    assert SECRETS not in offline and "HF_TOKEN" not in offline
    online = render(inst, dict(options, secrets_env_file=SECRETS, hf_offline=False))
    assert directives(online, "EnvironmentFile") == ["-" + SECRETS]
    # the card's own HF_HUB_OFFLINE=1 (huggingface_hub reads "1", "ON", "YES", "TRUE" in any case) keeps it offline
    for value in ("1", "yes", "True"):
        card_offline = _inst(_load(_card(HF_HUB_OFFLINE=value)))
        assert SECRETS not in render(card_offline, dict(options, secrets_env_file=SECRETS, hf_offline=False))


@pytest.mark.parametrize("ready", ["9" * 400, "18446744073709", "-1", "1e9", "soon"])
def test_a_ready_timeout_systemd_cannot_carry_is_refused_naming_the_field(ready):
    with pytest.raises(CardError) as exc:
        _load(_card(VLLM_ENGINE_READY_TIMEOUT_S=ready))
    assert [p for p, dummy in exc.value.errors] == ["envs[%d].env.VLLM_ENGINE_READY_TIMEOUT_S" % VLLM], exc.value.errors
    card = _load(DOC)
    recipe = card["recipes"][VLLM]["name"]
    with pytest.raises(PlanError) as exc:
        _inst(card, {recipe: {"env": {"VLLM_ENGINE_READY_TIMEOUT_S": ready}}})
    assert "env['VLLM_ENGINE_READY_TIMEOUT_S']: expected" in exc.value.errors[0][1]


def test_the_largest_ready_timeout_renders_a_start_timeout_systemd_parses():
    from ansible_collections.launchcard.inference.plugins.plugin_utils._env_policy import SECONDS_VARIABLES
    largest = SECONDS_VARIABLES["VLLM_ENGINE_READY_TIMEOUT_S"]
    text = render(_inst(_load(_card(VLLM_ENGINE_READY_TIMEOUT_S=str(largest)))), {"runtime": "docker"})
    # 18446744073708: the longest time span systemd 252 parses (`systemd-analyze timespan`; one more is ERANGE)
    assert directives(text, "TimeoutStartSec") == ["18446744073708"]
