"""Where recall's ranking loses evidence, and whether a learned scorer would do better.

A companion of `bench/recall_tune.py` (same data loading, same ranking code, no database),
for the tuning conversations only (`--conversations 0,1,2`). Three reports:

- `--failures`: every evidence turn of the conversations' own questions, by category: taken
  into the block, ranked in the top 15 windows but not taken (selection/budget), ranked
  15–40, 40–100 or beyond the pool of 100 (ranking), or lost to the abstention gate (the
  gate at the defaults said no). `--list N` prints N missed turns with their question.
- `--fit`: a learned window scorer, checked by leaving one conversation out: logistic
  regression (Newton steps, a little L2) of "the window quotes an evidence turn" on a few
  scale-free features per window, fitted on two conversations, then the held-out one is
  ranked by the fitted linear score (keyword coefficient scaled to 1, so that the selection's
  MMR and cost terms keep their scale) and scored end to end with the gate off. Fitted on
  every window (`--scope all`) or on the best 100 windows by the default score (`pool`, a
  re-ranker). Printed beside the defaults on the same held-out conversation.
- `--variants`: hand-written alternatives of the score (session relevance, neighbours, a
  list-question weight, top-k calibration), per conversation, gate off.

Example (every number of recall's round four, bench/NOTEBOOK.md, came from these):

    python bench/recall_learn.py --turns $LOCOMO/turns.jsonl \\
        --questions $LOCOMO/questions.jsonl --conversations 0,1,2 --failures --fit --variants
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from recall_tune import Conv, Embeddings, ask, prepare, select  # noqa: E402

from strata.evaluation.recall_data import (  # noqa: E402
    ADVERSARIAL,
    EvalQuestion,
    conversations,
    load_questions,
    load_turns,
)
from strata.memory.recall.index import recency_of  # noqa: E402
from strata.memory.recall.rank import WindowScores, idf_of, window_scores  # noqa: E402
from strata.memory.recall.types import RecallTuning  # noqa: E402
from strata.memory.rules.names import without_names  # noqa: E402
from strata.memory.rules.text import query_stems  # noqa: E402

Features = dict[str, np.ndarray]
GATE_OFF = dataclasses.replace(RecallTuning(), gate_bias=100.0)
FEATURE_SETS: dict[str, list[str]] = {
    "keyword+semantic": ["kw", "sem"],
    "+semantic z": ["kw", "sem", "semz"],
    "+best row's semantic": ["kw", "sem", "max_row_sem"],
    "+coverage": ["kw", "sem", "cover"],
    "+neighbours": ["kw", "sem", "nb_kw", "nb_sem"],
    "+session": ["kw", "sem", "sess_sem_max", "sess_kw_max", "sess_vec"],
    "+length": ["kw", "sem", "len"],
    "all": ["kw", "sem", "semz", "max_row_sem", "row_sem", "cover", "nb_kw", "nb_sem",
            "sess_sem_max", "sess_kw_max", "sess_vec", "len"],
}
_LIST = re.compile(r"^(What|Which)\s+(\w+\s+)?\w+s\b")


def list_question(text: str) -> bool:
    """"What activities has…", "Which cities…", "… both …", "… in common": asks for several."""
    return bool(_LIST.match(text)) or " both " in text or "in common" in text


@dataclass
class Item:
    """One question with evidence, its windows' scores and features."""

    conv: Conv
    q: EvalQuestion
    ws: WindowScores
    f: Features
    evidence: list[int]  # table indices
    label: np.ndarray  # 1 where the window (any member) quotes an evidence turn


