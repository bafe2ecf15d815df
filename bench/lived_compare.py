"""Static vs lived recall, per category, from two `strata eval recall --details` files.

The life-cycle issue allows `--lived` (the memory replayed through episode cuts, roll-up,
decay and pruning) to lose at most 0.10 `answer_coverage` against the static eval of the same
data at the same budget. This reads the per-question lines of both runs, recomputes the
metrics with the eval's own `summarize` for each group of conversations asked for (all of
them, and e.g. the tuning and the held-out ones), and checks the loss against that floor in
the same run. Prints a markdown table, writes JSON with `--out`, exits 1 when a group loses
more than the floor:

    python bench/lived_compare.py --static S.jsonl --lived L.jsonl \
        --group dev=conv-26,conv-30,conv-41 --group held_out=conv-42,conv-43 --out X.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from strata.evaluation.recall_metrics import Answer, summarize

MAX_LOSS = 0.10  # answer_coverage the lived eval may lose against the static one
METRICS = ("answer_coverage", "evidence_recall")


def load(path: Path) -> list[Answer]:
    """The answers of a `--details` file."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        out.append(Answer(r["qid"], r["conv"], r["category"], tuple(r["evidence"]),
                          frozenset(r["cited"]), int(r["tokens"]), float(r["latency_ms"]),
                          bool(r["abstention"]), r["injected"], r["answer"]))
    return out


def compare(static: list[Answer], lived: list[Answer], convs: set[str] | None) -> dict[str, Any]:
    """Per category and overall: each metric static, lived and the difference."""
    def pick(answers: list[Answer]) -> dict[str, Any]:
        return summarize([a for a in answers if convs is None or a.conv in convs], 0)

    s, v = pick(static), pick(lived)
    rows: dict[str, dict[str, float]] = {}
    for name, a, b in [("overall", s["overall"], v["overall"]),
                       *((c, s["by_category"][c], v["by_category"].get(c, {}))
                         for c in s["by_category"])]:
        rows[name] = {}
        for m in METRICS:
            rows[name][f"{m}_static"] = a[m]
            rows[name][f"{m}_lived"] = b.get(m, 0.0)
            rows[name][f"{m}_delta"] = round(b.get(m, 0.0) - a[m], 4)
    loss = -rows["overall"]["answer_coverage_delta"]
    return {"conversations": sorted(convs or ()), "questions": s["questions"],
            "by_category": rows, "answer_coverage_loss": round(loss, 4),
            "max_loss": MAX_LOSS, "within_floor": loss <= MAX_LOSS}


def table(name: str, result: dict[str, Any]) -> str:
    lines = [f"{name} ({result['questions']} questions): answer_coverage loss "
             f"{result['answer_coverage_loss']:.3f} (at most {MAX_LOSS})", "",
             "| category | answer_coverage static | lived | Δ | evidence_recall static "
             "| lived | Δ |", "|---|---:|---:|---:|---:|---:|---:|"]
    for cat, r in result["by_category"].items():
        label = "adversarial (not in overall)" if cat == "adversarial" else cat
        lines.append(f"| {label} | " + " | ".join(
            f"{r[f'{m}_static']:.3f} | {r[f'{m}_lived']:.3f} | {r[f'{m}_delta']:+.3f}"
            for m in METRICS) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--static", required=True, type=Path)
    parser.add_argument("--lived", required=True, type=Path)
    parser.add_argument("--group", action="append", default=[],
                        help="NAME=conv,conv,… (repeatable); 'all' (every conversation in "
                             "both files) is always reported")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    static, lived = load(args.static), load(args.lived)
    both = {a.conv for a in static} & {a.conv for a in lived}
    groups: dict[str, set[str] | None] = {"all": both}
    for g in args.group:
        name, _, convs = g.partition("=")
        groups[name] = {c for c in convs.split(",") if c}
    results = {name: compare(static, lived, convs) for name, convs in groups.items()}
    print("\n\n".join(table(n, r) for n, r in results.items()))
    if args.out:
        args.out.write_text(json.dumps({"static": str(args.static.name),
                                        "lived": str(args.lived.name), **results},
                                       indent=2) + "\n", encoding="utf-8")
    return 0 if all(r["within_floor"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
