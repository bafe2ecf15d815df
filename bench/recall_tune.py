"""Tune recall's ranking on a development split, fast: the ranking alone, no database.

`strata eval recall` is the measurement of record (the real store, the chat's own after-turn
steps, recall exactly as the bot runs it). Tuning needs hundreds of runs, so this script runs
the same pure ranking (`strata.memory.recall.rank`) and packing
(`strata.memory.recall.pack.pack`) on the rows of a LoCoMo-format data set held in
memory, with vectors from an OpenAI-compatible embeddings endpoint (cached in a local file), and:

- prints evidence recall, multi-hop recall and the false-injection rate for settings given on
  the command line (`--set w_semantic=2.5 --set session_penalty=0.2`), or for a grid
  (`--grid session_penalty=0,0.1,0.3`);
- with it, how often the gate is silent on the conversations' own questions (the gate is
  fitted by `bench/recall_gate.py`).

The hard negatives: the same questions about other conversations, with each name this memory
never mentions swapped for one of this conversation's speakers ("What did Tim paint?" becomes
"What did Melanie paint?"). A stranger's name is an easy give-away; these measure what the gate
does when the question names someone it knows but asks about something never said (`hard`
beside `FIR` in the output).

Only ever run it on the tuning conversations (`--conversations 0,1,2`); the others are for the
report. Example:

    python bench/recall_tune.py --turns $LOCOMO/turns.jsonl --questions $LOCOMO/questions.jsonl \\
        --conversations 0,1,2 --base-url http://127.0.0.1:8088/v1 --grid trim_margin=0.5,inf
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import hashlib
import itertools
import json
import re
import sys
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from strata.core.tokens import truncate_to_tokens  # noqa: E402
from strata.evaluation.recall_data import (  # noqa: E402
    ADVERSARIAL,
    EvalQuestion,
    EvalTurn,
    conversations,
    load_questions,
    load_turns,
    row_text,
    speakers,
)
from strata.evaluation.recall_metrics import abstention_sample  # noqa: E402
from strata.memory.recall.gate import gate_features, gate_logit  # noqa: E402
from strata.memory.recall.index import (  # noqa: E402
    SESSION_GAP_MINUTES,
    keyword_text,
    minutes_of,
    recency_of,
)
from strata.memory.recall.leaves import mark_faded  # noqa: E402
from strata.memory.recall.pack import (  # noqa: E402
    pack,
    shares_for,
    window_units,
)
from strata.memory.recall.rank import WindowScores, window_scores  # noqa: E402
from strata.memory.recall.types import RecallTuning  # noqa: E402
from strata.memory.rules.names import name_check, strangers  # noqa: E402
from strata.memory.rules.row_table import RowTable, build_table  # noqa: E402
from strata.memory.rules.text import query_stems  # noqa: E402


class Embeddings:
    """Vectors from an OpenAI-compatible endpoint, cached in an .npz file per model."""

    def __init__(self, base_url: str, model: str, cache: Path) -> None:
        self.base_url, self.model, self.cache = base_url.rstrip("/"), model, cache
        self.known: dict[str, np.ndarray] = {}
        if cache.is_file():
            data = np.load(cache)
            self.known = {k: data[k] for k in data.files}

    def _key(self, text: str) -> str:
        return hashlib.sha1(f"{self.model}\0{text}".encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if self._key(t) not in self.known))
        for start in range(0, len(todo), 256):
            part = todo[start:start + 256]
            body = json.dumps({"model": self.model, "input": part,
                               "encoding_format": "base64"}).encode()
            req = urllib.request.Request(f"{self.base_url}/embeddings", body,
                                         {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=600) as resp:
                data = json.loads(resp.read())["data"]
            for text, item in zip(part, data, strict=True):
                vec = np.frombuffer(base64.b64decode(item["embedding"]), dtype="<f4")
                self.known[self._key(text)] = vec / max(float(np.linalg.norm(vec)), 1e-12)
        if todo:
            np.savez(self.cache, **self.known)
        return np.stack([self.known[self._key(t)] for t in texts]).astype(np.float32)


@dataclass
class Conv:
    conv: str
    turns: list[EvalTurn]
    table: RowTable
    fresh: dict[int, dict[str, Any]]
    own: list[EvalQuestion]
    foreign: list[EvalQuestion]
    qvec: dict[str, np.ndarray]
    swapped: list[EvalQuestion]  # foreign questions naming this conversation's people


def swap_names(q: EvalQuestion, table: RowTable, people: Sequence[str]) -> EvalQuestion:
    """`q` with each name this memory never mentions replaced by one of `people`: a question
    about something never said that the stranger's name cannot give away."""
    text, names = q.question, strangers(q.question, table)
    for i, name in enumerate(dict.fromkeys(names)):
        text = re.sub(rf"\b{re.escape(name)}\b", people[i % len(people)], text)
    return dataclasses.replace(q, question=text)


