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

The abstention gate is `strata.memory.domain.recall_gate`; this module gives it the best window's
cosine as a z-score over the query's background, less the z-score the best of that many unrelated
windows would reach anyway (sqrt(2 ln n)).

Packing is in rank order (`strata.memory.domain.recall_pack.rank_order`); `greedy` is the diversity
packing kept as a setting (`diversity`): a window's value shrinks with the share of its rows already
in the block, per token^cost_power, less MMR and `session_penalty`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from strata.memory.domain.text import coverage, stem, tokens
from strata.memory.engines.fts import STOPWORDS

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

_WORD = re.compile(r"\w+", re.UNICODE)
BM25_K1 = 1.2
BM25_B = 0.75
TYPICAL_COST = 60.0  # tokens of a three-turn window, for `cost_power`


_POSSESSIVE = re.compile(r"['’]s$")


def surface_words(text: str) -> list[str]:
    """Lower-cased words as written, possessive 's dropped: what a name is checked against
    (the stemmer would make `times` into `tim`, a name)."""
    return [_POSSESSIVE.sub("", w) for w in re.findall(r"[\w'’]+", text.lower())]


@dataclass(frozen=True, slots=True)
class RankTuning:
    """The ranking's knobs (a subset of `strata.memory.domain.recall_types.RecallTuning`)."""

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
    gate_bias: float = -0.4  # strata.memory.domain.recall_gate
    gate_cosine: float = 0.86
    gate_keyword: float = 5.47
    gate_unknown_name: float = 2.577
    cost_power: float = 0.5  # value per token^power: 0 ranks by score alone
    redundancy: float = 0.3  # MMR: value − this × the best cosine to a window already taken
    semantic_top: int = 1  # the semantic scale's 1: the mean cosine of this many best windows
    diversity: bool = False  # pack by value per token with MMR (`greedy`), not in rank order


