"""Whose John (issue 37): can the gate tell this memory's speaker from another person of the
same name by what the memory ties to that speaker? Five candidates, measured alone.

A foreign question that names one of this memory's own speakers ("What does John want to do
after his basketball career?" asked of a memory whose John is someone else) pays no stranger
penalty and gets its coverage from the memory's many rows about things anyone says. Each
candidate is 0 unless the question names exactly one of the memory's speakers (the names that
begin its rows) and is computed over the question's other words, weighted as the gate weighs
them (`strata.memory.recall.gate.gate_idf`):

- `speaker`: the share of those words that the speaker's own rows in the best window by
  keywords do not hold (the question's content must come from what that person said);
- `vocabulary`: the share that the speaker never says anywhere in the memory (what the memory
  knows about its John: the words he uses);
- `name_weak`: how much the gate's logit drops when the speaker's name is not counted toward
  coverage (the name shared with the memory's speaker as weak evidence).

- `speaker_named`: the gate's cosine term computed from the question with the speaker's name
  made anyone ("John's" → "their", "John" → "someone"; a name every row of the memory holds
  only blurs the question's vector), less a flat penalty for naming a speaker of the memory.

For every value of `--values` it reports, per conversation and over all, how many foreign and
name-swapped (hard) questions the candidate stops (`bench/recall_gate_profiles.py`'s `rates`),
which own questions the gate lets through now it silences, and `chosen`: the largest value
that silences none. Run it on the tuning conversations only:

    python bench/recall_gate_speaker.py --turns $LOCOMO/turns.jsonl \\
        --questions $LOCOMO/questions.jsonl --conversations 0,1,2 --out FILE
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.recall_gate_profiles import KINDS, rates  # noqa: E402
from bench.recall_tune import Conv, Embeddings, data_arguments, load  # noqa: E402
from strata.core.tokens import truncate_to_tokens  # noqa: E402
from strata.evaluation.recall_data import EvalQuestion, row_text  # noqa: E402
from strata.memory.recall.gate import gate_features, gate_idf, gate_logit  # noqa: E402
from strata.memory.recall.index import recency_of  # noqa: E402
from strata.memory.recall.profiles import speaker_of  # noqa: E402
from strata.memory.recall.rank import RankTuning, keyword_coverage, window_scores  # noqa: E402
from strata.memory.recall.types import RecallTuning  # noqa: E402
from strata.memory.rules.names import name_check, names_in  # noqa: E402
from strata.memory.rules.row_table import RowTable  # noqa: E402
from strata.memory.rules.text import query_stems  # noqa: E402

FEATURES = ("speaker", "about", "vocabulary", "name_weak")
_TO_THEM = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)


def named_speaker(query: str, who: Sequence[str]) -> str:
    """The one speaker of this memory (`who`: each row's lower-cased speaker) that the query
    names, or "" when it names none or more than one."""
    named = {w for w in names_in(query) if w in set(who) - {""}}
    return next(iter(named)) if len(named) == 1 else ""


def held(table: RowTable, rows: Sequence[int], weights: dict[str, float]) -> float:
    """The weighted share of `weights`' stems that `rows` hold (0 for no weights)."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in weights.items()
               if any(r in table.postings.get(t, ()) for r in rows)) / total


def about(texts: Sequence[str], who: Sequence[str], person: str, rows: Sequence[int]) -> list[int]:
    """The rows of `rows` about `person`: theirs, and another's that speak to them ("you",
    "your") or name them."""
    name = re.compile(rf"\b{re.escape(person)}\b", re.IGNORECASE)
    return [r for r in rows if who[r] == person
            or _TO_THEM.search(texts[r]) or name.search(texts[r].split(":", 1)[-1])]


def speaker_features(table: RowTable, who: Sequence[str], query: str, stems: Sequence[str],
                     best_rows: Sequence[int], rank: RankTuning,
                     texts: Sequence[str] = ()) -> dict[str, float]:
    """The three candidates (module docstring) for one query; `best_rows`: the best window's
    rows by keywords."""
    person = named_speaker(query, who)
    if not person:
        return dict.fromkeys(FEATURES, 0.0)
    weights = gate_idf(table, stems)
    speakers = {w for w in who if w}
    content = {t: w for t, w in weights.items() if t not in speakers}
    theirs = [r for r in range(table.n) if who[r] == person]
    cover = keyword_coverage(table, list(best_rows), weights)
    cover_without = keyword_coverage(table, list(best_rows), content) if content else 0.0
    near = about(texts, who, person, best_rows) if texts else [
        r for r in best_rows if who[r] == person]
    return {"speaker": 1.0 - held(table, [r for r in best_rows if who[r] == person], content),
            "about": 1.0 - held(table, near, content),
            "vocabulary": 1.0 - held(table, theirs, content),
            "name_weak": max(0.0, rank.gate_keyword * (cover - cover_without))}


def name_free(query: str, person: str) -> str:
    """The query with the named speaker made anyone: "John's" → "their", "John" → "someone"."""
    text = re.sub(rf"\b{re.escape(person)}['’]s\b", "their", query, flags=re.IGNORECASE)
    return re.sub(rf"\b{re.escape(person)}\b", "someone", text, flags=re.IGNORECASE)


