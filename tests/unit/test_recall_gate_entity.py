"""The gate's candidates conditioned on a named person and on a named date
(`strata.memory.rules.names.known_names`, `bench/recall_gate_entity.py`), on hand-made
rows."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from bench.recall_gate_entity import date_gap, entity_features, named_dates
from strata.memory.recall.rank import RankTuning, window_scores
from strata.memory.rules.names import known_names
from strata.memory.rules.row_table import RowTable, build_table
from strata.memory.rules.text import query_stems

DIM = 8


def _minutes(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() / 60.0


def _table(texts: list[str], days: list[str] | None = None) -> RowTable:
    n = len(texts)
    rng = np.random.default_rng(5)
    vecs = rng.normal(size=(n, DIM))
    vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    minutes = [_minutes(d) for d in days] if days else [float(i) for i in range(n)]
    return build_table(list(range(1, n + 1)), [1] * n, minutes, texts, vecs,
                       np.ones(n, bool), 60.0)


ROWS = ["John: I scored thirty points in the basketball game",
        "Maria: Wow John, what a game",
        "Maria: I baked bread for the shelter today",
        "John: the shelter needs volunteers",
        "Maria: my cat is asleep on the bread"]
SPEAKERS = ["John", "Maria", "Maria", "John", "Maria"]


def _features(table: RowTable, query: str) -> dict[str, float]:
    stems = query_stems(query)
    rng = np.random.default_rng(9)
    qvec = rng.normal(size=DIM).astype(np.float32)
    ws = window_scores(table, stems, qvec / np.linalg.norm(qvec), np.ones(table.n, bool),
                       np.zeros(table.n), RankTuning())
    return entity_features(table, ws, query, stems, qvec / np.linalg.norm(qvec), SPEAKERS)


def test_known_names_are_the_names_this_memory_mentions() -> None:
    t = _table(ROWS)
    assert known_names("What did John score against Tim?", t) == ["john"]
    assert known_names("Did Maria and John meet in June?", t) == ["maria", "john"]
    assert known_names("What did Tim paint?", t) == []
    assert known_names("What did John's cat do?", t) == ["john"]  # a possessive is the name


def test_the_named_persons_rows_hold_the_question_or_not() -> None:
    t = _table(ROWS)
    his = _features(t, "What points did John score in the game?")
    other = _features(t, "What did John bake for the cat?")
    assert his["named"] == other["named"] == 1.0
    # John's rows (said by him or naming him) hold "points", "score" and "game"...
    assert his["ent_any_gap"] == pytest.approx(0.0)
    # ...but not "bake" or "cat", which only Maria's rows say.
    assert other["ent_any_gap"] == pytest.approx(1.0)
    assert his["ent_assoc"] > other["ent_assoc"]
    assert his["ent_spoken_cov"] < other["ent_spoken_cov"]
    # His best row holds more of his question than Maria's best; hers more of the other.
    assert his["ent_row_contrast"] > 0 > other["ent_row_contrast"]
    # Nobody known named: nothing to condition on, every gap 0.
    nobody = _features(t, "What did Tim bake?")
    assert nobody["named"] == 0.0
    assert all(v == 0.0 for v in nobody.values())


def test_named_dates_reads_days_months_and_years() -> None:
    assert named_dates("What did John get in December?") == [(None, 12, None)]
    assert named_dates("when they met on Aug 15th?") == [(None, 8, 15)]
    assert named_dates("accepted on May 23, 2023?") == [(2023, 5, 23)]
    assert named_dates("What dish did Nate make on 9 November, 2022?") == [(2022, 11, 9)]
    assert named_dates("He decided in 2022 that he may go") == [(2022, None, None)]
    assert named_dates("What may John do next?") == []  # "may" alone is a verb


def test_date_gap_asks_whether_the_memory_was_there_that_day() -> None:
    t = _table(ROWS[:3], ["2023-05-20T10:00:00", "2023-05-21T10:00:00", "2023-08-01T10:00:00"])
    assert date_gap("What did John do on May 23, 2023?", t.minutes) == 0.0  # within a week
    assert date_gap("What did John do on May 23?", t.minutes) == 0.0  # the memory's year
    assert date_gap("What did John do in August?", t.minutes) == 0.0
    assert date_gap("What did John do in December 2023?", t.minutes) == 1.0
    assert date_gap("What did John do in 2021?", t.minutes) == 1.0
    assert date_gap("What did John do on June 20, 2023?", t.minutes) == 1.0
    assert date_gap("What did John do?", t.minutes) == 0.0
