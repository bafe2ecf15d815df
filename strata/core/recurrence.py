"""Reminder times: the person's time zone, a time as people read it (`describe`), and
recurrence as RFC 5545 RRULE text.

A recurring reminder or scheduled prompt stores its rule as the value of an iCalendar RRULE
(`FREQ=DAILY;BYHOUR=8;BYMINUTE=0;BYSECOND=0`, `FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;…`), written
and read by `dateutil.rrule`: the format calendars use, not one of our own. The rule holds wall
times in the person's zone: occurrences are computed as local times and only then placed in
the zone, so 08:00 stays 08:00 across a daylight-saving change; a local time that a change
skips or repeats takes the offset before the change (`fold=0`), as `zoneinfo` does. What
people type is read as before (`every`: day, weekday or a weekday name; `at`: HH:MM). Imports
the standard library, dateutil and `strata.core.clock`.
"""

from __future__ import annotations

import re
from datetime import datetime, time
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil.rrule import DAILY, FR, MO, SA, SU, TH, TU, WE, WEEKLY, rrule, rrulestr

from strata.core.clock import ensure_utc

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DAYS = (MO, TU, WE, TH, FR, SA, SU)
_CODES = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
# One RRULE value (`NAME=VALUE` parts joined by `;`): no DTSTART, no second rule, no line break.
_RRULE = re.compile(r"FREQ=[A-Z]+(;[A-Z]+=[A-Z0-9,+\-]+)*")
# A rule that has not come round in this many occurrences after its start never will for us.
MAX_SKIPPED = 1000


class ReminderInputError(ValueError):
    """The model (or person) gave a time, zone or recurrence that cannot be used."""


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    # OSError: zoneinfo looks a name up as a file, and a name longer than a file name may be
    # (a pasted paragraph) is "File name too long", not "not found".
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ReminderInputError(
            f"unknown time zone {name!r}; use an IANA name like Europe/Paris"
        ) from None


def local(ts: datetime, tz: str) -> datetime:
    return ensure_utc(ts).astimezone(zone(tz))


def describe(ts: datetime, tz: str, now: datetime | None = None) -> str:
    """`Tue 6 Jan 09:00` in the person's zone (with the year when it is not this year's)."""
    lt = local(ts, tz)
    text = f"{lt:%a} {lt.day} {lt:%b} {lt:%H:%M}"
    if now is not None and local(now, tz).year != lt.year:
        text += f" {lt.year}"
    return text


def parse_recurrence(every: str, at: str) -> str:
    """`every` (day, weekday, or a weekday name) and `at` (HH:MM) → the stored RRULE text."""
    kind = every.strip().lower()
    match = re.fullmatch(r"(\d{1,2}):(\d\d)", at.strip())
    if match is None or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        raise ReminderInputError(f"cannot read the time of day {at!r}; use HH:MM")
    hour, minute = int(match.group(1)), int(match.group(2))
    if kind in ("day", "daily", "every day"):
        days: tuple[int, ...] = ()
    elif kind in ("weekday", "weekdays"):
        days = (0, 1, 2, 3, 4)
    elif kind[:3] in WEEKDAYS:
        days = (WEEKDAYS.index(kind[:3]),)
    else:
        raise ReminderInputError(
            f"cannot read the repetition {every!r}; use day, weekday, or a weekday name"
        )
    rule = rrule(WEEKLY if days else DAILY, byweekday=[_DAYS[d] for d in days] or None,
                 byhour=hour, byminute=minute, bysecond=0, dtstart=datetime(2000, 1, 1))
    # str() is "DTSTART:…\nRRULE:…": the rule alone is stored; each use supplies its start.
    return next(line for line in str(rule).splitlines()
                if line.startswith("RRULE:")).removeprefix("RRULE:")


def _rule(recurrence: str, start: datetime) -> rrule:
    if _RRULE.fullmatch(recurrence) is None:
        raise ReminderInputError(f"bad recurrence {recurrence!r}")
    try:
        return rrulestr(recurrence, dtstart=start)
    except (ValueError, TypeError) as exc:
        raise ReminderInputError(f"bad recurrence {recurrence!r}: {exc}") from None


def next_occurrence(recurrence: str, tz: str, after: datetime) -> datetime:
    """The first time strictly after `after` that `recurrence` names, as aware UTC."""
    z = zone(tz)
    # Local wall times from the local midnight of `after`'s day, placed in the zone one by one
    # and compared in UTC: in a repeated hour the earlier instant is the one meant.
    start = datetime.combine(local(after, tz).date(), time(0, 0))
    for count, wall in enumerate(_rule(recurrence, start)):
        candidate = ensure_utc(wall.replace(tzinfo=z))
        if candidate > ensure_utc(after):
            return candidate
        if count >= MAX_SKIPPED:
            break
    raise ReminderInputError(f"the recurrence {recurrence!r} does not come round again")


def describe_recurrence(recurrence: str) -> str:
    """`every day at 08:00`, `every weekday at 08:00`, `every Mon at 08:00`; a rule of another
    shape is shown as it is stored."""
    parts = {name: value for name, _, value in (p.partition("=") for p in recurrence.split(";"))}
    days = [d for d in parts.get("BYDAY", "").split(",") if d]
    try:
        at = f"{int(parts['BYHOUR']):02d}:{int(parts.get('BYMINUTE', '0')):02d}"
    except (KeyError, ValueError):
        return f"repeating ({recurrence})"
    if parts.get("FREQ") == "DAILY" and not days:
        return f"every day at {at}"
    if parts.get("FREQ") != "WEEKLY" or not days or not set(days) <= set(_CODES):
        return f"repeating ({recurrence})"
    if days == list(_CODES[:5]):
        return f"every weekday at {at}"
    names = ", ".join(WEEKDAYS[_CODES.index(d)].capitalize() for d in days)
    return f"every {names} at {at}"
