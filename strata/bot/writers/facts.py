"""Fact extraction's model work: one model call per batch of an owner's new episodes. Memory
prepares the batch (`strata.memory.facts.extraction.FactExtractor.prepare`); the request
is built here (`strata.bot.writers.prompts.facts`) and asked through `Complete` (the job's
background turn on `job:extract`, or after a turn the model charged to the owner); memory's
`accept` reads the answer and routes each candidate through the checks and the grounding
rule before anything reaches the data graph.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from strata.bot.writers.prompts.facts import KnownFact, build_messages
from strata.core.errors import ModelError
from strata.core.ports import AfterTurn, ChatModel, Clock
from strata.core.types import Channel, ChatMessage, Person
from strata.memory.facts.candidates import FactsSchema
from strata.memory.facts.extraction import (
    ExtractionReport,
    FactBatchWork,
    FactExtractor,
)
from strata.memory.store.episodes import Episode

# (messages) -> the model's answer text.
Complete = Callable[[Sequence[ChatMessage]], Awaitable[str]]


def model_completer(chat: ChatModel, *, model: str | None = None,
                    max_tokens: int | None = None) -> Complete:
    """A `Complete` that asks `chat` directly for JSON of the facts answer's shape."""

    async def complete(messages: Sequence[ChatMessage]) -> str:
        # A JSON schema makes the client sample greedily (temperature 0).
        answer = await chat.complete(messages, model=model, max_tokens=max_tokens,
                                     schema=FactsSchema)
        return answer.text

    return complete


def request(work: FactBatchWork, input_tokens: int) -> list[ChatMessage]:
    """The extraction request for `work`, its quoted text within about `input_tokens`."""
    known = [KnownFact(f.id, f.kind, f"{f.subject}.{f.attribute}" if f.attribute else "",
                       f.text) for f in work.known]
    return build_messages(work.batch.excerpts, known, work.kinds, budget_tokens=input_tokens)


class FactExtraction:
    """Runs fact extraction for an owner: memory's extractor around one model call."""

    def __init__(self, extractor: FactExtractor, *, input_tokens: int = 6000) -> None:
        self.extractor = extractor
        self.input_tokens = input_tokens  # one extraction call's quoted text, at most
        # One run per owner at a time in this process (an after-turn run and the background
        # job must not both read the same new episodes).
        self._locks: dict[int, asyncio.Lock] = {}

    async def cursor(self, owner_id: int) -> tuple[int, str]:
        return await self.extractor.cursor(owner_id)

    async def pending(self, owner_id: int, limit: int = 100) -> list[Episode]:
        return await self.extractor.pending(owner_id, limit)

    async def watermark(self, owner_id: int) -> str | None:
        return await self.extractor.watermark(owner_id)

    async def run(
        self, owner_id: int, complete: Complete, now: datetime, *, max_episodes: int = 8
    ) -> ExtractionReport:
        """Read up to `max_episodes` new episodes of `owner_id` with one model call."""
        async with self._locks.setdefault(owner_id, asyncio.Lock()):
            report = ExtractionReport()
            try:
                work = await self.extractor.prepare(owner_id, report, max_episodes=max_episodes)
                if work is None:
                    return report
                messages = request(work, self.input_tokens)
                work = work.shown([m.content or "" for m in messages if m.role == "system"])
                try:
                    answer = await complete(messages)
                except ModelError:
                    await self.extractor.without_model(work, now, report)
                    raise
                return await self.extractor.accept(work, answer, now, report)
            finally:  # also when the model failed after the plain facts were routed
                await self.extractor.record(owner_id, report, now)


@dataclass
class ExtractAfterTurn:
    """After-turn hook (`facts.extract_after_turn`): run `before` (the episode cutter), then
    read the owner's new episodes into facts, so a cut episode is read in the same turn."""

    before: AfterTurn
    extraction: FactExtraction
    chat_for: Callable[[int], ChatModel]
    clock: Clock
    max_episodes: int

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None:
        await self.before(channel, person, turn_id)
        if channel.owner_id != person.id or await self.extraction.watermark(person.id) is None:
            return
        await self.extraction.run(
            person.id, model_completer(self.chat_for(person.id)), self.clock.now(),
            max_episodes=self.max_episodes,
        )
