"""Truthfulness of everything the model writes into memory, with the real default model.

    python -m bench.truth                 # 5 people, 2 simulated weeks
    python -m bench.truth --quick         # 2 people (cases a and c), 1 week
    python -m bench.truth --case c        # only case c's person, up to its question
    python -m bench.truth --out FILE      # default bench/results/truth_<model>[_quick].json

The people of `bench.truth_people` (planted facts, habits and traps; generated from `--seed`)
talk to Strata through the turn processor `strata chat` uses, with the embedded default model
(one thread, e5 embedder) unless an endpoint is configured (STRATA_LLM_BASE_URL, ...). Each
simulated week every person has a session or two, days apart; after the week's last session the
clock moves two hours on and every job runs for every person, as `strata jobs run --job all
--force` does; research searches a local Wikipedia-like server
(`tests.fakes.web_sources`) so discoveries have pages to be checked against. Then every stored
item — facts, patterns, geo patterns, reflections, portrait sentences, continuity summaries,
episode and roll-up summaries, discoveries — is classed supported / unsupported / echo by
`bench.truth_classify`, and the planted facts' recall is measured twice: stored as a fact, and
brought back by turn-zero recall when the person asks the planted question.

The issue's runs are cases of the same run: (a) "ordinary" says three messages, then every job
runs; (b) four people share the memory and nothing of one may reach another; (c) "What is my
job?" is asked after the bot once answered it wrongly: recall must bring back the person's
line and the reply must carry it (`--case c` lives through that person's weeks alone, with the
jobs between the weeks but not after the last: a few minutes). The result file holds every
item with its class and reason; the table printed at the end is what docs/benchmarks.md
shows. Exit status 0 (the numbers are the result; the issue's targets are printed beside
them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.truth_judge import judge, message, table
from bench.truth_people import QUICK, Ask, Item, Person, WrongReply, people
from strata.app.compose import App
from strata.bot.embedded import model_endpoints
from strata.core.clock import ManualClock
from strata.core.config import Settings, default_db_path, load_settings
from strata.core.config_sections import DbSettings
from strata.core.types import NewRow, OwnerKind, Role
from strata.evaluation.recall import write_json
from tests.fakes.web_sources import WebSources

RESULTS = Path(__file__).parent / "results"
START = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)  # a Monday evening
SESSION_DAYS = 3  # a person's sessions in a week are this many days apart
PAGES = [
    {"key": "Swimming", "title": "Swimming",
     "excerpt": "Swimming is the self-propulsion of a person through water for recreation, "
                "sport, exercise or survival.",
     "description": "human activity in water"},
    {"key": "Cello", "title": "Cello",
     "excerpt": "The cello is a bowed string instrument of the violin family, tuned in fifths.",
     "description": "string instrument"},
    {"key": "Pharmacist", "title": "Pharmacist",
     "excerpt": "A pharmacist is a healthcare professional who prepares and dispenses "
                "medicines and advises patients on their safe use.",
     "description": "health professional"},
    {"key": "Running", "title": "Running",
     "excerpt": "Running is a method of terrestrial locomotion allowing humans to move "
                "rapidly on foot; it is a popular form of exercise.",
     "description": "gait of humans and animals"},
]


async def _say(app: App, clock: ManualClock, person: Person, text: str) -> str:
    clock.advance(seconds=40)
    result = await app.processor.handle(message(person, text, clock.now()))
    return result.reply if result is not None else ""


async def _wrong_reply(app: App, clock: ManualClock, person: Person, item: WrongReply) -> None:
    """The person's question and the bot's wrong answer, stored as that turn would store them
    (the after-turn steps included), so the case does not wait for the model to err."""
    clock.advance(seconds=40)
    now = clock.now()
    p, channel = await app.processor.resolve(message(person, item.question, now))
    turn = f"wrong-{person.key}-{int(now.timestamp())}"
    await app.transcript.append([
        NewRow(channel.id, p.id, now, channel.source, Role.USER, item.question, turn),
        NewRow(channel.id, None, now + timedelta(seconds=5), channel.source, Role.ASSISTANT,
               item.answer, turn)])
    await app.persons.mark_active(p.id, now)
    for hook in (app.row_indexer, app.cutter):
        if hook is not None:
            await hook(channel, p, turn)


async def _jobs(app: App, runs: Counter[str], reports: list[dict[str, Any]]) -> None:
    """`strata jobs run --job all --force` at the clock's time: every job, every owner."""
    runner = app.runner
    assert runner is not None
    await app.processor.drain()
    jobs = [j for j in runner.registry if j.name not in app.settings.cognition.disabled_jobs]
    for owner in await app.persons.all(None):
        for job in jobs:
            if owner.kind is OwnerKind.ROOM and not job.for_rooms:
                continue
            report = await runner.run_job(job, owner, force=True)
            runs[f"{job.name}:{report.status}"] += 1
            if report.ran:
                print(f"  {report.line()[:150]}", flush=True)
                reports.append({"at": app.clock.now().isoformat(), "job": report.job,
                                "owner": report.person, "status": report.status,
                                "detail": report.detail, **report.details})
    await app.processor.drain()


async def _session(app: App, clock: ManualClock, person: Person,
                   items: tuple[Item, ...]) -> list[dict[str, Any]]:
    """One session of one person; the checked questions' replies."""
    asks: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, WrongReply):
            await _wrong_reply(app, clock, person, item)
            continue
        text = item.question if isinstance(item, Ask) else item
        reply = await _say(app, clock, person, text)
        print(f"  {person.name}: {text[:60]!r} -> {reply[:70]!r}", flush=True)
        if isinstance(item, Ask):
            low = reply.lower()
            asks.append({"person": person.key, "question": item.question, "reply": reply,
                         "expect": list(item.expect),
                         "answered": all(e in low for e in item.expect)})
    return asks


