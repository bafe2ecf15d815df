"""Whether a summary keeps each number in the frame its sources said it in: "in 2 minutes" told
as "every 2 minutes" is a new claim (a reminder once becomes a habit), though the number
itself was said. Used by `grounding.check_summary`. Pure; the standard library only.

A number's frame is the word before it, when that word changes what the number means
(`_FRAMES`: when from now, how often, how long, since, until; "ago" after it), and its unit,
when it is one of time or count (`_UNITS`: "2 hours" is not "2 minutes", "6am" not "6pm").
A summary's number passes when one place in its sources holds the same number with the same
frame (or the summary gives none) and the same unit (or the summary gives none). Other
prepositions ("at", "on", "about") are not frames: "on 5 March" of "March 5" passes.
Numbers are digits; a number written in words is not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_FRAMES = {
    **dict.fromkeys(("in", "within", "after"), "from now"),
    **dict.fromkeys(("every", "each", "per"), "how often"),
    **dict.fromkeys(("for", "over", "during"), "how long"),
    **dict.fromkeys(("since", "from"), "since"),
    **dict.fromkeys(("until", "till", "by", "before"), "until"),
}
_UNITS = {
    **dict.fromkeys(("second", "seconds", "sec", "secs"), "second"),
    **dict.fromkeys(("minute", "minutes", "min", "mins"), "minute"),
    **dict.fromkeys(("hour", "hours", "hr", "hrs", "h"), "hour"),
    **dict.fromkeys(("day", "days"), "day"),
    **dict.fromkeys(("week", "weeks", "wk", "wks"), "week"),
    **dict.fromkeys(("month", "months"), "month"),
    **dict.fromkeys(("year", "years", "yr", "yrs"), "year"),
    **dict.fromkeys(("am", "a.m."), "am"),
    **dict.fromkeys(("pm", "p.m."), "pm"),
    **dict.fromkeys(("time", "times"), "times"),
}
# A number, with the word before it and up to two words after it ("2 years ago").
_NUMBER = re.compile(
    r"(?:\b(?P<before>[a-z]+)\s+)?(?P<n>\d+(?:[.,:]\d+)*)(?![\d])"
    r"(?:\s*(?P<unit>[a-z]+(?:\.[a-z]\.)?)(?:\s+(?P<ago>ago)\b)?)?",
    re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Said:
    """One number as written: its value, frame and unit (None: not given)."""

    number: str
    frame: str | None
    unit: str | None


def _value(number: str) -> str:
    """"03" and "3" are one number; "18:02" and "1.5" stay as they are."""
    return (number.lstrip("0") or "0") if number.isdigit() else number


def numbers(text: str) -> list[Said]:
    """Every number of `text` with its frame and unit."""
    out = []
    for m in _NUMBER.finditer(text):
        unit = _UNITS.get((m.group("unit") or "").lower())
        frame = "ago" if unit and m.group("ago") else _FRAMES.get(
            (m.group("before") or "").lower())
        out.append(Said(_value(m.group("n")), frame, unit))
    return out


def _matches(said: Said, source: Said) -> bool:
    return (said.number == source.number
            and (said.frame is None or said.frame == source.frame)
            and (said.unit is None or said.unit == source.unit))


def reframed(text: str, sources: Iterable[str]) -> Said | None:
    """The first number of `text` (with a frame or unit) that no source says in that frame
    and unit; None when every one is said so. A number no source holds at all is left to
    the number check (`grounding`'s NUMBER)."""
    said = [s for source in sources for s in numbers(source)]
    for n in numbers(text):
        if n.frame is None and n.unit is None:
            continue
        same = [s for s in said if s.number == n.number]
        if same and not any(_matches(n, s) for s in same):
            return n
    return None
