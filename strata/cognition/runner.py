"""The cognition runner: one asyncio task owned by the app, on an injected clock.

Shaped like discord.py's `ext.tasks` loop: `start()` creates the task, `stop()` cancels it and
waits, `is_running()` tells. Every tick (default a minute) it delivers due reminders and
scheduled prompts; every `job_interval_minutes` it checks each person's jobs. A job runs only
when the person has been idle ≥ `idle_minutes` (activity = their own inbound turns, re-read
before each job so new activity stops the jobs still waiting), when its minimum interval has
passed, and when its input watermark moved since its last successful run (otherwise nothing
happens: no run row, no model call). Each run is wrapped: an exception is logged with its
context, recorded, and skipped; the other jobs and persons go on; cancellation propagates. A
failed run backs off like `ext.tasks`' reconnect loop: the next attempt waits
`job_retry_minutes`, doubling per consecutive failure up to `job_retry_max_minutes`, and is a
new background turn (the failed answer is never replayed). One run, its gates and its record are
`strata.cognition.job_execution`; this module decides who and when, and holds the person.

Several processes may share one database (`strata run --no-jobs` beside one `strata worker`, or
several full `strata run`): each runner has an identity and a lease in the database
(`strata.memory.coordination.claims`), renewed every tick and by a heartbeat beside the loop. Before
it looks at a person's jobs a runner claims that person (one statement; the winner works through all
of the person's jobs one after another, as a single process does); a person held by another live
runner is skipped. A runner that dies leaves claims, open runs and claimed reminders that
expire with its lease; any live runner then interrupts the runs and frees the reminders, and
the next pass claims the person. A runner stalled past its lease (a paused machine) may lose
the person to another runner mid-job: each run is fenced (`strata.cognition.holds`), so its
writes from then on are refused and its run is reported `lost`, not recorded. A runner's id is
its process's identity (`strata.core.identity`, the one its channel leases carry): a runner
whose process is gone from this host is retired at once by any runner's recovery, and a runner
starting under the name of one that stopped (the same host:pid, or `cognition.runner_name`)
frees that one's claims at once.

Tests drive `tick()` / `check_jobs()` / `run_job()` directly after moving a `ManualClock`.
May import `bot` and `memory`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta

from strata.cognition.holds import Holds
from strata.cognition.job_execution import JobExecution
from strata.cognition.job_report import JobReport
from strata.cognition.registry import AnyJob, JobRegistry
from strata.cognition.reminder_delivery import deliver_due
from strata.cognition.services import Services
from strata.core.config_sections import CognitionSettings
from strata.core.errors import ConfigError, WriteRefusedError
from strata.core.identity import ProcessIdentity, this_process
from strata.core.tasks import cancel_and_wait
from strata.core.types import OwnerKind, Person

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]


class Runner:
    def __init__(
        self,
        services: Services,
        registry: JobRegistry,
        *,
        sleep: Sleep = asyncio.sleep,
        name: str | None = None,
        jobs: bool | None = None,
        reminders: bool = True,
        identity: ProcessIdentity | None = None,
    ) -> None:
        """`name`: the runner's stable name (default `cognition.runner_name`, else host:pid);
        `identity`: the process it runs in (default this one's; tests simulating several
        processes in one pass their own);
        `jobs`: run the background jobs (default `strata.cognition.jobs`); `reminders`: deliver
        reminders and scheduled prompts."""
        self.services = services
        self.registry = registry
        names = registry.names()
        unknown = [n for n in services.settings.cognition.disabled_jobs if n not in names]
        if unknown:
            raise ConfigError(
                f"config key cognition.disabled_jobs: no job called {unknown[0]!r}; the jobs "
                f"are: {', '.join(names)}"
            )
        self._sleep = sleep
        identity = identity or this_process()
        self.name = name or services.settings.cognition.runner_name or identity.name
        # This life of the process: a restart under the same name is a new id.
        self.id = identity.id
        self.lease = timedelta(seconds=services.settings.cognition.runner_lease_seconds)
        self.jobs = services.settings.cognition.jobs if jobs is None else jobs
        self.reminders = reminders
        self.holds = Holds(services.leases, services.persons, services.runs, services.clock,
                           self.id)
        self.execution = JobExecution(services, self.id)
        self._beat_task: asyncio.Task[None] | None = None
        self._task: asyncio.Task[None] | None = None
        # The loop's job check runs beside it, so a long pass never holds up a reminder.
        self._jobs_task: asyncio.Task[None] | None = None
        self._next_jobs_at: datetime | None = None
        self._started = False

    # -- the loop -------------------------------------------------------------------------------

    @property
    def settings(self) -> CognitionSettings:
        return self.services.settings.cognition

    def start(self) -> asyncio.Task[None]:
        """Start the loop as a task of the running event loop (once)."""
        if self._task is not None and not self._task.done():
            raise RuntimeError("the cognition runner is already running")
        self._task = asyncio.create_task(self._loop(), name="strata-cognition")
        return self._task

    def is_running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        """Cancel the loop and wait for it; a job in flight is cancelled (and redone later).
        The runner then retires: its claims are free for the other processes at once."""
        for task in (self._task, self._jobs_task, self._beat_task):
            if task is not None:
                await cancel_and_wait(task)
        self._task = self._jobs_task = self._beat_task = None
        if self._started:
            self._started = False
            with contextlib.suppress(Exception):  # shutdown: a lost row only expires later
                await self.services.leases.retire(self.id, self.services.clock.now())

    async def _loop(self) -> None:
        await self.start_up()
        self._beat_task = asyncio.create_task(self._beat(), name="strata-cognition-lease")
        while True:
            try:
                await self.tick(wait=False)
            except asyncio.CancelledError:
                raise
            except Exception:  # task boundary: one bad tick must not end the runner
                log.exception("cognition tick failed")
            await self._sleep(self.settings.tick_seconds)

    async def _beat(self) -> None:
        """Renew the lease beside the loop, so a tick held up by a long delivery never lets
        it run out. Real time (not the injected sleep): a lease is about this process being
        alive, and tests renew it by ticking."""
        while True:
            await asyncio.sleep(self.lease.total_seconds() / 4)
            try:
                await self.heartbeat()
            except asyncio.CancelledError:
                raise
            except Exception:  # task boundary: the next beat (or tick) tries again
                log.warning("renewing the runner lease failed", exc_info=True)

    async def start_up(self) -> None:
        """Register this runner, then recover what stopped runners left (see `recover`)."""
        if self._started:
            return
        now = self.services.clock.now()
        forgotten = await self.services.leases.register(self.id, self.name, now, self.lease)
        self._started = True
        if forgotten:
            log.info("runner %s: a previous run under this name stopped; its claims are free",
                     self.name)
        await self.recover(now)

    async def heartbeat(self) -> None:
        """Renew this runner's lease (every tick, and beside the loop)."""
        await self.services.leases.heartbeat(self.id, self.name, self.services.clock.now(),
                                             self.lease)

    async def recover(self, now: datetime) -> tuple[int, int]:
        """Close the open runs and free the claimed reminders of runners that are gone (their
        lease ran out, or their process is gone from this host): never those of a live
        process, never this runner's own."""
        dead = await self.services.leases.retire_dead(now)
        if dead:
            log.info("runners %s: their processes are gone; their claims are free",
                     ", ".join(dead))
        stale = await self.services.runs.interrupt_stale(now, self.id)
        released = await self.services.reminders.release_stale_claims(now, self.id)
        if stale or released:
            log.info("recovered %d interrupted job runs and %d claimed reminders", stale, released)
        return stale, released

    async def tick(self, *, wait: bool = True) -> list[JobReport]:
        """Deliver what is due; check the jobs when their interval has come round.

        `wait=False` (the loop) runs the job check as a task beside the loop, and starts none
        while the previous one is still going; `wait=True` (tests, one-off runs) awaits it.
        """
        await self.start_up()
        now = self.services.clock.now()
        await self.heartbeat()
        await self.recover(now)
        if self.reminders:
            await deliver_due(self.services, now, runner=self.id)
        if not self.jobs:
            return []
        if self._next_jobs_at is not None and now < self._next_jobs_at:
            return []
        if not wait and self._jobs_task is not None and not self._jobs_task.done():
            return []  # the previous check is still running: its persons are being served
        self._next_jobs_at = now + timedelta(minutes=self.settings.job_interval_minutes)
        if wait:
            return await self.check_jobs()
        self._jobs_task = asyncio.create_task(self._check_in_background(),
                                              name="strata-cognition-jobs")
        return []

    async def _check_in_background(self) -> None:
        try:
            await self.check_jobs()
        except asyncio.CancelledError:
            raise
        except Exception:  # task boundary: the next interval checks again
            log.exception("cognition job check failed")

    # -- jobs -----------------------------------------------------------------------------------

    async def check_jobs(self, persons: list[Person] | None = None) -> list[JobReport]:
        """Every enabled job for every person (and the room jobs for every shared room's
        memory scope), or for `persons`, one after another."""
        reports = []
        owners = persons if persons is not None else await self.services.persons.all(None)
        for person in owners:
            jobs = [job for job in self.registry if job.name not in self.settings.disabled_jobs
                    and (person.kind is not OwnerKind.ROOM or job.for_rooms)]
            async with self.claimed(person) as holder:
                for i, job in enumerate(jobs):
                    # Between two jobs: still ours? A process stalled past its lease (a paused
                    # machine) has lost the person to another and must stop here.
                    if holder is None and i:
                        holder = await self.holds.again(person)
                    if holder is not None:
                        reports.append(JobReport(job.name, person.name, False, "skipped",
                                                 f"another process ({holder}) has them"))
                    else:
                        reports.append(await self.run_job(job, person))
        log.info("runner %s: job check done: %d owners, %d runs, %d held by other processes",
                 self.id, len(owners), sum(r.ran for r in reports),
                 sum(r.detail.startswith("another process") for r in reports))
        return reports

    @contextlib.asynccontextmanager
    async def claimed(self, person: Person) -> AsyncIterator[str | None]:
        """Hold the person's jobs for this runner while the block runs: yields None when
        held, else who holds them (another live runner). Nested holds share one claim
        (`strata.cognition.holds`)."""
        await self.start_up()
        async with self.holds.hold(person) as holder:
            yield holder

    async def run_job(
        self, job: AnyJob, person: Person, *, force: bool = False, now: datetime | None = None,
        asked: bool = False,
    ) -> JobReport:
        """Run one job for one person if it is due and has something new; record the run.

        `force` skips the idle gate and the job's minimum interval (never the watermark check:
        a job with nothing new has nothing to do). `asked` (someone named this job) skips only
        the idle gate: the gate protects a person from background work, not from a request.
        The person is claimed for this runner around the run (`claimed`): while another
        process has them, nothing runs here. The run is fenced: if another process takes the
        person over meanwhile (this one stalled past its lease), every write the run makes
        from then on is refused, and the run is reported `lost` and not recorded.
        """
        async with self.claimed(person) as holder:
            if holder is not None:
                return JobReport(job.name, person.name, False, "skipped",
                                 f"another process ({holder}) has this person's jobs")
            try:
                with self.holds.fenced(person):
                    return await self.execution.run(job, person, force=force, now=now,
                                                    asked=asked)
            except WriteRefusedError:
                return await self.holds.lost(job.name, person)
