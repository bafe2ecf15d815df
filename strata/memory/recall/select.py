"""Choosing what fills recall's budget, pure: units (windows and extra items), the relative floor,
and spans of touching rows paid for once. Packing is in rank order
(`strata.memory.recall.pack.rank_order`); `greedy` is the diversity packing kept as a
setting (`diversity`): a window's value shrinks with the share of its rows already in the block,
per token^cost_power, less MMR and `session_penalty`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from strata.memory.recall.rank import RankTuning
from strata.memory.rules.row_table import F32, RowTable

TYPICAL_COST = 60.0  # tokens of a three-turn window, for `cost_power`


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


def _near(units: Sequence[Unit], table: RowTable) -> dict[int, list[int]]:
    """Row → the windows that hold it or border on it (whose value changes when it is taken)."""
    near: dict[int, list[int]] = {}
    for j, u in enumerate(units):
        if u.key >= 0:
            for r in u.rows:
                for x in (r, int(table.prev[r]), int(table.next[r])):
                    if x >= 0:
                        near.setdefault(x, []).append(j)
    return near


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
    near = _near(units, table)
    mmr = vectors is not None and tuning.redundancy > 0
    # Stop once nothing left can fit: not the cheapest unit's current cost, not a lone row.
    smallest = min(span_cost((u.centre,)) if u.key >= 0 else u.cost for u in units)
    while alive.any() and budget - sel.used >= min(smallest, float(cost[alive].min())):
        value = _value(score * share, cost, tuning)
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
        _refresh(units, table, sel, {k for r in added for k in near.get(r, ()) if alive[k]},
                 (alive, share, cost), span_cost)
    return sel


def _value(value: npt.NDArray[np.float64], cost: npt.NDArray[np.float64],
           tuning: RankTuning) -> npt.NDArray[np.float64]:
    """Score × share per (tokens it adds)^cost_power, for the units worth anything."""
    if tuning.cost_power:
        value = np.where(value > 0, value / (np.maximum(cost, 1.0) / TYPICAL_COST)
                         ** tuning.cost_power, value)
    return value


def _refresh(units: Sequence[Unit], table: RowTable, sel: Selection, touched: set[int],
             state: tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64],
                          npt.NDArray[np.float64]],
             span_cost: Callable[[tuple[int, ...]], int]) -> None:
    """The units next to what was just taken: the share of their rows not yet quoted and the
    tokens they add now; a unit with nothing left is done (`state`: alive, share, cost)."""
    alive, share, cost = state
    for k in touched:
        rest = [r for r in units[k].rows if r not in sel.rows]
        if not rest:
            alive[k] = False
            continue
        share[k] = len(rest) / len(units[k].rows)
        cost[k] = added_cost(table, sel.rows, rest, span_cost)


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
