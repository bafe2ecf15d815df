"""The gate's `unowned` penalty (issue 37, "know whose John"), measured per group of questions.

For every question of the chosen conversations (`bench/recall_tune.py`'s in-memory tables, the
same ranking and gate as recall) this computes the defaults' gate logit without the penalty
and whether the question calls something a known person's that the memory never ties to them
(`strata.memory.recall.profiles.unowned`). It reports, per conversation and over all:

- own questions that name someone the memory knows: how many the gate lets through, and how
  many of those the penalty would silence at each value;
- foreign questions (the eval's false-injection sample) that name someone the memory knows:
  how many get through, and how many the penalty stops;
- hard negatives (the foreign questions with their strangers' names swapped for this memory's
  people): the same;
- every own and foreign question: silent on own, false injection.

`--choose` applies the rule for the penalty's value: the largest of `--values` that silences
none of the own questions the gate lets through now (an own question is never given up for a
foreign one), and of those equal, the smallest that stops as many foreign questions naming a
known person as the largest does. Use it on the tuning conversations only.

    python bench/recall_gate_profiles.py --turns $LOCOMO/turns.jsonl \\
        --questions $LOCOMO/questions.jsonl --conversations 0,1,2 \\
        --base-url http://127.0.0.1:8088/v1 --choose --out FILE
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.recall_tune import Conv, data_arguments, load  # noqa: E402
from strata.evaluation.recall_data import EvalQuestion, row_text  # noqa: E402
from strata.memory.recall.gate import gate_features, gate_logit  # noqa: E402
from strata.memory.recall.index import keyword_text, recency_of  # noqa: E402
from strata.memory.recall.profiles import asked_of, build_profiles, unowned  # noqa: E402
from strata.memory.recall.rank import window_scores  # noqa: E402
from strata.memory.recall.types import RecallTuning  # noqa: E402
from strata.memory.rules.names import name_check, names_in  # noqa: E402
from strata.memory.rules.text import query_stems  # noqa: E402

KINDS = {1: "own", 0: "foreign", -1: "hard"}


def question_rows(c: Conv, tuning: RecallTuning) -> list[dict[str, Any]]:
    """Per question: its kind, the gate's logit without the penalty, `unowned`, `named`."""
    rank = tuning.rank
    texts = [keyword_text({"content": row_text(t), "role": t.role.value, "speaker": t.speaker,
                           "ts": t.ts.isoformat()}) for t in c.turns]
    profiles = build_profiles(texts, [False] * len(texts), c.table.prev.tolist())
    out = []
    groups: list[tuple[int, Sequence[EvalQuestion], str]] = [
        (1, c.own, ""), (0, c.foreign, "/f"), (-1, c.swapped, "/s")]
    for kind, questions, suffix in groups:
        for q in questions:
            stems = query_stems(q.question)
            ws = window_scores(c.table, stems, c.qvec[q.qid + suffix],
                               np.ones(c.table.n, bool),
                               recency_of(c.table.minutes, q.asked_at, 14.0), rank)
            z, cover = gate_features(c.table, ws, q.question, stems)
            names = name_check(q.question, c.table)
            known = [w for w in names_in(q.question) if w in c.table.words]
            out.append({"conv": c.conv, "qid": q.qid, "kind": kind, "question": q.question,
                        "adversarial": q.category == "adversarial",
                        "logit": round(gate_logit(z, cover, names, rank), 4),
                        "named": names.familiar,
                        "unowned": unowned(q.question, c.table, profiles),
                        "absent": any(t not in c.table.postings
                                      for a in asked_of(q.question, known)
                                      for thing in a.things for t in thing)})
    return out


def rates(rows: Sequence[dict[str, Any]], penalty: float,
          feature: str = "unowned") -> dict[str, Any]:
    """Counts at one penalty value."""
    def passes(r: dict[str, Any]) -> bool:
        return r["logit"] - penalty * float(r[feature]) >= 0

    out: dict[str, Any] = {}
    for kind, label in KINDS.items():
        mine = [r for r in rows if r["kind"] == kind]
        named = [r for r in mine if r["named"]]
        out[label] = {"n": len(mine), "pass": sum(map(passes, mine)),
                      "named": len(named), "named_pass": sum(map(passes, named)),
                      "flagged": sum(r[feature] for r in named),
                      "adversarial_pass": sum(map(passes, [r for r in mine if r["adversarial"]]))}
    own, foreign = out["own"], out["foreign"]
    out["silent_on_own"] = round(1 - own["pass"] / max(own["n"], 1), 4)
    out["false_injection"] = round(foreign["pass"] / max(foreign["n"], 1), 4)
    return out


def choose(rows: Sequence[dict[str, Any]], values: Sequence[float], feature: str) -> float:
    """The rule in the module's docstring."""
    own_now = rates(rows, 0.0, feature)["own"]["pass"]
    safe = [v for v in values if rates(rows, v, feature)["own"]["pass"] == own_now]
    if not safe:
        return 0.0
    best = min(rates(rows, v, feature)["foreign"]["named_pass"] for v in safe)
    return min(v for v in safe if rates(rows, v, feature)["foreign"]["named_pass"] == best)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    data_arguments(ap)
    ap.add_argument("--values", default="0,0.5,1,1.5,2,2.5,3,4,5,6,8")
    ap.add_argument("--choose", action="store_true", help="apply the choosing rule")
    ap.add_argument("--feature", default="unowned", choices=("unowned", "absent"),
                    help="unowned: the profile check (recall's); absent: the thing the "
                    "question calls someone's is a word this memory never says (compared)")
    ap.add_argument("--out", help="write the report here (JSON)")
    ap.add_argument("--rows-out", help="write every question's logit and feature here (JSONL)")
    args = ap.parse_args(argv)
    tuning = RecallTuning()
    rows = [r for c in load(args) for r in question_rows(c, tuning)]
    values = [float(v) for v in args.values.split(",")]
    report: dict[str, Any] = {
        "command": "python " + " ".join(sys.argv), "feature": args.feature,
        "by_value": {str(v): {"all": rates(rows, v, args.feature), **{
            conv: rates([r for r in rows if r["conv"] == conv], v, args.feature)
            for conv in dict.fromkeys(r["conv"] for r in rows)}} for v in values}}
    if args.choose:
        report["chosen"] = choose(rows, values, args.feature)
    for v in values:
        a = report["by_value"][str(v)]["all"]
        own = a["own"]
        print(f"penalty {v:>4}: own pass {own['pass']}/{own['n']} (adversarial "
              f"{own['adversarial_pass']}), named {own['named_pass']}/{own['named']}, "
              f"foreign named pass {a['foreign']['named_pass']}/{a['foreign']['named']}, "
              f"hard pass {a['hard']['pass']}/{a['hard']['n']}, silent {a['silent_on_own']}, "
              f"FI {a['false_injection']}", flush=True)
    if args.choose:
        print(f"chosen: {report['chosen']}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.rows_out:
        Path(args.rows_out).write_text("".join(json.dumps(r) + "\n" for r in rows),
                                       encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
