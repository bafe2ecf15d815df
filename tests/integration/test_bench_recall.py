"""Smoke test of the recall latency benchmark (bench/recall_latency.py) at tiny sizes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_bench_recall_smoke(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "recall_latency.py"), "--sizes", "30,120",
         "--people", "3", "--others", "20", "--queries", "8", "--dim", "32", "--out", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    assert report["dim"] == 32
    # Memories are transcript rows now (recall's unit is a window of them).
    assert [r["memories"] for r in report["results"]] == [30, 120]
    for r in report["results"]:
        assert r["people"] == 3 and r["queries"] == 8
        assert r["index_build_ms"] > 0 and r["recall_mean_items"] > 0
        for part in ("recall", "vec_knn", "numpy_floor"):
            assert 0 < r[part]["p50_ms"] <= r[part]["p95_ms"], part
    assert "numpy p50" in run.stdout
