"""The bot never introduces itself as the person (`strata.bot.reply_identity`). The replies
are ones the embedded 0.5B gave in `strata chat` when the persona and the person's line met
in one prompt."""

from __future__ import annotations

import pytest

from strata.bot.reply_checks import Settled, check_reply
from strata.bot.reply_identity import Identity


@pytest.mark.parametrize(("reply", "told"), [
    ("I'm Dana, a warm attentive companion who helps people in care.",
     "I'm Strata, a warm attentive companion who helps people in care."),
    ("Hello! My name is dana and I remember what you tell me.",
     "Hello! My name is Strata and I remember what you tell me."),
    ("I am Dana Reyes, your companion.", "I am Strata, your companion."),
])
def test_the_bot_naming_itself_as_the_person_is_told_as_itself(reply: str, told: str) -> None:
    identity = Identity.of("Dana Reyes" if "Reyes" in reply else "dana", "Strata")
    assert identity is not None
    checked = check_reply(reply, (), (), identity=identity)
    assert checked.text == told and checked.caught == ("identity",)


@pytest.mark.parametrize("reply", [
    "I'm glad, Dana, that work went well.",
    "You are Dana, a nurse at the city hospital.",
    "I am Dana's companion.",  # whose, not who
    "I'm Strata, a warm attentive companion.",
    "I'm danaë's friend.",
])
def test_other_replies_are_left_as_written(reply: str) -> None:
    identity = Identity.of("Dana", "Strata")
    assert identity is not None
    assert check_reply(reply, (), (), identity=identity).text == reply


def test_no_identity_when_the_names_are_the_same_or_missing() -> None:
    assert Identity.of("Strata", "strata") is None
    assert Identity.of("", "Strata") is None
    assert Identity.of("user", "Strata") is None


def test_a_streamed_reply_shows_what_is_sent() -> None:
    identity = Identity.of("Dana", "Strata")
    reply = "I'm Dana, a warm attentive companion. How can I help?"
    shown = Settled((), (), identity=identity)
    for end in range(1, len(reply) + 1):
        shown.feed(reply[:end])
    assert shown.feed(reply + " ") == check_reply(reply, (), (), identity=identity).text
