"""`python -m bench.perf` end to end at a tiny size on SQLite: the report's figures, their
floors and targets, and the markdown table written beside the JSON. Shape only: no timings are
asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.perf import Figure, main, table


def test_bench_perf_writes_figures_beside_their_floors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no strata.toml of the checkout's
    out = tmp_path / "bench.json"
    assert main(["--only", "engines", "--engines", "sqlite", "--persons", "2",
                 "--memories", "60", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    names = [f["name"] for f in report["figures"]]
    assert names == ["recall_warm_p95_ms_sqlite", "recall_first_ms_sqlite",
                     "recall_first_ever_ms_sqlite", "vector_knn_p95_ms_sqlite",
                     "ingest_turns_per_s_sqlite"]
    for f in report["figures"]:
        assert set(f) >= {"name", "value", "floor", "unit", "ok", "target"}
        assert f["value"] > 0 and f["floor"] > 0, f
        # a figure with a target is judged; one without (the first search ever) is not
        assert isinstance(f["ok"], bool) if f["target"] is not None else f["ok"] is None, f
    warm = next(f for f in report["figures"] if f["name"] == "recall_warm_p95_ms_sqlite")
    assert warm["target"] == round(3 * warm["floor"], 3)
    assert report["command"].startswith("python -m bench.perf --only engines --persons 2")
    md = out.with_suffix(".md").read_text()
    assert "`recall_warm_p95_ms_sqlite`" in md and "Made by `python -m bench.perf" in md
    assert "| `ingest_turns_per_s_sqlite` |" in capsys.readouterr().out


def test_figure_ok_follows_the_direction_of_its_target() -> None:
    slow = Figure("recall_first_ms_sqlite", 80.0, 0.4, "ms", 50.0)
    fast = Figure("ingest_turns_per_s_sqlite", 1200.0, 5000.0, "turns/s", 1000.0, higher=True)
    info = Figure("turn_overhead_p95_ms", 900.0, None, "ms", None)
    assert (slow.ok, fast.ok, info.ok) == (False, True, None)
    rows = table([f.to_json() for f in (slow, fast, info)]).splitlines()
    assert rows[2] == "| `recall_first_ms_sqlite` | 80 | 0.4 | ≤ 50 | ms | **no** |"
    assert rows[3] == "| `ingest_turns_per_s_sqlite` | 1,200 | 5,000 | ≥ 1,000 | turns/s | yes |"
    assert rows[4] == "| `turn_overhead_p95_ms` | 900 | – | – | ms | – |"
