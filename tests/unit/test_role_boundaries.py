# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No role's tasks, handlers, vars, defaults or templates name another role's prefixed variables (issue 27).

A role's prefix is its name and ``_`` (``preflight_``, ``stack_reboot_``); ``launchcard_*`` are the collection's
shared variables. What one role needs of another comes in from the play (playbooks/*.yml) as the reading role's
own variable. Read as Ansible reads the files, not as text: comments and module option names (``weights_dir:``
of a module call) are not variables, and neither are the collection's module, filter and role names
(``launchcard.inference.stack_reboot_drains``) nor a key of an ordinary dictionary (``options.weights_dir``).
What is checked: every string value (Jinja and plain alike: a plain string can name a variable, as a filter's
``result_var`` or a lookup does), the variables a file defines (the top level of defaults and vars files, a task's
``vars``, ``set_fact``'s keys), and the Jinja of templates. An ``include_role`` or ``import_role`` task's ``vars``
may set the parameters of the role it includes (its argument_specs): that is calling it, not reading it.
"""

from __future__ import annotations

import glob
import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARTS = ("tasks", "handlers", "vars", "defaults", "templates")
SET_FACT = ("ansible.builtin.set_fact", "set_fact")
INCLUDE_ROLE = ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role")
# `{{ ... }}` and `{% ... %}` of a template; its other text is the file it writes
JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
# a variable that is another host's variables (`x: "{{ hostvars[h] }}"`): `x.name` reads a variable there
HOSTVARS_ALIAS = re.compile(r"^\s*\{\{\s*hostvars\[[^\]]+\]\s*\}\}\s*$")


def roles(root=ROOT):
    return sorted(d for d in os.listdir(os.path.join(root, "roles")) if os.path.isdir(os.path.join(root, "roles", d)))


def name_pattern(role_names):
    # longest first: no role's prefix may eat another's
    return re.compile(r"\b(%s)_[a-z0-9_]+" % "|".join(sorted(map(re.escape, role_names), key=len, reverse=True)))


def names_in(text, pattern, aliases=()):
    """(name, role, offset) of each variable name with a role's prefix in ``text``."""
    for m in pattern.finditer(text):
        before = text[:m.start()]
        # the collection's modules, filters and roles by their FQCN
        if before.endswith("launchcard.inference."):
            continue
        # a key of a dictionary, unless the dictionary is a host's variables (hostvars[h].name, alias.name)
        if before.endswith("."):
            owner = re.search(r"(hostvars\[[^\]]*\]|\b\w+)\.$", before)
            if not owner or not (owner.group(1).startswith("hostvars[") or owner.group(1) in aliases):
                continue
        yield m.group(0), m.group(1), m.start()


def _lines(source, node, names, pattern, aliases):
    """1-based line of each of ``names`` (in order) inside ``node``'s text in ``source``: a folded scalar spans lines."""
    raw = source[node.start_mark.index:node.end_mark.index]
    at = dict()
    for name, dummy, offset in names_in(raw, pattern, aliases):
        at.setdefault(name, []).append(node.start_mark.line + 1 + raw[:offset].count("\n"))
    return [at[name].pop(0) if at.get(name) else node.start_mark.line + 1 for name in names]


class _Scan(object):
    def __init__(self, role, path, source, pattern, aliases):
        self.role, self.path, self.source, self.pattern, self.aliases = role, path, source, pattern, aliases
        self.found = []

    def text(self, node, text):
        found = [(name, owner) for name, owner, dummy in names_in(text, self.pattern, self.aliases)]
        lines = _lines(self.source, node, [name for name, dummy in found], self.pattern, self.aliases)
        for (name, owner), line in zip(found, lines):
            if owner != self.role:
                self.found.append((self.path, line, name, owner))

    def values(self, node):
        """Every string value under ``node`` (mapping keys are option names: not read here)."""
        if isinstance(node, yaml.ScalarNode):
            if isinstance(node.value, str):
                self.text(node, node.value)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                self.values(item)
        elif isinstance(node, yaml.MappingNode):
            for dummy, value in node.value:
                self.values(value)

    def defines(self, mapping, allowed_role=None):
        """The variables a mapping defines: its keys are names, its values read."""
        for key, value in mapping.value:
            if isinstance(key, yaml.ScalarNode) and not (allowed_role and key.value.startswith(allowed_role + "_")):
                self.text(key, key.value)
            self.values(value)

    def tasks(self, node):
        for task in node.value if isinstance(node, yaml.SequenceNode) else []:
            if not isinstance(task, yaml.MappingNode):
                continue
            keys = dict((k.value, v) for k, v in task.value)
            included = None
            for action in INCLUDE_ROLE:
                args = keys.get(action)
                if isinstance(args, yaml.MappingNode):
                    role_name = dict((k.value, v) for k, v in args.value).get("name")
                    if isinstance(role_name, yaml.ScalarNode):
                        included = role_name.value.split(".")[-1]
            for key, value in task.value:
                if key.value in ("block", "rescue", "always"):
                    self.tasks(value)
                elif key.value == "vars" and isinstance(value, yaml.MappingNode):
                    self.defines(value, allowed_role=included)
                elif key.value in SET_FACT and isinstance(value, yaml.MappingNode):
                    self.defines(value)
                else:
                    self.values(value)


def _aliases(role_dir):
    """The names a role gives to another host's variables (``x: "{{ hostvars[h] }}"``)."""
    found = set()
    for path in glob.glob(os.path.join(role_dir, "**", "*.yml"), recursive=True):
        with open(path) as f:
            found.update(re.findall(r"^\s*(\w+):\s*\"(\{\{\s*hostvars\[[^\]]+\]\s*\}\})\"\s*$", f.read(), re.M))
    return set(name for name, value in found if HOSTVARS_ALIAS.match(value))


def violations(root=ROOT):
    """(path, line, variable, its role) for each name a role's files use with another role's prefix."""
    role_names = roles(root)
    pattern = name_pattern(role_names)
    found = []
    for role in role_names:
        role_dir = os.path.join(root, "roles", role)
        aliases = _aliases(role_dir)
        for part in PARTS:
            for path in sorted(glob.glob(os.path.join(role_dir, part, "**", "*"), recursive=True)):
                if not os.path.isfile(path):
                    continue
                rel = os.path.relpath(path, root)
                with open(path) as f:
                    source = f.read()
                scan = _Scan(role, rel, source, pattern, aliases)
                if part == "templates":
                    for m in JINJA.finditer(source):
                        for name, owner, offset in names_in(m.group(0), pattern, aliases):
                            if owner != role:
                                line = source[:m.start() + offset].count("\n") + 1
                                scan.found.append((rel, line, name, owner))
                elif path.endswith((".yml", ".yaml")):
                    node = yaml.compose(source, Loader=yaml.SafeLoader)
                    if node is None:
                        continue
                    if part in ("tasks", "handlers"):
                        scan.tasks(node)
                    elif isinstance(node, yaml.MappingNode):
                        scan.defines(node)
                found += scan.found
    return sorted(set(found))


def test_no_role_names_another_roles_variables():
    found = violations()
    assert not found, "a role names another role's variables (the play passes them in):\n" + "\n".join(
        "%s:%d: %s (role %s)" % item for item in found)


def _role(tmp_path, name, files):
    for rel, text in files.items():
        path = tmp_path / "roles" / name / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_scan_finds_each_kind_of_reading_and_passes_what_is_no_reading(tmp_path):
    _role(tmp_path, "weights", {"defaults/main.yml": "weights_dir: /x\n"})
    _role(tmp_path, "stack_reboot", {"defaults/main.yml": "stack_reboot_needed: false\n"})
    _role(tmp_path, "units", {
        "defaults/main.yml": (
            "units_a: \"{{ weights_dir }}\"\n"                      # line 1: a read
            "# weights_dir in a comment\n"
            "units_b: \"{{ launchcard_weights_dir | launchcard.inference.weights_peers }}\"\n"
            "weights_c: 1\n"                                        # line 4: defines weights' variable
            "units_d: >-\n  {{ x.weights_dir }}\n  {{ hostvars[h].weights_dir }}\n"  # line 7: hostvars
            "units_e: stack_reboot_result\n"),                      # line 8: a name in a plain string
        "tasks/main.yml": (
            "- name: Units | Call\n"
            "  launchcard.inference.preflight:\n"
            "    weights_dir: \"{{ units_dir }}\"\n"
            "  register: units_r\n"
            "- name: Units | Reboot\n"
            "  ansible.builtin.include_role:\n"
            "    name: launchcard.inference.stack_reboot\n"
            "  vars:\n"
            "    stack_reboot_needed: true\n"                           # a parameter of the included role
            "    weights_x: 1\n"                                        # line 10: not that role's
            "  when: stack_reboot_result is changed\n"                  # line 11
            "- name: Units | Facts\n"
            "  ansible.builtin.set_fact:\n"
            "    weights_y: 1\n"                                        # line 14
            "  vars:\n"
            "    units_seed: \"{{ hostvars[units_h] }}\"\n"
            "- name: Units | Seed\n"
            "  ansible.builtin.debug:\n"
            "    msg: \"{{ units_seed.weights_staged }}\"\n"),          # line 19: through an alias of hostvars
        "templates/x.j2": "weights_dir = {{ units_dir }}\n{% if weights_dir %}\n{% endif %}\n",  # line 2
    })
    found = [(path, line, name) for path, line, name, dummy in violations(str(tmp_path))]
    assert found == [
        ("roles/units/defaults/main.yml", 1, "weights_dir"),
        ("roles/units/defaults/main.yml", 4, "weights_c"),
        ("roles/units/defaults/main.yml", 7, "weights_dir"),
        ("roles/units/defaults/main.yml", 8, "stack_reboot_result"),
        ("roles/units/tasks/main.yml", 10, "weights_x"),
        ("roles/units/tasks/main.yml", 11, "stack_reboot_result"),
        ("roles/units/tasks/main.yml", 14, "weights_y"),
        ("roles/units/tasks/main.yml", 19, "weights_staged"),
        ("roles/units/templates/x.j2", 2, "weights_dir"),
    ]
