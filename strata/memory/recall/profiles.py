"""What a memory ties to each person it names: the things that are theirs.

A question about "John's team" asked of a memory whose John never had a team is about another
John. Keyword coverage and the cosine cannot see that (the memory's John is in half its rows,
and both people of a chat talk about the same things); what the memory says is John's can.
A person's **profile** is the set of word stems the transcript ties to them as theirs:

- what they say is theirs: "my X", "our X" in a row they said;
- what is said to them is theirs: "your X" in a row answering one of theirs (the row before
  it in the same channel and session is theirs);
- what anyone calls theirs: "John's X" in any row.

X is the next word, unless it is a stopword ("my team" gives `team`). A row's speaker is the
name its searchable text begins with (`keyword_text`: the speaker's name, or "Name: " when the
content carries it); the bot's replies have none, but their "your X" still ties X to the
person they answer.

A question ties things to a person the same way ("John's team", "his basketball career" when
it names one known person) and `unowned` says whether the memory ties none of them to that
person. The gate (`strata.memory.recall.gate`) makes that a penalty: the question is
about things this memory's John never had. A question that ties nothing to anyone ("What did
John do in June?") pays nothing.

Pure (no SQL, no I/O): profiles are built from the texts the row index keeps, once per table
(`ProfileCache`), in one pass over the rows, only when a question asks about something of a
known person.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from strata.core.words import STOPWORDS
from strata.memory.rules.names import names_in
from strata.memory.rules.row_table import RowTable
from strata.memory.rules.text import tokens

# A row's speaker: "Name: " at its start (the eval's rows and many imports), else the first
# word of a person's row (`keyword_text` puts the speaker's name first).
_SPEAKER = re.compile(r"^([\w.'’-]{1,40})(?: [\w.'’-]{1,40})?: ")
_FIRST = re.compile(r"^([\w'’-]+)")
_WORDS = r"\s+([\w'’-]+)"
_OWN = re.compile(r"\b(?:my|our)" + _WORDS, re.IGNORECASE)
_YOURS = re.compile(r"\byour" + _WORDS, re.IGNORECASE)
_NAMED = re.compile(r"\b([A-Z][\w-]*)['’]s" + _WORDS)
_THIRD = re.compile(r"\b(?:his|her|their)" + _WORDS, re.IGNORECASE)

Profiles = Mapping[str, frozenset[str]]


def _things(match: re.Match[str]) -> list[str]:
    """The stems of the word after a possessive (its last group), unless a stopword or a
    number: "John's team" gives `team`, "her kids'" `kid`, "his one-year-old" `on`, `year`,
    `old`. One word: a second is as often the next clause ("John's reason for")."""
    word = match.group(match.lastindex or 0).lower().rstrip("'’")
    if word in STOPWORDS or word.isdigit():
        return []
    return tokens(word)


def speaker_of(text: str, bot: bool) -> str:
    """The lower-cased name a row's searchable text begins with: "Name: " on any row, else a
    person's row's first word ("" for the bot's own replies)."""
    m = _SPEAKER.match(text) or (None if bot else _FIRST.match(text))
    return m.group(1).lower() if m else ""


def build_profiles(texts: Sequence[str], bot: Sequence[bool], prev: Sequence[int]) -> Profiles:
    """Every person's profile (keyed by their lower-cased name) from the rows' searchable
    texts in table order; `prev[i]` is row i's neighbour before it in its channel and session
    (−1: none)."""
    tied: dict[str, set[str]] = {}
    who = [speaker_of(t, b) for t, b in zip(texts, bot, strict=True)]
    for i, text in enumerate(texts):
        if who[i]:
            for m in _OWN.finditer(text):
                tied.setdefault(who[i], set()).update(_things(m))
        addressee = who[prev[i]] if prev[i] >= 0 else ""
        if addressee and addressee != who[i]:
            for m in _YOURS.finditer(text):
                tied.setdefault(addressee, set()).update(_things(m))
        for m in _NAMED.finditer(text):
            tied.setdefault(m.group(1).lower(), set()).update(_things(m))
    return {name: frozenset(stems) for name, stems in tied.items()}


def add_notes(profiles: Profiles, notes: Iterable[str]) -> Profiles:
    """`profiles` with what notes (facts, episode summaries) call someone's: "John's X"."""
    tied = {name: set(stems) for name, stems in profiles.items()}
    for text in notes:
        for m in _NAMED.finditer(text):
            tied.setdefault(m.group(1).lower(), set()).update(_things(m))
    return {name: frozenset(stems) for name, stems in tied.items()}


@dataclass(frozen=True, slots=True)
class Asked:
    """What a question ties to a person it names: `things[i]` is one possessive's stems."""

    person: str
    things: tuple[tuple[str, ...], ...]


def asked_of(query: str, known: Sequence[str]) -> list[Asked]:
    """The things the query calls a known person's: "John's team" for each named one, and
    "his/her/their X" when the query names exactly one known person (the pronoun is theirs).
    `known`: the query's names (lower-cased, as written) that the memory mentions."""
    known_set = set(known)
    out: dict[str, list[tuple[str, ...]]] = {}
    for m in _NAMED.finditer(query):
        name = m.group(1).lower()
        things = tuple(_things(m))
        if name in known_set and things:
            out.setdefault(name, []).append(things)
    if len(known_set) == 1:
        (name,) = known_set
        for m in _THIRD.finditer(query):
            things = tuple(_things(m))
            if things:
                out.setdefault(name, []).append(things)
    return [Asked(name, tuple(things)) for name, things in out.items()]


def unowned(query: str, table: RowTable, profiles: Profiles) -> bool:
    """Whether the query calls something a known person's that this memory never ties to
    them: it names a person the memory knows and has a profile of, ties things to them, and
    none of those things shares a stem with their profile. A person the memory ties nothing
    to (no profile) is no evidence either way."""
    known = [w for w in names_in(query) if w in table.words]
    asked = [a for a in asked_of(query, known) if profiles.get(a.person)]
    return bool(asked) and all(
        not any(set(thing) & profiles[a.person] for thing in a.things) for a in asked)


class ProfileCache:
    """Each owner's row speakers and profiles for the table they were built from: rebuilt
    only when the owner's table is (a new row or a reload makes a new table), for at most
    `owners` owners."""

    def __init__(self, owners: int) -> None:
        self._owners = owners
        self._kept: dict[int, _Kept] = {}

    def _of(self, owner_id: int, table: RowTable, texts: Sequence[str]) -> _Kept:
        kept = self._kept.pop(owner_id, None)
        if kept is None or kept.table is not table:
            bot = _bot(table)
            who = [speaker_of(t, b) for t, b in zip(texts[: table.n], bot, strict=True)]
            kept = _Kept(table, who, frozenset(who) - {""})
        self._kept[owner_id] = kept  # the most recently used last
        while len(self._kept) > self._owners:
            self._kept.pop(next(iter(self._kept)))
        return kept

    def get(self, owner_id: int, table: RowTable, texts: Sequence[str]) -> Profiles:
        """`texts`: the table's rows' searchable texts, in table order."""
        kept = self._of(owner_id, table, texts)
        if kept.profiles is None:
            kept.profiles = build_profiles(texts[: table.n], _bot(table), table.prev.tolist())
        return kept.profiles

    def speakers(self, owner_id: int, table: RowTable,
                 texts: Sequence[str]) -> tuple[list[str], frozenset[str]]:
        """Each row's speaker (`speaker_of`) and the set of them."""
        kept = self._of(owner_id, table, texts)
        return kept.who, kept.names

    def penalty(self, owner_id: int, table: RowTable, texts: Sequence[str], query: str,
                notes: Sequence[str], weight: float) -> float:
        """`weight` when the query calls something a known person's that this memory (its
        rows, and `notes`: the facts and notes among the candidates) never ties to them, else
        0. Nothing is built when `weight` is 0 or the query ties nothing to anyone."""
        if weight <= 0 or (not _THIRD.search(query) and not _NAMED.search(query)):
            return 0.0
        profiles = add_notes(self.get(owner_id, table, texts), notes)
        return weight if unowned(query, table, profiles) else 0.0


@dataclass(slots=True)
class _Kept:
    """One owner's cached speakers and (built on first use) profiles for one table."""

    table: RowTable
    who: list[str]
    names: frozenset[str]
    profiles: Profiles | None = None


def _bot(table: RowTable) -> list[bool]:
    return (table.bot.tolist() if table.bot.shape[0] == table.n
            else np.zeros(table.n, bool).tolist())
