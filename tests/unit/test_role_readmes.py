# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver roles' READMEs list their variables as meta/argument_specs.yml says them, and their example play parses.

``python tests/unit/test_role_readmes.py`` rewrites the generated part of each README after a spec changed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = ("nvidia", "rocm", "ascend", "node_exporter", "prometheus")
BEGIN = "<!-- BEGIN variables: generated from meta/argument_specs.yml by tests/unit/test_role_readmes.py -->"
END = "<!-- END variables -->"


def spec(role):
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as f:
        return yaml.safe_load(f)["argument_specs"]["main"]


def cell(text):
    """One Markdown table cell: Ansible doc markup (O(x), C(x), V(x)...) as code, no line breaks or pipes."""
    text = re.sub(r"\b[OCVEP]\(([^)]*)\)", r"`\1`", " ".join(text) if isinstance(text, list) else str(text))
    text = re.sub(r"\b[IBLMRU]\(([^)]*)\)", r"\1", text)
    return " ".join(text.split()).replace("|", "\\|")


def variables_table(role):
    lines = [BEGIN, "", "| Variable | Type | Default | Description |", "| --- | --- | --- | --- |"]
    for name, opt in spec(role)["options"].items():
        kind = opt.get("type", "str") + ("/" + opt["elements"] if opt.get("elements") else "")
        if opt.get("required"):
            default = "required"
        elif "default" in opt:
            value = opt["default"] if isinstance(opt["default"], str) else \
                yaml.safe_dump(opt["default"], default_flow_style=True, width=10000).strip().removesuffix("...").strip()
            default = "`%s`" % value.replace("|", "\\|") if value != "" else "`\"\"`"
        else:
            default = ""
        choices = " Choices: %s." % ", ".join("`%s`" % c for c in opt["choices"]) if opt.get("choices") else ""
        lines.append("| `%s` | %s | %s | %s%s |" % (name, kind, default, cell(opt.get("description", "")), choices))
    lines += ["", END]
    return "\n".join(lines)


def readme(role):
    with open(os.path.join(ROOT, "roles", role, "README.md")) as f:
        return f.read()


def generated_part(text):
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[start:end]


@pytest.mark.parametrize("role", ROLES)
def test_the_readme_lists_the_roles_variables_as_its_argument_spec_does(role):
    assert generated_part(readme(role)) == variables_table(role), "run: python tests/unit/test_role_readmes.py"


@pytest.mark.parametrize("role", ROLES)
def test_the_readmes_example_play_parses_on_its_own(role, tmp_path):
    blocks = re.findall(r"```yaml\n(.*?)```", readme(role), re.S)
    plays = [b for b in blocks if "launchcard.inference.%s" % role in b]
    assert len(plays) == 1
    play = yaml.safe_load(plays[0])
    assert play[0]["roles"][0]["role"] == "launchcard.inference.%s" % role
    assert set(play[0]["roles"][0]) - {"role"} <= set(spec(role)["options"])
    (tmp_path / "play.yml").write_text(plays[0])
    (tmp_path / "hosts.ini").write_text("[%s]\nhost-1 ansible_connection=local\n" % role)
    coll = tmp_path / "collections" / "ansible_collections" / "launchcard"
    coll.mkdir(parents=True)
    os.symlink(ROOT, str(coll / "inference"))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"), ANSIBLE_HOME=str(tmp_path / "home"))
    env.pop("ANSIBLE_CONFIG", None)
    res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "--syntax-check",
                          "-i", str(tmp_path / "hosts.ini"), str(tmp_path / "play.yml")],
                         cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stdout + res.stderr


if __name__ == "__main__":
    for name in ROLES:
        path = os.path.join(ROOT, "roles", name, "README.md")
        text = readme(name)
        with open(path, "w") as f:
            f.write(text.replace(generated_part(text), variables_table(name)))
