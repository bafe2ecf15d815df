"""bench/recall_fi_names.py: false injection split by whether the foreign question names one of
the memory's own speakers."""

from __future__ import annotations

import json
from pathlib import Path

from bench.recall_fi_names import main


def _turn(conv: str, n: int, speaker: str, role: str) -> str:
    return json.dumps({"conv": conv, "session": 1, "turn_id": f"{conv}:D1:{n}",
                       "ts": f"2023-05-08T13:5{n}:00Z", "speaker": speaker, "role": role,
                       "text": "hello there"})


def _question(qid: str, conv: str, text: str) -> str:
    return json.dumps({"conv": conv, "qid": qid, "question": text, "answer": "x",
                       "category": "single_hop", "evidence": [f"{conv}:D1:1"],
                       "asked_at": "2023-10-22T10:03:00Z"})


def _asked(qid: str, of: str, tokens: int) -> str:
    return json.dumps({"qid": qid, "conv": of, "category": "single_hop", "abstention": True,
                       "evidence": [], "cited": [], "recall": 0.0, "tokens": tokens,
                       "answer_coverage": 0.0})


def test_foreign_questions_naming_an_own_speaker_are_counted_apart(tmp_path: Path) -> None:
    turns = tmp_path / "turns.jsonl"
    turns.write_text("\n".join([_turn("a", 1, "John", "user"), _turn("a", 2, "Maria", "assistant"),
                                _turn("b", 1, "John", "user"), _turn("b", 2, "Tim", "assistant")]))
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join([
        _question("b:q0", "b", "What is John's position on the team?"),  # John: a's speaker too
        _question("b:q1", "b", "What does Tim play on the piano?"),
        _question("b:q2", "b", "Where did Tim go in June?"),
        _question("a:q0", "a", "What does Maria bake?"),
    ]))
    details = tmp_path / "d.jsonl"
    # Memory a is asked three of b's questions, memory b one of a's; own questions are skipped.
    details.write_text("\n".join([_asked("b:q0", "a", 120), _asked("b:q1", "a", 0),
                                  _asked("b:q2", "a", 80), _asked("a:q0", "b", 0),
                                  json.dumps({"qid": "a:q0", "conv": "a", "abstention": False,
                                              "tokens": 300})]))
    out = tmp_path / "split.json"
    assert main(["--turns", str(turns), "--questions", str(questions), "--details",
                 str(details), "--out", str(out)]) == 0
    by = json.loads(out.read_text())["by_conversation"]
    assert by["a"]["names_own_speaker"] == {"questions": 1, "injected": 1,
                                            "false_injection_rate": 1.0}
    assert by["a"]["other"]["false_injection_rate"] == 0.5
    assert by["a"]["all"]["questions"] == 3 and by["a"]["all"]["injected"] == 2
    assert "names_own_speaker" not in by["b"] and by["b"]["all"]["injected"] == 0
    assert by["all"]["all"] == {"questions": 4, "injected": 2, "false_injection_rate": 0.5}
