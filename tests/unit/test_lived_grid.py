"""The job-check grid of `--lived`: checks every `step` from the first turn."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from strata.evaluation.lived import Grid

T0 = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
GRID = Grid(T0, timedelta(minutes=5))


def test_after_rounds_up_to_the_next_check() -> None:
    assert GRID.after(T0) == T0
    assert GRID.after(T0 + timedelta(minutes=31)) == T0 + timedelta(minutes=35)
    assert GRID.after(T0 + timedelta(minutes=35)) == T0 + timedelta(minutes=35)
    assert GRID.after(T0 + timedelta(seconds=1)) == T0 + timedelta(minutes=5)
    assert GRID.after(T0 - timedelta(hours=1)) == T0  # never before the first check


def test_next_is_one_step_on() -> None:
    assert GRID.next(T0 + timedelta(minutes=35)) == T0 + timedelta(minutes=40)
    assert GRID.next(T0 + timedelta(minutes=36)) == T0 + timedelta(minutes=45)
