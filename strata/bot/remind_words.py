"""A reminder request read from the person's own words, without a model.

The embedded model is too small to call tools, so "remind me in 2 minutes to stretch" is read
here: a narrow grammar of the ways people say when, in their own time zone, and nothing more.
What it reads is handed to the `set_reminder` tool as its arguments (`strata.cognition.
remind_requests`), so the reminder is set the one way every reminder is. What it cannot read
is left alone (None): the model answers, and the reply check (`strata.bot.reply_checks`) stops
it from claiming a reminder it did not set.

Understood, in any order around the thing to be reminded of:
- relative: `in 2 minutes`, `in an hour`, `in half an hour`, `in 1.5 hours`, `in 3 days`,
  `in 2 hours and 15 minutes`;
- a day: `today`, `tonight`, `tomorrow`, `on Friday` / `next fri` / `friday at 10`,
  `on 2026-01-06` (without a time: 09:00, tonight 20:00);
- a time: `at 9`, `at 18:30`, `at 6pm`, `at 6:30 p.m.`, `at noon`, `at midnight`, `9:30`,
  `7am`. An hour under 12 without am/pm is the next one to come (`at 5` at 14:00 is 17:00)
  unless a day is named (`tomorrow at 9` is 09:00).
Imports the standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "forty-five": 45,
            "fifty": 50, "sixty": 60, "ninety": 90}
_UNITS = {"m": 1, "min": 1, "mins": 1, "minute": 1, "minutes": 1,
          "h": 60, "hr": 60, "hrs": 60, "hour": 60, "hours": 60,
          "day": 1440, "days": 1440, "week": 10080, "weeks": 10080}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

_NUM = r"(?:\d+(?:[.,]\d+)?|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + ")"
_UNIT = r"(?:" + "|".join(sorted(_UNITS, key=len, reverse=True)) + ")"
_RELATIVE = re.compile(
    rf"\bin\s+(?:(?P<half>half\s+an?\s+hour)|(?P<n>{_NUM})\s*(?P<unit>{_UNIT})"
    rf"(?:\s+and\s+(?:(?P<n2>{_NUM})\s*(?P<unit2>{_UNIT})|(?P<ahalf>a\s+half)))?)\b", re.I)
_DAYNAME = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|rsday|urday)?"
_FULL_DAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
# A weekday with "on", "next" or "this"; a bare one only right before a time or at the end
# ("friday at 10", "… call mum friday"), so "plan Friday's party" names no day.
_DAY = re.compile(
    rf"\b(?:(?P<rel>today|tonight|tomorrow)|(?:on|next|this)\s+(?:the\s+)?"
    rf"(?:(?P<name>{_DAYNAME})|(?P<iso>\d{{4}}-\d\d-\d\d))"
    rf"|(?P<bare>{_FULL_DAY})(?=\s+at\b|\s*[.!?]?\s*$))\b", re.I)
# What may follow a time (so "look at 3 files" is not 03:00): the end, punctuation, or words
# that go on with the request.
_AFTER = (r"(?=\s*(?:$|[,.;:!?)]|(?:to|about|that|and|on|today|tonight|tomorrow|next|this|"
          rf"please|in\s+the\s+(?:morning|afternoon|evening)|{_DAYNAME})\b))")
_CLOCK = (
    r"(?:\bat\s+(?:(?P<word>noon|midday|midnight)|(?P<h>\d{1,2})(?:[:.](?P<m>\d\d))?"
    r"(?:\s*(?P<ap>[ap]\.?m\.?))?(?:\s*o'?clock)?)"
    r"|\b(?P<h2>\d{1,2})(?::(?P<m2>\d\d)(?:\s*(?P<ap2>[ap]\.?m\.?))?|\s*(?P<ap3>[ap]\.?m\.?)))"
    r"(?:\s+in\s+the\s+(?P<part>morning|afternoon|evening))?")
_TIME = re.compile(_CLOCK + _AFTER, re.I)
# After `/remind` the time comes first and the task straight after it (`at 9 call mum`).
_COMMAND_TIME = re.compile(_CLOCK + r"\b", re.I)
_REQUEST = re.compile(
    r"^\s*(?:@\S+\s+)?(?:(?:hey|hi|ok|okay|@?\w+)\s*[,:!]\s*)?(?:please\s+)?"
    r"(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?"
    r"(?:remind\s+me|set\s+(?:me\s+)?an?\s+reminder)\b(?P<rest>.*)$", re.I | re.S)
_LEAD = re.compile(r"^(?:[\s,.;:!-]+|(?:to|about|that|of|for|please)\b)+", re.I)
_TRAIL = re.compile(r"(?:[\s,.;:!?-]+|\b(?:please|thanks|thank\s+you)\b)+$", re.I)
DEFAULT_HOUR = 9  # a day without a time: the morning
TONIGHT_HOUR = 20


@dataclass(frozen=True, slots=True)
class ReminderRequest:
    """What to remind of ("" when the words did not say) and when: minutes from now, or a
    local date and time (`YYYY-MM-DD HH:MM`, the `set_reminder` tool's `when`)."""

    text: str
    in_minutes: float | None = None
    when: str | None = None


def read_message(message: str, now_local: datetime) -> ReminderRequest | None:
    """The request in a message like "remind me tomorrow at 9 to call mum", given the local
    time now; None when the message is not one, or says no time this grammar reads (the
    model answers it: "remind me what my sister is called" is a question)."""
    match = _REQUEST.match(message)
    if match is None:
        return None
    return read_spec(match.group("rest"), now_local)


def read_spec(spec: str, now_local: datetime, *, command: bool = False) -> ReminderRequest | None:
    """The request in the words after "remind me", or after `/remind` (`command`: a time
    may be followed straight by the task, as in `/remind at 9 call mum`)."""
    if command:  # "/remind me in 2 minutes to stretch" says what "/remind in 2 …" says
        spec = re.sub(r"^\s*me\b", "", spec, flags=re.I)
    rel = _RELATIVE.search(spec)
    if rel is not None:
        minutes = _minutes(rel)
        return ReminderRequest(_task(spec, [rel.span()]), in_minutes=minutes)
    day, at = _DAY.search(spec), (_COMMAND_TIME if command else _TIME).search(spec)
    if day is None and at is None:
        return None
    spans = [m.span() for m in (day, at) if m is not None]
    when = _resolve(day, at, now_local)
    if when is None:
        return None
    return ReminderRequest(_task(spec, spans), when=f"{when:%Y-%m-%d %H:%M}")


def _number(text: str) -> float:
    word = text.lower()
    return float(_NUMBERS[word]) if word in _NUMBERS else float(word.replace(",", "."))


def _minutes(m: re.Match[str]) -> float:
    if m.group("half"):
        return 30.0
    total = _number(m.group("n")) * _UNITS[m.group("unit").lower()]
    if m.group("n2"):
        total += _number(m.group("n2")) * _UNITS[m.group("unit2").lower()]
    elif m.group("ahalf"):
        total += _UNITS[m.group("unit").lower()] / 2
    return total


def _task(spec: str, spans: list[tuple[int, int]]) -> str:
    text = spec
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + " " + text[end:]
    text = " ".join(text.split())
    return _TRAIL.sub("", _LEAD.sub("", text))


def _day(m: re.Match[str], today: date) -> date | None:
    if m.group("rel"):
        return today + timedelta(days=1 if m.group("rel").lower() == "tomorrow" else 0)
    if m.group("iso"):
        try:
            return date.fromisoformat(m.group("iso"))
        except ValueError:
            return None
    name = (m.group("name") or m.group("bare")).lower()[:3]
    ahead = (next(i for i, d in enumerate(_WEEKDAYS) if d.startswith(name))
             - today.weekday()) % 7
    return today + timedelta(days=ahead)


def _clock(m: re.Match[str]) -> tuple[int, int, str | None] | None:
    """(hour, minute, "am"/"pm"/None) of a time match; None when it is no time of day."""
    word = (m.group("word") or "").lower()
    if word:
        return (0, 0, "am") if word == "midnight" else (12, 0, "pm")
    hour = int(m.group("h") or m.group("h2"))
    minute = int(m.group("m") or m.group("m2") or 0)
    ap = (m.group("ap") or m.group("ap2") or m.group("ap3") or "").lower()[:1]
    half = {"a": "am", "p": "pm"}.get(ap)
    if half is None and m.group("part"):
        half = "am" if m.group("part").lower() == "morning" else "pm"
    if minute > 59 or hour > 23 or (half is not None and not 1 <= hour <= 12):
        return None
    return hour, minute, half


def _resolve(day_m: re.Match[str] | None, time_m: re.Match[str] | None,
             now: datetime) -> datetime | None:
    """The local date-time meant (naive, in the person's zone)."""
    day = _day(day_m, now.date()) if day_m is not None else None
    if day_m is not None and day is None:
        return None
    tonight = day_m is not None and (day_m.group("rel") or "").lower() == "tonight"
    parts = _clock(time_m) if time_m is not None else (TONIGHT_HOUR if tonight
                                                       else DEFAULT_HOUR, 0, None)
    if parts is None:
        return None
    hour, minute, half = parts
    if half is None and tonight and hour < 12:
        half = "pm"
    if half is not None:
        hours = [hour % 12 + (12 if half == "pm" else 0)]
    else:  # "at 5": 05:00 or 17:00, the first still to come (a named day: as said)
        hours = [hour] + ([hour + 12] if 1 <= hour < 12 and day is None else [])
    days = [day] if day is not None else [now.date(), now.date() + timedelta(days=1)]
    if day_m is not None and not (day_m.group("rel") or day_m.group("iso")) \
            and day == now.date():
        days.append(day + timedelta(days=7))  # "on Monday", said on a Monday
    for d in days:
        for h in hours:
            candidate = datetime.combine(d, time(h, minute))
            if candidate > now:
                return candidate
    # In the past (e.g. "today at 8" at 9): the tool says so, naming the time.
    return datetime.combine(days[0], time(hours[0], minute))