def features(c: Conv, q: EvalQuestion, ws: WindowScores) -> Features:
    """Scale-free per-window features for one question (index = the window's centre row)."""
    t, n = c.table, c.table.n
    prev = np.where(t.prev >= 0, t.prev, n)
    nxt = np.where(t.next >= 0, t.next, n)
    centre = np.arange(n)
    vec = c.qvec[q.qid]
    f: Features = {"kw": ws.keyword, "sem": ws.semantic,
                   "rec": recency_of(t.minutes, q.asked_at, 14.0)}
    sd = float(np.nanstd(ws.cosine))
    f["semz"] = np.nan_to_num((ws.cosine - np.nanmean(ws.cosine)) / max(sd, 1e-9))
    sims = (t.vectors @ vec).astype(np.float64)
    rows = np.append((sims - sims.mean()) / max(float(sims.max() - sims.mean()), 1e-9), -1.0)
    f["row_sem"] = rows[:n]
    f["max_row_sem"] = np.maximum(np.maximum(rows[prev], rows[centre]), rows[nxt])
    content = without_names(q.question, idf_of(t, query_stems(q.question)))
    total = sum(content.values()) or 1.0
    cover = np.zeros(n)
    for stem, w in content.items():
        has = np.zeros(n + 1)
        if post := t.postings.get(stem):
            has[post.rows] = 1.0
        cover += w * np.maximum(np.maximum(has[prev], has[centre]), has[nxt])
    f["cover"] = cover / total
    kw, sem = np.append(ws.keyword, 0.0), np.append(ws.semantic, 0.0)
    f["nb_kw"] = np.maximum(kw[prev], kw[nxt])
    f["nb_sem"] = np.maximum(sem[prev], sem[nxt])
    sess = t.session
    ns = int(sess.max()) + 1
    best_sem, best_kw = np.full(ns, -9.0), np.zeros(ns)
    np.maximum.at(best_sem, sess, ws.semantic)
    np.maximum.at(best_kw, sess, ws.keyword)
    f["sess_sem_max"], f["sess_kw_max"] = best_sem[sess], best_kw[sess]
    centroid = np.zeros((ns, t.vectors.shape[1]))
    np.add.at(centroid, sess, t.vectors)
    centroid /= np.maximum(np.linalg.norm(centroid, axis=1, keepdims=True), 1e-9)
    sc = centroid @ vec
    f["sess_vec"] = ((sc - sc.mean()) / max(float(sc.max() - sc.mean()), 1e-9))[sess]
    lengths = np.append(t.lengths, 0.0)
    f["len"] = np.log1p(lengths[prev] + t.lengths + lengths[nxt])
    return f


def items_of(c: Conv) -> list[Item]:
    tid = {t.turn_id: i for i, t in enumerate(c.turns)}
    t, n = c.table, c.table.n
    prev = np.where(t.prev >= 0, t.prev, n)
    nxt = np.where(t.next >= 0, t.next, n)
    out = []
    for q in c.own:
        if q.category == ADVERSARIAL or not q.evidence:
            continue
        ws = window_scores(t, query_stems(q.question), c.qvec[q.qid], np.ones(n, bool),
                           recency_of(t.minutes, q.asked_at, 14.0), GATE_OFF.rank)
        ev = [tid[e] for e in q.evidence]
        hit = np.zeros(n + 1)
        hit[ev] = 1.0
        label = np.maximum(np.maximum(hit[prev], hit[:n]), hit[nxt])
        out.append(Item(c, q, ws, features(c, q, ws), ev, label))
    return out


Scorer = Callable[[Item], np.ndarray]


def default_score(it: Item) -> np.ndarray:
    r = GATE_OFF.rank
    return r.w_keyword * it.f["kw"] + r.w_semantic * it.f["sem"] + r.w_recency * it.f["rec"]


def chosen(it: Item, score: np.ndarray, budget: int) -> set[int]:
    order = np.argsort(-score, kind="stable")[: GATE_OFF.pool]
    return select(it.conv, dataclasses.replace(it.ws, score=score), [int(i) for i in order],
                  query_stems(it.q.question), it.conv.qvec[it.q.qid], GATE_OFF, budget)


def recall_of(items: Sequence[Item], scorer: Scorer, budget: int) -> float:
    out = [sum(e in rows for e in it.evidence) / len(it.evidence)
           for it in items for rows in [chosen(it, scorer(it), budget)]]
    return float(np.mean(out))


# -- failures ------------------------------------------------------------------------------


