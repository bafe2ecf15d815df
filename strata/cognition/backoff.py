"""Backoff for background work that failed (job runs, reminder deliveries): wait `base`, then
2×, 4× … up to `cap`, the project's one doubling (`strata.core.retry.doubling`), in minutes.

Not a `RetryPolicy` loop on purpose: the runner does not wait in-process for the next try. The
delay becomes a `retry_at` stored with the job's cursor or the reminder, so the schedule
survives a restart and any process sharing the database picks the retry up when it is due. No
jitter: one runner per job at a time, and an injected clock in tests. Imports only
`strata.core.retry`.
"""

from __future__ import annotations

from datetime import timedelta

from strata.core.retry import doubling


def retry_delay(failures: int, base_minutes: float, cap_minutes: float) -> timedelta:
    """How long to wait after the `failures`-th failure in a row: base, 2×base, 4×base … cap."""
    return timedelta(minutes=doubling(failures, base_minutes, cap_minutes))
