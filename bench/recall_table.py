"""Regenerate the markdown tables of recall results from the JSON files under bench/results/.

Quality rows come from `strata eval recall --out` files (those with `overall` and `command`),
latency rows from `bench/recall_latency.py --out` files that measure memories (rows). Each
row names its file; the command that made it is in the file. Prints markdown on stdout:

    python bench/recall_table.py                 # every result file with a command
    python bench/recall_table.py FILE [FILE ...]  # just these, in this order
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _option(command: str, name: str, default: str) -> str:
    parts = command.split()
    return parts[parts.index(name) + 1] if name in parts[:-1] else default


def quality_table(files: list[Path]) -> str:
    lines = ["| result file | conversations | embedder | evidence_recall | multi_hop |"
             " answer_coverage | hit_rate | false injection | tokens | p95 ms | fts5 |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for path in files:
        data = _load(path)
        if not data or "overall" not in data or "command" not in data:
            continue
        o = data["overall"]
        multi = data.get("by_category", {}).get("multi_hop", {}).get("evidence_recall")
        convs = _option(data["command"], "--conversations", "all")
        method = _option(data["command"], "--method", "recall")
        embedder = data.get("embedder", {}).get("model", "?")
        name = path.name + (" (fts)" if method == "fts" else "")
        # The keyword baseline's evidence recall on the same questions (`--baseline fts5`).
        base = data.get("baseline", {}).get("overall", {}).get("evidence_recall")
        lines.append(
            f"| `{name}` | {convs} | {embedder} | {o['evidence_recall']:.3f} |"
            f" {'' if multi is None else f'{multi:.3f}'} | {o.get('answer_coverage', 0):.3f} |"
            f" {o['hit_rate']:.3f} | {data['abstention']['false_injection_rate']:.3f} |"
            f" {o['mean_injected_tokens']:.0f} | {o['latency_ms_p95']:.1f} |"
            f" {'—' if base is None else f'{base:.3f}'} |")
    return "\n".join(lines)


def latency_table(files: list[Path]) -> str:
    lines = ["| result file | memories | recall p50 ms | recall p95 ms | numpy floor p95 ms |"
             " index build ms |", "|---|---|---|---|---|---|"]
    for path in files:
        data = _load(path)
        if not data or data.get("benchmark") != "turn-zero recall latency":
            continue
        for r in data.get("results", []):
            if "memories" not in r:
                continue  # an older file, measured over episodes
            lines.append(f"| `{path.name}` | {r['memories']} | {r['recall']['p50_ms']:.1f} |"
                         f" {r['recall']['p95_ms']:.1f} | {r['numpy_floor']['p95_ms']:.2f} |"
                         f" {r.get('index_build_ms', 0):.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    files = [Path(a) for a in args] if args else sorted(RESULTS.glob("*.json"))
    print(quality_table(files))
    print()
    print(latency_table(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
