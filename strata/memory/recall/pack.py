"""Packing recall's block: what of a chosen window is shown (display trimming, pure numpy), and
filling the budget with windows and notes rendered as items (`pack`).

Windows (a row and its neighbours) are ranked as a whole by `strata.memory.recall.rank`,
because the context around a row says what the row is about. But usually one row of the three holds
what was asked, and every quoted row costs about as much as the others together with their header.
So a window shows its rows that earn their tokens: each member row gets its own share of the
query (BM25 of the row alone and the row's cosine, on the windows' per-query scales), and a
member is kept when it is within `trim_margin` of the window's best row. The best row is always
kept; `trim_margin` = inf shows whole windows. The window's score still ranks it: trimming only
changes what it costs, and so how many windows fit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from strata.core.tokens import count_tokens
from strata.memory.recall.rank import BM25_B, BM25_K1, RankTuning, WindowScores
from strata.memory.recall.render import SpanCost, render_item, render_span, row_where
from strata.memory.recall.select import (
    Selection,
    SpanCostFn,
    Unit,
    above_floor,
    greedy,
    spans,
    take_window,
    unit_vectors,
)
from strata.memory.recall.types import Candidate, RecallItem, RecallTuning, heading_cost
from strata.memory.rules.row_table import F32, RowTable
from strata.memory.store.recall_reads import Row


def row_shares(table: RowTable, rows: Sequence[int], stems: Sequence[str],
               vector: F32 | None, ws: WindowScores, tuning: RankTuning) -> dict[int, float]:
    """Each of `rows`' own score for the query: BM25 of the row alone divided by the best
    window's BM25, and the row's cosine on the windows' semantic scale, weighted as windows
    are."""
    if not rows:
        return {}
    idx = np.asarray(rows, dtype=np.int64)
    avg = float(table.lengths.mean()) if table.n else 1.0
    norm = BM25_K1 * (1 - BM25_B + BM25_B * table.lengths[idx] / max(avg, 1.0))
    bm25 = np.zeros(len(rows))
    for t in stems:
        post = table.postings.get(t)
        if not post:
            continue
        at = np.minimum(np.searchsorted(post.rows, idx), len(post) - 1)
        tf = np.where(post.rows[at] == idx, post.counts[at], 0.0)
        bm25 += ws.idf.get(t, 0.0) * tf * (BM25_K1 + 1) / (tf + norm)
    keyword = bm25 / ws.bm25_best if ws.bm25_best > 0 else np.zeros(len(rows))
    semantic = np.zeros(len(rows))
    spread = ws.cos_top - ws.cos_mean
    if vector is not None and not math.isnan(ws.cos_mean) and spread > 1e-9:
        # The row's cosine on the windows' per-query scale (`unit_semantic`).
        cos = (table.vectors[idx] @ vector.astype(np.float32)).astype(np.float64)
        semantic = np.where(table.has_vec[idx], (cos - ws.cos_mean) / spread, 0.0)
    score = tuning.w_keyword * keyword + tuning.w_semantic * semantic
    if ws.counted is not None:  # the bot's words never make a row worth showing by itself
        score = np.where(ws.counted[idx] & ~table.bot[idx], score, -math.inf)
    return {int(r): float(s) for r, s in zip(idx, score, strict=True)}


def context_rows(table: RowTable, members: Sequence[int]) -> tuple[int, ...]:
    """A window's members less what is neither evidence nor context: a bot reply is shown only
    when it is the question the person answered in the next line shown (`RowTable.lead_in`),
    never as an answer (about the person it is no evidence, and may be wrong); the person's
    question about themselves that the bot answered is left out with it."""
    kept = []
    for k, r in enumerate(members):
        if table.asked_bot[r]:
            continue
        if table.bot[r]:
            after = members[k + 1] if k + 1 < len(members) else -1
            if not table.lead_in[r] or after < 0 or after != int(table.next[r]):
                continue
        kept.append(r)
    return tuple(kept)


def shown_rows(members: Sequence[int], shares: Mapping[int, float],
               margin: float) -> tuple[tuple[int, ...], int]:
    """The members of one window worth showing, in order, and the best of them: those within
    `margin` of the best member's share (the best always)."""
    best = max(members, key=lambda r: shares.get(r, -math.inf))
    top = shares.get(best, 0.0)
    kept = tuple(r for r in members if r == best or shares.get(r, -math.inf) >= top - margin)
    return kept, best


