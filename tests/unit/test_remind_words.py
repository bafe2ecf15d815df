"""Reminder requests read from words without a model (`strata.bot.remind_words`)."""

from __future__ import annotations

from datetime import datetime

import pytest

from strata.bot.remind_words import ReminderRequest, read_message, read_spec

# Monday 5 January 2026, 14:00 local.
NOW = datetime(2026, 1, 5, 14, 0)


@pytest.mark.parametrize(("said", "text", "minutes"), [
    ("remind me in 2 minutes to stretch", "stretch", 2),
    ("Remind me to stretch in 2 minutes.", "stretch", 2),
    ("can you remind me in an hour to call mum?", "call mum", 60),
    ("remind me in half an hour about the oven", "the oven", 30),
    ("remind me in 1.5 hours to leave", "leave", 90),
    ("remind me in 2 hours and 15 minutes to check the bread", "check the bread", 135),
    ("remind me in an hour and a half to go", "go", 90),
    ("please remind me in ten mins: tea", "tea", 10),
    ("set a reminder in 3 days to pay rent", "pay rent", 4320),
    ("@strata remind me in 3 minutes to stand up", "stand up", 3),
    ("Strata, remind me in 3 minutes to stand up", "stand up", 3),
    ("remind me in 5 minutes to plan Friday's party at 8", "plan Friday's party at 8", 5),
])
def test_relative_times(said: str, text: str, minutes: float) -> None:
    assert read_message(said, NOW) == ReminderRequest(text, in_minutes=minutes)


@pytest.mark.parametrize(("said", "text", "when"), [
    ("remind me tomorrow at 9 to call mum", "call mum", "2026-01-06 09:00"),
    ("remind me to call mum tomorrow at 9", "call mum", "2026-01-06 09:00"),
    ("remind me at 9 tomorrow to call mum", "call mum", "2026-01-06 09:00"),
    ("remind me at 18:30 to take the pills", "take the pills", "2026-01-05 18:30"),
    ("remind me at 6pm to cook", "cook", "2026-01-05 18:00"),
    ("remind me at 6:30 p.m. to cook", "cook", "2026-01-05 18:30"),
    # An hour under 12 without am/pm: the next one to come (it is 14:00).
    ("remind me at 5 to walk the dog", "walk the dog", "2026-01-05 17:00"),
    ("remind me at 10 to sleep", "sleep", "2026-01-05 22:00"),
    ("remind me at 13:00 to eat", "eat", "2026-01-06 13:00"),  # passed today: tomorrow
    ("remind me tomorrow to water the plants", "water the plants", "2026-01-06 09:00"),
    ("remind me tonight to lock the door", "lock the door", "2026-01-05 20:00"),
    ("remind me tonight at 11 to lock the door", "lock the door", "2026-01-05 23:00"),
    ("remind me on Friday to submit the form", "submit the form", "2026-01-09 09:00"),
    ("remind me next fri at 7am to run", "run", "2026-01-09 07:00"),
    ("remind me on Monday at 9 to plan", "plan", "2026-01-12 09:00"),  # said on a Monday
    ("remind me friday at 10 to pay rent", "pay rent", "2026-01-09 10:00"),
    ("remind me to call mum wednesday", "call mum", "2026-01-07 09:00"),
    ("remind me on 2026-02-01 at 10:15 to renew", "renew", "2026-02-01 10:15"),
    ("remind me at noon to eat", "eat", "2026-01-06 12:00"),
    ("remind me at 7 in the evening to call", "call", "2026-01-05 19:00"),
    ("remind me tomorrow 7:45 to catch the train", "catch the train", "2026-01-06 07:45"),
    ("remind me today at 8 to x", "x", "2026-01-05 08:00"),  # past: the tool says so
    ("remind me on 2026-01-05 at 8 to x", "x", "2026-01-05 08:00"),  # a date is that date
])
def test_days_and_times_in_local_time(said: str, text: str, when: str) -> None:
    assert read_message(said, NOW) == ReminderRequest(text, when=when)


@pytest.mark.parametrize("said", [
    "remind me what my sister is called",  # a question about memory, not a reminder
    "remind me to look at 3 files",  # "at 3" is no time here
    "don't remind me in 5 minutes",
    "I asked you to remind me in 5 minutes",
    "what's the weather tomorrow at 9?",
    "remind me at 25:00 to x",
    "remind me on 2026-02-30 to x",
])
def test_what_is_not_a_reminder_request_is_left_to_the_model(said: str) -> None:
    assert read_message(said, NOW) is None


def test_a_request_without_a_task_reads_with_empty_text() -> None:
    assert read_message("remind me in 10 minutes", NOW) == ReminderRequest("", in_minutes=10)


def test_the_remind_command_reads_the_words_after_it() -> None:
    assert read_spec("in 2 minutes stretch", NOW) == ReminderRequest("stretch", in_minutes=2)
    assert read_spec("tomorrow at 9 call mum", NOW, command=True) == ReminderRequest(
        "call mum", when="2026-01-06 09:00")
    assert read_spec("18:30 take the pills", NOW, command=True) == ReminderRequest(
        "take the pills", when="2026-01-05 18:30")
    assert read_spec("stretch", NOW, command=True) is None
    assert read_spec("me in 2 minutes to stretch", NOW, command=True) == ReminderRequest(
        "stretch", in_minutes=2)
