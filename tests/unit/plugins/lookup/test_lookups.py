# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host_entry and failure_budget_spent lookups, in a real ansible-playbook run (a fact table set once for the
fleet, a play variable, a failed host) and on their own (errors naming the option)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible.errors import AnsibleLookupError

from ansible_collections.launchcard.inference.plugins.lookup import failure_budget_spent
from ansible_collections.launchcard.inference.plugins.lookup import host_entry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
BIN = os.path.dirname(os.path.abspath(sys.executable))

INVENTORY = "[fleet]\nh1\nh2\nh3\nh4\n\n[fleet:vars]\nansible_connection=local\nansible_python_interpreter=%s\n" % sys.executable
PLAYBOOK = '''
- hosts: fleet
  gather_facts: false
  vars:
    # a play variable: stored as its template, rendered by the lookup
    table_var: "{{ {'h1': 'from-play', 'h2': 'two'} }}"
    # the units role's units_reads reads its host's gates with one lookup in a Jinja block ('-%}': a dict, not its text)
    units_gates_here: >-
      {% set gates = lookup('launchcard.inference.host_entry', 'launchcard_gates', missing=[], undefined=false) -%}
      {{ {inventory_hostname: gates} if gates is not false else none }}
  tasks:
    - name: A table for the fleet, set once
      ansible.builtin.set_fact:
        plan: {hosts: {h1: {card: a}, h2: {card: b}, h3: null}}
        launchcard_gates: {h1: [{port: 8000}], h2: []}
      run_once: true
    - name: h4 is lost
      ansible.builtin.fail:
        msg: lost
      when: inventory_hostname == 'h4'
    - name: Report
      ansible.builtin.copy:
        dest: "{{ out_dir }}/{{ inventory_hostname }}.json"
        mode: "0644"
        content: >-
          {{ {'entry': lookup('launchcard.inference.host_entry', 'plan.hosts'),
              'missing': lookup('launchcard.inference.host_entry', 'plan.hosts', missing='none-here'),
              'undefined': lookup('launchcard.inference.host_entry', 'nope.hosts', undefined=false),
              'play': lookup('launchcard.inference.host_entry', 'table_var'),
              'other': lookup('launchcard.inference.host_entry', 'plan.hosts', host='h2'),
              'spent': lookup('launchcard.inference.failure_budget_spent'),
              'spent_50': lookup('launchcard.inference.failure_budget_spent', percent=50),
              'gates_here': units_gates_here} | to_json }}
'''


def _run(tmp_path, *extra):
    (tmp_path / "hosts.ini").write_text(INVENTORY)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    # each host writes what it read (no stdout callback outside ansible-core: the compat runs have none)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               ANSIBLE_CALLBACKS_ENABLED="launchcard.inference.gc_freeze", ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0")
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(tmp_path / "hosts.ini"),
                           str(tmp_path / "play.yml"), "-e", "out_dir=%s" % tmp_path] + list(extra),
                          env=env, capture_output=True, text=True,
                          cwd=ROOT, check=False)
    assert proc.returncode == 2, proc.stderr  # h4 failed, as the play makes it
    got = {}
    for host in ("h1", "h2", "h3", "h4"):
        if (tmp_path / ("%s.json" % host)).exists():
            got[host] = json.loads((tmp_path / ("%s.json" % host)).read_text())
    return got


def test_entries_and_budget_in_a_real_run(tmp_path):
    got = _run(tmp_path)
    assert set(got) == {"h1", "h2", "h3"}  # h4 failed
    assert got["h1"]["entry"] == {"card": "a"} and got["h2"]["entry"] == {"card": "b"}
    assert got["h3"]["entry"] is None  # an entry that is null
    assert got["h1"]["missing"] == {"card": "a"}
    assert got["h1"]["undefined"] is False
    assert got["h1"]["play"] == "from-play" and got["h3"]["play"] is None
    assert all(r["other"] == {"card": "b"} for r in got.values())
    # a mapping, not its text; a host the table lacks has no gate
    assert got["h1"]["gates_here"] == {"h1": [{"port": 8000}]} and got["h3"]["gates_here"] == {"h3": []}
    # 1 of 4 lost: over a budget of 0, within 50
    assert all(r["spent"] is True and r["spent_50"] is False for r in got.values())


def test_budget_from_the_variable(tmp_path):
    got = _run(tmp_path, "-e", "launchcard_max_fail_percentage=25")
    assert all(r["spent"] is False for r in got.values())  # 25 % of 4 is 1: not exceeded


def test_a_host_missing_from_the_table():
    lookup = host_entry.LookupModule()
    variables = {"inventory_hostname": "h9", "t": {"h1": 1}}
    assert lookup.run(["t"], variables) == [None]
    assert lookup.run(["t"], variables, missing=[]) == [[]]
    assert lookup.run(["t"], variables, host="h1") == [1]


def test_errors_name_the_option():
    with pytest.raises(AnsibleLookupError, match="unknown option.*hots"):
        host_entry.LookupModule().run(["t"], {"inventory_hostname": "h1"}, hots="h1")
    with pytest.raises(AnsibleLookupError, match="a term must name a variable"):
        host_entry.LookupModule().run([""], {"inventory_hostname": "h1"})
    with pytest.raises(AnsibleLookupError, match="launchcard_max_fail_percentage must be an integer"):
        failure_budget_spent.LookupModule().run([], {"ansible_play_hosts_all": ["a"], "ansible_play_hosts": ["a"]},
                                                percent=120)
