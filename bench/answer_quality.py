"""End-to-end answers (part of `bench.model_quality`): LoCoMo questions of the held-out
conversations answered by the chat model three ways, scored by token F1 and answer coverage.

1. The sample: `SAMPLE` questions per category from each conversation, drawn with a fixed seed.
   Adversarial questions are left out (their gold answer is "not mentioned", which a model with
   no memory wins by refusing, and LoCoMo scores them apart); the other four are kept.
2. The memory: Strata's static recall eval (`strata.evaluation.recall.run_eval`, the same code as
   `strata eval recall`) builds each conversation's memory with the configured embedder and
   records the exact block turn-zero recall injects for each sampled question.
3. The answers: the model gets a terse system prompt (today's date, "answer with a short
   phrase") with (a) that recall block, (b) nothing, (c) the gold evidence turns quoted the way
   recall quotes rows, (a) and (c) under the chat's memory preamble; the question is the user
   message. Each answer is one JSON line appended to the details file as soon as it exists,
   keyed by its exact prompt, so a stopped run resumes where it was and a changed prompt is
   asked again.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.quality_scores import token_f1
from strata.bot.llm import OpenAIChatModel
from strata.bot.prompt import MEMORY_PREAMBLE
from strata.core.config import Settings
from strata.core.types import ChatMessage
from strata.evaluation.recall import EvalOptions, run_eval
from strata.evaluation.recall_data import EvalQuestion, EvalTurn, row_text, speakers
from strata.evaluation.recall_metrics import answer_coverage, content_words
from strata.memory.recall.render import render_span

CONDITIONS = ("memory", "none", "gold")
# Per conversation: how many questions of each category (LoCoMo's conversations 3-4 hold
# 107-111 single-hop, 26-40 temporal, 31-37 multi-hop and 11-14 open-domain questions; the
# generated chats of `strata.evaluation.synth` have "update" questions too, and their
# unanswerable "absent" ones are left out as LoCoMo's adversarial ones are).
SAMPLE = {"single_hop": 35, "multi_hop": 20, "temporal": 20, "open_domain": 5, "update": 5}
SEED = 22
ANSWER_TOKENS = 32

Ask = Callable[[Sequence[ChatMessage]], Any]
Key = tuple[str, str, str]  # (qid, condition, prompt key)


def sample(questions: Sequence[EvalQuestion], convs: Sequence[str],
           per_category: dict[str, int] = SAMPLE, seed: int = SEED) -> list[EvalQuestion]:
    """The same questions every run: per conversation and category, a seeded draw (in file
    order), only questions with a gold answer and evidence."""
    rng = random.Random(seed)
    out: list[EvalQuestion] = []
    for conv in convs:
        for cat, n in per_category.items():
            pool = [q for q in questions if q.conv == conv and q.category == cat
                    and q.answer and q.evidence]
            picked = set(id(q) for q in rng.sample(pool, min(n, len(pool))))
            out += [q for q in pool if id(q) in picked]
    return out


def answer_order(picked: Sequence[EvalQuestion], limit: int | None = None,
                 seed: int = SEED) -> list[EvalQuestion]:
    """The order questions are asked in, and with `limit` the first ones only: each
    (conversation, category) shuffled with `seed`, then interleaved by the share of its own
    list each question stands at, so any first N hold every conversation and category in
    proportion (a run stopped early, or a `--limit` trial, is a fair sample, not the first
    conversation's first categories)."""
    rng = random.Random(seed)
    strata_: dict[tuple[str, str], list[EvalQuestion]] = {}
    for q in picked:
        strata_.setdefault((q.conv, q.category), []).append(q)
    keyed = []
    for n, (_key, group) in enumerate(sorted(strata_.items())):
        group = list(group)
        rng.shuffle(group)
        keyed += [((k + 0.5) / len(group), n, q) for k, q in enumerate(group)]
    ordered = [q for _share, _n, q in sorted(keyed, key=lambda x: (x[0], x[1]))]
    return ordered if limit is None else ordered[:limit]


def prompt_key(msgs: Sequence[ChatMessage], model: str) -> str:
    """What an answer is cached under: the exact messages, the model and the answer length,
    so an answer is reused only for the very prompt it answered (a changed block, preamble or
    data set asks again instead of merging with old answers)."""
    blob = json.dumps([model, ANSWER_TOKENS, [m.to_api() for m in msgs]], sort_keys=True)
    return hashlib.sha1(blob.encode("utf-8")).hexdigest()[:16]


def gold_block(q: EvalQuestion, turns: dict[str, EvalTurn]) -> str:
    """The evidence turns, each quoted under its date as recall quotes a row."""
    spans = []
    for tid in q.evidence:
        t = turns[tid]
        spans.append(render_span([{"content": row_text(t), "role": t.role.value,
                                   "speaker": None, "ts": t.ts.isoformat()}], provenance=False))
    return "\n".join(spans)


def messages(question: str, asked_at: datetime, people: tuple[str, str],
             notes: str | None) -> list[ChatMessage]:
    """The terse answer prompt; `notes` None: no memory at all. Notes come under the chat's
    own memory preamble (`strata.bot.prompt.MEMORY_PREAMBLE`), as a turn's recall does."""
    head = (f"Today is {asked_at:%d %B %Y}. You answer questions about the conversations of "
            f"{people[0]} and {people[1]}. Reply with a short phrase only (a few words, no "
            "sentence), using exact words from the notes when you can. If you are not sure, "
            "give your best guess.")
    system = head if notes is None else head + "\n\n" + MEMORY_PREAMBLE + "\n" + notes
    return [ChatMessage("system", system), ChatMessage("user", question)]


async def recall_blocks(settings: Settings, turns: Sequence[EvalTurn],
                        questions: Sequence[EvalQuestion], positions: tuple[int, ...],
                        budget: int) -> dict[str, str]:
    """The block turn-zero recall injects for each question (qid → text, "" for nothing)."""
    options = EvalOptions(budget=budget, conversations=positions, abstention_per_conv=0)
    _report, answers = await run_eval(settings, turns, questions, options,
                                      show_progress=False)
    return {a.qid: a.block for a in answers}


def notes_coverage(picked: Sequence[EvalQuestion], blocks: dict[str, str],
                   turns: Sequence[EvalTurn]) -> dict[str, float]:
    """How much of the gold answers' content words the notes themselves hold (the recall
    block, the gold evidence): what the model could at best have copied."""
    by_id = {t.turn_id: t for t in turns}
    scored = [q for q in picked if content_words(q.answer)]
    if not scored:
        return {"memory": 0.0, "gold": 0.0}
    return {"memory": round(sum(answer_coverage(q.answer, blocks.get(q.qid, ""))
                                for q in scored) / len(scored), 4),
            "gold": round(sum(answer_coverage(q.answer, gold_block(q, by_id))
                              for q in scored) / len(scored), 4)}


def read_records(path: Path) -> list[dict[str, Any]]:
    """The details file's answers; a line torn by a stopped process is skipped (its question
    is asked again)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def done_keys(path: Path) -> set[Key]:
    """(qid, condition, prompt key) of the answers already in the details file (an answer
    written before prompts were keyed has none, and is asked again)."""
    return {(r["qid"], r["condition"], r.get("prompt", "")) for r in read_records(path)}


async def answer_all(chat: OpenAIChatModel, ordered: Sequence[EvalQuestion],
                     blocks: dict[str, str], turns: Sequence[EvalTurn], details: Path,
                     log: Callable[[str], None] = print,
                     from_end: bool = False) -> list[dict[str, Any]]:
    """Ask every (question, condition) of `ordered` (`answer_order`) whose exact prompt has no
    answer in `details` yet, appending one line each, and return this run's answers, one per
    (question, condition), whichever run wrote them. `from_end`: the same order backwards, so
    a second process (its own model server) can share the work; the done lines are read
    again before each question, so the two stop where they meet."""
    by_id = {t.turn_id: t for t in turns}
    order = list(ordered)[::-1] if from_end else list(ordered)
    people = {c: speakers([t for t in turns if t.conv == c]) for c in {q.conv for q in order}}
    details.parent.mkdir(parents=True, exist_ok=True)
    if details.is_file() and not details.read_bytes().endswith(b"\n"):
        with details.open("a", encoding="utf-8") as fh:
            fh.write("\n")  # end a line torn by a stopped run, so the next one stands alone
    wanted: list[Key] = []
    with details.open("a", encoding="utf-8") as fh:
        for i, q in enumerate(order):
            notes = {"memory": blocks.get(q.qid, ""), "none": None,
                     "gold": gold_block(q, by_id)}
            # Read again: a second process may have answered it meanwhile.
            done = done_keys(details)
            for condition in CONDITIONS:
                msgs = messages(q.question, q.asked_at, people[q.conv], notes[condition])
                key = (q.qid, condition, prompt_key(msgs, chat.model))
                wanted.append(key)
                if key in done:
                    continue
                started = time.monotonic()
                reply = await chat.complete(msgs, max_tokens=ANSWER_TOKENS)
                seconds = time.monotonic() - started
                text = " ".join(reply.text.split())
                record = {"qid": q.qid, "conv": q.conv, "category": q.category,
                          "condition": condition, "prompt": key[2], "gold": q.answer,
                          "answer": text,
                          "f1": round(token_f1(text, q.answer), 4),
                          "coverage": round(answer_coverage(q.answer, text), 4),
                          "prompt_tokens": reply.usage.prompt_tokens,
                          "seconds": round(seconds, 1)}
                fh.write(json.dumps(record) + "\n")
                fh.flush()
                log(f"{i + 1}/{len(order)} {q.qid} {condition}: {seconds:.1f} s "
                    f"f1 {record['f1']:.2f} {text[:60]!r}")
    found = {(r["qid"], r["condition"], r.get("prompt", "")): r for r in read_records(details)}
    return [found[k] for k in wanted if k in found]


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean F1 and coverage per condition, overall and per category, and the gaps: memory
    minus none, gold minus memory. Only questions answered in all three conditions count.
    The scores are recomputed from each answer and its gold answer, so a change of scoring
    applies to answers written before it."""
    records = [{**r, "f1": token_f1(r["answer"], r["gold"]),
                "coverage": answer_coverage(r["gold"], r["answer"])} for r in records]
    by_key = {(r["qid"], r["condition"]): r for r in records}
    complete = sorted({r["qid"] for r in records
                       if all((r["qid"], c) in by_key for c in CONDITIONS)})

    def mean(rows: list[dict[str, Any]], key: str) -> float:
        return round(sum(r[key] for r in rows) / len(rows), 4) if rows else 0.0

    def group(qids: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": len(qids)}
        for c in CONDITIONS:
            rows = [by_key[(q, c)] for q in qids]
            out[c] = {"f1": mean(rows, "f1"), "coverage": mean(rows, "coverage"),
                      "prompt_tokens": mean(rows, "prompt_tokens"),
                      "seconds": mean(rows, "seconds")}
        out["memory_minus_none_f1"] = round(out["memory"]["f1"] - out["none"]["f1"], 4)
        out["gold_minus_memory_f1"] = round(out["gold"]["f1"] - out["memory"]["f1"], 4)
        return out

    cats = sorted({by_key[(q, "memory")]["category"] for q in complete})
    return {"overall": group(complete),
            "by_category": {c: group([q for q in complete
                                      if by_key[(q, "memory")]["category"] == c])
                            for c in cats}}
