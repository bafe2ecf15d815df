"""One owner's rows as recall ranks them, pure (numpy, no SQL, no I/O): the row table, its
neighbour links (a row's window is the row with its neighbour before and after in the same
channel and session; a pause longer than `session_gap_minutes` starts a new session) and the
word postings that BM25 reads (`strata.memory.recall.rank`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from strata.memory.rules.row_words import Postings, merge, split_rows

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]




_POSSESSIVE = re.compile(r"['’]s$")


def surface_words(text: str) -> list[str]:
    """Lower-cased words as written, possessive 's dropped: what a name is checked against
    (the stemmer would make `times` into `tim`, a name)."""
    return [_POSSESSIVE.sub("", w) for w in re.findall(r"[\w'’]+", text.lower())]


@dataclass
class RowTable:
    """One owner's live recallable rows, in id order, ready to rank.

    `prev`/`next` link a row to its neighbour in the same channel and session (−1: none).
    Built per owner from words kept as rows arrive (`strata.memory.recall.index`).
    """

    ids: I64
    channel: I64
    session: I64
    minutes: F64  # the row's time, minutes since the epoch
    vectors: F32  # (n, dim), L2-normalised; zero where a row has no vector yet
    has_vec: npt.NDArray[np.bool_]
    prev: I64
    next: I64
    lengths: F64  # content words per row
    postings: Postings = field(default_factory=dict)
    padded: F32 = field(default_factory=lambda: np.zeros((1, 1), np.float32))  # + a zero row
    window_norm: F64 = field(default_factory=lambda: np.zeros(0))  # |sum of a window's vectors|
    words: frozenset[str] = frozenset()  # every lower-cased word as written (names, unstemmed)
    # The bot's own replies (role assistant), those of them that are a question the person
    # answered next (context for the answer), and the person's questions about themselves
    # that the bot answered: the bot's words are no evidence about the person, and neither is
    # the question its answer was to (`speakers`; all False when not known).
    bot: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, bool))
    lead_in: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, bool))
    asked_bot: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, bool))
    # What ranking derives from the rows alone, per choice of rows left out
    # (`strata.memory.recall.rank.frame_of`); a table's rows never change.
    frames: dict[tuple[bytes, bytes | None], Any] = field(default_factory=dict, repr=False,
                                                          compare=False)

    @property
    def n(self) -> int:
        return int(self.ids.shape[0])


def link_neighbours(channel: I64, minutes: F64, gap_minutes: float) -> tuple[I64, I64, I64]:
    """prev, next and session index of each row (rows in id order; sessions numbered in the
    order they start)."""
    n = channel.shape[0]
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    if not n:
        return prev, nxt, np.zeros(0, dtype=np.int64)
    order = np.argsort(channel, kind="stable")  # each channel's rows, in id order
    ch, mins = channel[order], minutes[order]
    linked = (ch[1:] == ch[:-1]) & (mins[1:] - mins[:-1] <= gap_minutes)
    prev[order[1:][linked]] = order[:-1][linked]
    nxt[order[:-1][linked]] = order[1:][linked]
    starts = prev < 0
    number = np.cumsum(starts) - 1  # a session's number: how many started before it
    # In channel order, a row belongs to the last session start at or before it.
    at = np.arange(n)
    last_start = np.maximum.accumulate(np.where(starts[order], at, 0))
    session = np.empty(n, dtype=np.int64)
    session[order] = number[order[last_start]]
    return prev, nxt, session


def add_words(postings: Postings, lengths: list[float], surface: set[str],
              texts: Sequence[str]) -> None:
    """Append `texts` (the next rows, in order) to `postings`, `lengths` and `surface` (every
    lower-cased word as written) in place."""
    if not texts:
        return
    more, counted, words = split_rows(texts, offset=len(lengths))
    merge(postings, more)
    lengths.extend(counted.tolist())
    surface.update(words)


# A question about the person: first-person words ("What is my job?", "Do I like hiking?").
_ABOUT_SELF = re.compile(r"\b(i|i'm|i’m|im|me|my|mine|myself)\b", re.IGNORECASE)


def asks(role: str, text: str) -> bool:
    """Whether a row asks: the bot anything, a person about themselves."""
    if "?" not in text:
        return False
    return role == "assistant" or _ABOUT_SELF.search(text) is not None


def speakers(bot: Sequence[bool], asking: Sequence[bool], prev: I64,
             nxt: I64) -> tuple[npt.NDArray[np.bool_], ...]:
    """(bot, lead_in, asked_bot) per row from who said it (`bot`) and whether it asks
    (`asking`, as `asks` tells): a bot question the person answered next, not itself an
    answer to the person's question; and a person's question about themselves that the bot
    answered."""
    is_bot = np.asarray(bot, dtype=bool).reshape(prev.shape)
    asks_ = np.asarray(asking, dtype=bool).reshape(prev.shape)
    person_asks = asks_ & ~is_bot
    after_person = (nxt >= 0) & ~is_bot[np.maximum(nxt, 0)]
    answers_person = (prev >= 0) & person_asks[np.maximum(prev, 0)]
    lead_in = is_bot & asks_ & after_person & ~answers_person
    asked_bot = person_asks & (nxt >= 0) & is_bot[np.maximum(nxt, 0)]
    return is_bot, lead_in, asked_bot


def build_table(ids: Sequence[int], channel: Sequence[int], minutes: Sequence[float],
                texts: Sequence[str], vectors: F32, has_vec: npt.NDArray[np.bool_],
                gap_minutes: float,
                kept: tuple[Postings, Sequence[float], set[str]] | None = None,
                bot: Sequence[bool] | None = None,
                asking: Sequence[bool] | None = None,
                previous: tuple[RowTable, Sequence[int]] | None = None) -> RowTable:
    """A `RowTable` from rows in id order (`texts` is what keyword search sees).

    `kept`: the rows' postings, lengths and surface words as `add_words` made them, kept by a
    caller that extends the table as rows arrive, so that only new rows are split into words.
    The table gets a copy: the caller's keep growing while a search may still rank this
    table. `bot`: which rows are the bot's replies; `asking`: which ask (`asks`).
    `previous`: the table these rows extend (its rows first, in order) and the rows whose
    vectors changed since: only the windows that changed are summed again."""
    ch = np.asarray(channel, dtype=np.int64)
    mins = np.asarray(minutes, dtype=np.float64)
    prev, nxt, session = link_neighbours(ch, mins, gap_minutes)
    if kept is None:
        postings: Postings = {}
        counted: list[float] = []
        words: set[str] = set()
        add_words(postings, counted, words, texts)
    else:
        postings = dict(kept[0])  # `merge` replaces a posting, never changes one
        counted = list(kept[1])
        words = kept[2]
        if len(counted) != len(texts):
            raise ValueError(f"words of {len(counted)} rows for a table of {len(texts)}")
    lengths = np.asarray(counted, dtype=np.float64).reshape(len(texts))
    vecs = np.asarray(vectors, dtype=np.float32)
    if vecs.ndim != 2 or vecs.shape[0] != len(texts):
        vecs = np.zeros((len(texts), vecs.shape[-1] if vecs.ndim == 2 else 1), np.float32)
    padded = np.vstack([vecs, np.zeros((1, vecs.shape[1]), np.float32)])
    n = len(texts)
    p = np.where(prev >= 0, prev, n)
    x = np.where(nxt >= 0, nxt, n)
    norm = _window_norms(padded, p, x, prev, nxt, ids, previous)
    none = [False] * n
    is_bot, lead_in, asked = speakers(none if bot is None else bot,
                                      none if asking is None else asking, prev, nxt)
    return RowTable(np.asarray(ids, dtype=np.int64), ch, session, mins, vecs,
                    np.asarray(has_vec, dtype=bool), prev, nxt, lengths, postings, padded,
                    norm, frozenset(words), is_bot, lead_in, asked)


def _window_norms(padded: F32, p: I64, x: I64, prev: I64, nxt: I64, ids: Sequence[int],
                  previous: tuple[RowTable, Sequence[int]] | None) -> F64:
    """|sum of each window's vectors| (`p`, `x`: the neighbours, the zero row where none).
    With `previous` (a table whose rows come first, and the rows whose vectors changed
    since) only the windows of new rows, of rows whose neighbours or vectors changed, and of
    their neighbours are summed; a row's sum and norm are the same computed alone or with
    all the others, so the result is the whole computation's, bit for bit."""
    n = p.shape[0]
    if not n:
        return np.zeros(0)
    old = previous[0] if previous is not None else None
    m = old.n if old is not None else 0
    if old is None or m > n or not np.array_equal(old.ids, np.asarray(ids[:m], np.int64)):
        return np.linalg.norm(padded[p] + padded[:n] + padded[x], axis=1).astype(np.float64)
    redo = np.ones(n, dtype=bool)
    redo[:m] = (old.prev != prev[:m]) | (old.next != nxt[:m])
    touched = np.asarray(previous[1] if previous is not None else (), dtype=np.int64)
    for near in (touched, prev[touched], nxt[touched]):
        redo[near[near >= 0]] = True
    norm = np.empty(n, dtype=np.float64)
    norm[:m] = old.window_norm
    at = np.flatnonzero(redo)
    norm[at] = np.linalg.norm(padded[p[at]] + padded[at] + padded[x[at]], axis=1)
    return norm
