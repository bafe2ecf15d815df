"""Recall's selection and rendering pieces: display trimming (strata.memory.recall.pack), the
core row a window falls back to, and channel headings with the budget
(strata.memory.recall.pack.pack), on hand-made rows and vectors."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from strata.core.tokens import count_tokens
from strata.memory.recall.pack import pack, rank_order, row_shares, shown_rows, window_units
from strata.memory.recall.rank import RankTuning, window_scores
from strata.memory.recall.select import Unit, greedy
from strata.memory.recall.types import RecallItem, RecallResult, RecallTuning, heading
from strata.memory.rules.text import query_stems
from tests.unit.test_recall_rank import DIM, table_of, unit


def scored(texts: list[str], query: str, vectors: np.ndarray | None = None,
           qvec: np.ndarray | None = None, minutes: list[float] | None = None) -> Any:
    t = table_of(texts, minutes=minutes, vectors=vectors)
    stems = query_stems(query)
    ws = window_scores(t, stems, qvec, np.ones(t.n, bool), np.zeros(t.n), RankTuning())
    return t, stems, ws


def test_a_rows_own_share_follows_its_own_words_and_vector() -> None:
    rng = np.random.default_rng(7)
    vecs = np.stack([unit(rng.normal(size=DIM)) for _ in range(3)])
    texts = ["Melanie: how was the weekend?", "Caroline: we went camping by the lake",
             "Melanie: sounds lovely"]
    t, stems, ws = scored(texts, "Where did Caroline go camping?", vecs, None)
    shares = row_shares(t, [0, 1, 2], stems, None, ws, RankTuning())
    assert shares[1] > shares[0] and shares[1] > shares[2]
    assert shares[0] == shares[2] == 0.0  # no word of the query, no vector to help
    # Without a shared word, the row whose vector is the query's leads.
    t, stems, ws = scored(["alpha", "beta", "gamma"], "delta", vecs, vecs[2])
    shares = row_shares(t, [0, 1, 2], stems, vecs[2], ws, RankTuning())
    assert max(shares, key=lambda r: shares[r]) == 2


def test_shown_rows_keep_the_best_and_those_within_the_margin() -> None:
    shares = {10: 0.1, 11: 1.0, 12: 0.7}
    assert shown_rows((10, 11, 12), shares, 0.5) == ((11, 12), 11)
    assert shown_rows((10, 11, 12), shares, 0.0) == ((11,), 11)
    assert shown_rows((10, 11, 12), shares, math.inf) == ((10, 11, 12), 11)
    # The best is kept whatever the margin, also when every share is below zero.
    assert shown_rows((10, 11), {10: -2.0, 11: -0.5}, 0.1) == ((11,), 11)


def test_the_best_windows_are_whole_and_the_rest_show_their_best_rows() -> None:
    texts = ["Caroline: I paint sunsets", "Melanie: nice", "Melanie: weather",
             "Caroline: painting lakes now", "Melanie: ok", "Melanie: fine",
             "Caroline: I paint sunsets"]
    t, stems, ws = scored(texts, "What does Caroline paint?",
                          minutes=[0, 1, 2, 3, 4, 5, 6])
    top = [int(i) for i in np.argsort(-ws.score, kind="stable") if ws.valid[i]]
    said = dict(enumerate(texts))
    shares = row_shares(t, list(range(t.n)), stems, None, ws, RankTuning())
    whole = window_units(t, ws, top, said)
    trimmed = window_units(t, ws, top, said, shares, 0.0, whole=1)
    assert [u.key for u in whole] == [u.key for u in trimmed]
    assert trimmed[0].rows == whole[0].rows  # the best window is shown whole
    for u in trimmed[1:]:
        assert len(u.rows) == 1 and u.rows == (u.centre,)
        assert u.centre == max(whole[[w.key for w in whole].index(u.key)].rows,
                               key=lambda r: shares[r])
    # The same words said again (row 6 repeats row 0) are one window, the better one.
    assert sum(1 for u in whole if said[u.key] == texts[0]) == 1


def test_a_window_that_no_longer_fits_brings_its_best_row() -> None:
    t = table_of([f"row {i}" for i in range(6)], minutes=[0, 1, 2, 300, 301, 302])
    units = [Unit(1, 2.0, (0, 1, 2), int(t.session[1])),
             Unit(4, 1.0, (3, 4, 5), int(t.session[4]), core=5)]

    def cost(run: tuple[int, ...]) -> int:
        return 10 + 20 * len(run)

    sel = greedy(units, t, cost, 100, RankTuning(cost_power=0.0, redundancy=0.0))
    assert sel.rows == {0, 1, 2, 5}  # not the centre 4: the row that holds the match


def test_rank_order_takes_the_best_windows_first_and_pays_only_for_new_rows() -> None:
    # Two sessions: rows 0-4, rows 5-9.
    t = table_of([f"row {i}" for i in range(10)], minutes=[0, 1, 2, 3, 4, 300, 301, 302, 303,
                                                             304])

    def cost(run: tuple[int, ...]) -> int:
        return 10 + 20 * len(run)  # a header, then each row

    units = [Unit(2, 3.0, (1, 2, 3), 0), Unit(6, 2.0, (5, 6, 7), 1),
             Unit(3, 1.5, (2, 3, 4), 0), Unit(8, 1.0, (7, 8, 9), 1)]
    # The third window overlaps the first: it adds row 4 to the same span for 20 tokens.
    sel = rank_order(units, t, cost, 160)
    assert sel.rows == {1, 2, 3, 4, 5, 6, 7}
    assert sel.used == cost((1, 2, 3, 4)) + cost((5, 6, 7))
    # The last window (8) would add 2 rows for 40 tokens: no room, though row 7 is shared.
    assert 8 not in sel.rows
    # A window that no longer fits whole brings its centre row; one with no room is skipped.
    sel = rank_order(units, t, cost, 110)
    assert sel.rows == {1, 2, 3, 6} and sel.used == cost((1, 2, 3)) + cost((6,))


def test_extras_compete_in_the_same_rank_order() -> None:
    t = table_of([f"row {i}" for i in range(3)])
    units = [Unit(-1, 2.0, (), -1, cost=40), Unit(1, 1.0, (0, 1, 2), 0)]
    sel = rank_order(units, t, lambda run: 10 + 20 * len(run), 100)
    assert sel.extras == [0] and sel.rows == {1}  # the note first; the window's centre fits


def test_rows_of_one_channel_share_one_heading_in_the_order_of_their_best_item() -> None:
    def item(text: str, where: str, score: float) -> RecallItem:
        rendered = f"- 2023-05-08:\n  > {text}"
        return RecallItem("window", 1, score, score, count_tokens(rendered + "\n"), (1,), text,
                          rendered, where)

    result = RecallResult((item("a", "private chat on telegram", 3.0),
                           item("b", "background channel (rss)", 2.0),
                           item("c", "private chat on telegram", 1.0)))
    block = result.render()
    assert block == "\n".join([
        heading("private chat on telegram"), "- 2023-05-08:\n  > a", "- 2023-05-08:\n  > c",
        heading("background channel (rss)"), "- 2023-05-08:\n  > b"])
    assert count_tokens(block) <= result.tokens
    # Items rendered with their provenance in the header get no heading.
    plain = RecallResult((replace(result.items[0], where=""),))
    assert plain.render() == result.items[0].rendered and plain.tokens == result.items[0].tokens


def rows_in(channels: list[int], texts: list[str]) -> dict[int, dict[str, Any]]:
    return {i: {"content": text, "role": "user", "speaker": "Caroline",
                "ts": f"2023-05-{8 + i // 4:02d}T10:{i % 60:02d}:00Z", "kind": "private",
                "platform": f"platform{ch}", "name": "", "source": "user"}
            for i, (ch, text) in enumerate(zip(channels, texts, strict=True))}


@pytest.mark.parametrize("headings", [True, False])
def test_the_packed_block_never_exceeds_the_budget(headings: bool) -> None:
    texts = [f"Caroline: painting number {i} " + "and more words " * (i % 5)
             for i in range(24)]
    channels = [1 + (i // 6) % 2 for i in range(24)]
    t = table_of(texts, minutes=[float(i) for i in range(24)], channels=channels)
    stems = query_stems("painting")
    ws = window_scores(t, stems, None, np.ones(t.n, bool), np.zeros(t.n), RankTuning())
    top = [int(i) for i in np.argsort(-ws.score, kind="stable") if ws.valid[i]]
    fresh = rows_in(channels, texts)
    shares = row_shares(t, list(range(t.n)), stems, None, ws, RankTuning())
    tuning = replace(RecallTuning(), channel_headings=headings)
    seen_both = False
    for budget in range(20, 400, 7):
        units = window_units(t, ws, top, {i: r["content"] for i, r in fresh.items()}, shares,
                             tuning.trim_margin, tuning.trim_after)
        items = pack(t, fresh, units, [], [], budget, tuning)  # type: ignore[arg-type]
        block = RecallResult(tuple(items)).render()
        if block is None:
            continue
        assert count_tokens(block) <= RecallResult(tuple(items)).tokens <= budget
        for i in items:  # every quoted row whole, verbatim, with who said it, as quoted data
            assert all(f"> {fresh[r - 100]['content']}" in block.splitlines()
                       for r in i.cited_rows)
        if headings:
            wheres = [line for line in block.splitlines() if line.startswith("From the ")]
            assert len(wheres) == len(set(wheres)) >= 1
            assert all(", private chat" not in line for line in block.splitlines())
            seen_both = seen_both or len(wheres) == 2
        else:
            assert "From the " not in block
            assert all(line.endswith(", private chat on platform1:")
                       or line.endswith(", private chat on platform2:")
                       for line in block.splitlines() if line.startswith("- "))
    assert seen_both or not headings
