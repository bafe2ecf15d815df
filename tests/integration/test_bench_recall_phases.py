"""Smoke test of the recall phases benchmark (bench/recall_phases.py) at a tiny size."""

from __future__ import annotations

from pathlib import Path

from tests.bench_smoke import run_bench


def test_bench_recall_phases_smoke(tmp_path: Path) -> None:
    rep = run_bench("recall_phases.py", ["--persons", "2", "--memories", "300", "--searches",
                                         "3", "--engines", "sqlite"], tmp_path)["engines"]["sqlite"]
    first, warm = rep["first"], rep["warm"]
    assert (first["searches"], warm["searches"]) == (2, 6)
    # A first search loads the person's rows; a warm one only checks they are fresh.
    assert 0 < warm["statements"] < first["statements"]
    assert {"row index (freshness, load)", "episode source", "fact source",
            "window_scores", "pack"} <= set(warm["phases"])
    alone = [s["sql"] for s in rep["warm_statements_alone"]]
    assert abs(len(alone) - warm["statements"]) < 2  # one search of the warm ones
    assert not any("FROM channels WHERE id" in s for s in alone)  # read once, by the first
    assert all(s["ms"] > 0 for s in rep["warm_statements_alone"])
