"""Fact routing: the one door between the model's fact candidates and the data graph. Each
candidate (`strata.memory.facts.candidates`; also the model-free `plain_facts`) must be
a durable assertion by the person: its `modality` "assertion", `asserted_by_person` true, its
`evidence` found in what the person actually said in the episode and not read as a question,
a hypothetical or reported speech, nor carrying the assistant's words or another speaker's
label (`fact_evidence`, `fact_batch`); whether a fact lasts is decided by code where it can
tell (`plain_facts.lasting`), else by the model; and its own text must pass the grounding rule
against the person's lines it cites (`grounding.check_claim`). Only then does it reach the
store, which supersedes or retracts what it replaces. What is refused is counted in the
run's `ExtractionReport`. Imports no model.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from strata.core.errors import StrataError
from strata.core.voice import opens_in_first_person, told_as
from strata.memory.checks import grounding
from strata.memory.checks.fact_evidence import alike, evidence_problem, find_evidence
from strata.memory.facts.batch import Batch, evidence_in, line_problem
from strata.memory.facts.candidates import Candidate
from strata.memory.facts.fact_store import FactStore
from strata.memory.facts.plain import lasting
from strata.memory.rules.fact_types import NewFact, normalise_key, normalise_text
from strata.memory.store.episodes import Episode
from strata.memory.store.persons import PersonRepo

log = logging.getLogger(__name__)

MIN_CONFIDENCE = 0.5


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


class FactRouter:
    """Routes checked candidates of one owner into the data graph (`route`, `route_plain`)."""

    def __init__(self, store: FactStore, persons: PersonRepo, *,
                 min_confidence: float = MIN_CONFIDENCE) -> None:
        self.store = store
        self.persons = persons
        self.min_confidence = min_confidence

    def refusal(self, cand: Candidate, kinds: Sequence[str]) -> str | None:
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

    async def route_plain(self, owner_id: int, plain: Sequence[Candidate], batch: Batch,
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
                await self.route(owner_id, cand, batch, kinds, now, report)

    async def route(
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
        refusal = self.refusal(cand, kinds) or ("no text" if not cand.text else None)
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
        await self._store(owner_id, cand, source_episode, rows, now, report)

    async def _store(self, owner_id: int, cand: Candidate, episode: Episode,
                     rows: Sequence[int], now: datetime, report: ExtractionReport) -> None:
        """Add a candidate that passed every check, citing `episode` and its first rows."""
        text = cand.text  # checked as written; kept about the person, not in their voice
        if opens_in_first_person(text):  # "I'm allergic to kiwi"
            text = told_as(text, "they")
        new = NewFact(
            owner_id=owner_id,
            kind=cand.kind,
            text=text,
            source=episode.source,
            subject=cand.subject or "self",
            attribute=cand.attribute,
            confidence=cand.confidence,
            channel_id=episode.channel_id,
            valid_from=episode.ended_at,
            episode_ids=(episode.id,),
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
