"""The one turn processor: every turn (a person's, a reminder's, the DMN's) goes through here.

Order: access control; resolve person and channel; chat commands; mark activity and the user
row (`admit`; `strata.bot.scheduler` stores it and queues the turn in one step, `handle`
stores it and runs the turn at once); in the channel's turn (`run_turn`): turn-zero recall;
assemble the prompt; call the model (streaming when the adapter can show it) with bounded tool
calls; append the reply and tool
rows; return the reply to the adapter; after-turn work (episode cut, compaction) runs off the
hot path. A failing model gives the person a short honest message; the user row stays. A
chat turn has one overall deadline (`llm.turn_deadline_seconds`), met with an honest message.
May import `memory`; never `adapters` or `cognition`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from strata.bot.claims import ChannelClaims
from strata.bot.commands import CommandContext, CommandRouter
from strata.bot.context_window import ContextWindow, messages_cost, tools_cost
from strata.bot.prompt import PromptParts, build_messages, history_in_prompt
from strata.core.config import Settings
from strata.core.errors import ModelError, ModelRateLimitedError, ModelRequestError
from strata.core.ports import AfterTurn, ChatModel, Clock, ContextSource, PartialCallback, Recaller
from strata.core.types import (
    Accepted,
    Admission,
    Channel,
    ChannelKind,
    ChatMessage,
    Completion,
    InboundMessage,
    NewRow,
    Person,
    Role,
    RowKind,
    ToolCall,
    ToolSpec,
    TurnResult,
    Usage,
)
from strata.core.wording import counted
from strata.memory.coordination.turn_queue import TurnQueue
from strata.memory.domain.persons import ChannelRepo, PersonRepo
from strata.memory.domain.transcript import TranscriptRepo, history_since_watermark

log = logging.getLogger(__name__)

ToolHandler = Callable[["ToolContext", dict[str, Any]], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class ToolContext:
    person: Person
    channel: Channel
    turn_id: str

    @property
    def shared(self) -> bool:
        """Whether the turn is in a shared room: a tool that runs there acts on the room's
        scope only, and says nothing of the speaker's private memory."""
        return self.channel.kind is ChannelKind.SHARED


@dataclass
class ToolRegistry:
    """Functions the model may call in a turn, by name.

    Like a chat command, a tool is private by default: in a shared room the model is offered,
    and may run, only the tools added with `shared=True`, whose handlers act on the room
    (`ToolContext.shared`). So a new tool cannot reach a person's private memory from a group.
    """

    specs: dict[str, ToolSpec] = field(default_factory=dict)
    handlers: dict[str, ToolHandler] = field(default_factory=dict)
    shared: set[str] = field(default_factory=set)

    def add(self, spec: ToolSpec, handler: ToolHandler, *, shared: bool = False) -> None:
        self.specs[spec.name] = spec
        self.handlers[spec.name] = handler
        if shared:
            self.shared.add(spec.name)

    def offered(self, channel: Channel) -> list[ToolSpec]:
        """The tools the model may call in a turn on `channel`."""
        if channel.kind is not ChannelKind.SHARED:
            return list(self.specs.values())
        return [s for name, s in self.specs.items() if name in self.shared]

    async def run(self, ctx: ToolContext, call: ToolCall) -> str:
        handler = self.handlers.get(call.name)
        if handler is None:
            return f"error: there is no tool named {call.name!r}"
        if ctx.shared and call.name not in self.shared:
            return f"error: {call.name} only works in a private chat with me"
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            return "error: the arguments were not valid JSON"
        if not isinstance(args, dict):
            return "error: the arguments must be a JSON object"
        return await handler(ctx, args)


BACKGROUND_PLATFORM = "background"
# Sources with no user present (DESIGN.md §3, "Recall at turn zero"): their turns never run
# turn-zero recall; a job that needs memory states its inputs in its instructions instead.
BACKGROUND_SOURCES = ("dmn", "research", "scheduled")
BACKGROUND_PREFIXES = ("delegate:", "external-agent:", "job:")


def is_background_source(source: str) -> bool:
    return source in BACKGROUND_SOURCES or source.startswith(BACKGROUND_PREFIXES)


