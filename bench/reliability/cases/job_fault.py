"""`job_fault`: one background job raises on every run.

Two identical worlds (same persons, same chat, same injected clock steps) run the nine jobs;
in one of them one job is swapped for a job that raises every time. The other eight jobs must
run, or skip, and end the same way for every person in every pass in both worlds, and the
failing job must back off: over N job checks it may run at most N/2 times, with gaps that
never shrink.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

from bench.reliability import harness
from bench.reliability.registry import CaseResult, Context
from bench.reliability.suite import SUITE
from strata.cognition.job_report import JobReport
from strata.cognition.jobs import default_registry
from strata.cognition.registry import BaseJob, Job, JobContext, JobOutcome
from strata.cognition.runner import Runner
from strata.core.clock import ManualClock
from tests.fakes.openai_server import FakeOpenAI

START = datetime.fromisoformat("2026-03-02T09:00:00+00:00")
# A connected service (a calendar, say) that is down: with no connector configured the real
# job has nothing to do, so the two worlds differ only by the failure.
FAILING = "connector_sync"
# One JSON answer that fits every job's schema (each finds nothing).
EMPTY = json.dumps({"facts": [], "patterns": [], "places": [], "queries": [], "findings": []})


class AlwaysRaises(BaseJob):
    """Stands in for a real job and fails on every run (a bug, a dead dependency)."""

    def __init__(self, real: Job) -> None:
        self.name = real.name
        self.description = real.description
        self.for_rooms = real.for_rooms
        self.attempts: list[tuple[int, datetime]] = []

    async def inputs(self, ctx: JobContext) -> str | None:
        return "always-something-new"

    async def run(self, ctx: JobContext) -> JobOutcome:
        self.attempts.append((ctx.person.id, ctx.now))
        raise RuntimeError("injected: this job fails on every run")


async def world(model: FakeOpenAI, db: Path, persons: int, checks: int,
                failing: AlwaysRaises | None) -> list[list[JobReport]]:
    clock = ManualClock(START)
    settings = harness.settings_for(model, db, STRATA_EPISODES_USE_MODEL="false")
    async with harness.app_for(settings, clock) as app:
        for p in range(persons):
            for i in range(4):
                msg = harness.inbound("console", f"person{p}", f"message {i} from person {p}: "
                                      f"I like walking my dog number {i}", clock.now())
                await app.processor.handle(msg)
                clock.advance(timedelta(minutes=1))
        await app.processor.drain()
        registry = default_registry()
        if failing is not None:
            registry.replace(failing)
        assert app.services is not None
        runner = Runner(app.services, registry)
        clock.advance(timedelta(hours=1))  # everyone idle: the jobs may run
        interval = timedelta(minutes=settings.cognition.job_interval_minutes)
        passes = []
        for _ in range(checks):
            passes.append(await runner.tick())
            clock.advance(interval)
        await app.processor.drain()
        return passes


def others(passes: list[list[JobReport]]) -> list[tuple[int, str, str, bool, str]]:
    """What the other jobs did, pass by pass: ran or not, and how it ended. (Their details
    may differ: in the control world the healthy job's output is more input for them.)"""
    return [(n, r.job, r.person, r.ran, r.status)
            for n, reports in enumerate(passes) for r in reports if r.job != FAILING]


@SUITE.case("job_fault", "one job raises on every run",
            "the other eight jobs and other persons unaffected; the failing one backs off")
async def job_fault(ctx: Context) -> CaseResult:
    persons, checks = (3, 16) if ctx.quick else (6, 36)
    model = harness.model_server()
    try:
        model.responder = lambda body: EMPTY
        control = await world(model, ctx.workdir / "control.db", persons, checks, None)
        failing = AlwaysRaises(default_registry().get(FAILING))
        faulty = await world(model, ctx.workdir / "faulty.db", persons, checks, failing)
    finally:
        model.stop()
    same = others(control) == others(faulty)
    ran_ok = sum(1 for *_, status in others(faulty) if status == "ok")
    diffs = [pair for pair in zip(others(control), others(faulty), strict=False)
             if pair[0] != pair[1]][:3]
    per_person = len(failing.attempts) / persons
    first = failing.attempts[0][0] if failing.attempts else None
    mine = [when for who, when in failing.attempts if who == first]
    gaps = [(b - a).total_seconds() / 60 for a, b in pairwise(mine)]
    backs_off = per_person <= checks / 2 and all(b >= a for a, b in pairwise(gaps))
    figure = (f"other 8 jobs x {persons} persons {'identical' if same else 'DIFFER'} "
              f"({ran_ok} ok runs); failing job ran {per_person:.0f} of {checks} checks "
              f"per person" + (f", gaps {', '.join(f'{g:.0f}' for g in gaps[:6])} min"
                               if gaps else ""))
    if not backs_off:
        figure += " (no backoff)"
    details: dict[str, Any] = {"persons": persons, "checks": checks, "ok_runs": ran_ok,
                               "failing_attempts": len(failing.attempts), "gaps_min": gaps,
                               "first_differences": [list(map(list, d)) for d in diffs]}
    return CaseResult("job_fault", figure, same and backs_off and ran_ok > 0, details=details)
