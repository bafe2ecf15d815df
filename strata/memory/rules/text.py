"""The words of a text, as recall, fact search and forgetting all see them. Imports
`strata.memory.engines.fts`.

One stemmer (`stem`) and one coverage measure (`coverage`), so that "does this text mention
the query" means the same thing in the recall blend, in fact search and in `/forget`.

`stem` is Porter's, exactly as SQLite's keyword indexes store a word (`fts.porter_stem`), on
both engines: recall scores a window's keywords here in Python, so those scores do not depend
on the engine that holds the memory. PostgreSQL's own index stems with Snowball's `english`
(its `Dialect.stem`); the two agree on most words and differ on some (`generously`: `gener` /
`generous`).
A stem need not be a prefix of its word (`happy` -> `happi`); what is searched for as the
start of a word or as a substring is `stem_prefix`.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Mapping

from strata.core.words import STOPWORDS, WORD
from strata.memory.engines.fts import porter_stem

stem: Callable[[str], str] = porter_stem


def stem_prefix(word: str) -> str:
    """The start of the lower-cased `word` that its stem keeps (`happy` -> `happ`, `paris` ->
    `pari`, `café` -> `caf`): a word with the same stem starts with it, so it can be searched
    for as the start of a word (`word_pattern`) or as a substring (`instr` prefilters)."""
    stemmed = stem(word)
    same = (a == b for a, b in zip(word, stemmed, strict=False))
    return word[:sum(1 for _ in itertools.takewhile(bool, same))]


def tokens(text: str) -> list[str]:
    """Stemmed, lower-cased content words of `text` (stopwords dropped), with repeats."""
    return [stem(w) for w in WORD.findall(text.lower()) if w not in STOPWORDS]


def query_stems(text: str, limit: int = 32) -> list[str]:
    """The query's distinct stems, in order."""
    return list(dict.fromkeys(tokens(text)))[:limit]


@functools.lru_cache(maxsize=4096)  # a fact search asks it for every fact and query term
def word_pattern(term: str) -> re.Pattern[str]:
    """A word starting with the stem of `term` (`stem_prefix`), case-insensitive.

    `cats` finds "cat", "cats" and "Cat's"; `zorblax` finds "Zorblax's" but not "xzorblax".
    """
    return re.compile(r"(?<!\w)" + re.escape(stem_prefix(term.lower())), re.IGNORECASE)


def coverage(weights: Mapping[str, float], found: Callable[[str], bool]) -> float:
    """The weighted share of the terms for which `found(term)` holds: 0..1, 0 without weight."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in weights.items() if found(t)) / total


def text_coverage(text: str, weights: Mapping[str, float]) -> float:
    """The weighted share of the stems in `weights` that are among `text`'s stems."""
    words = set(tokens(text))
    return coverage(weights, words.__contains__)


def term_coverage(query_terms: Iterable[str], text: str) -> float:
    """The share of `query_terms` that start a word of `text` (`word_pattern`): 0..1."""
    return coverage(dict.fromkeys(query_terms, 1.0), lambda t: bool(word_pattern(t).search(text)))


# A model's summary must take at least this share of its content words from what it
# summarises; below it, a small model wrote about something else (SmolLM2-135M answered a
# cluster of hiking notes with '{#13}. [The people at the beach],'). A quarter leaves room
# for a good model's paraphrase ("a day of climbing talk" shares one word in three).
GROUNDED_SHARE = 0.25


# Markup where prose belongs: a summary that opens with a bracket or brace, or holds a JSON key.
# Small models echo the schema or tag their answer ("[Lionade]", '{"who": ...}').
_MARKUP = re.compile(r'^\s*[\[{<]|"\w+"\s*:')


def is_markup(summary: str) -> bool:
    """Whether a model's summary is markup rather than prose: never stored as memory."""
    return bool(_MARKUP.search(summary))
