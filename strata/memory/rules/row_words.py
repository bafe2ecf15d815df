"""Many rows' words at once, for recall's keyword side (`strata.memory.rules.row_table`):
each stem's posting (the rows that hold it and how often), each row's count of content words
and every word as written. Pure (numpy, no SQL, no I/O).

The words are exactly those of `strata.memory.rules.text.tokens` and of `surface_words`, row
by row; only the way there differs, because splitting the rows one by one with a regular
expression was most of a person's first search (bench/NOTEBOOK.md, "recall near the floor").
Here all rows are joined into one text, ASCII punctuation becomes spaces in one byte-level
`translate`, one `split` gives every word, and each distinct word is looked at once (stopword,
stem). A row with non-ASCII text is split by the regular expression first (`\\w` is wider than
ASCII there), then joins the others.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from strata.core.words import STOPWORDS, SURFACE_WORD, WORD
from strata.memory.rules.text import stem

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

_POSSESSIVE = re.compile(r"['’]s$")
_SEP = "\x00"  # between rows: neither a word character nor whitespace
_ASCII_WORD = frozenset(string.ascii_letters + string.digits + "_")


def _table(keep: str) -> bytes:
    """A `bytes.translate` table: ASCII bytes that are not word characters (nor `keep`)
    become spaces; the row separator and non-ASCII bytes stay."""
    return bytes(b if chr(b) in _ASCII_WORD or chr(b) in keep or b >= 128 else 32
                 for b in range(256))


_TOKEN_BYTES = _table(_SEP)
_SURFACE_BYTES = _table(_SEP + "'")


@dataclass(frozen=True, eq=False)
class Posting:
    """The rows (ascending table indices) that hold one stem, and how often each does."""

    rows: I64
    counts: F64

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def __contains__(self, row: object) -> bool:
        if not isinstance(row, int | np.integer):
            return False
        at = int(np.searchsorted(self.rows, row))
        return at < len(self) and int(self.rows[at]) == row

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Posting) and np.array_equal(self.rows, other.rows)
                and np.array_equal(self.counts, other.counts))

    __hash__ = None  # type: ignore[assignment]  # mutable contents compared by value

    def items(self) -> list[tuple[int, float]]:
        return list(zip(self.rows.tolist(), self.counts.tolist(), strict=True))

    @classmethod
    def many(cls, rows: I64, counts: F64, ends: Sequence[int]) -> list[Posting]:
        """The postings whose rows and counts lie one after another in `rows` and `counts`
        (each ends at its entry of `ends`), made without the frozen `__init__`'s per-field
        `object.__setattr__` (a stored row index holds thousands: `recall.prepared`)."""
        out = []
        start = 0
        for end in ends:
            p = cls.__new__(cls)
            p.__dict__.update(rows=rows[start:end], counts=counts[start:end])
            out.append(p)
            start = end
        return out


Postings = dict[str, Posting]  # stem -> its posting


def _words(lowered: Sequence[str], pattern: re.Pattern[str], table: bytes) -> list[str]:
    """Every word of the rows, in order, with `_SEP` between rows."""
    parts = [x if x.isascii() else " ".join(pattern.findall(x)) for x in lowered]
    joined = _SEP.join(parts)
    if joined.count(_SEP) != len(parts) - 1:  # a row holds the separator: not a word char
        joined = _SEP.join(x.replace(_SEP, " ") for x in parts)
    return joined.encode().translate(table).decode().replace(_SEP, f" {_SEP} ").split()


def surface_of(lowered: Sequence[str]) -> set[str]:
    """Every lower-cased word as written in the (lower-cased) rows, possessive 's dropped."""
    distinct = set(_words(lowered, SURFACE_WORD, _SURFACE_BYTES))
    distinct.discard(_SEP)
    return {_POSSESSIVE.sub("", w) for w in distinct}


def split_rows(texts: Sequence[str], offset: int = 0) -> tuple[Postings, F64, set[str]]:
    """The postings (row indices from `offset`), content-word counts and surface words of
    `texts`, the next rows of a table in order."""
    lowered = [t.lower() for t in texts]
    words = _words(lowered, WORD, _TOKEN_BYTES)
    vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
    ids = np.fromiter(map(vocab.__getitem__, words), np.int64, len(words))
    row = np.cumsum(ids == vocab.get(_SEP, -1))  # a word's row: the separators before it
    # Each distinct word once: its stem's number, or −1 (the separator, a stopword).
    stems: dict[str, int] = {}
    of_word = np.fromiter((-1 if w == _SEP or w in STOPWORDS
                           else stems.setdefault(stem(w), len(stems)) for w in vocab),
                          np.int64, len(vocab))
    tok = of_word[ids]
    content = tok >= 0
    postings, lengths = _postings(tok[content], row[content], len(texts), list(stems), offset)
    return postings, lengths, _surface(lowered, list(vocab), ids, row)


def _surface(lowered: Sequence[str], vocab: list[str], ids: I64, row: I64) -> set[str]:
    """`surface_of` the rows, given their words: in a row without an apostrophe the words as
    written are its `\\w+` words, so only rows with one are split again."""
    marked = np.fromiter(("'" in x or "’" in x for x in lowered), bool, len(lowered))
    plain = np.zeros(len(vocab), dtype=bool)
    plain[ids[~marked[row]]] = True
    surface = {vocab[i] for i in np.flatnonzero(plain).tolist()}
    surface.discard(_SEP)
    if marked.any():
        surface |= surface_of([x for x, m in zip(lowered, marked.tolist(), strict=True) if m])
    return surface


def _postings(tok: I64, row: I64, n: int, names: list[str], offset: int) -> tuple[Postings, F64]:
    """Each stem's posting from the (stem number, row) of every content word, and each row's
    count of content words."""
    lengths = np.bincount(row, minlength=n).astype(np.float64)
    if not tok.size:
        return {}, lengths
    # Grouped by stem, rows still in order within a stem (a stable sort; on 16 bits numpy's
    # is a radix sort, ten times faster than sorting (stem, row) keys).
    small = tok.astype(np.int16) if len(names) <= np.iinfo(np.int16).max else tok
    order = np.argsort(small, kind="stable")
    st, rw = tok[order], row[order]
    first = np.flatnonzero(np.concatenate([[True], (st[1:] != st[:-1]) | (rw[1:] != rw[:-1])]))
    which, rows = st[first], rw[first] + offset
    freq = np.diff(np.append(first, st.shape[0])).astype(np.float64)  # repeats in a row
    starts = np.flatnonzero(np.diff(which, prepend=-1)).tolist()  # each stem's first
    ends = [*starts[1:], which.shape[0]]
    return {names[t]: Posting(rows[a:b], freq[a:b])
            for t, a, b in zip(which[starts].tolist(), starts, ends, strict=True)}, lengths


def merge(into: Postings, more: Postings) -> None:
    """Add `more` (rows after all of `into`'s) to `into`, in place. A changed posting is a
    new object: a table that shares the old one keeps it as it was."""
    for t, p in more.items():
        old = into.get(t)
        into[t] = p if old is None else Posting(np.concatenate([old.rows, p.rows]),
                                                np.concatenate([old.counts, p.counts]))
