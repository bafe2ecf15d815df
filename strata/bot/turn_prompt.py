"""The prompt of one turn, gathered from its sources: the history since the watermark, the
portrait and ambient snapshot (`ContextSource`), turn-zero recall (`Recaller`) and the
message itself, each fitted to the model's context window; `strata.bot.prompt` lays them out.

The history is what `strata.bot.history_view` shows the model of the channel (not the bot's
code-written replies, nor its answers to the person's questions about themselves where recall
runs). It is trimmed before memory: it gets what the window leaves after the reply, the
fixed parts and recall's whole budget.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from strata.bot.background import seeds_memory
from strata.bot.context_window import ContextWindow, messages_cost, tools_cost
from strata.bot.history_view import model_history
from strata.bot.prompt import PromptParts, build_messages, history_in_prompt
from strata.bot.tools import ToolRegistry
from strata.bot.turn_options import TurnOptions
from strata.core.config import Settings
from strata.core.ports import ContextSource, Recaller
from strata.core.types import (
    Channel,
    ChannelKind,
    ChatMessage,
    InboundMessage,
    Person,
    TranscriptRow,
)
from strata.memory.store.persons import PersonRepo
from strata.memory.store.transcript import TranscriptRepo, history_since_watermark


@dataclass(frozen=True, slots=True)
class _Sources:
    """What the prompt is built from, before the history budget is applied."""

    history: list[TranscriptRow]
    own_row_ids: list[int]
    continuity: str | None
    portrait: str | None
    ambient: str | None
    instructions: str | None


@dataclass
class TurnPrompt:
    settings: Settings
    persons: PersonRepo
    transcript: TranscriptRepo
    tools: ToolRegistry
    context: ContextSource | None = None
    recaller: Recaller | None = None
    window: ContextWindow | None = None

    async def build(
        self,
        msg: InboundMessage,
        person: Person,
        channel: Channel,
        turn_id: str,
        options: TurnOptions,
        held_back: Collection[str] = (),
    ) -> list[ChatMessage]:
        """The messages for the model. `held_back` are the channel's turns accepted but not
        yet answered: their rows wait for their own turns (the message goes last in its own
        turn's prompt, nowhere earlier)."""
        recall_on = (self.recaller is not None and seeds_memory(channel)
                     and self.settings.recall.enabled)
        src = await self._sources(msg, person, channel, turn_id, options, held_back, recall_on)
        history_tokens = self._history_budget(msg, src, options, recall_on)
        recalled = None
        if recall_on:
            recalled = await self._recall(msg, person, channel, src, history_tokens)
        names = None
        if channel.kind is ChannelKind.SHARED:
            names = dict(await self._names(src.history))
        parts = PromptParts(
            persona=self.settings.bot.persona,
            message=message_text(msg),
            history=src.history,
            channel_prompt=src.instructions,
            portrait=src.portrait,
            continuity=src.continuity,
            ambient=src.ambient,
            recalled=recalled,
            shared_room=channel.kind is ChannelKind.SHARED,
            names=names,
        )
        return build_messages(parts, history_tokens=history_tokens)

    async def _sources(
        self, msg: InboundMessage, person: Person, channel: Channel, turn_id: str,
        options: TurnOptions, held_back: Collection[str], recall_on: bool,
    ) -> _Sources:
        mark, all_rows = await history_since_watermark(self.transcript, channel.id)
        rows = model_history(
            [r for r in all_rows if r.turn_id != turn_id and r.turn_id not in held_back],
            recall_on=recall_on)
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
        return _Sources(rows, own, mark.content if mark else None, portrait, ambient,
                        options.instructions or channel.system_prompt)

    def _history_budget(self, msg: InboundMessage, src: _Sources, options: TurnOptions,
                        recall_on: bool) -> int:
        configured = self.settings.bot.history_tokens
        if self.window is None:
            return configured
        fixed = messages_cost([ChatMessage("system", part) for part in (
            self.settings.bot.persona, src.instructions, src.portrait, src.ambient, msg.text,
            src.continuity) if part])
        offered = options.tools and self.settings.bot.max_tool_rounds > 0
        tools = list(self.tools.specs.values()) if offered else []
        return self.window.history_budget(
            fixed=fixed + tools_cost(tools),
            recall=self.settings.recall.budget_tokens if recall_on else 0,
            reply=self.window.reply_tokens(options.reply_tokens(self.settings)),
            configured=configured)

    async def _recall(self, msg: InboundMessage, person: Person, channel: Channel,
                      src: _Sources, history_tokens: int) -> str | None:
        assert self.recaller is not None
        # Rows already in the prompt are not recalled again; older ones of this channel that
        # fell out of the history budget may be.
        shown = history_in_prompt(src.history, history_tokens)
        first = shown[0].id if shown else min(src.own_row_ids, default=None)
        return await self.recaller.recall(
            channel=channel, person=person, query=msg.text, shown_from_row_id=first)

    async def _names(self, rows: Sequence[TranscriptRow]) -> list[tuple[int, str]]:
        out = []
        for pid in {r.person_id for r in rows if r.person_id is not None}:
            p = await self.persons.get(pid)
            if p is not None:
                out.append((pid, p.name))
        return out


def message_text(msg: InboundMessage) -> str:
    """The message as the model reads it: a group message names its sender, a shared
    location is written out."""
    text = msg.text
    if not msg.is_private and msg.sender_name:
        text = f"{msg.sender_name}: {text}"
    if msg.location is not None:
        text += f"\n[shared location: {msg.location.lat:.5f}, {msg.location.lon:.5f}]"
    return text
