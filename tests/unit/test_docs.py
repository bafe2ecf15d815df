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


# Issue 36: the docs are for their readers, and the lab notebook lives outside docs/*.md.
DOCS_LINE_BUDGET = 3000
RESULTS = ROOT / "bench" / "results"
RESULT_PATH = re.compile(r"bench/results/([\w./-]*[\w/])(?![\w<])")  # not a <placeholder>
TABLE_FILE = re.compile(r"`([\w.-]+\.jsonl?)`")


def _citing_texts() -> str:
    """Everything that may cite a result file: the README, docs/, bench/'s own notes and
    scripts, and the code and tests (a test's provenance comment counts)."""
    paths = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    for folder, pattern in (("bench", "*.md"), ("bench", "*.py"), ("strata", "*.py"),
                            ("tests", "*.py")):
        paths += [p for p in (ROOT / folder).rglob(pattern) if RESULTS not in p.parents]
    return "\n".join(p.read_text(encoding="utf-8") for p in paths)


def test_docs_together_stay_brief() -> None:
    lines = sum(len(p.read_text(encoding="utf-8").splitlines())
                for p in (ROOT / "docs").glob("*.md"))
    assert lines < DOCS_LINE_BUDGET, f"docs/*.md have {lines} lines together"


def test_every_result_file_a_doc_names_exists() -> None:
    missing: list[str] = []
    for doc in [*DOCS, ROOT / "bench" / "NOTEBOOK.md"]:
        text = doc.read_text(encoding="utf-8")
        named = set(RESULT_PATH.findall(text))
        # A table row names its result file by its bare name.
        for row in (line for line in text.splitlines() if line.startswith("|")):
            named |= set(TABLE_FILE.findall(row))
        missing += [f"{doc.name}: {name}" for name in sorted(named)
                    if not (RESULTS / name).exists()]
    assert not missing, missing


def test_every_result_file_is_cited() -> None:
    texts = _citing_texts()
    uncited = []
    for path in sorted(p for p in RESULTS.rglob("*") if p.is_file()):
        name = path.relative_to(RESULTS).as_posix()
        if not re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", texts):
            uncited.append(name)
    assert not uncited, f"bench/results holds files nothing cites: {uncited}"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_to_a_section_finds_its_heading() -> None:
    pages = [*DOCS, ROOT / "bench" / "NOTEBOOK.md"]
    headings = {p.resolve(): re.findall(r"(?m)^#+ (.*)$", p.read_text(encoding="utf-8"))
                for p in pages}
    anchors = {page: {_anchor(h) for h in found} for page, found in headings.items()}
    broken = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", text):
            linked = ((page.parent / target) if target else page).resolve()
            if linked in anchors and anchor not in anchors[linked]:
                broken.append(f"{page.name}: {target}#{anchor}")
    assert not broken, broken