def seeds_memory(channel: Channel) -> bool:
    """Whether a turn on `channel` runs turn-zero recall: its `memory_seed` is on and it is
    not a background channel (those never do, whatever an old row says)."""
    return (channel.memory_seed and channel.kind is not ChannelKind.BACKGROUND
            and not is_background_source(channel.source))


@dataclass(frozen=True, slots=True)
class BackgroundResult:
    """What a background turn produced: the stored reply and what it cost.

    `resumed` is true when the turn had already finished before (a job redone after a restart
    with the same turn id): the stored reply is returned and the model is not called again.
    """

    reply: str
    turn_id: str
    channel_id: int
    tokens: int = 0
    resumed: bool = False


@dataclass(frozen=True, slots=True)
class _TurnOptions:
    history: bool = True
    tools: bool = True
    instructions: str | None = None
    max_tokens: int | None = None
    schema: type[BaseModel] | None = None  # the JSON answer's shape, asked of the model


def model_error_message(exc: ModelError) -> str:
    """The short, honest chat message for a failed model call."""
    if isinstance(exc, ModelRateLimitedError):
        why = "my language model is busy (rate limited)"
    elif isinstance(exc, ModelRequestError):
        why = "my language model refused the request (a configuration problem on my side)"
    elif exc.__class__.__name__ == "ModelBadResponseError":
        why = "my language model gave an answer I could not use"
    else:
        why = "I can't reach my language model right now"
    return f"Sorry — {why}. Your message is saved; please try again in a moment."


def deadline_message(seconds: float) -> str:
    """The honest chat message when the turn's deadline passed before the model answered."""
    return (
        "Sorry — my language model is taking too long to answer (nothing within "
        f"{seconds:g} seconds). Your message is saved; please try again in a moment."
    )


def rate_limited_message(wait_seconds: float) -> str:
    """The polite chat message when a person has used up their model calls for the minute."""
    secs = max(1, math.ceil(wait_seconds))
    return (
        "You're writing faster than I'm allowed to think — I can answer again in about "
        f"{counted(secs, 'second')}. Your message is saved."
    )


@dataclass
class CallLimiter:
    """At most `per_minute` model-answered turns per person in any sliding 60 s window.

    Time comes from the injected clock, so tests move it instead of sleeping.
    """

    per_minute: int
    clock: Clock
    window: timedelta = timedelta(minutes=1)
    _calls: dict[int, deque[datetime]] = field(default_factory=dict, init=False)

    def acquire(self, person_id: int) -> float | None:
        """Take one call for `person_id`: None when allowed, else seconds until one is free."""
        now = self.clock.now()
        calls = self._calls.setdefault(person_id, deque())
        while calls and now - calls[0] >= self.window:
            calls.popleft()
        if len(calls) >= self.per_minute:
            return (calls[0] + self.window - now).total_seconds()
        calls.append(now)
        return None