@dataclass
class RowTable:
    """One owner's live recallable rows, in id order, ready to rank.

    `prev`/`next` link a row to its neighbour in the same channel and session (−1: none).
    Built per owner from words kept as rows arrive (`strata.memory.domain.recall_index`).
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
    postings: dict[str, dict[int, int]] = field(default_factory=dict)
    padded: F32 = field(default_factory=lambda: np.zeros((1, 1), np.float32))  # + a zero row
    window_norm: F64 = field(default_factory=lambda: np.zeros(0))  # |sum of a window's vectors|
    words: frozenset[str] = frozenset()  # every lower-cased word as written (names, unstemmed)

    @property
    def n(self) -> int:
        return int(self.ids.shape[0])


def link_neighbours(channel: I64, minutes: F64, gap_minutes: float) -> tuple[I64, I64, I64]:
    """prev, next and session index of each row (rows in id order)."""
    n = channel.shape[0]
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    session = np.zeros(n, dtype=np.int64)
    last: dict[int, int] = {}
    sessions = 0
    for i in range(n):
        ch = int(channel[i])
        j = last.get(ch)
        if j is not None and minutes[i] - minutes[j] <= gap_minutes:
            prev[i], nxt[j] = j, i
            session[i] = session[j]
        else:
            session[i] = sessions
            sessions += 1
        last[ch] = i
    return prev, nxt, session


Postings = dict[str, dict[int, int]]  # stem -> {row index: count}


def add_words(postings: Postings, lengths: list[float], surface: set[str],
              texts: Sequence[str]) -> None:
    """Append `texts` (the next rows, in order) to `postings`, `lengths` and `surface` (every
    lower-cased word as written) in place."""
    for text in texts:
        i = len(lengths)
        surface.update(surface_words(text))
        toks = tokens(text)
        lengths.append(float(len(toks)))
        for t in toks:
            bucket = postings.setdefault(t, {})
            bucket[i] = bucket.get(i, 0) + 1


def build_table(ids: Sequence[int], channel: Sequence[int], minutes: Sequence[float],
                texts: Sequence[str], vectors: F32, has_vec: npt.NDArray[np.bool_],
                gap_minutes: float,
                kept: tuple[Postings, Sequence[float], set[str]] | None = None) -> RowTable:
    """A `RowTable` from rows in id order (`texts` is what keyword search sees).

    `kept`: the rows' postings, lengths and surface words as `add_words` made them, kept by a
    caller that extends the table as rows arrive, so that only new rows are split into words.
    The table gets a copy: the caller's keep growing while a search may still rank this
    table."""
    ch = np.asarray(channel, dtype=np.int64)
    mins = np.asarray(minutes, dtype=np.float64)
    prev, nxt, session = link_neighbours(ch, mins, gap_minutes)
    if kept is None:
        postings: Postings = {}
        counted: list[float] = []
        words: set[str] = set()
        add_words(postings, counted, words, texts)
    else:
        postings = {t: dict(bucket) for t, bucket in kept[0].items()}
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
    norm = np.linalg.norm(padded[p] + padded[:n] + padded[x], axis=1) if n else np.zeros(0)
    return RowTable(np.asarray(ids, dtype=np.int64), ch, session, mins, vecs,
                    np.asarray(has_vec, dtype=bool), prev, nxt, lengths, postings, padded,
                    norm.astype(np.float64), frozenset(words))


# -- per-query signals -----------------------------------------------------------------------


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
                  salience: F64 | None = None) -> WindowScores:
    """The signals of every window whose centre row is allowed by `mask` (`salience`: per
    row, 0 where unknown; weighed by `w_salience`)."""
    n = table.n
    sentinel = n  # a padded row with no words and a zero vector
    allowed = np.append(mask, False)
    prev = np.where(table.prev >= 0, table.prev, sentinel)
    nxt = np.where(table.next >= 0, table.next, sentinel)
    prev = np.where(allowed[prev], prev, sentinel)
    nxt = np.where(allowed[nxt], nxt, sentinel)
    centre = np.arange(n)
    members = np.stack([np.where(prev == sentinel, -1, prev), centre,
                        np.where(nxt == sentinel, -1, nxt)], axis=1)
    idf = idf_of(table, stems)
    # Keyword: BM25 over the window's three rows.
    lengths = np.append(table.lengths, 0.0)
    wlen = lengths[prev] + lengths[centre] + lengths[nxt]
    avg = float(wlen[mask].mean()) if mask.any() else 1.0
    bm25 = np.zeros(n, dtype=np.float64)
    k1, b = BM25_K1, BM25_B
    norm = k1 * (1 - b + b * wlen / max(avg, 1.0))
    for t in stems:
        post = table.postings.get(t)
        if not post:
            continue
        tf = np.zeros(n + 1, dtype=np.float64)
        tf[np.fromiter(post.keys(), dtype=np.int64)] = np.fromiter(post.values(),
                                                                    dtype=np.float64)
        wtf = tf[prev] + tf[centre] + tf[nxt]
        bm25 += idf[t] * wtf * (k1 + 1) / (wtf + norm)
    bm25 = np.where(mask, bm25, 0.0)
    bm25_best = float(bm25.max()) if n else 0.0
    keyword = bm25 / bm25_best if bm25_best > 0 else np.zeros(n)
    semantic = np.zeros(n)
    cosine = np.full(n, np.nan)
    gate_z = cos_mean = cos_top = float("nan")
    if vector is not None and table.has_vec.any():
        norms = table.window_norm.copy()
        # Windows whose neighbour is left out (already in the prompt) have another sum.
        changed = np.flatnonzero((prev != np.where(table.prev >= 0, table.prev, sentinel))
                                 | (nxt != np.where(table.next >= 0, table.next, sentinel)))
        if changed.size:
            v = table.padded
            norms[changed] = np.linalg.norm(v[prev[changed]] + v[changed] + v[nxt[changed]],
                                            axis=1)
        has = (norms > 0) & mask
        cosine, semantic, gate_z, cos_mean, cos_top = _semantic(
            table.padded @ vector.astype(np.float32), norms, has, prev, nxt,
            tuning.semantic_top)
    score = (tuning.w_keyword * keyword + tuning.w_semantic * semantic
             + tuning.w_recency * recency)
    if salience is not None and tuning.w_salience:
        score = score + tuning.w_salience * salience
    valid = mask & ((keyword > 0) | ~np.isnan(cosine))
    return WindowScores(members, keyword, cosine, semantic, np.where(valid, score, -np.inf),
                        valid, gate_z, bm25_best, idf, cos_mean, cos_top, avg)


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


def keyword_coverage(table: RowTable, rows: Sequence[int], idf: dict[str, float]) -> float:
    """The idf-weighted share of the query's terms found in `rows`."""
    return coverage(idf, lambda t: any(r in table.postings.get(t, ()) for r in rows))


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
    first = _WORD.search(query)
    return [m.group(0) for m in _NAME.finditer(query)
            if not (first is not None and m.start() <= first.start())  # the query's first word
            and not _ends_sentence(query[max(0, m.start() - 64):m.start()])]


