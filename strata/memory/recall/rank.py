"""Recall's ranking over one owner's transcript rows, pure (numpy, no SQL, no I/O).

The unit of recall is a short window: a row with its neighbour before and after in the same
channel and session (a pause longer than `session_gap_minutes` starts a new session). Every
live row is the centre of one window, so windows overlap; when chosen windows overlap or touch,
they merge into one span and the shared rows are paid for once.

Each window gets two signals, both calibrated per query so that no absolute similarity scale
has to be assumed for the embedding model:

- keyword: BM25 of the query's (stemmed, stopword-free) terms over the window's text, with the
  inverse document frequencies of the owner's own rows, divided by the best window's BM25;
- semantic: the cosine of the query to the window (the normalised sum of its rows' vectors),
  relative to the query's background over the same memory: (cos − mean) / (best − mean). So
  the best window scores 1 and a typical one 0, whatever range the model's cosines live in.

score = w_keyword·keyword + w_semantic·semantic + w_recency·recency + w_salience·salience
(recency only breaks ties; salience is the live leaves' that cite the window's centre row).
`above_floor` drops what scores under a share of the best item (more for a faded one).

The abstention gate is `strata.memory.recall.gate`; this module gives it the best window's
cosine as a z-score over the query's background, less the z-score the best of that many unrelated
windows would reach anyway (sqrt(2 ln n)).

The row table is `strata.memory.rules.row_table`, the names a query mentions
`strata.memory.rules.names`, and the selection within the budget
`strata.memory.recall.select`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from strata.memory.rules.row_table import F32, F64, I64, RowTable
from strata.memory.rules.row_words import Posting
from strata.memory.rules.text import coverage, tokens

BM25_K1 = 1.2
BM25_B = 0.75


@dataclass(frozen=True, slots=True)
class RankTuning:
    """The ranking's knobs (a subset of `strata.memory.recall.types.RecallTuning`)."""

    w_keyword: float = 1.0
    w_semantic: float = 0.5
    w_recency: float = 0.02
    # The design's blend: salience (an episode's, or for a window the highest of the live
    # leaves that cite its centre row; a fact's confidence) adds w_salience × it.
    w_salience: float = 0.1
    session_penalty: float = 0.0
    # Once the gate opens, items scoring under this share of the best one are left out.
    relative_floor: float = 0.3
    pool: int = 100  # windows considered for selection, best first
    gate_bias: float = -0.4  # strata.memory.recall.gate
    gate_cosine: float = 0.86
    gate_keyword: float = 5.47
    gate_unknown_name: float = 2.577
    gate_only_strangers: float = 1.5  # added when every name of the query is a stranger
    cost_power: float = 0.5  # value per token^power: 0 ranks by score alone
    redundancy: float = 0.3  # MMR: value − this × the best cosine to a window already taken
    semantic_top: int = 1  # the semantic scale's 1: the mean cosine of this many best windows
    diversity: bool = False  # pack by value per token with MMR (`greedy`), not in rank order




@dataclass(frozen=True, slots=True)
class WindowScores:
    """Every window's signals for one query (index = the window's centre row)."""

    members: I64  # (n, 3): prev, centre, next; −1 where absent
    keyword: F64  # BM25 / best, 0–1
    cosine: F64  # raw cosine of the window's centroid (nan without vectors)
    semantic: F64  # (cos − mean) / (best − mean); 0 without vectors
    score: F64
    valid: npt.NDArray[np.bool_]
    gate_z: float  # best cosine's excess z-score over the background (nan: no vectors)
    bm25_best: float
    idf: dict[str, float]
    cos_mean: float
    cos_top: float  # the semantic scale's 1: the mean of the `semantic_top` best cosines
    avg_len: float  # words per window
    # The rows whose words and vectors count (`window_scores`' `scored`); None: all of them.
    counted: npt.NDArray[np.bool_] | None = None

    def counts(self, row: int) -> bool:
        return self.counted is None or bool(self.counted[row])


