"""The typed fact bridge (`strata.memory.recall.bridge`) and the hints' pure parts
(`strata.memory.recall.hint`)."""

from __future__ import annotations

import numpy as np

from strata.memory.recall.bridge import bridged_stems, bridges_for
from strata.memory.recall.hint import (
    clean_hints,
    gate_words,
    hinted_stems,
    mean_vector,
)
from strata.memory.rules.text import query_stems, tokens


def test_a_question_naming_a_kind_of_fact_gets_the_words_stating_one() -> None:
    for question in ("What is my job?", "What's her occupation?", "Who is his employer?",
                     "Tell me about my career"):
        bridges = bridges_for(query_stems(question))
        assert bridges, question
        [bridge] = set(bridges.values())
        assert {"pharmacist", "carpent", "teacher"} <= bridge.names and "work" in bridge.cues
    for question in ("Where did I go hiking?", "Where do I live?", "What do I do for a living?"):
        assert bridges_for(query_stems(question)) == {}, question


def test_no_everyday_word_states_a_job() -> None:
    """Professions whose stem another everyday word shares are left out: cooking or having a
    garden is no job."""
    everyday = ("cooked cooking nursing coached judged piloted tailored vetted garden design "
                "designed engine research account consult develop lecture mechanical "
                "photograph programme translate")
    [job] = bridges_for(["job"]).values()
    assert not set(tokens(everyday)) & job.names


def test_bridged_stems_keep_the_questions_first_and_are_deterministic() -> None:
    stems = query_stems("What is my job?")
    bridges = bridges_for(stems)
    out = bridged_stems(stems, bridges)
    assert out[: len(stems)] == stems
    assert out == bridged_stems(stems, bridges)
    assert len(out) == len(set(out))


def test_hints_are_cleaned_and_add_only_new_stems() -> None:
    assert clean_hints(["  I work as a nurse. ", "", "   ", "x" * 500]) == (
        "I work as a nurse.", "x" * 200)
    stems = query_stems("What is my job?")
    assert hinted_stems(stems, ["My job: I work as a nurse"]) == [*stems, "work", "nurs"]


def test_the_gate_reads_the_questions_own_words_unless_told() -> None:
    asked = ["job"]
    assert gate_words(asked, (), {}, hint_coverage=False) is None  # nothing widened
    words = gate_words(asked, ("I work as a nurse",), {}, hint_coverage=False)
    assert words is not None and words.stems == ("job",)
    assert gate_words(asked, ("I work as a nurse",), {}, hint_coverage=True) is None
    bridged = gate_words(asked, (), bridges_for(asked), hint_coverage=True)
    assert bridged is not None and bridged.stems == ("job",) and "job" in bridged.bridges


def test_the_mean_vector_counts_each_text_once() -> None:
    a = np.array([1.0, 0.0], dtype=np.float32)
    b = np.array([0.0, 1.0], dtype=np.float32)
    m = mean_vector([a, b])
    assert np.allclose(m, [2 ** -0.5, 2 ** -0.5]) and m.dtype == np.float32
    assert np.allclose(mean_vector([a, a]), a)
