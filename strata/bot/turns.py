"""The one turn processor: every turn (a person's, a reminder's, the DMN's) goes through here.

`TurnProcessor` coordinates; each step is a module of its own. Order (docs/architecture.md): resolve
person and channel, access control and chat commands (`strata.bot.access`); mark activity and
append the user row durably (`accept`: a platform that confirms messages on fetch calls it on
receipt, the rest of the turn, `answer`, waits for the chat's earlier turns; `handle` is both);
the model's part (`strata.bot.model_turn`: turn-zero recall and the prompt in
`strata.bot.turn_prompt`, the model call, streaming when the adapter can show it, bounded tool
calls, the reply and tool rows stored); return the reply to the adapter; after-turn work
(`strata.bot.after_turn`: episode cut, compaction) off the hot path. A failing model gives the
person a short honest message (`strata.bot.failures`); the user row stays. A chat turn has one
overall deadline (`llm.turn_deadline_seconds`) and a per-person rate (`strata.bot.limits`).
Background turns (`strata.bot.background`) take the same path. This module also keeps the
channel turns (one at a time per channel, across processes) and the queue of accepted turns.
May import `memory`; never `adapters` or `cognition`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pydantic import BaseModel

from strata.bot import access
from strata.bot.after_turn import AfterTurnTasks
from strata.bot.background import (
    BackgroundResult,
    background_channel,
    background_message,
    resume_or_store,
)
from strata.bot.commands import CommandRouter
from strata.bot.context_window import ContextWindow
from strata.bot.failures import deadline_message, model_error_message, rate_limited_message
from strata.bot.limits import CallLimiter
from strata.bot.model_turn import ModelTurn
from strata.bot.tools import ToolRegistry
from strata.bot.turn_options import TurnOptions
from strata.bot.turn_prompt import TurnPrompt
from strata.core.clock import SystemClock
from strata.core.config import Settings
from strata.core.errors import ModelError
from strata.core.ports import AfterTurn, ChatModel, Clock, ContextSource, PartialCallback, Recaller
from strata.core.types import (
    Accepted,
    Channel,
    InboundMessage,
    Location,
    NewRow,
    Person,
    Role,
    RowKind,
    TurnResult,
)
from strata.memory.coordination.leases import Leases
from strata.memory.domain.persons import ChannelRepo, PersonRepo
from strata.memory.domain.transcript import TranscriptRepo

log = logging.getLogger(__name__)

def process_name() -> str:
    """This process's name as a lease holder: host, pid and a random part (a pid is reused
    after a restart; the random part tells the two lives apart)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def holder_gone(holder: str) -> bool:
    """Whether lease holder `holder` (a `process_name`) is a process of this host that no
    longer runs: its leases need not be waited out (a restart after a crash answers at once).
    A holder on another host, or whose pid runs (perhaps reused), counts as alive."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists but is not ours to signal
        return False
    return False


async def take_lease(leases: Leases, name: str, holder: str, now: datetime,
                     ttl: timedelta) -> bool:
    """Take or renew lease `name`; also from a holder that died on this host."""
    if await leases.take(name, holder, now, ttl):
        return True
    old = await leases.holder(name, now)
    return old is not None and holder_gone(old) and await leases.take_over(
        name, old, holder, now, ttl)


# The channels whose turn the current task holds, so that a holder's nested `channel_turn`
# (the Telegram queue worker answering through `answer`) does not wait for itself.
_HELD: contextvars.ContextVar[frozenset[tuple[str, int]]] = contextvars.ContextVar(
    "strata_held_channels", default=frozenset())


@dataclass
class ChannelTurns:
    """One turn at a time per channel, across every process on the database.

    In a process an `asyncio.Lock` per channel queues the turns in arrival order; across
    processes the holder of the lock also holds the database lease `turn:<channel id>`
    (`strata.memory.coordination.leases`), renewed every third of `ttl` while the turn runs, so a
    process that dies mid-turn holds the channel for at most `ttl` more. Lease times are on `wall`,
    the real clock: a lease is about whether a process still lives, not about the bot's (perhaps
    simulated) time. Without `leases` (a test's bare processor) only the in-process lock is
    taken.
    """

    leases: Leases | None = None
    holder: str = field(default_factory=process_name)
    ttl: timedelta = timedelta(seconds=30)
    wall: Clock = field(default_factory=SystemClock)
    max_wait: float = 0.5  # seconds between attempts while another process holds the lease
    _locks: dict[int, asyncio.Lock] = field(default_factory=dict, init=False)

    @contextlib.asynccontextmanager
    async def hold(self, channel_id: int, *, wait: bool = True) -> AsyncIterator[bool]:
        """Hold the channel's turn for the body; yields False (and holds nothing) when `wait`
        is off and another task or process has it."""
        if (self.holder, channel_id) in _HELD.get():
            yield True
            return
        lock = self._locks.setdefault(channel_id, asyncio.Lock())
        if not wait and lock.locked():
            yield False
            return
        async with lock:
            if not await self._take(channel_id, wait):
                yield False
                return
            token = _HELD.set(_HELD.get() | {(self.holder, channel_id)})
            renew = asyncio.create_task(self._renew(channel_id))
            try:
                yield True
            finally:
                _HELD.reset(token)
                renew.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renew
                if self.leases is not None:
                    # Shielded: a turn cancelled at shutdown still frees its channel at once.
                    await asyncio.shield(self.leases.release(self.name(channel_id),
                                                             self.holder))

    @staticmethod
    def name(channel_id: int) -> str:
        return f"turn:{channel_id}"

    async def _take(self, channel_id: int, wait: bool) -> bool:
        if self.leases is None:
            return True
        pause = 0.02
        while not await take_lease(self.leases, self.name(channel_id), self.holder,
                                   self.wall.now(), self.ttl):
            if not wait:
                return False
            await asyncio.sleep(pause)  # another process answers this channel: try again
            pause = min(pause * 2, self.max_wait)
        return True

    async def _renew(self, channel_id: int) -> None:
        if self.leases is None:
            return
        while True:
            await asyncio.sleep(self.ttl.total_seconds() / 3)
            if not await self.leases.take(self.name(channel_id), self.holder, self.wall.now(),
                                          self.ttl):
                log.warning("channel %d: the turn lease was taken over (this process stalled "
                            "longer than %s)", channel_id, self.ttl)


@dataclass
class TurnProcessor:
    """Coordinates a turn: who it is from and whether to answer (`access`), the command or
    the model's reply (`model_turn`) in the channel's turn, and the work after it
    (`after_turn`). Background turns (`background`) go the same way."""

    settings: Settings
    persons: PersonRepo
    channels: ChannelRepo
    transcript: TranscriptRepo
    chat: ChatModel
    clock: Clock
    commands: CommandRouter = field(default_factory=CommandRouter)
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    recaller: Recaller | None = None
    context: ContextSource | None = None
    after_turn: list[AfterTurn] = field(default_factory=list)
    limiter: CallLimiter | None = None
    # The model for a person's or room's own turns, metered for that memory owner; background
    # turns use `chat` (a job charges them to its run's budget).
    chat_for: Callable[[int], ChatModel] | None = None
    # The model's context window, when known: every request is fitted to it.
    window: ContextWindow | None = None
    # One turn at a time per channel, across processes when it has the database's leases.
    turns: ChannelTurns = field(default_factory=ChannelTurns)
    # Told each answered turn's platform and result (the operators' metrics count them).
    on_result: Callable[[str, TurnResult], None] | None = None
    # Accepted turns not yet answered, per channel: their rows are kept out of the history of
    # the turns before them (the message goes last in its own turn's prompt, nowhere earlier).
    _queued: dict[int, set[str]] = field(default_factory=dict, init=False)
    _model: ModelTurn = field(init=False)
    _after_tasks: AfterTurnTasks = field(init=False)

    def __post_init__(self) -> None:
        if self.limiter is None:
            self.limiter = CallLimiter(self.settings.access.model_calls_per_minute, self.clock)
        prompt = TurnPrompt(self.settings, self.persons, self.transcript, self.tools,
                            self.context, self.recaller, self.window)
        self._model = ModelTurn(self.settings, prompt, self.tools, self.transcript, self.chat,
                                self.clock, self.chat_for, self.window)
        self._after_tasks = AfterTurnTasks(self.after_turn)

    # -- resolution ----------------------------------------------------------------------------

    async def resolve(self, msg: InboundMessage) -> tuple[Person, Channel]:
        """The sender (created on first sight) and the channel (created on first message)."""
        return await access.resolve(self.persons, self.channels, msg, self.clock.now())

    def allowed(self, msg: InboundMessage) -> bool:
        return access.allowed(self.settings.access, msg)

    # -- the turn --------------------------------------------------------------------------------

    async def handle(
        self, msg: InboundMessage, on_partial: PartialCallback | None = None
    ) -> TurnResult | None:
        """Process one inbound message; None when the bot should stay silent."""
        accepted = await self.accept(msg)
        if accepted is None:
            return None
        return await self.answer(accepted, on_partial)

    async def accept(self, msg: InboundMessage) -> Accepted | None:
        """Take `msg` in durably, before its turn: access control, command detection, and the
        user row appended (a command is never stored). None when there is nothing to answer:
        not allowed, or a redelivered message whose row is already stored and answered or
        queued. Non-addressed rows start their after-turn work here; `answer` stays silent."""
        if not self.allowed(msg):
            log.info("ignoring %s message from a user not on the allowlist", msg.platform)
            return None
        person, channel = await self.resolve(msg)
        found = self.commands.find(msg.text) if msg.addressed_to_bot else None
        if found is not None or (msg.addressed_to_bot and self.commands.unknown(msg.text)):
            return Accepted(msg, person, channel, uuid.uuid4().hex, stored=False)
        if not msg.text.strip() and msg.location is None:
            # Nothing said: no row, so no empty turn in the history or recall. Addressed, it
            # still gets a word back (`access.command_result`).
            if not msg.addressed_to_bot:
                return None
            return Accepted(msg, person, channel, uuid.uuid4().hex, stored=False)
        if msg.message_id is not None and msg.edited_of is None:
            # A platform may deliver a message again after a crash (stored, not confirmed).
            earlier = await self.transcript.by_platform_msg(channel.id, msg.message_id)
            if earlier:
                turn_id = earlier[0].turn_id or ""
                if turn_id in self._queued.get(channel.id, set()) or await self._replied(turn_id):
                    return None
                self._queue(channel.id, turn_id)
                return Accepted(msg, person, channel, turn_id)
        turn_id = uuid.uuid4().hex
        if channel.source == "user":
            await self.persons.mark_active(person.id, self.clock.now())
        loc = msg.location
        await self.transcript.append(
            [
                NewRow(
                    channel_id=channel.id,
                    person_id=person.id,
                    ts=msg.ts,
                    source=channel.source,
                    role=Role.USER,
                    content=msg.text,
                    turn_id=turn_id,
                    lat=loc.lat if loc else None,
                    lon=loc.lon if loc else None,
                    platform_msg_id=msg.message_id,
                )
            ]
        )
        if not msg.addressed_to_bot:
            self._after(channel, person, turn_id)
        else:
            self._queue(channel.id, turn_id)
        return Accepted(msg, person, channel, turn_id)

    async def answer(
        self, accepted: Accepted, on_partial: PartialCallback | None = None
    ) -> TurnResult | None:
        """Answer an accepted message in its chat's turn (one at a time per channel)."""
        channel = accepted.channel
        try:
            async with self.turns.hold(channel.id):
                if accepted.stored:
                    # Answered already (by a process that died before showing it): the stored
                    # reply is shown, the model is not asked again.
                    stored = await self._stored_reply(accepted.turn_id)
                    if stored is not None:
                        return TurnResult(stored, accepted.turn_id, channel.id,
                                          accepted.person.id)
                result = await self._turn_result(accepted, on_partial)
                if result is not None and self.on_result is not None:
                    self.on_result(accepted.msg.platform, result)
                return result
        finally:
            self._queued.get(channel.id, set()).discard(accepted.turn_id)

    def hold_back(self, channel_id: int, turn_ids: Sequence[str]) -> None:
        """Turns queued elsewhere (the database's turn queue) for `channel_id`: their rows stay
        out of the history of the turns before them, as this process's own queued ones do."""
        for turn_id in turn_ids:
            self._queue(channel_id, turn_id)

    def let_go(self, channel_id: int, turn_ids: Sequence[str]) -> None:
        """Undo `hold_back` (or `accept`'s own queueing) for turns answered elsewhere."""
        held = self._queued.get(channel_id)
        if held is not None:
            held.difference_update(turn_ids)
            if not held:
                del self._queued[channel_id]

    async def unanswered(self, platform: str, since: datetime) -> list[Accepted]:
        """Messages of `platform`'s private chats stored since `since` whose turn has no reply
        (a crash came between `accept` and the answer), oldest first, queued for `answer`.
        Only private chats: every message there is addressed to the bot, while a group's
        stored rows are mostly chatter that is never answered."""
        out = []
        for row in await self.transcript.unanswered(platform, since):
            channel = await self.channels.get(row.channel_id)
            person = await self.persons.get(row.person_id) if row.person_id else None
            if channel is None or person is None or not row.turn_id:
                continue
            if row.turn_id in self._queued.get(channel.id, set()):
                continue
            loc = None if row.lat is None or row.lon is None else Location(row.lat, row.lon)
            msg = InboundMessage(
                platform=platform,
                room_id=channel.room_ref.split("#", 1)[0],
                sender_id="",
                sender_name=person.name,
                text=row.content,
                ts=row.ts,
                message_id=row.platform_msg_id,
                location=loc,
            )
            self._queue(channel.id, row.turn_id)
            out.append(Accepted(msg, person, channel, row.turn_id))
        return out

    def _queue(self, channel_id: int, turn_id: str) -> None:
        self._queued.setdefault(channel_id, set()).add(turn_id)

    async def _replied(self, turn_id: str) -> bool:
        return await self._stored_reply(turn_id) is not None

    async def answered(self, turn_id: str) -> bool:
        """Whether the turn's reply is stored."""
        return await self._replied(turn_id)

    async def _stored_reply(self, turn_id: str) -> str | None:
        replies = [r.content for r in await self.transcript.by_turn(turn_id)
                   if r.role is Role.ASSISTANT and r.kind is RowKind.MESSAGE]
        return replies[-1] if replies else None


    async def _turn_result(
        self, accepted: Accepted, on_partial: PartialCallback | None
    ) -> TurnResult | None:
        """The turn's result, in the channel's turn: a command's answer, or the model's reply
        to a message addressed to the bot (None for one that is not)."""
        if not accepted.stored:
            # Not stored by `accept`: a command, an unknown one, or an empty message.
            return await access.command_result(self.commands, accepted)
        if not accepted.msg.addressed_to_bot:
            return None
        refused = self._over_rate(accepted)
        if refused is not None:
            return refused
        return await self._model_result(accepted, on_partial)

    def _over_rate(self, accepted: Accepted) -> TurnResult | None:
        """The polite refusal when the person has used up their model calls, else None."""
        person, channel = accepted.person, accepted.channel
        if channel.source != "user" or self.limiter is None:
            return None
        wait = self.limiter.acquire(person.id)
        if wait is None:
            return None
        log.info("turn %s: person %d is over the model-call rate limit", accepted.turn_id,
                 person.id)
        return TurnResult(rate_limited_message(wait), accepted.turn_id, channel.id, person.id,
                          failed=True)

    async def _model_result(
        self, accepted: Accepted, on_partial: PartialCallback | None
    ) -> TurnResult:
        msg, person, channel, turn_id = (
            accepted.msg, accepted.person, accepted.channel, accepted.turn_id)
        deadline = self.settings.llm.turn_deadline_seconds
        limit = asyncio.timeout(deadline)
        try:
            # One deadline for the whole answer (recall, every model call and retry, tools):
            # a hanging server costs the person `deadline` seconds, not timeout × attempts.
            async with limit:
                reply = await self._model.run(msg, person, channel, turn_id, on_partial,
                                              TurnOptions(), await self._held_back(channel.id))
        except ModelError as exc:
            log.warning("turn %s: model failed: %s", turn_id, exc)
            return TurnResult(model_error_message(exc), turn_id, channel.id, person.id, failed=True)
        except TimeoutError:
            if not limit.expired():
                raise
            log.warning("turn %s: no answer within the %g s turn deadline", turn_id, deadline)
            return TurnResult(deadline_message(deadline), turn_id, channel.id, person.id,
                              failed=True)
        self._after(channel, person, turn_id)
        return TurnResult(reply.text, turn_id, channel.id, person.id)

    async def _held_back(self, channel_id: int) -> Collection[str]:
        """The channel's accepted turns not yet answered: their rows stay out of the prompts
        of the turns before them."""
        return self._queued.get(channel_id, set())

    # -- background turns ------------------------------------------------------------------------

    async def background_channel(self, person: Person, source: str) -> Channel:
        """The person's background channel for `source` (`dmn`, `scheduled`, …), created once.

        No background channel seeds memory at turn zero (no user is present; DMN reflections
        fed by recall would feed on themselves): jobs answer from the material they are given.
        """
        return await background_channel(self.channels, person, source, self.clock.now())

    async def handle_background(
        self,
        person: Person,
        source: str,
        prompt: str,
        *,
        turn_id: str | None = None,
        instructions: str | None = None,
        history: bool = True,
        tools: bool = False,
        max_tokens: int | None = None,
        schema: type[BaseModel] | None = None,
    ) -> BackgroundResult:
        """A turn on the person's background channel of `source`, through the same steps as a
        chat turn (recall, prompt, model, stored rows, after-turn work).

        The prompt is stored as the turn's user row with that source (and no author), the
        person is never marked active, and nothing is sent anywhere: the caller decides. A
        given `turn_id` makes the turn idempotent: a finished turn with that id is returned as
        stored, an unfinished one is completed without storing its prompt twice. A failing
        model raises `ModelError` (the job runner records it).
        """
        channel = await self.background_channel(person, source)
        turn_id = turn_id or uuid.uuid4().hex
        options = TurnOptions(history=history, tools=tools, instructions=instructions,
                              max_tokens=max_tokens, schema=schema)
        async with self.turns.hold(channel.id):
            now = self.clock.now()
            done = await resume_or_store(self.transcript, channel, turn_id, source, prompt, now)
            if done is not None:
                return done
            msg = background_message(channel, source, prompt, now)
            reply = await self._model.run(msg, person, channel, turn_id, None, options,
                                          await self._held_back(channel.id))
        self._after(channel, person, turn_id)
        return BackgroundResult(reply.text, turn_id, channel.id, tokens=reply.usage.total)

    # -- after the turn --------------------------------------------------------------------------

    def _after(self, channel: Channel, person: Person, turn_id: str) -> None:
        # The hooks' tasks copy this context: started with no channel held, a hook that
        # runs a turn of its own waits for that channel like any other task.
        token = _HELD.set(frozenset())
        try:
            self._after_tasks.start(channel, person, turn_id)
        finally:
            _HELD.reset(token)

    async def drain(self) -> None:
        """Wait for the after-turn work started so far (used at shutdown and in tests)."""
        await self._after_tasks.drain()
