"""The persons one cognition runner holds, and the fence each of its claims carries.

Before a runner works on a person's jobs it claims the person (`RunnerLeases.claim`: one
statement, then a read of the claim's token); nested holds in the same runner (a `strata jobs
run` during a pass) share the one claim. The claim's fence token is kept here for as long as
the hold lasts: a job runs inside `fenced`, so every write it makes checks, in the write's own
transaction, that the person is still this runner's under that token. A runner that stalled
past its lease while another took the person over (a paused machine, a clock that jumped) thus
writes nothing more, however far into the job it was. May import `memory`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager

from strata.cognition.job_report import JobReport
from strata.core.ports import Clock
from strata.core.types import Person
from strata.memory.coordination.claims import RunnerLeases
from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.store.persons import PersonRepo

log = logging.getLogger(__name__)


class Holds:
    def __init__(self, leases: RunnerLeases, persons: PersonRepo, runs: JobRunRepo,
                 clock: Clock, runner_id: str) -> None:
        self.leases = leases
        self.persons = persons
        self.runs = runs
        self.clock = clock
        self.runner = runner_id
        self._count: dict[int, int] = {}  # person id -> nested holds
        self._fences: dict[int, str] = {}  # person id -> the fence of this runner's claim

    @contextlib.asynccontextmanager
    async def hold(self, person: Person) -> AsyncIterator[str | None]:
        """Hold the person's jobs while the block runs: yields None when held (or when the
        person is gone: nothing to hold), else who holds them (another live runner)."""
        first = self._count.get(person.id, 0) == 0
        if first:
            fence = await self.leases.claim(person.id, self.runner, self.clock.now())
            if fence is None:
                holder = await self.leases.holder(person.id, self.clock.now())
                if holder is None and await self.persons.get(person.id) is None:
                    yield None  # the run finds the person gone
                    return
                yield holder or "a process that just finished"
                return
            self._fences[person.id] = fence
        self._count[person.id] = self._count.get(person.id, 0) + 1
        try:
            yield None
        finally:
            self._count[person.id] -= 1
            if self._count[person.id] == 0:
                del self._count[person.id]
                self._fences.pop(person.id, None)
                # Shielded: a cancelled pass (shutdown) still gives the person back.
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.leases.release(person.id, self.runner))

    async def again(self, person: Person) -> str | None:
        """Between two jobs of a hold: None while the person is still this runner's (or is
        again, with a new fence, if another runner took and gave them back), else who holds
        them now. A runner stalled past its lease stops here."""
        fence = await self.leases.claim(person.id, self.runner, self.clock.now())
        if fence is None:
            return await self.leases.holder(person.id, self.clock.now()) or "a process"
        self._fences[person.id] = fence
        return None

    def fenced(self, person: Person) -> AbstractContextManager[None]:
        """Every write of the current task in the block is refused unless this runner's claim
        on the person still stands (`RunnerLeases.fenced`). Nothing to fence when the person
        was gone at the claim: the run finds them gone and writes nothing."""
        fence = self._fences.get(person.id)
        if fence is None:
            return contextlib.nullcontext()
        return self.leases.fenced(person.id, self.runner, fence)

    async def lost(self, job: str, person: Person) -> JobReport:
        """A fenced run's write was refused (`WriteRefusedError`): another process took the
        person over while this runner was inside `job`. What the job wrote before stays (it
        held the person then), nothing after was written, and the run this runner opened is
        closed as interrupted, moving no cursor: the new holder's run is the one recorded."""
        now = self.clock.now()
        holder = await self.leases.holder(person.id, now)
        await self.runs.abandon(job, person.id, self.runner, now)
        log.warning("runner %s lost person %s to %s during job %s: its writes since were "
                    "refused and its run is not recorded", self.runner, person.id,
                    holder or "another process", job)
        who = f"another process ({holder})" if holder else "another process, finished since"
        return JobReport(job, person.name, True, "lost",
                         f"lost to {who} mid-run: nothing more was written and the run is "
                         "not recorded")
