"""Fit recall's abstention gate leave-one-conversation-out, and say how often it is silent.

For every question of the tuning conversations this computes the gate's candidate features
on the same ranking as recall (`bench/recall_tune.py`'s in-memory tables): positives are a
conversation's own questions, negatives the questions about other conversations that
`strata eval recall` asks of it (its false-injection sample) and the same questions with each
name this memory never mentions swapped for one of its people (hard negatives, which no
name check can give away; `bench/recall_tune.py`). For each feature set it fits a logistic
regression on all but one conversation, puts the threshold where at most `--max-fi` of the
training conversations' questions about other conversations get anything, and applies that
to the held-out one: how often the gate is silent on the held-out conversation's own
questions, its false injection and the share of hard negatives let through. The fit on all
of them gives the coefficients for the defaults.

Features (each relative to the owner's own memory, so meaningful across data and models):
- `z`: the best window's cosine in standard deviations above the owner's windows' mean,
  less the sqrt(2 ln n) that the best of n unrelated windows reaches anyway;
- `cov`: the idf-weighted share of the query's words (dates left out; names kept: a name
  this memory never mentions is a word it lacks) found in the best window by keywords
  (`strata.memory.recall.gate`, the defaults);
- `cov_best`, `cov_top3`: the same in the best window, the best three, by the full score;
- `cov_content`: `cov` without names (the previous gate's keyword feature);
- `stranger`: a name this memory never mentions (the previous gate's veto, now a feature);
- `alone`: every name of the question is a stranger's (issue 27, round eleven: the defaults
  add `gate_only_strangers` for it, the smallest round penalty that silences every such
  foreign question of 0–2; bench/NOTEBOOK.md);
- `known`: the idf-weighted share of the query's words found anywhere in the memory;
- `novel`: the idf-weighted share of the query's words other than names and dates that the
  memory never says at all;
- `lead`: the best window's full score less the tenth best's (tried in issue 27's second
  session, with `--max-fi 0.07 --c 10`: better held out on 0–2, worse on 3–4 and on the
  generated chats, so not in the defaults; bench/NOTEBOOK.md);
- `agree`: whether the best window by keywords and the best by cosine share a row;
  `kw_of_cos`: the keyword score of the best window by cosine; `sem_of_kw`: the semantic
  score of the best window by keywords;
- `cov_content_best`, `cov_content_top3`: `cov_content` in the best one or three windows by
  the full score.
- `ent_*`, `named`, `date_gap`: conditioned on the person the question names, and on the date
  it names (issue 27's third session, `bench/recall_gate_entity.py`; none kept).

`--max-silent S` puts the threshold where at most S of the training conversations' own
questions are silenced instead of by `--max-fi`; `--apply FILE` (or `--apply defaults`) applies
earlier fits unchanged to other conversations, e.g. the untouched split or generated chats.

The defaults' gate is the `z+cov+stranger` fit on conversations 0–2 at `--max-fi 0.10 --c 1`
(then its bias lowered to −0.4, docs/recall.md).

    python bench/recall_gate.py --turns $LOCOMO/turns.jsonl --questions $LOCOMO/questions.jsonl \\
        --conversations 0,1,2 --base-url http://127.0.0.1:8088/v1 --out FILE
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.recall_gate_entity import date_gap, entity_features  # noqa: E402
from bench.recall_tune import Conv, data_arguments, load  # noqa: E402
from strata.evaluation.recall_data import EvalQuestion  # noqa: E402
from strata.memory.recall.gate import gate_features, gate_idf  # noqa: E402
from strata.memory.recall.index import recency_of  # noqa: E402
from strata.memory.recall.rank import keyword_coverage, window_scores  # noqa: E402
from strata.memory.recall.types import RecallTuning  # noqa: E402
from strata.memory.rules.names import name_check, without_names  # noqa: E402
from strata.memory.rules.text import coverage, query_stems  # noqa: E402

FEATURE_SETS = {
    "z+cov+stranger": ("z", "cov", "stranger"),
    "z+cov+stranger+alone": ("z", "cov", "stranger", "alone"),
    "z+cov+alone": ("z", "cov", "alone"),
    "z+cov+stranger+lead": ("z", "cov", "stranger", "lead"),
    "z+cov+stranger+lead+kw_of_cos": ("z", "cov", "stranger", "lead", "kw_of_cos"),
    "z+cov+stranger+novel": ("z", "cov", "stranger", "novel"),
    "z+cov+stranger+lead+novel": ("z", "cov", "stranger", "lead", "novel"),
    "z+cov+stranger+agree": ("z", "cov", "stranger", "agree"),
    "z+cov+stranger+sem_of_kw": ("z", "cov", "stranger", "sem_of_kw"),
    "z+cov+stranger+cov_content_top3": ("z", "cov", "stranger", "cov_content_top3"),
    "z+cov+cov_content+stranger": ("z", "cov", "cov_content", "stranger"),
    "z+cov_best+stranger+lead": ("z", "cov_best", "stranger", "lead"),
    "cov+stranger+lead": ("cov", "stranger", "lead"),
    "z+cov": ("z", "cov"),
    "z+cov_content+stranger": ("z", "cov_content", "stranger"),
    "z": ("z",),
    # Issue 27, third session: conditioned on the person the question names, and its date.
    "z+cov+stranger+ent_any_gap": ("z", "cov", "stranger", "ent_any_gap"),
    "z+cov+stranger+ent_win_gap": ("z", "cov", "stranger", "ent_win_gap"),
    "z+cov+stranger+ent_assoc": ("z", "cov", "stranger", "ent_assoc"),
    "z+cov+stranger+ent_cos_gap": ("z", "cov", "stranger", "ent_cos_gap"),
    "z+cov+stranger+ent_spoken_cov": ("z", "cov", "stranger", "ent_spoken_cov"),
    "z+cov+stranger+ent_spoken_share": ("z", "cov", "stranger", "ent_spoken_share"),
    "z+cov+stranger+ent_row_contrast": ("z", "cov", "stranger", "ent_row_contrast"),
    "z+cov+stranger+ent_cos_contrast": ("z", "cov", "stranger", "ent_cos_contrast"),
    "z+cov+stranger+date_gap": ("z", "cov", "stranger", "date_gap"),
    "z+cov+stranger+ent_win_gap+date_gap": ("z", "cov", "stranger", "ent_win_gap", "date_gap"),
}


LEAD_RANK = 10  # `lead`: the best window's score less this best one's


def features(c: Conv, q: EvalQuestion, key: str, tuning: RecallTuning) -> dict[str, float]:
    rank = tuning.rank
    stems = query_stems(q.question)
    ws = window_scores(c.table, stems, c.qvec[key], np.ones(c.table.n, bool),
                       recency_of(c.table.minutes, q.asked_at, 14.0), rank)
    order = np.argsort(-ws.score, kind="stable")[: rank.pool]
    top = [int(i) for i in order if ws.valid[i]]
    z, cov = gate_features(c.table, ws, q.question, stems)
    names = name_check(q.question, c.table)
    _, cov_content = gate_features(c.table, ws, q.question, stems, names=False)
    weights = gate_idf(c.table, stems)

    def covered(windows: Sequence[int]) -> float:
        return keyword_coverage(c.table, sorted({int(m) for i in windows
                                                 for m in ws.members[i] if m >= 0}), weights)

    content = without_names(q.question, weights)

    def covered_content(windows: Sequence[int]) -> float:
        return keyword_coverage(c.table, sorted({int(m) for i in windows
                                                 for m in ws.members[i] if m >= 0}), content)

    by_cos = int(np.nanargmax(ws.cosine)) if not np.all(np.isnan(ws.cosine)) else -1
    by_kw = int(np.argmax(ws.keyword))
    near = set(ws.members[by_kw].tolist()) & set(ws.members[by_cos].tolist()) - {-1}
    return {"z": 0.0 if math.isnan(z) else z, "cov": cov, "cov_content": cov_content,
            "stranger": float(names.stranger), "alone": float(names.only_strangers),
            "known": coverage(weights, lambda t: t in c.table.postings),
            "novel": 1.0 - coverage(content, lambda t: t in c.table.postings),
            "cov_best": covered(top[:1]), "cov_top3": covered(top[:3]),
            "cov_content_best": covered_content(top[:1]),
            "cov_content_top3": covered_content(top[:3]),
            "agree": float(bool(near)) if by_cos >= 0 else 0.0,
            "kw_of_cos": float(ws.keyword[by_cos]) if by_cos >= 0 else 0.0,
            "sem_of_kw": float(ws.semantic[by_kw]),
            **entity_features(c.table, ws, q.question, stems, c.qvec[key],
                              [t.speaker for t in c.turns]),
            "date_gap": date_gap(q.question, c.table.minutes),
            "lead": float(ws.score[top[0]] - ws.score[top[min(LEAD_RANK, len(top)) - 1]])
            if len(top) > 1 else 0.0}


def rows_of(convs: Sequence[Conv], tuning: RecallTuning) -> list[dict[str, Any]]:
    out = []
    for c in convs:
        for q in c.own:
            out.append({"conv": c.conv, "qid": q.qid, "own": 1, "category": q.category,
                        **features(c, q, q.qid, tuning)})
        for q in c.foreign:
            out.append({"conv": c.conv, "qid": q.qid, "own": 0, "category": q.category,
                        **features(c, q, q.qid + "/f", tuning)})
        for q in c.swapped:
            out.append({"conv": c.conv, "qid": q.qid, "own": -1, "category": q.category,
                        **features(c, q, q.qid + "/s", tuning)})
    return out


def fit(rows: Sequence[dict[str, Any]], names: Sequence[str], max_fi: float,
        hard_weight: float = 1.0, c: float = 1.0,
        max_silent: float | None = None) -> tuple[np.ndarray, float]:
    """Logistic regression of own-question (`own` 1) against the questions about other
    conversations (0) and, at `hard_weight`, the same with their unknown names swapped for
    this memory's people (−1: the name cannot give them away); then the intercept moved so
    that at most `max_fi` of the other conversations' questions score above 0 (or, given
    `max_silent`, at most that share of the own questions score below it). Returns
    (coefficients, intercept)."""
    rows = [r for r in rows if hard_weight > 0 or r["own"] >= 0]
    x = np.array([[r[n] for n in names] for r in rows])
    y = np.array([1 if r["own"] == 1 else 0 for r in rows])
    weight = np.array([hard_weight if r["own"] == -1 else 1.0 for r in rows])
    w = LogisticRegression(C=c).fit(x, y, sample_weight=weight).coef_[0]
    if max_silent is not None:
        own = np.sort(x[y == 1] @ w)
        return w, -float(own[min(math.floor(max_silent * len(own)), len(own) - 1)]) + 1e-9
    foreign = np.array([r["own"] == 0 for r in rows])
    neg = np.sort(x[foreign] @ w)[::-1]
    k = math.floor(max_fi * len(neg))  # this many negatives may pass
    threshold = float(neg[k]) if k < len(neg) else -math.inf
    return w, -threshold - 1e-9


def held_out(rows: Sequence[dict[str, Any]], feats: Sequence[str], max_fi: float,
             hard_weight: float, c: float,
             max_silent: float | None = None) -> dict[str, dict[str, float]]:
    """Per conversation: the gate fitted on the others, applied to it."""
    held: dict[str, dict[str, float]] = {}
    for conv in dict.fromkeys(r["conv"] for r in rows):
        w, b = fit([r for r in rows if r["conv"] != conv], feats, max_fi, hard_weight, c,
                   max_silent)
        held[conv] = applied([r for r in rows if r["conv"] == conv], feats, w, b)
    return held


def applied(mine: Sequence[dict[str, Any]], feats: Sequence[str], w: np.ndarray | Sequence[float],
            b: float) -> dict[str, float]:
    """A gate's rates on one conversation's rows: silent on own questions, false injection,
    and the share of hard negatives let through."""
    passes = [float(np.dot(w, [r[n] for n in feats]) + b > 0) for r in mine]

    def share(kind: int) -> float:
        return float(np.mean([p for p, r in zip(passes, mine, strict=True)
                              if r["own"] == kind]))

    return {"silent_on_own": round(1 - share(1), 4), "false_injection": round(share(0), 4),
            "hard": round(share(-1), 4)}


def apply_fits(rows: Sequence[dict[str, Any]], path: str,
               labels: Sequence[str] | None) -> dict[str, Any]:
    """The gates fitted in an earlier `--out` file (or the defaults' gate: "defaults"),
    unchanged, on these conversations."""
    rank = RecallTuning().rank
    kept = {"coefficients": {"z": rank.gate_cosine, "cov": rank.gate_keyword,
                             "stranger": -rank.gate_unknown_name,
                             "alone": -rank.gate_only_strangers}, "bias": rank.gate_bias}
    fits: dict[str, Any] = ({"defaults": kept} if path == "defaults" else
                            json.loads(Path(path).read_text(encoding="utf-8"))["fits"])
    out = {}
    for label in labels or list(fits):
        feats, w = list(fits[label]["coefficients"]), list(fits[label]["coefficients"].values())
        out[label] = {c: applied([r for r in rows if r["conv"] == c], feats, w,
                                 fits[label]["bias"])
                      for c in dict.fromkeys(r["conv"] for r in rows)}
        print(f"{label:<26} {rates(out[label])}", flush=True)
    return {"applied": path, "fits": out}


def rates(held: dict[str, dict[str, float]]) -> str:
    return "  ".join(f"{c}: silent {h['silent_on_own']:.3f} FI {h['false_injection']:.3f} "
                     f"hard {h['hard']:.3f}" for c, h in held.items())


ENTITY = ("cov", "ent_any_gap", "ent_win_gap", "ent_assoc", "ent_cos_gap", "ent_spoken_cov",
          "ent_spoken_share", "ent_row_contrast", "ent_cos_contrast")


def named_means(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per conversation, the mean of each entity feature over the questions that name someone
    the memory knows: own questions, foreign ones and hard negatives (does it tell them apart?)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for conv in dict.fromkeys(r["conv"] for r in rows):
        for kind, name in ((1, "own"), (0, "foreign"), (-1, "hard")):
            mine = [r for r in rows if r["conv"] == conv and r["own"] == kind and r["named"]]
            if mine:
                out.setdefault(conv, {})[name] = {"n": len(mine), **{
                    f: round(float(np.mean([r[f] for r in mine])), 3) for f in ENTITY}}
    return out


def fit_set(rows: Sequence[dict[str, Any]], label: str,
            args: argparse.Namespace) -> dict[str, Any]:
    """One feature set: held out, fitted on all, and the trade-off curve if asked."""
    feats = FEATURE_SETS[label]
    rule = (args.max_fi, args.hard_weight, args.c, args.max_silent)
    held = held_out(rows, feats, *rule)
    w, b = fit(rows, feats, *rule)
    out: dict[str, Any] = {"held_out": held, "bias": b,
                           "coefficients": dict(zip(feats, map(float, w), strict=True))}
    fitted = " ".join(f"{n} {v:.3f}" for n, v in zip(feats, w, strict=True))
    print(f"{label:<26} {rates(held)}  | all: {fitted} bias {b:.3f}", flush=True)
    if args.sweep:
        curve = {}
        for v in map(float, args.sweep.split(",")):
            at = (v, args.hard_weight, args.c, None) if args.max_silent is None else (
                args.max_fi, args.hard_weight, args.c, v)
            curve[str(v)] = held_out(rows, feats, *at)
            print(f"    at {v:.3f}  {rates(curve[str(v)])}", flush=True)
        out["sweep"] = curve
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    data_arguments(ap)
    ap.add_argument("--max-fi", type=float, default=0.10)
    ap.add_argument("--max-silent", type=float, help="put the threshold where at most this "
                    "share of the training conversations' own questions is silenced instead")
    ap.add_argument("--c", type=float, default=1.0,
                    help="inverse regularisation strength of the logistic regression")
    ap.add_argument("--hard-weight", type=float, default=1.0,
                    help="weight of the name-swapped questions among the negatives (0: none)")
    ap.add_argument("--sets", help="only these feature sets (comma-separated labels)")
    ap.add_argument("--sweep", help="also report each set held out at these --max-fi (or, "
                    "with --max-silent, --max-silent) values, comma-separated: the curve")
    ap.add_argument("--dump", help="write every question's features here (JSON)")
    ap.add_argument("--rows", help="read the features from a --dump file, not from the data")
    ap.add_argument("--apply", help="apply the fits of this earlier --out file unchanged "
                    "(or 'defaults': the defaults' gate)")
    ap.add_argument("--out", help="write the fits and per-conversation rates here (JSON)")
    args = ap.parse_args(argv)
    rows = (json.loads(Path(args.rows).read_text(encoding="utf-8")) if args.rows
            else rows_of(load(args), RecallTuning()))
    if args.dump:
        Path(args.dump).write_text(json.dumps(rows) + "\n", encoding="utf-8")
    report: dict[str, Any] = {"command": "python " + " ".join(sys.argv), "max_fi": args.max_fi,
                              "max_silent": args.max_silent, "c": args.c,
                              "hard_weight": args.hard_weight, "fits": {},
                              "named_means": named_means(rows)}
    labels = args.sets.split(",") if args.sets else None
    if args.apply:
        report.update(apply_fits(rows, args.apply, labels))
    for label in [] if args.apply else labels or list(FEATURE_SETS):
        report["fits"][label] = fit_set(rows, label, args)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
