"""Fact extraction: routes durable facts from an owner's new leaf episodes into the data graph.

Per owner, a cursor (`fact_cursors`) marks the newest leaf episode already read, so an
episode is never read twice. Only episodes whose source profile has `facts` on are used, and
nothing runs while the person has paused memory. A run is three steps: `prepare` reads the
next batch (the episodes' excerpts, the known facts, the kinds allowed), cognition asks the
model (`strata.bot.writers.facts`, through a background turn), and `accept` reads the
answer (`strata.memory.facts.candidates`) and routes each candidate through the checks
and the grounding rule (`strata.memory.facts.routing`), the one door into the graph.
Plain first-person statements are also read without the model (`plain_facts`), so a person's
basic facts are kept even when the model fails or misses them (`without_model`); those
candidates pass the same checks, after the model's, so that their wording wins on a shared
subject/attribute. Imports no model.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from strata.core.errors import ModelError
from strata.core.types import OwnerKind
from strata.memory.checks.fact_evidence import Speakers, evidence_problem
from strata.memory.facts.batch import Batch
from strata.memory.facts.candidates import Excerpt, parse_answer
from strata.memory.facts.fact_store import FactStore
from strata.memory.facts.routing import MIN_CONFIDENCE, ExtractionReport, FactRouter
from strata.memory.rules.fact_types import FACT_KINDS, PERSON_KINDS, Fact
from strata.memory.rules.profiles import profile_for
from strata.memory.store.episodes import Episode
from strata.memory.store.fact_reading import FactReading
from strata.memory.store.persons import PersonRepo

__all__ = ["ExtractionReport", "FactBatchWork", "FactExtractor", "evidence_problem"]

log = logging.getLogger(__name__)

MAX_KNOWN_FACTS = 80
MAX_LINE_CHARS = 600


@dataclass(frozen=True, slots=True)
class FactBatchWork:
    """One batch to read: its episodes (all of them, muted ones too: the cursor passes
    them), the batch of usable ones, the known facts to show, and the kinds allowed."""

    owner_id: int
    episodes: tuple[Episode, ...]
    batch: Batch
    known: tuple[Fact, ...]
    kinds: tuple[str, ...]

    def shown(self, prompt: Sequence[str]) -> FactBatchWork:
        """This work with the prompt texts the model was shown (an echo of them is refused)."""
        return replace(self, batch=replace(self.batch, prompt=tuple(prompt)))


class FactExtractor:
    def __init__(self, reading: FactReading, store: FactStore, persons: PersonRepo, *,
                 min_confidence: float = MIN_CONFIDENCE) -> None:
        self.reading = reading
        self.store = store
        self.persons = persons
        self.router = FactRouter(store, persons, min_confidence=min_confidence)

    # -- the cursor ------------------------------------------------------------------------------

    async def cursor(self, owner_id: int) -> tuple[int, str]:
        return await self.reading.cursor(owner_id)

    async def pending(self, owner_id: int, limit: int = 100) -> list[Episode]:
        """Leaf episodes of `owner_id` not read yet, oldest first (muted sources included:
        the cursor moves past them)."""
        return await self.reading.pending(owner_id, limit)

    async def watermark(self, owner_id: int) -> str | None:
        """The newest unread episode id (a job's input watermark), or None."""
        newest = await self.reading.newest_pending(owner_id)
        return None if newest is None else str(newest)

    async def _advance(self, owner_id: int, episodes: Sequence[Episode]) -> None:
        await self.reading.advance(owner_id, episodes)

    # -- a run ---------------------------------------------------------------------------------

    async def prepare(self, owner_id: int, report: ExtractionReport, *,
                      max_episodes: int = 8) -> FactBatchWork | None:
        """The next batch of up to `max_episodes` new episodes, or None with the reason in
        `report.skipped` (a batch of muted sources only is passed over here)."""
        person = await self.persons.get(owner_id)
        if person is None or person.kind is not OwnerKind.PERSON:
            report.skipped = "not a person"
            return None
        if person.paused:
            report.skipped = "memory is paused"
            return None
        episodes = await self.pending(owner_id, limit=max_episodes)
        if not episodes:
            report.skipped = "no new episodes"
            return None
        usable = [e for e in episodes if profile_for(e.source).facts]
        if not usable:
            await self._advance(owner_id, episodes)
            report.skipped = "only muted sources"
            return None
        batch = await self._batch(usable, person.name)
        known = (await self.store.repo.for_owner(owner_id))[-MAX_KNOWN_FACTS:]
        kinds = PERSON_KINDS if all(e.source == "user" for e in usable) else FACT_KINDS
        return FactBatchWork(owner_id, tuple(episodes), batch, tuple(known), tuple(kinds))

    async def accept(self, work: FactBatchWork, answer: str, now: datetime,
                     report: ExtractionReport) -> ExtractionReport:
        """Route the model's `answer` to `work` and the plain facts, then move the cursor.
        An answer that is not a facts list raises `ModelBadResponseError` (after the plain
        facts are kept: `without_model`)."""
        try:
            candidates = parse_answer(answer)
        except ModelError:
            await self.without_model(work, now, report)
            raise
        owner_id = work.owner_id
        # The person may have paused while the model was thinking: then nothing is kept, and
        # the cursor stays so the episodes are read after /resume.
        if await self._paused(owner_id):
            report.skipped = "memory is paused"
            return report
        report.episodes = len(work.episodes)
        for cand in candidates:
            await self.router.route(owner_id, cand, work.batch, work.kinds, now, report)
        await self.router.route_plain(owner_id, work.batch.plain(), work.batch, work.kinds, now,
                                      report)
        await self._advance(owner_id, work.episodes)
        log.info("fact extraction for owner %s: %s", owner_id, report.line())
        return report

    async def without_model(self, work: FactBatchWork, now: datetime,
                            report: ExtractionReport) -> None:
        """The model failed: the plainly stated facts are kept all the same, and the cursor
        stays, so the batch is read again (those facts are then already known)."""
        plain = work.batch.plain()
        if plain and not await self._paused(work.owner_id):
            await self.router.route_plain(work.owner_id, plain, work.batch, work.kinds, now,
                                          report)
            log.info("fact extraction for owner %s without the model: %s", work.owner_id,
                     report.line())

    async def record(self, owner_id: int, report: ExtractionReport, now: datetime) -> None:
        """Count the run's refusals for the person (`jobs status`; the DEBUG log)."""
        await self.reading.record_refusals(owner_id, report.refusals, now)

    async def _paused(self, owner_id: int) -> bool:
        person = await self.persons.get(owner_id)
        return person is None or person.paused

    async def _batch(self, episodes: Sequence[Episode], person_name: str) -> Batch:
        excerpts, person_lines, other_lines = [], {}, {}
        for ep in episodes:
            rows = await self.reading.messages(ep.id)
            # In a person's own channel the user rows are the person; in a background channel
            # (DMN, an external agent) the rows are the agent's own findings.
            own_role = "user" if ep.source == "user" else "assistant"
            lines = []
            mine, others = [], []
            for r in rows:
                text = str(r["content"])[:MAX_LINE_CHARS]
                who = "person" if r["role"] == "user" else "assistant"
                lines.append((who, text))
                if r["role"] == own_role:
                    mine.append((int(r["id"]), text))
                else:
                    others.append(text)
            excerpts.append(Excerpt(ep.id, ep.started_at.date().isoformat(), ep.summary,
                                    tuple(lines)))
            person_lines[ep.id] = mine
            other_lines[ep.id] = others
        speakers = Speakers.of(person_name, [ep.summary for ep in episodes])
        return Batch(list(episodes), excerpts, person_lines, other_lines, speakers)
