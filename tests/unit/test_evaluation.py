"""The eval's pure parts: scoring by hand-computed values, the abstention sample, row text."""

from __future__ import annotations

from datetime import UTC, datetime

from strata.core.types import Role
from strata.evaluation.recall_data import EvalQuestion, EvalTurn, row_text
from strata.evaluation.recall_metrics import Answer, abstention_sample, format_table, summarize

T = datetime(2025, 1, 1, tzinfo=UTC)


def answer(qid: str, category: str, evidence: tuple[str, ...], cited: set[str], tokens: int,
           latency: float, abstention: bool = False, conv: str = "c") -> Answer:
    return Answer(qid, conv, category, evidence, frozenset(cited), tokens, latency, abstention)


def test_summary_by_hand() -> None:
    answers = [
        answer("1", "single_hop", ("a", "b"), {"a", "x"}, 100, 10.0),   # recall 0.5, hit
        answer("2", "single_hop", ("c",), set(), 0, 20.0),              # recall 0, empty
        answer("3", "temporal", ("d", "e", "f", "g"), {"d", "e", "f", "g"}, 300, 30.0),
        answer("4", "adversarial", ("h",), {"h"}, 50, 40.0),            # not in overall recall
        answer("5", "open_domain", (), {"z"}, 10, 50.0),                # no evidence: not scored
        answer("6", "single_hop", (), set(), 0, 999.0, abstention=True),
        answer("7", "temporal", (), {"q"}, 80, 999.0, abstention=True),
    ]
    report = summarize(answers, 1000)
    assert report["questions"] == 5 and report["budget_tokens"] == 1000
    overall = report["overall"]
    assert overall["evidence_recall"] == round((0.5 + 0 + 1) / 3, 4)
    assert overall["hit_rate"] == round(2 / 3, 4)
    assert overall["mean_injected_tokens"] == (100 + 0 + 300 + 50 + 10) / 5
    assert overall["empty_rate"] == 0.2
    assert overall["latency_ms_p50"] == 30.0  # abstention questions are not in the latency
    assert overall["latency_ms_p95"] == 48.0  # numpy's linear interpolation: 40 + 0.8 × 10
    assert report["by_category"]["single_hop"]["evidence_recall"] == 0.25
    assert report["by_category"]["adversarial"]["evidence_recall"] == 1.0
    assert report["by_category"]["open_domain"]["hit_rate"] == 0.0
    assert report["abstention"] == {"n": 2, "false_injection_rate": 0.5}
    table = format_table(report)
    assert "overall" in table and "0.500" in table


def test_each_conversation_is_reported_on_its_own() -> None:
    """A tune/check gap is read per conversation: one split's mean can hide a conversation."""
    answers = [
        answer("1", "single_hop", ("a", "b"), {"a"}, 100, 10.0, conv="c1"),      # 0.5
        answer("2", "multi_hop", ("c",), {"c"}, 100, 10.0, conv="c1"),           # 1.0
        answer("3", "single_hop", ("d",), set(), 0, 10.0, conv="c2"),            # 0, empty
        answer("4", "temporal", (), {"q"}, 80, 10.0, abstention=True, conv="c1"),
        answer("5", "temporal", (), set(), 0, 10.0, abstention=True, conv="c2"),
        answer("6", "temporal", (), set(), 0, 10.0, abstention=True, conv="c2"),
    ]
    report = summarize(answers, 1000)
    c1, c2 = report["by_conversation"]["c1"], report["by_conversation"]["c2"]
    assert c1["questions"] == 2 and c1["evidence_recall"] == 0.75 and c1["empty_rate"] == 0.0
    assert c2["questions"] == 1 and c2["evidence_recall"] == 0.0 and c2["empty_rate"] == 1.0
    assert c1["false_injection_rate"] == 1.0 and c2["false_injection_rate"] == 0.0
    table = format_table(report)
    assert any(line.startswith("c2") and "0.000" in line for line in table.splitlines())


def q(conv: str, i: int, category: str = "single_hop") -> EvalQuestion:
    return EvalQuestion(conv, f"{conv}:q{i}", f"question {i}", category, ("x",), T)


def test_abstention_sample_is_foreign_deterministic_and_bounded() -> None:
    questions = [q(c, i, "adversarial" if i % 5 == 0 else "single_hop")
                 for c in ("a", "b", "c") for i in range(20)]
    first = abstention_sample(questions, "a", 10)
    assert len(first) == 10 and len({x.qid for x in first}) == 10
    assert all(x.conv != "a" and x.category != "adversarial" for x in first)
    assert [x.qid for x in first] == [x.qid for x in abstention_sample(questions[::-1], "a", 10)]
    assert {x.conv for x in first} <= {"b", "c"}
    assert len(abstention_sample(questions, "a", 1000)) == 32  # every foreign, non-adversarial


def test_row_text_names_the_speaker_and_the_photo() -> None:
    turn = EvalTurn("c", "c:D1:1", T, "Caroline", Role.USER, "Look!", "a dog on a beach")
    assert row_text(turn) == "Caroline: Look! [shares a photo: a dog on a beach]"
