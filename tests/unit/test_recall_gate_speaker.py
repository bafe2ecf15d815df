"""The whose-John candidates of bench/recall_gate_speaker.py: what a memory's speaker said,
against what a question that names them asks."""

from __future__ import annotations

import pytest

from bench.recall_gate_speaker import (
    FEATURES,
    about,
    held,
    name_free,
    named_speaker,
    silenced,
    speaker_features,
)
from strata.memory.recall.profiles import speaker_of
from strata.memory.recall.rank import RankTuning
from strata.memory.rules.text import query_stems
from tests.unit.test_recall_rank import table_of

# A chat of John and Maria, as the row index keeps it (the speaker's name first).
ROWS = ["John: my team won the county league last night",
        "Maria: congrats! I went to yoga with my kids at the park",
        "John: thanks, the coach was proud of the team",
        "Maria: the painting in my room reminds me of the park"]
WHO = [speaker_of(r, False) for r in ROWS]


def features(query: str, best: list[int]) -> dict[str, float]:
    return speaker_features(table_of(ROWS), WHO, query, query_stems(query), best, RankTuning(),
                            ROWS)


def test_rows_about_a_speaker_are_theirs_and_others_speaking_to_or_of_them() -> None:
    rows = [*ROWS, "Maria: how was your game, John?", "Maria: John said it was fun"]
    who = [speaker_of(r, False) for r in rows]
    assert about(rows, who, "john", range(len(rows))) == [0, 2, 4, 5]
    # Maria's own first-person rows are hers: about John only when she names him.
    assert about(rows, who, "maria", range(len(rows))) == [1, 3, 4, 5]


def test_the_named_speaker_is_the_one_speaker_of_the_memory_the_question_names() -> None:
    assert named_speaker("Which county league was John's team in?", WHO) == "john"
    # Two of them, or a name that begins no row: none.
    assert named_speaker("What did John tell Maria about the park?", WHO) == ""
    assert named_speaker("What did Tim's team win?", WHO) == ""


def test_held_is_the_weighted_share_of_stems_the_rows_hold() -> None:
    t = table_of(ROWS)
    assert held(t, [0], {"team": 2.0, "yoga": 1.0}) == pytest.approx(2 / 3)
    assert held(t, [0, 1], {"team": 2.0, "yoga": 1.0}) == pytest.approx(1.0)
    assert held(t, [0], {}) == 0.0


def test_what_only_the_other_speaker_said_is_not_the_named_speakers() -> None:
    # "yoga", "park": Maria's words; the best window holds them, but not in John's rows.
    f = features("Who did John go to yoga with at the park?", [1, 2])
    assert f["speaker"] == pytest.approx(1.0)
    assert f["vocabulary"] == pytest.approx(1.0)
    # John's own words in his own row: nothing to pay.
    f = features("Which county league was John's team in?", [0, 1])
    assert f["speaker"] == pytest.approx(0.0) and f["vocabulary"] == pytest.approx(0.0)
    # A word nobody said counts against both.
    f = features("Which county league did John's team win after his basketball career?", [0, 1])
    assert 0.0 < f["speaker"] < 1.0 and 0.0 < f["vocabulary"] < 1.0


def test_the_name_weighs_what_the_gate_gives_it_for_coverage() -> None:
    # The window holds the name and only part of the rest: less coverage without the name.
    assert features("Which county league did John's coach choose?", [0])["name_weak"] > 0.0
    # Nothing to drop when the window holds everything asked, or lacks the name.
    assert features("Which county league was John's team in?", [0, 1])["name_weak"] == 0.0
    assert features("Which county league did John's coach choose?", [3])["name_weak"] == 0.0


def test_a_question_naming_no_single_speaker_pays_nothing() -> None:
    for query in ("What did Tim's team win?", "What did John tell Maria about the park?",
                  "What is the best yoga studio?"):
        assert features(query, [1, 2]) == dict.fromkeys(FEATURES, 0.0)


def test_the_name_free_question_makes_the_speaker_anyone() -> None:
    assert name_free("What is John's position on the team John signed with?", "john") \
        == "What is their position on the team someone signed with?"
    # Only the whole name: Johnson stays.
    assert name_free("Did john meet Johnson?", "john") == "Did someone meet Johnson?"


def test_silenced_are_own_questions_that_pass_now_and_not_with_the_candidate() -> None:
    before = [{"qid": "a", "kind": 1, "logit": 0.4}, {"qid": "b", "kind": 1, "logit": 2.0},
              {"qid": "c", "kind": 1, "logit": -0.5}, {"qid": "d", "kind": 0, "logit": 0.3}]
    after = [{**r, "f": 1.0} for r in before]
    # At 0.5 the own question at 0.4 falls; one already silent or a foreign one is no loss.
    assert silenced(before, after, 0.5, "f") == ["a"]
    assert silenced(before, after, 0.0, "f") == []
    # A candidate that moves the logit itself is judged against the gate as it is now.
    moved = [{**r, "logit": r["logit"] - 1.0, "f": 0.0} for r in before]
    assert silenced(before, moved, 0.0, "f") == ["a"]