def strangers(query: str, table: RowTable, known: Collection[str] = ()) -> list[str]:
    """The names in the query (capitalised words, not the first of the query or of one of its
    sentences, not a month or weekday) that this memory never mentions, as written in the
    query: neither its rows nor `known` (the words of its other memories, e.g. a roll-up
    parent's summary once the rows it came from are pruned)."""
    out = []
    for w in _capitalised(query):
        for word in surface_words(w):
            # Initials (U.S.) and calendar words say nothing about who is meant.
            if len(word) < 3 or word in CALENDAR or word in STOPWORDS:
                continue
            if word not in table.words and word not in known:
                out.append(w)
                break
    return out


def unknown_name(query: str, table: RowTable, known: Collection[str] = ()) -> bool:
    """Whether the query names someone or something this memory never mentions: a question
    about a stranger."""
    return bool(strangers(query, table, known))


CALENDAR_STEMS = frozenset(stem(c) for c in CALENDAR)


def without_names(query: str, idf: dict[str, float]) -> dict[str, float]:
    """The query's idf weights without its names and dates (a name is checked by
    `unknown_name`; a known name alone says nothing about whether this memory holds the
    answer; a month, weekday or number is when, and memory keeps dates in its headers, not in
    what was said, so "in June" is no word the answer lacks)."""
    names = {t for w in _NAME.findall(query) for t in tokens(w)}
    names |= {t for t in idf if t in CALENDAR_STEMS or t.isdigit()}
    content = {t: w for t, w in idf.items() if t not in names}
    return content or idf  # a query of names only: the names are its content


def unit_semantic(cosine: float | None, ws: WindowScores) -> float:
    """An extra candidate's (episode, fact) cosine on the windows' per-query scale."""
    if cosine is None or math.isnan(ws.cos_mean):
        return 0.0
    spread = ws.cos_top - ws.cos_mean
    return (cosine - ws.cos_mean) / spread if spread > 1e-9 else 0.0


# -- selection -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Unit:
    """A selectable thing: a window (rows of the table) or an extra item with its own cost."""

    key: int  # windows: the centre row index; extras: −1 − their position
    score: float
    rows: tuple[int, ...]  # table indices the unit brings (an extra: those it cites)
    session: int  # −1: none
    cost: int = 0  # extras only; windows are priced by the block they change
    core: int = -1  # windows: the row brought alone when the whole no longer fits (−1: key)
    faded: bool = False  # its decay weight is below the floor (`above_floor`)

    @property
    def centre(self) -> int:
        return self.core if self.core >= 0 else self.key


@dataclass
class Selection:
    rows: set[int] = field(default_factory=set)
    extras: list[int] = field(default_factory=list)
    order: dict[int, float] = field(default_factory=dict)  # row index → best score taking it
    per_session: dict[int, int] = field(default_factory=dict)
    used: int = 0  # tokens


def above_floor(units: Sequence[Unit], floor: float, faded: float = 0.0) -> list[Unit]:
    """The units scoring at least `floor` × the best one's score, and a faded unit at least
    `faded` × it (all when the best is not positive: there is no scale to take a share of).
    `faded` above 1: a faded unit never comes back."""
    best = max((u.score for u in units), default=0.0)
    if best <= 0:
        return list(units)
    return [u for u in units
            if u.score >= (max(floor, faded) if u.faded else floor) * best]


def run_around(table: RowTable, rows: set[int], r: int) -> tuple[int, ...]:
    """The run of neighbouring chosen rows (same channel and session) that holds `r`."""
    before: list[int] = []
    p = int(table.prev[r])
    while p >= 0 and p in rows:
        before.append(p)
        p = int(table.prev[p])
    after: list[int] = []
    n = int(table.next[r])
    while n >= 0 and n in rows:
        after.append(n)
        n = int(table.next[n])
    return (*reversed(before), r, *after)


SpanCostFn = Callable[[tuple[int, ...]], int]  # what a quoted run of rows costs, in tokens


def added_cost(table: RowTable, chosen: set[int], new: Sequence[int],
               span_cost: SpanCostFn) -> int:
    """What adding `new` rows costs: the runs they make, less the runs they absorb."""
    after = chosen | set(new)
    runs_after = {run_around(table, after, r) for r in new}
    runs_before = {run_around(table, chosen, m) for run in runs_after for m in run
                   if m in chosen}
    return sum(map(span_cost, runs_after)) - sum(map(span_cost, runs_before))


