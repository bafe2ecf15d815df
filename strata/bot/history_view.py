"""The channel's history as the model is shown it, which is not all of what was said.

The stored transcript is append-only and complete; this only decides which of its messages a
turn's prompt carries as the conversation so far. Two kinds of the bot's own messages are
left out, with the person's message each answered, because a small model repeats what it
finds there as if it were true or its own style:

- **A reply written by code, not the model**: a request read from the person's words and
  done by its tool call ("remind me in 2 minutes to stretch" → "Reminder #1 set for …",
  `strata.bot.tools.WordsRequest`). The embedded 0.5B copied that confirmation's form into
  later replies and invented reminders with it. What the request did is not lost to the
  model: the ambient snapshot lists the upcoming reminders.
- **The bot's answer to the person's question about themselves** ("What is my job?" → "My
  job is to help people…"), where turn-zero recall runs: recall brings the person's own words
  for that question, and an earlier answer, right or wrong, is no evidence about the person
  (recall leaves the same pairs out: `strata.memory.rules.row_table.asks`). Kept where
  recall is off: then the history is all the model has.

Both are pairs: a person's message whose answer is left out goes with it, so the history
still alternates and the model does not answer an old message again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from strata.bot.tools import is_words_call
from strata.core.types import Role, RowKind, TranscriptRow
from strata.memory.rules.row_table import asks


def _code_written_turns(rows: Sequence[TranscriptRow]) -> set[str]:
    """The turns whose reply code wrote: their tool calls were read from the words."""
    turns = set()
    for r in rows:
        if r.kind is not RowKind.TOOL_CALL:
            continue
        try:
            calls = json.loads(r.content)
        except ValueError:
            continue
        ids = [c.get("id", "") for c in calls if isinstance(c, dict)] \
            if isinstance(calls, list) else []
        if ids and all(isinstance(i, str) and is_words_call(i) for i in ids):
            turns.add(r.turn_id)
    return turns


def _messages(rows: Sequence[TranscriptRow]) -> list[TranscriptRow]:
    return [r for r in rows if r.kind is RowKind.MESSAGE and r.role in (Role.USER, Role.ASSISTANT)]


def model_history(rows: Sequence[TranscriptRow], *, recall_on: bool) -> list[TranscriptRow]:
    """`rows` (a channel's, in order, any kind) less what the model is not shown (above).
    Tool and other rows pass through untouched (the prompt's budget skips them)."""
    code_turns = _code_written_turns(rows)
    messages = _messages(rows)
    dropped: set[int] = set()
    for i, r in enumerate(messages):
        if r.role is not Role.ASSISTANT or i == 0:
            continue
        before = messages[i - 1]
        if before.role is not Role.USER:
            continue
        if r.turn_id in code_turns or (recall_on and asks("user", before.content)):
            dropped |= {r.id, before.id}
    # A code-written reply with no person's line before it in the history (cut by the
    # watermark) still goes.
    dropped |= {r.id for r in messages if r.role is Role.ASSISTANT and r.turn_id in code_turns}
    return [r for r in rows if r.id not in dropped]