def failures(convs: Sequence[Conv], items: Sequence[Item], budget: int, show: int) -> None:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    missed: list[str] = []
    gated_tuning = dataclasses.replace(GATE_OFF, gate_bias=RecallTuning().gate_bias)
    gated = {it.q.qid for c in convs for it in items if it.conv is c
             and not ask(c, it.q, it.q.qid, gated_tuning, budget)[0]}
    for it in items:
        score = default_score(it)
        rows = chosen(it, score, budget)
        order = np.argsort(-score, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        t = it.conv.table
        for e in it.evidence:
            holders = [w for w in (e, int(t.prev[e]), int(t.next[e])) if w >= 0]
            best = min(holders, key=lambda w: int(rank[w]))
            r = int(rank[best])
            if e not in rows:
                kind = ("top 15, not taken" if r < 15 else "rank 15-40" if r < 40
                        else "rank 40-100" if r < 100 else "beyond the pool")
                missed.append(f"{it.q.category:<12} {kind:<18} rank {r:>4} kw "
                              f"{it.f['kw'][best]:.2f} sem {it.f['sem'][best]:.2f} | "
                              f"{it.q.question} | {it.conv.turns[e].text[:80]}")
            elif it.q.qid in gated:
                kind = "taken, gate says no"
            else:
                kind = "injected"
            counts[it.q.category][kind] += 1
            counts["all"][kind] += 1
    print("evidence turns by what became of them (gate off, then the default gate):")
    for cat, cnt in sorted(counts.items()):
        print(f"  {cat:<12} {dict(cnt.most_common())}")
    for line in missed[:show]:
        print("  missed:", line)


# -- a learned scorer ----------------------------------------------------------------------


def fit_logistic(x: np.ndarray, y: np.ndarray, weight: np.ndarray, l2: float = 1e-3,
                 steps: int = 25) -> np.ndarray:
    """Weighted logistic regression by Newton steps; the coefficients on x's own scale."""
    mu, sd = x.mean(0), x.std(0) + 1e-9
    xb = np.hstack([np.ones((len(x), 1)), (x - mu) / sd])
    w = np.zeros(xb.shape[1])
    wn = weight / weight.sum()
    reg = l2 * np.eye(xb.shape[1])
    reg[0, 0] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -30, 30)))
        grad = xb.T @ (wn * (p - y)) + reg @ w
        hess = (xb * (wn * p * (1 - p))[:, None]).T @ xb + reg
        w -= np.linalg.solve(hess, grad)
    return np.asarray(w[1:] / sd)


