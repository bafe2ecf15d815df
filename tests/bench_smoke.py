"""Running a benchmark script at a tiny size for its smoke test: its JSON report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]


def run_bench(script: str, args: list[str], tmp_path: Path) -> dict[str, Any]:
    """Run bench/`script` with `args` and `--out` in `tmp_path`; its report."""
    out = tmp_path / "report.json"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args, "--out", str(out)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    report: dict[str, Any] = json.loads(out.read_text())
    return report
