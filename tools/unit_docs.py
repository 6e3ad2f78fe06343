#!/usr/bin/env python
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lists of unit options in the docs, made from their spec (plugins/plugin_utils/_unit_spec.py OPTIONS).

    python tools/unit_docs.py            rewrite every marked block that differs (make docs)
    python tools/unit_docs.py --check    exit 1, naming the files, when a marked block is not what the spec makes

Each block sits between a line ``generated: tools/unit_docs.py NAME`` and a line ``end NAME`` (in an HTML comment in
Markdown, a YAML comment elsewhere, indented as the list it belongs to):

- ``unit_options`` (docs/inventory.md): the table of the options' variables: where each is set, the units it
  changes, its default and what it means;
- ``unit_variables`` (the units role's argument_specs, render_fleet's and unit_settings' documentation): one
  description item naming every variable;
- ``unit_keys`` (host_units' documentation): one description item naming every key of the options dict.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC_FILE = os.path.join(ROOT, "plugins", "plugin_utils", "_unit_spec.py")
# file -> the blocks it holds
TARGETS = {
    "docs/inventory.md": ("unit_options",),
    "roles/units/meta/argument_specs.yml": ("unit_variables",),
    "plugins/modules/render_fleet.py": ("unit_variables",),
    "plugins/filter/unit_settings.yml": ("unit_variables",),
    "plugins/filter/host_units.yml": ("unit_keys",),
}
WIDTH = 118


def load_spec():
    """The spec module, loaded from its file (it imports nothing of the collection)."""
    spec = importlib.util.spec_from_file_location("_unit_spec", SPEC_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def markdown(text):
    """Ansible markup (``C(x)``, ``O(x)``, ``V(x)``, ``I(x)``) as Markdown, ``|`` escaped for a table cell."""
    text = re.sub(r"\b[COVM]\(([^)]*)\)", r"`\1`", text)
    text = re.sub(r"\bI\(([^)]*)\)", r"*\1*", text)
    return text.replace("|", "\\|")


def _default(value):
    if value is None or value == {}:
        return ""
    if isinstance(value, bool):
        return "`%s`" % str(value).lower()
    if isinstance(value, list):
        return "`[%s]`" % ", ".join(str(v) for v in value)
    return "`%s`" % value


def unit_options(spec):
    """The Markdown table of the options that have a variable, in spec order."""
    rows = ["| variable | where | units | default | meaning |", "|---|---|---|---|---|"]
    for opt in spec.OPTIONS:
        if not opt.variable:
            continue
        units = "all" if set(opt.units) == set(spec.ALL_UNITS) else ", ".join(opt.units)
        rows.append("| `%s` | %s | %s | %s | %s |" % (
            opt.variable, opt.where, units, _default(opt.default), markdown(opt.doc)))
    return "\n".join(rows)


def _item(text, indent):
    """``text`` as one YAML list item wrapped under ``indent``."""
    return "\n".join(textwrap.wrap(text, WIDTH, initial_indent=indent + "- ", subsequent_indent=indent + "  ",
                                   break_on_hyphens=False, break_long_words=False))


def unit_variables(spec, indent):
    """One YAML description item naming every option's variable, wrapped under ``indent``."""
    names = ", ".join("C(%s)" % o.variable for o in spec.OPTIONS if o.variable)
    return _item("The unit options' variables, each described in C(docs/inventory.md) (Engines and their units) - %s."
                 % names, indent)


def unit_keys(spec, indent):
    """One YAML description item naming every key of the options dict the renderer takes, wrapped under ``indent``."""
    names = ", ".join("C(%s)" % o.key for o in spec.OPTIONS)
    return _item("Runtime options, as C(launchcard.inference.unit_settings) builds them for a host (its C(options)) - "
                 "%s. Missing ones take the collection's defaults." % names, indent)


# block name -> what writes a YAML block (Markdown blocks: unit_options)
YAML_BLOCKS = {"unit_variables": unit_variables, "unit_keys": unit_keys}


def _marked(name, markdown_file):
    if markdown_file:
        return re.compile(r"(?ms)(^<!-- generated: tools/unit_docs\.py %s -->\n)(.*?)(^<!-- end %s -->$)" % (name, name))
    return re.compile(r"(?ms)(^( *)# generated: tools/unit_docs\.py %s\n)(.*?)(^ *# end %s$)" % (name, name))


def file_with(path, text, spec):
    """``text`` of the file at ``path`` (relative to the root) with its marked blocks made from ``spec``."""
    is_md = path.endswith(".md")
    for name in TARGETS[path]:
        pattern = _marked(name, is_md)
        if is_md:
            new, found = pattern.subn(lambda m: m.group(1) + unit_options(spec) + "\n" + m.group(3), text)
        else:
            block = YAML_BLOCKS[name]
            new, found = pattern.subn(lambda m: m.group(1) + block(spec, m.group(2)) + "\n" + m.group(4), text)
        if found != 1:
            raise ValueError("%s: %d blocks marked %s, expected 1" % (path, found, name))
        text = new
    return text


def stale(spec=None):
    """``{path: new text}`` of the files whose marked blocks are not what the spec makes."""
    spec = spec or load_spec()
    out = {}
    for path in TARGETS:
        with open(os.path.join(ROOT, path)) as f:
            text = f.read()
        new = file_with(path, text, spec)
        if new != text:
            out[path] = new
    return out


def main(argv):
    changed = stale()
    if "--check" in argv:
        for path in sorted(changed):
            print("%s: its unit option list differs from plugins/plugin_utils/_unit_spec.py; run make docs" % path)
        return 1 if changed else 0
    for path, text in sorted(changed.items()):
        with open(os.path.join(ROOT, path), "w") as f:
            f.write(text)
        print("rewrote %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
