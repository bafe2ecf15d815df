"""Episode cutting: a channel's transcript since its cursor → windows → leaf episodes.

A window closes when it holds `window_turns` turns, or when the next message comes after a
pause of `pause_minutes`; the newest window stays open until one of those happens (or until
`flush`). Each closed window becomes one leaf episode: the model writes a validated JSON
summary (strata/memory/domain/prompts/episode_summary.py); a malformed or failed answer is retried
once, then the window's own text is stored as an extractive episode, so no window is ever skipped.
The episode, its citations (the window's message rows), its embedding and the channel cursor
are written in one transaction.

Only sources whose profile has `episodes` on produce episodes, and nothing a paused person
said does; their rows are passed over (the cursor moves on). Runs after the turn, off the hot
path (`EpisodeCutter` is an `AfterTurn` hook) and from background jobs (`cut_all`, `flush`).
Imports `bot` leaf modules and `memory`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from strata.core.errors import ModelError
from strata.core.ports import ChatModel, Clock, Embedder
from strata.core.retry import RetryPolicy
from strata.core.types import Channel, ChatMessage, Person, Role, RowKind, TranscriptRow
from strata.memory.checks import grounding
from strata.memory.coordination.cursors import move_cursor, pending_channels, read_cursor
from strata.memory.domain.prompts import episode_summary
from strata.memory.engines.db import Database, placeholders
from strata.memory.lifecycle.code_lines import summary_rows
from strata.memory.lifecycle.episode_draft import Draft, extractive_draft
from strata.memory.rules.profiles import profile_for
from strata.memory.store.episodes import LEAF, NewEpisode, insert_episode
from strata.memory.store.persons import PersonRepo
from strata.memory.store.refusals import RefusalRepo
from strata.memory.store.transcript import TranscriptRepo

log = logging.getLogger(__name__)

PAGE_ROWS = 1000
SUMMARY_MAX_TOKENS = 500
# A junk or ungrounded summary is asked for once more at once (the client retried the endpoint).
SUMMARY_RETRY = RetryPolicy(retryable=lambda e: isinstance(e, ModelError | ValueError),
                            what="episode summary", attempts=2, base=0.0, log_level=logging.WARNING)


@dataclass(frozen=True, slots=True)
class CutSettings:
    """How windows are cut and summarised (built from `EpisodeSettings` by the app)."""

    window_turns: int = 12
    pause_minutes: float = 30.0
    use_model: bool = True
    assistant_name: str = "Strata"
    model: str | None = None


@dataclass(frozen=True, slots=True)
class Window:
    """Message rows that become one episode; `last_row_id` is the cursor after the window
    (it also passes over rows that are not part of any episode: tool rows, compactions)."""

    rows: tuple[TranscriptRow, ...]
    last_row_id: int


def _is_content(row: TranscriptRow) -> bool:
    return row.kind is RowKind.MESSAGE and row.role in (Role.USER, Role.ASSISTANT)


def cut_windows(
    rows: Sequence[TranscriptRow],
    *,
    window_turns: int,
    pause: timedelta,
    now: datetime,
    flush: bool = False,
    more_follow: bool = False,
) -> list[Window]:
    """Split `rows` (a channel's rows after its cursor, in id order) into closed windows.

    A window closes when it has `window_turns` turns and the next message belongs to a new
    turn, or when the next message comes more than `pause` after the window's last message.
    The trailing window closes if it is full, if `now` is a pause after its last message, or
    if `flush`; otherwise it stays open (not returned). `more_follow` says rows beyond `rows`
    exist, so the trailing window is never closed here. Pure function.
    """
    windows: list[Window] = []
    current: list[TranscriptRow] = []
    turns: set[str] = set()
    last_seen = 0  # the id of the last row looked at, content or not

    def close(upto: int) -> None:
        windows.append(Window(tuple(current), upto))
        current.clear()
        turns.clear()

    for row in rows:
        if _is_content(row) and current:
            gap = row.ts - current[-1].ts
            if gap > pause or (len(turns) >= window_turns and row.turn_id not in turns):
                close(last_seen)
        if _is_content(row):
            current.append(row)
            turns.add(row.turn_id)
        last_seen = row.id
    if not rows or more_follow:
        return windows
    if current:
        idle = now - current[-1].ts >= pause
        if flush or idle or len(turns) >= window_turns:
            close(last_seen)
    elif last_seen:
        # Only rows that never become episodes are left: pass over them.
        windows.append(Window((), last_seen))
    return windows


@dataclass(frozen=True, slots=True)
class _ChannelInfo:
    id: int
    owner_id: int
    source: str
    paused: bool


class _CursorMoved(Exception):
    """Another cutter advanced this channel's cursor first; this run stops."""


@dataclass
class EpisodeCutter:
    """Cuts channels into leaf episodes. Also an `AfterTurn` hook."""

    db: Database
    embedder: Embedder
    clock: Clock
    chat: ChatModel | None = None
    settings: CutSettings = CutSettings()
    transcript: TranscriptRepo = field(kw_only=True)
    persons: PersonRepo = field(kw_only=True)
    # The model for one memory owner's summaries (metered for that owner); `chat` otherwise.
    chat_for: Callable[[int], ChatModel] | None = field(default=None, kw_only=True)
    _locks: dict[int, asyncio.Lock] = field(default_factory=dict, init=False)

    # -- entry points ----------------------------------------------------------------------

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None:
        """After a turn: cut what that turn completed (never rows of a later, running turn)."""
        upto = await self.db.fetchval(
            "SELECT max(id) FROM transcript WHERE turn_id = ? AND channel_id = ?",
            (turn_id, channel.id),
        )
        await self.cut(channel.id, self.clock.now(), upto_row_id=upto)

    async def flush(self, channel_id: int, until: datetime) -> list[int]:
        """Close every window of rows up to `until`, including the open one; return new ids."""
        return await self.cut(channel_id, until, flush=True, until=until)

    async def cut_all(self, now: datetime, *, flush: bool = False) -> list[int]:
        """Cut every channel with rows after its cursor (background jobs, the eval)."""
        made: list[int] = []
        for channel_id in await pending_channels(self.db, "episode_cursors"):
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
        lock = self._locks.setdefault(channel_id, asyncio.Lock())
        async with lock:
            try:
                return await self._cut_locked(channel_id, now, flush, until, upto_row_id)
            except _CursorMoved:
                log.info("channel %d: another cutter moved the episode cursor", channel_id)
                return []

    # -- internals -------------------------------------------------------------------------

    async def _cut_locked(
        self,
        channel_id: int,
        now: datetime,
        flush: bool,
        until: datetime | None,
        upto_row_id: int | None,
    ) -> list[int]:
        row = await self.db.fetchone(
            "SELECT c.id, c.owner_id, c.source, p.paused FROM channels c"
            " JOIN persons p ON p.id = c.owner_id WHERE c.id = ?",
            (channel_id,),
        )
        if row is None:
            return []
        channel = _ChannelInfo(row["id"], row["owner_id"], row["source"], bool(row["paused"]))
        produces = profile_for(channel.source).episodes and not channel.paused
        pause = timedelta(minutes=self.settings.pause_minutes)
        made: list[int] = []
        while True:
            cursor = await read_cursor(self.db, "episode_cursors", channel_id)
            page = await self.transcript.for_channel(channel_id, after_id=cursor, limit=PAGE_ROWS)
            later = [
                i
                for i, r in enumerate(page)
                if (until is not None and r.ts > until)
                or (upto_row_id is not None and r.id > upto_row_id)
            ]
            # More pages only when the page is full and nothing in it is "for later".
            more_pages = len(page) == PAGE_ROWS and not later
            if later:
                page = page[: later[0]]
            if not page:
                return made
            if not produces:
                await self._advance(channel_id, cursor, page[-1].id)
            else:
                rows = await self._drop_paused(page)
                windows = cut_windows(rows, window_turns=self.settings.window_turns,
                                      pause=pause, now=now, flush=flush, more_follow=more_pages)
                if not windows and more_pages:
                    # One window longer than a page (a pathological turn): close it anyway.
                    windows = cut_windows(rows, window_turns=self.settings.window_turns,
                                          pause=pause, now=now, flush=True)
                for window in windows:
                    episode_id = await self._store(channel, window, cursor, now)
                    cursor = window.last_row_id
                    if episode_id is not None:
                        made.append(episode_id)
            if not more_pages:
                return made

    async def _drop_paused(self, rows: list[TranscriptRow]) -> list[TranscriptRow]:
        """Rows minus every turn started by a paused person (shared rooms mix people)."""
        paused = await self.persons.paused_among(r.person_id for r in rows)
        if not paused:
            return rows
        muted_turns = {r.turn_id for r in rows if r.person_id in paused}
        # Keep the tail's ids visible to the windowing (so the cursor passes over them) by
        # keeping non-content rows; drop only the paused turns' messages.
        return [r for r in rows if r.turn_id not in muted_turns or not _is_content(r)]

    async def _advance(self, channel_id: int, expected: int, to: int) -> None:
        async with self.db.write() as conn:
            if not await move_cursor(conn, "episode_cursors", channel_id, expected, to):
                raise _CursorMoved

    async def _names(self, rows: Sequence[TranscriptRow]) -> dict[int, str]:
        ids = sorted({r.person_id for r in rows if r.person_id is not None})
        if not ids:
            return {}
        marks = placeholders(ids)
        found = await self.db.fetchall(f"SELECT id, name FROM persons WHERE id IN ({marks})", ids)
        return {r[0]: r[1] for r in found}

    async def _lines(self, rows: Sequence[TranscriptRow]) -> list[tuple[str, str]]:
        names = await self._names(rows)
        out = []
        for r in rows:
            if r.role is Role.ASSISTANT:
                speaker = self.settings.assistant_name
            else:
                speaker = names.get(r.person_id or 0, "someone")
            out.append((speaker, r.content))
        return out

    async def draft(self, rows: Sequence[TranscriptRow]) -> Draft:
        """The episode text for a window: the model's validated JSON, retried once, else
        extractive. Code's wording in the bot's lines (a tool's confirmation, the prompt's
        snapshot copied) is left out of both: it is no source for what was said
        (`code_lines`)."""
        owner = await self.persons.get(rows[0].owner_id)
        kept = await summary_rows(self.transcript, rows, owner.timezone if owner else "UTC")
        lines = await self._lines(kept or rows)
        if not self.settings.use_model or self.chat is None:
            return extractive_draft(lines, rows)
        chat = self.chat_for(rows[0].owner_id) if self.chat_for else self.chat
        messages = episode_summary.build_messages(lines)
        try:
            parsed = await SUMMARY_RETRY.call(
                lambda: self._summary(chat, messages, lines, rows[0].owner_id))
        except (ModelError, ValueError) as exc:
            log.warning("episode summary failed twice (%s); the extractive one is kept", exc)
            return extractive_draft(lines, rows)
        return Draft(
            summary=parsed.summary,
            salience=parsed.salience,
            emotion=parsed.emotion.label.lower(),
            emotion_intensity=parsed.emotion.intensity,
            key_terms=tuple(parsed.key_terms),
            method="llm",
        )

    async def _summary(self, chat: ChatModel, messages: Sequence[ChatMessage],
                       lines: Sequence[tuple[str, str]],
                       owner_id: int) -> episode_summary.EpisodeSummary:
        """One ask for the summary: the model's JSON, validated and about the conversation."""
        answer = await chat.complete(messages, schema=episode_summary.EpisodeSummary,
                                     max_tokens=SUMMARY_MAX_TOKENS, model=self.settings.model)
        parsed = episode_summary.parse(answer.text)
        # A window is short: its summary keeps half its words from it (the embedded 0.5B
        # model's "energetic pharmacist ... her passion" kept four in eleven).
        refusal = grounding.check_summary(
            parsed.summary, [f"{who}: {text}" for who, text in lines], layer=grounding.EPISODES,
            prompt=[episode_summary.SYSTEM], speakers=grounding.by_speaker(lines),
            share=grounding.CLAIM_SHARE)
        if refusal is not None:
            await RefusalRepo(self.db).record(owner_id, [refusal], self.clock.now())
            # The summary itself only at DEBUG (log_refusal): INFO and above carry no words.
            raise ValueError(f"the summary was refused ({refusal.reason})")
        return parsed

    async def _store(self, channel: _ChannelInfo, window: Window, cursor: int,
                     now: datetime) -> int | None:
        channel_id = channel.id
        if not window.rows:
            await self._advance(channel_id, cursor, window.last_row_id)
            return None
        draft = await self.draft(window.rows)
        # The embedding is computed before the write transaction: the writer is never held
        # while waiting on a model. An embedding failure leaves the window for a later run.
        vector = (await self.embedder.embed([draft.summary]))[0]
        new = NewEpisode(
            owner_id=channel.owner_id,
            channel_id=channel_id,
            summary=draft.summary,
            source=channel.source,
            started_at=window.rows[0].ts,
            ended_at=window.rows[-1].ts,
            row_ids=tuple(r.id for r in window.rows),
            level=LEAF,
            key_terms=", ".join(draft.key_terms),
            salience=draft.salience,
            emotion=draft.emotion,
            emotion_intensity=draft.emotion_intensity,
            method=draft.method,
        )
        async with self.db.write() as conn:
            if not await move_cursor(conn, "episode_cursors", channel_id, cursor,
                                     window.last_row_id):
                raise _CursorMoved
            episode_id = await insert_episode(conn, new, vector, now, self.db.dim)
        log.debug("channel %d: episode %d (%s, %d rows)", channel_id, episode_id,
                  draft.method, len(window.rows))
        return episode_id
