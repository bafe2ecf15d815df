"""Where a benchmark's JSON report goes: one writer for every script under bench/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_report(out: str | Path | None, report: Any) -> None:
    """Write `report` as indented JSON to `out` (its folder made if needed) and say so; no
    `out`, nothing."""
    if not out:
        return
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")
