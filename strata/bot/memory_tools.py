"""Memory tools the model may call during a turn: remember, correct, forget and search facts.

They act on the channel's memory scope (`channel.owner_id`: the person in a private chat, the
room in a shared one) and at once, which is how an explicit correction ("no, I moved to
Lyon") retracts the wrong fact before the next turn. Recalled facts carry their ids
(`fact #12`), which the model passes back here. While memory is paused nothing new is stored
(retracting still works: it only removes). What the model asks to `remember` (or a
correction's new text) is a claim about the person, checked by the grounding rule against the
person's own recent lines in the channel before it is stored; a refusal is counted by reason
(layer `remember`, `strata jobs status`) and the tool says it stored nothing, so the reply may
not claim it did (`strata.bot.reply_checks`). Each tool's arguments are a pydantic model
(`strata.bot.tool_args`): its schema is what the model sees, and arguments that do not fit come back
as an error naming the field. Imports `bot` modules and `memory`.
"""

from __future__ import annotations

import logging
import re
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from strata.bot.tool_args import RowId, ToolArgs, add_tool
from strata.bot.tools import ToolContext, ToolRegistry
from strata.core.errors import MutedSourceError, UnknownKindError
from strata.core.ports import Clock
from strata.core.types import Role, RowKind, TranscriptRow
from strata.memory.checks import grounding
from strata.memory.facts.fact_store import FactStore
from strata.memory.rules.fact_types import FACT_KINDS, NewFact
from strata.memory.rules.statement_kind import sentences, statement_problem
from strata.memory.store.refusals import RefusalRepo
from strata.memory.store.transcript import TranscriptRepo

log = logging.getLogger(__name__)

PAUSED = "memory is paused (/pause): nothing was stored"
# The grounding layer of the facts the model asks to keep (its refusals, in `jobs status`).
REMEMBER_LAYER = "remember"
# How many of the channel's newest rows hold the person's lines a claim may rest on: this
# turn's message and the few before it ("I'm a pharmacist." … "remember that, please").
RECENT_ROWS = 12
# A sentence that asks to keep something is the person's word even when it is not a plain
# statement ("please remember I'll be in Lisbon in May").
_ASKS_TO_KEEP = re.compile(r"(remember|note|don't forget|do not forget|keep in mind)",
                           re.IGNORECASE)
KIND_HELP = f"one of {', '.join(FACT_KINDS)}; use note when unsure"

FactText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class RememberArgs(ToolArgs):
    text: FactText = Field(description="the fact, one short third-person line")
    # Checked by the fact store, whose error names the allowed kinds.
    kind: str = Field(default="note", description=KIND_HELP,
                      json_schema_extra={"enum": list(FACT_KINDS)})
    attribute: str = Field(default="",
                           description="snake_case key like home_city, job, diet (optional)")


class CorrectArgs(ToolArgs):
    fact_id: RowId = Field(description="the id of the remembered fact (fact #12: 12)")
    text: str = Field(description="the corrected fact (empty: just withdraw the old one)")


class FactIdArgs(ToolArgs):
    fact_id: RowId = Field(description="the id of the remembered fact (fact #12: 12)")


class SearchArgs(ToolArgs):
    query: FactText


REMEMBER = ("remember",
            "Store one durable fact the person stated or asked you to remember about "
            "themselves. Not for quotes of others, questions, hypotheticals or passing moods.")
CORRECT = ("correct_memory",
           "The person says a remembered fact (fact #id) is wrong or out of date: replace it "
           "with the corrected text. The old fact is withdrawn at once.")
FORGET = ("forget_fact",
          "Withdraw a remembered fact (fact #id) the person no longer wants used. For erasing "
          "everything about a topic, tell them about the /forget command.")
SEARCH = ("search_memory", "Search the facts remembered about this person.")


