"""Memory tools the model may call during a turn: remember, correct, forget and search facts.

They act on the channel's memory scope (`channel.owner_id`: the person in a private chat, the
room in a shared one) and at once, which is how an explicit correction ("no, I moved to
Lyon") retracts the wrong fact before the next turn. Recalled facts carry their ids
(`fact #12`), which the model passes back here. While memory is paused nothing new is stored
(retracting still works: it only removes). Imports `bot` modules and `memory`.
"""

from __future__ import annotations

import logging
from typing import Any

from bot.errors import MutedSourceError, UnknownKindError
from bot.ports import Clock
from bot.turns import ToolContext, ToolRegistry
from bot.types import Role, ToolSpec
from memory.facts import FACT_KINDS, FactStore, NewFact
from memory.transcript import TranscriptRepo

log = logging.getLogger(__name__)

PAUSED = "memory is paused (/pause): nothing was stored"
KIND_HELP = f"one of {', '.join(FACT_KINDS)}; use note when unsure"

REMEMBER = ToolSpec(
    "remember",
    "Store one durable fact the person stated or asked you to remember about themselves. "
    "Not for quotes of others, questions, hypotheticals or passing moods.",
    {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "the fact, one short third-person line"},
            "kind": {"type": "string", "enum": list(FACT_KINDS), "description": KIND_HELP},
            "attribute": {"type": "string",
                          "description": "snake_case key like home_city, job, diet (optional)"},
        },
        "required": ["text"],
    },
)
CORRECT = ToolSpec(
    "correct_memory",
    "The person says a remembered fact (fact #id) is wrong or out of date: replace it with "
    "the corrected text. The old fact is withdrawn at once.",
    {
        "type": "object",
        "properties": {
            "fact_id": {"type": "integer"},
            "text": {"type": "string", "description": "the corrected fact"},
        },
        "required": ["fact_id", "text"],
    },
)
FORGET = ToolSpec(
    "forget_fact",
    "Withdraw a remembered fact (fact #id) the person no longer wants used. For erasing "
    "everything about a topic, tell them about the /forget command.",
    {"type": "object", "properties": {"fact_id": {"type": "integer"}}, "required": ["fact_id"]},
)
SEARCH = ToolSpec(
    "search_memory",
    "Search the facts remembered about this person.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


class MemoryTools:
    def __init__(self, facts: FactStore, transcript: TranscriptRepo, clock: Clock) -> None:
        self.facts = facts
        self.transcript = transcript
        self.clock = clock

    def register(self, registry: ToolRegistry) -> None:
        registry.add(REMEMBER, self.remember)
        registry.add(CORRECT, self.correct)
        registry.add(FORGET, self.forget)
        registry.add(SEARCH, self.search)

    async def _user_rows(self, ctx: ToolContext) -> tuple[int, ...]:
        rows = await self.transcript.by_turn(ctx.turn_id)
        return tuple(r.id for r in rows if r.role is Role.USER)

    async def remember(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        if ctx.person.paused:
            return PAUSED
        text = str(args.get("text", "")).strip()
        if not text:
            return "error: text is empty"
        new = NewFact(
            owner_id=ctx.channel.owner_id, kind=str(args.get("kind") or "note"), text=text,
            source=ctx.channel.source, attribute=str(args.get("attribute") or ""),
            subject="self", confidence=0.9, channel_id=ctx.channel.id,
            row_ids=await self._user_rows(ctx),
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

    async def _own_live(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
        try:
            fact_id = int(args.get("fact_id"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        fact = await self.facts.repo.get(fact_id)
        if fact is None or fact.owner_id != ctx.channel.owner_id or not fact.live:
            return None
        return fact

    async def correct(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        old = await self._own_live(ctx, args)
        if old is None:
            return "error: no such remembered fact"
        text = str(args.get("text", "")).strip()
        if ctx.person.paused or not text:
            await self.facts.retract(old.owner_id, [old.id], self.clock.now())
            return f"fact #{old.id} withdrawn" + (f"; {PAUSED}" if ctx.person.paused else "")
        new = NewFact(
            owner_id=old.owner_id, kind=old.kind, text=text, source=ctx.channel.source,
            subject=old.subject, attribute=old.attribute, confidence=0.9,
            channel_id=ctx.channel.id, row_ids=await self._user_rows(ctx),
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

    async def forget(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        old = await self._own_live(ctx, args)
        if old is None:
            return "error: no such remembered fact"
        await self.facts.retract(old.owner_id, [old.id], self.clock.now())
        return f"fact #{old.id} withdrawn"

    async def search(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        query = str(args.get("query", "")).strip()
        if not query:
            return "error: query is empty"
        hits = await self.facts.search(ctx.channel.owner_id, query, limit=10)
        hits = [h for h in hits if h.relevance >= 0.2]
        if not hits:
            return "nothing remembered matches"
        return "\n".join(f"fact #{h.fact.id} ({h.fact.kind}, since "
                         f"{h.fact.valid_from.date().isoformat()}): {h.fact.text}"
                         for h in hits)
