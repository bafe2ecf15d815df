"""One fact-extraction batch (`Batch`): the episodes read together, what the model was shown,
and the lines the checks hold a candidate against: the person's own (`evidence_in`) and the
assistant's and others' (`line_problem`). Pure: no SQL, no model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from strata.memory.checks.fact_evidence import (
    Speakers,
    echoes_assistant,
    find_evidence,
    text_problem,
)
from strata.memory.facts.candidates import Candidate, Excerpt
from strata.memory.facts.plain import plain_candidates
from strata.memory.rules.statement_kind import context_problem, taken_back
from strata.memory.store.episodes import Episode


@dataclass(frozen=True, slots=True)
class Batch:
    """Episodes read in one extraction call: what the model was shown and, per episode, the
    person's own lines and everyone else's (the check's evidence and counter-evidence)."""

    episodes: list[Episode]
    excerpts: list[Excerpt]
    person_lines: dict[int, list[tuple[int, str]]]  # episode id -> (row id, text)
    other_lines: dict[int, list[str]]  # episode id -> the assistant's (and others') lines
    speakers: Speakers
    prompt: tuple[str, ...] = ()  # the instructions the model saw (for the echo test)

    def plain(self) -> list[Candidate]:
        """Candidates read without the model from the person's own lines (episodes of the
        person's own channel only: elsewhere the lines are an agent's findings)."""
        return [cand for ep in self.episodes if ep.source == "user"
                for _, text in self.person_lines.get(ep.id, [])
                for cand in plain_candidates(ep.id, text)]


def line_problem(cand: Candidate, batch: Batch, episode_id: int,
                  rows: Sequence[int]) -> str | None:
    """Why the lines that hold the candidate's evidence do not carry it: the evidence or the
    text echoes the assistant, the text carries a number the line takes back, the line around
    the quoted words is no assertion, or the text does not rest on them."""
    lines = dict(batch.person_lines[episode_id])
    theirs = [lines[r] for r in rows]
    others = batch.other_lines[episode_id]
    if echoes_assistant(cand.evidence, theirs, others) or echoes_assistant(
            cand.text, theirs, others):
        return "evidence from the assistant"
    if any(n in cand.text for n in taken_back(theirs[0])):
        return "taken back"  # "born in 1987. No wait: 1983": 1987 is not the person's year
    return context_problem(cand.evidence, theirs[0]) or text_problem(cand.text, cand.evidence)


def evidence_in(cand: Candidate, batch: Batch) -> tuple[Episode | None, list[int]]:
    """The episode whose person lines hold the candidate's evidence (the one it names first),
    with the rows that hold it; (None, []) when none does."""
    episode_ids = [e.id for e in batch.episodes]
    if cand.episode in episode_ids:  # look in the named episode first
        episode_ids.remove(cand.episode)
        episode_ids.insert(0, cand.episode)
    for eid in episode_ids:
        rows = find_evidence(cand.evidence, batch.person_lines.get(eid, []))
        if rows:
            return next(e for e in batch.episodes if e.id == eid), rows
    return None, []
