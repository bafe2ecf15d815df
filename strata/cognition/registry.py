"""The job registry and what a job sees: the one list of background jobs that both the runner
and `strata jobs run` use.

A job has a `name`, an `inputs(ctx)` that cheaply computes its input watermark (None: nothing
to work on at all), and a `run(ctx)` that does the work and returns a `JobOutcome`. The runner
compares the watermark with the job's cursor and calls `run` only when it changed, so a job
with nothing new makes no model call. Model work goes through `ctx.turn(...)`: a background
turn of the one turn processor, idempotent per job, person and input watermark, and counted
against the run's token budget.

A job sees its services as `ctx.services`, typed by the job's own Protocol (e.g.
`ConsolidatePorts`): the repositories and ports it uses, nothing else, and never the database.
The runner hands every job the one `Services` built by the composition root, which satisfies
all of them; mypy holds each job to what its Protocol names. May import `bot` and `memory`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from strata.bot.background import BackgroundResult
from strata.bot.metered_chat import MeteredChat
from strata.cognition.services import Services
from strata.core.errors import BudgetExhaustedError, StrataError
from strata.core.ports import ChatModel
from strata.core.types import Person

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """What a run did, in one line for `strata jobs status`; `cursor` overrides the watermark
    the run started from (for jobs that only got through part of their input)."""

    summary: str
    cursor: str | None = None
    details: dict[str, Any] = field(default_factory=dict)  # for `strata jobs run --json`


class BackgroundTurns(Protocol):
    """The turn processor's background turns
    (`strata.bot.turns.TurnProcessor.handle_background`)."""

    async def handle_background(
        self,
        person: Person,
        source: str,
        prompt: str,
        *,
        turn_id: str | None = None,
        instructions: str | None = None,
        history: bool = True,
        tools: bool = False,
        max_tokens: int | None = None,
        schema: type[BaseModel] | None = None,
    ) -> BackgroundResult: ...


# What a job's `ctx.services` is typed as: the job's own Protocol of ports. Covariant, so a
# context over the full `Services` is a context over any Protocol that `Services` satisfies.
P = TypeVar("P", covariant=True)
# A job over ports S accepts any context whose services satisfy S.
S = TypeVar("S", contravariant=True)


@dataclass
class JobContext(Generic[P]):
    services: P
    chat: ChatModel  # the model outside turns (`model()`), metered per run
    turns: BackgroundTurns  # background turns of the one turn processor (`turn()`)
    max_tokens: int  # the most one background turn may ask for
    job: str
    person: Person
    now: datetime
    budget: int
    inputs: str = ""
    previous: str = ""  # the cursor of the last successful run ("" for never)
    attempt: int = 0  # failed runs since the last successful one
    tokens: int = 0
    scratch: dict[str, Any] = field(default_factory=dict)  # inputs() → run() hand-over

    @property
    def remaining(self) -> int:
        return max(self.budget - self.tokens, 0)

    def model(self) -> ChatModel:
        """The services' model on this run's budget: every call's tokens count in
        `tokens` (and so in the run's row), and a call after the budget is spent raises
        `BudgetExhaustedError`. For jobs whose model work is not a turn (consolidate, through
        `strata.bot.writers`: only cognition calls it, memory never does)."""
        return MeteredChat(self.chat, self.charge, lambda: self.remaining)

    async def charge(self, tokens: int) -> None:
        """Count `tokens` against this run's budget."""
        self.tokens += tokens

    def turn_id(self, step: str = "main") -> str:
        base = f"job:{self.job}:{self.person.id}:{self.inputs}:{step}"
        # A retry after a failed run is a new turn: the failed answer is never replayed.
        return f"{base}:retry{self.attempt}" if self.attempt else base

    async def turn(
        self,
        source: str,
        prompt: str,
        *,
        instructions: str,
        step: str = "main",
        history: bool = False,
        schema: type[BaseModel] | None = None,
    ) -> str:
        """A background turn on the person's `source` channel; returns the stored reply.

        The turn id is fixed by job, person, input watermark, `step` and the attempt, so a run
        redone after a restart reuses a turn that had finished instead of calling the model
        twice, while a retry after a failed run asks the model again.
        """
        if self.remaining <= 0:
            raise BudgetExhaustedError(f"token budget of {self.budget} used up")
        result = await self.turns.handle_background(
            self.person,
            source,
            prompt,
            turn_id=self.turn_id(step),
            instructions=instructions,
            history=history,
            max_tokens=min(self.max_tokens, self.remaining),
            schema=schema,
        )
        self.tokens += result.tokens
        return result.reply


class Job(Protocol[S]):
    name: str
    description: str
    for_rooms: bool  # also runs for shared rooms' memory scopes (not only for persons)

    def min_interval(self, ctx: JobContext[S]) -> timedelta | None:
        """At most one successful run per this interval (None: no limit)."""
        ...

    async def inputs(self, ctx: JobContext[S]) -> str | None: ...

    async def run(self, ctx: JobContext[S]) -> JobOutcome: ...


# What the registry holds: jobs whose ports the one `Services` provides (mypy checks each
# job's Protocol against `Services` where the list is built, in `strata.cognition.jobs.all_jobs`).
AnyJob = Job[Services]


class BaseJob:
    """Defaults for jobs: no interval limit."""

    name = ""
    description = ""
    for_rooms = False

    def min_interval(self, ctx: JobContext[Any]) -> timedelta | None:
        return None


class JobRegistry:
    """Jobs by name, in the order the runner checks them."""

    def __init__(self, jobs: list[AnyJob] | None = None) -> None:
        self._jobs: dict[str, AnyJob] = {}
        for job in jobs or []:
            self.add(job)

    def add(self, job: AnyJob) -> None:
        if job.name in self._jobs:
            raise ValueError(f"job {job.name!r} is registered twice")
        self._jobs[job.name] = job

    def replace(self, job: AnyJob) -> None:
        if job.name not in self._jobs:
            raise ValueError(f"no job {job.name!r} to replace")
        self._jobs[job.name] = job

    def get(self, name: str) -> AnyJob:
        try:
            return self._jobs[name]
        except KeyError:
            raise StrataError(
                f"no job called {name!r}; the jobs are: {', '.join(self._jobs)}"
            ) from None

    def names(self) -> list[str]:
        return list(self._jobs)

    def __iter__(self) -> Iterator[AnyJob]:
        return iter(list(self._jobs.values()))

    def __len__(self) -> int:
        return len(self._jobs)
