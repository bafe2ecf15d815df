"""The people-written held-out recall set (bench/heldout/paraphrase): it loads as the eval reads
it, has its shape, and its JSONL is what its hand-written sources build. The set is never tuned
on; these tests only check its form."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

from bench.heldout_check import SET_DIR, load, overlap, problems
from strata.evaluation.recall_data import conversations


def test_the_set_loads_and_has_its_shape() -> None:
    turns, questions = load()
    assert problems(turns, questions) == []
    ids = {t.turn_id for t in turns}
    assert len(ids) == len(turns)
    assert len({q.qid for q in questions}) == len(questions)
    assert all(e in ids for q in questions for e in q.evidence)
    assert len(conversations(turns)) >= 5
    assert len(questions) >= 150
    assert {q.category for q in questions} >= {"single_hop", "multi_hop", "temporal",
                                                "adversarial"}


def test_the_check_names_a_broken_set() -> None:
    turns, questions = load()
    first, second = questions[0], questions[1]
    broken = [replace(first, evidence=("pp-nobody:D1:1",)), replace(second, qid=first.qid),
              *questions[2:]]
    found = problems(turns, broken)
    assert f"{first.qid}: evidence pp-nobody:D1:1 is not a turn of {first.conv}" in found
    assert f"question id {first.qid} appears 2 times" in found
    assert any("fewer than" in p for p in problems(turns[:100], questions[:10]))


def test_the_overlap_counts_shared_question_words() -> None:
    turns, questions = load()
    rows = overlap(turns, questions)
    assert rows and all(set(r.shared) <= set(r.shared_stems) for r in rows)
    # A question copied from its evidence turn shares its words.
    q = next(q for q in questions if q.evidence and q.category != "adversarial")
    said = next(t.text for t in turns if t.turn_id == q.evidence[0])
    copied = overlap(turns, [replace(q, question=said)])
    assert copied[0].shared


def test_the_jsonl_is_built_from_the_sources() -> None:
    spec = importlib.util.spec_from_file_location("heldout_build", SET_DIR / "build.py")
    assert spec and spec.loader
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    turns: list[dict[str, object]] = []
    questions: list[dict[str, object]] = []
    for path in sorted((SET_DIR / "source").glob("*.txt")):
        t, q = build.parse(path)
        turns += t
        questions += q
    for name, rows in (("turns.jsonl", turns), ("questions.jsonl", questions)):
        stored = [json.loads(line) for line in Path(SET_DIR / name).read_text().splitlines()]
        assert stored == rows, f"{name} is out of date: run bench/heldout/paraphrase/build.py"
