# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container engine's files the runtime role writes on a host, and the steps that write them.

Private to the collection (the container_conf action plugin); pure Python, no Ansible import. The file contents
come from ``_images.py``; this module decides which files a host gets and in which order.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath

from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as images

DOCKER_DAEMON_JSON = "/etc/docker/daemon.json"
RUNTIMES = ("docker", "podman")


def nice_json(value):
    """``value`` as Ansible's ``to_nice_json`` filter writes it (ansible-core 2.19 plugins/filter/core.py: indent 4,
    sorted keys, ``(',', ': ')`` separators), so files written before keep their bytes."""
    return json.dumps(value, indent=4, sort_keys=True, separators=(",", ": "))


def docker_daemon_text(slurped, mirrors):
    """The new ``daemon.json`` text from ``ansible.builtin.slurp``'s result of the current one (failed or without
    ``content``: no file yet), with the mirrors merged in (:func:`_images.docker_daemon_config`).

    :raises ImageError: as :func:`_images.docker_daemon_config`, or a file that is not UTF-8 text.
    """
    current = ""
    if (slurped or {}).get("content") and not slurped.get("failed"):
        try:
            current = base64.b64decode(slurped["content"]).decode("utf-8")
        except (binascii.Error, ValueError) as exc:
            raise images.ImageError("%s is not UTF-8 text (%s): fix or remove it" % (DOCKER_DAEMON_JSON, exc))
    return nice_json(images.docker_daemon_config(current, mirrors))


def settings_steps(runtime, mirrors, keyring, conf_dir, daemon_path=DOCKER_DAEMON_JSON):
    """The steps that write the engine's registry mirrors and podman's keyring setting, in order.

    :returns: ``[{"module": "slurp" | "file" | "copy", "args": {...}, "content": NAME}]``: ``content`` (copy only)
        names what the file holds: ``docker_daemon`` (computed from the slurp before it), ``podman_registries``,
        ``podman_containers``.
    :raises ImageError: a runtime other than docker and podman.
    """
    if runtime not in RUNTIMES:
        raise images.ImageError("runtime must be one of %s, found %r" % (", ".join(RUNTIMES), runtime))
    steps = []
    if runtime == "docker" and mirrors:
        # Docker mirrors Docker Hub only (daemon.json registry-mirrors); every other key of the file is kept
        steps.append({"module": "slurp", "args": {"src": daemon_path}})
        steps.append({"module": "copy", "args": {"dest": daemon_path, "mode": "0644"}, "content": "docker_daemon"})
    if runtime == "podman" and mirrors:
        steps.append({"module": "copy", "content": "podman_registries",
                      "args": {"dest": posixpath.join(conf_dir, "registries.conf.d", "50-launchcard-mirrors.conf"),
                               "mode": "0644"}})
    if runtime == "podman" and not keyring:
        drop_ins = posixpath.join(conf_dir, "containers.conf.d")
        steps.append({"module": "file", "args": {"path": drop_ins, "state": "directory", "mode": "0755"}})
        steps.append({"module": "copy", "content": "podman_containers",
                      "args": {"dest": posixpath.join(drop_ins, "50-launchcard.conf"), "mode": "0644"}})
    return steps


def auth_steps(credentials, auth_file):
    """The steps that write podman's registry auth file (root only) or, without credentials, remove it.

    :returns: as :func:`settings_steps`; the copy's ``content`` is ``registry_auth``.
    """
    if not credentials:
        return [{"module": "file", "args": {"path": auth_file, "state": "absent"}}]
    return [{"module": "file", "args": {"path": posixpath.dirname(auth_file), "state": "directory", "mode": "0700"}},
            {"module": "copy", "content": "registry_auth",
             "args": {"dest": auth_file, "owner": "root", "group": "root", "mode": "0600"}}]


def content(name, mirrors, keyring=True, credentials=None, plain_http=None, slurped=None):
    """The text of one file of :func:`settings_steps` or :func:`auth_steps` (``content`` names it).

    :raises ImageError: a bad mirror or credential entry (naming it, never a password).
    """
    if name == "docker_daemon":
        return docker_daemon_text(slurped, mirrors)
    if name == "podman_registries":
        return images.podman_registries_conf(mirrors)
    if name == "podman_containers":
        return images.podman_containers_conf(bool(keyring))
    if name == "registry_auth":
        return nice_json(images.registry_auth(credentials, mirrors, plain_http))
    raise images.ImageError("no such file: %r" % (name,))


def merge_results(results):
    """One task result from the results of several steps: changed when any changed, their diffs as one list.

    A single step's result is returned as it is (the same output as the task it replaces); a failed one's keys are
    kept (its ``msg``).
    """
    ran = [r for r in results if not r.get("skipped")]
    if len(ran) == 1:
        return dict(ran[0])
    failed = [r for r in ran if r.get("failed")]
    merged = dict(failed[0]) if failed else {}
    merged["changed"] = any(r.get("changed") for r in ran)
    diffs = []
    for r in ran:
        d = r.get("diff")
        diffs.extend(d if isinstance(d, list) else [d] if d else [])
    if diffs:
        merged["diff"] = diffs
    return merged
