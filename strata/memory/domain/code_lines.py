"""Which of the bot's lines in a transcript were written by code, not by a model: the reply of
a turn whose only tool calls were read from the person's words (a reminder asked in set words:
"Reminder #1 set for Tuesday 10:02: stretch. /reminders lists your reminders."). Such a line
is a tool's confirmation, in the code's wording; a summary must not take it for what was said
(a small model echoed "reminders lists" and turned "in 2 minutes" into "every 2 minutes").

The mark is the tool call's id (`WORDS_CALL_PREFIX`), recorded in the turn's tool-call row by
the words reader: rows carry no other sign of who wrote them. A code-written reply with no tool
call (the words reader asking "what should I remind you of?") has no such row and is not found.
Imports `core` and the transcript repository only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from strata.core.types import WORDS_CALL_PREFIX, Role, RowKind, TranscriptRow
from strata.memory.domain.transcript import TranscriptRepo


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
