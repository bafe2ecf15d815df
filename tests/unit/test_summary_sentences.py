"""An episode summary is checked sentence by sentence where a whole-text measure lets a
sentence through: someone else's reported words told under another frame (`unquoted`), and a
sentence with too few of its words in the window (`thin_sentence`). The cases are the two
episodes bench.truth judged unsupported (bench/results/truth_episodes.json)."""

from __future__ import annotations

from strata.memory.checks import grounding as g

DAG = [("Dag", "I live in Porto, near the old harbour."),
       ("Dag", "My brother told me he just moved to Cork for a chef job."),
       ("Strata", "Cork is a city in Ireland, famous for seafood."),
       ("Dag", "Would a greyhound be happy in a flat in Gdansk, if I ever lived there?")]
OSKAR = [("Oskar", "ok"),
         ("Strata", "Ok, let me know if you have any other questions or need assistance with "
                    "something else. I'll be happy to help!"),
         ("Oskar", "bye"),
         ("Strata", "Goodbye! Have a great day! Let me know if you have any more questions or "
                    "need help."),
         ("Oskar", "hi"), ("Strata", "Hello! How can I assist you today?")]
# The 0.5B model's summary of that window, as stored (its second sentence is grounded).
STORED = ("Oskar and Strata are having a chat about their daily tasks. Oskar asks for "
          "clarification on whether they have any other questions or need assistance with "
          "something else, while Strata responds by saying goodbye and then asking if they "
          "have any more questions or need help.")


def refused(summary: str, lines: list[tuple[str, str]]) -> str | None:
    refusal = g.check_summary(summary, [f"{who}: {text}" for who, text in lines],
                              layer=g.EPISODES, speakers=g.by_speaker(lines),
                              share=g.CLAIM_SHARE)
    return refusal.reason if refusal else None


def test_a_quote_told_as_the_persons_question_is_refused() -> None:
    assert refused("Dag asks Strata about his move to Cork for a chef job.", DAG) \
        == g.UNFRAMED
    assert refused("Dag asks about his brother's move to Cork for a chef job.", DAG) is None
    assert refused("Dag says his brother moved to Cork for a chef job.", DAG) is None
    assert refused("Dag lives in Porto, near the old harbour.", DAG) is None
    # The bot's echo of the quote does not make it a plain statement of Dag's.
    echoed = [*DAG, ("Strata", "Moving to Cork for a chef job is a big step.")]
    assert refused("Dag and Strata discuss a move to Cork for a chef job.", echoed) \
        == g.UNFRAMED


def test_one_invented_sentence_is_refused_beside_grounded_ones() -> None:
    assert refused(STORED, OSKAR) == g.OFF_TOPIC
    assert refused(STORED.split(". ", 1)[1], OSKAR) is None
