"""The generated recall data set (strata.evaluation.synth): deterministic, in the eval's format, and
every question's evidence really holds its answer."""

from __future__ import annotations

import json
from pathlib import Path

from strata.evaluation.recall_data import load_questions, load_turns
from strata.evaluation.synth import generate, main


def test_the_same_seed_gives_the_same_chats_and_another_seed_others() -> None:
    assert generate(3, 7) == generate(3, 7)
    assert generate(3, 7) != generate(3, 8)


def test_files_load_as_eval_data_and_evidence_holds_the_answers(tmp_path: Path) -> None:
    assert main(["--out", str(tmp_path), "--conversations", "5", "--seed", "3"]) == 0
    turns = load_turns(tmp_path / "turns.jsonl")
    questions = load_questions(tmp_path / "questions.jsonl")
    text = {t.turn_id: t.text for t in turns}
    convs = {t.conv for t in turns}
    assert len(convs) == 5 and {q.conv for q in questions} == convs
    raw = [json.loads(line) for line in (tmp_path / "questions.jsonl").read_text().splitlines()]
    categories = {q["category"] for q in raw}
    assert {"single_hop", "temporal", "multi_hop", "update", "absent"} <= categories
    for q in raw:
        if q["category"] == "absent":
            assert q["evidence"] == [] and q["answer"] is None
            continue
        assert q["evidence"] and all(e in text for e in q["evidence"])
        assert all(e.startswith(q["conv"] + ":") for e in q["evidence"])
        if q["category"] in ("single_hop", "update"):
            assert q["answer"] in text[q["evidence"][0]]
        if q["category"] == "multi_hop":
            for city, e in zip(q["answer"].split(", "), q["evidence"], strict=True):
                assert city in text[e]
    # Questions are asked after their chat's last turn.
    last = {c: max(t.ts for t in turns if t.conv == c) for c in convs}
    assert all(q.asked_at > last[q.conv] for q in questions)


def test_a_changed_fact_is_asked_for_its_newest_value() -> None:
    turns, questions = generate(6, 7)
    text = {t["turn_id"]: t["text"] for t in turns}
    updates = [q for q in questions if q["category"] == "update"]
    assert updates
    for q in updates:
        newest = q["evidence"][0]
        session = int(newest.split(":D")[1].split(":")[0])
        assert session > 1 and q["answer"] in text[newest]