class MemoryTools:
    def __init__(self, facts: FactStore, transcript: TranscriptRepo, clock: Clock,
                 refusals: RefusalRepo | None = None) -> None:
        self.facts = facts
        self.transcript = transcript
        self.clock = clock
        self.refusals = refusals

    def register(self, registry: ToolRegistry) -> None:
        # Shared: each acts on the channel's owner, which in a group is the room's own scope.
        add_tool(registry, *REMEMBER, RememberArgs, self.remember, shared=True)
        add_tool(registry, *CORRECT, CorrectArgs, self.correct, shared=True)
        add_tool(registry, *FORGET, FactIdArgs, self.forget, shared=True)
        add_tool(registry, *SEARCH, SearchArgs, self.search, shared=True)

    async def _own_lines(self, ctx: ToolContext) -> list[TranscriptRow]:
        """The person's own recent messages in the channel (never the bot's, nor another
        person's in a room), this turn's included."""
        rows = await self.transcript.for_channel(ctx.channel.id, limit=RECENT_ROWS, newest=True)
        return [r for r in rows if r.role is Role.USER and r.kind is RowKind.MESSAGE
                and r.person_id == ctx.person.id]

    async def _grounded(self, ctx: ToolContext, text: str) -> tuple[int, ...] | str:
        """The rows `text` rests on, or why it is refused: it must be found in the person's
        own recent lines, their questions, hypotheticals and quotes left out (unless they ask
        to keep it)."""
        lines = await self._own_lines(ctx)
        said = {r.id: [s for s in sentences(r.content)
                       if statement_problem(s) is None or _ASKS_TO_KEEP.search(s)]
                for r in lines}
        refusal = grounding.check_claim(
            text, [s for ss in said.values() for s in ss], layer=REMEMBER_LAYER,
            prompt=[REMEMBER[1], *RememberArgs.model_json_schema()["properties"]],
            names=[ctx.person.name])
        if refusal is not None:
            if self.refusals is not None:
                await self.refusals.record(ctx.channel.owner_id, [refusal], self.clock.now())
            return refusal.reason
        cited = [r.id for r in lines
                 if grounding.content_share(text, " ".join(said[r.id]), [ctx.person.name]) > 0]
        return tuple(cited or (r.id for r in lines if r.turn_id == ctx.turn_id))

    async def remember(self, ctx: ToolContext, args: RememberArgs) -> str:
        if ctx.person.paused:
            # An error: the turn's reply may not say it remembered (`strata.bot.reply_checks`).
            return f"error: {PAUSED}"
        cited = await self._grounded(ctx, args.text)
        if isinstance(cited, str):
            return _not_said(cited)
        new = NewFact(
            owner_id=ctx.channel.owner_id, kind=args.kind or "note", text=args.text,
            source=ctx.channel.source, attribute=args.attribute,
            subject="self", confidence=0.9, channel_id=ctx.channel.id,
            row_ids=cited,
        )
        try:
            result = await self.facts.add(new, self.clock.now())
        except (UnknownKindError, MutedSourceError) as exc:
            return f"error: {exc}"
        if result.fact_id is None:
            return f"already remembered as fact #{result.duplicate_of}"
        extra = f"; it replaces #{', #'.join(map(str, result.superseded))}" \
            if result.superseded else ""
        return f"remembered as fact #{result.fact_id}{extra}"

    async def _own_live(self, ctx: ToolContext, fact_id: int) -> Any:
        fact = await self.facts.repo.get(fact_id)
        if fact is None or fact.owner_id != ctx.channel.owner_id or not fact.live:
            return None
        return fact

    async def correct(self, ctx: ToolContext, args: CorrectArgs) -> str:
        old = await self._own_live(ctx, args.fact_id)
        if old is None:
            return "error: no such remembered fact"
        text = args.text
        if ctx.person.paused or not text:
            await self.facts.retract(old.owner_id, [old.id], self.clock.now())
            return f"fact #{old.id} withdrawn" + (f"; {PAUSED}" if ctx.person.paused else "")
        cited = await self._grounded(ctx, text)
        if isinstance(cited, str):  # the old fact stays: nothing the person said replaces it
            return _not_said(cited)
        new = NewFact(
            owner_id=old.owner_id, kind=old.kind, text=text, source=ctx.channel.source,
            subject=old.subject, attribute=old.attribute, confidence=0.9,
            channel_id=ctx.channel.id, row_ids=cited,
        )
        try:
            result = await self.facts.add(new, self.clock.now(), replaces=[old.id],
                                          correction=True)
        except MutedSourceError:
            await self.facts.retract(old.owner_id, [old.id], self.clock.now())
            return f"fact #{old.id} withdrawn"
        if result.duplicate_of == old.id:
            return f"fact #{old.id} already says that; nothing changed"
        if result.fact_id is None:  # the corrected text was already known
            await self.facts.retract(old.owner_id, [old.id], self.clock.now())
            return f"fact #{old.id} withdrawn; #{result.duplicate_of} already says that"
        log.info("fact %s corrected by %s", old.id, result.fact_id)
        return f"fact #{old.id} withdrawn and replaced by fact #{result.fact_id}"

    async def forget(self, ctx: ToolContext, args: FactIdArgs) -> str:
        old = await self._own_live(ctx, args.fact_id)
        if old is None:
            return "error: no such remembered fact"
        await self.facts.retract(old.owner_id, [old.id], self.clock.now())
        return f"fact #{old.id} withdrawn"

    async def search(self, ctx: ToolContext, args: SearchArgs) -> str:
        hits = await self.facts.search(ctx.channel.owner_id, args.query, limit=10)
        hits = [h for h in hits if h.relevance >= 0.2]
        if not hits:
            return "nothing remembered matches"
        return "\n".join(f"fact #{h.fact.id} ({h.fact.kind}, since "
                         f"{h.fact.valid_from.date().isoformat()}): {h.fact.text}"
                         for h in hits)


def _not_said(reason: str) -> str:
    return (f"error: nothing was stored: {reason} (keep only what the person said, in their "
            "words; they can type /remember and the words to keep anything as typed)")
