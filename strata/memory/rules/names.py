"""Names in a query: the capitalised words that may name someone, and whether this memory has
ever mentioned them. A question about a stranger feeds the abstention gate
(`strata.memory.recall.gate`); names and dates are left out of the query's content words."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from dataclasses import dataclass

from strata.core.words import STOPWORDS, WORD
from strata.memory.rules.row_table import RowTable, surface_words
from strata.memory.rules.text import stem, tokens

_NAME = re.compile(r"\b[A-Z][\w'’-]*")


# Capitalised, but about time, not someone: memory dates are numeric, so these need not occur.
CALENDAR = frozenset(
    """january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday
    saturday sunday""".split()  # noqa: SIM905 - easier to read as prose
)


# A full stop after these ends an abbreviation, not a sentence: the "Seuss" of "Dr. Seuss" is a
# name, and the "City" of "U.S. City" is no sentence's first word.
_TITLES = frozenset({"mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "mt", "vs"})


_CLOSERS = "\"'’”)"


def _ends_sentence(before: str) -> bool:
    """Whether `before` (the text up to a word) ends a sentence: a full stop, ! or ? (then
    perhaps a closing quote or bracket) and a space, after a word longer than an initial that
    is not a title. Read from the end only: this runs for every capitalised word of a message
    on the turn's path."""
    if not before or not before[-1].isspace():
        return False
    text = before.rstrip().rstrip(_CLOSERS)
    if not text or text[-1] not in ".!?":
        return False
    text = text.rstrip(".!?")
    n = len(text)
    while n and (text[n - 1].isalnum() or text[n - 1] == "_"):
        n -= 1
    word = text[n:]
    return len(word) > 1 and word.lower() not in _TITLES


def _capitalised(query: str) -> list[str]:
    """The query's capitalised words that may be names: not one that begins the query or a
    sentence in it (capitalised for that reason alone)."""
    first = WORD.search(query)
    return [m.group(0) for m in _NAME.finditer(query)
            if not (first is not None and m.start() <= first.start())  # the query's first word
            and not _ends_sentence(query[max(0, m.start() - 64):m.start()])]


@dataclass(frozen=True, slots=True)
class NameCheck:
    """What a query's names say of one memory: the ones it never mentions (as written in the
    query), and whether it mentions any of the others."""

    strangers: tuple[str, ...] = ()
    familiar: bool = False

    @property
    def stranger(self) -> bool:
        """The query names someone or something this memory never mentions."""
        return bool(self.strangers)

    @property
    def only_strangers(self) -> bool:
        """Every name of the query is a stranger's: it asks about someone this memory has never
        heard of and about nobody it has ("What is Nate's favorite dish?" of a memory without
        a Nate), not about a person it knows beside a new word ("What European countries has
        Maria been to?")."""
        return bool(self.strangers) and not self.familiar


def name_check(query: str, table: RowTable, known: Collection[str] = ()) -> NameCheck:
    """The names in the query (capitalised words, not the first of the query or of one of its
    sentences, not a month or weekday), each checked against this memory's rows and `known`
    (the words of its other memories, e.g. a roll-up parent's summary once the rows it came
    from are pruned)."""
    out = []
    familiar = False
    for w in _capitalised(query):
        for word in _name_words(w):
            if word not in table.words and word not in known:
                out.append(w)
                break
            familiar = True
    return NameCheck(tuple(out), familiar)


def _name_words(name: str) -> list[str]:
    """The words of a capitalised word that can name someone: initials (U.S.), calendar words
    and stopwords say nothing about who is meant."""
    return [word for word in surface_words(name)
            if len(word) >= 3 and word not in CALENDAR and word not in STOPWORDS]


def names_in(text: str) -> list[str]:
    """The lower-cased words of `text` that may name someone or somewhere, read as `name_check`
    reads a query (not a sentence's first word, not a month, weekday, initial or stopword)."""
    return [word for w in _capitalised(text) for word in _name_words(w)]


def strangers(query: str, table: RowTable, known: Collection[str] = ()) -> list[str]:
    """The names in the query that this memory never mentions, as written in the query."""
    return list(name_check(query, table, known).strangers)


def unknown_name(query: str, table: RowTable, known: Collection[str] = ()) -> bool:
    """Whether the query names someone or something this memory never mentions: a question
    about a stranger."""
    return name_check(query, table, known).stranger


@functools.cache
def calendar_stems() -> frozenset[str]:
    """The stems of the calendar words, made on first use: stemming loads the stemmer
    (`strata.memory.engines.fts`), which importing this module must not do (it would delay
    every start-up)."""
    return frozenset(stem(w) for w in CALENDAR)


def without_names(query: str, idf: dict[str, float]) -> dict[str, float]:
    """The query's idf weights without its names and dates (a name is checked by
    `unknown_name`; a known name alone says nothing about whether this memory holds the
    answer; a month, weekday or number is when, and memory keeps dates in its headers, not in
    what was said, so "in June" is no word the answer lacks)."""
    names = {t for w in _NAME.findall(query) for t in tokens(w)}
    names |= {t for t in idf if t in calendar_stems() or t.isdigit()}
    content = {t: w for t, w in idf.items() if t not in names}
    return content or idf  # a query of names only: the names are its content


def known_names(query: str, table: RowTable) -> list[str]:
    """The stems of the query's names (read as `strangers` reads them) that this memory's rows
    mention: the people or places a question is about that the memory knows something of."""
    out: list[str] = []
    for w in _capitalised(query):
        for word in _name_words(w):
            if word in table.words:
                out.extend(t for t in tokens(word) if t in table.postings and t not in out)
    return out
