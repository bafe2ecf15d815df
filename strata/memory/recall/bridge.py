"""Bridges by kind: a question that asks for a kind of thing reaches the lines that name one.

People ask "What is my job?" of a memory that holds "I work as a pharmacist", and "Which
instrument is Lena learning?" of "I've been practising the harp": not one word in common, and
a small sentence model does not see it either. Each kind of `strata.memory.recall.kind_words`
(a job, an instrument, a dog, a pet, a sport, a language, a car…) comes with the words that
name one; a question that asks for one by its kind's word ("job", "instrument", "dog") is
searched with those words too, and for the gate a row that names one holds the question's
word: "harp" answers "instrument". A stored fact carries its kind in its indexed text
("Works as a pharmacist (job)"), so it is found by the word directly; the bridge reaches the
transcript lines a fact was, or was not yet, read from.

Narrow on purpose: each bridge is a closed list of words, never a guess, so a question whose
kind the memory never names stays silent, and the gate still weighs every other word of the
question (a name this memory never mentions among them). And whose: a question that names a
speaker of this memory ("Which instrument is Ines learning?") finds its kind only in that
speaker's own rows (`Whose`), not in the cello the other speaker of the chat plays. Pure (no
SQL, no I/O).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from strata.memory.recall.kind_words import KINDS, Kind
from strata.memory.rules.names import names_in
from strata.memory.rules.row_table import RowTable
from strata.memory.rules.text import coverage, tokens


@dataclass(frozen=True, slots=True)
class Bridge:
    """A kind of thing: the question words asking for one, and the groups of words stating
    one: each a set of words and the cues one of them needs beside it in the same row (none:
    the word states one alone). "pharmacist" states a job beside "work" or "started"; "the
    doctor confirmed it" names a profession and states no job."""

    kind: str
    asks: frozenset[str]  # stems
    groups: tuple[tuple[frozenset[str], frozenset[str]], ...]  # (words, cues), stems

    @property
    def words(self) -> frozenset[str]:
        """Every word of the bridge, cues too: what the ranking searches with."""
        return frozenset(w for words, cues in self.groups for w in words | cues)

    def stated_in(self, table: RowTable, row: int) -> bool:
        """Whether the row states a thing of this kind."""

        def has(words: frozenset[str]) -> bool:
            return any(row in table.postings.get(w, ()) for w in words)

        return any(has(words) and (not cues or has(cues)) for words, cues in self.groups)


def _stems(words: str) -> frozenset[str]:
    return frozenset(s for w in words.split() for s in tokens(w))


def bridge_of(kind: Kind) -> Bridge:
    """The bridge of a kind of `strata.memory.recall.kind_words`, its words stemmed."""
    groups = [(_stems(kind.alone), frozenset[str]())] if kind.alone else []
    groups += [(_stems(c.words), _stems(c.cues)) for c in kind.cued]
    return Bridge(kind.name, _stems(kind.asks), tuple(groups))


BRIDGES: tuple[Bridge, ...] = tuple(bridge_of(k) for k in KINDS)


def bridges_for(stems: Sequence[str]) -> dict[str, Bridge]:
    """{a question stem that asks for a kind of fact: that kind's bridge}."""
    return {s: b for b in BRIDGES for s in stems if s in b.asks}


def bridged_stems(stems: Sequence[str], bridges: Mapping[str, Bridge]) -> list[str]:
    """`stems`, then the bridges' words (sorted, so the same question searches the same)."""
    extra = sorted({w for b in bridges.values() for w in b.words})
    return list(dict.fromkeys([*stems, *extra]))


@dataclass(frozen=True, slots=True)
class Whose:
    """The rows whose statement of a kind answers a question: those of the speakers it names.
    `who[i]`: row i's speaker, lower-cased ("" for none, `strata.memory.recall.profiles`)."""

    who: Sequence[str]
    named: frozenset[str]

    def __contains__(self, row: object) -> bool:
        return isinstance(row, int) and self.who[row] in self.named


def whose(query: str, who: Sequence[str], speakers: frozenset[str]) -> Whose | None:
    """The speakers of this memory (`speakers`; `who`: each row's) that the query names, or
    None when it names none: "What is my job?", or a question about someone who never speaks
    here ("Lena's son"), may find the kind in anyone's row."""
    named = frozenset(names_in(query)) & speakers
    return Whose(who, named) if named else None


def bridged_coverage(table: RowTable, rows: Sequence[int], weights: Mapping[str, float],
                     bridges: Mapping[str, Bridge], owner: Whose | None = None) -> float:
    """The gate's coverage of `weights` (the question's stems) by `rows`, a bridged stem
    counting as found in a row that states a fact of its kind: with `owner`, only in a row of
    a speaker the question names (the question's own word counts in any row, as always)."""

    def stated(bridge: Bridge | None, r: int) -> bool:
        return (bridge is not None and (owner is None or r in owner)
                and bridge.stated_in(table, r))

    def found(term: str) -> bool:
        bridge = bridges.get(term)
        return any(r in table.postings.get(term, ()) or stated(bridge, r) for r in rows)

    return coverage(weights, found)
