# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which environment variables a card's recipe (or ``launchcard_argv_overrides``' ``env``) may set, and when a
unit hands the Hub token to its engine. The one home of these rules: the card's checks (``_card_validate``), the
overrides (``_overrides``) and the unit renderer (``_units``) all ask this module.

Pure Python, no Ansible import.

A card's environment reaches the engine's process only (``_units``: container ``--env`` words, ``env(1)`` before a
native engine), yet the engine's process is itself a program that loads code and talks to daemons: a name that
changes which code any process loads, which daemon it reaches or which credential it sends is refused, whatever
the runtime. The names come from the manuals of the programs a unit starts or an engine image holds:

- ld.so(8) and glibc's ``sysdeps/generic/unsecvars.h`` (the variables glibc strips in secure-execution mode):
  ``LD_*`` (``LD_PRELOAD``, ``LD_LIBRARY_PATH``, ``LD_AUDIT``, ...) load shared objects, ``GCONV_PATH`` loads
  gconv modules, ``GLIBC_TUNABLES`` changes the loader's and malloc's behaviour;
- exec(3) (``execvp``): ``PATH`` chooses which program a name runs;
- python(1): ``PYTHONPATH``, ``PYTHONHOME``, ``PYTHONSTARTUP``, ... change what the interpreter imports and runs;
  its ``-I`` drops the whole ``PYTHON*`` family, which is the family refused here;
- docker(1), "Environment variables" of the docker CLI: ``DOCKER_HOST``, ``DOCKER_CONTEXT``, ``DOCKER_CONFIG``,
  ``DOCKER_CERT_PATH``, ... choose the daemon and the credentials the client sends;
- containers.conf(5) and podman(1): ``CONTAINERS_CONF``, ``CONTAINERS_STORAGE_CONF``, ``CONTAINERS_REGISTRIES_CONF``
  replace podman's configuration, ``CONTAINER_HOST``/``CONTAINER_CONNECTION``/``CONTAINER_SSHKEY`` its service,
  podman-login(1)'s ``REGISTRY_AUTH_FILE`` its registry credentials;
- bash(1): ``BASH_ENV`` (and ``ENV`` in POSIX mode) is a file a non-interactive (interactive) shell sources first,
  ``SHELLOPTS``/``BASHOPTS`` set its options; engine images start through shell scripts;
