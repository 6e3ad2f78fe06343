# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TEST CODE: how the e2e files drive one sandbox fleet (tests/sandbox/fleet.py) from the repository root.

Commands run with the project's virtualenv first on PATH and its ansible.cfg; their output is captured and
returned, never raised on.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
           ANSIBLE_NOCOLOR="1", PATH=BIN + os.pathsep + os.environ.get("PATH", ""))


def run(args, **kw):
    """``subprocess.CompletedProcess`` of ``args`` run in the repository root (text, captured, no stdin)."""
    # not the runner's stdin, which can be left non-blocking (ssh sets it so; a killed one does not undo it): ansible-core refuses that
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(args, cwd=ROOT, env=ENV, capture_output=True, text=True, check=False, **kw)


class Fleet(object):
    """One inventory's fleet: its playbook runs, ssh to its hosts (the fleet's own key), its teardown."""

    def __init__(self, inventory, state):
        self.inventory = inventory
        self.state = state

    def playbook(self, name, *extra):
        return run([os.path.join(BIN, "ansible-playbook"), "playbooks/%s.yml" % name, "-i", self.inventory]
                   + list(extra))

    def playbook_watched(self, name, watch, *extra):
        """:meth:`playbook`, calling ``watch(line)`` with each line of its output as it comes (a test that acts at
        a given task); returns the same ``CompletedProcess``."""
        args = [os.path.join(BIN, "ansible-playbook"), "playbooks/%s.yml" % name, "-i", self.inventory] + list(extra)
        proc = subprocess.Popen(args, cwd=ROOT, env=dict(ENV, PYTHONUNBUFFERED="1"), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []
        for line in proc.stdout:
            lines.append(line)
            watch(line)
        err = proc.stderr.read()
        proc.wait()
        return subprocess.CompletedProcess(args, proc.returncode, "".join(lines), err)

    def ssh(self, host, command, timeout=None):
        """``command`` on ``host`` (its name or address) through the fleet's ssh config, host keys checked."""
        return run(["ssh", "-F", os.path.join(ROOT, self.state, "ssh", "config"), "-o", "BatchMode=yes", host,
                    command], timeout=timeout)

    def addresses(self):
        """``{host: address}`` of the inventory's hosts."""
        inv = json.loads(run([os.path.join(BIN, "ansible-inventory"), "-i", self.inventory, "--list"]).stdout)
        return {h: hv["ansible_host"] for h, hv in inv["_meta"]["hostvars"].items() if "ansible_host" in hv}

    def plan(self):
        """The inventory's plan, from the same planner call the demo uses (tests/sandbox/demo_request.py)."""
        sys.path.insert(0, os.path.join(ROOT, "tests", "sandbox"))
        import demo_request
        return demo_request.inventory_plan(self.inventory)

    def cli(self, *args):
        """tests/sandbox/fleet.py ``args`` on this fleet's state directory."""
        return run([sys.executable, "tests/sandbox/fleet.py"] + list(args) + ["--state-dir", self.state])

    def up(self):
        return run([sys.executable, "tests/sandbox/fleet.py", "up", "-i", self.inventory, "--state-dir", self.state])

    @contextlib.contextmanager
    def booted(self, fresh=False):
        """The fleet up (after a purge when ``fresh``), as ``{host: address}``; down after, unless
        LAUNCHCARD_KEEP_FLEET is set (a fleet to look at after a failed run)."""
        if fresh:
            self.down()
        up = self.up()
        try:
            assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
            yield self.addresses()
        finally:
            if not os.environ.get("LAUNCHCARD_KEEP_FLEET"):
                self.down()

    def down(self):
        """Stop the hosts and purge their overlays (a killed run's locks never meet the next boot)."""
        return self.cli("down", "--purge")

    def pkgrepo(self, *args):
        """The stand-in vendor package repository of this fleet (tests/sandbox/pkgrepo/build.py)."""
        return run([sys.executable, "tests/sandbox/pkgrepo/build.py"] + list(args)
                   + ["--dir", os.path.join(ROOT, self.state, "pkgrepo")])