SPARSE_SHARE = 8  # a stem in more than 1/8 of the rows is scored over all windows
FRAMES_KEPT = 2  # per table: a turn's searches share one; a new row makes a new table


@dataclass(frozen=True, slots=True)
class Frame:
    """What ranking needs of one table and one choice of rows left out and rows that count,
    whatever the query (`frame_of`)."""

    members: I64  # (n, 3): prev, centre, next; −1 where absent
    prev: I64  # the neighbours whose signals count; the table's length where none
    nxt: I64
    centres: npt.NDArray[np.bool_]  # the rows that may centre a window
    avg: float  # words per window
    norm: F64  # each window's BM25 length norm
    norms: F64  # |sum of the window's counted vectors|
    has: npt.NDArray[np.bool_]  # centres with a vector


def idf_of(table: RowTable, stems: Sequence[str]) -> dict[str, float]:
    n = max(table.n, 1)
    return {t: math.log(1.0 + (n - len(table.postings.get(t, ())) + 0.5)
                        / (len(table.postings.get(t, ())) + 0.5)) for t in stems}


# The gate's idf counts this many background documents that hold none of the query's words, so
# that in a memory of a handful of rows a word said twice still outweighs one never said.
GATE_PRIOR_DOCS = 50


def bm25_text(text: str, idf: dict[str, float], avg_len: float) -> float:
    """BM25 of one text (an episode or fact) against the query's idf, window-length normed."""
    toks = tokens(text)
    tf: dict[str, int] = {}
    for t in toks:
        if t in idf:
            tf[t] = tf.get(t, 0) + 1
    norm = BM25_K1 * (1 - BM25_B + BM25_B * len(toks) / max(avg_len, 1.0))
    return sum(idf[t] * f * (BM25_K1 + 1) / (f + norm) for t, f in tf.items())


def window_scores(table: RowTable, stems: Sequence[str], vector: F32 | None,
                  mask: npt.NDArray[np.bool_], recency: F64, tuning: RankTuning,
                  salience: F64 | None = None,
                  scored: npt.NDArray[np.bool_] | None = None) -> WindowScores:
    """The signals of every window whose centre row is allowed by `mask` (`salience`: per
    row, 0 where unknown; weighed by `w_salience`). `scored`: the rows whose words and vector
    count (a subset of `mask`; the others may be shown as a window's members but add nothing
    to its signals), all of `mask` when None; the bot's rows never centre a window."""
    n = table.n
    f = frame_of(table, mask, scored)
    mask = f.centres
    idf = idf_of(table, stems)
    bm25 = np.zeros(n, dtype=np.float64)
    for t in stems:
        _add_bm25(bm25, table, f, table.postings.get(t), idf[t])
    bm25 = np.where(mask, bm25, 0.0)
    bm25_best = float(bm25.max()) if n else 0.0
    keyword = bm25 / bm25_best if bm25_best > 0 else np.zeros(n)
    semantic = np.zeros(n)
    cosine = np.full(n, np.nan)
    gate_z = cos_mean = cos_top = float("nan")
    if vector is not None and table.has_vec.any():
        cosine, semantic, gate_z, cos_mean, cos_top = _semantic(
            table.padded @ vector.astype(np.float32), f.norms, f.has, f.prev, f.nxt,
            tuning.semantic_top)
    score = (tuning.w_keyword * keyword + tuning.w_semantic * semantic
             + tuning.w_recency * recency)
    if salience is not None and tuning.w_salience:
        score = score + tuning.w_salience * salience
    valid = mask & ((keyword > 0) | ~np.isnan(cosine))
    return WindowScores(f.members, keyword, cosine, semantic, np.where(valid, score, -np.inf),
                        valid, gate_z, bm25_best, idf, cos_mean, cos_top, f.avg, scored)