def window_units(table: RowTable, ws: WindowScores, top: Sequence[int],
                 said: Mapping[int, str], shares: Mapping[int, float] | None = None,
                 margin: float = math.inf, whole: int = 0) -> list[Unit]:
    """The selectable windows, best first: rows still there (`said`: a row's words as they are
    now), exact repeats of a better window's centre (the same words said again) left out, each
    showing its rows within `margin` of its best (`shown_rows`; whole windows without
    `shares`)."""
    units: list[Unit] = []
    seen: set[str] = set()
    for i in top:
        if i not in said:
            continue
        words = " ".join(said[i].lower().split())
        if words in seen:
            continue
        seen.add(words)
        members = tuple(int(m) for m in ws.members[i] if m >= 0 and int(m) in said)
        core = i
        if shares is not None and math.isfinite(margin) and len(units) >= whole:
            members, core = shown_rows(members, shares, margin)
        if ws.counted is not None:
            members = context_rows(table, members)
        units.append(Unit(i, float(ws.score[i]), members, int(table.session[i]), core=core))
    return units


def rank_order(units: Sequence[Unit], table: RowTable, span_cost: SpanCostFn,
               budget: int) -> Selection:
    """Fill the budget in rank order: each unit, best score first, brings the rows not yet
    taken and pays only for what they add (a window overlapping or touching a taken one merges
    into its span, under its header). A window that no longer fits whole brings its best row
    alone; a unit that does not fit at all is passed over for smaller ones further down.

    Plain on purpose: spreading the budget over many distinct spans (value per token, MMR)
    pushed out evidence that ranked well, on held-out conversations most of all."""
    sel = Selection()
    for u in sorted(units, key=lambda u: -u.score):
        if u.key < 0:
            if sel.used + u.cost <= budget:
                sel.extras.append(-1 - u.key)
                sel.used += u.cost
            continue
        take_window(table, sel, u, span_cost, budget)
    return sel


def shares_for(table: RowTable, ws: WindowScores, top: Sequence[int], stems: Sequence[str],
               vector: npt.NDArray[np.float32] | None,
               tuning: RecallTuning) -> tuple[dict[int, float] | None, float, int]:
    """What `strata.memory.recall.pack.window_units` trims with: the member rows' own scores,
    the
    margin and how many of the best windows stay whole; no scores when all are whole."""
    if not math.isfinite(tuning.trim_margin):
        return None, math.inf, 0
    rows = sorted({int(m) for i in top for m in ws.members[i] if m >= 0})
    return (row_shares(table, rows, stems, vector, ws, tuning.rank), tuning.trim_margin,
            tuning.trim_after)


def pack(table: RowTable, fresh: dict[int, Row], units: list[Unit],
         extras: Sequence[Candidate], extra_scores: Sequence[float], budget: int,
         tuning: RecallTuning) -> list[RecallItem]:
    """Fill the budget from `units` (windows, then one per extra with key −1 − its position,
    priced here) and render what was chosen as items, best first. With channel headings, the
    heading of every channel a candidate comes from is paid for up front, so the block never
    exceeds the budget whichever of them is used."""
    headings = tuning.channel_headings
    rendered_extras = [render_item(c, not headings) for c in extras]
    costs = [count_tokens(r + "\n") for r in rendered_extras]
    units = [replace(u, cost=costs[-1 - u.key]) if u.key < 0 else u for u in units]
    if headings:
        wheres = {row_where(fresh[r]) for u in units if u.key >= 0 for r in u.rows}
        budget -= sum(map(heading_cost, wheres | {c.where for c in extras}))
    span_cost = SpanCost(fresh, not headings)
    units = above_floor(units, tuning.relative_floor,
                        tuning.faded_floor if tuning.decay_floor > 0 else 0.0)
    if tuning.diversity:
        sel = greedy(units, table, span_cost, budget, tuning.rank, unit_vectors(table, units))
    else:
        sel = rank_order(units, table, span_cost, budget)
    return _items(table, fresh, sel, span_cost, extras, extra_scores, rendered_extras, costs,
                  headings)


def _items(table: RowTable, fresh: dict[int, Row], sel: Selection, span_cost: SpanCost,
           extras: Sequence[Candidate], extra_scores: Sequence[float],
           rendered_extras: Sequence[str], costs: Sequence[int],
           headings: bool) -> list[RecallItem]:
    """The chosen spans and extras as items, best first."""
    out: list[tuple[float, RecallItem]] = []
    for run in spans(table, sel.rows):
        rendered = render_span([fresh[i] for i in run], not headings)
        score = max(sel.order[i] for i in run)
        text = "\n".join(str(fresh[i]["content"]) for i in run)
        ids = tuple(int(table.ids[i]) for i in run)
        out.append((score, RecallItem("window", ids[0], round(score, 4), round(score, 4),
                                      span_cost(run), ids, text, rendered,
                                      row_where(fresh[run[0]]) if headings else "")))
    for j in sel.extras:
        c = extras[j]
        out.append((extra_scores[j], RecallItem(c.kind, c.id, round(extra_scores[j], 4),
                                                round(extra_scores[j], 4), costs[j],
                                                c.cited_rows, c.text, rendered_extras[j],
                                                c.where if headings else "")))
    out.sort(key=lambda x: -x[0])
    return [item for _, item in out]
