"""The roll-up answer parser, the extractive parent summary and the compaction cut (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

from strata.core.types import Role, RowKind, TranscriptRow
from strata.memory.lifecycle.compaction import CompactionPolicy, choose_rows
from strata.memory.lifecycle.compaction import extractive as compaction_extractive
from strata.memory.lifecycle.rollup import RollupPolicy, extractive, extractive_words, parse_answer

T0 = datetime(2026, 1, 5, tzinfo=UTC)


def test_only_answers_that_fit_the_schema_are_summaries() -> None:
    assert parse_answer('{"summary": " Hiking trips ", "key_terms": ["alps", " ", "boots"]}') \
        == ("Hiking trips", "alps boots")
    assert parse_answer('Sure! {"summary": "x"} hope that helps') == ("x", "")
    # Anything else is refused, never stored as memory: the caller writes an extractive parent.
    assert parse_answer('{"note": "fake model"}') is None
    assert parse_answer('{"summary": 3}') is None
    assert parse_answer("Just prose about hiking.") is None
    assert parse_answer('{"summary": "  "}') is None
    assert parse_answer("   ") is None
    assert parse_answer('{"summary": "[Lionade]"}') is None  # markup, not prose


GREETING = "Hello again, how are you doing today?"


def test_extractive_parent_keeps_the_distinct_sentences_not_the_first_ones() -> None:
    children = [
        f"{GREETING} We chatted about the weather for a while. "
        "Marta said her brother Tomas moved to Porto on 12 March 2023.",
        f"{GREETING} We chatted about the weather for a while. "
        "Marta adopted a beagle called Biscuit, 3 years old.",
        f"{GREETING} We chatted about the weather again. "
        "Marta plans a trip to Kyoto in October with 4 friends.",
    ]
    text, terms = extractive(children, ["porto tomas", "biscuit", "kyoto porto"], words=50)
    assert len(text.split()) <= 50
    # The specific sentences (names, places, dates, numbers) survive from every child …
    for fact in ("Porto on 12 March 2023", "Biscuit, 3 years old", "Kyoto in October"):
        assert fact in text
    # … and the repeated openings, which a first-sentences cut would keep, are there once
    # at most.
    assert text.count(GREETING) <= 1
    assert text.index("Porto") < text.index("Biscuit") < text.index("Kyoto")  # time order
    assert terms.split()[0] == "porto"


def test_extractive_fits_a_budget_smaller_than_any_sentence() -> None:
    long = " ".join(f"w{j}" for j in range(100)) + "."
    text, _ = extractive([long], [""], words=10)
    assert 0 < len(text.split()) <= 11 and text.startswith("w0 w1")


def test_extractive_continuity_summary_keeps_the_specifics_and_who_said_them() -> None:
    rows = [TranscriptRow(i, 1, 1, 1 if i % 2 else None, T0, "user",
                          Role.USER if i % 2 else Role.ASSISTANT, RowKind.MESSAGE, text, f"t{i}")
            for i, text in enumerate([
                "Good morning!", "Good morning! I hope you slept well.",
                "My dentist appointment is on 14 May at 9:30 with Dr Okafor.", "Noted.",
                "Good morning! I hope you slept well.", "Good morning! I hope you slept well."],
                start=1)]
    text = compaction_extractive("person (2026-01-01): I live in Lyon.", rows, words=30)
    assert "I live in Lyon." in text
    assert "person (2026-01-05): My dentist appointment is on 14 May at 9:30 with Dr Okafor." \
        in text
    assert len(text.split()) <= 30 and text.count("I hope you slept well") <= 1


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


def test_an_extractive_parent_keeps_a_share_of_its_childrens_words_within_bounds() -> None:
    policy = RollupPolicy(summary_words=180, extractive_share=0.5, extractive_max_words=1500)
    assert extractive_words(2000, policy) == 1000  # half of what its children said
    assert extractive_words(300, policy) == 360  # never less than twice a model's summary
    assert extractive_words(10_000, policy) == 1500  # nor more than the cap
    children = [f"Leaf {i}: Quentin met Ana in Oslo on day {i}. They talked for hours."
                for i in range(100)]
    words = sum(len(c.split()) for c in children)
    text, _ = extractive(children, [""] * len(children), words=extractive_words(words, policy))
    assert 0.3 * words <= len(text.split()) <= 0.5 * words  # it forgets, and keeps a share
