"""Episode summaries' model work: the episode cutter. Memory reads a channel's closed
windows and stores their episodes (`strata.memory.lifecycle.episode_cut.EpisodeWindows`); here
each window's text is asked of the model (`strata.bot.writers.prompts.episode_summary`, a JSON
schema) and handed to memory's `accept`, which validates and grounds it. A malformed, failed or
refused answer is asked once more, then the window's own text is stored as an extractive
episode, so no window is ever skipped.

Runs after the turn, off the hot path (`EpisodeCutter` is an `AfterTurn` hook, with the model
charged to the memory owner) and from background jobs (`cut_all`, `flush`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from strata.bot.writers.prompts import episode_summary
from strata.core.errors import ModelError
from strata.core.ports import ChatModel, Clock
from strata.core.retry import RetryPolicy
from strata.core.types import Channel, ChatMessage, Person, TranscriptRow
from strata.memory.lifecycle.episode_cut import CutSettings, EpisodeWindows
from strata.memory.lifecycle.episode_draft import Draft
from strata.memory.store.episode_cuts import CursorMoved

log = logging.getLogger(__name__)

SUMMARY_MAX_TOKENS = 500
# A junk or ungrounded summary is asked for once more at once (the client retried the endpoint).
SUMMARY_RETRY = RetryPolicy(retryable=lambda e: isinstance(e, ModelError | ValueError),
                            what="episode summary", attempts=2, base=0.0, log_level=logging.WARNING)


@dataclass
class EpisodeCutter:
    """Cuts channels into leaf episodes. Also an `AfterTurn` hook."""

    windows: EpisodeWindows  # memory's side: the closed windows and their episodes
    clock: Clock
    chat: ChatModel | None = None
    # The model for one memory owner's summaries (metered for that owner); `chat` otherwise.
    chat_for: Callable[[int], ChatModel] | None = field(default=None, kw_only=True)
    _locks: dict[int, asyncio.Lock] = field(default_factory=dict, init=False)

    @property
    def settings(self) -> CutSettings:
        return self.windows.settings

    # -- entry points ----------------------------------------------------------------------

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None:
        """After a turn: cut what that turn completed (never rows of a later, running turn)."""
        upto = await self.windows.last_row(channel.id, turn_id)
        await self.cut(channel.id, self.clock.now(), upto_row_id=upto)

    async def flush(self, channel_id: int, until: datetime) -> list[int]:
        """Close every window of rows up to `until`, including the open one; return new ids."""
        return await self.cut(channel_id, until, flush=True, until=until)

    async def cut_all(self, now: datetime, *, flush: bool = False) -> list[int]:
        """Cut every channel with rows after its cursor (background jobs, the eval)."""
        made: list[int] = []
        for channel_id in await self.windows.pending():
            made += await self.cut(channel_id, now, flush=flush, until=now if flush else None)
        return made

    async def cut(
        self,
        channel_id: int,
        now: datetime,
        *,
        flush: bool = False,
        until: datetime | None = None,
        upto_row_id: int | None = None,
    ) -> list[int]:
        """Turn the channel's closed windows into episodes; return the new episode ids.

        `until`: rows after this time are left for later; `upto_row_id`: likewise for rows
        after this id. `flush` closes the trailing window too.
        """
        made: list[int] = []
        async with self._locks.setdefault(channel_id, asyncio.Lock()):
            try:
                async with contextlib.aclosing(self.windows.closed(
                        channel_id, now, flush=flush, until=until,
                        upto_row_id=upto_row_id)) as closed:
                    async for window in closed:
                        draft = await self.draft(window.window.rows)
                        made.append(await self.windows.store(window, draft, now))
            except CursorMoved:
                log.info("channel %d: another cutter moved the episode cursor", channel_id)
                return []
        return made

    # -- the episode text ------------------------------------------------------------------

    async def draft(self, rows: Sequence[TranscriptRow]) -> Draft:
        """The episode text for a window: the model's validated, grounded JSON, asked once
        more when unusable, else extractive."""
        lines = await self.windows.lines(rows)
        if not self.settings.use_model or self.chat is None:
            return self.windows.extractive(lines, rows)
        chat = self.chat_for(rows[0].owner_id) if self.chat_for else self.chat
        messages = episode_summary.build_messages(lines)
        try:
            return await SUMMARY_RETRY.call(
                lambda: self._ask(chat, messages, lines, rows[0].owner_id))
        except (ModelError, ValueError) as exc:
            log.warning("episode summary failed twice (%s); the extractive one is kept", exc)
            return self.windows.extractive(lines, rows)

    async def _ask(self, chat: ChatModel, messages: Sequence[ChatMessage],
                   lines: Sequence[tuple[str, str]], owner_id: int) -> Draft:
        """One ask for the summary, let in by memory's `accept` (or `ValueError`)."""
        answer = await chat.complete(messages, schema=episode_summary.EpisodeSummary,
                                     max_tokens=SUMMARY_MAX_TOKENS, model=self.settings.model)
        return await self.windows.accept(owner_id, answer.text, lines, [episode_summary.SYSTEM],
                                         self.clock.now())
