"""The model's part of a turn: build the prompt, call the model (streaming partial text when
the adapter can show it), run the tool calls it asks for in bounded rounds, and store the tool
rows and the reply. The reply is durable before the adapter shows it, so a crash after this
loses nothing shown. Model errors propagate: the caller turns them into an honest message.

A turn whose model is offered no tools (the embedded default) first asks the tools' words
readers (`ToolRegistry.read`): a request they read ("remind me in 2 minutes to stretch") is
done by its tool call and answered in code, without the model. A reply people read (a chat
turn's, a scheduled prompt's: no job instructions, no JSON shape) passes
`strata.bot.reply_checks` before it is stored: no claim of an action no tool of the turn
performed, no echo of the prompt's own words.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from strata.bot.context_window import ContextWindow
from strata.bot.prompt import MEMORY_PREAMBLE
from strata.bot.reply_checks import ReplyChecks, Settled
from strata.bot.reply_identity import Identity
from strata.bot.reply_voice import voice_for
from strata.bot.tools import ToolContext, ToolRegistry, WordsRequest
from strata.bot.turn_options import TurnOptions
from strata.bot.turn_prompt import TurnPrompt
from strata.core.config import Settings
from strata.core.ports import ChatModel, Clock, PartialCallback
from strata.core.types import (
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
    Usage,
)
from strata.memory.store.transcript import TranscriptRepo

EMPTY_REPLY = "(I have nothing to add.)"


@dataclass(frozen=True, slots=True)
class ModelReply:
    """The stored reply of a turn and the tokens all its model calls used."""

    text: str
    usage: Usage


@dataclass
class ModelTurn:
    settings: Settings
    prompt: TurnPrompt
    tools: ToolRegistry
    transcript: TranscriptRepo
    chat: ChatModel
    clock: Clock
    # The model for a person's or room's own turns, metered for that memory owner; background
    # turns use `chat` (a job charges them to its run's budget).
    chat_for: Callable[[int], ChatModel] | None = None
    # The model's context window, when known: every request is fitted to it.
    window: ContextWindow | None = None
    checks: ReplyChecks = field(default_factory=ReplyChecks)

    async def run(
        self,
        msg: InboundMessage,
        person: Person,
        channel: Channel,
        turn_id: str,
        on_partial: PartialCallback | None,
        options: TurnOptions,
        held_back: Collection[str] = (),
    ) -> ModelReply:
        """Answer `msg` with the model and store the reply (`held_back` as in
        `TurnPrompt.build`)."""
        tools = self.tools.offered(channel) if options.tools else []
        ctx = ToolContext(person, channel, turn_id)
        rounds = self.settings.bot.max_tool_rounds if tools else 0
        if options.tools and rounds == 0:
            request = await self.tools.read(ctx, msg.text)
            if request is not None:
                return await self._do_request(ctx, request)
        messages = await self.prompt.build(msg, person, channel, turn_id, options, held_back)
        completion = Completion("")
        used = Usage()
        performed: set[str] = set()
        # A reply people read is checked, and streamed only as far as it is checked.
        checked = options.schema is None and options.instructions is None
        framing = [self.settings.bot.persona, channel.system_prompt or "",
                   *(t.description for t in tools)]
        voice = voice_for(msg.text, _persons_words(messages), person.name) if checked else None
        identity = Identity.of(person.name, self.settings.bot.name) if checked else None
        watch = on_partial
        if on_partial is not None and checked:
            watch = _guarded(on_partial, Settled(performed, framing, voice, identity))
        for round_no in range(rounds + 1):
            offer = tools if round_no < rounds else []
            completion = await self._complete(messages, offer, channel, watch, options)
            used = Usage(
                used.prompt_tokens + completion.usage.prompt_tokens,
                used.completion_tokens + completion.usage.completion_tokens,
            )
            if not completion.tool_calls:
                break
            performed |= {call.name for call, result in
                          await self._run_tools(ctx, completion, messages)
                          if not result.startswith("error")}
        reply = completion.text.strip()
        if checked:
            reply = self.checks.check(reply, performed, framing, turn_id, asked=msg.text,
                                      voice=voice, identity=identity)
        return await self._store_reply(channel, turn_id, reply, used)

    async def _store_reply(self, channel: Channel, turn_id: str, reply: str,
                           used: Usage) -> ModelReply:
        reply = reply.strip() or EMPTY_REPLY
        await self.transcript.append([self._row(channel, turn_id, Role.ASSISTANT,
                                                RowKind.MESSAGE, reply)])
        return ModelReply(reply, used)

    async def _do_request(self, ctx: ToolContext, request: WordsRequest) -> ModelReply:
        """Do a request read from the words (its tool call, recorded as a model's would be)
        and store the reply worded from its result."""
        result = ""
        if request.call is not None:
            [(_, result)] = await self._run_tools(ctx, Completion("", (request.call,)), [])
        return await self._store_reply(ctx.channel, ctx.turn_id, request.reply(result), Usage())

    async def _run_tools(self, ctx: ToolContext, completion: Completion,
                         messages: list[ChatMessage]) -> list[tuple[ToolCall, str]]:
        """Run the tool calls of `completion`, adding them and their results to `messages`
        and to the transcript; each call with its result."""
        channel, turn_id = ctx.channel, ctx.turn_id
        messages.append(
            ChatMessage("assistant", completion.text or None, tool_calls=completion.tool_calls)
        )
        calls = json.dumps([{"id": c.id, "name": c.name, "arguments": c.arguments}
                            for c in completion.tool_calls])
        rows = [self._row(channel, turn_id, Role.ASSISTANT, RowKind.TOOL_CALL, calls)]
        done = []
        for call in completion.tool_calls:
            result = await self.tools.run(ctx, call)
            done.append((call, result))
            messages.append(ChatMessage("tool", result, tool_call_id=call.id))
            rows.append(self._row(
                channel, turn_id, Role.TOOL, RowKind.TOOL_RESULT,
                json.dumps({"id": call.id, "name": call.name, "result": result})))
        await self.transcript.append(rows)
        return done

    def _row(self, channel: Channel, turn_id: str, role: Role, kind: RowKind,
             content: str) -> NewRow:
        return NewRow(channel_id=channel.id, person_id=None, ts=self.clock.now(),
                      source=channel.source, role=role, kind=kind, content=content,
                      turn_id=turn_id)

    async def _complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        channel: Channel,
        on_partial: PartialCallback | None,
        options: TurnOptions,
    ) -> Completion:
        """One model call, fitted to the window; streamed when someone watches it."""
        chat = (self.chat_for(channel.owner_id)
                if self.chat_for and channel.kind is not ChannelKind.BACKGROUND else self.chat)
        max_tokens = options.max_tokens
        if self.window is not None:
            # The last guard: nothing over the window is sent, whatever the tool rounds added.
            await self.window.calibrate()
            max_tokens = self.window.reply_tokens(options.reply_tokens(self.settings))
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


def _persons_words(messages: Sequence[ChatMessage]) -> str:
    """What the person said that the prompt carries: their messages and the recalled block
    (whose lines are theirs, or marked as the bot's)."""
    return "\n".join(m.content or "" for m in messages
                     if m.role == "user" or (m.role == "system" and MEMORY_PREAMBLE
                                             in (m.content or "")))


def _guarded(on_partial: PartialCallback, checked: Settled) -> PartialCallback:
    """`on_partial` given only the finished, checked sentences of the text so far (the turn's
    performed tools are read at each call: they grow with the tool rounds)."""
    last = ""

    async def watch(text: str) -> None:
        nonlocal last
        shown = checked.feed(text)
        if shown and shown != last:
            last = shown
            await on_partial(shown)

    return watch