def _add_bm25(bm25: F64, table: RowTable, f: Frame, post: Posting | None, idf: float) -> None:
    """Add one stem's BM25 to the windows that hold it, in place. A rare stem touches only
    the windows around its rows (a row's windows are its own and its neighbours'): every
    other window would add exactly 0.0, so the sums are those of adding to all of them."""
    if not post:
        return
    n = table.n
    rows = post.rows
    if len(rows) * SPARSE_SHARE > n:  # a common stem: all windows at once is cheaper
        tf = np.zeros(n + 1, dtype=np.float64)
        tf[rows] = post.counts
        wtf = tf[f.prev] + tf[:n] + tf[f.nxt]
        bm25 += idf * wtf * (BM25_K1 + 1) / (wtf + f.norm)
        return
    near = np.concatenate([rows, table.next[rows], table.prev[rows]])
    near = np.unique(near[near >= 0])
    last = len(rows) - 1

    def tf_of(x: I64) -> F64:  # the stem's count in row x (the sentinel row holds none)
        at = np.minimum(np.searchsorted(rows, x), last)
        return np.where(rows[at] == x, post.counts[at], 0.0)

    wtf = tf_of(f.prev[near]) + tf_of(near) + tf_of(f.nxt[near])
    bm25[near] += idf * wtf * (BM25_K1 + 1) / (wtf + f.norm[near])


def frame_of(table: RowTable, mask: npt.NDArray[np.bool_],
             scored: npt.NDArray[np.bool_] | None) -> Frame:
    """`Frame` of the table for `mask` and `scored`, kept on the table: a warm search does
    not redo what depends only on the rows and on which of them are left out."""
    key = (mask.tobytes(), None if scored is None else scored.tobytes())
    found = table.frames.get(key)
    if found is None:
        found = _frame(table, mask, scored)
        if len(table.frames) >= FRAMES_KEPT:
            table.frames.pop(next(iter(table.frames)))
        table.frames[key] = found
    return found


def _frame(table: RowTable, mask: npt.NDArray[np.bool_],
           scored: npt.NDArray[np.bool_] | None) -> Frame:
    n = table.n
    sentinel = n  # a padded row with no words and a zero vector
    centre = np.arange(n)
    members, prev, nxt, mask = _windows(table, mask, scored)
    lengths = np.append(table.lengths, 0.0)
    wlen = lengths[prev] + lengths[centre] + lengths[nxt]
    avg = float(wlen[mask].mean()) if mask.any() else 1.0
    norm = BM25_K1 * (1 - BM25_B + BM25_B * wlen / max(avg, 1.0))
    norms = table.window_norm.copy()
    # Windows whose neighbour is left out (already in the prompt) have another sum.
    changed = np.flatnonzero((prev != np.where(table.prev >= 0, table.prev, sentinel))
                             | (nxt != np.where(table.next >= 0, table.next, sentinel)))
    if changed.size:
        v = table.padded
        norms[changed] = np.linalg.norm(v[prev[changed]] + v[changed] + v[nxt[changed]],
                                        axis=1)
    return Frame(members, prev, nxt, mask, avg, norm, norms, (norms > 0) & mask)


def _windows(table: RowTable, mask: npt.NDArray[np.bool_],
             scored: npt.NDArray[np.bool_] | None) -> tuple[I64, I64, I64,
                                                            npt.NDArray[np.bool_]]:
    """(members, prev, next, centres): each window's rows allowed by `mask` (−1 where
    absent), the neighbours whose signals count (`scored`; the table's length where none),
    and the rows that may centre a window."""
    sentinel = table.n
    allowed = np.append(mask, False)
    prev = np.where(table.prev >= 0, table.prev, sentinel)
    nxt = np.where(table.next >= 0, table.next, sentinel)
    prev = np.where(allowed[prev], prev, sentinel)
    nxt = np.where(allowed[nxt], nxt, sentinel)
    members = np.stack([np.where(prev == sentinel, -1, prev), np.arange(table.n),
                        np.where(nxt == sentinel, -1, nxt)], axis=1)
    if scored is None:
        return members, prev, nxt, mask
    counts = np.append(scored, False)
    return (members, np.where(counts[prev], prev, sentinel), np.where(counts[nxt], nxt, sentinel),
            scored & ~table.bot)


