"""The README and docs/ stay inside the repository: a short front page, no link or path that
only works on one machine, and every linked file that is not a docs page present."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_no_link_or_path_leaves_the_repository() -> None:
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for bad in ("../shared", "/work/", "DESIGN.md", "build_adapters"):
            assert bad not in text, f"{doc.name} mentions {bad}"
        for target in LINK.findall(text):
            if re.match(r"[a-z]+://", target):
                continue
            resolved = (doc.parent / target).resolve()
            assert resolved.is_relative_to(ROOT), f"{doc.name}: {target} leaves the repository"
            # Pages of docs/ may be written on other branches; anything else must be here.
            if resolved.parent != ROOT / "docs" or resolved.suffix != ".md":
                assert resolved.exists(), f"{doc.name}: {target} does not exist"
