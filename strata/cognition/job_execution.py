"""One run of one job for one person, once the cognition runner holds the person.

The gates first, in order: the person still exists and has been idle long enough (unless
forced or asked for), a failed run's retry time has come, the job's minimum interval has
passed. Then the job's inputs are read; when they have not moved since its last successful run
nothing happens (no run row, no model call). Otherwise the run is started, run once, and
recorded: ok with its cursor, an error with the next attempt backed off (`job_retry_minutes`,
doubling per consecutive failure up to `job_retry_max_minutes`), a spent budget as an error
that is not a failure, a cancelled run as cancelled. `strata.cognition.runner` decides which
persons and jobs and holds the person around this. May import `bot` and `memory`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from strata.cognition.backoff import retry_delay
from strata.cognition.connectors import ConnectorError
from strata.cognition.job_report import JobReport, held_back, skipped, waiting_retry
from strata.cognition.registry import AnyJob, JobContext
from strata.cognition.services import Services
from strata.core.config_sections import CognitionSettings
from strata.core.errors import BudgetExhaustedError, ModelError, WriteRefusedError
from strata.core.types import OwnerKind, Person

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobExecution:
    """Runs jobs for the runner `runner_id` (the id its run rows carry)."""

    services: Services
    runner_id: str

    @property
    def settings(self) -> CognitionSettings:
        return self.services.settings.cognition

    async def idle_for(self, person: Person, now: datetime) -> timedelta | None:
        """How long the person (or a shared room) has been quiet (None: never spoke)."""
        last = person.last_active_at
        if person.kind is OwnerKind.ROOM:
            last = await self.services.transcript.last_user_row_at(person.id)
        return None if last is None else now - last

    async def run(
        self, job: AnyJob, person: Person, *, force: bool, now: datetime | None, asked: bool,
    ) -> JobReport:
        """Run one job for one person (held by this runner) if it is due and has something
        new; record the run (`Runner.run_job` says when)."""
        s = self.services
        # Re-read: activity since the check started must stop jobs that have not started.
        fresh = await s.persons.get(person.id)
        if fresh is None:
            return skipped(job.name, person, "person is gone")
        person = fresh
        now = now or s.clock.now()
        gate = timedelta(minutes=self.settings.idle_minutes)
        held = held_back(job.name, person, now, await self.idle_for(person, now), gate,
                         force=force, asked=asked)
        if held is not None:
            return held
        cursor = await s.runs.cursor(job.name, person.id)
        failures = cursor.failures if cursor else 0
        waiting = waiting_retry(job.name, person, failures, cursor.retry_at if cursor else None,
                                now, force=force)
        if waiting is not None:
            return waiting
        ctx = JobContext(
            services=s,
            chat=s.chat,
            turns=s.processor,
            max_tokens=s.settings.llm.max_tokens,
            job=job.name,
            person=person,
            now=now,
            budget=self.settings.job_token_budget,
            previous=cursor.cursor if cursor else "",
            attempt=failures,
        )
        interval = job.min_interval(ctx)
        if not force and interval is not None:
            last = await s.runs.last_ok_started(job.name, person.id)
            if last is not None and now - last < interval:
                nxt = last + interval
                return skipped(job.name, person,
                               f"ran at {last:%Y-%m-%d %H:%M}; next after {nxt:%H:%M} UTC")
        return await self._execute(job, ctx, failures)

    async def _execute(self, job: AnyJob, ctx: JobContext, failures: int) -> JobReport:
        """Read the job's inputs and, if they moved, run it once and record the run."""
        s, person, now = self.services, ctx.person, ctx.now
        try:
            inputs = await job.inputs(ctx)
        except WriteRefusedError:
            raise  # the person was taken over: not this job's failure (`run_job`)
        except Exception as exc:  # task boundary: a job's failure must not stop the others
            log.exception("job %s for person %s: reading inputs failed", job.name, person.id)
            run_id = await s.runs.start(job.name, person.id, now, self.runner_id)
            await self._failed(run_id, failures, ctx, exc)
            return JobReport(job.name, person.name, True, "error", f"{type(exc).__name__}: {exc}")
        if inputs is None or inputs == ctx.previous:
            what = "nothing to work on" if inputs is None else "nothing new"
            await s.runs.checked(job.name, person.id, now, what)
            return skipped(job.name, person, what)
        ctx.inputs = inputs
        run_id = await s.runs.start(job.name, person.id, now, self.runner_id)
        try:
            outcome = await job.run(ctx)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await s.runs.finish(run_id, now=s.clock.now(), status="cancelled",
                                    tokens=ctx.tokens, error="cancelled at shutdown")
            raise
        except WriteRefusedError:
            raise
        except Exception as exc:  # task boundary: recorded and skipped, the others go on
            if isinstance(exc, ModelError | ConnectorError):
                # An endpoint or a source that is down or answered junk: expected, retried
                # later, one line.
                log.warning("job %s for person %s failed (run %d): %s", job.name, person.id,
                            run_id, exc)
            else:
                log.exception("job %s for person %s failed (run %d)", job.name, person.id,
                              run_id)
            await self._run_failed(ctx, run_id, failures, exc)
            return JobReport(job.name, person.name, True, "error",
                             f"{type(exc).__name__}: {exc}", ctx.tokens)
        await s.runs.finish(run_id, now=s.clock.now(), status="ok", result=outcome.summary,
                            tokens=ctx.tokens, cursor=outcome.cursor or inputs)
        return JobReport(job.name, person.name, True, "ok", outcome.summary, ctx.tokens,
                         outcome.details)

    async def _run_failed(self, ctx: JobContext, run_id: int, failures: int,
                          exc: Exception) -> None:
        """Record a run that raised."""
        if isinstance(exc, BudgetExhaustedError):
            # Not a failure of the job: what it did is kept (its finished turns are
            # reused), and the next check goes on with a fresh budget.
            await self.services.runs.finish(run_id, now=self.services.clock.now(),
                                            status="error", tokens=ctx.tokens,
                                            error=f"{type(exc).__name__}: {exc}")
        else:
            await self._failed(run_id, failures, ctx, exc)

    async def _failed(self, run_id: int, failures: int, ctx: JobContext,
                      exc: Exception) -> None:
        """Record a failed run and when the next attempt may start."""
        now = self.services.clock.now()
        wait = retry_delay(failures + 1, self.settings.job_retry_minutes,
                           self.settings.job_retry_max_minutes)
        await self.services.runs.finish(run_id, now=now, status="error", tokens=ctx.tokens,
                                        error=f"{type(exc).__name__}: {exc}",
                                        retry_at=now + wait)
