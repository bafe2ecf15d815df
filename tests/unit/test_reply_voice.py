"""A reply to a person's question about themselves is told to them, not as them
(`strata.bot.reply_voice`). Each reply below is one the embedded 0.5B gave."""

from __future__ import annotations

import pytest

from strata.bot.reply_checks import Settled, check_reply
from strata.bot.reply_voice import voice_for

DANA = "hi, I'm Dana and I work as a nurse at the city hospital"
ANA = "I'm a pharmacist, mostly night shifts at the hospital."


@pytest.mark.parametrize(("said", "asked", "reply", "told"), [
    (DANA, "what is my job?", "I am a Nurse at the city hospital.",
     "You are a Nurse at the city hospital."),
    (DANA, "what is my job?", "Dana: I work as a nurse at the city hospital.",
     "You work as a nurse at the city hospital."),
    (ANA, "What is my job?", "Ana: I'm a pharmacist, mostly night shifts at the hospital.",
     "You're a pharmacist, mostly night shifts at the hospital."),
    (ANA, "What is my job?", "As of now, I am a pharmacist at the hospital.",
     "As of now, you are a pharmacist at the hospital."),
    (ANA, "What is my job?", "My job is a pharmacist.", "Your job is a pharmacist."),
])
def test_the_persons_words_told_as_the_bots_are_told_to_them(
        said: str, asked: str, reply: str, told: str) -> None:
    voice = voice_for(asked, said, said.split(":")[0] if ":" in said else
                      ("Dana" if "Dana" in said else "Ana"))
    assert voice is not None and voice.fix(reply) == told
    checked = check_reply(reply, (), (), asked=asked, voice=voice)
    assert checked.text == told and checked.caught == ("voice",)


@pytest.mark.parametrize("reply", [
    "You work as a nurse at the city hospital.",  # already told to them
    "Dana works as a nurse at the city hospital.",
    "I'm Strata, a warm attentive companion who remembers what people tell me.",  # itself
    "I am your nurse at the city hospital.",
    "I'm a software engineer at a bank.",  # not the person's words: a wrong answer stays
    "I am a trained surgeon at the city hospital.",  # as wrong, and left for the person to see
])
def test_other_replies_are_left_as_written(reply: str) -> None:
    voice = voice_for("what is my job?", DANA, "Dana")
    assert voice is not None and voice.fix(reply) == reply


@pytest.mark.parametrize("asked", ["I work as a nurse", "what time is it?", "hello"])
def test_only_a_question_about_the_person_gets_a_voice(asked: str) -> None:
    assert voice_for(asked, DANA, "Dana") is None


def test_a_streamed_reply_shows_what_is_sent() -> None:
    voice = voice_for("What is my job?", ANA, "Ana")
    reply = "Ana: I'm a pharmacist, mostly night shifts at the hospital. Anything else?"
    shown = Settled((), (), voice)
    for end in range(1, len(reply) + 1):
        shown.feed(reply[:end])
    sent = check_reply(reply, (), (), asked="What is my job?", voice=voice).text
    assert shown.feed(reply + " ") == sent
    assert sent == "You're a pharmacist, mostly night shifts at the hospital. Anything else?"


def test_asked_who_it_is_the_bot_does_not_take_the_persons_life() -> None:
    # `bench.model_history`, identity: "who are you?" after Dana's line.
    voice = voice_for("who are you?", DANA, "Dana")
    reply = ("I'm Strata, a warm attentive companion who remembers what people tell me. "
             "I work as a nurse at the city hospital.")
    checked = check_reply(reply, (), (), asked="who are you?", voice=voice)
    assert checked.text == ("I'm Strata, a warm attentive companion who remembers what people "
                            "tell me. You work as a nurse at the city hospital.")
    assert checked.caught == ("voice",)
