"""Recall's window scoring from the kept frame and sparse BM25 (recall_rank.frame_of) gives,
bit for bit, what scoring every window from scratch gives: the reference below is the whole-
array BM25 the ranking used before, on random tables, masks and rows that count."""

from __future__ import annotations

import numpy as np
import pytest

from strata.memory.recall.rank import (
    BM25_B,
    BM25_K1,
    RankTuning,
    frame_of,
    idf_of,
    window_scores,
)
from strata.memory.rules.row_table import RowTable, build_table

WORDS = [f"w{i}" for i in range(30)]


def random_table(rng: np.random.Generator, n: int) -> RowTable:
    # "often" is in about half of the rows (scored over all windows), the others in a few.
    texts = [" ".join([*rng.choice(WORDS, size=int(rng.integers(0, 7))),
                       *(["often"] if rng.random() < 0.5 else [])]) for _ in range(n)]
    minutes = np.cumsum(rng.choice([1.0, 2.0, 200.0], size=n, p=[0.6, 0.3, 0.1])).tolist()
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    has = rng.random(n) < 0.9
    vecs[~has] = 0.0
    return build_table(list(range(10, 10 + 3 * n, 3)), rng.integers(1, 4, size=n).tolist(),
                       minutes, texts, vecs, has, 60.0, bot=(rng.random(n) < 0.3).tolist(),
                       asking=(rng.random(n) < 0.2).tolist())


def dense_bm25(table: RowTable, stems: list[str], mask: np.ndarray,
               scored: np.ndarray | None) -> tuple[np.ndarray, float]:
    """Every window's BM25, each stem's counts spread over all rows (the reference)."""
    n = table.n
    sentinel = n
    allowed = np.append(mask, False)
    prev = np.where(table.prev >= 0, table.prev, sentinel)
    nxt = np.where(table.next >= 0, table.next, sentinel)
    prev = np.where(allowed[prev], prev, sentinel)
    nxt = np.where(allowed[nxt], nxt, sentinel)
    if scored is not None:
        counts = np.append(scored, False)
        prev = np.where(counts[prev], prev, sentinel)
        nxt = np.where(counts[nxt], nxt, sentinel)
        mask = scored & ~table.bot
    centre = np.arange(n)
    lengths = np.append(table.lengths, 0.0)
    wlen = lengths[prev] + lengths[centre] + lengths[nxt]
    avg = float(wlen[mask].mean()) if mask.any() else 1.0
    norm = BM25_K1 * (1 - BM25_B + BM25_B * wlen / max(avg, 1.0))
    idf = idf_of(table, stems)
    bm25 = np.zeros(n)
    for t in stems:
        post = table.postings.get(t)
        if not post:
            continue
        tf = np.zeros(n + 1)
        tf[post.rows] = post.counts
        wtf = tf[prev] + tf[centre] + tf[nxt]
        bm25 += idf[t] * wtf * (BM25_K1 + 1) / (wtf + norm)
    return np.where(mask, bm25, 0.0), avg


@pytest.mark.parametrize("seed", range(12))
def test_sparse_scores_equal_whole_array_scores_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = random_table(rng, int(rng.integers(1, 80)))
    mask = rng.random(t.n) < 0.85
    scored = (mask & (rng.random(t.n) < 0.8)) if seed % 2 else None
    stems = list(dict.fromkeys(["often", *rng.choice([*WORDS, "absent"], size=5).tolist()]))
    vector = rng.normal(size=8).astype(np.float32)
    ws = window_scores(t, stems, vector, mask, np.zeros(t.n), RankTuning(), scored=scored)
    bm25, avg = dense_bm25(t, stems, mask, scored)
    best = float(bm25.max())
    expected = bm25 / best if best > 0 else np.zeros(t.n)
    assert ws.bm25_best == best
    assert ws.avg_len == avg
    assert np.array_equal(ws.keyword, expected)
    # The same query again reads the kept frame and gives the same scores.
    again = window_scores(t, stems, vector, mask, np.zeros(t.n), RankTuning(), scored=scored)
    assert np.array_equal(again.score, ws.score)
    assert np.array_equal(again.cosine, ws.cosine, equal_nan=True)


def test_a_frame_is_kept_per_choice_of_rows_left_out() -> None:
    t = random_table(np.random.default_rng(1), 40)
    everything = np.ones(t.n, bool)
    some = everything.copy()
    some[5:9] = False
    assert frame_of(t, everything, None) is frame_of(t, everything.copy(), None)
    other = frame_of(t, some, None)
    assert other is not frame_of(t, everything, None)
    assert not other.centres[5:9].any()
    # A window whose neighbour is left out no longer counts it.
    after = [r for r in range(9, t.n) if 5 <= t.prev[r] <= 8]
    assert after
    assert all(other.prev[r] == t.n for r in after)
    assert all(frame_of(t, everything, None).prev[r] == t.prev[r] for r in after)


@pytest.mark.parametrize("seed", range(8))
def test_a_table_built_on_the_previous_one_equals_one_built_anew(seed: int) -> None:
    """Rows arrive and earlier rows get their vectors: summing again only the windows that
    changed gives every window's norm bit for bit as summing all of them does."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 400)), 0
    m = int(rng.integers(1, n))
    ids = list(range(5, 5 + 2 * n, 2))
    channel = rng.integers(1, 4, size=n).tolist()
    minutes = np.cumsum(rng.choice([1.0, 90.0], size=n, p=[0.85, 0.15])).tolist()
    texts = ["w"] * n
    vecs = rng.normal(size=(n, 384)).astype(np.float32)
    has = rng.random(n) < 0.8
    before_vecs = vecs[:m].copy()
    before_vecs[~has[:m]] = 0.0
    before = build_table(ids[:m], channel[:m], minutes[:m], texts[:m], before_vecs,
                         has[:m], 60.0)
    # Rows of the old table without a vector got one since; new rows come with theirs.
    touched = np.flatnonzero(~has[:m]).tolist()
    grown = build_table(ids, channel, minutes, texts, vecs, np.ones(n, bool), 60.0,
                        previous=(before, touched))
    anew = build_table(ids, channel, minutes, texts, vecs, np.ones(n, bool), 60.0)
    assert np.array_equal(grown.window_norm, anew.window_norm)
    assert grown.window_norm.dtype == anew.window_norm.dtype
    # Told nothing changed, a changed vector would be missed: the rows given are what counts.
    if touched:
        stale = build_table(ids, channel, minutes, texts, vecs, np.ones(n, bool), 60.0,
                            previous=(before, []))
        assert not np.array_equal(stale.window_norm, anew.window_norm)
