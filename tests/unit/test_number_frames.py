"""A summary keeps a number in the frame and unit its sources said it in (`number_frames`,
through `grounding.check_summary`): one case a test."""

from __future__ import annotations

from strata.memory.checks import grounding as g
from strata.memory.checks.number_frames import Said, numbers, reframed


def refused(summary: str, *said: str) -> str | None:
    """The refusal of `summary` of Ana's lines `said` (the second one the bot's)."""
    lines = [("Strata" if i == 1 else "Ana", s) for i, s in enumerate(said)]
    refusal = g.check_summary(summary, [f"{who}: {text}" for who, text in lines],
                              layer=g.EPISODES, speakers=g.by_speaker(lines),
                              share=g.CLAIM_SHARE)
    return refusal.reason if refusal else None


def test_a_reminder_in_two_minutes_is_not_told_as_every_two_minutes() -> None:
    # The embedded model's episode, by hand, of a reminder set once.
    said = ("remind me in 2 minutes to stretch",
            "Reminder #1 set for Mon 5 Jan 09:02 (UTC): stretch. /reminders lists your "
            "reminders.")
    assert refused("Ana reminds Strata to stretch every 2 minutes, using reminders lists.",
                   *said) == g.REFRAMED
    assert refused("Ana asked to be reminded in 2 minutes to stretch.", *said) is None


def test_a_number_without_a_frame_needs_none() -> None:
    assert refused("Ana wants to stretch, 2 minutes from now.",
                   "remind me in 2 minutes to stretch") is None


def test_how_long_is_not_when() -> None:
    assert refused("Ana is going to Tartu for 2 weeks.", "I go to Tartu in 2 weeks") \
        == g.REFRAMED
    assert refused("Ana is going to Tartu in 2 weeks.", "I go to Tartu in 2 weeks") is None


def test_another_unit_is_another_claim() -> None:
    assert refused("Ana stretches for 2 hours.", "I stretch for 2 minutes") == g.REFRAMED
    assert refused("Ana wakes at 6am.", "I wake at 6pm") == g.REFRAMED
    assert refused("Ana swims 3 times a week.", "I swim 3 days a week") == g.REFRAMED


def test_the_same_frame_in_other_words_passes() -> None:
    assert refused("Ana waters the plants each 3 days.", "I water the plants every 3 days") \
        is None
    assert refused("Ana stretches within 2 minutes.", "remind me in 2 minutes to stretch") \
        is None
    # "on" and "at" frame nothing: a date or time said another way is the same number.
    assert refused("Ana's exam is on 5 March.", "my exam is March 5") is None


def test_one_number_said_twice_in_two_frames() -> None:
    said = "remind me in 2 minutes to stretch, and to drink water every 2 hours"
    assert refused("Ana drinks water every 2 hours.", said) is None
    assert refused("Ana stretches every 2 minutes.", said) == g.REFRAMED


def test_ago_is_a_frame_after_the_unit() -> None:
    assert refused("Ana moved to Tartu 2 years ago.", "I moved to Tartu 2 years ago") is None
    assert refused("Ana will move to Tartu in 2 years.", "I moved to Tartu 2 years ago") \
        == g.REFRAMED


def test_numbers_are_read_with_frame_and_unit() -> None:
    assert numbers("in 2 minutes, at 18:02, every 03 days, 6pm, 5 cats") == [
        Said("2", "from now", "minute"), Said("18:02", None, None),
        Said("3", "how often", "day"), Said("6", None, "pm"), Said("5", None, None)]
    # A number no source holds is the number check's to refuse, not this one's.
    assert reframed("every 7 minutes", ["in 2 minutes"]) is None
