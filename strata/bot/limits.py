"""How often a person may make the model answer: at most `per_minute` turns in any sliding
60 s window (`access.model_calls_per_minute`), counted in the database
(`strata.memory.coordination.model_calls`) so that the cap holds across every process on it.
Time comes from the injected clock, so tests move it instead of sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from strata.core.ports import Clock
from strata.memory.coordination.model_calls import ModelCalls


@dataclass
class CallLimiter:
    """At most `per_minute` model-answered turns per person in any sliding `window`."""

    calls: ModelCalls
    per_minute: int
    clock: Clock
    window: timedelta = timedelta(minutes=1)

    async def acquire(self, person_id: int) -> float | None:
        """Take one call for `person_id`: None when allowed, else seconds until one is free."""
        return await self.calls.take(person_id, self.clock.now(), self.window, self.per_minute)
