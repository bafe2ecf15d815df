"""The one turn processor: every turn (a person's, a reminder's, the DMN's) goes through here.

`TurnProcessor` coordinates; each step is a module of its own. Order (docs/architecture.md): resolve
person and channel, access control and chat commands (`strata.bot.access`); mark activity and
the user row (`admit`: `strata.bot.scheduler` stores it and queues the turn in one step,
`handle` stores it and runs the turn at once); in the channel's turn (`run_turn`) the model's
part (`strata.bot.model_turn`: turn-zero recall and the prompt in
`strata.bot.turn_prompt`, the model call, streaming when the adapter can show it, bounded tool
calls, the reply and tool rows stored); return the reply to the adapter; after-turn work
(`strata.bot.after_turn`: episode cut, compaction) off the hot path. A failing model gives the
person a short honest message (`strata.bot.failures`); the user row stays. A chat turn has one
overall deadline (`llm.turn_deadline_seconds`) and a per-person rate (`strata.bot.limits`).
Background turns (`strata.bot.background`) take the same path. One turn at a time per channel
is `strata.bot.claims`'.
May import `memory`; never `adapters` or `cognition`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from pydantic import BaseModel

from strata.bot import access
from strata.bot.after_turn import AfterTurnTasks
from strata.bot.background import (
    BackgroundResult,
    background_channel,
    background_message,
    resume_or_store,
)
from strata.bot.claims import ChannelClaims
from strata.bot.commands import CommandRouter
from strata.bot.context_window import ContextWindow
from strata.bot.failures import deadline_message, model_error_message, rate_limited_message
from strata.bot.limits import CallLimiter
from strata.bot.model_turn import ModelTurn
from strata.bot.reply_checks import ReplyChecks
from strata.bot.tools import ToolRegistry
from strata.bot.turn_options import TurnOptions
from strata.bot.turn_prompt import TurnPrompt
from strata.core.config import Settings
from strata.core.errors import ModelError
from strata.core.ports import AfterTurn, ChatModel, Clock, ContextSource, PartialCallback, Recaller
from strata.core.types import (
    Accepted,
    Admission,
    Channel,
    InboundMessage,
    NewRow,
    Person,
    Role,
    TurnResult,
)
from strata.memory.coordination.model_calls import ModelCalls
from strata.memory.coordination.turn_queue import QueuedTurn, TurnQueue
from strata.memory.store.persons import ChannelRepo, PersonRepo
from strata.memory.store.transcript import TranscriptRepo

log = logging.getLogger(__name__)

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
    claims: ChannelClaims = field(default_factory=ChannelClaims)
    # The turns queued per channel (`strata.bot.scheduler`): their rows stay out of the history
    # of the turns before them (a message goes last in its own turn's prompt, nowhere earlier).
    queue: TurnQueue | None = None
    # Told each answered turn's platform and result (the operators' metrics count them).
    on_result: Callable[[str, TurnResult], None] | None = None
    # What the replies' checks caught (claims no tool made true, echoes of the prompt).
    reply_checks: ReplyChecks = field(default_factory=ReplyChecks)
    _model: ModelTurn = field(init=False)
    _after_tasks: AfterTurnTasks = field(init=False)

    def __post_init__(self) -> None:
        if self.limiter is None:
            self.limiter = CallLimiter(ModelCalls(self.persons.db),
                                       self.settings.access.model_calls_per_minute, self.clock)
        prompt = TurnPrompt(self.settings, self.persons, self.transcript, self.tools,
                            self.context, self.recaller, self.window)
        self._model = ModelTurn(self.settings, prompt, self.tools, self.transcript, self.chat,
                                self.clock, self.chat_for, self.window, self.reply_checks)
        self._after_tasks = AfterTurnTasks(self.after_turn)

    # -- resolution ----------------------------------------------------------------------------

    async def resolve(self, msg: InboundMessage) -> tuple[Person, Channel]:
        """The sender (created on first sight) and the channel (created on first message)."""
        return await access.resolve(self.persons, self.channels, msg, self.clock.now())

    def allowed(self, msg: InboundMessage) -> bool:
        return access.allowed(self.settings.access, msg)

    async def queued(self, entry: QueuedTurn) -> Accepted | None:
        """A queued turn as it stands now, for the scheduler to run: None when its person or
        channel was forgotten after it was queued."""
        channel = await self.channels.get(entry.channel_id)
        person = await self.persons.get(entry.person_id)
        if channel is None or person is None:
            return None
        return Accepted(entry.msg, person, channel, entry.turn_id, stored=entry.stored)

    # -- the turn --------------------------------------------------------------------------------

    async def handle(
        self, msg: InboundMessage, on_partial: PartialCallback | None = None
    ) -> TurnResult | None:
        """One message's turn, now and in this process (the console; tests): admitted, stored
        and run in its channel's turn. None when the bot should stay silent. Platform messages
        go through `strata.bot.scheduler.TurnScheduler` instead (stored and queued first)."""
        if not self.allowed(msg):
            log.info("ignoring %s message from a user not on the allowlist", msg.platform)
            return None
        admission = await self.admit(msg)
        if admission is None:
            return None
        async with self.claims.claim(admission.accepted.channel.id):
            await self.record(admission)
            if not msg.addressed_to_bot:
                return None
            return await self.run_turn(admission.accepted, on_partial)

    async def admit(self, msg: InboundMessage) -> Admission | None:
        """Decide what `msg` (from an allowed sender) becomes, storing nothing yet: the sender
        and channel resolved, a command detected (never stored), the user row to store with
        its turn. A message with a platform id gets a turn id of its own (the same in every
        process the platform delivers it to, so it is queued once); one whose row is stored
        already (delivered again after a crash) keeps its turn, and is None once answered.
        None also for an empty message not addressed to the bot."""
        person, channel = await self.resolve(msg)
        found = self.commands.find(msg.text) if msg.addressed_to_bot else None
        if found is not None or (msg.addressed_to_bot and self.commands.unknown(msg.text)):
            return Admission(Accepted(msg, person, channel, _turn_id(channel, msg),
                                      stored=False), None)
        if not msg.text.strip() and msg.location is None:
            # Nothing said: no row, so no empty turn in the history or recall. Addressed, it
            # still gets a word back (`access.command_result`).
            if not msg.addressed_to_bot:
                return None
            return Admission(Accepted(msg, person, channel, _turn_id(channel, msg),
                                      stored=False), None)
        if msg.message_id is not None and msg.edited_of is None:
            earlier = await self.transcript.by_platform_msg(channel.id, msg.message_id)
            if earlier:
                turn_id = earlier[0].turn_id or ""
                if await self.transcript.reply_of(turn_id) is not None:
                    return None
                return Admission(Accepted(msg, person, channel, turn_id), None)
        turn_id = _turn_id(channel, msg)
        if channel.source == "user":
            await self.persons.mark_active(person.id, self.clock.now())
        loc = msg.location
        row = NewRow(
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
        return Admission(Accepted(msg, person, channel, turn_id), row)

    async def record(self, admission: Admission) -> None:
        """Store the admitted message's row (if it has one to store); a message not addressed
        to the bot starts its after-turn work here, as it gets no turn."""
        if admission.row is None:
            return
        await self.transcript.append([admission.row])
        accepted = admission.accepted
        if not accepted.msg.addressed_to_bot:
            self._after(accepted.channel, accepted.person, accepted.turn_id)

    async def run_turn(
        self, accepted: Accepted, on_partial: PartialCallback | None = None
    ) -> TurnResult | None:
        """Run an admitted message's turn; the caller holds its channel (`claims`). A turn
        whose reply is stored already (its process died before showing it) gives that reply,
        the model is not asked again."""
        channel = accepted.channel
        if accepted.stored:
            stored = await self.transcript.reply_of(accepted.turn_id)
            if stored is not None:
                return TurnResult(stored, accepted.turn_id, channel.id, accepted.person.id)
        result = await self._turn_result(accepted, on_partial)
        if result is not None and self.on_result is not None:
            self.on_result(accepted.msg.platform, result)
        return result

    async def _turn_result(
        self, accepted: Accepted, on_partial: PartialCallback | None
    ) -> TurnResult | None:
        """The turn's result, in the channel's turn: a command's answer, or the model's reply
        to a message addressed to the bot (None for one that is not)."""
        if not accepted.stored:
            # No row (`admit`): a command, an unknown one, or an empty message.
            return await access.command_result(self.commands, accepted)
        if not accepted.msg.addressed_to_bot:
            return None
        refused = await self._over_rate(accepted)
        if refused is not None:
            return refused
        return await self._model_result(accepted, on_partial)

    async def _over_rate(self, accepted: Accepted) -> TurnResult | None:
        """The polite refusal when the person has used up their model calls, else None."""
        person, channel = accepted.person, accepted.channel
        if channel.source != "user" or self.limiter is None:
            return None
        wait = await self.limiter.acquire(person.id)
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
        """The channel's queued turns not yet answered: their rows stay out of the prompts
        of the turns before them."""
        return await self.queue.waiting(channel_id) if self.queue is not None else ()

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
        async with self.claims.claim(channel.id):
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
        self._after_tasks.start(channel, person, turn_id)

    async def drain(self) -> None:
        """Wait for the after-turn work started so far (used at shutdown and in tests)."""
        await self._after_tasks.drain()


def _turn_id(channel: Channel, msg: InboundMessage) -> str:
    """A new turn's id: for a platform message (not an edit) derived from the channel and the
    message id, so two processes given the same message queue one turn; else random."""
    if msg.message_id is None or msg.edited_of is not None:
        return uuid.uuid4().hex
    return uuid.uuid5(uuid.NAMESPACE_URL, f"strata:{channel.id}:{msg.message_id}").hex
