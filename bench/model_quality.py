"""Quality of every model-written layer, with a real model, in one command. Writes
bench/results/model_quality_<model>.json and prints the markdown table docs/benchmarks.md
shows.

    python -m bench.model_quality                          # the embedded default model
    STRATA_LLM_BASE_URL=... STRATA_LLM_MODEL=... python -m bench.model_quality   # any endpoint
    python -m bench.model_quality --parts answers          # one part; the others are kept

Parts (each writes its own file under bench/results/model_quality/<model>/, read back by the
final report, so a part can be rerun alone and a long one resumes; the answers part keeps its
recall blocks and every model answer under answers/<data folder>/, each answer keyed by its
exact prompt, so a rerun asks only what changed and two data folders never mix):
- facts: precision and recall of fact extraction on the labelled set (bench.fact_quality);
- summaries: the share of the source's names, places, dates and numbers kept by the model's
  episode summaries and by the extractive fallback (bench.summary_quality);
- answers: LoCoMo questions of the held-out conversations 3-4 answered with Strata's recall
  block, with no memory and with the gold evidence (bench.answer_quality); `--conversations
  0,1,2` measures the tuning ones instead, `--limit N` a proportional share of the questions;
- lived: one conversation replayed with `--lived`, episodes written by the model against the
  extractive ones (`strata eval recall --lived`'s code), compared by bench.lived_compare.

The recall block and the lived replay embed with the configured embedder (STRATA_EMBED_*; the
published figures use all-MiniLM-L6-v2), and the chat model is the configured endpoint or,
when none answers, the embedded default (strata.bot.embedded), started once for the whole run.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import os
import shlex
import sys
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench import answer_quality, fact_quality, summary_quality
from bench.lived_compare import compare
from strata.app.model_wiring import make_chat_model
from strata.bot.embedded import model_endpoints
from strata.core.config import Settings, default_db_path, load_settings
from strata.evaluation.lived import run_lived_eval
from strata.evaluation.recall import EvalOptions, write_json
from strata.evaluation.recall_data import EvalQuestion, EvalTurn, load_questions, load_turns
from strata.evaluation.recall_metrics import answer_record
from strata.memory.recall import render as recall_render

RESULTS = Path(__file__).parent / "results"
PARTS = ("facts", "summaries", "answers", "lived")
LOCOMO = Path(os.environ.get("LOCOMO", "/work/shared/datasets/locomo_dev"))
HELD_OUT = (3, 4)  # LoCoMo conversations never tuned on (docs/benchmarks.md)
# conv-30, the shortest (369 turns in 19 sessions), and its first 10 sessions (190 turns, 56
# questions with their evidence in them): on one loaded core the model writes an episode summary
# and reads it for facts in about a minute, and a replay of the whole conversation took
# longer than this benchmark's run could wait.
LIVED_CONVERSATION = 1
LIVED_SESSIONS = 10


def _folder(model: str) -> Path:
    return RESULTS / "model_quality" / model.replace("/", "_")


def data_key(data: Path) -> str:
    """A LoCoMo folder's own name in the results: its base name and a hash of its full path,
    so two folders never share (and merge) cached blocks and answers."""
    path = str(data.expanduser().resolve())
    return f"{data.name}-{hashlib.sha1(path.encode('utf-8')).hexdigest()[:8]}"


def recall_code_key() -> str:
    """A hash of the recall code (`strata/memory/recall/*.py`): the cached blocks are
    rebuilt when what chooses or renders them changes."""
    digest = hashlib.sha1()
    for f in sorted(Path(recall_render.__file__).parent.glob("*.py")):
        digest.update(f.read_bytes())
    return digest.hexdigest()[:10]


def answers_folder(folder: Path, data: Path) -> Path:
    """Where the answer part keeps the blocks and answers of one data folder."""
    return folder / "answers" / data_key(data)


def _convs_label(positions: Sequence[int]) -> str:
    return "c" + "-".join(map(str, positions))


async def part_answers(settings: Settings, folder: Path, budget: int, limit: int | None,
                       from_end: bool, positions: tuple[int, ...] = HELD_OUT,
                       data: Path = LOCOMO) -> dict[str, Any]:
    turns = load_turns(data / "turns.jsonl")
    questions = load_questions(data / "questions.jsonl")
    convs = list(dict.fromkeys(t.conv for t in turns))
    picked = answer_quality.answer_order(
        answer_quality.sample(questions, [convs[i] for i in positions]), limit)
    where = answers_folder(folder, data)
    label = _convs_label(positions)
    blocks_file = where / f"blocks_{label}_b{budget}_{recall_code_key()}.json"
    blocks: dict[str, str] = {}
    if blocks_file.is_file():
        blocks = json.loads(blocks_file.read_text(encoding="utf-8"))
    missing = [q for q in picked if q.qid not in blocks]
    if missing:  # a longer run than the one that wrote the file
        blocks |= await answer_quality.recall_blocks(settings, turns, missing, positions,
                                                     budget)
        write_json(blocks_file, blocks)
    details = where / f"answers_{label}.jsonl"
    chat = make_chat_model(settings)
    try:
        records = await answer_quality.answer_all(chat, picked, blocks, turns, details,
                                                  from_end=from_end)
    finally:
        await chat.close()
    return {"conversations": [convs[i] for i in positions], "data": str(data),
            "sample": answer_quality.SAMPLE, "limit": limit,
            "budget_tokens": budget, "answer_tokens": answer_quality.ANSWER_TOKENS,
            "details": str(details.relative_to(RESULTS.parent.parent)),
            **answer_quality.summarize(records),
            "notes_coverage": answer_quality.notes_coverage(picked, blocks, turns)}


async def part_facts(settings: Settings, every: int) -> dict[str, Any]:
    return await fact_quality.measure(settings, every=every)


async def part_summaries(settings: Settings) -> dict[str, Any]:
    turns = load_turns(LOCOMO / "turns.jsonl")
    convs = list(dict.fromkeys(t.conv for t in turns))
    return await summary_quality.measure(settings, turns, [convs[i] for i in HELD_OUT])


def lived_slice(turns: Sequence[EvalTurn], questions: Sequence[EvalQuestion], conv: str,
                sessions: int) -> tuple[list[EvalTurn], list[EvalQuestion]]:
    """The first `sessions` sessions of `conv` (turn ids `<conv>:D<session>:<n>`) and its
    questions whose evidence lies wholly in them, asked 60 s after the last kept turn as the
    data set asks after the last turn."""
    def session(t: EvalTurn) -> int:
        return int(t.turn_id.rsplit(":", 2)[1].lstrip("D"))

    kept = [t for t in turns if t.conv == conv and session(t) <= sessions]
    ids = {t.turn_id for t in kept}
    asked = kept[-1].ts + timedelta(seconds=60)
    return kept, [dataclasses.replace(q, asked_at=asked) for q in questions
                  if q.conv == conv and q.evidence and set(q.evidence) <= ids]


async def part_lived(settings: Settings, folder: Path, budget: int,
                     sessions: int) -> dict[str, Any]:
    all_turns = load_turns(LOCOMO / "turns.jsonl")
    conv = list(dict.fromkeys(t.conv for t in all_turns))[LIVED_CONVERSATION]
    turns, questions = lived_slice(all_turns, load_questions(LOCOMO / "questions.jsonl"), conv,
                                   sessions)
    runs: dict[str, Any] = {}
    answers: dict[str, Any] = {}
    for mode in ("extractive", "llm"):
        options = EvalOptions(budget=budget, episodes=mode, abstention_per_conv=0)
        started = time.monotonic()
        report, got = await run_lived_eval(settings, turns, questions, options,
                                           show_progress=False)
        report["seconds"] = round(time.monotonic() - started, 1)
        details = folder / f"lived_{mode}.jsonl"
        details.write_text("".join(json.dumps(answer_record(a)) + "\n" for a in got),
                           encoding="utf-8")
        runs[mode] = {k: report[k] for k in ("overall", "by_category", "storage", "lived",
                                             "seconds")}
        answers[mode] = got
        print(f"lived {mode}: {json.dumps(runs[mode]['overall'])}", flush=True)
    return {"conversation": [conv], "sessions": sessions, "turns": len(turns),
            "questions": len(questions), "budget_tokens": budget,
            "extractive": runs["extractive"], "llm": runs["llm"],
            "llm_vs_extractive": compare(answers["extractive"], answers["llm"], None)}


async def run(parts: list[str], budget: int, answer_budget: int | None, limit: int | None,
              lived_sessions: int, from_end: bool, command: str, facts_every: int = 1,
              positions: tuple[int, ...] = HELD_OUT) -> str:
    """Run `parts` with the configured or embedded model; the model's name."""
    settings = load_settings(None)
    cache = default_db_path(os.environ).parent / "models"
    async with model_endpoints(settings, cache_dir=cache, notice=print) as effective:
        model = effective.llm.model
        folder = _folder(model)
        folder.mkdir(parents=True, exist_ok=True)
        for part in parts:
            started = time.monotonic()
            if part == "answers":
                # The block the bot's recall gives this chat model: 250 tokens for the
                # embedded default (strata.bot.embedded), [recall] budget_tokens otherwise.
                result = await part_answers(effective, folder,
                                            answer_budget or effective.recall.budget_tokens,
                                            limit, from_end, positions)
            elif part == "facts":
                result = await part_facts(effective, facts_every)
            elif part == "summaries":
                result = await part_summaries(effective)
            elif part == "lived":
                result = await part_lived(effective, folder, budget, lived_sessions)
            else:
                raise AssertionError(part)
            result["seconds"] = round(time.monotonic() - started, 1)
            result["load_average"] = os.getloadavg()
            result["command"] = command
            result["endpoint"] = {"model": model, "base_url": effective.llm.base_url,
                                  "embedder": effective.embed.model}
            write_json(folder / part_file(part, positions), result)
        return model


