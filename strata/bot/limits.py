"""How often a person may make the model answer: at most `per_minute` turns in any sliding
60 s window (`access.model_calls_per_minute`). Time comes from the injected clock, so tests
move it instead of sleeping.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from strata.core.ports import Clock


@dataclass
class CallLimiter:
    """At most `per_minute` model-answered turns per person in any sliding `window`."""

    per_minute: int
    clock: Clock
    window: timedelta = timedelta(minutes=1)
    _calls: dict[int, deque[datetime]] = field(default_factory=dict, init=False)

    def acquire(self, person_id: int) -> float | None:
        """Take one call for `person_id`: None when allowed, else seconds until one is free."""
        now = self.clock.now()
        calls = self._calls.setdefault(person_id, deque())
        while calls and now - calls[0] >= self.window:
            calls.popleft()
        if len(calls) >= self.per_minute:
            return (calls[0] + self.window - now).total_seconds()
        calls.append(now)
        return None