def training_rows(items: Sequence[Item], names: Sequence[str], scope: str
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each question weighs the same; within it, its positives and negatives weigh half each."""
    xs, ys, ws = [], [], []
    for it in items:
        idx = (np.argsort(-default_score(it), kind="stable")[: GATE_OFF.pool]
               if scope == "pool" else np.arange(it.label.size))
        y = it.label[idx]
        pos = float(y.sum())
        if pos == 0 or pos == y.size:
            continue
        xs.append(np.stack([it.f[k][idx] for k in names], 1))
        ys.append(y)
        ws.append(np.where(y > 0, 1.0 / pos, 1.0 / (y.size - pos)))
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws)


def linear(names: Sequence[str], coef: np.ndarray) -> Scorer:
    scaled = coef / coef[0] if coef[0] > 0 else coef  # keyword first: its weight is 1
    w_rec = GATE_OFF.rank.w_recency
    return lambda it: sum(c * it.f[k] for c, k in zip(scaled, names, strict=True)) \
        + w_rec * it.f["rec"]


def learned(by_conv: dict[str, list[Item]], budget: int, scope: str) -> None:
    convs = list(by_conv)
    base = [recall_of(by_conv[c], default_score, budget) for c in convs]
    print(f"learned scorer ({scope}), leave one conversation out, gate off; defaults "
          f"{[round(b, 4) for b in base]} mean {np.mean(base):.4f}")
    for label, names in FEATURE_SETS.items():
        held = []
        for c in convs:
            train = [it for o in convs if o != c for it in by_conv[o]]
            coef = fit_logistic(*training_rows(train, names, scope))
            held.append(recall_of(by_conv[c], linear(names, coef), budget))
        coef = fit_logistic(*training_rows([i for c in convs for i in by_conv[c]], names, scope))
        coef = coef / coef[0] if coef[0] > 0 else coef
        print(f"  {label:<22} held out {[round(h, 4) for h in held]} mean {np.mean(held):.4f}"
              f"  fitted on all: {dict(zip(names, np.round(coef, 3).tolist(), strict=True))}",
              flush=True)


# -- hand-written variants -----------------------------------------------------------------


def top_k(x: np.ndarray, k: int) -> np.ndarray:
    """`x` over the mean of its k largest values (the best window alone is a noisy scale)."""
    m = float(np.sort(x)[-k:].mean())
    return x / m if m > 1e-9 else x


def variants(by_conv: dict[str, list[Item]], budget: int) -> None:
    r = GATE_OFF.rank

    def added(name: str, w: float) -> Scorer:
        return lambda it: default_score(it) + w * it.f[name]

    def list_weight(w: float) -> Scorer:
        return lambda it: (r.w_keyword * it.f["kw"] + r.w_recency * it.f["rec"]
                           + (w if list_question(it.q.question) else r.w_semantic)
                           * it.f["sem"])

    def semantic_top(k: int) -> Scorer:
        return lambda it: (r.w_keyword * it.f["kw"] + r.w_semantic * top_k(it.f["sem"], k)
                           + r.w_recency * it.f["rec"])

    tried: list[tuple[str, Scorer]] = [("defaults", default_score)]
    tried += [(f"+ {w} x {n}", added(n, w)) for n in
              ("sess_vec", "sess_sem_max", "sess_kw_max", "nb_kw", "cover", "semz",
               "max_row_sem") for w in (0.1, 0.25)]
    tried += [(f"list questions w_semantic {w}", list_weight(w)) for w in (0.8, 1.2, 2.0)]
    tried += [(f"semantic over its top {k}", semantic_top(k)) for k in (3, 5, 10)]
    print("variants, gate off, per conversation:")
    for label, scorer in tried:
        per = [recall_of(its, scorer, budget) for its in by_conv.values()]
        print(f"  {label:<34} {[round(p, 4) for p in per]} mean {np.mean(per):.4f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--turns", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--conversations", default="0,1,2")
    ap.add_argument("--base-url", default="http://127.0.0.1:8088/v1")
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--cache", default="/tmp/recall_tune_vectors.npz")
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--failures", action="store_true")
    ap.add_argument("--list", type=int, default=0, help="missed evidence turns to print")
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--scope", choices=["all", "pool", "both"], default="both")
    ap.add_argument("--variants", action="store_true")
    ap.add_argument("--set", action="append", default=[],
                    help="name=value of RecallTuning, e.g. semantic_top=1 (the gate stays off)")
    args = ap.parse_args(argv)
    global GATE_OFF
    ints = {f.name for f in dataclasses.fields(RecallTuning) if f.type in ("int", int)}
    fixed = {k: int(v) if k in ints else float(v) for k, v in (x.split("=", 1) for x in args.set)}
    GATE_OFF = dataclasses.replace(GATE_OFF, **fixed)  # type: ignore[arg-type]
    turns, questions = load_turns(Path(args.turns)), load_questions(Path(args.questions))
    names = conversations(turns)
    emb = Embeddings(args.base_url, args.model, Path(args.cache))
    convs = [prepare(turns, questions, names[int(i)], emb, 40)
             for i in args.conversations.split(",")]
    by_conv = {c.conv: items_of(c) for c in convs}
    every = [it for its in by_conv.values() for it in its]
    if args.failures:
        failures(convs, every, args.budget, args.list)
    if args.fit:
        for scope in (["all", "pool"] if args.scope == "both" else [args.scope]):
            learned(by_conv, args.budget, scope)
    if args.variants:
        variants(by_conv, args.budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
