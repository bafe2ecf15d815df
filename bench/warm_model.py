"""Time to first token of one conversation's turns with the embedded model (`strata.bot.embedded`).

A conversation as `strata.bot.turns` prompts it (`strata.bot.prompt.build_messages`): the default
persona, a portrait and a continuity summary, a history that already fills its budget, and per turn
an ambient line and a recalled-memory block. Turn 1 finds the server's prompt cache empty; each
following turn sends the same stable prefix again (llama.cpp keeps the last prompt of its slot
and re-reads only what follows the common prefix), so it should start much sooner. The history
window moves in steps (`strata.bot.prompt`), not row by row, so the prefix stays byte-identical.

Needs the `local` extra with the default weights installed; `model_figures` says so instead
of measuring when they are not there.
"""

from __future__ import annotations

import asyncio
import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.perf import Figure
from strata.bot.embedded import EMBEDDED_CONTEXT, EmbeddedModels, runtime_installed
from strata.bot.llm import OpenAIChatModel
from strata.bot.prompt import PromptParts, build_messages
from strata.bot.weights import installed, open_weights, spec_named
from strata.core.config import Settings, default_db_path
from strata.core.types import Role, RowKind, TranscriptRow

TURNS = 3
HISTORY_TOKENS = 1200
REPLY_TOKENS = 8
PORTRAIT = (
    "Maya is a marine biologist in Lisbon who studies octopus behaviour at the aquarium. She "
    "cycles to work, is learning the cello, and has a beagle called Biscuit. She prefers short "
    "answers and dislikes small talk before coffee. Her sister Ines lives in Porto; they talk "
    "on Sundays. She is planning a research trip to Osaka in the spring and worries about the "
    "grant deadline in March."
)
CONTINUITY = (
    "Earlier you talked about her cello teacher, the aquarium's new tank, and a recipe for "
    "bacalhau that went wrong. She asked you to remind her about the grant deadline."
)
SAID = [
    "The octopus opened the jar again today, in under a minute.",
    "Cello practice was rough, my fingers still hurt from the new strings.",
    "Biscuit stole a sock and ran around the flat with it for ten minutes.",
    "The grant form wants a two-page summary, I have half a page so far.",
    "Ines called, she might visit next weekend if the trains are running.",
    "I cycled in the rain and arrived soaked, the lab towels saved me.",
]
ASKED = ["What should I write first in the grant summary?",
         "Can you remind me what my sister said about the visit?",
         "Any idea for a quick dinner tonight?"]


def _history(n: int, start: datetime) -> list[TranscriptRow]:
    rows = []
    for i in range(n):
        role = Role.USER if i % 2 == 0 else Role.ASSISTANT
        text = SAID[(i // 2) % len(SAID)] if role is Role.USER else (
            f"That sounds like a lot, Maya. Noted ({i}): " + SAID[(i // 2) % len(SAID)].lower())
        rows.append(TranscriptRow(i + 1, 1, 1, 1 if role is Role.USER else None,
                                  start + timedelta(minutes=i), "user", role, RowKind.MESSAGE,
                                  text, f"t{i // 2}"))
    return rows


async def time_to_first_token(chat: OpenAIChatModel, parts: PromptParts) -> tuple[float, str]:
    """Seconds from the request to the first text delta, and the whole reply."""
    messages = build_messages(parts, history_tokens=HISTORY_TOKENS)
    started = time.perf_counter()
    first: float | None = None
    text = ""
    async for item in chat.stream(messages, max_tokens=REPLY_TOKENS):
        if isinstance(item, str):
            first = first if first is not None else time.perf_counter() - started
            text = item
    return (first if first is not None else time.perf_counter() - started), text


async def conversation(base_url: str, model: str, persona: str) -> list[float]:
    """Time to first token of each of `TURNS` turns of one conversation."""
    chat = OpenAIChatModel(base_url=base_url, model=model, api_key="none", timeout=600.0)
    start = datetime(2026, 3, 2, 9, tzinfo=UTC)
    rows = _history(60, start)  # more than the history budget holds: the window is full
    out = []
    try:
        for turn in range(TURNS):
            now = start + timedelta(hours=2, minutes=turn)
            parts = PromptParts(
                persona=persona, message=ASKED[turn % len(ASKED)], history=rows,
                portrait=PORTRAIT, continuity=CONTINUITY,
                ambient=f"It is {now:%A %d %B %Y, %H:%M} for them.",
                recalled=f"- 2026-02-{10 + turn}, private chat on console:\n  > {SAID[turn]}")
            seconds, reply = await time_to_first_token(chat, parts)
            out.append(seconds)
            n = len(rows)
            rows = [*rows,
                    TranscriptRow(n + 1, 1, 1, 1, now, "user", Role.USER, RowKind.MESSAGE,
                                  parts.message, f"u{turn}"),
                    TranscriptRow(n + 2, 1, 1, None, now, "user", Role.ASSISTANT,
                                  RowKind.MESSAGE, reply or "ok", f"u{turn}")]
    finally:
        await chat.close()
    return out


async def model_figures(settings: Settings) -> tuple[list[Figure], dict[str, Any]]:
    """The figures `python -m bench.perf` reports for the embedded model (none without it)."""
    spec = spec_named(settings.llm.embedded_model)
    cache = default_db_path(os.environ).parent / "models"
    if not runtime_installed() or not installed(spec):
        return [], {"skipped": "the local extra or the default weights are not installed"}
    models = EmbeddedModels()
    gguf = models.hold(open_weights(spec, cache))
    try:
        end = await asyncio.to_thread(models.start_chat, gguf, EMBEDDED_CONTEXT)
        ttft = await conversation(end.base_url, end.model, settings.bot.persona)
    finally:
        models.close()
    first, later = ttft[0], max(ttft[1:])
    figures = [
        Figure("model_first_token_turn1_s", round(first, 3), None, "s", None),
        # The floor of a later turn is the first turn itself: no cache at all.
        Figure("model_first_token_later_s", round(later, 3), round(first, 3), "s",
               round(first / 3, 3)),
    ]
    return figures, {"model": spec.name, "turns_s": [round(t, 3) for t in ttft],
                     "history_tokens": HISTORY_TOKENS}
