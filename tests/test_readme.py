"""The README is what a user reads first: short, its two set-up commands as CI runs them, and
every page of docs/ reachable from it through links that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_the_readme_is_short_and_keeps_the_two_set_up_commands():
    assert len(README.splitlines()) <= 200
    assert "python3 -m pip install -e '.[all]' && selector demo" in README
    test_command = "python3 -m pip install -e '.[test]' && python3 -m pytest -q"
    assert test_command in README and test_command in (ROOT / ".ci" / "run").read_text()


def test_every_docs_page_is_linked_and_every_link_exists():
    links = set(re.findall(r"\]\(([^)#:]+)\)", README))
    assert all((ROOT / link).exists() for link in links), sorted(link for link in links if not (ROOT / link).exists())
    pages = {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")}
    assert pages <= links, sorted(pages - links)


def test_the_docs_pages_links_exist():
    """Every relative link of docs/ and its folders (docs/studies) names a file that exists."""
    for page in (ROOT / "docs").rglob("*.md"):
        for link in re.findall(r"\]\(([^)#:]+)\)", page.read_text()):
            assert (page.parent / link).exists(), f"{page.relative_to(ROOT)}: {link}"
