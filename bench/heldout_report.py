"""Per-conversation table of a `strata eval recall --baseline fts5` run, as the held-out
paraphrase set is reported (docs/recall.md): evidence recall beside FTS5's, false injection,
and how often the gate is silent on a question that has an answer.

    python bench/heldout_report.py bench/results/heldout_paraphrase_b1000_minilm_bot.json

Reads the `--out` JSON and its `--details` file, `<name>.details.jsonl`, which is kept with the
set in `bench/heldout/paraphrase/results/` (it quotes the set's text). `silent`
counts the conversation's own questions with evidence, outside `adversarial`, that got no
block; `adversarial injected` the adversarial questions that got one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DETAILS = Path(__file__).resolve().parent / "heldout" / "paraphrase" / "results"


def table(report: dict[str, Any], details: list[dict[str, Any]]) -> str:
    base = report.get("baseline", {}).get("by_conversation", {})
    lines = ["| conversation | recall | fts5 | recall − fts5 | false injection | silent |"
             " adversarial injected |", "|---|---|---|---|---|---|---|"]
    rows = [*sorted(report["by_conversation"].items()), ("all", report["overall"])]
    for conv, m in rows:
        own = [d for d in details if not d["abstention"] and (conv == "all" or d["conv"] == conv)]
        answerable = [d for d in own if d["evidence"] and d["category"] != "adversarial"]
        silent = sum(d["tokens"] == 0 for d in answerable)
        adversarial = [d for d in own if d["category"] == "adversarial"]
        fts = (base.get(conv) if conv != "all" else report.get("baseline", {}).get("overall"))
        fts_recall = fts["evidence_recall"] if fts else float("nan")
        fi = (m["false_injection_rate"] if conv != "all"
              else report["abstention"]["false_injection_rate"])
        cells = [conv, f"{m['evidence_recall']:.3f}", f"{fts_recall:.3f}",
                 f"{m['evidence_recall'] - fts_recall:+.3f}", f"{fi:.3f}",
                 f"{silent}/{len(answerable)} = {silent / max(1, len(answerable)):.1%}",
                 f"{sum(d['tokens'] > 0 for d in adversarial)}/{len(adversarial)}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    for name in argv:
        path = Path(name)
        report = json.loads(path.read_text(encoding="utf-8"))
        details_path = DETAILS / (path.stem + ".details.jsonl")
        details = [json.loads(x) for x in details_path.read_text(encoding="utf-8").splitlines()]
        print(f"`{path.name}` ({report['embedder']['model']}): `{report['command']}`\n")
        print(table(report, details) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
