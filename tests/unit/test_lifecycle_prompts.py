"""The roll-up answer parser, the extractive parent summary and the compaction cut (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.types import Role, RowKind, TranscriptRow
from memory.compaction import CompactionPolicy, choose_rows
from memory.prompts.rollup import extractive, parse_answer

T0 = datetime(2026, 1, 5, tzinfo=UTC)


def test_parse_answer_json_plain_and_empty() -> None:
    assert parse_answer('{"summary": " Hiking trips ", "key_terms": ["alps", " ", "boots"]}') \
        == ("Hiking trips", "alps boots")
    assert parse_answer('Sure! {"summary": "x"} hope that helps') == ("x", "")
    assert parse_answer("Just prose about hiking.") == ("Just prose about hiking.", "")
    assert parse_answer('{"summary": "  "}') is None
    assert parse_answer("   ") is None


def test_extractive_keeps_every_child_within_the_word_budget() -> None:
    summaries = [" ".join(f"c{i}w{j}" for j in range(100)) for i in range(4)]
    text, terms = extractive(summaries, ["alps boots", "alps", "rain", ""], words=80)
    assert all(f"c{i}w0" in text for i in range(4))
    assert "c0w25" not in text and len(text.split()) < 100
    assert terms.split()[0] == "alps"


def _row(i: int, turn: str, words: int = 40) -> TranscriptRow:
    return TranscriptRow(i, 1, 1, None, T0, "user", Role.USER, RowKind.MESSAGE,
                         "w " * words, turn)


def test_the_cut_ends_on_a_whole_turn_and_leaves_a_tail() -> None:
    rows = [_row(i, f"t{i // 2}") for i in range(10)]  # five turns of two 20-token rows
    chosen = choose_rows(rows, CompactionPolicy(keep_tokens=50, input_tokens=10_000))
    assert len(chosen) % 2 == 0 and 0 < len(chosen) < len(rows)
    assert sum(20 for _ in rows[len(chosen):]) >= 50
    one_big_turn = [_row(i, "t", words=400) for i in range(3)]
    assert choose_rows(one_big_turn, CompactionPolicy(keep_tokens=10)) == one_big_turn
    # A single huge newest row still gets compacted rather than blocking the channel.
    assert choose_rows([_row(1, "a", words=2000), _row(2, "b", words=2)],
                       CompactionPolicy(keep_tokens=600)) == [_row(1, "a", words=2000)]
