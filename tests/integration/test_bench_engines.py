"""Smoke test of the engines benchmark (bench/engines.py) at tiny sizes, on both engines.

The PostgreSQL side runs on the session's test server (`--pg-url`: the bench makes and drops
a scratch database there), so no second server is started. Shape and signs only: no timings.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.engines import main


@pytest.fixture
def pg_args(request: pytest.FixtureRequest) -> list[str]:
    server = request.getfixturevalue("pg_server")
    return ["--pg-url", server.admin_url]


@pytest.mark.postgres_only  # both engines side by side: once, in the PostgreSQL pass
def test_bench_engines_smoke(tmp_path: Path, pg_args: list[str],
                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "engines.json"
    engines = ["sqlite", "postgres"]
    assert main(["--persons", "3", "--memories", "60", "--facts", "4", "--queries", "3",
                 "--recall-persons", "2", "--ingest-turns", "6", "--dim", "32",
                 "--engines", ",".join(engines), "--out", str(out), *pg_args]) == 0
    report = json.loads(out.read_text())
    assert report["dim"] == 32 and report["top_k"] == 40
    assert report["sizes"]["memories_per_person"] == 60
    assert report["sizes"]["episodes_per_person"] == 3
    assert list(report["engines"]) == engines
    assert "postgresql://" not in report["command"]
    floor = report["floor"]["numpy_knn_ms"]
    assert 0 < floor["p50_ms"] <= floor["p95_ms"]
    for name, e in report["engines"].items():
        assert e["populate_seconds"] > 0, name
        recall = e["recall_ms"]
        assert recall["cold_searches"] == 2 and recall["warm_searches"] == 6
        assert recall["mean_items"] > 0, name
        # A first search loads the rows: it runs more statements than a warm one, which
        # still runs several (the look at the rows, the candidate sources, the texts).
        assert recall["statements"]["cold"] > recall["statements"]["warm"] >= 3, name
        for part in (recall["cold"], recall["warm"], e["vec_knn_ms"]):
            assert 0 < part["p50_ms"] <= part["p95_ms"], name
        # Both engines' kNN are exact scans: every one of the 40 nearest rows is found.
        assert e["vec_knn_ms"]["exact_share"] == 1.0, name
        ingest = e["ingest"]
        assert ingest["turns"] == 6 and ingest["rows"] == 12
        assert ingest["turns_per_second"] > 0 and ingest["floor_turns_per_second"] > 0
    table = capsys.readouterr().out
    assert "recall p50" in table and "numpy kNN floor" in table
