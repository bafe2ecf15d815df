"""What the runner says about one job for one person (`JobReport`), and the gates that hold a
job back before it starts: the person is active, memory is paused, or a failed run is waiting
for its retry time (`strata.cognition.runner`). Pure: no storage, no clock of its own."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from strata.core.types import Person

# Jobs that still run while a person has paused memory (they forget, never remember).
RUN_WHILE_PAUSED = frozenset({"decay"})


@dataclass(frozen=True, slots=True)
class JobReport:
    """One job looked at for one person: whether it ran, and what happened."""

    job: str
    person: str
    ran: bool
    status: str  # ok | error | skipped | lost (another process took the person mid-run)
    detail: str
    tokens: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        tail = f" ({self.tokens} tokens)" if self.tokens else ""
        return f"{self.job:<13} {self.person:<16} {self.status:<8} {self.detail}{tail}"


def skipped(job: str, person: Person, detail: str) -> JobReport:
    """A job that did not run, and why."""
    return JobReport(job, person.name, False, "skipped", detail)


def held_back(job: str, person: Person, now: datetime, idle: timedelta | None,
              gate: timedelta, *, force: bool, asked: bool) -> JobReport | None:
    """Why the job must not start for this person now (None: it may): they spoke less than
    `gate` ago (unless forced or asked for), or their memory is paused."""
    if not (force or asked) and idle is not None and idle < gate:
        if idle < timedelta(0):  # a --now before the person's last message
            return skipped(job, person,
                           f"person active at {now + -idle:%Y-%m-%d %H:%M} UTC, after "
                           f"this run's time {now:%Y-%m-%d %H:%M}")
        left = int((gate - idle).total_seconds() // 60) + 1
        return skipped(job, person,
                       f"person active {int(idle.total_seconds() // 60)} min ago; "
                       f"waits {left} more min")
    if person.paused and job not in RUN_WHILE_PAUSED:
        return skipped(job, person, "memory is paused")
    return None


def waiting_retry(job: str, person: Person, failures: int, retry_at: datetime | None,
                  now: datetime, *, force: bool) -> JobReport | None:
    """A failed job before its next retry time (None: it may run)."""
    if not force and retry_at is not None and now < retry_at:
        return skipped(job, person, f"failed {failures} time(s); next retry after "
                                    f"{retry_at:%Y-%m-%d %H:%M} UTC")
    return None
