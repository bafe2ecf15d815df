"""Extractive excerpts are cut at sentence ends: a question, a hypothetical or a quote is kept
whole or left out, never cut into something that reads as a plain statement."""

from __future__ import annotations

from strata.memory.lifecycle.episode_draft import (
    EXTRACTIVE_LINE_TOKENS,
    EXTRACTIVE_TOKENS,
    excerpt,
)
from strata.memory.rules.extractive import OMITTED, select, whole_sentences

# About 40 tokens of plain statement.
PLAIN = "I live in Porto near the old harbour and walk to the market most mornings. "


def test_a_long_line_is_cut_after_its_last_whole_sentence() -> None:
    line = PLAIN * 3 + "If I moved to Oslo I would finally learn to ski every single weekend."
    cut = whole_sentences(line, 60)
    assert cut == (PLAIN * 3).strip() + " " + OMITTED
    assert "Oslo" not in cut and "ski" not in cut


def test_a_hypothetical_that_fits_is_kept_whole() -> None:
    line = "Imagine I moved to Oslo, I'd ski every weekend. " + PLAIN * 3
    cut = whole_sentences(line, 60)
    assert cut.startswith("Imagine I moved to Oslo, I'd ski every weekend. ")
    assert cut.endswith(OMITTED)


def test_a_quote_is_never_left_open() -> None:
    line = ('Mum said: "You are late again. You should have been a dentist like me. '
            + "Nobody waits that long for anyone, not even for family, not ever. "
            + 'Go and get a real job." ' + PLAIN)
    cut = whole_sentences(line, 40)
    assert '"' not in cut and "dentist" not in cut


def test_an_overlong_first_sentence_is_cut_only_when_plain() -> None:
    plain = "I " + "really " * 60 + "like tea."
    assert whole_sentences(plain, 20).startswith("I really really")
    question = "Would I " + "really " * 60 + "like Oslo?"
    assert whole_sentences(question, 20) == OMITTED
    hypothetical = "If I " + "really " * 60 + "moved to Oslo I would ski."
    assert whole_sentences(hypothetical, 20) == OMITTED


def test_a_short_text_is_untouched() -> None:
    assert whole_sentences("Is it raining in Berlin?", 10) == "Is it raining in Berlin?"


def test_the_episode_excerpt_cuts_lines_and_the_whole_at_ends() -> None:
    long_bot = ("A heat pump moves heat from outside to inside. " * 12
                + "If it is very cold outside it would need more power.")
    text = excerpt([("Wren", "Can you explain how a heat pump works?"), ("Strata", long_bot)])
    bot_line = text.splitlines()[1]
    assert bot_line.startswith("Strata: A heat pump moves heat") and bot_line.endswith(
        "inside. " + OMITTED)
    assert len(bot_line) <= EXTRACTIVE_LINE_TOKENS * 4 + len("Strata: ")
    many = [("Dag", PLAIN.strip())] * 40
    whole = excerpt(many)
    assert len(whole) <= EXTRACTIVE_TOKENS * 4
    assert whole.splitlines()[-1] == OMITTED
    assert all(line == "Dag: " + PLAIN.strip() for line in whole.splitlines()[:-1])


def test_mmr_never_cuts_a_hypothetical_short() -> None:
    framed = "If I " + "ever " * 40 + "moved to Oslo I would ski."
    assert select([framed], 10) == [OMITTED]
    assert select(["I " + "really " * 40 + "like tea."], 10)[0].endswith(OMITTED)
