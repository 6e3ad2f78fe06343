# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the runtime role does on one host, decided once in Python (private to the collection; controller side).

Read by the action plugins that need it: ``runtime_settings`` (the role's first task), ``settle_or_lock`` (whether
the deploy's setup runs the role), ``host_state`` (upgrade.yml's reading and the record it writes) and the units
role's record (:mod:`._units_host`). Its inputs are the runtime role's variables (its defaults, or what the play
passes), the host's variables (``launchcard_runtime_native_*``) and the preflight call's reading of the host.
"""

from __future__ import annotations

import hashlib
import json

from ansible_collections.launchcard.inference.plugins.plugin_utils import _images as images
from ansible_collections.launchcard.inference.plugins.plugin_utils import _play_vars as play_vars
from ansible_collections.launchcard.inference.plugins.plugin_utils import _unit_options as unit_options

NATIVE = "native"
# the requirements stamp's file name in the virtualenv: this prefix and its digest
STAMP_PREFIX = ".launchcard-"


def digest(values):
    """SHA-1 of ``values`` as JSON (json.dumps' defaults, as Ansible's ``to_json`` filter writes it): the stamp and
    the setup digest the hosts' records already name keep their values."""
    return hashlib.sha1(json.dumps(values).encode("utf-8")).hexdigest()


class RuntimeHost(play_vars.HostView):
    """One host's view, for the task running there: ``RuntimeHost(self._templar, task_vars)``."""

    @property
    def kind(self):
        return self.var("runtime_kind") or "docker"

    def native_install(self):
        """What the role installs into the native virtualenv, ``{packages, pip_args, lock}``: the role's own
        ``runtime_native_packages`` (with ``runtime_native_pip_extra_args``) where the play sets them, else
        :func:`._unit_options.native_install` of the host's variables (the operator's list, or a hash-pinned lock).

        :raises ValueError: a malformed package list or lock, or no lock for the host (naming the variable).
        """
        if "native" not in self._cache:
            packages = self.var("runtime_native_packages")
            if packages is not None:
                extra = self.var("runtime_native_pip_extra_args")
                self._cache["native"] = {"packages": unit_options.coerce("list_str", packages, "runtime_native_packages"),
                                         "pip_args": "" if extra is None else str(extra), "lock": None}
            else:
                hostvars = self._vars.get("hostvars") or {}
                self._cache["native"] = unit_options.native_install(hostvars[self.host] if self.host in hostvars else {},
                                                                    self.host_plan or {})
        return self._cache["native"]

    def native_stamp(self):
        """The requirements stamp: a digest of the packages, pip's arguments and the lock's checksum."""
        install = self.native_install()
        return digest(install["packages"] + [install["pip_args"]]
                      + ([install["lock"]["sha256"]] if install["lock"] is not None else []))

    def native_installed(self):
        """Whether the stamp is among the ones the preflight call listed (``runtime_native_stamps_found``); None when
        it listed none (the role then looks for the stamp itself)."""
        found = self.var("runtime_native_stamps_found")
        if found is None:
            return None
        return (STAMP_PREFIX + self.native_stamp()) in found

    def setup_digest(self):
        """A digest of everything the container steps apply (None for native): the engine, its package, the mirrors,
        the keyring and configuration folder, whether and which images it pulls, and, with registry credentials, their
        salted, slow digest (:func:`._images.registry_credentials_digest`, salted with the host's name) and the auth
        file's path, never the password. Without credentials the list is as before they existed, so the records of
        hosts deployed without them stay valid.

        :raises ValueError: credentials the auth file cannot hold.
        """
        if self.kind == NATIVE:
            return None
        mirrors = self.var("runtime_registry_mirrors") or {}
        values = [self.kind, self.var("runtime_engine_package"), mirrors, self.flag("runtime_podman_keyring"),
                  self.var("runtime_podman_conf_dir"), self.flag("runtime_pull_images"),
                  sorted(self.var("runtime_host_images") or [])]
        credentials = self.var("runtime_registry_credentials") or {}
        if credentials:
            try:
                values += [images.registry_credentials_digest(credentials, mirrors, self.host),
                           self.var("runtime_registry_auth_file")]
            except images.ImageError as exc:
                raise ValueError("runtime_registry_credentials: %s" % exc)
        return digest(values)

    def needed(self):
        """Whether the role's steps run on the host: the plan gives it something and the native requirements stamp
        (or the container setup digest its record names, ``runtime_setup_recorded``) is not the one this run applies;
        not known (nothing read): they run."""
        if self.host_plan is None:
            return False
        if self.kind == NATIVE:
            return not self.native_installed()
        recorded = self.var("runtime_setup_recorded")
        return recorded is None or recorded != self.setup_digest()

    def record(self):
        """The runtime the host's record names (``plugins/modules/host_state.py``): its kind, the native packages,
        the pinned images and the container setup digest (a later run skips the container steps while it is equal)."""
        return {"kind": self.kind, "packages": self.native_install()["packages"] if self.kind == NATIVE else [],
                "image_refs": self.var("runtime_image_refs") or {}, "setup": self.setup_digest()}

    def settings(self):
        """The runtime role's decisions for the host (the ``runtime_settings`` module's result): ``needed``,
        ``native`` (``packages``, ``pip_args``, ``lock`` with its text, ``stamp``, ``installed``) on a native host,
        ``setup`` (the container digest) and ``record``."""
        out = {"kind": self.kind, "needed": self.needed(), "setup": self.setup_digest(), "record": self.record()}
        if self.kind == NATIVE:
            out["native"] = dict(self.native_install(), stamp=self.native_stamp(), installed=self.native_installed())
        return out
