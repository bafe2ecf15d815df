"""Query-focused excerpts of long notes (strata.memory.recall.focus, pure)."""

from __future__ import annotations

from strata.core.tokens import count_tokens
from strata.memory.recall.focus import GAP, excerpt
from strata.memory.rules.text import query_stems

FILLER = "Melanie: We talked about the weather and how the week went, nothing much else."


def _idf(query: str) -> dict[str, float]:
    return dict.fromkeys(query_stems(query), 1.0)


def test_a_short_note_is_shown_whole() -> None:
    note = "Caroline: I moved to Lyon in May. Melanie: Nice!"
    assert excerpt(note, _idf("where did Caroline move"), 100) == note


def test_a_long_note_is_shown_by_its_sentences_with_the_query_words_in_order() -> None:
    lines = [FILLER] * 3 + [
        "Caroline: My sister adopted a greyhound called Biscuit in March.",
        FILLER.replace("weather", "traffic"),
        "Caroline: Biscuit loves the beach near Porto.",
    ] + [FILLER.replace("weather", f"topic {i}") for i in range(8)]
    note = "\n".join(lines)
    assert count_tokens(note) > 60
    text = excerpt(note, _idf("what is the name of the greyhound, Biscuit"), 60)
    assert count_tokens(text) <= 60
    kept = text.splitlines()
    assert "Caroline: My sister adopted a greyhound called Biscuit in March." in kept
    assert "Caroline: Biscuit loves the beach near Porto." in kept
    # In their original order, gaps marked where sentences were left out, no filler.
    assert kept.index("Caroline: My sister adopted a greyhound called Biscuit in March.") < \
        kept.index("Caroline: Biscuit loves the beach near Porto.")
    assert kept[0] == GAP and kept[-1] == GAP
    assert not any("nothing much else" in line for line in kept)


def test_a_note_without_the_query_words_is_cut_to_its_beginning() -> None:
    note = "\n".join(FILLER.replace("weather", f"topic {i}") for i in range(20))
    text = excerpt(note, _idf("greyhound Biscuit"), 40)
    assert count_tokens(text) <= 40
    assert note.startswith(text.rstrip("…").rstrip())
