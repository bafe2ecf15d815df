"""Typed facts bridge words: a question about a kind of fact reaches the lines that state one.

People ask "What is my job?" of a memory that holds "I work as a pharmacist": not one word
in common, and a small sentence model does not see it either. The kinds of fact the
model-free reader knows (`strata.memory.facts.plain`) come with the words that state
them (a job: the professions it recognises, "job", "career"…); a question that asks for one
of those kinds by name ("job", "occupation", "profession", "career", "employer") is
searched with those words too, and for the gate a window that holds one of them holds the
question's word: "pharmacist" answers "job". The facts themselves already carry their kind in
their indexed text ("Works as a pharmacist (job)"), so a stored fact is found by the word
directly; the bridge reaches the transcript lines a fact was, or was not yet, read from.

Narrow on purpose: each bridge is a closed list of words, never a guess, so a question whose
kind the memory never states stays silent. Pure (no SQL, no I/O).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from strata.memory.rules.fact_words import PROFESSIONS
from strata.memory.rules.row_table import RowTable
from strata.memory.rules.text import coverage, tokens


@dataclass(frozen=True, slots=True)
class Bridge:
    """A kind of fact: the question words asking for it, the words stating one on their own,
    and the names of its values ("pharmacist"), which state one only beside a cue ("work",
    "position"): "the doctor confirmed it" names a profession and states no job."""

    kind: str
    asks: frozenset[str]  # stems
    states: frozenset[str]
    names: frozenset[str]
    cues: frozenset[str]

    @property
    def words(self) -> frozenset[str]:
        return self.states | self.names | self.cues

    def stated_in(self, table: RowTable, row: int) -> bool:
        """Whether the row states a fact of this kind."""

        def has(words: frozenset[str]) -> bool:
            return any(row in table.postings.get(w, ()) for w in words)

        return has(self.states) or (has(self.names) and has(self.cues))


def _stems(words: Sequence[str]) -> frozenset[str]:
    return frozenset(s for w in words for s in tokens(w))


# Professions whose stem is also another everyday word's, so they would answer "job" for
# anyone who cooks or has a garden: the verbs ("cooked", "nursing", "coached" stem to "cook",
# "nurs", "coach") and the agent nouns the stemmer cuts back to their root ("gardener" and
# "garden", "designer" and "design", "engineer" and "engine"). `tests/unit/
# test_recall_bridge.py` checks everyday words against the rest.
_AMBIGUOUS = frozenset((
    "cook", "coach", "judge", "nurse", "pilot", "tailor", "vet",
    "accountant", "consultant", "designer", "developer", "engineer", "gardener", "lecturer",
    "mechanic", "photographer", "programmer", "researcher", "translator",
))


BRIDGES: tuple[Bridge, ...] = (
    Bridge("job",
           asks=_stems(("job", "jobs", "occupation", "profession", "career", "employer")),
           states=_stems(("job", "occupation", "profession", "career", "employed")),
           names=_stems(sorted(PROFESSIONS - _AMBIGUOUS)),
           # "I work as a pharmacist", "I started as a carpenter", "a position as a nurse".
           cues=_stems(("work", "works", "worked", "started", "position", "hired"))),
)


def bridges_for(stems: Sequence[str]) -> dict[str, Bridge]:
    """{a question stem that asks for a kind of fact: that kind's bridge}."""
    return {s: b for b in BRIDGES for s in stems if s in b.asks}


def bridged_stems(stems: Sequence[str], bridges: Mapping[str, Bridge]) -> list[str]:
    """`stems`, then the bridges' words (sorted, so the same question searches the same)."""
    extra = sorted({w for b in bridges.values() for w in b.words})
    return list(dict.fromkeys([*stems, *extra]))


def bridged_coverage(table: RowTable, rows: Sequence[int], weights: Mapping[str, float],
                     bridges: Mapping[str, Bridge]) -> float:
    """The gate's coverage of `weights` (the question's stems) by `rows`, a bridged stem
    counting as found in a row that states a fact of its kind."""

    def found(term: str) -> bool:
        bridge = bridges.get(term)
        return any(r in table.postings.get(term, ())
                   or (bridge is not None and bridge.stated_in(table, r)) for r in rows)

    return coverage(weights, found)