def prepare(turns: list[EvalTurn], questions: list[EvalQuestion], conv: str,
            emb: Embeddings, per_conv: int) -> Conv:
    ct = [t for t in turns if t.conv == conv]
    user, _ = speakers(ct)
    contents = [row_text(t) for t in ct]
    vectors = emb.embed([truncate_to_tokens(c, 512) for c in contents])
    keyword = [keyword_text({"content": c, "role": t.role.value, "speaker": user,
                             "ts": t.ts.isoformat()})
               for t, c in zip(ct, contents, strict=True)]
    table = build_table(list(range(len(ct))), [1] * len(ct), [minutes_of(
        t.ts.isoformat()) for t in ct], keyword, vectors, np.ones(len(ct), bool),
        SESSION_GAP_MINUTES)
    # The rows as the eval's store holds them: one private chat on the platform "eval".
    fresh = {i: {"content": c, "role": t.role.value, "speaker": user, "ts": t.ts.isoformat(),
                 "kind": "private", "platform": "eval", "name": conv, "source": "user"}
             for i, (t, c) in enumerate(zip(ct, contents, strict=True))}
    own = [q for q in questions if q.conv == conv]
    foreign = abstention_sample(questions, conv, per_conv)
    swapped = [swap_names(q, table, speakers(ct)) for q in foreign]
    keys = [q.qid for q in own] + [q.qid + "/f" for q in foreign] + [q.qid + "/s" for q in swapped]
    qv = emb.embed([truncate_to_tokens(q.question, 512) for q in own + foreign + swapped])
    return Conv(conv, ct, table, fresh, own, foreign, dict(zip(keys, qv, strict=True)), swapped)


def ask(c: Conv, q: EvalQuestion, key: str, tuning: RecallTuning, budget: int) -> set[int]:
    """The rows chosen for one question (none: the gate is silent)."""
    rank = tuning.rank
    stems = query_stems(q.question)
    now = q.asked_at
    recency = recency_of(c.table.minutes, now, 14.0)
    ws = window_scores(c.table, stems, c.qvec[key], np.ones(c.table.n, bool), recency, rank)
    order = np.argsort(-ws.score, kind="stable")[: rank.pool]
    top = [int(i) for i in order if ws.valid[i]]
    if not top:
        return set()
    z, cover = gate_features(c.table, ws, q.question, stems)
    if gate_logit(z, cover, name_check(q.question, c.table), rank) < 0:
        return set()
    # A leaf is last relevant when it is cut (nothing is recalled while the data set is
    # replayed), so a row's own age stands for its leaf's.
    return select(c, ws, top, stems, c.qvec[key], tuning, budget, recency < tuning.decay_floor)


def select(c: Conv, ws: WindowScores, top: Sequence[int], stems: Sequence[str],
           qvec: np.ndarray, tuning: RecallTuning, budget: int,
           faded: np.ndarray | None = None) -> set[int]:
    """The rows recall's selection and packing take from the windows `top` (best first) by
    `ws.score`: the same `window_units` and `pack` as recall itself."""
    said = {i: str(row["content"]) for i, row in c.fresh.items()}
    units = window_units(c.table, ws, top, said, *shares_for(c.table, ws, top, stems, qvec,
                                                             tuning))
    if faded is not None:
        units = mark_faded(units, faded)
    items = pack(c.table, c.fresh, units, [], [], budget, tuning)
    return {r for i in items for r in i.cited_rows}


