"""Fact extraction: routes durable facts from an owner's new leaf episodes into the data graph.

Per owner, a cursor (`fact_cursors`) marks the newest leaf episode already read, so an
episode is never read twice. Only episodes whose source profile has `facts` on are used, and
nothing runs while the person has paused memory. The model answers with JSON
(`strata.memory.domain.prompts.facts`); besides the prompt's rules, code drops every candidate that
is not a durable assertion by the person: its `modality` must be "assertion", `asserted_by_person`
true, its `evidence` must be found in what the person actually said in the episode, and that
evidence must not read as a question, a hypothetical or reported speech, nor carry the
assistant's words or another speaker's label (`fact_speakers`). Whether a fact lasts is
decided by code where it can tell (`plain_facts.lasting`: a small model marks "I play the
cello" as passing), else by the model. Plain first-person statements are also read without the
model (`plain_facts`), so a person's basic facts are kept even when the model fails or misses
them; those candidates pass the same checks, after the model's, so that their wording wins on a
shared subject/attribute. An explicit correction retracts the fact it corrects at once; a new
value for the same subject/attribute (or a fact the model says it replaces) supersedes the old
one.

The model call is a parameter (`Complete`), so the cognition job can route it through a
background turn and tests through the fake server. Imports `bot` leaf modules and `memory`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from strata.core.clock import to_iso
from strata.core.errors import ModelError, StrataError
from strata.core.ports import ChatModel
from strata.core.types import ChatMessage, OwnerKind
from strata.memory.checks import grounding
from strata.memory.checks.fact_evidence import (
    Speakers,
    alike,
    evidence_problem,
    find_evidence,
)
from strata.memory.domain.prompts.facts import (
    Candidate,
    Excerpt,
    FactsSchema,
    KnownFact,
    build_messages,
    parse_answer,
)
from strata.memory.engines.db import Database
from strata.memory.facts.batch import Batch, evidence_in, line_problem
from strata.memory.facts.fact_store import FactStore
from strata.memory.facts.plain import lasting
from strata.memory.rules.fact_types import (
    FACT_KINDS,
    PERSON_KINDS,
    NewFact,
    normalise_key,
    normalise_text,
)
from strata.memory.rules.profiles import profile_for
from strata.memory.store.episodes import LEAF, Episode, episode_from_db
from strata.memory.store.persons import PersonRepo
from strata.memory.store.refusals import RefusalRepo

log = logging.getLogger(__name__)

# (messages) -> the model's answer text.
Complete = Callable[[Sequence[ChatMessage]], Awaitable[str]]

MIN_CONFIDENCE = 0.5
MAX_KNOWN_FACTS = 80
MAX_LINE_CHARS = 600

def model_completer(chat: ChatModel, *, model: str | None = None,
                    max_tokens: int | None = None) -> Complete:
    """A `Complete` that asks `chat` directly for JSON of the facts answer's shape."""

    async def complete(messages: Sequence[ChatMessage]) -> str:
        # A JSON schema makes the client sample greedily (temperature 0).
        answer = await chat.complete(messages, model=model, max_tokens=max_tokens,
                                     schema=FactsSchema)
        return answer.text

    return complete


@dataclass
class ExtractionReport:
    episodes: int = 0
    added: list[int] = field(default_factory=list)
    duplicates: int = 0
    superseded: list[int] = field(default_factory=list)
    retracted: list[int] = field(default_factory=list)
    rejected: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None
    # Every refusal, for the person's refusal counts (`jobs status`) and the DEBUG log.
    refusals: list[grounding.Refusal] = field(default_factory=list)

    def reject(self, why: str, text: str = "") -> None:
        self.rejected[why] = self.rejected.get(why, 0) + 1
        self.refusals.append(grounding.Refusal(grounding.FACTS, why, text))

    def line(self) -> str:
        if self.skipped:
            return f"skipped: {self.skipped}"
        return (
            f"{self.episodes} episodes read; {len(self.added)} facts added, "
            f"{self.duplicates} already known, {len(self.superseded)} superseded, "
            f"{len(self.retracted)} retracted; rejected {self.rejected or 'none'}"
        )


