"""Whose John, a sixth signal (issue 37): do the question's words belong to the speaker it
names? For a question naming exactly one speaker of this memory, `share` is the idf-weighted
mean, over its content words that the memory holds (names left out), of the share of the
rows holding the word that the speaker said, less the speaker's share of all rows. A question
about this memory's John should ask in John's words (share above 0); one about another John
in anyone's. Measured alone on the gate's inputs as `bench/recall_gate_speaker.py` computes
them (questions the defaults' gate lets through only), at penalty thresholds:

    python bench/precision37_speaker_share.py --turns $LOCOMO/turns.jsonl \\
        --questions $LOCOMO/questions.jsonl --conversations 0,1,2 --out FILE
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.recall_gate_profiles import KINDS  # noqa: E402
from bench.recall_gate_speaker import named_speaker, question_rows  # noqa: E402
from bench.recall_tune import Conv, data_arguments, load  # noqa: E402
from strata.evaluation.recall_data import row_text  # noqa: E402
from strata.memory.recall.gate import gate_idf  # noqa: E402
from strata.memory.recall.profiles import speaker_of  # noqa: E402
from strata.memory.recall.types import RecallTuning  # noqa: E402
from strata.memory.rules.text import query_stems, tokens  # noqa: E402


def speaker_share(c: Conv, who: list[str], question: str, person: str) -> float:
    """The module docstring's `share` of one question (0 when none of its words is held)."""
    base = who.count(person) / max(len(who), 1)
    names = {s for w in set(who) for s in tokens(w)}
    num = den = 0.0
    for stem, weight in gate_idf(c.table, query_stems(question)).items():
        posting = c.table.postings.get(stem)
        if stem in names or posting is None or len(posting) == 0:
            continue
        rows = posting.rows.tolist()
        num += weight * sum(who[r] == person for r in rows) / len(rows)
        den += weight
    return num / den - base if den else 0.0


def shares(c: Conv) -> list[dict[str, Any]]:
    """Each question that passes the gate now and names one speaker: its kind and share."""
    who = [speaker_of(row_text(t), False) for t in c.turns]
    out = []
    for r in question_rows(c, RecallTuning()):
        person = named_speaker(r["question"], who)
        if r["logit"] >= 0 and person:
            out.append({"conv": c.conv, "qid": r["qid"], "kind": KINDS[r["kind"]],
                        "share": round(speaker_share(c, who, r["question"], person), 4)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    data_arguments(ap)
    ap.add_argument("--out", help="write the report here (JSON)")
    args = ap.parse_args(argv)
    rows = [r for c in load(args) for r in shares(c)]
    by_kind = {k: [r["share"] for r in rows if r["kind"] == k] for k in KINDS.values()}
    report: dict[str, Any] = {
        "command": "python " + " ".join(sys.argv),
        "percentiles_5_10_25_50": {
            k: [round(float(p), 3) for p in np.percentile(v, [5, 10, 25, 50])]
            for k, v in by_kind.items() if v},
        # Below each threshold the gate would be silent: how many of each kind that is.
        "below": {str(t): {k: sum(s < t for s in v) for k, v in by_kind.items()}
                  for t in (-0.3, -0.2, -0.1, 0.0)},
        "passing": {k: len(v) for k, v in by_kind.items()}, "questions": rows}
    print(json.dumps({k: v for k, v in report.items() if k != "questions"}, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
