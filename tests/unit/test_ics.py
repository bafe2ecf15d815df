"""ICS recurrence as calendars really write it: a weekly meeting with one occurrence cancelled
(EXDATE), one moved and renamed (an override with RECURRENCE-ID), one extra (RDATE)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from strata.cognition.connectors import ConnectorError, parse_ics

ICS = b"""BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//strata tests//EN
BEGIN:VTIMEZONE
TZID:Europe/Paris
BEGIN:STANDARD
DTSTART:19701025T030000
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:19700329T020000
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU
END:DAYLIGHT
END:VTIMEZONE
BEGIN:VEVENT
UID:standup
DTSTART;TZID=Europe/Paris:20260105T100000
DTEND;TZID=Europe/Paris:20260105T103000
RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=6
EXDATE;TZID=Europe/Paris:20260112T100000
RDATE;TZID=Europe/Paris:20260108T160000
SUMMARY:Standup
END:VEVENT
BEGIN:VEVENT
UID:standup
RECURRENCE-ID;TZID=Europe/Paris:20260119T100000
DTSTART;TZID=Europe/Paris:20260120T140000
DTEND;TZID=Europe/Paris:20260120T143000
SUMMARY:Standup (moved)
LOCATION:Room 4
END:VEVENT
BEGIN:VEVENT
UID:lunch
DTSTART:20260107T120000
SUMMARY:Floating lunch
END:VEVENT
END:VCALENDAR
"""


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_cancelled_moved_and_added_occurrences_are_honoured() -> None:
    events = parse_ics(ICS, tz="Europe/Paris", start=utc(2026, 1, 1), end=utc(2026, 2, 1))
    got = [(e.summary, e.starts_at, e.ends_at, e.location) for e in events]
    assert got == [
        ("Standup", utc(2026, 1, 5, 9), utc(2026, 1, 5, 9, 30), ""),
        ("Floating lunch", utc(2026, 1, 7, 11), None, ""),  # floating: the person's zone
        ("Standup", utc(2026, 1, 8, 15), utc(2026, 1, 8, 15, 30), ""),  # RDATE
        # 12 Jan: cancelled by EXDATE. 19 Jan: moved to the 20th by its override.
        ("Standup (moved)", utc(2026, 1, 20, 13), utc(2026, 1, 20, 13, 30), "Room 4"),
        ("Standup", utc(2026, 1, 26, 9), utc(2026, 1, 26, 9, 30), ""),
    ]


def test_the_window_is_exact_in_the_persons_zone() -> None:
    events = parse_ics(ICS, tz="Asia/Tokyo", start=utc(2026, 1, 7, 3),
                       end=utc(2026, 1, 8, 15))
    # Lunch at 12:00 floating is 03:00 UTC in Tokyo: inside; the RDATE at 15:00 UTC: outside.
    assert [(e.summary, e.starts_at) for e in events] == [("Floating lunch", utc(2026, 1, 7, 3))]


def test_not_a_calendar_is_a_connector_error() -> None:
    with pytest.raises(ConnectorError):
        parse_ics(b"<html>nope</html>", tz="UTC", start=utc(2026, 1, 1), end=utc(2026, 2, 1))
