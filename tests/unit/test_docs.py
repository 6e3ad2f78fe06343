# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The README a newcomer reads in minutes, the pages under docs/ it links, and the figures they show."""

from __future__ import annotations

import glob
import json
import importlib.util
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _read(path):
    with open(path) as f:
        return f.read()


def _slugs(text):
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"(?m)^#+ (.*)$", re.sub(r"(?ms)^```.*?^```", "", text))}


def test_the_readme_opens_with_the_two_commands_and_stays_short():
    text = _read(PAGES[0])
    first_block = re.search(r"(?s)```sh\n(.*?)```", text).group(1)
    assert [line.split()[:2] for line in first_block.splitlines()] == [["make", "demo"], ["make", "test"]]
    assert text.index("```sh") < text.index("\n## ")  # before anything else
    assert len(text.splitlines()) < 250


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_link_between_the_pages_resolves(page):
    broken = []
    for target in LINK.findall(_read(page)):
        if re.match(r"[a-z]+:", target):
            continue  # a URL outside the repository
        path, dummy, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(full):
            broken.append(target)
        elif anchor and anchor not in _slugs(_read(full)):
            broken.append(target)
    assert not broken


def test_every_docs_page_is_linked_from_the_readme():
    linked = {os.path.normpath(os.path.join(ROOT, t.partition("#")[0])) for t in LINK.findall(_read(PAGES[0]))}
    assert set(PAGES[1:]) <= linked, sorted(set(PAGES[1:]) - linked)


def test_the_benchmark_tables_are_the_results():
    """docs/speed.md holds each table as bench/docs_tables.py makes it from bench/results (the one home of the figures)."""
    spec = importlib.util.spec_from_file_location("docs_tables", os.path.join(ROOT, "bench", "docs_tables.py"))
    docs_tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(docs_tables)
    text = _read(docs_tables.PAGE)
    assert docs_tables.page_with(text, docs_tables.tables()) == text
    readme = _read(docs_tables.README)
    assert docs_tables.page_with(readme, docs_tables.readme_tables(), "README.md") == readme
    assert docs_tables.main(["--check"]) == 0


@pytest.mark.parametrize("page", ["README.md", "docs/upgrades.md"])
def test_the_sandbox_upgrade_example_moves_the_example_card_to_the_hubs_second_revision(page):
    """The one-line upgrade a newcomer copies rewrites the card's revision to the one the sandbox Hub also serves."""
    second = re.search(r'(?m)^SECOND_REVISION = "([0-9a-f]{40})"$',
                       _read(os.path.join(ROOT, "tests", "sandbox", "sandbox_fleet", "hubproc.py"))).group(1)
    card = json.loads(_read(os.path.join(ROOT, "cards", "glm-5.3-flash.json")))
    found = re.findall(r"sed s/([0-9a-f]{40})/([0-9a-f]{40})/ cards/glm-5.3-flash.json", _read(os.path.join(ROOT, page)))
    assert found == [(card["hf"]["revision"], second)]
    assert "launchcard_upgrade_allow_outage=true" in _read(os.path.join(ROOT, page))
