"""`strata jobs`: see and run the background jobs. `jobs status` shows each job's last run,
result, tokens and errors per person, and for a failing job its failures in a row and when it
is retried; with several processes on one database (`strata run`, `strata worker`), also which
of them are alive and which holds each person's jobs now. `jobs run --job NAME|all` runs jobs
once, now (or as if at `--now`), through the same runner and job registry as `strata run`, and
prints what each did. A named job runs past the idle gate (someone asked for it); `--job all`
honours the gate, and `--force` also skips the jobs' minimum intervals and a failing job's
backoff. Below the table, what the grounding rule refused to store, per person, layer and
reason (`--json`: each job row's `refused`, for the layers that job writes).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from strata.app.cli.core import _person_or_fail, subgroup
from strata.app.cli.progress import progress
from strata.app.compose import App
from strata.app.memory_wiring import Repos, open_db
from strata.bot.visible import say
from strata.cognition.jobs import default_registry
from strata.core.clock import ManualClock, SystemClock, from_iso
from strata.core.config import Settings
from strata.core.errors import StrataError
from strata.core.identity import holder_gone
from strata.core.ports import Clock
from strata.core.types import OwnerKind
from strata.memory.checks import grounding as g
from strata.memory.coordination.jobruns import JobCursor, JobSummary
from strata.memory.store.refusals import RefusalCount


def _clock(now: str | None) -> Clock:
    if not now:
        return SystemClock()
    try:
        return ManualClock(from_iso(now))
    except ValueError:
        raise StrataError(f"--now {now!r} is not an ISO time like 2026-03-01T12:00:00Z") from None


async def cmd_jobs_run(args: argparse.Namespace, settings: Settings) -> int:
    app = await App.create(settings, clock=_clock(args.now))
    try:
        runner = app.runner
        assert runner is not None
        if args.job == "all":
            jobs = [j for j in runner.registry if j.name not in settings.cognition.disabled_jobs]
        else:
            jobs = [runner.registry.get(args.job)]
        if args.user:
            owners = [await _person_or_fail(app.persons, args.user)]
        else:
            owners = await app.persons.all(None)  # people and shared rooms' scopes
        await runner.start_up()
        failed = False
        out: list[dict[str, Any]] = []
        todo = [(owner, job) for owner in owners for job in jobs
                if owner.kind is not OwnerKind.ROOM or job.for_rooms]
        async with progress("jobs run", len(todo)) as shown:
            for owner, job in todo:
                shown.step(f"{job.name} for {owner.name}")
                # Naming one job is a request to run it now: past the idle gate.
                report = await runner.run_job(job, owner, force=args.force,
                                              asked=args.job != "all")
                failed = failed or report.status == "error"
                if args.json:
                    out.append({"job": report.job, "owner": report.person, "ran": report.ran,
                                "status": report.status, "detail": report.detail,
                                "tokens": report.tokens, **report.details})
                else:
                    shown.clear()
                    say(report.line())
            await app.processor.drain()
    finally:
        await app.close()
    if args.json:
        say(json.dumps(out, indent=2, ensure_ascii=False))
    return 1 if failed else 0


async def cmd_jobs_status(args: argparse.Namespace, settings: Settings) -> int:
    now = _clock(args.now).now()
    db = await open_db(settings, read_only=True)
    try:
        repos = Repos.over(db)
        persons, runs = repos.persons, repos.runs
        if args.user:
            people = [await _person_or_fail(persons, args.user)]
        else:
            people = await persons.all()
        names = default_registry().names()
        # A runner of this host whose process is gone (killed, crashed) keeps its lease
        # until it runs out: it is not called alive, and holds nobody meanwhile.
        leased = await repos.leases.live(now)
        runners = [r for r in leased if not holder_gone(r.id)]
        dead = [r for r in leased if holder_gone(r.id)]
        runner_names = {r.id: r.name for r in runners}
        holders = {owner: holder for owner, holder in (await repos.leases.holders(now)).items()
                   if not holder_gone(holder)}
        out: list[dict[str, Any]] = []
        refused: list[tuple[str, RefusalCount]] = []
        for person in people:
            holder = holders.get(person.id)
            held_by = runner_names.get(holder, holder) if holder else None
            summary = {row.job: row for row in await runs.summary(person.id)}
            counts = await repos.refusals.for_owner(person.id)
            refused += [(person.name, c) for c in counts]
            for job in names + sorted(set(summary) - set(names)):
                cursor = await runs.cursor(job, person.id)
                out.append(_job_status(person.name, job, held_by, summary.get(job), cursor)
                           | {"refused": _refused_by(job, counts)})
    finally:
        await db.close()
    if args.json:
        say(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    _say_runners(runners, dead)
    if not out:
        say("no people yet: nobody has talked to Strata in this database")
        return 0
    _say_jobs(out)
    _say_refused(refused)
    return 0


def _say_runners(runners: list[Any], dead: list[Any]) -> None:
    if runners:
        say("runners: " + ", ".join(
            f"{r.name} (since {_minute(r.started_at.isoformat())})" for r in runners))
    else:
        say("runners: none alive (no `strata run` or `strata worker` holds a lease on this"
              " database now)")
    if dead:
        say("presumed dead: " + ", ".join(
            f"{r.name} (process {r.id.split(':')[1]} no longer runs on this host; its lease "
            f"ends {_minute(r.lease_until.isoformat())})" for r in dead))


def _say_jobs(out: list[dict[str, Any]]) -> None:
    say(f"{'person':<12} {'job':<13} {'runs':>4} {'err':>3} {'tokens':>6}  {'last run':<16} "
          f"{'status':<11} {'fails':>5} {'next retry':<16} {'held by':<14} result")
    for r in out:
        when = _minute(r["last_run"]) if r["last_run"] else "never"
        retry = _minute(r["next_retry"]) if r["next_retry"] else "-"
        result = (r["last_result"] or r["last_check"] or "")[:70]
        say(f"{r['person'][:12]:<12} {r['job']:<13} {r['runs']:>4} {r['errors']:>3} "
              f"{r['tokens']:>6}  {when:<16} {r['last_status'] or '-':<11} "
              f"{r['failures']:>5} {retry:<16} {(r['held_by'] or '-')[:14]:<14} {result}")


def _say_refused(refused: list[tuple[str, RefusalCount]]) -> None:
    if refused:
        say("\nrefused by the grounding rule (nothing stored; the text is logged at DEBUG):")
        say(f"{'person':<12} {'layer':<12} {'count':>5}  {'last':<16} reason")
        for name, c in refused:
            say(f"{name[:12]:<12} {c.layer:<12} {c.count:>5}  "
                f"{_minute(c.last_at.isoformat()):<16} {c.reason}")


# The job (a `jobs status` row) that writes each grounding layer.
LAYER_JOBS = {g.FACTS: "extract", g.PATTERNS: "patterns", g.PLACES: "geo",
              g.REFLECTIONS: "dmn", g.PORTRAIT: "synthesis", g.DISCOVERIES: "research",
              g.CONTINUITY: "compact:turn", g.EPISODES: "consolidate", g.ROLLUP: "consolidate"}


def _refused_by(job: str, counts: list[RefusalCount]) -> dict[str, int]:
    """A job row's refusals: "layer: reason" → count, for the layers that job writes."""
    return {f"{c.layer}: {c.reason}": c.count for c in counts if LAYER_JOBS.get(c.layer) == job}