def take_window(table: RowTable, sel: Selection, u: Unit, span_cost: SpanCostFn,
                budget: int) -> list[int] | None:
    """Add window `u`'s rows not yet in `sel` if what they add fits the budget, else its centre
    row alone if that fits; the rows added, or None when nothing was."""
    new = [r for r in u.rows if r not in sel.rows]
    if not new:
        return None
    extra = added_cost(table, sel.rows, new, span_cost)
    if sel.used + extra > budget:
        if u.centre in sel.rows:
            return None
        new = [u.centre]
        extra = added_cost(table, sel.rows, new, span_cost)
        if sel.used + extra > budget:
            return None
    sel.rows.update(new)
    sel.used += extra
    for r in new:
        sel.order.setdefault(r, u.score)
    return new


def greedy(units: Sequence[Unit], table: RowTable, span_cost: Callable[[tuple[int, ...]], int],
           budget: int, tuning: RankTuning, vectors: F32 | None = None) -> Selection:
    """Greedy by current value: score × the share of the unit's rows not yet quoted, per
    (tokens it adds)^cost_power, less `redundancy` × its highest cosine to a unit already
    taken (MMR; `vectors`: one unit vector per unit) and `session_penalty` per unit already
    taken from its session. Values are updated only for the units next to what was taken. A
    window that no longer fits whole may still bring its centre row alone."""
    sel = Selection()
    m = len(units)
    if not m:
        return sel
    score = np.array([u.score for u in units], dtype=np.float64)
    alive = np.ones(m, dtype=bool)
    share = np.ones(m)
    cost = np.array([span_cost(u.rows) if u.key >= 0 else u.cost for u in units], np.float64)
    closest = np.zeros(m)
    session = np.array([u.session for u in units], dtype=np.int64)
    taken = np.zeros(int(session.max(initial=0)) + 2)
    near: dict[int, list[int]] = {}  # row → windows that hold it or border on it
    for j, u in enumerate(units):
        if u.key >= 0:
            for r in u.rows:
                for x in (r, int(table.prev[r]), int(table.next[r])):
                    if x >= 0:
                        near.setdefault(x, []).append(j)
    mmr = vectors is not None and tuning.redundancy > 0
    # Stop once nothing left can fit: not the cheapest unit's current cost, not a lone row.
    smallest = min(span_cost((u.centre,)) if u.key >= 0 else u.cost for u in units)
    while alive.any() and budget - sel.used >= min(smallest, float(cost[alive].min())):
        value = score * share
        if tuning.cost_power:
            value = np.where(value > 0, value / (np.maximum(cost, 1.0) / TYPICAL_COST)
                             ** tuning.cost_power, value)
        value = value - tuning.session_penalty * taken[session] - tuning.redundancy * closest
        value[~alive] = -np.inf
        j = int(np.argmax(value))
        alive[j] = False
        u = units[j]
        if u.key < 0:
            if sel.used + u.cost > budget:
                continue
            sel.extras.append(-1 - u.key)
            sel.used += u.cost
            added: list[int] = []
        else:
            taken_rows = take_window(table, sel, u, span_cost, budget)
            if taken_rows is None:
                continue
            added = taken_rows
        if u.session >= 0:
            taken[u.session] += 1
        if mmr and vectors is not None:
            np.maximum(closest, vectors @ vectors[j], out=closest)
        for k in {k for r in added for k in near.get(r, ()) if alive[k]}:
            rest = [r for r in units[k].rows if r not in sel.rows]
            if not rest:
                alive[k] = False
                continue
            share[k] = len(rest) / len(units[k].rows)
            cost[k] = added_cost(table, sel.rows, rest, span_cost)
    return sel


def unit_vectors(table: RowTable, units: Sequence[Unit]) -> F32:
    """Each unit's direction: the normalised sum of its rows' vectors (zeros for none)."""
    n = table.n
    idx = np.full((len(units), 3), n, dtype=np.int64)
    for j, u in enumerate(units):
        rows = u.rows[:3] if u.key >= 0 else ()
        idx[j, : len(rows)] = rows
    out = table.padded[idx].sum(axis=1)
    return (out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)).astype(
        np.float32)


def spans(table: RowTable, rows: set[int]) -> list[tuple[int, ...]]:
    """The chosen rows as runs of neighbours (same channel and session), each in order."""
    seen: set[int] = set()
    out = []
    for r in sorted(rows):
        if r not in seen:
            run = run_around(table, rows, r)
            seen.update(run)
            out.append(run)
    return out
