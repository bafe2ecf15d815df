"""Recall's words and neighbours computed for many rows at once, and its best windows picked
without a full sort, are exactly those of the plain definitions (`tokens` and `surface_words`
row by row, a walk over the rows, a stable sort of every score)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from strata.memory.recall.rank import best_first, quotable
from strata.memory.rules.row_table import add_words, build_table, link_neighbours, surface_words
from strata.memory.rules.row_words import Posting, Postings, merge, split_rows
from strata.memory.rules.text import tokens

ODD = [
    "", "   ", "the and of", "Hello, WORLD! It's Jürgen's café—naïve “quotes” ΟΔΟΣ Σ",
    "a\x00b c\x00", "\x00", "İstanbul's İ", "tab\tnew\nline under_score 12,345.6 don't",
    "John’s times Paris's x's", "caf\u00e9 e\u0301 日本語のテキスト です", "emoji 😀 ok",
    "UPPER lower MiXeD running runs ran", "x" * 80 + " y", "Caroline: I went to a support group",
]


def row_by_row(texts: Sequence[str], offset: int) -> tuple[dict[str, dict[int, int]],
                                                            list[float], set[str]]:
    postings: dict[str, dict[int, int]] = {}
    lengths: list[float] = []
    surface: set[str] = set()
    for k, text in enumerate(texts):
        surface.update(surface_words(text))
        toks = tokens(text)
        lengths.append(float(len(toks)))
        for t in toks:
            bucket = postings.setdefault(t, {})
            bucket[offset + k] = bucket.get(offset + k, 0) + 1
    return postings, lengths, surface


def as_dicts(postings: Postings) -> dict[str, dict[int, int]]:
    return {t: {r: int(c) for r, c in p.items()} for t, p in postings.items()}


@pytest.mark.parametrize("seed", range(12))
def test_all_rows_at_once_split_as_each_row_alone(seed: int) -> None:
    rng = np.random.default_rng(seed)
    texts = [ODD[i] for i in rng.integers(0, len(ODD), size=int(rng.integers(1, 30)))]
    offset = int(rng.integers(0, 50))
    postings, lengths, surface = split_rows(texts, offset)
    want_postings, want_lengths, want_surface = row_by_row(texts, offset)
    assert as_dicts(postings) == want_postings
    assert lengths.tolist() == want_lengths
    assert surface == want_surface
    assert all(np.all(np.diff(p.rows) > 0) for p in postings.values())  # ascending rows


def test_no_rows_and_more_stems_than_sixteen_bits_hold() -> None:
    postings, lengths, surface = split_rows([])
    assert postings == {} and lengths.shape == (0,) and surface == set()
    texts = [" ".join(f"w{i}x{j}" for j in range(5)) + " common" for i in range(7000)]
    postings, lengths, _ = split_rows(texts)
    assert len(postings) > np.iinfo(np.int16).max
    assert as_dicts(postings) == row_by_row(texts, 0)[0]
    assert lengths.tolist() == [6.0] * 7000


def test_growing_by_new_rows_equals_splitting_all_and_leaves_a_shared_posting_alone() -> None:
    texts = ["cats chase mice", "the cat naps", "dogs chase cats", "a mouse hides"]
    postings: Postings = {}
    lengths: list[float] = []
    surface: set[str] = set()
    add_words(postings, lengths, surface, texts[:2])
    shared = dict(postings)  # what a table built now holds
    before = as_dicts(shared)
    add_words(postings, lengths, surface, texts[2:])
    assert as_dicts(shared) == before
    whole, whole_lengths, whole_surface = split_rows(texts)
    assert postings == whole and lengths == whole_lengths.tolist() and surface == whole_surface
    merge(postings, {})
    assert postings == whole


def test_a_posting_answers_membership_like_the_dict_it_replaced() -> None:
    p = Posting(np.array([2, 5, 9], dtype=np.int64), np.array([1.0, 3.0, 1.0]))
    assert [r in p for r in (0, 2, 5, 6, 9, 10)] == [False, True, True, False, True, False]
    assert np.int64(5) in p and "5" not in p
    assert len(p) == 3 and p.items() == [(2, 1.0), (5, 3.0), (9, 1.0)]
    assert p != Posting(np.array([2, 5, 9]), np.array([1.0, 2.0, 1.0]))


def walk(channel: Sequence[int], minutes: Sequence[float],
         gap: float) -> tuple[list[int], list[int], list[int]]:
    prev, nxt, session = [-1] * len(channel), [-1] * len(channel), [0] * len(channel)
    last: dict[int, int] = {}
    sessions = 0
    for i, ch in enumerate(channel):
        j = last.get(ch)
        if j is not None and minutes[i] - minutes[j] <= gap:
            prev[i], nxt[j], session[i] = j, i, session[j]
        else:
            session[i], sessions = sessions, sessions + 1
        last[ch] = i
    return prev, nxt, session


@pytest.mark.parametrize("seed", range(20))
def test_neighbours_and_sessions_match_a_walk_over_the_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 80))
    channel = rng.integers(0, 4, n).astype(np.int64)
    minutes = (np.cumsum(rng.exponential(40.0, n)) if seed % 2
               else rng.normal(0.0, 100.0, n)).astype(np.float64)  # out of order too
    got = link_neighbours(channel, minutes, 60.0)
    want = walk(channel.tolist(), minutes.tolist(), 60.0)
    assert [g.tolist() for g in got] == [list(w) for w in want]


@pytest.mark.parametrize("seed", range(10))
def test_the_best_windows_come_in_a_full_stable_sorts_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    score = np.round(rng.normal(size=n), 1)  # many ties
    score[rng.random(n) < 0.3] = -np.inf  # windows left out
    for k in (1, 5, 100, n, n + 3):
        np.testing.assert_array_equal(best_first(score, k),
                                      np.argsort(-score, kind="stable")[:k])


def test_notes_whose_rows_are_all_quotable_are_found_as_a_lookup_would() -> None:
    table = build_table([10, 11, 12, 15], [1, 1, 1, 1], [0.0, 1.0, 2.0, 3.0],
                        ["a", "b", "c", "d"], np.ones((4, 2), np.float32),
                        np.ones(4, bool), 60.0)
    mask = np.array([True, True, False, True])  # row 12 is in the prompt already
    cited = [(), (10,), (10, 11, 15), (10, 12), (13,), (15, 99), (9,), (16,)]
    position = {int(r): i for i, r in enumerate(table.ids)}
    want = [bool(c) and all(r in position and mask[position[r]] for r in c) for c in cited]
    assert quotable(table, mask, cited) == want == [False, True, True, False, False, False,
                                                    False, False]
    empty = build_table([], [], [], [], np.zeros((0, 2), np.float32), np.zeros(0, bool), 60.0)
    assert quotable(empty, np.zeros(0, bool), [(1,), ()]) == [False, False]