def _semantic(sims: F32, norms: F64, has: npt.NDArray[np.bool_], prev: I64, nxt: I64,
              top: int = 1) -> tuple[F64, F64, float, float, float]:
    """Window cosines (of the sum of the window's vectors), their per-query calibration
    (cos − mean) / (top − mean), the gate's excess z and the background's mean and `top`:
    the mean of the `top` best cosines (a single best window is a noisy scale: one lucky
    paraphrase shrinks every other window's score)."""
    n = has.shape[0]
    centre = np.arange(n)
    centroid = (sims[prev] + sims[centre] + sims[nxt]) / np.maximum(norms, 1e-9)
    cosine = np.where(has, centroid, np.nan)
    background = cosine[has]
    semantic = np.zeros(n)
    if not background.size:
        return cosine, semantic, float("nan"), float("nan"), float("nan")
    mean, best, sd = float(background.mean()), float(background.max()), float(background.std())
    # At most half of the windows: in a small memory the mean of all of them is the mean
    # itself, and a zero spread would switch the semantic signal off.
    k = min(max(int(top), 1), max(background.size // 2, 1))
    scale = float(np.partition(background, background.size - k)[background.size - k:].mean())
    if scale - mean > 1e-9:
        semantic = np.where(has, (cosine - mean) / (scale - mean), 0.0)
    # The best of n unrelated windows already stands about sqrt(2 ln n) deviations out.
    expected = math.sqrt(2.0 * math.log(max(background.size, 2)))
    gate_z = (best - mean) / sd - expected if sd > 1e-9 else 0.0
    return cosine, semantic, gate_z, mean, scale


def best_first(score: F64, k: int) -> I64:
    """The indices of the `k` highest scores, best first, ties in index order: the first `k`
    of a stable argsort of −score, without sorting all of them (only those at or above the
    k-th highest score are)."""
    n = score.shape[0]
    if k >= n or np.isnan(score).any():
        return np.argsort(-score, kind="stable")[:k]
    kth = np.partition(score, n - k)[n - k]
    near = np.flatnonzero(score >= kth)
    return near[np.argsort(-score[near], kind="stable")][:k]


def quotable(table: RowTable, mask: npt.NDArray[np.bool_],
             cited: Sequence[Sequence[int]]) -> list[bool]:
    """For each list of row ids: whether it is not empty and every row is in the table and
    allowed by `mask` (all lists looked up in the table's ids at once)."""
    counts = [len(c) for c in cited]
    total = sum(counts)
    if not total or not table.n:
        return [False] * len(cited)
    ids = np.fromiter(itertools.chain.from_iterable(cited), np.int64, total)
    at = np.minimum(np.searchsorted(table.ids, ids), table.n - 1)
    ok = (table.ids[at] == ids) & mask[at]
    bad = np.bincount(np.repeat(np.arange(len(cited)), counts)[~ok], minlength=len(cited))
    return [n > 0 and not b for n, b in zip(counts, bad.tolist(), strict=True)]


def keyword_coverage(table: RowTable, rows: Sequence[int], idf: dict[str, float]) -> float:
    """The idf-weighted share of the query's terms found in `rows`."""
    return coverage(idf, lambda t: any(r in table.postings.get(t, ()) for r in rows))


def unit_semantic(cosine: float | None, ws: WindowScores) -> float:
    """An extra candidate's (episode, fact) cosine on the windows' per-query scale."""
    if cosine is None or math.isnan(ws.cos_mean):
        return 0.0
    spread = ws.cos_top - ws.cos_mean
    return (cosine - ws.cos_mean) / spread if spread > 1e-9 else 0.0




