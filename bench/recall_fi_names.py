"""Split `strata eval recall`'s false injection by whether the foreign question names one of
this memory's own speakers.

`false_injection_rate` (unchanged, the figure of record) counts every question about another
conversation that gets a block. A question about another conversation's John asked of a memory
whose own speaker is John ("What does John want to do after his basketball career?") is a
negative no name check can catch: it is about this memory's John as far as the words go. This
reports the rate on those and on the rest beside the overall one, per conversation, from a
`--details` file:

    python bench/recall_fi_names.py --turns $LOCOMO/turns.jsonl --questions \\
        $LOCOMO/questions.jsonl --details bench/results/FILE.details.jsonl --out FILE.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from strata.evaluation.recall_data import load_questions, load_turns  # noqa: E402
from strata.memory.rules.row_table import surface_words  # noqa: E402


def split(details: list[dict[str, Any]], text: dict[str, str],
          speakers: dict[str, set[str]]) -> dict[str, Any]:
    """Per conversation and overall: (questions, injected) for foreign questions that name one
    of the conversation's speakers, for the others, and for all."""
    counts: dict[str, dict[str, list[int]]] = {}
    for d in details:
        if not d.get("abstention"):
            continue
        names = speakers[d["conv"]] & set(surface_words(text[d["qid"]]))
        kind = "names_own_speaker" if names else "other"
        injected = int(d["tokens"] > 0)
        for conv in (d["conv"], "all"):
            for k in (kind, "all"):
                c = counts.setdefault(conv, {}).setdefault(k, [0, 0])
                c[0] += 1
                c[1] += injected
    return {conv: {k: {"questions": n, "injected": i, "false_injection_rate": round(i / n, 4)}
                   for k, (n, i) in sorted(kinds.items())}
            for conv, kinds in sorted(counts.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--details", required=True, action="append")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    speakers: dict[str, set[str]] = {}
    for t in load_turns(Path(args.turns)):
        if t.speaker:
            speakers.setdefault(t.conv, set()).update(surface_words(t.speaker))
    text = {q.qid: q.question for q in load_questions(Path(args.questions))}
    details = [json.loads(line) for f in args.details
               for line in Path(f).read_text(encoding="utf-8").splitlines() if line.strip()]
    report = {"command": "python " + " ".join(sys.argv), "by_conversation": split(
        details, text, speakers)}
    for conv, kinds in report["by_conversation"].items():
        print(f"{conv:<10} " + "  ".join(
            f"{k} {v['injected']}/{v['questions']} ({v['false_injection_rate']:.3f})"
            for k, v in kinds.items()))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