def z_gain(c: Conv, q: EvalQuestion, person: str, emb: Embeddings | None, z: float,
           rank: RankTuning) -> float:
    """How much the gate's z grows when the question's vector is the name-free question's
    (0 without `emb` or a named speaker)."""
    if emb is None or not person:
        return 0.0
    vec = emb.embed([truncate_to_tokens(name_free(q.question, person), 512)])[0]
    ws = window_scores(c.table, query_stems(q.question), vec, np.ones(c.table.n, bool),
                       recency_of(c.table.minutes, q.asked_at, 14.0), rank)
    return ws.gate_z - z


def question_rows(c: Conv, tuning: RecallTuning,
                  emb: Embeddings | None = None) -> list[dict[str, Any]]:
    """Per question: its kind, the defaults' gate logit, whether it names someone the memory
    knows, the candidates, and (with `emb`) the cosine term's gain without the name."""
    rank = tuning.rank
    texts = [row_text(t) for t in c.turns]
    who = [speaker_of(t, False) for t in texts]
    out = []
    for kind, questions, suffix in ((1, c.own, ""), (0, c.foreign, "/f"), (-1, c.swapped, "/s")):
        for q in questions:
            stems = query_stems(q.question)
            ws = window_scores(c.table, stems, c.qvec[q.qid + suffix],
                               np.ones(c.table.n, bool),
                               recency_of(c.table.minutes, q.asked_at, 14.0), rank)
            person = named_speaker(q.question, who)
            z, cover = gate_features(c.table, ws, q.question, stems)
            names = name_check(q.question, c.table)
            best = ([int(m) for m in ws.members[int(np.argmax(ws.keyword))] if m >= 0]
                    if ws.bm25_best > 0 else [])
            out.append({"conv": c.conv, "qid": q.qid, "kind": kind, "question": q.question,
                        "adversarial": q.category == "adversarial",
                        "logit": round(gate_logit(z, cover, names, rank), 4),
                        "named": names.familiar, "speaker_named": float(bool(person)),
                        "z_gain": round(z_gain(c, q, person, emb, z, rank), 4),
                        **speaker_features(c.table, who, q.question, stems, best, rank,
                                           texts)})
    return out


def silenced(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]], value: float,
             feature: str) -> list[str]:
    """The own questions the gate lets through now (`before`) that the candidate (`after`, at
    `value`) silences."""
    return [a["qid"] for b, a in zip(before, after, strict=True)
            if b["kind"] == 1 and b["logit"] >= 0 and a["logit"] - value * a[feature] < 0]


def brief(counts: dict[str, Any]) -> dict[str, Any]:
    """One conversation's counts, short: silent on own, false injection, foreign questions
    naming someone the memory knows that pass."""
    return {"silent_on_own": counts["silent_on_own"], "false_injection": counts["false_injection"],
            "foreign_named_pass": [counts["foreign"]["named_pass"], counts["foreign"]["named"]]}


def report(rows: Sequence[dict[str, Any]], values: Sequence[float],
           cosine: float) -> dict[str, Any]:
    """Per candidate and value: the counts over all and per conversation, the own questions it
    silences that pass now, and the largest value that silences none (`chosen`); `cosine`:
    the gate's cosine coefficient."""
    out: dict[str, Any] = {}
    convs = list(dict.fromkeys(r["conv"] for r in rows))
    # The name-free cosine: the gate's cosine term from the question without the speaker's
    # name, less a flat `value` for naming one of the memory's speakers.
    name_free_rows = [{**r, "logit": r["logit"] + cosine * r["z_gain"]} for r in rows]
    candidates = [(f, rows) for f in FEATURES] + [("speaker_named", name_free_rows)]
    for feature, mine in candidates:
        by_value = {str(v): {"all": rates(mine, v, feature), "by_conversation": {
            conv: brief(rates([r for r in mine if r["conv"] == conv], v, feature))
            for conv in convs}, "own_silenced": silenced(rows, mine, v, feature)}
            for v in values}
        safe = [v for v in values if not by_value[str(v)]["own_silenced"]]
        out[feature] = {"by_value": by_value, "chosen": max(safe, default=0.0)}
    # The median z gain without the name, of the questions naming a speaker that pass now.
    out["speaker_named"]["median_z_gain"] = {label: round(float(np.median(gains)), 4) if (
        gains := [r["z_gain"] for r in rows if r["kind"] == kind and r["speaker_named"]
                  and r["logit"] >= 0]) else None for kind, label in KINDS.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    data_arguments(ap)
    ap.add_argument("--values", default="0,0.05,0.1,0.25,0.5,1,1.5,2,3,4")
    ap.add_argument("--out", help="write the report here (JSON)")
    args = ap.parse_args(argv)
    emb = Embeddings(args.base_url, args.model, Path(args.cache))
    rows = [r for c in load(args) for r in question_rows(c, RecallTuning(), emb)]
    values = [float(v) for v in args.values.split(",")]
    features = report(rows, values, RecallTuning().rank.gate_cosine)
    for feature, res in features.items():
        for v in values:
            a, lost = res["by_value"][str(v)]["all"], res["by_value"][str(v)]["own_silenced"]
            print(f"{feature:<13} {v:>5}: own silenced {len(lost)}, foreign named pass "
                  f"{a['foreign']['named_pass']}/{a['foreign']['named']}, hard pass "
                  f"{a['hard']['pass']}/{a['hard']['n']}, silent {a['silent_on_own']}, "
                  f"FI {a['false_injection']}", flush=True)
        print(f"{feature}: chosen {res['chosen']}")
    result = {"command": "python " + " ".join(sys.argv), "kinds": KINDS, "features": features}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
