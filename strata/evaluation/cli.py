"""`strata eval recall`: turn-zero recall measured on a conversation data set (LoCoMo format).

The logic lives in `strata.evaluation.recall`; this module parses the arguments, prints the table on
stdout and writes the JSON report.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from strata.core.config import Settings
from strata.core.errors import StrataError
from strata.evaluation.recall import (
    BASELINES,
    EPISODE_MODES,
    EvalOptions,
    RecallFn,
    fts_baseline,
    recall_once,
    run_eval,
    write_json,
)
from strata.evaluation.recall_data import load_questions, load_turns
from strata.evaluation.recall_metrics import answer_record, format_table
from strata.memory.engines.pg import is_url


async def cmd_eval_recall(args: argparse.Namespace, settings: Settings) -> int:
    turns = load_turns(Path(args.turns))
    questions = load_questions(Path(args.questions))
    options = EvalOptions(budget=args.budget, limit_convs=args.limit_convs,
                          conversations=args.conversations,
                          episodes=args.episodes, abstention_per_conv=args.abstention,
                          consolidate=args.consolidate, db_url=args.db_url,
                          assistant_is_bot=args.assistant_is_bot)
    recall: RecallFn = fts_baseline if args.method == "fts" else recall_once
    if args.hypothetical:
        if args.method == "fts":
            raise StrataError("--hypothetical is a way of recall, not of --method fts")
        from strata.evaluation.hypothetical import FileLines, hinted_recall

        recall = hinted_recall(FileLines(Path(args.hypothetical)))
    if args.baseline and args.lived:
        raise StrataError("--baseline runs with the static eval only, not with --lived")
    if args.assistant_is_bot and args.lived:
        raise StrataError("--assistant-is-bot runs with the static eval only, not with --lived")
    if args.lived:
        from strata.evaluation.lived import format_lived, run_lived_eval

        report, answers = await run_lived_eval(settings, turns, questions, options,
                                               recall=recall, show_progress=not args.no_progress)
    else:
        report, answers = await run_eval(settings, turns, questions, options, recall=recall,
                                         show_progress=not args.no_progress,
                                         baseline=args.baseline)
    # What produced the numbers, so a result file can be reproduced: the recall settings given
    # by environment variables too, which change them as much as the arguments do.
    given = {k: v for k, v in sorted(os.environ.items()) if k.startswith("STRATA_RECALL_")}
    report["command"] = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in given.items()),
                                  "strata", *(shlex.quote(a) for a in sys.argv[1:])])
    if given:
        report["settings_env"] = given
    report["embedder"] = {"model": settings.embed.model, "dim": settings.embed.dim}
    print(format_lived(report) if args.lived else format_table(report))
    if args.out:
        write_json(Path(args.out), report)
        print(f"wrote {args.out}")
    else:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    if args.details:
        path = Path(args.details)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as fh:
            for a in answers:
                fh.write(json.dumps(answer_record(a)) + "\n")
    return 0


def _positions(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}") from None
    if not out:
        raise argparse.ArgumentTypeError("no conversation given")
    return out


def _postgres_url(text: str) -> str:
    if not is_url(text):
        raise argparse.ArgumentTypeError(f"not a postgresql:// URL: {text!r}")
    return text


def register(sub: Any) -> None:
    """Add `strata eval recall`."""
    evals = sub.add_parser("eval", help="measure memory quality on a data set").add_subparsers(
        dest="eval_command", required=True, metavar="WHAT")
    rec = evals.add_parser(
        "recall", help="turn-zero recall on LoCoMo-format JSONL (see shared/datasets/FORMAT.md)")
    rec.add_argument("--turns", required=True, help="turns.jsonl")
    rec.add_argument("--questions", required=True, help="questions.jsonl")
    rec.add_argument("--budget", type=int, default=1000, help="recall token budget (1000)")
    rec.add_argument("--limit-convs", type=int, default=None,
                     help="only the first N conversations")
    rec.add_argument("--conversations", type=_positions, default=None, metavar="I,J,…",
                     help="only these conversations (0-based positions in the turns file)")
    rec.add_argument("--out", help="write the JSON report here (default: stdout)")
    rec.add_argument("--episodes", choices=EPISODE_MODES, default="extractive",
                     help="how episodes are built: the window's own text, or the configured model")
    rec.add_argument("--abstention", type=int, default=40, metavar="N",
                     help="questions from other conversations asked of each one (40)")
    rec.add_argument("--method", choices=("recall", "fts"), default="recall",
                     help="fts: the FORMAT.md reference (raw turns by FTS5 rank) instead of recall")
    rec.add_argument("--baseline", choices=tuple(BASELINES), default=None,
                     help="also run this reference on the same memory and questions and report "
                          "it beside recall (fts5: the rows by keyword rank, same budget)")
    rec.add_argument("--details", help="write one JSON line per question here")
    rec.add_argument("--assistant-is-bot", action="store_true",
                     help="the assistant side is the bot (a person-and-bot chat): its replies "
                          "are not evidence, as in a real chat (default: a second person)")
    rec.add_argument("--hypothetical", metavar="FILE", default=None,
                     help="recall also searches with the chat model's hypothetical line for"
                          " each question ([recall] hypothetical); the lines are kept in FILE"
                          " (JSON), so a rerun asks the model nothing again")
    rec.add_argument("--consolidate", action="store_true",
                     help="run a full consolidate + decay pass after ingesting, before asking")
    rec.add_argument("--lived", action="store_true",
                     help="replay the turns in time with the background memory jobs running "
                          "in the gaps (docs/living-memory.md); adds `storage` to the report")
    rec.add_argument("--db-url", type=_postgres_url, default=None, metavar="postgresql://…",
                     help="run on this PostgreSQL server (a fresh database per conversation, "
                          "dropped afterwards) instead of a temporary SQLite file")
    rec.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    rec.set_defaults(run=cmd_eval_recall, uses_model=True)
