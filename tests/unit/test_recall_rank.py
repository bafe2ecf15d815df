"""Recall's ranking pieces (strata.memory.recall.rank), on hand-made rows and vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from strata.memory.recall.rank import RankTuning, keyword_coverage, window_scores
from strata.memory.recall.select import (
    Unit,
    above_floor,
    added_cost,
    greedy,
    spans,
    unit_vectors,
)
from strata.memory.rules.names import strangers, unknown_name, without_names
from strata.memory.rules.row_table import RowTable, build_table, surface_words
from strata.memory.rules.text import query_stems

DIM = 8


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def table_of(texts: list[str], minutes: list[float] | None = None,
             channels: list[int] | None = None,
             vectors: np.ndarray | None = None) -> RowTable:
    n = len(texts)
    rng = np.random.default_rng(3)
    vecs = vectors if vectors is not None else np.stack(
        [unit(rng.normal(size=DIM)) for _ in range(n)])
    return build_table(list(range(100, 100 + n)), channels or [1] * n,
                       minutes or [float(i) for i in range(n)], texts, vecs,
                       np.ones(n, bool), 60.0)


def scores(table: RowTable, query: str, vector: np.ndarray | None,
           tuning: RankTuning | None = None) -> object:
    return window_scores(table, query_stems(query), vector, np.ones(table.n, bool),
                         np.zeros(table.n), tuning or RankTuning())


def test_windows_are_a_row_and_its_neighbours_in_one_session_and_channel() -> None:
    t = table_of(["a", "b", "c", "d", "e"], minutes=[0, 1, 2, 500, 501],
                 channels=[1, 1, 2, 1, 1])
    # Row 2 is another channel; row 3 comes after a long pause: a new session.
    assert t.prev.tolist() == [-1, 0, -1, -1, 3]
    assert t.next.tolist() == [1, -1, -1, 4, -1]
    assert len(set(t.session.tolist())) == 3
    assert spans(t, {0, 1, 3}) == [(0, 1), (3,)]


def test_keyword_and_semantic_are_calibrated_per_query() -> None:
    texts = ["the violin teacher lives in lisbon", "weather talk", "lunch was fine",
             "more weather", "a long pause", "violin practice tomorrow"]
    t = table_of(texts, minutes=[0, 100, 200, 300, 400, 500])  # every row its own session
    q = t.vectors[0]
    ws = scores(t, "violin teacher lisbon", q, RankTuning(semantic_top=3))
    assert ws.keyword.max() == pytest.approx(1.0) and int(np.argmax(ws.keyword)) == 0
    assert ws.keyword[1] == 0.0 and 0 < ws.keyword[5] < 1
    # The best windows score about 1 and the background's mean 0, whatever the cosine range.
    top3 = np.sort(ws.semantic)[-3:]
    assert top3.mean() == pytest.approx(1.0) and top3[-1] > 1.0
    assert ws.semantic.mean() == pytest.approx(0.0, abs=1e-6)
    assert int(np.argmax(ws.score)) == 0
    # With a scale of the best window alone (the default), that window is exactly 1.
    alone = scores(t, "violin teacher lisbon", q)
    assert alone.semantic.max() == pytest.approx(1.0)
    assert alone.semantic.mean() == pytest.approx(0.0, abs=1e-6)


def test_one_lucky_window_does_not_shrink_the_semantic_scale_of_the_rest() -> None:
    # One window far ahead of every other: over the best alone, the runner-up looks weak;
    # over the mean of the best three, it keeps a score comparable with other queries'.
    basis = np.eye(DIM)
    q = basis[0]
    vecs = np.stack([q] + [unit(0.5 * q + basis[i]) for i in (1, 2, 3)]
                    + [basis[i] for i in range(4, DIM)])
    t = table_of([f"row {i}" for i in range(DIM)], minutes=[100.0 * i for i in range(DIM)],
                 vectors=vecs)
    alone = scores(t, "nothing here", q, RankTuning(semantic_top=1))
    top3 = scores(t, "nothing here", q, RankTuning(semantic_top=3))
    assert alone.semantic[0] == pytest.approx(1.0)
    for i in (1, 2, 3):
        assert top3.semantic[i] > alone.semantic[i] > 0
    # The ranking itself is the same; only the semantic scale, against the keyword's, moves.
    assert np.argsort(-top3.semantic).tolist() == np.argsort(-alone.semantic).tolist()
    assert top3.cos_top < alone.cos_top


def test_semantic_scores_do_not_depend_on_the_models_cosine_range() -> None:
    """Another model that squeezes every cosine into a narrow band (cos' = a·cos + b) gives
    the same semantic scores and the same gate feature: nothing to retune."""
    rng = np.random.default_rng(11)
    vecs = np.stack([unit(rng.normal(size=DIM)) for _ in range(30)])
    q = unit(vecs[4] + 0.3 * rng.normal(size=DIM))
    a = 0.2  # cos' = a·cos + (1 − a): all cosines land in [0.6, 1]
    shared = np.zeros(DIM, np.float32)
    squeezed = np.hstack([math.sqrt(a) * vecs, np.tile(np.append(shared, 1.0), (30, 1))
                          * math.sqrt(1 - a)]).astype(np.float32)
    q2 = np.append(math.sqrt(a) * q, np.append(shared, 1.0) * math.sqrt(1 - a)).astype(
        np.float32)
    texts = [f"row {i}" for i in range(30)]
    minutes = [100.0 * i for i in range(30)]
    base = scores(table_of(texts, minutes, vectors=vecs), "zzz", q)
    other = scores(table_of(texts, minutes, vectors=squeezed), "zzz", q2)
    assert np.nanmin(other.cosine) > 0.55 > np.nanmin(base.cosine)
    assert np.allclose(base.semantic, other.semantic, atol=1e-4)
    assert base.gate_z == pytest.approx(other.gate_z, abs=1e-3)


def test_name_and_coverage_pieces() -> None:
    t = table_of(["Caroline: I joined a support group", "Melanie: I painted a sunset"])
    assert unknown_name("What did Caroline join?", t) is False
    assert unknown_name("What did Tim join?", t) is True
    assert unknown_name("Where did Caroline go in June?", t) is False  # months are dates
    idf = {"carolin": 1.0, "join": 2.0, "zebra": 3.0}  # keyed by stem: Porter's `carolin`
    assert without_names("Did Caroline join a zebra?", idf) == {"join": 2.0, "zebra": 3.0}
    assert without_names("Caroline", {"carolin": 1.0}) == {"carolin": 1.0}
    # Memory keeps dates in its headers: "in June 2023" is no word the answer lacks.
    assert without_names("Did Caroline join in June 2023?",
                         {"carolin": 1.0, "join": 2.0, "june": 3.0, "2023": 3.0}) == {"join": 2.0}
    assert keyword_coverage(t, [0], {"join": 2.0, "zebra": 3.0}) == pytest.approx(0.4)


def test_a_name_is_checked_as_written_not_as_a_stem() -> None:
    # The stemmer turns "times" into "tim": the name Tim must not count as known for it.
    t = table_of(["Caroline: three times a week", "Melanie: John's dog ran off"])
    assert strangers("What does Tim play?", t) == ["Tim"]
    assert unknown_name("What does Tim play?", t) is True
    # A possessive is the name; initials and calendar words name nobody.
    assert unknown_name("Where is John's dog?", t) is False
    assert unknown_name("What did Caroline's mother say?", t) is False
    assert unknown_name("Which U.S. city did Caroline visit in May?", t) is False
    assert strangers("Did Caroline meet Jean and Tim?", t) == ["Jean", "Tim"]
    assert surface_words("John’s U.S. trip") == ["john", "u", "s", "trip"]


def test_a_sentence_s_first_word_is_no_name() -> None:
    # Capitalised because a sentence begins there, as the query's first word is.
    t = table_of(["Caroline: I joined a support group in September"])
    question = "Was September a good month for Caroline? Answer yes or no."
    assert strangers(question, t) == []
    assert strangers("Caroline joined. Then Tim left!  Sure", t) == ["Tim"]
    assert strangers("I asked: Where did Caroline go? Tell me about Tim", t) == ["Tim"]
    assert strangers('"Tim? Who?" she asked', t) == []  # the first word, after a quote
    # An abbreviation's full stop ends no sentence: these are names.
    assert strangers("Does Caroline like books by Dr. Seuss?", t) == ["Seuss"]
    assert strangers("Did Caroline visit the U.S. Embassy?", t) == ["Embassy"]


def cost_of(run: tuple[int, ...]) -> int:
    return 10 + 20 * len(run)  # a header, then each row


def test_overlapping_windows_merge_and_are_not_paid_twice() -> None:
    t = table_of([f"row {i}" for i in range(6)])
    assert added_cost(t, set(), [1, 2, 3], cost_of) == 70
    assert added_cost(t, {1, 2, 3}, [4], cost_of) == 20  # joins the run: no second header
    assert added_cost(t, {1, 2}, [4], cost_of) == 30  # a gap: a span of its own
    units = [Unit(2, 3.0, (1, 2, 3), 0), Unit(3, 2.9, (2, 3, 4), 0), Unit(0, 0.5, (0, 1), 0)]
    sel = greedy(units, t, cost_of, 110, RankTuning(cost_power=0.0, redundancy=0.0))
    assert sel.rows == {0, 1, 2, 3, 4} and sel.used == 110 == cost_of((0, 1, 2, 3, 4))


def test_greedy_respects_the_budget_and_falls_back_to_the_centre_row() -> None:
    t = table_of([f"row {i}" for i in range(10)], minutes=[0, 1, 2, 3, 4, 300, 301, 302,
                                                             303, 304])
    units = [Unit(2, 2.0, (1, 2, 3), t.session[2]), Unit(7, 1.0, (6, 7, 8), t.session[7])]
    sel = greedy(units, t, cost_of, 100, RankTuning(cost_power=0.0, redundancy=0.0))
    assert sel.rows == {1, 2, 3} | {7} and sel.used <= 100


def test_redundant_windows_give_way_to_another_session() -> None:
    """MMR: the second-best window says the same as the best; a different one is taken."""
    rng = np.random.default_rng(5)
    a, b = unit(rng.normal(size=DIM)), unit(rng.normal(size=DIM))
    vecs = np.stack([a, a, b])
    t = table_of(["x", "y", "z"], minutes=[0, 200, 400], vectors=vecs)
    units = [Unit(0, 1.0, (0,), 0), Unit(1, 0.95, (1,), 1), Unit(2, 0.8, (2,), 2)]
    plain = greedy(units, t, cost_of, 60, RankTuning(cost_power=0.0, redundancy=0.0),
                   unit_vectors(t, units))
    mmr = greedy(units, t, cost_of, 60, RankTuning(cost_power=0.0, redundancy=0.3),
                 unit_vectors(t, units))
    assert plain.rows == {0, 1} and mmr.rows == {0, 2}


def test_a_name_known_only_from_other_memories_is_not_a_stranger() -> None:
    t = table_of(["Caroline: I joined a choir."])
    assert unknown_name("What did Ottavio adopt?", t) is True
    # Once the row that named Ottavio is pruned, a roll-up parent still knows him.
    assert unknown_name("What did Ottavio adopt?", t, known={"ottavio", "greyhound"}) is False


def test_a_rows_month_is_searchable() -> None:
    from strata.memory.recall.index import keyword_text

    rows = [{"content": "Caroline: I baked bread", "role": "user", "speaker": "Caroline",
             "ts": ts} for ts in ("2023-05-08T13:56:00Z", "2023-06-27T10:00:00Z")]
    texts = [keyword_text(r) for r in rows]  # type: ignore[arg-type]
    assert texts == ["Caroline: I baked bread may", "Caroline: I baked bread june"]
    t = table_of([*texts, "Melanie: lovely", "Melanie: see you"], minutes=[0, 500, 1000, 1500])
    ws = scores(t, "What did Caroline bake in June?", None)
    assert int(np.argmax(ws.score)) == 1  # type: ignore[attr-defined]


def test_the_relative_floor_and_the_faded_floor() -> None:
    units = [Unit(0, 1.0, (0,), 0), Unit(1, 0.5, (1,), 0), Unit(2, 0.2, (2,), 0),
             Unit(3, 0.7, (3,), 0, faded=True), Unit(4, 0.95, (4,), 0, faded=True)]
    keys = lambda us: [u.key for u in us]  # noqa: E731
    assert keys(above_floor(units, 0.0)) == [0, 1, 2, 3, 4]
    assert keys(above_floor(units, 0.3)) == [0, 1, 3, 4]  # weak items out, faded or not
    assert keys(above_floor(units, 0.3, 0.8)) == [0, 1, 4]  # a faded one needs 0.8 × best
    assert keys(above_floor(units, 0.3, 2.0)) == [0, 1]  # above 1: faded ones leave
    negative = [Unit(0, -0.1, (0,), 0), Unit(1, -0.5, (1,), 0, faded=True)]
    assert keys(above_floor(negative, 0.5, 2.0)) == [0, 1]  # no positive best: no scale