@dataclass
class TurnProcessor:
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
    _background: set[asyncio.Task[None]] = field(default_factory=set, init=False)

    def __post_init__(self) -> None:
        if self.limiter is None:
            self.limiter = CallLimiter(self.settings.access.model_calls_per_minute, self.clock)

    # -- resolution ----------------------------------------------------------------------------

    async def resolve(self, msg: InboundMessage) -> tuple[Person, Channel]:
        """The sender (created on first sight) and the channel (created on first message)."""
        now = self.clock.now()
        person = await self.persons.get_or_create(msg.identity, msg.sender_name, now)
        if msg.is_private:
            owner_id, kind = person.id, ChannelKind.PRIVATE
        else:
            scope = await self.persons.room_scope(msg.platform, msg.room_id, msg.room_name, now)
            owner_id, kind = scope.id, ChannelKind.SHARED
        room_ref = msg.room_id
        existing = await self.channels.by_ref(msg.platform, room_ref)
        if existing is not None and (existing.kind is not kind or existing.owner_id != owner_id):
            # The room changed shape (a DM that grew into a group, a 1:1 room whose human
            # changed): it gets a channel of its own, so no one's private memory follows.
            room_ref = f"{msg.room_id}#{kind.value}:{owner_id}"
        channel = await self.channels.get_or_create(
            platform=msg.platform,
            room_ref=room_ref,
            owner_id=owner_id,
            kind=kind,
            source="user",
            now=now,
            name=msg.room_name,
        )
        return person, channel

    def allowed(self, msg: InboundMessage) -> bool:
        access = self.settings.access
        if msg.platform == "console":
            return True
        if msg.identity in access.admins:
            return True
        if access.allow_users and msg.identity not in access.allow_users:
            return False
        room = f"{msg.platform}:{msg.room_id}"
        return msg.is_private or not access.allow_rooms or room in access.allow_rooms

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
            # still gets a word back (`_handle_locked`).
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
        result = await self._handle_locked(accepted, on_partial)
        if result is not None and self.on_result is not None:
            self.on_result(accepted.msg.platform, result)
        return result

    async def _handle_locked(
        self, accepted: Accepted, on_partial: PartialCallback | None
    ) -> TurnResult | None:
        msg, person, channel, turn_id = (
            accepted.msg, accepted.person, accepted.channel, accepted.turn_id)
        if not accepted.stored:
            # Not stored by `accept`: a command, an unknown one, or an empty message.
            found = self.commands.find(msg.text)
            if found is None:
                unknown = self.commands.unknown(msg.text)
                if unknown is not None:
                    return TurnResult(f"unknown command /{unknown}, /help lists them",
                                      turn_id, channel.id, person.id, command=unknown)
                return TurnResult("(That message was empty, so there is nothing to answer.)",
                                  turn_id, channel.id, person.id)
            command, args = found
            if not command.shared and channel.kind is not ChannelKind.PRIVATE:
                return TurnResult(
                    "That command only works in a private chat with me.",
                    turn_id,
                    channel.id,
                    person.id,
                    command=command.name,
                )
            answer = await command.handler(CommandContext(msg, person, channel, args))
            return TurnResult(
                answer.text,
                turn_id,
                channel.id,
                person.id,
                command=command.name,
                attachment=answer.attachment,
            )
        if not msg.addressed_to_bot:
            return None
        if channel.source == "user" and self.limiter is not None:
            wait = self.limiter.acquire(person.id)
            if wait is not None:
                log.info("turn %s: person %d is over the model-call rate limit", turn_id,
                         person.id)
                return TurnResult(
                    rate_limited_message(wait), turn_id, channel.id, person.id, failed=True
                )
        deadline = self.settings.llm.turn_deadline_seconds
        limit = asyncio.timeout(deadline)
        try:
            # One deadline for the whole answer (recall, every model call and retry, tools):
            # a hanging server costs the person `deadline` seconds, not timeout × attempts.
            async with limit:
                reply, _ = await self._answer(msg, person, channel, turn_id, on_partial)
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
        return TurnResult(reply, turn_id, channel.id, person.id)

    # -- background turns ------------------------------------------------------------------------

    async def background_channel(self, person: Person, source: str) -> Channel:
        """The person's background channel for `source` (`dmn`, `scheduled`, …), created once.

        No background channel seeds memory at turn zero (no user is present; DMN reflections
        fed by recall would feed on themselves): jobs answer from the material they are given.
        """
        return await self.channels.get_or_create(
            platform=BACKGROUND_PLATFORM,
            room_ref=f"{person.id}/{source}",
            owner_id=person.id,
            kind=ChannelKind.BACKGROUND,
            source=source,
            now=self.clock.now(),
            name=source,
            memory_seed=False,
        )

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
        async with self.claims.claim(channel.id):
            done = await self.transcript.by_turn(turn_id)
            replies = [r for r in done if r.role is Role.ASSISTANT and r.kind is RowKind.MESSAGE]
            if replies:
                return BackgroundResult(replies[-1].content, turn_id, channel.id, resumed=True)
            now = self.clock.now()
            if not done:
                await self.transcript.append(
                    [
                        NewRow(
                            channel_id=channel.id,
                            person_id=None,
                            ts=now,
                            source=source,
                            role=Role.USER,
                            content=prompt,
                            turn_id=turn_id,
                        )
                    ]
                )
            msg = InboundMessage(
                platform=BACKGROUND_PLATFORM,
                room_id=channel.room_ref,
                sender_id=source,
                text=prompt,
                ts=now,
            )
            options = _TurnOptions(
                history=history, tools=tools, instructions=instructions, max_tokens=max_tokens,
                schema=schema,
            )
            reply, usage = await self._answer(msg, person, channel, turn_id, None, options)
        self._after(channel, person, turn_id)
        return BackgroundResult(reply, turn_id, channel.id, tokens=usage.total)

    # -- prompt and model --------------------------------------------------------------------------

    async def _prompt(
        self,
        msg: InboundMessage,
        person: Person,
        channel: Channel,
        turn_id: str,
        options: _TurnOptions | None = None,
    ) -> list[ChatMessage]:
        options = options or _TurnOptions()
        mark, all_rows = await history_since_watermark(self.transcript, channel.id)
        queued = await self.queue.waiting(channel.id) if self.queue is not None else set()
        # The message itself goes last; messages accepted after it wait for their own turns.
        rows = [r for r in all_rows if r.turn_id != turn_id and r.turn_id not in queued]
        own = [r.id for r in all_rows if r.turn_id == turn_id]
        if not options.history:
            mark, rows = None, []
        portrait = ambient = None
        if self.context is not None:
            # The durable facts come with the portrait where turn-zero recall runs: a
            # background job states its own inputs.
            portrait = await self.context.portrait(channel.owner_id,
                                                   facts=seeds_memory(channel))
            ambient = await self.context.ambient(person, channel)
        instructions = options.instructions or channel.system_prompt
        recall_on = (self.recaller is not None and seeds_memory(channel)
                     and self.settings.recall.enabled)
        history_tokens = self.settings.bot.history_tokens
        if self.window is not None:
            # The history gets what the window leaves after the reply, the fixed parts and
            # recall's whole budget: history is trimmed before memory.
            fixed = messages_cost([ChatMessage("system", part) for part in (
                self.settings.bot.persona, instructions, portrait, ambient, msg.text,
                None if mark is None else mark.content) if part])
            offered = options.tools and self.settings.bot.max_tool_rounds > 0
            tools = list(self.tools.specs.values()) if offered else []
            history_tokens = self.window.history_budget(
                fixed=fixed + tools_cost(tools),
                recall=self.settings.recall.budget_tokens if recall_on else 0,
                reply=self.window.reply_tokens(self._max_tokens(options)),
                configured=history_tokens)
        recalled = None
        if recall_on:
            assert self.recaller is not None
            # Rows already in the prompt are not recalled again; older ones of this channel
            # that fell out of the history budget may be.
            shown = history_in_prompt(rows, history_tokens)
            first = shown[0].id if shown else min(own, default=None)
            recalled = await self.recaller.recall(
                channel=channel, person=person, query=msg.text, shown_from_row_id=first)
        names = None
        if channel.kind is ChannelKind.SHARED:
            names = {p: n for p, n in await self._names(rows)}
        text = msg.text
        if not msg.is_private and msg.sender_name:
            text = f"{msg.sender_name}: {text}"
        if msg.location is not None:
            text += f"\n[shared location: {msg.location.lat:.5f}, {msg.location.lon:.5f}]"
        parts = PromptParts(
            persona=self.settings.bot.persona,
            message=text,
            history=rows,
            channel_prompt=instructions,
            portrait=portrait,
            continuity=mark.content if mark else None,
            ambient=ambient,
            recalled=recalled,
            shared_room=channel.kind is ChannelKind.SHARED,
            names=names,
        )
        return build_messages(parts, history_tokens=history_tokens)

    def _max_tokens(self, options: _TurnOptions) -> int:
        return options.max_tokens or self.settings.llm.max_tokens

    async def _names(self, rows: Sequence[Any]) -> list[tuple[int, str]]:
        out = []
        for pid in {r.person_id for r in rows if r.person_id is not None}:
            p = await self.persons.get(pid)
            if p is not None:
                out.append((pid, p.name))
        return out

    async def _answer(
        self,
        msg: InboundMessage,
        person: Person,
        channel: Channel,
        turn_id: str,
        on_partial: PartialCallback | None,
        options: _TurnOptions | None = None,
    ) -> tuple[str, Usage]:
        """The reply (stored) and the tokens all model calls of the turn used."""
        options = options or _TurnOptions()
        messages = await self._prompt(msg, person, channel, turn_id, options)
        tools = self.tools.offered(channel) if options.tools else []
        ctx = ToolContext(person, channel, turn_id)
        rounds = self.settings.bot.max_tool_rounds if tools else 0
        completion = Completion("")
        used = Usage()
        for round_no in range(rounds + 1):
            offer = tools if round_no < rounds else []
            completion = await self._call(messages, offer, channel, on_partial, options)
            used = Usage(
                used.prompt_tokens + completion.usage.prompt_tokens,
                used.completion_tokens + completion.usage.completion_tokens,
            )
            if not completion.tool_calls:
                break
            messages.append(
                ChatMessage("assistant", completion.text or None, tool_calls=completion.tool_calls)
            )
            rows = [
                NewRow(
                    channel_id=channel.id,
                    person_id=None,
                    ts=self.clock.now(),
                    source=channel.source,
                    role=Role.ASSISTANT,
                    kind=RowKind.TOOL_CALL,
                    content=json.dumps(
                        [
                            {"id": c.id, "name": c.name, "arguments": c.arguments}
                            for c in completion.tool_calls
                        ]
                    ),
                    turn_id=turn_id,
                )
            ]
            for call in completion.tool_calls:
                result = await self.tools.run(ctx, call)
                messages.append(ChatMessage("tool", result, tool_call_id=call.id))
                rows.append(
                    NewRow(
                        channel_id=channel.id,
                        person_id=None,
                        ts=self.clock.now(),
                        source=channel.source,
                        role=Role.TOOL,
                        kind=RowKind.TOOL_RESULT,
                        content=json.dumps({"id": call.id, "name": call.name, "result": result}),
                        turn_id=turn_id,
                    )
                )
            await self.transcript.append(rows)
        reply = completion.text.strip() or "(I have nothing to add.)"
        # Durable before the adapter shows it: a crash after this loses nothing shown.
        await self.transcript.append(
            [
                NewRow(
                    channel_id=channel.id,
                    person_id=None,
                    ts=self.clock.now(),
                    source=channel.source,
                    role=Role.ASSISTANT,
                    content=reply,
                    turn_id=turn_id,
                )
            ]
        )
        return reply, used

    async def _call(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        channel: Channel,
        on_partial: PartialCallback | None,
        options: _TurnOptions,
    ) -> Completion:
        chat = (self.chat_for(channel.owner_id)
                if self.chat_for and channel.kind is not ChannelKind.BACKGROUND else self.chat)
        max_tokens = options.max_tokens
        if self.window is not None:
            # The last guard: nothing over the window is sent, whatever the tool rounds added.
            max_tokens = self.window.reply_tokens(self._max_tokens(options))
            messages = self.window.fit(messages, tools, max_tokens)
        if on_partial is None or not self.settings.bot.stream or options.schema is not None:
            return await chat.complete(messages, tools=tools, model=channel.model,
                                       max_tokens=max_tokens, schema=options.schema)
        shown = ""
        final: Completion | None = None
        async for item in chat.stream(
            messages, tools=tools, model=channel.model, max_tokens=max_tokens
        ):
            if isinstance(item, Completion):
                final = item
            else:
                shown += item
                await on_partial(shown)
        assert final is not None
        return final

    # -- after the turn --------------------------------------------------------------------------

    def _after(self, channel: Channel, person: Person, turn_id: str) -> None:
        for hook in self.after_turn:
            task = asyncio.create_task(self._run_hook(hook, channel, person, turn_id))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _run_hook(
        self, hook: AfterTurn, channel: Channel, person: Person, turn_id: str
    ) -> None:
        try:
            await hook(channel, person, turn_id)
        except ModelError as exc:  # a model or embedder that is down: one line, no traceback
            log.warning("after-turn step %s skipped for turn %s: %s",
                        type(hook).__name__, turn_id, exc)
        except Exception:  # task boundary: a failed after-turn step must not kill the bot
            log.exception("after-turn step %r failed for turn %s", hook, turn_id)

    async def drain(self) -> None:
        """Wait for the after-turn work started so far (used at shutdown and in tests)."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)


def _turn_id(channel: Channel, msg: InboundMessage) -> str:
    """A new turn's id: for a platform message (not an edit) derived from the channel and the
    message id, so two processes given the same message queue one turn; else random."""
    if msg.message_id is None or msg.edited_of is not None:
        return uuid.uuid4().hex
    return uuid.uuid5(uuid.NAMESPACE_URL, f"strata:{channel.id}:{msg.message_id}").hex
