"""Turn untrusted text into a safe FTS5 MATCH expression, and stem a word as FTS5 indexes it.
Imports nothing of strata.

Raw user text in MATCH is an error (`can't`, `c++`, `foo(bar)`, `*`) or silently changes
meaning (`well-known`, `error:`, `body:x`, a bare `AND`). Every word becomes its own quoted
term; the terms are OR-ed; the result must be bound as a parameter, never formatted into SQL.

The keyword indexes use FTS5's `porter unicode61` tokenizer (migrations 0001-0005):
`porter_stem` gives the term it stores for a word, so Python can stem exactly as the index.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import sys
import threading
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

from strata.core.words import terms

_PORTER_MAX = 64  # FTS5 passes longer tokens through unstemmed (FTS5_PORTER_MAX_TOKEN)


# FTS5's porter tokenizer is a port of Martin Porter's own C release, which departs from the
# 1980 paper in a few rules (`-logi` -> `-log`, `-bli` -> `-ble`, words of two letters kept);
# nltk implements that release as its MARTIN_EXTENSIONS mode (nltk's default mode adds its own
# rules, and Snowball's `porter` is the paper's algorithm: both differ from FTS5).
@functools.cache
def _porter() -> Callable[[str], str]:
    """nltk's Porter stemmer, loaded on first use (`load_stemmer`), without scipy: nltk's
    package init imports all of nltk, and with it scipy.stats and more where scipy is
    installed (collocation statistics and classifiers the stemmer never uses; nltk falls
    back when scipy is missing). With scipy: 3-5 s and about 1,000 modules; without: about
    0.5 s."""
    with _without_scipy():
        from nltk.stem.porter import PorterStemmer

    stemmer = PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)
    return lambda word: str(stemmer.stem(word, to_lowercase=False))


class _NoScipy(importlib.abc.MetaPathFinder):
    """Refuses scipy to one thread's imports; other threads import it as usual (clustering
    needs it), so nothing else in the process is affected."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if threading.get_ident() == self.thread and fullname.split(".")[0] == "scipy":
            raise ModuleNotFoundError(f"{fullname} is not imported for the stemmer",
                                      name=fullname)
        return None


@contextlib.contextmanager
def _without_scipy() -> Iterator[None]:
    finder = _NoScipy()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def load_stemmer() -> None:
    """Load the stemmer now (seconds on a busy machine: see `_porter`), so that a long-running
    process pays it in a thread at start-up rather than in its first turn's recall."""
    _porter()


def match_query(text: str, *, max_terms: int = 32) -> str | None:
    """A MATCH expression of quoted, OR-ed terms, or None when `text` has no words."""
    found = terms(text, max_terms=max_terms)
    if not found:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in found)


def owner_scoped(match: str, owner_id: int, columns: Sequence[str]) -> str:
    """`match` (from `match_query`) limited to `columns`, in rows of one owner.

    For the owner-scoped indexes (`episode_owner_fts`, `fact_fts`), whose `owner_id` column
    is indexed: FTS5 intersects the owner's posting list with the terms' instead of ranking
    every owner's matches. Bind the result as a parameter.
    """
    for column in columns:
        if not column.isidentifier():  # formatted into the expression: plain names only
            raise ValueError(f"bad column name {column!r}")
    return f'owner_id : "{int(owner_id)}" AND {{{" ".join(columns)}}} : ({match})'


@functools.lru_cache(maxsize=65536)
def porter_stem(word: str) -> str:
    """The term FTS5's `porter unicode61` tokenizer stores for one lower-cased word:
    diacritics folded as unicode61 folds them (`café` -> `cafe`), then Porter's stem (`paris`
    -> `pari`, `painted` -> `paint`, `happy` -> `happi`). Not always a prefix of `word`."""
    if not word.isascii():
        word = "".join(c for c in unicodedata.normalize("NFD", word)
                       if not unicodedata.combining(c))
    if len(word.encode()) > _PORTER_MAX:
        return word
    return _porter()(word)
