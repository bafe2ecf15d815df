"""What a fact is (`strata.memory.store.facts` stores them): the closed set of kinds, the
checks a write must pass, the spellings facts are matched on, and the frozen types a fact, a new
fact, a search hit and a write's result are. docs/memory.md."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from strata.core.clock import from_iso
from strata.core.errors import MutedSourceError, UnknownKindError
from strata.core.words import terms
from strata.memory.engines.db import Row
from strata.memory.rules.profiles import profile_for
from strata.memory.rules.text import term_coverage

# Kinds of facts about a person (docs/memory.md) …
PERSON_KINDS: tuple[str, ...] = (
    "user_specific",
    "behavioral_pattern",
    "place",
    "document",
    "discovery",
)


# … and the system kinds: `note` is something the person asked to be remembered verbatim,
# `reflection` a finding of the bot's own reflective pass (DMN).
SYSTEM_KINDS: tuple[str, ...] = ("note", "reflection")


FACT_KINDS: tuple[str, ...] = PERSON_KINDS + SYSTEM_KINDS


LIVE, SUPERSEDED, RETRACTED = "live", "superseded", "retracted"


def check_kind(kind: str) -> str:
    """`kind` if it is one of `FACT_KINDS`, else `UnknownKindError` naming the allowed ones."""
    if kind not in FACT_KINDS:
        raise UnknownKindError(
            f"unknown fact kind {kind!r}; the kinds are: {', '.join(FACT_KINDS)}"
        )
    return kind


def check_source(source: str) -> str:
    """`source` if its profile feeds facts, else `MutedSourceError`."""
    if not profile_for(source).facts:
        raise MutedSourceError(
            f"source {source!r} does not feed facts (see strata/memory/rules/profiles.py)")
    return source


_KEY_JUNK = re.compile(r"[^\w]+", re.UNICODE)


def normalise_key(part: str) -> str:
    """`Home City` → `home_city`: the subject/attribute spelling facts are matched on."""
    return _KEY_JUNK.sub("_", part.strip().lower()).strip("_")


def normalise_text(text: str) -> str:
    """Case- and punctuation-insensitive form of a fact's text, for spotting duplicates."""
    return " ".join(_KEY_JUNK.sub(" ", text.lower()).split())


def index_text(text: str, attribute: str) -> str:
    """What a fact is embedded and matched as: its text plus its attribute key in words."""
    key = normalise_key(attribute).replace("_", " ")
    return f"{text.strip()} ({key})" if key else text.strip()


@dataclass(frozen=True, slots=True)
class Fact:
    id: int
    owner_id: int
    kind: str
    subject: str
    attribute: str
    text: str
    confidence: float
    source: str
    channel_id: int | None
    url: str | None
    status: str
    valid_from: datetime
    invalid_at: datetime | None
    superseded_by: int | None
    created_at: datetime
    last_relevant_at: datetime
    weight: float

    @property
    def live(self) -> bool:
        return self.status == LIVE

    @property
    def key(self) -> tuple[str, str] | None:
        """(subject, attribute) when the fact has an attribute, else None."""
        return (self.subject, self.attribute) if self.attribute else None


@dataclass(frozen=True, slots=True)
class NewFact:
    owner_id: int
    kind: str
    text: str
    source: str
    subject: str = ""
    attribute: str = ""
    confidence: float = 0.8
    channel_id: int | None = None
    url: str | None = None
    valid_from: datetime | None = None
    episode_ids: tuple[int, ...] = ()
    row_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class FactHit:
    """A live fact found for a query. `relevance` is calibrated to 0..1: the better of the
    cosine similarity and the share of query words the fact contains, plus a quarter of the
    other (agreement of both signals counts, neither alone is inflated)."""

    fact: Fact
    relevance: float
    similarity: float
    coverage: float
    cosine: float | None = None
    bm25: float | None = None


@dataclass(frozen=True, slots=True)
class AddResult:
    """What `FactStore.add` did: the new fact's id (None when it was a duplicate of
    `duplicate_of`), and which live facts it superseded or retracted."""

    fact_id: int | None
    duplicate_of: int | None = None
    superseded: tuple[int, ...] = ()
    retracted: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Sources:
    episode_ids: tuple[int, ...] = field(default_factory=tuple)
    row_ids: tuple[int, ...] = field(default_factory=tuple)


def fact_from_db(row: Row) -> Fact:
    return Fact(
        id=row["id"],
        owner_id=row["owner_id"],
        kind=row["kind"],
        subject=row["subject"],
        attribute=row["attribute"],
        text=row["text"],
        confidence=row["confidence"],
        source=row["source"],
        channel_id=row["channel_id"],
        url=row["url"],
        status=row["status"],
        valid_from=from_iso(row["valid_from"]),
        invalid_at=from_iso(row["invalid_at"]) if row["invalid_at"] else None,
        superseded_by=row["superseded_by"],
        created_at=from_iso(row["created_at"]),
        last_relevant_at=from_iso(row["last_relevant_at"]),
        weight=row["weight"],
    )


def scored_hits(facts: Sequence[Fact], text: str, cosine: dict[int, float],
                bm25: dict[int, float]) -> list[FactHit]:
    """Found facts as hits, best first: relevance from the cosine and the query terms' coverage
    of the fact's indexed text."""
    query_terms = terms(text)
    hits = []
    for fact in facts:
        # Negative cosine carries no evidence.
        sim = min(max(cosine.get(fact.id, 0.0), 0.0), 1.0)
        cov = term_coverage(query_terms, index_text(fact.text, fact.attribute))
        relevance = min(max(sim, cov) + 0.25 * min(sim, cov), 1.0)
        hits.append(FactHit(fact, relevance, sim, cov, cosine.get(fact.id),
                            bm25.get(fact.id)))
    hits.sort(key=lambda h: (-h.relevance, -h.fact.id))
    return hits