def evaluate(convs: Sequence[Conv], tuning: RecallTuning, budget: int) -> dict[str, Any]:
    by_cat: dict[str, list[float]] = {}
    overall: list[float] = []
    silent: list[float] = []  # on the conversations' own questions
    false_inj: list[float] = []
    hard: list[float] = []  # on the name-swapped foreign questions
    for c in convs:
        tid = {t.turn_id: i for i, t in enumerate(c.turns)}
        for q in c.own:
            rows = ask(c, q, q.qid, tuning, budget)
            silent.append(0.0 if rows else 1.0)
            if q.category != ADVERSARIAL and q.evidence:
                ev = [tid[e] for e in q.evidence]
                r = sum(1 for e in ev if e in rows) / len(ev)
                overall.append(r)
                by_cat.setdefault(q.category, []).append(r)
        for q in c.foreign:
            false_inj.append(1.0 if ask(c, q, q.qid + "/f", tuning, budget) else 0.0)
        for q in c.swapped:
            hard.append(1.0 if ask(c, q, q.qid + "/s", tuning, budget) else 0.0)
    return {"evidence_recall": round(float(np.mean(overall)), 4),
            "by_category": {k: round(float(np.mean(v)), 4) for k, v in sorted(by_cat.items())},
            "silent_on_own": round(float(np.mean(silent)), 4),
            "false_injection_rate": round(float(np.mean(false_inj)), 4),
            "hard_false_injection_rate": round(float(np.mean(hard)), 4)}


def data_arguments(ap: argparse.ArgumentParser) -> None:
    """The data set, the conversations and the embeddings endpoint (shared by the gate fit)."""
    ap.add_argument("--turns", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--conversations", default="0,1,2")
    ap.add_argument("--base-url", default="http://127.0.0.1:8088/v1")
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--cache", default="/tmp/recall_tune_vectors.npz")
    ap.add_argument("--abstention", type=int, default=40)


def load(args: argparse.Namespace) -> list[Conv]:
    """The conversations `data_arguments` name, ready to rank."""
    turns, questions = load_turns(Path(args.turns)), load_questions(Path(args.questions))
    names = conversations(turns)
    picked = [names[int(i)] for i in args.conversations.split(",")]
    emb = Embeddings(args.base_url, args.model, Path(args.cache))
    return [prepare(turns, questions, c, emb, args.abstention) for c in picked]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    data_arguments(ap)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--set", action="append", default=[], help="name=value of RecallTuning")
    ap.add_argument("--grid", action="append", default=[], help="name=v1,v2,…")
    args = ap.parse_args(argv)
    convs = load(args)
    base = RecallTuning()
    kinds = {f.name: {"int": int, "bool": bool}.get(str(f.type), float)
             for f in dataclasses.fields(RecallTuning)}

    def value(k: str, v: str) -> float:
        return kinds[k](float(v))

    fixed = {k: value(k, v) for k, v in (s.split("=", 1) for s in args.set)}
    base = dataclasses.replace(base, **fixed)  # type: ignore[arg-type]
    grid = [(k, [value(k, x) for x in v.split(",")]) for k, v in (g.split("=", 1)
                                                                  for g in args.grid)]
    combos = list(itertools.product(*(vals for _, vals in grid))) or [()]
    for combo in combos:
        tuning = dataclasses.replace(base, **{k: v for (k, _), v in zip(  # type: ignore[arg-type]
            grid, combo, strict=True)})
        res = evaluate(convs, tuning, args.budget)
        label = " ".join(f"{k}={v}" for (k, _), v in zip(grid, combo, strict=True)) or "base"
        print(f"{label:<40} recall {res['evidence_recall']:.4f} "
              f"multi {res['by_category'].get('multi_hop', 0):.4f} "
              f"silent {res['silent_on_own']:.3f} FIR {res['false_injection_rate']:.3f} "
              f"hard {res['hard_false_injection_rate']:.3f} {res['by_category']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
