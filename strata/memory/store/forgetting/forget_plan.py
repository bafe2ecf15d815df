"""What a forget will do, before it is done (`strata.memory.store.forgetting.forget`): the plan of
facts, turns, episodes and summaries that match the words, how it reads to the person, and when it
is too broad to run without asking. A word matches when every query word starts a word of the text
(case-insensitive, by stem: see `strata.memory.rules.text.word_pattern`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from strata.core.wording import counted
from strata.core.words import terms
from strata.memory.rules.fact_types import Fact
from strata.memory.rules.text import word_pattern

# A forget that matches more than this many exchanges (or more than one fact) asks first:
# "several exchanges" in the README's words; one exchange is what a person usually means.
AMBIGUOUS_TURNS = 1


_SENTENCE = re.compile(r"(?<=[.!?…])\s+|\n+")


def matcher(words: str) -> list[re.Pattern[str]]:
    """The patterns a text must all match to be forgotten for `words` (empty: no words)."""
    return [word_pattern(t) for t in terms(words)]


def matches(text: str | None, patterns: Sequence[re.Pattern[str]]) -> bool:
    return bool(patterns) and text is not None and all(p.search(text) for p in patterns)


def without_matching_sentences(text: str, patterns: Sequence[re.Pattern[str]]) -> str:
    """`text` minus the sentences (or lines) that match."""
    kept = [s for s in _SENTENCE.split(text) if s.strip() and not matches(s, patterns)]
    return " ".join(s.strip() for s in kept)


@dataclass(frozen=True, slots=True)
class EpisodeFix:
    """An episode to rebuild with `summary` (None: delete it)."""

    episode_id: int
    owner_id: int
    summary: str | None
    key_terms: str = ""


@dataclass
class ForgetPlan:
    person_id: int
    query: str
    facts: list[Fact] = field(default_factory=list)
    turn_ids: set[str] = field(default_factory=set)
    row_ids: set[int] = field(default_factory=set)
    episodes: list[EpisodeFix] = field(default_factory=list)
    compactions: dict[int, str] = field(default_factory=dict)  # row id -> redacted text
    generic: dict[str, list[int]] = field(default_factory=dict)  # table -> rowids
    channels: set[int] = field(default_factory=set)
    # `query` is words (`plan_words`): what else keeps the person's words (the console's
    # prompt history) drops what matches them too.
    by_words: bool = False
    # `#ID`: the conversation the fact came from is still stored (it is not forgotten).
    sources_kept: bool = False

    @property
    def empty(self) -> bool:
        return not (self.facts or self.row_ids or self.episodes or self.compactions
                    or any(self.generic.values()))

    @property
    def ambiguous(self) -> bool:
        live = [f for f in self.facts if f.live]
        return len(live) > 1 or len(self.turn_ids) > AMBIGUOUS_TURNS

    def describe(self) -> str:
        """One line: what would go."""
        if self.query.startswith("#") and not self.by_words:  # `#ID`: exactly one fact
            return f"fact {self.query}"
        parts = []
        if self.facts:
            parts.append(counted(len(self.facts), "fact"))
        if self.turn_ids:
            n = len(self.turn_ids)
            parts.append(f"{counted(n, 'exchange')} of our conversation")
        rebuilt = sum(1 for e in self.episodes if e.summary is not None)
        dropped = len(self.episodes) - rebuilt
        if dropped:
            parts.append(counted(dropped, "memory", "memories"))
        if rebuilt:
            parts.append(counted(rebuilt, "rewritten memory", "rewritten memories"))
        if self.compactions:
            n = len(self.compactions)
            parts.append(counted(n, "summary", "summaries"))
        other = sum(len(v) for v in self.generic.values())
        if other:
            parts.append(counted(other, "other item"))
        return ", ".join(parts) or "nothing"


@dataclass(frozen=True, slots=True)
class WipeReport:
    facts: int
    rows: int
    episodes: int
    other: int