class FactExtractor:
    def __init__(self, db: Database, store: FactStore, persons: PersonRepo, *,
                 min_confidence: float = MIN_CONFIDENCE, input_tokens: int = 6000) -> None:
        self.db = db
        self.input_tokens = input_tokens  # one extraction call's quoted text, at most
        self.store = store
        self.persons = persons
        self.min_confidence = min_confidence
        # One run per owner at a time in this process (an after-turn run and the background
        # job must not both read the same new episodes).
        self._locks: dict[int, asyncio.Lock] = {}

    # -- the cursor ------------------------------------------------------------------------------

    async def cursor(self, owner_id: int) -> tuple[int, str]:
        row = await self.db.fetchone(
            "SELECT last_episode_id, last_created_at FROM fact_cursors WHERE owner_id = ?",
            (owner_id,),
        )
        return (int(row[0]), str(row[1])) if row else (0, "")

    async def pending(self, owner_id: int, limit: int = 100) -> list[Episode]:
        """Leaf episodes of `owner_id` not read yet, oldest first (muted sources included:
        the cursor moves past them)."""
        last_id, last_created = await self.cursor(owner_id)
        rows = await self.db.fetchall(
            "SELECT * FROM episodes WHERE owner_id = ? AND level = ?"
            " AND (id > ? OR created_at > ?) ORDER BY id LIMIT ?",
            (owner_id, LEAF, last_id, last_created, limit),
        )
        return [episode_from_db(r) for r in rows]

    async def watermark(self, owner_id: int) -> str | None:
        """The newest unread episode id (a job's input watermark), or None."""
        last_id, last_created = await self.cursor(owner_id)
        newest = await self.db.fetchval(
            "SELECT max(id) FROM episodes WHERE owner_id = ? AND level = ?"
            " AND (id > ? OR created_at > ?)",
            (owner_id, LEAF, last_id, last_created),
        )
        return None if newest is None else str(newest)

    async def _advance(self, owner_id: int, episodes: Sequence[Episode]) -> None:
        if not episodes:
            return
        last_id = max(e.id for e in episodes)
        last_created = max(to_iso(e.created_at) for e in episodes)
        await self.db.execute_write(
            "INSERT INTO fact_cursors (owner_id, last_episode_id, last_created_at)"
            " VALUES (?, ?, ?) ON CONFLICT (owner_id) DO UPDATE SET"
            # The larger of old and new (SQLite's two-argument max() is not PostgreSQL's).
            " last_episode_id = CASE WHEN excluded.last_episode_id > fact_cursors.last_episode_id"
            " THEN excluded.last_episode_id ELSE fact_cursors.last_episode_id END,"
            " last_created_at = CASE WHEN excluded.last_created_at > fact_cursors.last_created_at"
            " THEN excluded.last_created_at ELSE fact_cursors.last_created_at END",
            (owner_id, last_id, last_created),
        )

    # -- a run -----------------------------------------------------------------------------------

    async def run(
        self, owner_id: int, complete: Complete, now: datetime, *, max_episodes: int = 8
    ) -> ExtractionReport:
        """Read up to `max_episodes` new episodes of `owner_id` with one model call."""
        async with self._locks.setdefault(owner_id, asyncio.Lock()):
            report = ExtractionReport()
            try:
                return await self._run(owner_id, complete, now, max_episodes, report)
            finally:  # also when the model failed after the plain facts were routed
                await RefusalRepo(self.db).record(owner_id, report.refusals, now)

    async def _run(self, owner_id: int, complete: Complete, now: datetime, max_episodes: int,
                   report: ExtractionReport) -> ExtractionReport:
        person = await self.persons.get(owner_id)
        if person is None or person.kind is not OwnerKind.PERSON:
            report.skipped = "not a person"
            return report
        if person.paused:
            report.skipped = "memory is paused"
            return report
        episodes = await self.pending(owner_id, limit=max_episodes)
        if not episodes:
            report.skipped = "no new episodes"
            return report
        usable = [e for e in episodes if profile_for(e.source).facts]
        if not usable:
            await self._advance(owner_id, episodes)
            report.skipped = "only muted sources"
            return report
        batch = await self._batch(usable, person.name)
        known = (await self.store.repo.for_owner(owner_id))[-MAX_KNOWN_FACTS:]
        kinds = PERSON_KINDS if all(e.source == "user" for e in usable) else FACT_KINDS
        messages = build_messages(
            batch.excerpts,
            [KnownFact(f.id, f.kind, f"{f.subject}.{f.attribute}" if f.attribute else "",
                       f.text) for f in known],
            kinds,
            budget_tokens=self.input_tokens,
        )
        shown = tuple(m.content or "" for m in messages if m.role == "system")
        batch = replace(batch, prompt=shown)
        plain = batch.plain()
        try:
            candidates = parse_answer(await complete(messages))
        except ModelError:
            # The model failed: the plainly stated facts are kept all the same, and the cursor
            # stays, so the batch is read again (those facts are then already known).
            if plain and not await self._paused(owner_id):
                await self._route_plain(owner_id, plain, batch, kinds, now, report)
                log.info("fact extraction for owner %s without the model: %s", owner_id,
                         report.line())
            raise
        # The person may have paused while the model was thinking: then nothing is kept, and
        # the cursor stays so the episodes are read after /resume.
        if await self._paused(owner_id):
            report.skipped = "memory is paused"
            return report
        report.episodes = len(episodes)
        for cand in candidates:
            await self._route(owner_id, cand, batch, kinds, now, report)
        await self._route_plain(owner_id, plain, batch, kinds, now, report)
        await self._advance(owner_id, episodes)
        log.info("fact extraction for owner %s: %s", owner_id, report.line())
        return report

    async def _paused(self, owner_id: int) -> bool:
        person = await self.persons.get(owner_id)
        return person is None or person.paused

    async def _batch(self, episodes: Sequence[Episode], person_name: str) -> Batch:
        excerpts, person_lines, other_lines = [], {}, {}
        for ep in episodes:
            rows = await self.db.fetchall(
                "SELECT t.id, t.role, t.content FROM episode_rows er"
                " JOIN transcript t ON t.id = er.row_id"
                " WHERE er.episode_id = ? AND t.kind = 'message' ORDER BY t.id",
                (ep.id,),
            )
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

    def _refusal(self, cand: Candidate, kinds: Sequence[str]) -> str | None:
        """Why a candidate is not a fact to store (None: it may be)."""
        if cand.modality != "assertion":
            return cand.modality
        if not cand.asserted_by_person:
            return "not asserted by the person"
        # A small model marks lasting facts ("I play the cello") as passing: code decides
        # where it can tell, the model only where code cannot.
        durable = lasting(cand.evidence)
        if not (cand.durable if durable is None else durable):
            return "not durable"
        if cand.kind not in kinds:
            return "kind"
        if cand.confidence < self.min_confidence:
            return "low confidence"
        return evidence_problem(cand.evidence)

    async def _route_plain(self, owner_id: int, plain: Sequence[Candidate], batch: Batch,
                           kinds: Sequence[str], now: datetime,
                           report: ExtractionReport) -> None:
        """Route the model-free candidates. One is already known when its text is live, or
        the model's fact of this run has its subject/attribute or was read from the same line
        and shares most of its words (the model's wording stays; no near-copy is added)."""
        by_model = [(f, set((await self.store.repo.sources(f.id)).row_ids))
                    for f in await self.store.repo.for_owner(owner_id) if f.id in report.added]
        for cand in plain:
            texts = {normalise_text(f.text) for f in await self.store.repo.for_owner(owner_id)}
            key = (normalise_key(cand.subject), normalise_key(cand.attribute))
            lines = batch.person_lines.get(cand.episode or 0, [])
            rows = set(find_evidence(cand.evidence, lines))
            known = normalise_text(cand.text) in texts or any(
                (cand.attribute and f.key == key) or (rows & cited and alike(f.text, cand.text))
                for f, cited in by_model)
            if known:
                report.duplicates += 1
            else:
                await self._route(owner_id, cand, batch, kinds, now, report)

    async def _route(
        self,
        owner_id: int,
        cand: Candidate,
        batch: Batch,
        kinds: Sequence[str],
        now: datetime,
        report: ExtractionReport,
    ) -> None:
        evidence = batch.speakers.evidence(cand.evidence)
        if evidence is None:
            report.reject("evidence from the assistant", cand.text)
            return
        cand = cand.model_copy(update={"evidence": evidence,
                                       "text": batch.speakers.strip(cand.text)})
        refusal = self._refusal(cand, kinds) or ("no text" if not cand.text else None)
        if refusal is not None:
            report.reject(refusal, cand.text)
            return
        source_episode, rows = evidence_in(cand, batch)
        if source_episode is None:
            report.reject("evidence not in the person's words", cand.text)
            return
        problem = line_problem(cand, batch, source_episode.id, rows)
        if problem is not None:
            report.reject(problem, cand.text)
            return
        # The one grounding rule (strata.memory.checks.grounding): the fact's own text, not
        # only its evidence, must be found in the person's lines it cites.
        grounded = await self._ground(owner_id, cand, batch, source_episode.id, rows, now)
        if grounded is not None:
            report.reject(f"grounding: {grounded.reason}", cand.text)
            return
        new = NewFact(
            owner_id=owner_id,
            kind=cand.kind,
            text=cand.text,
            source=source_episode.source,
            subject=cand.subject or "self",
            attribute=cand.attribute,
            confidence=cand.confidence,
            channel_id=source_episode.channel_id,
            valid_from=source_episode.ended_at,
            episode_ids=(source_episode.id,),
            row_ids=tuple(rows[:3]),
        )
        try:
            result = await self.store.add(new, now, replaces=cand.replaces,
                                          correction=cand.correction)
        except (StrataError, ValueError) as exc:  # unknown kind, muted source: nothing stored
            log.info("fact candidate refused: %s", exc)
            report.reject("refused by the store")
            return
        if result.fact_id is None:
            report.duplicates += 1
        else:
            report.added.append(result.fact_id)
        report.superseded += result.superseded
        report.retracted += result.retracted

    async def _ground(self, owner_id: int, cand: Candidate, batch: Batch, episode_id: int,
                      rows: Sequence[int], now: datetime) -> grounding.Refusal | None:
        """The grounding rule's verdict on a candidate that passed the checks above."""
        cited = set(rows[:3])
        said = [text for row_id, text in batch.person_lines.get(episode_id, [])
                if row_id in cited]
        person = await self.persons.get(owner_id)
        return grounding.check_claim(cand.text, said, layer=grounding.FACTS,
                                     prompt=batch.prompt, names=[person.name] if person else [])
