"""Episode cutting: a channel's transcript since its cursor → windows → leaf episodes.

A window closes when it holds `window_turns` turns, or when the next message comes after a
pause of `pause_minutes`; the newest window stays open until one of those happens (or until
`flush`). Each closed window becomes one leaf episode. `EpisodeWindows` reads the closed
windows (`closed`) and stores each episode (`store`): its citations (the window's message
rows), its embedding and the channel cursor in one transaction. The episode's text is the
model's, asked by its writer (`strata.bot.writers.episodes`) and let in only through
`accept` (validated, grounded), or the window's own text (`extractive`).

Only sources whose profile has `episodes` on produce episodes, and nothing a paused person
said does; their rows are passed over (the cursor moves on). Imports no model.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from strata.core.ports import Embedder
from strata.core.types import Role, RowKind, TranscriptRow
from strata.memory.checks import grounding
from strata.memory.lifecycle.code_lines import summary_rows
from strata.memory.lifecycle.episode_answer import parse
from strata.memory.lifecycle.episode_draft import Draft, extractive_draft
from strata.memory.rules.profiles import profile_for
from strata.memory.store.episode_cuts import EpisodeCuts
from strata.memory.store.episodes import LEAF, NewEpisode
from strata.memory.store.persons import PersonRepo
from strata.memory.store.transcript import TranscriptRepo

log = logging.getLogger(__name__)

PAGE_ROWS = 1000


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
class CutChannel:
    id: int
    owner_id: int
    source: str
    paused: bool


@dataclass(frozen=True, slots=True)
class ClosedWindow:
    """A closed window of a channel to store as one episode; `cursor` is where the channel's
    episode cursor stands before it (the store moves it past the window, or fails)."""

    channel: CutChannel
    window: Window
    cursor: int


@dataclass
class EpisodeWindows:
    """A database's closed conversation windows and their episodes (memory's side of the
    episode cutter, `strata.bot.writers.episodes.EpisodeCutter`)."""

    cuts: EpisodeCuts
    embedder: Embedder
    settings: CutSettings
    transcript: TranscriptRepo
    persons: PersonRepo

    async def pending(self) -> list[int]:
        """The channels with rows after their episode cursor."""
        return await self.cuts.pending()

    async def last_row(self, channel_id: int, turn_id: str) -> int | None:
        """The id of the turn's last row in the channel (what that turn completed)."""
        return await self.cuts.last_row(channel_id, turn_id)

    async def _channel(self, channel_id: int) -> CutChannel | None:
        row = await self.cuts.channel(channel_id)
        return None if row is None else CutChannel(*row)

    async def _page(self, channel_id: int, cursor: int, until: datetime | None,
                    upto_row_id: int | None) -> tuple[list[TranscriptRow], bool]:
        """The rows after `cursor` that are not for later (after `until` or `upto_row_id`),
        and whether more pages follow (only when the page is full and none was for later)."""
        page = await self.transcript.for_channel(channel_id, after_id=cursor, limit=PAGE_ROWS)
        later = [i for i, r in enumerate(page)
                 if (until is not None and r.ts > until)
                 or (upto_row_id is not None and r.id > upto_row_id)]
        more_pages = len(page) == PAGE_ROWS and not later
        return (page[: later[0]] if later else page), more_pages

    def _windows(self, rows: list[TranscriptRow], now: datetime, flush: bool,
                 more_pages: bool) -> list[Window]:
        pause = timedelta(minutes=self.settings.pause_minutes)
        windows = cut_windows(rows, window_turns=self.settings.window_turns, pause=pause,
                              now=now, flush=flush, more_follow=more_pages)
        if not windows and more_pages:
            # One window longer than a page (a pathological turn): close it anyway.
            windows = cut_windows(rows, window_turns=self.settings.window_turns, pause=pause,
                                  now=now, flush=True)
        return windows

    async def closed(self, channel_id: int, now: datetime, *, flush: bool = False,
                     until: datetime | None = None,
                     upto_row_id: int | None = None) -> AsyncGenerator[ClosedWindow, None]:
        """The channel's closed windows, in order; each must be stored (`store`) before the
        next is asked for. Windows without content, and channels (or paused persons' turns)
        that make no episodes, are passed over here. Raises `CursorMoved` when another cutter
        moved the channel's cursor first."""
        channel = await self._channel(channel_id)
        if channel is None:
            return
        produces = profile_for(channel.source).episodes and not channel.paused
        while True:
            cursor = await self.cuts.cursor(channel_id)
            page, more_pages = await self._page(channel_id, cursor, until, upto_row_id)
            if not page:
                return
            if not produces:
                await self._advance(channel_id, cursor, page[-1].id)
            else:
                rows = await self._drop_paused(page)
                for window in self._windows(rows, now, flush, more_pages):
                    if window.rows:
                        yield ClosedWindow(channel, window, cursor)
                    else:
                        await self._advance(channel_id, cursor, window.last_row_id)
                    cursor = window.last_row_id
            if not more_pages:
                return

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
        await self.cuts.advance(channel_id, expected, to)

    async def _names(self, rows: Sequence[TranscriptRow]) -> dict[int, str]:
        return await self.cuts.names(sorted({r.person_id for r in rows
                                              if r.person_id is not None}))

    async def lines(self, rows: Sequence[TranscriptRow]) -> list[tuple[str, str]]:
        """The window as (speaker, text) lines. Code's wording in the bot's lines (a tool's
        confirmation, the prompt's snapshot copied) is left out: it is no source for what
        was said (`code_lines`)."""
        owner = await self.persons.get(rows[0].owner_id)
        kept = await summary_rows(self.transcript, rows, owner.timezone if owner else "UTC")
        names = await self._names(kept or rows)
        return [(self.settings.assistant_name if r.role is Role.ASSISTANT
                 else names.get(r.person_id or 0, "someone"), r.content) for r in kept or rows]

    @staticmethod
    def extractive(lines: Sequence[tuple[str, str]], rows: Sequence[TranscriptRow]) -> Draft:
        """The episode text without a model: the window's own lines."""
        return extractive_draft(lines, rows)

    async def accept(self, owner_id: int, answer: str, lines: Sequence[tuple[str, str]],
                     prompt: Iterable[str], now: datetime) -> Draft:
        """The model's episode text, let in only when it validates and the grounding rule
        passes it against the window's `lines`; else `ValueError` (a refusal is counted)."""
        parsed = parse(answer)
        # A window is short: its summary keeps half its words from it (the embedded 0.5B
        # model's "energetic pharmacist ... her passion" kept four in eleven).
        refusal = grounding.check_summary(
            parsed.summary, [f"{who}: {text}" for who, text in lines], layer=grounding.EPISODES,
            prompt=prompt, speakers=grounding.by_speaker(lines), share=grounding.CLAIM_SHARE)
        if refusal is not None:
            await self.cuts.record_refusals(owner_id, [refusal], now)
            # The summary itself only at DEBUG (log_refusal): INFO and above carry no words.
            raise ValueError(f"the summary was refused ({refusal.reason})")
        return Draft(summary=parsed.summary, salience=parsed.salience,
                     emotion=parsed.emotion.label.lower(),
                     emotion_intensity=parsed.emotion.intensity,
                     key_terms=tuple(parsed.key_terms), method="llm")

    async def store(self, closed: ClosedWindow, draft: Draft, now: datetime) -> int:
        """Store the window's episode (text from `accept` or `extractive`) and move the
        cursor past it in one transaction; return the episode id."""
        channel, window = closed.channel, closed.window
        # The embedding is computed before the write transaction: the writer is never held
        # while waiting on a model. An embedding failure leaves the window for a later run.
        vector = (await self.embedder.embed([draft.summary]))[0]
        new = NewEpisode(
            owner_id=channel.owner_id,
            channel_id=channel.id,
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
        episode_id = await self.cuts.add_episode(new, vector, now, closed.cursor,
                                                  window.last_row_id)
        log.debug("channel %d: episode %d (%s, %d rows)", channel.id, episode_id,
                  draft.method, len(window.rows))
        return episode_id