def part_file(part: str, positions: tuple[int, ...] = HELD_OUT) -> str:
    """A part's results file: the answers on other conversations than the held-out ones
    (a tuning run) go to their own file, never into the published table."""
    if part == "answers" and positions != HELD_OUT:
        return f"answers_{_convs_label(positions)}.json"
    return f"{part}.json"


def _headline(data: dict[str, Any]) -> dict[str, Any]:
    """A part's file without its per-item rows (those stay in the part's own file)."""
    return {k: v for k, v in data.items() if k != "rows"}


def assemble(model: str) -> tuple[dict[str, Any], str]:
    """The results file's content (every part found) and its markdown table."""
    folder = _folder(model)
    parts = {p: json.loads((folder / f"{p}.json").read_text(encoding="utf-8"))
             for p in PARTS if (folder / f"{p}.json").is_file()}
    report = {"model": model, "parts": {p: _headline(d) for p, d in parts.items()},
              "files": sorted(str(f.relative_to(RESULTS.parent.parent))
                              for f in folder.iterdir())}
    return report, table(parts)


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def table(parts: dict[str, dict[str, Any]]) -> str:
    """The docs table: one line per layer, model against its reference."""
    lines = ["| layer | measure | with the model | reference |", "|---|---|---:|---:|"]
    if "facts" in parts:
        f = parts["facts"]
        lines.append(f"| facts ({f['utterances']} utterances, {f['expected_facts']} facts, "
                     f"{f['negatives']} negatives) | precision / recall | "
                     f"{_f(f['precision'])} / {_f(f['recall'])} ({f['stored_facts']} stored) | "
                     f"negatives with a fact: {f['negatives_with_a_fact']} |")
    if "summaries" in parts:
        s = parts["summaries"]
        m, e = s["model"], s["extractive"]
        lines.append(f"| episode summaries ({m['windows']} windows, {m['entities']} entities; "
                     f"{s['fallbacks']} fell back) | names, places, dates, numbers kept | "
                     f"{_f(m['retention'])} ({m['mean_tokens']} tokens) | extractive "
                     f"{_f(e['retention'])} ({e['mean_tokens']} tokens) |")
    if "answers" in parts:
        a = parts["answers"]["overall"]
        lines.append(f"| answers ({a['questions']} LoCoMo questions, conv 3-4) | token F1 "
                     f"with memory / no memory / gold evidence | {_f(a['memory']['f1'])} / "
                     f"{_f(a['none']['f1'])} / {_f(a['gold']['f1'])} | gap to gold "
                     f"{_f(a['gold_minus_memory_f1'])} |")
        lines.append(f"| answers | answer coverage with memory / no memory / gold | "
                     f"{_f(a['memory']['coverage'])} / {_f(a['none']['coverage'])} / "
                     f"{_f(a['gold']['coverage'])} | |")
    if "lived" in parts:
        lv = parts["lived"]
        r = lv["llm_vs_extractive"]["by_category"]["overall"]
        conv = ", ".join(lv["conversation"])
        lines.append(f"| lived replay ({conv}, first {lv['sessions']} sessions, "
                     f"{lv['llm_vs_extractive']['questions']} "
                     f"questions) | recall's answer coverage / evidence recall, model-written "
                     f"vs extractive episodes | {_f(r['answer_coverage_lived'])} / "
                     f"{_f(r['evidence_recall_lived'])} | {_f(r['answer_coverage_static'])} / "
                     f"{_f(r['evidence_recall_static'])} |")
    if "answers" in parts:
        lines += ["", "| category | questions | F1 memory | F1 none | F1 gold |",
                  "|---|---:|---:|---:|---:|"]
        for cat, g in parts["answers"]["by_category"].items():
            lines.append(f"| {cat} | {g['questions']} | {_f(g['memory']['f1'])} | "
                         f"{_f(g['none']['f1'])} | {_f(g['gold']['f1'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="which parts to run (default: all): " + ", ".join(PARTS))
    parser.add_argument("--budget", type=int, default=1000,
                        help="recall budget of the lived replay (1000, as strata eval)")
    parser.add_argument("--answer-budget", type=int, default=None,
                        help="recall budget of the answer test's memory block (default: the "
                             "bot's for this chat model, 250 for the embedded default)")
    parser.add_argument("--model", default=load_settings(None).llm.embedded_model,
                        help="with --parts '': only rebuild the results file and table of "
                             "this model from its parts' files")
    parser.add_argument("--lived-sessions", type=int, default=LIVED_SESSIONS,
                        help=f"lived: replay the first N sessions ({LIVED_SESSIONS})")
    parser.add_argument("--from-end", action="store_true",
                        help="answers: work from the end of the question list (a second "
                             "process sharing the answers with a first one)")
    parser.add_argument("--facts-every", type=int, default=1,
                        help="facts: only every Nth labelled utterance (a slow model's sample)")
    parser.add_argument("--limit", type=int, default=None,
                        help="answers: only the first N sampled questions, every conversation "
                             "and category in proportion (a trial run)")
    parser.add_argument("--conversations", default=",".join(map(str, HELD_OUT)),
                        help="answers: LoCoMo conversation positions (default the held-out "
                             "3,4; others, e.g. 0,1,2 for tuning, write answers_c0-1-2.json)")
    args = parser.parse_args(argv)
    parts = [p for p in args.parts.split(",") if p]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown part {unknown[0]} (parts: {', '.join(PARTS)})")
    command = "python -m bench.model_quality " + shlex.join(argv or sys.argv[1:])
    model = args.model
    if parts:
        model = asyncio.run(run(parts, args.budget, args.answer_budget, args.limit,
                                args.lived_sessions, args.from_end, command,
                                args.facts_every,
                                tuple(int(c) for c in args.conversations.split(","))))
    report, text = assemble(model)
    write_json(RESULTS / f"model_quality_{model.replace('/', '_')}.json", report)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