def _job_status(person: str, job: str, held_by: str | None, row: JobSummary | None,
                cursor: JobCursor | None) -> dict[str, Any]:
    """One line of `strata jobs status`: a job's runs (`row`, from the run summary) and its
    cursor, for one person."""
    last = row.last if row else None
    return {
        "person": person,
        "job": job,
        "held_by": held_by,
        "runs": row.runs if row else 0,
        "errors": row.errors if row else 0,
        "tokens": row.tokens if row else 0,
        "last_run": last.started_at.isoformat() if last else None,
        "last_status": last.status if last else None,
        "last_result": (last.error or last.result) if last else None,
        "last_checked": cursor.last_checked_at.isoformat()
        if cursor and cursor.last_checked_at else None,
        "last_check": cursor.last_check if cursor else None,
        "failures": cursor.failures if cursor else 0,
        "next_retry": cursor.retry_at.isoformat()
        if cursor and cursor.retry_at else None,
    }


def _minute(iso: str) -> str:
    """An ISO time to the minute, for a table: 2026-03-01 12:00."""
    return iso[:16].replace("T", " ")


def register(sub: Any) -> None:
    jobs = subgroup(sub, "jobs", "background jobs: status, run now")
    status = jobs.add_parser("status", help="last run, result, tokens, errors per job and person")
    status.add_argument("--user")
    status.add_argument("--json", action="store_true")
    status.add_argument("--now", help="ISO time to judge the runners' leases by (default: now)")
    status.set_defaults(run=cmd_jobs_status)
    names = default_registry().names()
    run = jobs.add_parser("run", help="run background jobs once, now")
    run.add_argument("--job", required=True, choices=[*names, "all"], metavar="NAME|all",
                     help="one of: " + ", ".join(names) + ", or all")
    run.add_argument("--user", help="only this person (default: everyone)")
    run.add_argument("--now", help="run as if at this ISO time (e.g. 2026-01-05T09:00Z)")
    run.add_argument("--force", action="store_true",
                     help="also ignore the idle gate (for --job all) and the jobs' minimum "
                     "intervals")
    run.add_argument("--json", action="store_true", help="print the reports as JSON")
    run.set_defaults(run=cmd_jobs_run, uses_model=True)