- huggingface_hub/constants.py (2.4.0): ``HF_TOKEN``/``HUGGING_FACE_HUB_TOKEN``/``HF_TOKEN_PATH`` are the Hub
  credential (the operator's, from the secrets file only), ``HF_ENDPOINT`` is where it is sent.
"""

from __future__ import annotations

import re

from ansible_collections.launchcard.inference.plugins.plugin_utils._unit_spec import START_MARGIN_S, SYSTEMD_MAX_SECONDS

#: (prefix, why): every name that starts with the prefix is refused.
REFUSED_PREFIXES = (
    ("LD_", "ld.so(8): makes every dynamically linked program load the code it names"),
    ("PYTHON", "python(1): changes which code the Python interpreter imports or runs"),
    ("DOCKER_", "docker(1): chooses the daemon the docker client talks to and the credentials it sends"),
    ("CONTAINERS_", "containers.conf(5): replaces podman's configuration"),
    ("CONTAINER_", "podman(1): chooses the podman service the client talks to"),
)
#: name -> why: each of these names is refused.
REFUSED_NAMES = {
    "PATH": "exec(3): chooses which program a command name runs",
    "GCONV_PATH": "ld.so(8), glibc unsecvars.h: makes glibc load gconv modules from the directory it names",
    "GLIBC_TUNABLES": "ld.so(8), glibc unsecvars.h: changes how glibc's loader and malloc behave",
    "REGISTRY_AUTH_FILE": "podman-login(1): chooses the registry credentials podman sends",
    "BASH_ENV": "bash(1): a file every non-interactive bash sources before its script",
    "ENV": "bash(1): a file an interactive POSIX-mode shell sources",
    "SHELLOPTS": "bash(1): sets the options of every bash started under it",
    "BASHOPTS": "bash(1): sets the options of every bash started under it",
    "HF_TOKEN": "the Hub token is the operator's (launchcard_hf_token, from the secrets file), never a card's",
    "HUGGING_FACE_HUB_TOKEN": "huggingface_hub: a Hub token; the operator's comes from launchcard_hf_token",
    "HF_TOKEN_PATH": "huggingface_hub: the file the Hub token is read from",
    "HF_ENDPOINT": "huggingface_hub: where downloads, and the operator's Hub token with them, are sent",
}

#: huggingface_hub/constants.py (2.4.0) ``ENV_VARS_TRUE_VALUES``, compared after ``.upper()`` (``_is_true``).
HF_TRUE_VALUES = ("1", "ON", "YES", "TRUE")
#: The variable that keeps huggingface_hub from the network (``HF_HUB_OFFLINE``, constants.py ``_is_true``).
HF_OFFLINE = "HF_HUB_OFFLINE"


#: vllm/envs.py (0.32.0): how long vLLM waits for its engine core to load, in whole seconds (vllm/v1/engine/
#: core_client.py polls with it * 1000 ms); the unit's TimeoutStartSec= is it + START_MARGIN_S (_unit_times).
READY_TIMEOUT = "VLLM_ENGINE_READY_TIMEOUT_S"
#: name -> the largest whole number of seconds it may hold: what the unit adds to it still parses as a systemd time
#: span (_unit_spec.SYSTEMD_MAX_SECONDS); a longer TimeoutStartSec= is ignored and systemd's default kills a slow load.
SECONDS_VARIABLES = {READY_TIMEOUT: SYSTEMD_MAX_SECONDS - START_MARGIN_S}
_WHOLE = re.compile(r"^[0-9]+$")
#: vllm/envs.py (0.32.0): int(os.getenv("VLLM_NIXL_SIDE_CHANNEL_PORT", "5600")), the first NIXL side channel port; the
#: planner moves it off taken ports and preflight checks it is free (module_utils/_preflight.py): a TCP port.
NIXL_PORT = "VLLM_NIXL_SIDE_CHANNEL_PORT"
PORT_VARIABLES = (NIXL_PORT,)


def seconds_issue(name, value):
    """Why ``value`` is not a usable value of the seconds variable ``name`` (:data:`SECONDS_VARIABLES`), or None."""
    limit = SECONDS_VARIABLES.get(name)
    if limit is None:
        return None
    text = str(value)
    if not _WHOLE.match(text):
        return "expected a whole number of seconds (digits only), found %r" % text[:60]
    if int(text) > limit:
        return ("expected at most %d seconds, found %s digits: the unit's TimeoutStartSec= (this + %d) would be more "
                "than systemd parses, and systemd would ignore it" % (limit, len(text), START_MARGIN_S))
    return None


def port_issue(name, value):
    """Why ``value`` is not a usable value of the port variable ``name`` (:data:`PORT_VARIABLES`), or None."""
    if name not in PORT_VARIABLES:
        return None
    text = str(value)
    if not _WHOLE.match(text) or not 1 <= int(text) <= 65535:
        return "expected a TCP port from 1 to 65535 (digits only), found %r" % (
            text if len(text) <= 40 else "%s... (%d characters)" % (text[:20], len(text)))
    return None


def refusal(name):
    """Why a card may not set the environment variable ``name``, or None when it may."""
    name = str(name)
    if name in REFUSED_NAMES:
        return REFUSED_NAMES[name]
    for prefix, why in REFUSED_PREFIXES:
        if name.startswith(prefix):
            return why
    return None


def refusal_message(name):
    """The error for a refused name (None when ``name`` is allowed): what it does and where an engine gets it."""
    why = refusal(name)
    if why is None:
        return None
    return ("%s may not be set by a card or an override (%s); a card's environment reaches the engine only, and a "
            "name that changes which code a process loads, which daemon it reaches or which credential it sends is "
            "refused for every runtime" % (name, why))


def issue(name, value):
    """Why ``name=value`` may not be in an engine's environment (a refused name, seconds systemd cannot carry, a port
    the collection reads that is none); None when it may."""
    scalar = isinstance(value, (str, int)) and not isinstance(value, bool)
    return refusal_message(name) or (seconds_issue(name, value) or port_issue(name, value) if scalar else None)


def env_issues(env, where):
    """``[(path, message)]`` for the refused names and unusable values of ``env`` (a mapping); ``where(name)`` makes
    a name's path (``envs[3].env.LD_PRELOAD``)."""
    if not isinstance(env, dict):
        return []
    out = []
    for name, value in env.items():
        if not isinstance(name, str):
            continue
        problem = issue(name, value)
        if problem:
            out.append((where(name), problem))
    return out


def offline(env):
    """Whether an engine with this environment stays off the Hub (``HF_HUB_OFFLINE`` true, huggingface_hub's way)."""
    value = (env or {}).get(HF_OFFLINE)
    return value is not None and str(value).upper() in HF_TRUE_VALUES
