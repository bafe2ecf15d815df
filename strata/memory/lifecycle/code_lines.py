"""What of the bot's lines in a transcript is code's wording, not the model's: the reply of
a turn whose only tool calls were read from the person's words (a reminder asked in set words:
"Reminder #1 set for Tuesday 10:02: stretch. /reminders lists your reminders."). Such a line
is a tool's confirmation, in the code's wording; a summary must not take it for what was said
(a small model echoed "reminders lists" and turned "in 2 minutes" into "every 2 minutes").

The mark is the tool call's id (`WORDS_CALL_PREFIX`), recorded in the turn's tool-call row by
the words reader: rows carry no other sign of who wrote them. A code-written reply with no tool
call (the words reader asking "what should I remind you of?") has no such row and is not found.

The prompt's ambient snapshot is code's too ("Current local time for Alice: Wednesday 03 March
2026, 18:02"), and a small model copies it into its reply ("the forecast says it will be grey
on Wednesday 03 March 2026 at 18:02 UTC"). A sentence of the bot's that carries the clock time
of its own turn (`snapshot_clocks`: the minutes from the person's message to the reply, in the
owner's time zone and UTC) which the person did not say is the snapshot echoed, and is left
out too (`without_snapshot`), as is a sentence that repeats the snapshot's own wording
(`SNAPSHOT_WORDING`: "current local time", "last wrote") which the person did not say: "What
would you like to know about current local time?" made a summary's topic "the current local
time" (`bench.truth`).
Imports `core`, `extractive` and the transcript repository only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from strata.core.snapshot_words import WORDING
from strata.core.types import WORDS_CALL_PREFIX, Role, RowKind, TranscriptRow
from strata.memory.rules.extractive import end_sentences
from strata.memory.store.transcript import TranscriptRepo

# A reply is seldom stored more than this long after the message it answers (a slow model).
SNAPSHOT_MINUTES = 10
# The fixed words of the snapshot's lines, as `strata.bot.ambient` writes them.
SNAPSHOT_WORDING = WORDING


def _read_by_code(row: TranscriptRow) -> bool:
    """Whether a tool-call row holds calls, every one read from words by code."""
    try:
        calls = json.loads(row.content)
    except ValueError:
        return False
    ids = [c.get("id") for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
    return bool(ids) and len(ids) == len(calls) and all(
        isinstance(i, str) and i.startswith(WORDS_CALL_PREFIX) for i in ids)


def written_by_code(rows: Iterable[TranscriptRow]) -> frozenset[int]:
    """Ids of the bot's message rows among `rows` written by code: in a turn whose tool-call
    rows (among `rows`) are all read from words, and with no tool call by a model."""
    rows = list(rows)
    calls: dict[str, list[bool]] = {}
    for r in rows:
        if r.kind is RowKind.TOOL_CALL:
            calls.setdefault(r.turn_id, []).append(_read_by_code(r))
    by_code = {turn for turn, marks in calls.items() if marks and all(marks)}
    return frozenset(r.id for r in rows if r.kind is RowKind.MESSAGE
                     and r.role is Role.ASSISTANT and r.turn_id in by_code)


async def code_written(transcript: TranscriptRepo, rows: Sequence[TranscriptRow]
                       ) -> frozenset[int]:
    """`written_by_code` for a window's message rows, their turns' tool rows read from the
    transcript (a window holds message rows only)."""
    turns = sorted({r.turn_id for r in rows if r.role is Role.ASSISTANT})
    turn_rows: list[TranscriptRow] = []
    for turn in turns:
        turn_rows += [r for r in await transcript.by_turn(turn)
                      if r.channel_id == rows[0].channel_id]
    return written_by_code(turn_rows)


def _zones(tz: str) -> list[ZoneInfo]:
    try:
        return [ZoneInfo(tz), ZoneInfo("UTC")]
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return [ZoneInfo("UTC")]


def snapshot_clocks(rows: Sequence[TranscriptRow], tz: str) -> dict[str, frozenset[str]]:
    """Per turn, the clock times ("18:02", "6:02 pm" is read as "6:02") the prompt's snapshot
    could have shown: each minute from the turn's first row to its reply, local and UTC."""
    first: dict[str, TranscriptRow] = {}
    last: dict[str, TranscriptRow] = {}
    for r in rows:
        first.setdefault(r.turn_id, r)
        last[r.turn_id] = r
    out: dict[str, frozenset[str]] = {}
    for turn, start in first.items():
        span = min(int((last[turn].ts - start.ts).total_seconds() // 60), SNAPSHOT_MINUTES)
        times = set()
        for minute in range(span + 1):
            for zone in _zones(tz):
                at = (start.ts + timedelta(minutes=minute)).astimezone(zone)
                times |= {f"{at:%H:%M}", f"{at.hour % 12 or 12}:{at:%M}"}
        out[turn] = frozenset(times)
    return out


def without_snapshot(text: str, clocks: Iterable[str], said: str) -> str:
    """`text` without its sentences that carry one of `clocks`, or the snapshot's wording,
    not in `said` (the person's own words)."""
    echoed = [c for c in clocks if not re.search(rf"(?<![\d:]){c}(?!\d)", said)]
    wording = {m.group(0).lower() for m in SNAPSHOT_WORDING.finditer(text)
               if m.group(0).lower() not in said.lower()}
    if not echoed and not wording:
        return text
    pattern = re.compile(r"(?<![\d:])(?:" + "|".join(map(re.escape, echoed)) + r")(?!\d)"
                         if echoed else r"(?!)")

    def copied(sentence: str) -> bool:
        return bool(pattern.search(sentence)) or any(
            m.group(0).lower() in wording for m in SNAPSHOT_WORDING.finditer(sentence))

    return " ".join(s for s in end_sentences(text) if not copied(s))


async def summary_rows(transcript: TranscriptRepo, rows: Sequence[TranscriptRow], tz: str
                       ) -> list[TranscriptRow]:
    """A window's rows as a summary may read them: replies written by code left out, and the
    snapshot's sentences left out of the model's replies (a reply left empty goes too)."""
    code = await code_written(transcript, rows)
    clocks = snapshot_clocks(rows, tz)
    said = "\n".join(r.content for r in rows if r.role is Role.USER)
    out = []
    for r in rows:
        if r.id in code:
            continue
        if r.role is Role.ASSISTANT:
            r = replace(r, content=without_snapshot(r.content, clocks.get(r.turn_id, ()), said))
        if r.content.strip():
            out.append(r)
    return out
