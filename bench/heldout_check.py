"""Check the people-written held-out set (`bench/heldout/paraphrase/`) and measure how far its
questions are worded from their evidence.

    python bench/heldout_check.py [--dir bench/heldout/paraphrase] [--show N]

Shape: turn and question ids unique, every evidence id a turn of the question's own
conversation, known categories, at least 5 conversations of at least 120 turns and 25
questions, at least 150 questions. Exit status 1 on any problem.

Wording: for each question with evidence, the share of its content words (the eval's answer
vocabulary: lower-cased words without stopwords, the conversation's speaker names left out)
that occur in its evidence turns, as written and after Porter stemming (the stems SQLite's
index stores). Lower is the point of the set; the mean over questions is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from statistics import mean

from strata.evaluation.recall_data import (
    EvalQuestion,
    EvalTurn,
    conversations,
    load_questions,
    load_turns,
    speakers,
)
from strata.evaluation.recall_metrics import content_words
from strata.memory.engines.fts import porter_stem

SET_DIR = Path(__file__).resolve().parent / "heldout" / "paraphrase"
CATEGORIES = frozenset({"single_hop", "multi_hop", "temporal", "open_domain", "adversarial"})
MIN_CONVERSATIONS, MIN_TURNS, MIN_PER_CONV, MIN_QUESTIONS = 5, 120, 25, 150


def load(folder: Path = SET_DIR) -> tuple[list[EvalTurn], list[EvalQuestion]]:
    """The set as `strata eval recall` reads it."""
    return load_turns(folder / "turns.jsonl"), load_questions(folder / "questions.jsonl")


def problems(turns: list[EvalTurn], questions: list[EvalQuestion]) -> list[str]:
    """Everything wrong with the set's shape (empty when it is sound)."""
    out: list[str] = []
    conv_of = {t.turn_id: t.conv for t in turns}
    if len(conv_of) != len(turns):
        out.append("turn ids are not unique")
    qids = Counter(q.qid for q in questions)
    out += [f"question id {qid} appears {n} times" for qid, n in qids.items() if n > 1]
    convs = conversations(turns)
    if len(convs) < MIN_CONVERSATIONS:
        out.append(f"{len(convs)} conversations, fewer than {MIN_CONVERSATIONS}")
    if len(questions) < MIN_QUESTIONS:
        out.append(f"{len(questions)} questions, fewer than {MIN_QUESTIONS}")
    for conv in convs:
        mine = [t for t in turns if t.conv == conv]
        if len(mine) < MIN_TURNS:
            out.append(f"{conv}: {len(mine)} turns, fewer than {MIN_TURNS}")
        if any(b.ts < a.ts for a, b in pairwise(mine)):
            out.append(f"{conv}: turns out of time order")
        if len({t.role for t in mine}) != 2:
            out.append(f"{conv}: needs both a user and an assistant side")
        asked = sum(q.conv == conv for q in questions)
        if asked < MIN_PER_CONV:
            out.append(f"{conv}: {asked} questions, fewer than {MIN_PER_CONV}")
        last = mine[-1].ts if mine else None
        out += [f"{q.qid}: asked before the conversation ends" for q in questions
                if q.conv == conv and last is not None and q.asked_at <= last]
    for q in questions:
        if q.conv not in convs:
            out.append(f"{q.qid}: unknown conversation {q.conv}")
        if q.category not in CATEGORIES:
            out.append(f"{q.qid}: unknown category {q.category}")
        if not q.evidence and q.category != "adversarial":
            out.append(f"{q.qid}: no evidence outside the adversarial category")
        if not q.answer.strip():
            out.append(f"{q.qid}: no answer")
        out += [f"{q.qid}: evidence {e} is not a turn of {q.conv}"
                for e in q.evidence if conv_of.get(e) != q.conv]
    return out


@dataclass(frozen=True)
class Overlap:
    """One question's content words (`words` of them) and those found in its evidence."""

    qid: str
    words: int
    shared: tuple[str, ...]
    shared_stems: tuple[str, ...]


def overlap(turns: list[EvalTurn], questions: list[EvalQuestion]) -> list[Overlap]:
    """Per question with evidence (not adversarial): its content words and those in evidence."""
    text = {t.turn_id: t.text for t in turns}
    names: dict[str, set[str]] = {}
    for conv in conversations(turns):
        names[conv] = {n.lower() for n in speakers([t for t in turns if t.conv == conv])}
    rows: list[Overlap] = []
    for q in questions:
        if not q.evidence or q.category == "adversarial":
            continue
        words = content_words(q.question) - names[q.conv]
        evidence = set().union(*(content_words(text[e]) for e in q.evidence))
        stems = {porter_stem(w) for w in evidence}
        rows.append(Overlap(q.qid, len(words), tuple(sorted(words & evidence)),
                            tuple(sorted(w for w in words if porter_stem(w) in stems))))
    return rows


def _share(rows: list[Overlap], stemmed: bool) -> float:
    return mean(len(r.shared_stems if stemmed else r.shared) / r.words for r in rows if r.words)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=SET_DIR)
    parser.add_argument("--show", type=int, default=0, help="list the N closest questions")
    args = parser.parse_args()
    turns, questions = load(args.dir)
    found = problems(turns, questions)
    for p in found:
        print("problem:", p)
    rows = overlap(turns, questions)
    cats = Counter(q.category for q in questions)
    summary = {
        "conversations": len(conversations(turns)), "turns": len(turns),
        "questions": len(questions), "categories": dict(sorted(cats.items())),
        "adversarial_share": round(cats["adversarial"] / len(questions), 3),
        "scored_questions": len(rows),
        "question_words_in_evidence": round(_share(rows, stemmed=False), 3),
        "question_stems_in_evidence": round(_share(rows, stemmed=True), 3),
        "questions_sharing_no_stem": sum(not r.shared_stems for r in rows),
    }
    print(json.dumps(summary, indent=2))
    ranked = sorted(rows, key=lambda r: -len(r.shared_stems) / max(1, r.words))
    for r in ranked[: args.show]:
        print(r.qid, list(r.shared_stems), "of", r.words)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
