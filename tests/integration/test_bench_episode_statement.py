"""Smoke test of the episode statement benchmark (bench/episode_statement.py) at a tiny size."""

from __future__ import annotations

from pathlib import Path

from tests.bench_smoke import run_bench


def test_bench_episode_statement_smoke(tmp_path: Path) -> None:
    rep = run_bench("episode_statement.py", ["--persons", "2", "--memories", "300", "--runs",
                                             "2", "--engines", "sqlite"],
                    tmp_path)["engines"]["sqlite"]
    assert len(rep["episodes_per_person"]) == 2 and min(rep["episodes_per_person"]) > 0
    assert rep["episodes_found"] > 0
    for part in ("statement", "knn_with_details", "keyword_with_details", "knn_alone",
                 "keyword_alone"):
        assert rep[part] > 0, part
