"""Typed facts bridge words: a question about a kind of fact reaches the lines that state one.

People ask "What is my job?" of a memory that holds "I work as a pharmacist": not one word
in common, and a small sentence model does not see it either. The kinds of fact the
model-free reader knows (`strata.memory.domain.plain_facts`) come with the words that state
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

from strata.memory.domain.plain_facts import PROFESSIONS
from strata.memory.domain.recall_table import RowTable
from strata.memory.domain.text import coverage, tokens


@dataclass(frozen=True, slots=True)
class Bridge:
    """A kind of fact: the question words asking for it and the words stating one."""

    kind: str
    asks: frozenset[str]  # stems
    states: frozenset[str]  # stems


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
           _stems(("job", "jobs", "occupation", "profession", "career", "employer")),
           _stems(("job", "occupation", "profession", "career", "employed", "hired",
                   *sorted(PROFESSIONS - _AMBIGUOUS)))),
)


def bridges_for(stems: Sequence[str]) -> dict[str, frozenset[str]]:
    """{a question stem that asks for a kind of fact: the stems stating one}."""
    out: dict[str, frozenset[str]] = {}
    for b in BRIDGES:
        for s in stems:
            if s in b.asks:
                out[s] = out.get(s, frozenset()) | b.states
    return out


def bridged_stems(stems: Sequence[str], bridges: Mapping[str, frozenset[str]]) -> list[str]:
    """`stems`, then the bridges' words (sorted, so the same question searches the same)."""
    extra = sorted({w for words in bridges.values() for w in words})
    return list(dict.fromkeys([*stems, *extra]))


def bridged_coverage(table: RowTable, rows: Sequence[int], weights: Mapping[str, float],
                     bridges: Mapping[str, frozenset[str]]) -> float:
    """The gate's coverage of `weights` (the question's stems) by `rows`, a bridged stem
    counting as found where a word stating its kind is."""

    def found(term: str) -> bool:
        return any(r in table.postings.get(w, ()) for w in {term, *bridges.get(term, ())}
                   for r in rows)

    return coverage(weights, found)