async def live(app: App, clock: ManualClock, cast: list[Person],
               last_jobs: bool = True) -> dict[str, Any]:
    """Every person's sessions, week by week, with every job after each week (after the last
    only with `last_jobs`); the replies to the checked questions."""
    runs: Counter[str] = Counter()
    reports: list[dict[str, Any]] = []  # what each job run did (its refusals, when counted)
    asks: list[dict[str, Any]] = []
    assert app.runner is not None
    await app.runner.start_up()
    weeks = max(len(p.weeks) for p in cast)
    for w in range(weeks):
        sessions = max(len(p.weeks[w]) for p in cast if w < len(p.weeks))
        for s in range(sessions):
            clock.set(START + timedelta(days=7 * w + SESSION_DAYS * s))
            print(f"week {w + 1}, session {s + 1} ({clock.now():%a %d %b})", flush=True)
            for person in cast:
                if w < len(person.weeks) and s < len(person.weeks[w]):
                    asks += await _session(app, clock, person, person.weeks[w][s])
        if w == weeks - 1 and not last_jobs:
            break
        # The week's jobs, once everyone has been quiet for two hours.
        clock.advance(hours=2)
        print(f"jobs after week {w + 1} ({clock.now():%a %d %b %H:%M})", flush=True)
        await _jobs(app, runs, reports)
    return {"job_runs": dict(sorted(runs.items())), "job_reports": reports, "asks": asks}


def with_pages(settings: Settings, pages_url: str) -> Settings:
    """Research searches only the local pages server (a Wikipedia-like search API)."""
    cognition = settings.cognition.model_copy(update={
        "wikipedia_url": pages_url, "searxng_url": "", "feeds": ()})
    return settings.model_copy(update={"cognition": cognition})


async def run(seed: int, weeks: int, only: tuple[str, ...], keep_db: Path | None,
              rejudge: bool = False, last_jobs: bool = True) -> dict[str, Any]:
    """Live through the cast and judge (or, with `rejudge`, judge again the database and
    replies a run kept in `keep_db`)."""
    settings = load_settings(None)
    cache = default_db_path(os.environ).parent / "models"
    cast = people(seed, weeks, only)
    pages = WebSources()
    pages.pages = {"": PAGES}  # every query finds the same few pages
    await pages.start()
    try:
        async with model_endpoints(settings, cache_dir=cache, notice=print) as effective:
            with tempfile.TemporaryDirectory(prefix="strata-truth-") as tmp:
                folder = keep_db or Path(tmp)
                folder.mkdir(parents=True, exist_ok=True)
                eff = with_pages(effective, pages.base_url).model_copy(
                    update={"db": DbSettings(path=str(folder / "truth.db"))})
                clock = ManualClock(START)
                app = await App.create(eff, clock=clock)
                try:
                    if rejudge:
                        lived = json.loads((folder / "lived.json").read_text(encoding="utf-8"))
                        clock.set(START + timedelta(days=7 * weeks))
                    else:
                        started = time.monotonic()
                        lived = await live(app, clock, cast, last_jobs)
                        lived["seconds"] = round(time.monotonic() - started, 1)
                        # Kept beside the database, so `--rejudge` can judge it again.
                        write_json(folder / "lived.json", lived)
                    result = await judge(app, cast, PAGES)
                finally:
                    await app.close()
            result["lived"] = lived
            result["endpoint"] = {"model": eff.llm.model, "base_url": eff.llm.base_url,
                                  "embedder": eff.embed.model}
    finally:
        await pages.stop()
    result["seed"], result["weeks"] = seed, weeks
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="one simulated week, only the people of cases a and c (about 5 min)")
    ap.add_argument("--weeks", type=int, default=None, help="simulated weeks (default 2)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--case", choices=["c"], default=None,
                    help="only the people of this case, and no jobs after the last week")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--keep-db", type=Path, default=None,
                    help="keep the run's database in this folder (default: a temporary one)")
    ap.add_argument("--rejudge", action="store_true",
                    help="judge again the run kept in --keep-db (same --seed, --weeks, "
                         "--quick), without living through it again")
    args = ap.parse_args(argv)
    weeks = args.weeks or (1 if args.quick else 2)
    started = time.monotonic()
    if args.rejudge and args.keep_db is None:
        ap.error("--rejudge needs --keep-db FOLDER (the kept run)")
    only = QUICK if args.quick else ()
    if args.case:
        only = tuple(p.talk for p in people(args.seed, weeks) if args.case in p.cases)
    result = asyncio.run(run(args.seed, weeks, only, args.keep_db, args.rejudge,
                             last_jobs=args.case is None))
    # With --rejudge this is the judging alone; the living's time is `lived.seconds`.
    result["seconds"] = round(time.monotonic() - started, 1)
    result["rejudged"] = args.rejudge
    result["load_average"] = os.getloadavg()
    result["command"] = "python -m bench.truth " + shlex.join(argv or sys.argv[1:])
    model = result["endpoint"]["model"].replace("/", "_")
    tag = ("_quick" if args.quick else "") + (f"_case_{args.case}" if args.case else "")
    out = args.out or RESULTS / f"truth_{model}{tag}.json"
    write_json(out, result)
    print(table(result))
    print(f"written {out} in {result['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
