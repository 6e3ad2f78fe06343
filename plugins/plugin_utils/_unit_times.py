# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The time budgets of a unit: how long its engine may load (``TimeoutStartSec=``, the readiness wait, the health
gate) and drain (``--shutdown-timeout``, the container stop timeout, ``TimeoutStopSec=``). ``_units`` renders them.

Pure Python, no Ansible import. Every value stays within what systemd parses (``_unit_spec.SYSTEMD_MAX_SECONDS``):
the options by their spec's maximum, the card's by :mod:`._env_policy` and :func:`drain_s`.
"""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.plugin_utils import _env_policy as env_policy
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_escape import UnsafeValue
from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_spec import (
    MAX_SECONDS, START_MARGIN_S, STOP_MARGIN_S, with_defaults as options_with_defaults)


# vllm/envs.py (0.32.0): VLLM_ENGINE_READY_TIMEOUT_S defaults to 600 s, how long vLLM waits for its engine to load
VLLM_READY_TIMEOUT_DEFAULT_S = 600
# vllm/engine/arg_utils.py (0.32.0): --shutdown-timeout, "0 = abort, >0 = wait" (seconds; its default is 0)
VLLM_SHUTDOWN_FLAG = "--shutdown-timeout"


def _ready_timeout(inst):
    """The engine's own load budget: the recipe's ``VLLM_ENGINE_READY_TIMEOUT_S``, else vLLM's default (vLLM only).

    :raises UnsafeValue: the variable is not a whole number of seconds that the unit's ``TimeoutStartSec=`` can carry
        (:func:`._env_policy.seconds_issue`; the card's checks refuse such a card first).
    """
    ready = (inst.get("env") or {}).get(env_policy.READY_TIMEOUT)
    if ready is None:
        return VLLM_READY_TIMEOUT_DEFAULT_S if inst.get("launcher", inst.get("engine")) == "vllm" else 0
    issue = env_policy.seconds_issue(env_policy.READY_TIMEOUT, ready)
    if issue:
        raise UnsafeValue("env.%s: %s" % (env_policy.READY_TIMEOUT, issue))
    return int(ready)


def start_budget(inst, options=None):
    """Seconds an instance may take to load and answer: its unit's ``TimeoutStartSec=``, its readiness wait and the
    health gate's default budget (:func:`gate_timeout`), one number.

    ``start_timeout_s``, raised to the engine's own load budget (the recipe's ``VLLM_ENGINE_READY_TIMEOUT_S``;
    vLLM's default 600 s when a vLLM recipe does not set it) plus :data:`START_MARGIN_S`: systemd must not kill, and
    the gate must not give up on, an engine that is still loading within what it allows itself.
    """
    opts = options_with_defaults(options)
    return max(int(opts["start_timeout_s"]), _ready_timeout(inst) + START_MARGIN_S)


def gate_timeout(host_plan, options=None, override=None):
    """The health gate's timeout for one host: ``override`` when the operator sets one, else the largest
    :func:`start_budget` of the host's instances (``start_timeout_s`` for a host without instances).

    :raises ValueError: ``override`` is not a whole number of seconds above 0.
    """
    if override is not None and str(override).strip() != "":
        try:
            value = int(str(override).strip())
        except ValueError:
            raise ValueError("the gate timeout must be a whole number of seconds, found %r" % (override,))
        if value <= 0:
            raise ValueError("the gate timeout must be above 0 seconds, found %r" % (override,))
        return value
    opts = options_with_defaults(options)
    budgets = [start_budget(i, opts) for i in (host_plan or {}).get("instances") or []]
    return max(budgets) if budgets else int(opts["start_timeout_s"])


def _start_timeout(inst, opts):
    return start_budget(inst, opts)


def _card_shutdown_timeout(argv):
    """The ``--shutdown-timeout`` the card's argv sets (``N`` or ``=N``), or None."""
    for i, word in enumerate(argv):
        if word == VLLM_SHUTDOWN_FLAG and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith(VLLM_SHUTDOWN_FLAG + "="):
            return word.split("=", 1)[1]
    return None


def drain_s(inst, options=None):
    """Seconds the engine may take to finish its in-flight requests after SIGTERM.

    vLLM: the card's ``--shutdown-timeout`` when it sets one, else ``engine_shutdown_timeout_s`` (which
    :func:`engine_argv` renders). SGLang drains until no request is left, without a bound of its own
    (python/sglang/srt/managers/tokenizer_manager.py 0.5.23, ``sigterm_watchdog``): ``engine_shutdown_timeout_s``
    bounds it through the stop timeouts. Routers: 0.
    """
    opts = options_with_defaults(options)
    if inst.get("launcher") == "router" or inst.get("role") == "router":
        return 0
    card = _card_shutdown_timeout(inst.get("argv") or []) if inst.get("launcher") == "vllm" else None
    if card is not None:
        try:
            value = max(0, int(card))
        except ValueError:
            raise UnsafeValue("argv %s %r is not a whole number of seconds" % (VLLM_SHUTDOWN_FLAG, card))
        if value > MAX_SECONDS:
            raise UnsafeValue("argv %s %r is more seconds than the unit's TimeoutStopSec= can carry (at most %d: "
                              "systemd refuses a longer time span)" % (VLLM_SHUTDOWN_FLAG, card, MAX_SECONDS))
        return value
    return int(opts["engine_shutdown_timeout_s"])


def stop_timeout(inst, options=None):
    """The container stop timeout (``podman/docker stop -t``, ``--stop-timeout``): ``stop_timeout_s``, raised to
    the engine's drain (:func:`drain_s`) plus :data:`STOP_MARGIN_S`, so the runtime's SIGKILL never cuts the drain."""
    opts = options_with_defaults(options)
    return max(int(opts["stop_timeout_s"]), drain_s(inst, opts) + STOP_MARGIN_S)
